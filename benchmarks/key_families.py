"""Fewer tables at k = 4: the candidates each family of table keys would meet.

The index's 15 tables at k = 4 before stop 47 (6 blocks, one table per pair) cost 15 x 4
bytes of row numbers per fingerprint, which is why it held 82-91 bytes a fingerprint
against issue 5's 64; it now has the 9 of the second family below. Tables need not
key on every pair of blocks: they must only be such that any
two fingerprints within k agree on both blocks of one of them. With 7 blocks, two
fingerprints within 4 bits agree on at least 3 blocks, and any 3 blocks of 7 hold two
in the same group of a split into groups of 3 and 4, so the pairs inside each group (3
+ 6 = 9 tables) find them all; with 8 blocks and groups of 3, 3 and 2, 7 tables do.
(These are the fewest: a family of pairs misses a set of agreeing blocks exactly where
those blocks are pairwise unkeyed, and Turan's theorem bounds the unkeyed pairs.)

This counts, for each family, the pairs of fingerprints that share a key in one of its
tables (each pair once per table it shares), on the fingerprints in a file and on as
many uniform random ones: the candidates an all-pairs run compares, and what a
keep-first stream meets in proportion. It builds no index.

    .venv/bin/simdedup fingerprint -j2 corpus.txt > fps.tsv
    .venv/bin/python benchmarks/key_families.py fps.tsv
"""

from __future__ import annotations

import argparse
from itertools import combinations

import numpy as np


def blocks(widths: list[int]) -> list[tuple[int, int]]:
    """(start, width) of each block, low bits first."""
    starts = np.cumsum([0, *widths[:-1]])
    assert sum(widths) == 64
    return [(int(s), w) for s, w in zip(starts, widths)]


def pairs_within(groups: list[list[int]]) -> list[tuple[int, ...]]:
    return [pair for group in groups for pair in combinations(group, 2)]


FAMILIES = {
    "6 blocks, every pair (before stop 47)": (
        blocks([11, 11, 11, 11, 10, 10]),
        list(combinations(range(6), 2)),
    ),
    "7 blocks, pairs in groups of 3 and 4 (now)": (
        blocks([9] * 6 + [10]),
        pairs_within([[0, 1, 2], [3, 4, 5, 6]]),
    ),
    "8 blocks, pairs in groups of 3, 3, 2": (blocks([8] * 8), pairs_within([[0, 1, 2], [3, 4, 5], [6, 7]])),
    "5 single blocks (the classic)": (blocks([13, 13, 13, 13, 12]), [(b,) for b in range(5)]),
}


def covers(layout: list[tuple[int, int]], keys: list[tuple[int, ...]], k: int) -> bool:
    """Whether every set of at most k differing blocks leaves some key whole."""
    n = len(layout)
    for differing in range(k + 1):
        for apart in combinations(range(n), differing):
            if not any(set(key).isdisjoint(apart) for key in keys):
                return False
    return True


def shared_keys(
    fps: np.ndarray, layout: list[tuple[int, int]], keys: list[tuple[int, ...]]
) -> tuple[int, int]:
    """(pairs sharing a key, summed over tables; the largest key's rows)."""
    values = [(fps >> np.uint64(start)) & np.uint64((1 << width) - 1) for start, width in layout]
    total, largest = 0, 0
    for key in keys:
        packed, shift = np.zeros(len(fps), np.uint64), 0
        for b in key:
            packed |= values[b] << np.uint64(shift)
            shift += layout[b][1]
        counts = np.unique(packed, return_counts=True)[1].astype(np.int64)
        total += int((counts * (counts - 1) // 2).sum())
        largest = max(largest, int(counts.max()))
    return total, largest


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "fingerprints", help="`simdedup fingerprint` output: a hex fingerprint first on each line"
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with open(args.fingerprints, encoding="utf-8") as f:
        fps = np.array([int(line[:16], 16) for line in f if line.strip()], np.uint64)
    rand = np.random.default_rng(args.seed).integers(0, 2**64, size=len(fps), dtype=np.uint64)
    print(f"{len(fps):,} fingerprints; pairs sharing a key, summed over tables")
    print(f"{'family of keys (k = 4)':<44} {'tables':>6} {'corpus':>14} {'largest':>8} {'random':>12}")
    for name, (layout, keys) in FAMILIES.items():
        assert covers(layout, keys, 4), name
        corpus, largest = shared_keys(fps, layout, keys)
        random_pairs, _ = shared_keys(rand, layout, keys)
        print(f"{name:<44} {len(keys):>6} {corpus:>14,} {largest:>8,} {random_pairs:>12,}")


if __name__ == "__main__":
    main()
