"""simdedup's compiled loops, two C extensions; everything else is in pyproject.toml.

_textcore.c fingerprints and sketches ASCII text (compiled_text.py); _indexcore.c builds and
searches large indexes and compares sketches (compiled.py). Both are optional: where no C
compiler is found, pip installs simdedup without them (with a warning) and numpy does all
of it, with the same results, slower: 200,000 generated English lines, one job, took
`fingerprint` 1.7-1.9 s against 0.7-0.8 s, `scan` 9.8-9.9 s against 2.9-3.1 s.

The loops read fingerprints, sketches and index files as the little-endian bytes numpy
writes them: on a big-endian machine they are not built, and numpy does all of it.
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(name, [f"simdedup/{name.split('.')[1]}.c"], extra_compile_args=["-O3"], optional=True)
        for name in ("simdedup._textcore", "simdedup._indexcore")
        if sys.byteorder == "little"
    ]
)
