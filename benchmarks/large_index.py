"""A large index's two costs, each with and without its remedy, in the same run.

1. Search. A compiled run copies the fingerprints of every bucket of
   index.COPIED_BUCKET rows or more in bucket order, so that a search reads them in
   order instead of gathering them by row. The same index is built twice, with copies
   and without (COPIED_BUCKET out of reach), from the first --rows fingerprints of a
   file, and BlockIndex.search of batches of 4,096 later ones is timed against each,
   alternating; both must find the same pairs.
2. Verification. Every pair found is checked against the kept document's sketch
   (sketch.verified_pairs, as `scan` does it), a read at a random place of --rows
   sketches. Timed on the pairs found above, against random sketches (nearly every pair
   rejected, as crowded unrelated documents are), with a pair's first cache lines
   fetched sketch.AHEAD pairs before it is compared and without (AHEAD = 0),
   alternating; the same pairs and floats either way.

    simdedup fingerprint corpus.txt | cut -f1 > fps.hex
    .venv/bin/python benchmarks/large_index.py fps.hex --rows 8000000

Without a file, it fingerprints bench.py's generated corpus (--rows documents plus the
queries; slow beyond a few hundred thousand). --rows 8000000 needs about 4 GB.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from simdedup import Settings
from simdedup import index as index_module
from simdedup import sketch as sketch_module
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
    median = {}
    for label, ts in times.items():
        ts.sort()
        median[label] = ts[len(ts) // 2]
        print(f"{label:>6}: search of 4,096, min {ts[0]:.3f} s, median {median[label]:.3f} s")
    print(f"speed-up from the copies (median / median): {median['none'] / median['copies']:.2f}x")
    verification(queries, indexes["copies"], args)


def verification(queries: np.ndarray, index: BlockIndex, args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    nbytes = sketch_module.SKETCH.nbytes
    kept = rng.integers(0, 256, (len(index), nbytes), dtype=np.uint8)
    batch = rng.integers(0, 256, (BATCH, nbytes), dtype=np.uint8)
    kept_has, batch_has = np.ones(len(kept), bool), np.ones(BATCH, bool)
    slices = [queries[b * BATCH : (b + 1) * BATCH] for b in range(args.batches)]
    found = [index.search(batch_fps, ordered=False) for batch_fps in slices]
    pairs = sum(len(q) for q, _, _ in found)
    ahead = sketch_module.AHEAD
    spent: dict[int, list[float]] = {0: [], ahead: []}
    for _ in range(args.rounds):
        results = []
        for distance in spent:
            sketch_module.AHEAD = distance
            started = time.perf_counter()
            verified = sketch_module.SKETCH.verified_pairs
            results.append([verified(batch, batch_has, kept, kept_has, pairs_, 0.8) for pairs_ in found])
            spent[distance].append(time.perf_counter() - started)
        sketch_module.AHEAD = ahead
        for x, y in zip(*results):
            assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(x, y)), "different pairs"
    print(f"verification of the {pairs:,} pairs found for {args.batches} batches, random sketches:")
    best = {distance: min(times) for distance, times in spent.items()}
    for distance, seconds in best.items():
        label = f"fetched {distance} pairs ahead" if distance else "not fetched ahead"
        print(f"{label:>26}: {1e9 * seconds / pairs:.0f} ns a pair (best of {args.rounds})")
    print(f"speed-up from fetching ahead: {best[0] / best[ahead]:.2f}x")


if __name__ == "__main__":
    main()
