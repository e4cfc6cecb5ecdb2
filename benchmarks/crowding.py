"""Why a large English scan slows as it grows: how many rows a query meets in the index.

At the default k = 4 each of the 15 tables (pairs of 6 blocks) sends a query to the rows
that share its key; on the generated English corpus those grow with the index, while
the rows actually within k grow too (the fingerprints crowd: issue 4's chaining). For
the first N fingerprints stored and 1,024 queries after them, this prints:

- candidates a query meets over the 15 tables, and the rows within k (brute force);
- the candidates left if each crowded key were split again, Manku et al.'s second
  level: the key's other 42 bits in 5 parts, a part of which any pair within 4 bits
  agrees on (pigeonhole), so exact; the query meets only the rows agreeing on a part;
- the index's bytes per fingerprint by part (BlockIndex.stats counts them all).

Run: .venv/bin/python benchmarks/crowding.py --docs 300000   (about a minute;
--docs 900000: about three). The corpus is scaling.py's generator (seed 0), fingerprinted
by `simdedup fingerprint` with the default settings.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scaling import simdedup_command, write_english_file  # noqa: E402

from simdedup.index import BlockIndex, Layout  # noqa: E402

QUERIES = 1024
PARTS = 5


def fingerprints(count: int) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "english.txt")
        write_english_file(path, count, seed=0)
        out = subprocess.run(
            [*simdedup_command(), "fingerprint", path], capture_output=True, check=True
        ).stdout
    return np.array([int(line.split(b"\t", 1)[0], 16) for line in out.splitlines()], np.uint64)


def candidates(stored: np.ndarray, queries: np.ndarray, k: int) -> tuple[float, float]:
    """(candidates a query meets, those left after a second level), means over queries."""
    layout = Layout.for_(64, k)
    met = split = 0
    for key in layout.keys:
        mask = 0
        for block in key:
            start, width = layout.blocks[block]
            mask |= ((1 << width) - 1) << start
        rest = [bit for bit in range(64) if not mask >> bit & 1]
        parts = [np.uint64(sum(1 << rest[i] for i in range(p, len(rest), PARTS))) for p in range(PARTS)]
        keys = stored & np.uint64(mask)
        order = np.argsort(keys)
        ordered = keys[order]
        for q in queries:
            lo, hi = (
                np.searchsorted(ordered, q & np.uint64(mask), side="left"),
                np.searchsorted(ordered, q & np.uint64(mask), side="right"),
            )
            rows = stored[order[lo:hi]]
            met += len(rows)
            # a row agreeing on several parts is met once
            agree = np.zeros(len(rows), bool)
            for part in parts:
                agree |= (rows & part) == (q & part)
            split += int(agree.sum())
    return met / len(queries), split / len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=300_000)
    parser.add_argument("-k", type=int, default=4)
    args = parser.parse_args()
    fps = fingerprints(args.docs + QUERIES)
    stored, queries = fps[: args.docs], fps[args.docs :]
    within = np.mean([int((np.bitwise_count(stored ^ q) <= args.k).sum()) for q in queries])
    met, split = candidates(stored, queries, args.k)
    print(f"{args.docs:,} stored English fingerprints, {QUERIES:,} queries after them, k = {args.k}")
    print(f"  candidates a query meets (all tables)       {met:>10,.0f}")
    print(f"  rows within k (brute force)                 {within:>10,.1f}")
    print(f"  candidates after a second level ({PARTS} parts)  {split:>10,.0f}  ({met / split:.1f}x fewer)")
    index = BlockIndex(64, args.k)
    for lo in range(0, len(stored), 4096):
        index.add_many(stored[lo : lo + 4096])
    index.search(queries[:1])
    n = len(stored)
    runs = index._runs
    parts = {
        "row numbers (4 bytes a table)": sum(r.order.nbytes for r in runs),
        "bucket offsets": sum(r.offsets.nbytes for r in runs),
        "fingerprints (room included)": index._words.nbytes,
        "copies of crowded buckets": sum(r.hot[3].nbytes for r in runs),
    }
    print(f"  index: {index.stats().nbytes / n:.1f} bytes per fingerprint, of which")
    for name, nbytes in parts.items():
        print(f"    {name:<34} {nbytes / n:>6.1f}")


if __name__ == "__main__":
    main()
