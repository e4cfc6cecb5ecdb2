"""The index's search with and without copies of its large buckets, in the same run.

A compiled run copies the fingerprints of every bucket of index.COPIED_BUCKET rows or
more in bucket order, so that a search reads them in order instead of gathering them by
row. This builds the same index twice, with copies and without (COPIED_BUCKET out of
reach), from the first --rows fingerprints of a file, and times BlockIndex.search of
batches of 4,096 later ones against each, alternating; it checks that both find the same
pairs and prints the memory per fingerprint of each.

    simdedup fingerprint corpus.txt | cut -f1 > fps.hex
    .venv/bin/python benchmarks/copies.py fps.hex --rows 8000000

Without a file, it fingerprints bench.py's generated corpus (--rows documents plus the
queries; slow beyond a few hundred thousand).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from simdedup import Settings
from simdedup import index as index_module
from simdedup.index import BlockIndex

BATCH = 4096


def load(path: str | None, count: int) -> np.ndarray:
    if path is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from index_bench import corpus_fingerprints

        return corpus_fingerprints(count, 1, Settings())
    with open(path) as f:
        return np.fromiter((int(line.split()[0], 16) for line, _ in zip(f, range(count))), np.uint64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fingerprints", nargs="?", help="hex fingerprints, one a line (simdedup fingerprint)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="fingerprints in the index")
    parser.add_argument("--batches", type=int, default=4, help="query batches of 4,096")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("-k", type=int, default=4)
    args = parser.parse_args()
    fps = load(args.fingerprints, args.rows + args.batches * BATCH)
    if len(fps) < args.rows + args.batches * BATCH:
        parser.error(f"only {len(fps):,} fingerprints: fewer than --rows and the queries")
    stored, queries = fps[: args.rows], fps[args.rows :].reshape(-1, 1)
    copied = index_module.COPIED_BUCKET
    indexes = {}
    for label, least in (("copies", copied), ("none", 1 << 62)):
        index_module.COPIED_BUCKET = least
        started = time.perf_counter()
        index = BlockIndex(64, args.k)
        index.add_many(stored)
        built = time.perf_counter() - started
        indexes[label] = index
        stats = index.stats()
        print(
            f"{label:>6}: built in {built:.1f} s, {stats.nbytes / len(index):.1f} bytes per fingerprint, "
            f"largest bucket {stats.largest_bucket:,}"
        )
    index_module.COPIED_BUCKET = copied
    times: dict[str, list[float]] = {label: [] for label in indexes}
    for _ in range(args.rounds):
        for b in range(args.batches):
            batch = queries[b * BATCH : (b + 1) * BATCH]
            found = {}
            for label, index in indexes.items():
                started = time.perf_counter()
                found[label] = index.search(batch, ordered=False)
                times[label].append(time.perf_counter() - started)
            a, b_ = (sorted(zip(*(x.tolist() for x in found[label]))) for label in indexes)
            assert a == b_, "the two indexes found different pairs"
    pairs = len(found["copies"][0])
    print(f"{args.rows:,} fingerprints, k = {args.k}, copies of buckets of {copied} rows or more")
    print(f"last batch: {pairs:,} pairs within k (the same with and without copies)")
    for label, ts in times.items():
        ts.sort()
        print(f"{label:>6}: search of 4,096, min {ts[0]:.3f} s, median {ts[len(ts) // 2]:.3f} s")
    ratio = (
        sorted(times["none"])[len(times["none"]) // 2] / sorted(times["copies"])[len(times["copies"]) // 2]
    )
    print(f"speed-up from the copies (median / median): {ratio:.2f}x")


if __name__ == "__main__":
    main()
