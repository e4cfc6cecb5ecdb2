"""The compiled core for ASCII text (simdedup/_textcore.c); everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("simdedup._textcore", ["simdedup/_textcore.c"], extra_compile_args=["-O3"])])
