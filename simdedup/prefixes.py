"""Candidates for short documents by their shingles: prefix filtering on exact sketches.

A document of at most EXACT_SHINGLES distinct shingles has an exact sketch
(sketch.OnePermutation): the top 32 bits of each shingle, ascending. Two sets x and y
with Jaccard >= t share at least t * max(|x|, |y|) values, so each shares one of its
first |x| - ceil(t |x|) + 1 values (its prefix, in ascending order, the same order for
every document) with the other's prefix (Chaudhuri, Ganti & Kaushik 2006; Bayardo, Ma
& Srikant 2007, "all pairs"). Indexing each short document by its prefix finds every
pair at t among them, whatever their fingerprints: a word of 15 moves a fingerprint
past k, and short copies were the ones the fingerprint index missed most.

A value held by many documents (one template's lines share most of their shingles)
would make every one a candidate of every other: the first PREFIX_CROWD kept documents
that hold it in their prefix are filed under it, and it gives candidates only while
fewer than that many are (verify._Prefixes). Pure functions over batches and one index
of sorted runs; never prints. verify.VerifyingDeduplicator decides with it.
"""

from __future__ import annotations

import numpy as np

from .features import runs_index
from .sketch import Sketcher

#: Kept documents filed under one prefix value, at most: the first ones that hold it.
#: Once it holds this many, a value gives no candidates.
PREFIX_CROWD = 16
_U32 = np.uint64(32)


def prefix_length(n: np.ndarray, min_jaccard: float) -> np.ndarray:
    """How many of a set's first values (of n) every set at Jaccard min_jaccard or more
    with it shares one of: n - ceil(t n) + 1, from 1 to n. A hair below t n is taken
    for t n (a product rounded up past an integer would cut the prefix short)."""
    need = np.ceil(np.asarray(n, np.float64) * min_jaccard - 1e-9).astype(np.int64)
    return np.clip(np.asarray(n, np.int64) - need + 1, 1, np.asarray(n, np.int64))


def prefixes(
    sketcher: Sketcher, sketches: np.ndarray, has: np.ndarray, min_jaccard: float
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, values): the prefix values of each row of `sketches` that has an exact
    sketch (and `has`), row by row, ascending within a row (uint32 values, int64 rows)."""
    exact = np.flatnonzero(sketcher.exact_rows(sketches) & has)
    if not len(exact):
        return np.zeros(0, np.int64), np.zeros(0, np.uint32)
    # the longest prefix's values, not whole sketches (an index of 183,000 short rows
    # loaded with 140 MB more, copies of them)
    most = int(prefix_length(np.array([sketcher.exact_most()]), min_jaccard)[0])
    counts, first = sketcher.exact_values(sketches[exact], most)
    lengths = prefix_length(counts, min_jaccard)
    values = first[np.arange(most) < lengths[:, None]]
    return np.repeat(exact.astype(np.int64), lengths), values.astype(np.uint32)


class PrefixIndex:
    """(value, row) entries in sorted runs that merge as they grow (as BlockIndex's):
    at most PREFIX_CROWD rows a value, the first ones added. Rows are ints below 2 ** 32."""

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []  # uint64 keys value << 32 | row, ascending

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, which, rows): how many rows are filed under each value (int64, at
        most PREFIX_CROWD), and those rows, as pairs of the value's position in `values`
        and a row (int64), in no set order. Each distinct value is looked up once, in
        ascending order (numpy's binary searches then walk each run forward)."""
        values = np.asarray(values, np.uint32)
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        first = np.r_[True, ordered[1:] != ordered[:-1]] if len(values) else np.zeros(0, bool)
        distinct = ordered[first]
        inverse = np.empty(len(values), np.int64)
        inverse[order] = np.cumsum(first) - 1
        keys = distinct.astype(np.uint64) << _U32
        ends = keys + (np.uint64(1) << _U32)
        counts = np.zeros(len(distinct), np.int64)
        found: list[tuple[np.ndarray, np.ndarray]] = []
        for run in self._runs:
            lo = run.searchsorted(keys)
            n = run.searchsorted(ends) - lo
            counts += n
            if n.any():
                at = np.flatnonzero(n)
                d = np.repeat(at, n[at])
                found.append((d, (run[runs_index(lo[at], n[at])] & np.uint64(0xFFFFFFFF)).astype(np.int64)))
        if not found:
            return counts[inverse], np.zeros(0, np.int64), np.zeros(0, np.int64)
        d = np.concatenate([f for f, _ in found])
        rows = np.concatenate([r for _, r in found])
        # each (value, row) found, for every position in `values` that holds the value
        per = np.bincount(inverse, minlength=len(distinct))
        which = order[runs_index((np.cumsum(per) - per)[d], per[d])]  # order groups them by value
        return counts[inverse], which, np.repeat(rows, per[d])

    def counts(self, values: np.ndarray) -> np.ndarray:
        """How many rows are filed under each value (int64, at most PREFIX_CROWD)."""
        return self.lookup(values)[0]

    def add(self, rows: np.ndarray, values: np.ndarray, filed: np.ndarray | None = None) -> None:
        """Files each row under its value (rows ascending, all past those filed), but
        only while fewer than PREFIX_CROWD rows are filed under the value. `filed`: the
        rows filed under each entry's value already (lookup's counts), if known."""
        if not len(rows):
            return
        if int(np.max(rows)) >= 1 << 32:
            raise ValueError("prefix rows are below 2 ** 32")
        if filed is None:
            filed = self.counts(values)
        keys = (np.asarray(values, np.uint64) << _U32) | np.asarray(rows, np.uint64)
        order = np.argsort(keys)
        keys, filed = keys[order], np.asarray(filed, np.int64)[order]
        value = keys >> _U32
        starts = np.flatnonzero(np.r_[True, value[1:] != value[:-1]])
        rank = np.arange(len(keys)) - np.repeat(starts, np.diff(np.r_[starts, len(keys)]))
        keys = keys[rank < PREFIX_CROWD - filed]
        if not len(keys):
            return
        self._runs.append(keys)
        while len(self._runs) >= 2 and len(self._runs[-2]) <= 2 * len(self._runs[-1]):
            last = self._runs.pop()
            merged = np.concatenate([self._runs.pop(), last])
            merged.sort(kind="stable")  # two sorted runs: timsort merges them
            self._runs.append(merged)

    @property
    def nbytes(self) -> int:
        return sum(run.nbytes for run in self._runs)


def pairs_in_groups(
    order: np.ndarray, starts: np.ndarray, sizes: np.ndarray, early: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(first, second): for entries grouped by value (`order` sorts them by value, then
    position; group g is order[starts[g] : starts[g] + sizes[g]]), each pair of one of a
    group's first early[g] entries with every later entry of the group, as indices into
    the entries."""
    m = np.minimum(early, sizes - 1).clip(0)
    # group g pairs each of its first m[g] entries, e, with entries e + 1 .. sizes[g] - 1
    first_at = runs_index(starts, m)
    later = np.repeat(starts + sizes, m) - first_at - 1
    return order[np.repeat(first_at, later)], order[runs_index(first_at + 1, later)]
