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
that hold it in their prefix are filed under it, and it gives those as candidates
only, however many hold it after them (verify._Prefixes). Pure functions over batches
and one index of sorted runs; never prints. verify.VerifyingDeduplicator decides with
it.
"""

from __future__ import annotations

import numpy as np

from .features import runs_index
from .sketch import Sketcher

#: Kept documents filed under one prefix value, at most: the first ones that hold it.
#: A value gives these as candidates, however many kept documents hold it after them.
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
    at most PREFIX_CROWD rows a value, the first ones added. Rows are ints below 2 ** 32.

    Entries are filed by a mix of the value (_mixed), and each run has a directory:
    where the entries of each leading-bits bucket of the mix begin, with about as many
    buckets as entries, so that a lookup reads the one or two entries of a bucket where
    a binary search read some twenty. (Prefixes are the least of a document's values,
    so the values crowd near 0; their mix spreads them evenly.) The directory costs at
    most 4 bytes an entry beside the entry's 8."""

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []  # uint64 keys _mixed(value) << 32 | row, ascending
        self._starts: list[np.ndarray] = []  # each run's directory (_directory)

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, which, rows): how many rows are filed under each value (int64, at
        most PREFIX_CROWD), and those rows, as pairs of the value's position in `values`
        and a row (int64), in no set order."""
        wide = _mixed(values)
        counts = np.zeros(len(wide), np.int64)
        which: list[np.ndarray] = []
        rows: list[np.ndarray] = []
        for run, starts in zip(self._runs, self._starts):
            bits = (len(starts) - 1).bit_length() - 1
            bucket = (wide >> np.uint64(32 - bits)).astype(np.intp)
            first = starts[bucket].astype(np.intp)
            sizes = starts[bucket + 1] - first
            at = runs_index(first, sizes)  # the entries of each value's bucket
            pos = np.repeat(np.arange(len(wide)), sizes)
            hit = (run[at] >> _U32) == wide[pos]
            pos, at = pos[hit], at[hit]
            counts += np.bincount(pos, minlength=len(wide))
            which.append(pos)
            rows.append((run[at] & _LOW).astype(np.int64))
        if not which:
            return counts, np.zeros(0, np.int64), np.zeros(0, np.int64)
        return counts, np.concatenate(which).astype(np.int64), np.concatenate(rows)

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
        keys = (_mixed(values) << _U32) | np.asarray(rows, np.uint64)
        order = np.argsort(keys)
        keys, filed = keys[order], np.asarray(filed, np.int64)[order]
        value = keys >> _U32  # mixed
        starts = np.flatnonzero(np.r_[True, value[1:] != value[:-1]])
        rank = np.arange(len(keys)) - np.repeat(starts, np.diff(np.r_[starts, len(keys)]))
        keys = keys[rank < PREFIX_CROWD - filed]
        if not len(keys):
            return
        while self._runs and len(self._runs[-1]) <= 2 * len(keys):
            self._starts.pop()
            keys = np.concatenate([self._runs.pop(), keys])
            keys.sort(kind="stable")  # two sorted runs: timsort merges them
        self._runs.append(keys)
        self._starts.append(_directory(keys))

    @property
    def nbytes(self) -> int:
        return sum(run.nbytes for run in self._runs) + sum(d.nbytes for d in self._starts)

    def __setstate__(self, state: dict) -> None:
        """A pickle from before the directories (stop 41: no `_starts`, runs keyed by
        the value itself) is keyed by the mixed value, and gets them."""
        self.__dict__.update(state)
        if "_starts" not in state:
            runs, self._runs, self._starts = self._runs, [], []
            for run in filter(len, runs):
                keys = (_mixed(run >> _U32) << _U32) | (run & _LOW)
                keys.sort()
                self._runs.append(keys)
                self._starts.append(_directory(keys))


_LOW = np.uint64(0xFFFFFFFF)
_MIX = np.uint64(0x9E3779B1)  # odd: a bijection of 32-bit values


def _mixed(values: np.ndarray) -> np.ndarray:
    """Each uint32 value times an odd constant, mod 2 ** 32, as uint64: one to one, and
    its leading bits spread however the values crowd in their low ones."""
    return (np.asarray(values, np.uint32).astype(np.uint64) * _MIX) & _LOW


def _directory(run: np.ndarray) -> np.ndarray:
    """Where the entries of each bucket of `run` (uint64 keys mixed value << 32 | row,
    ascending) begin, and the run's length last: 2 ** b + 1 of them, b the leading bits
    of the mixed value that make a bucket, with 2 ** b <= len(run) (at most 32 bits)."""
    bits = min(max(len(run).bit_length() - 1, 0), 32)
    top = (run >> np.uint64(64 - bits)).astype(np.intp) if bits else np.zeros(len(run), np.intp)
    starts = np.zeros((1 << bits) + 1, np.int32 if len(run) < 1 << 31 else np.int64)
    np.cumsum(np.bincount(top, minlength=1 << bits), out=starts[1:])
    return starts


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
