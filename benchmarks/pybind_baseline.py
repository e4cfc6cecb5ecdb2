"""The C++ simhash-pybind baseline, run by bench.py in a subprocess of its own.

simhash-pybind installs a module named `simhash`, like the PyPI simhash package that
bench.py imports, so it lives in .venv/baselines/simhash-pybind and this script runs
with PYTHONPATH pointing there. Matched settings: simdedup's tokens (normalize(), then
\\w+), one 64-bit hash per token occurrence (term-frequency weights), 64 bits; the
feature hash is xxh3_64 (simdedup's, so the fingerprints must be identical) or
simhash-pybind's own `unsigned_hash` (the first 8 bytes of md5).

Usage: PYTHONPATH=.venv/baselines/simhash-pybind python pybind_baseline.py FILE {xxh3,md5}
Prints one JSON object: cpu and wall seconds of the fingerprint loop, and the
fingerprints in hex.
"""

from __future__ import annotations

import json
import re
import sys
import time

import simhash
import xxhash

from simdedup.features import normalize


def main(path: str, hash_name: str) -> None:
    if not hasattr(simhash, "c_compute"):
        raise SystemExit(f"{simhash.__file__} is not simhash-pybind (PYTHONPATH?)")
    with open(path, encoding="utf-8") as f:
        texts = f.read().splitlines()
    word = re.compile(r"\w+")
    compute = simhash.compute
    if hash_name == "xxh3":
        digest = xxhash.xxh3_64_intdigest

        def hashes(tokens: list[str]) -> list[int]:
            return [digest(t.encode("utf-8")) for t in tokens]

    else:
        unsigned_hash = simhash.unsigned_hash

        def hashes(tokens: list[str]) -> list[int]:
            return [unsigned_hash(t.encode("utf-8")) for t in tokens]

    cpu, wall = time.process_time(), time.perf_counter()
    fps = [compute(hashes(word.findall(normalize(t)))) for t in texts]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(json.dumps({"cpu": cpu, "wall": wall, "fps": [f"{fp:016x}" for fp in fps]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
