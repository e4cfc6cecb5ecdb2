"""Stage 4: find every stored fingerprint within Hamming distance k of a query.

The block index of Manku et al. (WWW 2007): split the bits into k + 1 blocks; two
fingerprints within distance k agree on at least one whole block (pigeonhole), so a
query compares only the fingerprints that share a block value with it. Exact: it
returns every stored fingerprint within k, identical ones included, and nothing else.
Never prints, never touches files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .settings import block_layout

#: A bucket holding more rows than this becomes a sub-table (see BlockIndex).
HOT_BUCKET = 64
#: Sub-blocks narrower than this separate too little to pay for their lookups.
MIN_SUB_BLOCK_BITS = 8


def _groups(positions: Sequence[int], count: int) -> list[tuple[int, ...]]:
    """Split bit positions into `count` consecutive groups, as equal as they can be."""
    width, extra = divmod(len(positions), count)
    groups, start = [], 0
    for i in range(count):
        end = start + width + (1 if i < extra else 0)
        groups.append(tuple(positions[start:end]))
        start = end
    return groups


def _mask(positions: Iterable[int]) -> int:
    m = 0
    for p in positions:
        m |= 1 << p
    return m


class _Table:
    """k + 1 blocks over a set of bit positions; each block maps a value to a bucket.

    A bucket is a list of rows, or, once it is hot, a _Table over the positions the
    block leaves out. Every row stored here agrees with its bucket's key on the block.
    """

    __slots__ = ("masks", "rests", "buckets", "size", "k", "hot")

    def __init__(self, positions: Sequence[int], k: int, hot: int) -> None:
        groups = _groups(positions, k + 1)
        self.k = k
        self.hot = hot
        self.masks = [_mask(g) for g in groups]
        self.rests = [tuple(p for p in positions if p not in set(g)) for g in groups]
        self.buckets: list[dict[int, list[int] | _Table]] = [{} for _ in groups]
        self.size = 0

    def splittable(self, block: int) -> bool:
        # A row sits in all k + 1 blocks of every table on its path, so add and query cost
        # (k + 1) ** depth lookups at worst; wide sub-blocks keep that depth at 3 or less.
        return len(self.rests[block]) >= MIN_SUB_BLOCK_BITS * (self.k + 1)

    def add(self, fp: int, row: int, fps: Sequence[int]) -> None:
        self.size += 1
        for j, mask in enumerate(self.masks):
            buckets = self.buckets[j]
            key = fp & mask
            bucket = buckets.get(key)
            if bucket is None:
                buckets[key] = [row]
            elif type(bucket) is list:
                bucket.append(row)
                if len(bucket) > self.hot and self.splittable(j):
                    sub = _Table(self.rests[j], self.k, self.hot)
                    for r in bucket:
                        sub.add(fps[r], r, fps)
                    buckets[key] = sub
            else:
                bucket.add(fp, row, fps)

    def candidates(self, fp: int, out: set[int]) -> None:
        for mask, buckets in zip(self.masks, self.buckets):
            bucket = buckets.get(fp & mask)
            if bucket is None:
                continue
            if type(bucket) is list:
                out.update(bucket)
            else:
                bucket.candidates(fp, out)

    def depth(self) -> int:
        subs = [b.depth() for bs in self.buckets for b in bs.values() if type(b) is _Table]
        return 1 + max(subs, default=0)

    def count_tables(self) -> int:
        return 1 + sum(b.count_tables() for bs in self.buckets for b in bs.values() if type(b) is _Table)

    def check(self, fps: Sequence[int], rows: set[int]) -> None:
        assert self.size == len(rows), (self.size, len(rows))
        for j, (mask, buckets) in enumerate(zip(self.masks, self.buckets)):
            seen: set[int] = set()
            for key, bucket in buckets.items():
                members = set(bucket) if type(bucket) is list else None
                if members is None:
                    sub_rows = {r for r in rows if fps[r] & mask == key}
                    bucket.check(fps, sub_rows)
                    members = sub_rows
                else:
                    assert len(members) == len(bucket), "a row is twice in one bucket"
                    assert len(bucket) <= self.hot or not self.splittable(j), "hot bucket left whole"
                assert all(fps[r] & mask == key for r in members), "row in the wrong bucket"
                assert not (seen & members), "row in two buckets of one block"
                seen |= members
            assert seen == rows, "a row is missing from a block"


@dataclass(frozen=True)
class IndexStats:
    """What --verbose reports about an index."""

    fingerprints: int
    blocks: tuple[tuple[int, int], ...]
    largest_bucket: int
    tables: int
    depth: int


class BlockIndex:
    """Exact search for stored fingerprints within `distance` bits of a query.

    Rows are numbered 0, 1, 2, ... in insertion order. Layout: `distance + 1` blocks
    over `bits` (see settings.block_layout). Real text makes some block values hot
    (common words make bits agree); a bucket of more than `hot_bucket` rows becomes a
    sub-table over the bits its block leaves out, split again into distance + 1 blocks.
    Two fingerprints that agree on the hot block and lie within `distance` differ only
    in those other bits, so one of the sub-blocks still agrees: the search stays exact,
    and a hot bucket costs a few more lookups instead of a scan. Sub-blocks are at least
    MIN_SUB_BLOCK_BITS wide, which bounds the depth (3 for 64 bits and distance 3; no
    splitting from distance 7 on, where blocks are already narrow).

    Cost: add and query look up at most (distance + 1) ** depth buckets (4 for an index
    without hot buckets, 64 at worst for distance 3); a query adds one XOR and popcount
    per candidate. Memory: one Python int per row plus one list slot per block and table.
    """

    def __init__(self, bits: int = 64, distance: int = 3, *, hot_bucket: int = HOT_BUCKET) -> None:
        self.bits = bits
        self.distance = distance
        self.blocks = block_layout(bits, distance)
        self._fps: list[int] = []
        self._table = _Table(range(bits), distance, hot_bucket)

    @classmethod
    def from_fingerprints(cls, fps: Iterable[int], bits: int = 64, distance: int = 3) -> BlockIndex:
        index = cls(bits, distance)
        for fp in fps:
            index.add(fp)
        return index

    def __len__(self) -> int:
        return len(self._fps)

    @property
    def fingerprints(self) -> Sequence[int]:
        return self._fps

    def fingerprint_array(self) -> np.ndarray:
        """The stored fingerprints, row by row: uint64, shape (n,) for 64 bits, (n, 2) for 128
        (high word first)."""
        return fingerprint_array(self._fps, self.bits)

    def add_many(self, fps: np.ndarray) -> range:
        """Store fingerprints given as fingerprint_array() returns them; returns their rows."""
        start = len(self._fps)
        for fp in fingerprint_ints(fps):
            self.add(fp)
        return range(start, len(self._fps))

    def add(self, fp: int) -> int:
        """Store a fingerprint; returns its row."""
        if not 0 <= fp < 1 << self.bits:
            raise ValueError(f"fingerprint {fp:#x} does not fit in {self.bits} bits")
        row = len(self._fps)
        self._fps.append(fp)
        self._table.add(fp, row, self._fps)
        return row

    def query(self, fp: int, distance: int | None = None) -> list[tuple[int, int]]:
        """Every (row, distance) within `distance` (default: the index's), nearest first, then by row."""
        k = self.distance if distance is None else distance
        if k > self.distance:
            raise ValueError(f"this index answers distances up to {self.distance}, not {k}")
        rows: set[int] = set()
        self._table.candidates(fp, rows)
        fps = self._fps
        found = [(r, d) for r in rows if (d := (fp ^ fps[r]).bit_count()) <= k]
        found.sort(key=lambda rd: (rd[1], rd[0]))
        return found

    def nearest(self, fp: int) -> tuple[int, int] | None:
        """The nearest stored (row, distance) within the index's distance (ties: earliest row)."""
        rows: set[int] = set()
        self._table.candidates(fp, rows)
        fps, k = self._fps, self.distance
        best: tuple[int, int] | None = None
        for r in rows:
            d = (fp ^ fps[r]).bit_count()
            if d <= k and (best is None or (d, r) < (best[1], best[0])):
                best = (r, d)
        return best

    def stats(self) -> IndexStats:
        largest = 0
        for buckets in self._table.buckets:
            for bucket in buckets.values():
                largest = max(largest, len(bucket) if type(bucket) is list else bucket.size)
        return IndexStats(
            fingerprints=len(self._fps),
            blocks=self.blocks,
            largest_bucket=largest,
            tables=self._table.count_tables(),
            depth=self._table.depth(),
        )

    def _check(self) -> None:
        """Assert the invariants: every row sits in exactly one right bucket of every block."""
        assert all(0 <= fp < 1 << self.bits for fp in self._fps)
        self._table.check(self._fps, set(range(len(self._fps))))


def fingerprint_array(fps: Sequence[int], bits: int = 64) -> np.ndarray:
    """Python-int fingerprints as uint64 words: shape (n,) for 64 bits, (n, bits // 64)
    with the high word first for wider ones."""
    words = bits // 64
    if words == 1:
        return np.array(fps, dtype=np.uint64).reshape(len(fps))
    low = (1 << 64) - 1
    return np.array(
        [[(fp >> (64 * (words - 1 - w))) & low for w in range(words)] for fp in fps], dtype=np.uint64
    ).reshape(len(fps), words)


def fingerprint_ints(fps: np.ndarray) -> list[int]:
    """The inverse of fingerprint_array."""
    if fps.ndim == 1:
        return fps.tolist()
    out = []
    for row in fps.tolist():
        fp = 0
        for word in row:
            fp = fp << 64 | word
        out.append(fp)
    return out


def near_pairs(fps: Sequence[int], bits: int = 64, distance: int = 3) -> list[tuple[int, int, int]]:
    """All (i, j, d) with i < j and d = distance(fps[i], fps[j]) <= distance, sorted.

    A pure function over a batch, for all-pairs jobs and for checking the index.
    """
    index = BlockIndex(bits, distance)
    pairs = []
    for j, fp in enumerate(fps):
        pairs.extend((i, j, d) for i, d in index.query(fp))
        index.add(fp)
    pairs.sort()
    return pairs
