"""Stage 4: find every stored fingerprint within Hamming distance k of a query.

The block index of Manku et al. (WWW 2007), held in numpy arrays and searched a batch
of queries at a time. Exact: it returns every stored fingerprint within k, identical
ones included, and nothing else. Never prints, never touches files.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from .settings import DEFAULT_DISTANCE, index_layout

try:
    from . import _indexcore  # noqa: F401  (compiled.py's loops)

    LOOPS_BUILT = True
except ImportError:  # installed where no C compiler was found (setup.py): numpy does all of it
    LOOPS_BUILT = False

#: Rows added since the last run was built are searched by brute force; at this many
#: they become a run of their own.
BUFFER_ROWS = 1024
#: Runs of at least this many rows sort their tables two at a time, in threads.
PARALLEL_BUILD_ROWS = 1 << 20
#: A bucket with more rows than this is compared as a dense matrix in all-pairs jobs.
HOT_BUCKET = 64
#: Rows of a hot bucket compared with the rest at once (bounds the matrix's memory).
DENSE_SLICE = 256
#: Query batches larger than this are searched in slices, to bound candidate arrays.
QUERY_SLICE = 4096
#: nearest_many's key of a pair: its distance above its row's bits, so the smallest key
#: is the nearest row, then the earliest.
_ROW_BITS = 48
_NO_PAIR = np.iinfo(np.int64).max
#: A compiled run copies the fingerprints of each table's buckets of at least this many
#: rows in the table's order (compiled.hot_copies), so that a search reads them in order
#: instead of gathering them: 8 bytes more a copied row, where common words crowd.
COPIED_BUCKET = 256
#: Once an index of 64-bit fingerprints holds this many rows, compiled loops
#: (compiled.py) build and search its runs; below, numpy does. Both give the same tables
#: and pairs. From the first row: the C loops cost nothing to load (numba's cost ~0.3 s,
#: which 32,768 rows repaid), and `scan -j1` of 20,000 English lines took 0.49-0.57 s
#: with them against 0.65-0.77 s with numpy's below 32,768 rows (60,000: 1.06-1.10 s
#: against 1.46-1.56 s). The tests set it high to compare the two.
COMPILED_ROWS = 0
#: Rows below which compiled.table_pairs packs a pair in 64 bits (28 bits a row, 8 for
#: its distance); near_pair_arrays goes through numpy from there.
PAIR_ROWS = 1 << 28
#: A Layout whose tables would meet this share of the rows a query (Layout.key_share)
#: compares every query with every row instead (Layout.brute_force). Measured in
#: benchmarks/README.md, "Wide distances".
BRUTE_FORCE_SHARE = 0.01
#: Cells (queries x rows) in one slice of a comparison of every query with every row
#: in numpy, to bound its memory.
MATRIX_CELLS = 1 << 22

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))
_MIX_WORDS = np.array(_MIX, np.uint64)  # the same, for compiled.py's key hashes


def fingerprint_array(fps: Sequence[int], bits: int = 64) -> np.ndarray:
    """Python-int fingerprints as uint64 words: shape (n,) for 64 bits, (n, bits // 64)
    with the high word first for wider ones. Anything else (a float, a string, a value
    outside 0 .. 2 ** bits - 1) is refused: numpy would truncate or parse it."""
    if isinstance(fps, np.ndarray):
        return _words(fps, bits).reshape(len(fps)) if bits == 64 else _words(fps, bits)
    if not set(map(type, fps)) <= {int}:  # all exactly int (a set of their types: ~2x faster than all())
        bad = next(fp for fp in fps if type(fp) is not int)
        if isinstance(bad, bool) or not isinstance(bad, numbers.Integral):
            raise ValueError(f"a fingerprint is an int, not {bad!r}")
        fps = [int(fp) for fp in fps]  # numpy integers
    if fps and not 0 <= min(fps) <= max(fps) < 1 << bits:
        raise ValueError(f"fingerprints are {bits}-bit unsigned ints: {min(fps)} .. {max(fps)} given")
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
        return fps.tolist()  # type: ignore[no-any-return]
    out = []
    for row in fps.tolist():
        fp = 0
        for word in row:
            fp = fp << 64 | word
        out.append(fp)
    return out


def _words(fps: np.ndarray, bits: int) -> np.ndarray:
    """Fingerprints as a 2-d (n, bits // 64) uint64 array, low word last. An int64 array
    is read as its bits (Spark and Parquet keep 64-bit fingerprints so: the top bit is
    the sign), another signed one if none is negative; floats and the like are refused."""
    words = bits // 64
    if not isinstance(fps, np.ndarray):  # Python ints: checked as ints (-1 became 2 ** 64 - 1)
        return _words(fingerprint_array(list(fps), bits), bits)
    if fps.dtype.kind == "i" and fps.dtype.itemsize == 8:
        fps = fps.view(np.uint64)
    elif fps.dtype.kind != "u" and not (fps.dtype.kind == "i" and not (fps < 0).any()):
        raise ValueError(f"fingerprints are unsigned integers or int64, not an array of {fps.dtype}")
    fps = np.asarray(fps, dtype=np.uint64)
    if fps.ndim == 1 and words == 1:
        return fps.reshape(-1, 1)
    if fps.ndim != 2 or fps.shape[1] != words:
        raise ValueError(f"expected {bits}-bit fingerprints as shape (n, {words}), got {fps.shape}")
    return fps


def _counts(x: np.ndarray, words: int) -> np.ndarray:
    """np.bitwise_count(x), in integers that hold the sum of `words` such counts: its
    uint8 holds 3 words' (192 bits); at 256 bits and more the distances wrapped around,
    and all-zero and all-one fingerprints were found at distance 0 (a trial)."""
    d = np.bitwise_count(x)
    return d if words <= 3 else d.astype(np.uint16)


def _distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distances between rows of two (n, words) uint64 arrays."""
    d = _counts(a[:, 0] ^ b[:, 0], a.shape[1])
    for w in range(1, a.shape[1]):
        d += np.bitwise_count(a[:, w] ^ b[:, w])
    return d


def distances(a: np.ndarray, b: np.ndarray, bits: int = 64) -> np.ndarray:
    """Hamming distance (int64) from a[t] to b[t], for fingerprints as fingerprint_array()
    gives them."""
    return _distances(_words(a, bits), _words(b, bits)).astype(np.int64)


def _block_values(words: np.ndarray, start: int, width: int) -> np.ndarray:
    """Bits start..start+width-1 of each fingerprint (bit 0 = least significant), as uint64."""
    n_words = words.shape[1]
    word, offset = divmod(start, 64)
    low = words[:, n_words - 1 - word] >> np.uint64(offset)
    if offset + width > 64:  # the block straddles two words
        high = words[:, n_words - 2 - word] << np.uint64(64 - offset)
        low = low | high
    if width < 64:
        low = low & np.uint64((1 << width) - 1)
    return low


@dataclass(frozen=True)
class Layout:
    """The tables of a BlockIndex: `blocks` split the bits (start, width); each table is
    keyed on the blocks in one tuple of `keys`. Any two fingerprints within `distance`
    agree on all the blocks of at least one key (pigeonhole), so a table finds them."""

    bits: int
    distance: int
    blocks: tuple[tuple[int, int], ...]
    keys: tuple[tuple[int, ...], ...]

    @classmethod
    def for_(cls, bits: int, distance: int) -> Layout:
        blocks, keys = index_layout(bits, distance)
        return cls(bits, distance, blocks, keys)

    @functools.cached_property
    def first_tables(self) -> np.ndarray:
        """For each set of agreeing blocks (a bit mask), the first table whose key blocks
        all agree, or -1: a pair is reported by that table only, so once per run."""
        masks = np.arange(1 << len(self.blocks), dtype=np.int64)
        first = np.full(len(masks), -1, dtype=np.int64)
        for t in reversed(range(len(self.keys))):  # the earliest table written last
            key = sum(1 << b for b in self.keys[t])
            first[(masks & key) == key] = t
        return first

    @functools.cached_property
    def groups(self) -> tuple[tuple[int, ...], ...]:
        """The blocks in groups, in the tables' order: the tables of a group key on its
        blocks only, those of a later group come after (settings.index_layout). One group of
        every block where each block has a table, and where each pair has one (the pairs in
        order chain every block into the first group)."""
        if len(self.keys[0]) == 1:
            return (tuple(range(len(self.blocks))),)
        groups: list[list[int]] = []
        for key in self.keys:
            if not groups or key[0] not in groups[-1]:
                groups.append([key[0]])
            groups[-1].extend(b for b in key if b not in groups[-1])
        return tuple(tuple(group) for group in groups)

    @property
    def keyed_on(self) -> str:
        """What the tables key on, in words."""
        if len(self.keys[0]) == 1:
            return "one each"
        if len(self.groups) == 1:
            return "pairs of them"
        return "pairs of them inside groups " + " and ".join(f"{g[0] + 1}-{g[-1] + 1}" for g in self.groups)

    @functools.cached_property
    def compiled_keys(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """(start, mask) of each table's key blocks, as compiled.table_buckets takes them
        (64-bit fingerprints)."""
        starts, masks = self.compiled_blocks
        return [(starts[list(key)], masks[list(key)]) for key in self.keys]

    @functools.cached_property
    def compiled_blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, mask) of each block, as compiled.table_buckets takes a key's."""
        starts = np.array([start for start, _ in self.blocks], np.uint64)
        masks = np.array([(1 << width) - 1 for _, width in self.blocks], np.uint64)
        return starts, masks

    @functools.cached_property
    def first_table_rules(self) -> np.ndarray:
        """first_tables as six 64-bit masks a table (uint64, shape (tables, 6)), for
        compiled loops that test it 64 candidates at a time (_indexcore.c's near_here):
        table t is the first whose key two 64-bit fingerprints with XOR x agree on when
        x is zero on its key's blocks (`key`), non-zero on each block of its group below
        its last that is not in its key (`earlier`; `low`, `high`: their lowest and
        highest bits, for the test of all of them at once), and zero on at most one
        block of the group before its own, whose tables come first (`lower`, `tops`:
        those blocks' bits but the highest, and their highest; none in the first group).
        Tables in more than two groups would need more words."""
        if len(self.groups) > 2:
            raise ValueError("first_table_rules: tables in more than two groups")
        group_of = {b: g for g, group in enumerate(self.groups) for b in group}
        rules = []
        for key in self.keys:
            g = group_of[key[0]]
            earlier = [self.blocks[b] for b in self.groups[g] if b < key[-1] and b not in key]
            before = [self.blocks[b] for b in (self.groups[g - 1] if g else ())]
            rules.append(
                (
                    sum(((1 << width) - 1) << start for start, width in (self.blocks[b] for b in key)),
                    sum(((1 << width) - 1) << start for start, width in earlier),
                    sum(1 << start for start, _ in earlier),
                    sum(1 << (start + width - 1) for start, width in earlier),
                    sum(((1 << (width - 1)) - 1) << start for start, width in before),
                    sum(1 << (start + width - 1) for start, width in before),
                )
            )
        return np.array(rules, np.uint64).reshape(len(self.keys), 6)

    def agreeing_blocks(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Bit mask of the blocks on which rows of two (n, words) arrays agree."""
        mask = np.zeros(len(a), dtype=np.int64)
        for i, (start, width) in enumerate(self.blocks):
            mask |= (_block_values(a, start, width) == _block_values(b, start, width)).astype(np.int64) << i
        return mask

    @functools.cached_property
    def key_share(self) -> float:
        """The share of stored rows a query meets in its tables' buckets, summed over the
        tables, on random fingerprints (2 ** -key bits each); more on real text."""
        return sum(2.0 ** -sum(self.blocks[b][1] for b in key) for key in self.keys)

    @property
    def brute_force(self) -> bool:
        """Whether a BlockIndex of this layout compares every query with every row: a
        wide distance leaves keys of a few bits, so tables would meet a large share of
        the rows (all of them, twice over, at 64 bits and distance 16) at a cost a
        candidate several times a plain comparison's."""
        return self.key_share >= BRUTE_FORCE_SHARE

    def describe(self) -> str:
        widths = "/".join(str(w) for _, w in self.blocks)
        if self.brute_force:
            return f"every row compared (keys of {widths} bits would meet {self.key_share:.0%} of the rows)"
        keyed = f"{len(self.blocks)} blocks of {widths} bits, {len(self.keys)} tables"
        keyed += f" keyed on {len(self.keys[0])}"
        if len(self.groups) > 1:
            return keyed + " in groups of " + " and ".join(str(len(g)) for g in self.groups)
        return keyed

    def block_values(self, words: np.ndarray) -> list[np.ndarray]:
        return [_block_values(words, start, width) for start, width in self.blocks]

    def key_hash(self, values: list[np.ndarray], table: int) -> np.ndarray:
        """A 64-bit hash of each fingerprint's key in one table, from its block_values.

        Equal keys hash equal; a run's bucket is the hash's top p bits. Two unequal keys
        may share a bucket, which costs a candidate, never a miss."""
        key = self.keys[table]
        with np.errstate(over="ignore"):
            h = values[key[0]] * _MIX[0]
            for b in key[1:]:
                h ^= h >> np.uint64(29)
                h = (h ^ values[b]) * _MIX[1]
            h ^= h >> np.uint64(32)
            h *= _MIX[2]
        return h

    def key_hashes(self, words: np.ndarray) -> np.ndarray:
        """key_hash for every table: shape (tables, n)."""
        values = self.block_values(words)
        return np.stack([self.key_hash(values, t) for t in range(len(self.keys))]).reshape(
            len(self.keys), len(words)
        )

    def compiled_key_hashes(self, words: np.ndarray) -> np.ndarray:
        """key_hashes of 64-bit fingerprints by the compiled loop, a pass a table."""
        from .compiled import key_hashes

        return np.stack(
            [key_hashes(words[:, 0], *self.compiled_keys[t], _MIX_WORDS) for t in range(len(self.keys))]
        )

    def keys_in_order(self, words: np.ndarray, tables: range, top: int = 31) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, by_hash), each (tables, n): key_hashes of 64-bit fingerprints and, per
        table, their places ordered by the top `top` bits of it (compiled.keys_in_order),
        for the tables in `tables` only; the other rows are zeros."""
        from .compiled import keys_in_order

        hashes = np.zeros((len(self.keys), len(words)), np.uint64)
        by_hash = np.zeros((len(self.keys), len(words)), np.int64)
        for t in tables:
            hashes[t], by_hash[t] = keys_in_order(words[:, 0], *self.compiled_keys[t], _MIX_WORDS, top)
        return hashes, by_hash


def _bucket_of(hashes: np.ndarray, p: int) -> np.ndarray:
    if p == 0:
        return np.zeros(hashes.shape, dtype=np.int64)
    return (hashes >> np.uint64(64 - p)).astype(np.int64)


class _Run:
    """An immutable stretch of rows [start, end) with, per table, its rows grouped by
    bucket: rows order[offsets[t, b]:offsets[t, b + 1]] (local numbers) are table t's
    bucket b. Buckets are 2 ** p per table with p about log2(rows) - 3, so a random
    fingerprint meets ~4-8 rows per table; memory is 4 bytes per row per table plus
    under 1 byte of offsets. A compiled run also copies, per table, the fingerprints of
    its buckets of COPIED_BUCKET rows or more in bucket order (`hot`, see
    compiled.hot_copies): where common words crowd a large index, a query's candidates are
    nearly all in such buckets, and reading them in order searches twice as fast as
    gathering them by row (8M rows).

    Rows that `skip` marks (BlockIndex.add_many's unindexed ones) are in no table:
    `size` rows are, of the end - start it spans."""

    __slots__ = ("start", "end", "size", "p", "order", "offsets", "hot")

    def __init__(
        self,
        layout: Layout,
        words: np.ndarray,
        start: int,
        end: int,
        sparse: bool = False,
        compiled: bool = False,
        skip: np.ndarray | None = None,
    ) -> None:
        # The local numbers of the rows in the tables: all of them, or those not skipped.
        local = None if skip is None or not skip.any() else np.flatnonzero(~skip).astype(np.uint32)
        size = end - start if local is None else len(local)
        self.start, self.end, self.size = start, end, size
        fps = words[start:end] if local is None else words[start:end][local]
        # Big runs hold most rows: ~4-8 rows a bucket keeps their offsets under a byte a
        # row per table. A run of under a sixteenth of the rows gets ~1-2 rows a bucket
        # (2-4 bytes a row per table, under ~4 bytes a stored row in all), so a query
        # meets fewer candidates in it.
        self.p = max(0, size.bit_length() - (1 if sparse else 3))
        tables, n_buckets = len(layout.keys), 1 << self.p
        # Table t's rows are order[t * size:(t + 1) * size]; its bucket b is offsets[t, b]
        # to offsets[t, b + 1] in there. One table at a time keeps the peak memory to a
        # few arrays of the run's size.
        self.order = np.empty(tables * size, dtype=np.uint32)
        self.offsets = np.empty((tables, n_buckets + 1), dtype=np.uint32)
        if not compiled:
            values = layout.block_values(fps)
            numbers = np.arange(size, dtype=np.uint64) if local is None else local.astype(np.uint64)
            bucket_starts = np.arange(n_buckets + 1, dtype=np.uint64) << np.uint64(32)

        def build(t: int) -> None:
            if compiled:
                from .compiled import build_table, table_buckets

                self.offsets[t] = 0
                starts, masks = layout.compiled_keys[t]
                table = self.order[t * size : (t + 1) * size]
                buckets = table_buckets(fps[:, 0], starts, masks, _MIX_WORDS, self.p)
                build_table(buckets, table, self.offsets[t])
                if local is not None:  # positions among the rows in the tables -> local rows
                    table[:] = local[table]
                return
            if self.p:
                packed = layout.key_hash(values, t) >> np.uint64(64 - self.p)
            else:
                packed = np.zeros(size, np.uint64)
            packed <<= np.uint64(32)
            packed |= numbers
            packed.sort()
            self.order[t * size : (t + 1) * size] = packed.astype(np.uint32)  # the low 32 bits
            self.offsets[t] = np.searchsorted(packed, bucket_starts)

        if size < PARALLEL_BUILD_ROWS:
            for t in range(tables):
                build(t)
        else:  # numpy sorts without the GIL: two tables at a time use two cores
            with ThreadPoolExecutor(max_workers=2) as pool:
                list(pool.map(build, range(tables)))
        self.hot: tuple[Any, ...] = _NOTHING_COPIED
        if compiled:
            from .compiled import hot_copies

            self.hot = (
                *hot_copies(self.order, self.offsets, start, words[:, 0], COPIED_BUCKET),
                COPIED_BUCKET,
            )

    def __len__(self) -> int:
        return self.end - self.start

    def search(
        self,
        layout: Layout,
        words: np.ndarray,
        queries: np.ndarray,
        hashes: np.ndarray,
        by_hash: np.ndarray | None,
        k: int,
        part: range,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query, row, distance) for every row of this run within k of a query, each once,
        given the queries' key_hashes; with `by_hash`, the queries in the order of each
        table's hashes (Layout.keys_in_order), by compiled.search_run (64-bit only).
        Only the pairs whose first agreeing table is in `part` (a range of tables; all
        of them for a whole search): searches split over tables find each pair once."""
        if by_hash is not None:
            from .compiled import search_run

            return search_run(
                self.order,
                self.offsets,
                self.start,
                self.p,
                hashes,
                by_hash,
                words[:, 0],
                queries[:, 0],
                k,
                layout.first_table_rules,
                part.start,
                part.stop,
                self.hot,
            )  # type: ignore[no-any-return]
        tables, m = hashes.shape
        n_buckets = self.offsets.shape[1] - 1
        flat = (_bucket_of(hashes, self.p) + np.arange(tables)[:, None] * (n_buckets + 1)).ravel()
        offsets = self.offsets.ravel()
        lo = offsets[flat].astype(np.int64)
        counts = offsets[flat + 1].astype(np.int64) - lo
        total = int(counts.sum())
        if total == 0:
            return _EMPTY
        lo += np.repeat(np.arange(tables) * self.size, m)  # into the flat order array
        ends = np.cumsum(counts)
        pos = np.arange(total) + np.repeat(lo - (ends - counts), counts)
        rows = self.order[pos].astype(np.int64)
        rows += self.start
        q = np.repeat(np.tile(np.arange(m), tables), counts)
        d = _distances(words[rows], queries[q])
        hit = np.flatnonzero(d <= k)
        q, rows, d, pos = q[hit], rows[hit], d[hit], pos[hit]
        # A pair agreeing on several keys is found by several tables; keep the first's.
        table = pos // self.size
        first = layout.first_tables[layout.agreeing_blocks(words[rows], queries[q])]
        table[(table < part.start) | (table >= part.stop)] = -2  # never a first table
        once = np.flatnonzero(table == first)
        return q[once], rows[once], d[once].astype(np.int64)

    def packed_pairs(self, layout: Layout, words: np.ndarray, t: int, k: int) -> np.ndarray:
        """pairs() by compiled.table_pairs (64-bit fingerprints, rows below PAIR_ROWS): each
        (i, j, d) packed as i << 36 | j << 8 | d, for compiled.pairs_in_order."""
        from .compiled import table_pairs

        table = self.order[t * self.size : (t + 1) * self.size]
        rule = layout.first_table_rules[t]
        return table_pairs(table, self.offsets[t], self.start, words[:, 0], k, rule)  # type: ignore[no-any-return]

    def pairs(self, layout: Layout, words: np.ndarray, t: int, k: int) -> tuple[np.ndarray, ...]:
        """(i, j, d), i < j, for the rows of this run within k that share a bucket of table t
        and have t as their first agreeing table: each near pair of the run once over all t.

        Small buckets go through one vectorized pass over all their pairs; a hot bucket
        (common words) is compared as a dense matrix, which costs a few nanoseconds a pair
        instead of a gather per pair. packed_pairs does it in a compiled loop."""
        size = self.size
        order = self.order[t * size : (t + 1) * size].astype(np.int64) + self.start
        offsets = self.offsets[t].astype(np.int64)
        counts = np.diff(offsets)
        hot = np.flatnonzero(counts > HOT_BUCKET)
        small = np.ones(size, dtype=bool)
        parts = []
        for b in hot:
            lo, hi = offsets[b], offsets[b + 1]
            small[lo:hi] = False
            rows = np.sort(order[lo:hi])
            block = words[rows]
            for a in range(0, len(rows), DENSE_SLICE):  # rows a.. against the columns after them
                d = _counts(block[a : a + DENSE_SLICE, None, 0] ^ block[None, a:, 0], block.shape[1])
                for w in range(1, block.shape[1]):
                    d += np.bitwise_count(block[a : a + DENSE_SLICE, None, w] ^ block[None, a:, w])
                x, y = np.nonzero(d <= k)
                keep = x < y
                x, y = x[keep], y[keep]
                parts.append((rows[x + a], rows[y + a], d[x, y]))
        # Every position p of a small bucket pairs with the positions after it in its bucket.
        positions = np.flatnonzero(small)
        bucket_end = np.repeat(offsets[1:], counts)[positions]
        later = bucket_end - positions - 1
        first = np.repeat(positions, later)
        step = np.arange(len(first)) - np.repeat(np.cumsum(later) - later, later)
        x, y = order[first], order[first + 1 + step]
        d = _distances(words[x], words[y])
        hit = np.flatnonzero(d <= k)
        parts.append((np.minimum(x[hit], y[hit]), np.maximum(x[hit], y[hit]), d[hit]))
        i, j, d = (np.concatenate(z) for z in zip(*parts))
        once = np.flatnonzero(layout.first_tables[layout.agreeing_blocks(words[i], words[j])] == t)
        return i[once], j[once], d[once].astype(np.int64)

    def check(self, layout: Layout, words: np.ndarray, skip: np.ndarray | None) -> None:
        size = self.size
        rows = np.arange(len(self)) if skip is None else np.flatnonzero(~skip[self.start : self.end])
        assert len(rows) == size, "the rows in the tables are those not skipped"
        buckets = _bucket_of(layout.key_hashes(words[self.start : self.end]), self.p)
        for t in range(len(layout.keys)):
            order = self.order[t * size : (t + 1) * size]
            assert np.array_equal(np.sort(order), rows), "a row missing or doubled"
            counts = np.diff(self.offsets[t].astype(np.int64))
            assert counts.min(initial=0) >= 0 and self.offsets[t, -1] == size
            owner = np.repeat(np.arange(len(counts)), counts)
            assert np.array_equal(buckets[t][order], owner), "a row in the wrong bucket"


_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))
#: A run built by numpy copies no bucket (_Run.hot, as compiled.search_run takes it).
_NOTHING_COPIED = (*_EMPTY, np.empty(0, np.uint64), 1 << 62)


@dataclass(frozen=True)
class IndexStats:
    """What --verbose reports about an index."""

    fingerprints: int
    layout: str
    blocks: tuple[tuple[int, int], ...]
    tables: int
    runs: int
    largest_bucket: int
    nbytes: int
    #: Recent rows in no run yet, each compared with every query (BUFFER_ROWS at most).
    buffered: int = 0
    #: Rows stored unindexed (BlockIndex.add_many's `indexed`), which no search finds.
    unindexed: int = 0


class BlockIndex:
    """Exact search for stored fingerprints within `distance` bits of a query.

    Rows are numbered 0, 1, 2, ... in insertion order. Layout (settings.index_layout):
    for distance d <= 6, d + 2 blocks and one table per pair of blocks (10 tables at
    d = 3; at d = 4, d + 3 blocks in two groups, a table per pair inside a group: 9
    tables): two fingerprints within d bits differ in at most d blocks, so they agree on
    at least two, and a pair of ~13-bit blocks makes a ~26-bit key that stays selective
    on real text, where common words make single 16-bit blocks hot (Manku et al. use
    several permuted tables for the same reason). From d = 7 on, the classic d + 1
    blocks, one table each, whose keys are so short (8 bits or fewer at 64 bits) that
    the index compares every query with every row instead (Layout.brute_force).

    Storage: the fingerprints in one growing uint64 array; rows sit in immutable runs
    (see _Run) plus a small buffer of recent rows that is searched by brute force.
    When the buffer fills it becomes a run, and runs of similar size merge, so there
    are O(log n) runs and each row is re-sorted O(log n) times in all.

    Cost: a query looks at ~4-8 rows per table and run on random fingerprints, plus the
    buffer; `search` does it for a whole batch of queries in compiled loops (64-bit
    fingerprints, the loops built), or in numpy (the same pairs, several times slower
    where common words make buckets hot). Memory per row:
    8 bytes (64-bit) plus ~4.5 bytes per table (~53 bytes at distance 3), and in
    compiled runs 8 bytes per table for each row in a bucket of COPIED_BUCKET rows or
    more (none on random fingerprints; about half the rows of 8M crowded English ones).

    A row can be stored unindexed (add_many's `indexed`): it keeps its number and its
    fingerprint, and no search finds it. verify.py leaves out of the tables the kept
    documents that a crowd of indexed ones is near already (VerifyingDeduplicator).
    """

    def __init__(
        self,
        bits: int = 64,
        distance: int = DEFAULT_DISTANCE,
        *,
        buffer_rows: int = BUFFER_ROWS,
        layout: Layout | None = None,
    ) -> None:
        _check_distance(bits, distance)
        # 0 made an empty run at each add_many (a review); "8" and 1.5 failed later, or not at all (a trial)
        if isinstance(buffer_rows, bool) or not isinstance(buffer_rows, numbers.Integral) or buffer_rows < 1:
            raise ValueError(
                f"buffer_rows (rows held before a run is made) is an int, 1 or more, not {buffer_rows!r}"
            )
        buffer_rows = int(buffer_rows)
        self.bits = bits = int(bits)
        self.distance = distance = int(distance)
        self.layout = layout or Layout.for_(bits, distance)
        self.blocks = self.layout.blocks
        self._buffer_rows = buffer_rows
        self._words = np.empty((max(16, buffer_rows), bits // 64), dtype=np.uint64)
        self._n = 0
        self._runs: list[_Run] = []
        # Row r is in no table where _skip[r]; None while every row is indexed.
        self._skip: np.ndarray | None = None

    @classmethod
    def from_fingerprints(
        cls, fps: Iterable[int], bits: int = 64, distance: int = DEFAULT_DISTANCE
    ) -> BlockIndex:
        index = cls(bits, distance)
        index.add_many(fingerprint_array(list(fps), bits))
        return index

    def __len__(self) -> int:
        return self._n

    @property
    def fingerprints(self) -> Sequence[int]:
        """The stored fingerprints as Python ints, row by row: a live view, not a copy."""
        return _Fingerprints(self)

    def fingerprint_array(self) -> np.ndarray:
        """The stored fingerprints, row by row: uint64, shape (n,) for 64 bits, (n, 2) for 128
        (high word first). A copy."""
        words = self._words[: self._n].copy()
        return words.reshape(-1) if words.shape[1] == 1 else words

    def unindexed_array(self, start: int = 0) -> np.ndarray:
        """A bool per row from `start` on, True where it is stored unindexed (add_many's
        `indexed`). A copy."""
        if self._skip is None:
            return np.zeros(max(0, self._n - start), bool)
        return self._skip[start : self._n].copy()

    @property
    def unindexed(self) -> int:
        """How many rows are stored unindexed."""
        return 0 if self._skip is None else int(np.count_nonzero(self._skip[: self._n]))

    # ------------------------------------------------------------------ adding

    def add(self, fp: int) -> int:
        """Store a fingerprint; returns its row."""
        if type(fp) is int and not 0 <= fp < 1 << self.bits:
            raise ValueError(f"fingerprint {fp:#x} does not fit in {self.bits} bits")
        return self.add_many(fingerprint_array([fp], self.bits)).start  # refuses "5", 5.0

    def add_many(self, fps: np.ndarray, indexed: np.ndarray | None = None) -> range:
        """Store fingerprints given as fingerprint_array() returns them; returns their rows.
        Where `indexed` (a bool per fingerprint) is False, the row is stored unindexed:
        numbered, but found by no search."""
        words = _words(fps, self.bits)
        start, end = self._n, self._n + len(words)
        skip = None
        if indexed is not None:
            flags = np.asarray(indexed)
            if flags.dtype != bool:  # 0.0, 1.0 or 'a', '' were taken by truthiness (a trial)
                raise ValueError(f"indexed is a bool a fingerprint, not {flags.dtype}")
            skip = ~flags
            if skip.shape != (len(words),):
                raise ValueError(f"{len(words)} fingerprints but {skip.shape} flags of which are indexed")
        if end > len(self._words):
            grown = np.empty((max(end, len(self._words) * 5 // 4), self._words.shape[1]), np.uint64)
            grown[:start] = self._words[:start]
            self._words = grown
        if self._skip is not None and len(self._skip) < len(self._words):
            self._skip = np.concatenate([self._skip, np.zeros(len(self._words) - len(self._skip), bool)])
        if skip is not None and skip.any() and self._skip is None:
            self._skip = np.zeros(len(self._words), bool)
        if self._skip is not None:
            self._skip[start:end] = False if skip is None else skip
        self._words[start:end] = words
        self._n = end
        if end - self._buffer_start >= self._buffer_rows and not self.layout.brute_force:
            self._runs.append(self._run(self._buffer_start, end))
            while len(self._runs) >= 2 and len(self._runs[-2]) <= 2 * len(self._runs[-1]):
                top = self._runs.pop()
                below = self._runs.pop()
                self._runs.append(self._run(below.start, top.end))
        return range(start, end)

    def _run(self, start: int, end: int) -> _Run:
        # Runs of under a sixteenth of the rows get sparse buckets (see _Run): together
        # they hold under an eighth of the rows, so they add under 4 bytes a row.
        return _Run(
            self.layout,
            self._words,
            start,
            end,
            sparse=(end - start) * 16 <= self._n,
            compiled=self.compiled,
            skip=None if self._skip is None else self._skip[start:end],
        )

    @property
    def compiled(self) -> bool:
        """Whether compiled loops (compiled.py) serve this index: 64-bit fingerprints, at
        least COMPILED_ROWS of them, and the loops built (LOOPS_BUILT). Callers with work
        of their own on its candidates (verification) use them too from then on."""
        return LOOPS_BUILT and self.bits == 64 and self._n >= COMPILED_ROWS

    @property
    def _buffer_start(self) -> int:
        return self._runs[-1].end if self._runs else 0

    # ------------------------------------------------------------------ searching

    def search(
        self,
        fps: np.ndarray,
        distance: int | None = None,
        *,
        ordered: bool = True,
        part: int = 0,
        parts: int = 1,
        keep: Callable[[tuple[np.ndarray, ...]], tuple[np.ndarray, ...]] | None = None,
    ) -> tuple[np.ndarray, ...]:
        """Every (query, row, distance) with a stored row within `distance` (default: the
        index's) of a query, for a batch of queries shaped as fingerprint_array() gives
        them; each pair once. Sorted by query, then distance, then row; in no set order
        with `ordered=False`, which saves sorting millions of pairs in a crowded index.

        With `parts` > 1, only the pairs of one part (0 .. parts - 1) of the tables, so
        that `parts` threads can share a search (the compiled loops release the GIL):
        the parts' pairs together are the whole search's, each once.

        `keep` takes the pairs (query, row, distance) of each run as they are found and
        gives the columns returned instead (the first three: those of the pairs it
        keeps): a caller that keeps few of a crowded index's pairs never holds them all.
        A query's pairs reach it run by run in order of rows (the runs' rows ascend, the
        buffer's come last), each run's in no set order."""
        k = self._k(distance)
        queries = _words(fps, self.bits)
        # IndexError where part or parts were out of range, and part -1 gave the last part's (a trial)
        if isinstance(parts, bool) or not isinstance(parts, numbers.Integral) or parts < 1:
            raise ValueError(f"search's parts is an int, 1 or more, not {parts!r}")
        if isinstance(part, bool) or not isinstance(part, numbers.Integral) or not 0 <= part < parts:
            raise ValueError(f"search's part is an int from 0 to parts - 1 ({parts - 1}), not {part!r}")
        tables = self.split_tables(parts)[part]
        found = []
        for lo in range(0, len(queries), QUERY_SLICE):
            for q, rows, d in self._search_slice(queries[lo : lo + QUERY_SLICE], k, tables, part == 0):
                found.append((q + lo, rows, d) if keep is None else keep((q + lo, rows, d)))
        if not found:
            return _EMPTY if keep is None else keep(_EMPTY)
        columns = [np.concatenate(x) for x in zip(*found)]
        if not ordered:
            return tuple(columns)
        q, rows, d = columns[:3]
        order = np.lexsort((rows, d, q))
        return tuple(column[order] for column in columns)

    def split_tables(self, parts: int) -> list[range]:
        """The tables in `parts` consecutive ranges of nearly equal length."""
        tables = len(self.layout.keys)
        return [range(tables * i // parts, tables * (i + 1) // parts) for i in range(parts)]

    def _search_slice(
        self, queries: np.ndarray, k: int, tables: range, buffer: bool
    ) -> Iterable[tuple[np.ndarray, ...]]:
        """The pairs of every run, of `tables` only; with `buffer`, the buffer's too."""
        # Every table's keys are hashed once for all runs; compiled, only those of
        # `tables`, with the queries ordered by as many of their top bits as the largest
        # run has buckets.
        if self._runs and self.compiled:
            top = max(run.p for run in self._runs)
            hashes, by_hash = self.layout.keys_in_order(queries, tables, top)
        elif self._runs:
            hashes, by_hash = self.layout.key_hashes(queries), None
        for run in self._runs:
            yield run.search(self.layout, self._words, queries, hashes, by_hash, k, tables)
        if not buffer:
            return
        start = self._buffer_start
        if start == self._n:
            return
        # The buffer (a brute-force layout's every row): every query against every
        # indexed row; unindexed ones (a crowd's, thousands at a wide distance) are not
        # compared at all.
        rows = None
        if self._skip is not None and self._skip[start : self._n].any():
            rows = start + np.flatnonzero(~self._skip[start : self._n])
        words = self._words[start : self._n] if rows is None else self._words[rows]
        if self.compiled:
            from .compiled import cross_pairs

            q, col, d = cross_pairs(queries[:, 0], words[:, 0], k)
            yield q, (col + start if rows is None else rows[col]), d
            return
        step = max(1, MATRIX_CELLS // len(queries))  # as a matrix, some rows at a time
        for lo in range(0, len(words), step):
            q, col, d = _matrix_pairs(queries, words[lo : lo + step], k)
            yield q, (col + start + lo if rows is None else rows[col + lo]), d

    def rows_of(self, rows: np.ndarray) -> np.ndarray:
        """The stored fingerprints of these rows as (len(rows), bits // 64) uint64 words,
        the high word first. A copy."""
        return self._words[: self._n][rows]

    def distances_to(self, rows: np.ndarray, fps: np.ndarray) -> np.ndarray:
        """Hamming distance (int64) from stored row rows[t] to fps[t], for every t."""
        return _distances(self._words[rows], _words(fps, self.bits)).astype(np.int64)

    def candidates(self, fps: np.ndarray) -> np.ndarray:
        """For each query (fingerprint_array form), how many stored rows a search compares
        it with: the sizes of its buckets in every run and table, and the rows searched by
        brute force. A bound on the pairs it can find; from the bucket bounds alone."""
        queries = _words(fps, self.bits)
        if self.layout.brute_force:
            return np.full(len(queries), self._n - self.unindexed, np.int64)
        buffered = self._n - self._buffer_start
        if self._skip is not None:
            buffered -= int(np.count_nonzero(self._skip[self._buffer_start : self._n]))
        counts = np.full(len(queries), buffered, np.int64)
        tables = np.arange(len(self.layout.keys))[:, None]
        for lo in range(0, len(queries) if self._runs else 0, QUERY_SLICE):  # as searched
            part = queries[lo : lo + QUERY_SLICE]
            hashes = self.layout.compiled_key_hashes(part) if self.compiled else self.layout.key_hashes(part)
            for run in self._runs:
                buckets = _bucket_of(hashes, run.p)
                sizes = run.offsets[tables, buckets + 1].astype(np.int64) - run.offsets[tables, buckets]
                counts[lo : lo + QUERY_SLICE] += sizes.sum(axis=0)
        return counts

    def nearest_many(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each query, the nearest stored row within the index's distance (ties: the
        earliest) and its distance; -1 for both where there is none. Each run's pairs are
        folded into the best so far as they are found: holding them all, a batch of 4,096
        queries in a crowded index of 50,000 rows took 6 GB (`index query --no-verify`
        of CSV rows, a review)."""
        best = np.full(len(_words(fps, self.bits)), _NO_PAIR, np.int64)

        def nearer(pairs: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
            q, rows, d = pairs
            np.minimum.at(best, q, (d << _ROW_BITS) | rows)  # the nearest, then the earliest
            return _EMPTY

        self.search(fps, ordered=False, keep=nearer)
        found = best != _NO_PAIR
        best_row = np.where(found, best & ((1 << _ROW_BITS) - 1), -1)
        best_d = np.where(found, best >> _ROW_BITS, -1)
        return best_row, best_d

    def query(self, fp: int, distance: int | None = None) -> list[tuple[int, int]]:
        """Every (row, distance) within `distance` (default: the index's), nearest first, then by row."""
        _, rows, d = self.search(fingerprint_array([fp], self.bits), distance)
        return list(zip(rows.tolist(), d.tolist()))

    def nearest(self, fp: int) -> tuple[int, int] | None:
        """The nearest stored (row, distance) within the index's distance (ties: earliest row)."""
        found = self.query(fp)
        return found[0] if found else None

    def _k(self, distance: int | None) -> int:
        k = self.distance if distance is None else distance
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k <= self.distance:
            raise ValueError(f"this index answers distances from 0 to {self.distance}, not {k!r}")
        return int(k)  # np.int64(2) as BlockIndex() and near_pairs take it

    # ------------------------------------------------------------------ reporting

    def stats(self) -> IndexStats:
        largest = max((int(np.diff(r.offsets, axis=1).max()) for r in self._runs), default=0)
        nbytes = self._words.nbytes  # allocated, spare room included
        nbytes += 0 if self._skip is None else self._skip.nbytes
        nbytes += sum(r.order.nbytes + r.offsets.nbytes + r.hot[3].nbytes for r in self._runs)
        return IndexStats(
            fingerprints=self._n,
            layout=self.layout.describe(),
            blocks=self.layout.blocks,
            tables=len(self.layout.keys),
            runs=len(self._runs),
            largest_bucket=largest,
            nbytes=nbytes,
            buffered=self._n - self._buffer_start,
            unindexed=self.unindexed,
        )

    def _check(self) -> None:
        """Assert the invariants: runs tile rows 0..buffer start in order, each run's
        tables hold each of its rows once, in the bucket its key hashes to."""
        end = 0
        for run in self._runs:
            assert run.start == end and run.end > run.start, "runs must tile the rows"
            run.check(self.layout, self._words, self._skip)
            end = run.end
        if self.layout.brute_force:
            assert not self._runs, "a brute-force index has no tables"
        else:
            assert self._n - end < self._buffer_rows, "the buffer should have become a run"
        if self.bits == 64:
            assert self._words.shape[1] == 1
        assert self._skip is None or len(self._skip) >= self._n


class _Fingerprints(Sequence[int]):
    def __init__(self, index: BlockIndex) -> None:
        self._index = index

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, row):  # type: ignore[no-untyped-def,override]
        n = len(self._index)
        if isinstance(row, slice):
            return [self[r] for r in range(*row.indices(n))]
        if not -n <= row < n:
            raise IndexError(f"row {row} of {n}")
        return fingerprint_ints(self._index._words[row % n : row % n + 1])[0]


def near_pairs(
    fps: Sequence[int | None], bits: int = 64, distance: int = DEFAULT_DISTANCE
) -> list[tuple[int, int, int]]:
    """All (i, j, d) with i < j and d = distance(fps[i], fps[j]) <= distance, sorted;
    None (an empty document's fingerprint, as fingerprint_texts gives it) is in no pair.

    A pure function over a batch, for all-pairs jobs and for checking the index.
    `fps` may also be any iterable of them, or an array as fingerprint_array() gives it.
    """
    _check_distance(bits, distance)
    bits, distance = int(bits), int(distance)  # a numpy integer too
    if isinstance(fps, (str, bytes, bytearray, memoryview, set, frozenset)):
        # bytes iterate as ints, and a set in no order its pairs could name (a trial)
        raise TypeError(
            f"near_pairs takes fingerprints in order (a list, an array), not a {type(fps).__name__}"
        )
    if isinstance(fps, np.ndarray):
        i, j, d = near_pair_arrays(fingerprint_array(fps, bits), bits, distance)
        return list(zip(i.tolist(), j.tolist(), d.tolist()))
    if not isinstance(fps, Sequence):
        fps = list(fps)
    present = [i for i, fp in enumerate(fps) if fp is not None]
    i, j, d = near_pair_arrays(fingerprint_array([fps[i] for i in present], bits), bits, distance)
    if len(present) < len(fps):
        i, j = np.asarray(present, np.int64)[i], np.asarray(present, np.int64)[j]
    return list(zip(i.tolist(), j.tolist(), d.tolist()))


def _check_distance(bits: int, distance: int) -> None:
    if isinstance(bits, bool) or not isinstance(bits, numbers.Integral) or bits < 64 or bits % 64:
        raise ValueError(f"fingerprints are 64 bits or a multiple of 64, not {bits!r}")
    if isinstance(distance, bool) or not isinstance(distance, numbers.Integral) or not 0 <= distance < bits:
        raise ValueError(f"a distance is an int from 0 to {bits - 1}, not {distance!r}")


#: Up to this many fingerprints, near_pair_arrays compares every pair (measured: cheaper
#: than building tables up to ~500).
BRUTE_FORCE_PAIRS = 512
#: The same for its compiled loop, which grows with the square, while the tables' cost
#: grows with their number: it compares every pair up to this many fingerprints a table
#: of the layout, the tables find them above (compiled_brute_force). Every pair against
#: the tables, 4,096 fingerprints of the generated corpus (random ones alike): k = 2 (6
#: tables) 0.93 against 0.37 ms, k = 3 (10) 0.95 against 0.61, k = 4 (15) 0.95 against
#: 0.94, k = 5 (21) 0.97 against 1.44, k = 6 (28) 1.00 against 2.17; at 3,072, k = 3 0.53
#: against 0.49, k = 4 0.54 against 0.75; at 2,048, k = 2 0.25 against 0.27 (stop 43; it
#: was 8,192 whatever the layout, set when the tables cost 3.6 ms at 1,024).
COMPILED_BRUTE_FORCE_A_TABLE = 270


def compiled_brute_force(layout: Layout) -> int:
    """Up to how many fingerprints the compiled loop compares every pair (near_pair_arrays)."""
    return COMPILED_BRUTE_FORCE_A_TABLE * len(layout.keys)


def near_pair_arrays(
    fps: np.ndarray,
    bits: int = 64,
    distance: int = 3,
    layout: Layout | None = None,
    *,
    brute_force: int = BRUTE_FORCE_PAIRS,
    compiled: bool = False,
) -> tuple[np.ndarray, ...]:
    """near_pairs as three int64 arrays (i, j, d), for fingerprints as fingerprint_array()
    gives them; sorted by i, then j. Up to `brute_force` fingerprints (no layout given),
    or for a Layout.brute_force, every pair is compared; otherwise a BlockIndex finds
    them. `compiled` (64-bit): every pair is compared by a compiled loop up to
    compiled_brute_force fingerprints (no layout given; for a batch, once compiled.py
    is loaded anyway), and for a Layout.brute_force."""
    given = layout
    layout = layout or Layout.for_(bits, distance)
    few = given is None and len(fps) <= compiled_brute_force(layout)
    if compiled and bits == 64 and (layout.brute_force or few):
        from .compiled import all_pairs

        return all_pairs(_words(fps, bits)[:, 0], distance)  # type: ignore[no-any-return]
    if (given is None and len(fps) <= brute_force) or layout.brute_force:
        return _matrix_all_pairs(_words(fps, bits), distance)
    index = BlockIndex(bits, distance, buffer_rows=max(1, len(fps)), layout=layout)
    index.add_many(fps)
    if not index._runs:
        return _EMPTY
    run, tables = index._runs[0], range(len(index.layout.keys))
    if index.compiled and len(fps) <= PAIR_ROWS:
        from .compiled import pairs_in_order

        words = index._words[: len(fps)]
        return pairs_in_order([run.packed_pairs(index.layout, words, t, distance) for t in tables], len(fps))
    parts = [run.pairs(index.layout, index._words, t, distance) for t in tables]
    i, j, d = (np.concatenate(x) for x in zip(*parts))
    order = np.argsort(i << 32 | j)  # rows < 2 ** 32
    return i[order], j[order], d[order]


def _matrix_pairs(queries: np.ndarray, words: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """Every (q, j, d) within k of two (n, words) arrays, sorted by q then j, from one
    matrix of distances: for slices of MATRIX_CELLS or so."""
    d = _counts(queries[:, None, 0] ^ words[None, :, 0], words.shape[1])
    for w in range(1, words.shape[1]):
        d += np.bitwise_count(queries[:, None, w] ^ words[None, :, w])
    q, j = np.nonzero(d <= k)
    return q.astype(np.int64), j.astype(np.int64), d[q, j].astype(np.int64)


def _matrix_all_pairs(words: np.ndarray, k: int, firsts: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """near_pair_arrays by comparing every pair, some rows' pairs at a time; of the
    pairs whose i is one of `firsts` (ascending rows), if given."""
    firsts = np.arange(len(words)) if firsts is None else firsts
    step = max(1, MATRIX_CELLS // max(1, len(words)))
    found = [_EMPTY]
    for lo in range(0, len(firsts), step):
        rows = firsts[lo : lo + step]
        q, j, d = _matrix_pairs(words[rows], words, k)
        i = rows[q]
        after = j > i
        found.append((i[after], j[after], d[after]))
    i, j, d = (np.concatenate(x) for x in zip(*found))
    return i, j, d


def brute_pairs_after(
    fps: np.ndarray, bits: int, distance: int, firsts: np.ndarray
) -> tuple[np.ndarray, ...]:
    """near_pair_arrays' (i, j, d) whose i is one of `firsts` (ascending rows), by
    comparing each with every fingerprint, some at a time: as a Layout.brute_force
    index would, with its memory bound (MATRIX_CELLS)."""
    return _matrix_all_pairs(_words(fps, bits), distance, firsts)
