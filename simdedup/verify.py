"""Verification (on by default): a fingerprint match is a duplicate only if the texts agree.

A document within the distance of kept documents is checked against each of them with
the Jaccard similarity of their shingles (3-shingles of words, Han characters one unit
each: sketch.py; after the same normalization as features),
estimated from fixed-size sketches (sketch.py). Never prints.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import numbers
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from itertools import chain
from typing import Any

import numpy as np
import xxhash

from .dedup import (
    MATCH_CANDIDATES,
    Decision,
    Deduplicator,
    Ids,
    _as_fingerprint_array,
    _cuts,
    _indexed_flags,
    _one_thread,
    _repeated,
    candidates_of,
    checked_documents,
    crowded_batch,
)
from .features import distinct, normalized_many
from .fingerprint import HashFunc, normalized_batch_fingerprints
from .index import BlockIndex, Layout, brute_pairs_after, distances, fingerprint_array, near_pair_arrays
from .prefixes import PREFIX_CROWD, PrefixIndex, pairs_in_groups, prefixes
from .read import Document
from .settings import CROWD, HEAD_CROWD, MIN_JACCARD, Settings
from .sketch import SHINGLE, SKETCH, Sketcher, fingerprints_and_sketches
from .sketch import shingle_hashes as _shingle_runs

__all__ = ["MIN_JACCARD", "SHINGLE", "VerifyingDeduplicator", "deduplicator"]

#: Candidate pairs whose sketches numpy gathers and compares at once (a small index;
#: compiled loops read them in place): ~16 MiB of 256-byte sketches, where a wide
#: distance on crowded text gave millions of pairs a batch (benchmarks/wide.py).
PAIR_SLICE = 1 << 14
#: Preloaded rows whose prefix values are filed at a time (_add_prefixes).
PREFIX_SLICE = 1 << 16
#: A pair whose sketches hold shingles in fewer bins than this between them (documents
#: of a few words each) verifies only when its fingerprints are equal (too_few_bins).
FEWEST_BINS = 10


def too_few_bins(sketcher: Sketcher, a: np.ndarray, b: np.ndarray, ds: np.ndarray) -> np.ndarray:
    """Whether each pair (rows of the sketches a and b, the distance ds of their
    fingerprints) is too small to verify on its sketches: fewer than FEWEST_BINS bins
    hold a shingle of either, or each is an exact sketch of one shingle, and the
    fingerprints differ.

    Two different shingles in one bin whose 2-bit codes agree (1 in 3,072 for two given
    shingles) look like one shared shingle. Among many documents that is bound to happen
    to some pairs, and where the union is a few bins it moves the estimate by a large
    part of it: "line number 19" and "line number 19086" (one shingle each, none shared)
    read 1.0, and 16 of 20,000 such lines were dropped as duplicates, at --verify 1.0
    too. Below 10 bins, one such bin can lift a pair from under 0.8 to 1.0 (one shingle
    differing on each side). Documents that small are near-duplicates at 0.8 only when
    their shingles are all but the same, which makes their fingerprints equal (the same
    words), so equal fingerprints are asked of them instead. It applies to sketches of
    bins (those stored by a simdedup before exact ones: two exact sketches,
    sketch.OnePermutation, are compared exactly) and to two exact sketches of one
    shingle each: they hold its top 32 bits, and among a million texts of a word or
    three (numbers, codes) a hundred pairs share those by chance and read 1.0 (a trial:
    `seq 1 1000000` gave 127 "duplicates", `52640` of `26608`). One shingle alike is the
    same text, and the same fingerprint."""
    few = np.asarray(ds) != 0
    exact = sketcher.exact_rows(a) & sketcher.exact_rows(b)
    binned, single = few & ~exact, few & exact
    if binned.any():
        binned[binned] = sketcher.bins_in_either(a[binned], b[binned]) < FEWEST_BINS
    if single.any():
        single[single] = (sketcher.exact_values(a[single], 0)[0] == 1) & (
            sketcher.exact_values(b[single], 0)[0] == 1
        )
    return binned | single


def candidate_distance(
    d: int | None, head_d: int | None, short: bool, min_jaccard: float | None
) -> int | None:
    """The smallest distance k at which scan compares two documents, one pair at a time
    (compare, calibrate): their fingerprints' distance d; verified (min_jaccard given),
    also their heads' (head_d, None where either has none) and 0 for two short documents
    (`short`: both sketches exact), which are candidates by their shingles (prefixes.py)
    whatever their distance. None where either has no fingerprint: an empty document is
    near nothing. The pair is a near-duplicate at k when this is <= k and verifies()."""
    if d is None or min_jaccard is None:
        return d
    if short:
        return 0
    return d if head_d is None else min(d, head_d)


def verifies(jaccard: float, few: bool, min_jaccard: float | None) -> bool:
    """Whether a candidate pair is a near-duplicate on its shingles: without verification
    (min_jaccard None), always; else when its estimated Jaccard reaches min_jaccard and
    it is not too small to tell (`few`: too_few_bins)."""
    return min_jaccard is None or (jaccard >= min_jaccard and not few)


class VerifyingDeduplicator(Deduplicator):
    """Keep-first dedup where a candidate must also reach `min_jaccard` on shingles,
    estimated from sketches; of those that do, the most similar kept document wins
    (ties: the nearest fingerprint, then the earliest row). None verified: kept.

    Candidates come from three places: kept documents whose fingerprint is within the
    distance; for a short document (an exact sketch), the kept ones filed under a value
    of its prefix (prefixes.py), the first PREFIX_CROWD kept documents that hold it
    (not for unindexed rows: with crowds too, which once left these out, and missed
    short near copies where no crowd was met, a trial); and kept documents whose head fingerprint (of
    HEAD_TOKENS tokens from the one with the smallest hash, fingerprint.head_window) is
    within the distance of this document's head. Heads find copies that were truncated
    or gained or lost a header or a footer, whose whole fingerprints moved; a head
    candidate is a duplicate only if verified. A head gives the first HEAD_CROWD kept
    heads within the distance of it, by row, whatever is near it after them, which
    bounds the work any one head can cause; a head within the distance of more than
    HEAD_CROWD kept heads is boilerplate (a site's navigation) and is not kept with its
    document. (A crowded head gave no candidates once; a second run of the same
    documents met more kept heads than the first, and kept again the documents found
    by their heads: 16 pages of /usr/share/man, a trial.)

    Crowds: a document kept while `crowd` or more indexed kept documents are within the
    distance of it (all the candidates its search met, verified or not) is stored
    unindexed (BlockIndex.add_many): no search finds it, and a later document finds
    it only as an exact copy, of the same fingerprint and sketch (`_copies`). That bounds
    the candidates of text whose fingerprints coincide while its shingles do not
    verify (rows of small numbers, one template's log lines), which were every kept
    document, at the cost of the near copies of the documents left out. crowd=0: none
    is left out.

    Memory: `sketcher.nbytes` + 1 bytes per row (257 with the default sketch), in arrays
    that double when full; for each row with a head, a second BlockIndex
    row and 8 bytes (`head_index`, `head_rows`).
    Documents given as features have no sketch and no head, nor do rows preloaded with
    `extend` without sketches: a fingerprint match involving one is decided on the
    fingerprint alone.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        hashfunc: HashFunc | None = None,
        index: BlockIndex | None = None,
        min_jaccard: float = MIN_JACCARD,
        sketcher: Sketcher = SKETCH,
        crowd: int = CROWD,
    ) -> None:
        super().__init__(settings, hashfunc, index)
        if isinstance(crowd, bool) or not isinstance(crowd, numbers.Integral) or crowd < 0:
            raise ValueError(f"crowd (candidates that leave a row unindexed) is an int >= 0, not {crowd!r}")
        self.crowd = int(crowd)
        # The unindexed rows with a sketch, by _copy_key of their fingerprint and sketch:
        # key -> the row (the first), and the rest of a key's rows where keys collide.
        self._copies: dict[int, int] = {}
        self._more_copies: dict[int, list[int]] = {}
        # Documents searched, and the indexed kept rows within the distance they met in
        # all: a mean in the thousands is text that crowds (the CLI's warning).
        self.searched = 0
        self.met = 0
        if (
            isinstance(min_jaccard, bool)
            or not isinstance(min_jaccard, numbers.Real)
            or not 0.0 < min_jaccard <= 1.0
        ):
            raise ValueError(f"min_jaccard (dedup's verify) is a number in (0, 1], not {min_jaccard!r}")
        self.min_jaccard = min_jaccard
        self.sketcher = sketcher
        # Row r's sketch is _sketches[r] when _has[r]; rows past len(self.ids) are spare.
        # _sketches is a view of _rows when that is a memory map of its own (_reserve).
        self._sketches = np.zeros((0, sketcher.nbytes), np.uint8)
        self._rows: mmap.mmap | None = None
        self._has = np.zeros(0, bool)
        # The heads of the rows that have one: head_index row h is row _head_rows[h].
        self.head_index = BlockIndex(self.settings.bits, self.index.distance)
        self._head_rows = np.zeros(0, np.int64)
        # The prefix values of the kept rows with an exact sketch (prefixes.py).
        self.prefix_index = PrefixIndex()

    def __getstate__(self) -> dict[str, Any]:
        """A pickle (a Dask worker's state, copy.deepcopy) holds the sketches of the rows
        in use as a plain array: a memory map does not pickle. Unpickled, they grow
        from there (_reserve)."""
        state = super().__getstate__()
        rows = len(self.ids)
        state["_sketches"], state["_has"] = self._sketches[:rows].copy(), self._has[:rows].copy()
        state["_rows"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A pickle from before short rows were filed by their prefix values (stop 41)
        files them as it loads (its sketcher makes no exact sketches: none, then)."""
        super().__setstate__(state)
        if "prefix_index" not in state:
            self.prefix_index = PrefixIndex()
            rows = len(self.ids)
            indexed = ~self.index.unindexed_array()[:rows]
            self._add_prefixes(self._sketches[:rows], self._has[:rows] & indexed, np.arange(rows))

    def _reserve(self, rows: int) -> None:
        """Room for `rows` rows: the arrays double when full, so appending a row is
        amortized O(1). Spare rows are never written, so their pages are not resident.
        Growth by half again cost a 1M-document scan 1.1 s here, against 0.4 s, mostly
        the kernel's faults on each copy's new pages.

        The sketches (256 bytes a row) live in an anonymous memory map that grows in
        place where the system can (mremap on Linux): the rows already there are
        neither copied nor held twice. Copied, a 10M-document scan's 8.4M rows took its
        resident memory from 5.1 GB to 7.0 GB for 4 s. Where the map cannot grow (no
        mremap, or a view of the array still alive), they are copied as before."""
        if rows <= len(self._has):
            return
        capacity = max(rows, len(self._has) * 2, 1024)
        self._grow_sketches(capacity)
        has = np.zeros(capacity, bool)
        has[: len(self._has)] = self._has
        self._has = has

    def _grow_sketches(self, capacity: int) -> None:
        """_sketches with room for `capacity` rows, its new rows zeros (_reserve)."""
        count, width = self._sketches.shape
        if self._rows is not None:
            self._sketches = np.zeros((0, width), np.uint8)  # the map cannot move under a view
            try:
                self._rows.resize(capacity * width)
                self._sketches = np.frombuffer(self._rows, np.uint8).reshape(capacity, width)
                return
            except (BufferError, OSError, SystemError, TypeError, ValueError):  # it cannot grow in place
                self._sketches = np.frombuffer(self._rows, np.uint8, count * width).reshape(count, width)
        try:
            rows: mmap.mmap | None = mmap.mmap(-1, capacity * width, flags=mmap.MAP_PRIVATE)
            grown = np.frombuffer(rows, np.uint8).reshape(capacity, width)  # type: ignore[arg-type]
        except (AttributeError, OSError, ValueError):  # no anonymous private maps here
            rows, grown = None, np.zeros((capacity, width), np.uint8)
        grown[:count] = self._sketches
        self._sketches, self._rows = grown, rows

    def _add_heads(self, heads: np.ndarray, rows: np.ndarray) -> None:
        """Index the heads (fingerprint_array form) of these rows."""
        if not len(rows):
            return
        start = len(self.head_index)
        if start + len(rows) > len(self._head_rows):
            grown = np.zeros(max(start + len(rows), len(self._head_rows) * 3 // 2, 1024), np.int64)
            grown[:start] = self._head_rows[:start]
            self._head_rows = grown
        self._head_rows[start : start + len(rows)] = rows
        self.head_index.add_many(heads)

    def _add_prefixes(self, sketches: np.ndarray, has: np.ndarray, rows: np.ndarray) -> None:
        """File the prefix values of these kept rows (ascending) that have an exact sketch,
        PREFIX_SLICE rows at a time (an index of 183,000 short rows loaded with a peak of
        190 MB more, all at once)."""
        for lo in range(0, len(rows), PREFIX_SLICE):
            part = slice(lo, lo + PREFIX_SLICE)
            at, values = prefixes(self.sketcher, sketches[part], has[part], self.min_jaccard)
            self.prefix_index.add(rows[part][at], values)

    def _check(self) -> None:
        assert self._sketches.shape == (len(self._has), self.sketcher.nbytes)
        assert len(self._has) >= len(self.ids) == len(self.index)
        assert not self._sketches[~self._has].any(), "a row without a sketch holds one"
        head_rows = self._head_rows[: len(self.head_index)]
        assert np.all(head_rows[1:] > head_rows[:-1]), "head rows are in row order, once each"
        assert np.all(self._has[head_rows]), "a row with a head has a sketch"
        filed = sorted([*self._copies.values(), *(r for rows in self._more_copies.values() for r in rows)])
        unindexed = np.flatnonzero(self.index.unindexed_array() & self._has[: len(self.ids)])
        assert filed == unindexed.tolist(), "the unindexed rows with a sketch are filed as copies"

    @_one_thread
    def extend(
        self,
        fps: np.ndarray | Iterable[int],
        ids: Ids | Iterable[str],
        sketches: np.ndarray | None = None,
        has: np.ndarray | None = None,
        heads: np.ndarray | None = None,
        headed: np.ndarray | None = None,
        indexed: np.ndarray | None = None,
    ) -> None:
        """Preload rows (see Deduplicator.extend) with their sketches, (rows, nbytes)
        uint8, and which of them have one (`has`, bool; default: all when sketches are
        given); and their heads (fingerprint_array form) where `headed` (bool) says they
        have one (default: all rows with a sketch). A row without a sketch is matched on
        the fingerprint alone. `indexed`: as Deduplicator.extend takes it; an unindexed
        row is found as an exact copy (see the class). Checked whole before any row is
        added: refused halfway, the rows stayed without their sketches, and a retried
        task matched them on fingerprints alone (a review)."""
        fps = _as_fingerprint_array(fps, self.settings.bits)
        n = len(fps)
        indexed = _indexed_flags(indexed, n)
        if heads is None and headed is not None:
            raise ValueError("head flags (headed) without the heads")
        if heads is not None and sketches is None:  # they were dropped unsaid (a review)
            raise ValueError("heads without sketches: a row's head is used only with its sketch")
        if sketches is not None:
            if sketches.shape != (n, self.sketcher.nbytes):
                raise ValueError(f"{n} rows but sketches of shape {sketches.shape}")
            if sketches.dtype != np.uint8:
                raise ValueError(f"sketches are a uint8 array (sketch_array's), not {sketches.dtype}")
            self.sketcher.check(sketches)
            has = np.ones(n, bool) if has is None else np.asarray(has, bool)
            if has.shape != (n,):
                raise ValueError(f"{n} rows but {has.shape} sketch flags")
            if heads is not None:
                headed = np.ones(n, bool) if headed is None else np.asarray(headed, bool)
                if headed.shape != (n,) or len(heads) != n:
                    raise ValueError(f"{n} rows but {len(heads)} heads and {len(headed)} head flags")
                headed = headed & has  # not in place: the caller's array
                # refused here, not once the rows are in (a retry added them twice: a review)
                heads = fingerprint_array(
                    heads if isinstance(heads, np.ndarray) else list(heads), self.settings.bits
                )
        before = len(self.ids)
        super().extend(fps, ids, indexed)
        after = len(self.ids)
        self._reserve(after)
        if sketches is None:
            return
        self._sketches[before:after] = sketches
        self._sketches[before:after][~has] = 0
        self._has[before:after] = has
        # an unindexed row is found only as an exact copy (see the class)
        filed = has if indexed is None else has & indexed
        self._add_prefixes(self._sketches[before:after], filed, np.arange(before, after))
        if heads is not None and headed is not None:
            self._add_heads(heads[headed], before + np.flatnonzero(headed))
        if indexed is not None:
            self._add_copies(before + np.flatnonzero(~indexed & has))

    def _copy_key(self, words: np.ndarray, bins: np.ndarray) -> int:
        """What _copies files a fingerprint (one row of words) and a sketch (in its bins,
        Sketcher.as_bins) under: the same in every process (a pickled Deduplicator looks
        up what it filed). In bins, so that a row an earlier simdedup stored (a sketch
        of bins) and its copy sketched now (exact, if short) file alike (a review: old
        --crowd indexes lost every exact copy)."""
        return xxhash.xxh3_64_intdigest(words.tobytes() + bins.tobytes())

    def _add_copies(self, rows: np.ndarray) -> None:
        """File these rows (unindexed, with a sketch) in _copies."""
        words = self.index.rows_of(rows)
        for row, fp, bins in zip(rows.tolist(), words, self.sketcher.as_bins(self._sketches[rows])):
            key = self._copy_key(fp, bins)
            if self._copies.setdefault(key, row) != row:
                self._more_copies.setdefault(key, []).append(row)

    def _copies_of(self, words: np.ndarray, mine: np.ndarray, has_mine: np.ndarray) -> tuple[np.ndarray, ...]:
        """(q, rows, ds, sims) of the unindexed rows that are exact copies of the batch's
        documents with a sketch (words: their fingerprints' rows, fingerprint_array's
        _words form): the first row of each copy, at distance 0 and similarity 1.0, as
        a search would verify it. A copy verifies at similarity 1.0, as the walk takes an
        unindexed document of the batch: the same sketch where both are exact (two exact
        sketches alike in bins are different shingles: "v36 extra extra" was a copy of
        "v43 extra extra" at similarity 0, a review), the same bins where either is a
        sketch of bins. The latter finds the short rows an earlier simdedup stored in
        bins, and now and then a text a shingle or two longer than one of 61 (a review:
        1 in 30 of one-word extensions of a 61-shingle line, Jaccard 61/62)."""
        q: list[int] = []
        rows: list[int] = []
        if self._copies:
            bins = self.sketcher.as_bins(mine)
            for pos in np.flatnonzero(has_mine).tolist():
                key = self._copy_key(words[pos], bins[pos])
                row = self._copies.get(key)
                if row is None:
                    continue
                for r in (row, *self._more_copies.get(key, ())):
                    same = self.sketcher.similarity(self._sketches[r : r + 1], mine[pos : pos + 1])[0] == 1.0
                    if same and np.array_equal(self.index.rows_of(np.array([r]))[0], words[pos]):
                        q.append(pos)
                        rows.append(r)
                        break
        n = len(q)
        return np.array(q, np.int64), np.array(rows, np.int64), np.zeros(n, np.int64), np.ones(n)

    def sketch_array(self) -> tuple[np.ndarray, np.ndarray]:
        """(sketches, has): every row's sketch, (rows, nbytes) uint8, zeros where it has
        none, and a bool per row saying which have one. Views, valid until the next call
        that adds rows."""
        rows = len(self.ids)
        return self._sketches[:rows], self._has[:rows]

    def head_array(self) -> tuple[np.ndarray, np.ndarray]:
        """(heads, headed): every row's head fingerprint (fingerprint_array form, zero
        where it has none) and a bool per row saying which have one. Copies."""
        rows = self._head_rows[: len(self.head_index)]
        found = self.head_index.fingerprint_array()
        heads = np.zeros((len(self.ids), *found.shape[1:]), np.uint64)
        heads[rows] = found
        headed = np.zeros(len(self.ids), bool)
        headed[rows] = True
        return heads, headed

    def sketch_bytes(self) -> int:
        """Memory held for verification (sketches, heads and their index, short rows'
        prefix values), in bytes."""
        heads = self.head_index.stats().nbytes + self._head_rows.nbytes
        return self._sketches.nbytes + self._has.nbytes + heads + self.prefix_index.nbytes

    def process(self, docs: Sequence[Document]) -> list[Decision]:
        """Deduplicator.process, the fingerprints, the default sketches and the heads made
        in one pass over the texts (sketch.fingerprints_and_sketches)."""
        if self.sketcher != SKETCH:
            return super().process(docs)
        checked_documents(docs)
        work = [doc.text if doc.features is None else doc.features for doc in docs]
        made = fingerprints_and_sketches(work, self.settings, self.hashfunc, compiled=True)
        return self.decide_many(docs, *made)

    @_one_thread
    def decide_many(
        self,
        docs: Sequence[Document],
        fps: Sequence[int | None],
        sketches: np.ndarray | None = None,
        heads: Sequence[int | None] | None = None,
    ) -> list[Decision]:
        """Deduplicator.decide_many, with `sketches` and `heads` the documents'
        sketches, row by row, and head fingerprints (made from their texts when not
        given: workers that send back documents without their texts send both)."""
        return super().decide_many(docs, fps, sketches, heads)

    def _given(self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any) -> tuple[Any, ...]:
        sketches, heads = given
        for name, rows in (("sketches", sketches), ("heads", heads)):
            if rows is not None and len(rows) != len(docs):
                raise ValueError(f"{len(rows)} {name} for {len(docs)} documents: give one a document")
        if sketches is None or heads is None:
            _refuse_textless(docs, fps, "sketches" if sketches is None else "heads")
        if heads is None:  # made once here, for the twins' keys and for _Heads.in_index
            heads = _heads_of(docs, self.settings, self.hashfunc)
        return sketches, heads

    def _twin_keys(
        self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any
    ) -> list[Any] | None:
        """Twins here share their fingerprint, sketch and head: all that a decision reads
        of them, whatever came before. A document given as features has no sketch (its
        matches are unverified, and rank after verified ones): it has no twin."""
        repeated = _repeated(fps, fps)  # a twin shares its fingerprint: most batches stop here
        if repeated is None:
            return None
        keys = [None if fp is None else self._twin_key(docs, fps, given, i) for i, fp in enumerate(repeated)]
        return _repeated([fp if key is not None else None for fp, key in zip(fps, keys)], keys)

    def _twin_key(
        self, docs: Sequence[Document], fps: Sequence[int | None], given: tuple[Any, ...], i: int
    ) -> Any:
        sketches, heads = given
        if fps[i] is None or docs[i].features is not None:
            return None
        # the same text: the same sketch
        return (fps[i], heads[i], docs[i].text if sketches is None else sketches[i].tobytes())

    def _take(self, given: tuple[Any, ...], rows: list[int]) -> tuple[Any, ...]:
        sketches, heads = given
        return (None if sketches is None else sketches[rows]), (
            None if heads is None else [heads[i] for i in rows]
        )

    def _decide_batch(
        self,
        docs: Sequence[Document],
        fps: Sequence[int | None],
        *given: Any,
        searched: tuple[Any, ...] | None = None,
    ) -> list[Decision]:
        """decide_many's decisions: candidates come from one search of each index and
        one of the batch against itself, and are verified together. A document with no
        candidate at all is kept, whatever the rest of the batch decides; only the few
        with one are walked in order, in Python. `searched`: the index's search of these
        documents, made when it held `since` rows (_search_kept)."""
        sketches, heads = given
        decisions: list[Decision] = [None] * len(docs)  # type: ignore[list-item]
        present = [i for i, fp in enumerate(fps) if fp is not None]
        if len(present) < len(docs):
            for i, fp in enumerate(fps):
                if fp is None:
                    decisions[i] = Decision(docs[i], None, "empty")
        if not present:
            return decisions
        bits, k = self.settings.bits, self.index.distance
        fparray = fingerprint_array([fps[i] for i in present], bits)
        # A crowded batch has too many pairs within it to walk (a flood of near copies, a
        # template's lines, a site's pages with one head): those that can decide are
        # found once its search is made, below. One whose first rows crowd already is
        # not paired whole (a flood's 4,096 lines made 8.4M pairs).
        pairs_crowd = whole = False
        if not self.crowd:
            first, second, pair_ds = near_pair_arrays(
                fparray[:CROWD_SAMPLE], bits, k, compiled=self.index.compiled
            )
            pairs_crowd = crowded_batch(len(first), min(len(present), CROWD_SAMPLE))
            if not pairs_crowd and len(present) > CROWD_SAMPLE:
                first, second, pair_ds = near_pair_arrays(fparray, bits, k, compiled=self.index.compiled)
            whole = not pairs_crowd  # (first, second, pair_ds) are the whole batch's
            pairs_crowd = (
                pairs_crowd or crowded_batch(len(first), len(present)) or _heads_crowd(heads, present)
            )
        mine, has_mine = self._batch_sketches(docs, present, sketches)
        # Once the indexes are large, the head index is searched in one thread and half
        # of the other index's tables in another, beside this one's half: most of those
        # searches is then compiled loops that release the GIL, so the threads share the
        # cores. Nothing changes either index until all are done, and the threads end
        # with the batch (a process that forks workers later has none). A batch of a few
        # documents (a trickle on stdin, a line a batch) is searched here alone: starting
        # and joining the threads cost more than they share.
        in_index = partial(_Heads.in_index, self, docs, present, heads, fparray, mine, has_mine)

        def heads_of(found: _Heads | None = None, resolved: np.ndarray | None = None) -> _Heads:
            found = in_index() if found is None else found
            return found.and_batch(self, fparray, mine, has_mine, resolved)

        beside_pays = self.index.compiled and len(present) >= BESIDE_FROM
        with _beside() if beside_pays else contextlib.nullcontext() as beside:
            # (with crowds, once the batch is known not to be decided in pieces: a crowded
            # batch's heads are as crowded, and took hundreds of MB to pair)
            later = (
                beside.submit(heads_of) if beside is not None and not (self.crowd or pairs_crowd) else None
            )
            # Candidates that verify: kept rows (q, rows), and earlier documents of this
            # batch (second is a candidate duplicate of first).
            search = self._search_kept(fparray, mine, has_mine, beside, searched, sliced=pairs_crowd)
            q, rows, ds, sims, seen = search
            # Exact copies among the unindexed rows, as the search verifies the indexed ones.
            copies = self._copies_of(fparray.reshape(len(fparray), -1), mine, has_mine)
            q, rows, ds, sims = (np.concatenate(x) for x in zip((q, rows, ds, sims), copies))
            if pairs_crowd:
                # A document that verifies with a kept row is a duplicate, whatever the
                # batch decides, so no later one can be its duplicate (nor its head count
                # in a crowd of kept ones): only the pairs whose first is not one can
                # decide. Of a flood of near copies, once one of them is kept, that
                # leaves few; a batch still crowded is decided in halves, one after the
                # other, each with its part of this search.
                resolved = np.zeros(len(present), bool)
                resolved[q] = True
                # and those that a head from the index settles: in the whole batch only (in
                # its halves too, the head index was searched again at each halving, where
                # heads crowd and settle none: 24,000 CSV rows 11.1-12.0 s -> 12.3-12.6 s),
                # and where that search is compiled (numpy's holds every candidate: 20,000
                # pages of one head at 128 bits, 2.2 s -> 3.7 s, a review)
                alone = in_index() if searched is None and self.head_index.compiled else None
                if alone is not None:
                    resolved |= alone.settled(resolved)
                ahead = ~resolved[:CROWD_SAMPLE]  # (its first rows again, as above)
                sample = near_pairs_after(fparray[:CROWD_SAMPLE], ahead, bits, k, self.index.compiled)[0]
                still = not resolved.any() or crowded_batch(len(sample), len(ahead))
                if not still:
                    if whole:  # found above: those left
                        can = ~resolved[first]
                        first, second, pair_ds = first[can], second[can], pair_ds[can]
                    else:
                        first, second, pair_ds = near_pairs_after(
                            fparray, ~resolved, bits, k, self.index.compiled
                        )
                    still = crowded_batch(len(first), len(present)) or _heads_crowd(heads, present, resolved)
                if still:
                    halves = [0, len(present) // 2]
                    return self._decide_in_pieces(docs, fps, given, present, halves, search)
                heads_of = partial(heads_of, resolved=resolved, found=alone)
                later = beside.submit(heads_of) if beside is not None else None
            if self.crowd:  # the pairs in the batch, once its crowded documents are known
                first, second, pair_ds = self._batch_pairs(fparray, mine, has_mine, seen >= self.crowd)
                if crowded_batch(len(first), len(present)):  # in pieces that are not
                    pieces = _quiet_cuts(first.astype(np.int32), second.astype(np.int32), 0, len(present))
                    del first, second, pair_ds  # millions, where a batch crowds
                    return self._decide_in_pieces(docs, fps, given, present, pieces, search)
                later = beside.submit(heads_of) if beside is not None else None
            near_first, near_second = first, second  # before verification: they make crowds
            pair_sims = self._similarities(mine, has_mine, second, mine, has_mine, first, pair_ds)
            ok = ~(pair_sims < self.min_jaccard)
            first, second, pair_ds, pair_sims = first[ok], second[ok], pair_ds[ok], pair_sims[ok]
            head = later.result() if later is not None else heads_of()
        prefix = _Prefixes.of(self, fparray, mine, has_mine)
        base = len(self.index)
        walked = np.zeros(len(present), bool)
        walked[q] = True
        walked[second] = True
        walked[head.walked] = True
        walked[prefix.walked] = True
        kept = (~walked).tolist()
        calm = [True] * len(present)  # whether a document's head is below the crowd
        # Whether a kept document is indexed: below the crowd (see the class). Those that
        # may not be are walked too: the indexed rows their search met and the earlier
        # documents near them in the batch (if all were kept and indexed) reach it.
        indexed = [True] * len(present)
        earlier_near: dict[int, list[int]] = {}
        crowded = np.zeros(len(present), bool)
        if self.crowd:
            crowded = seen + np.bincount(near_second, minlength=len(present)) >= self.crowd
            near = crowded[near_second]
            for i, j in zip(near_first[near].tolist(), near_second[near].tolist()):
                earlier_near.setdefault(j, []).append(i)
        walk = np.flatnonzero(walked | crowded)
        # The chosen candidate of each duplicate: a kept row, or base + its batch position
        # (in the same order as the row it gets: batch rows follow the kept ones, in order).
        target: dict[int, tuple[int, int]] = {}
        if len(walk):
            # pos -> (row, d, sim, by head): a kept row, or -1 - an earlier batch position
            candidates: dict[int, list[tuple[int, int, float, bool]]] = {}
            for pos, row, d, sim in zip(*(x.tolist() for x in _best_of_each(q, rows, ds, sims))):
                candidates.setdefault(pos, []).append((row, d, sim, False))
            for i, j, d, sim in zip(first.tolist(), second.tolist(), pair_ds.tolist(), pair_sims.tolist()):
                candidates.setdefault(j, []).append((-1 - i, d, sim, False))
            for pos, row, d, sim in head.candidates():
                candidates.setdefault(pos, []).append((row, d, sim, True))
            for pos in walk.tolist():
                if walked[pos]:
                    calm[pos] = head.calm(pos, kept, calm)
                best: tuple[int, float, int, int] | None = None
                firsts: set[int] | None = None  # of the batch's kept heads, those pos takes
                for row, d, sim, by_head in (*candidates.get(pos, ()), *prefix.candidates(pos)):
                    if row < 0:  # an earlier document of this batch: only if it was kept
                        i = -1 - row
                        if by_head:  # and its head is among the first pos takes
                            firsts = head.firsts(pos, kept, calm) if firsts is None else firsts
                            if i not in firsts:
                                continue
                        if not kept[i]:
                            continue
                        if not (by_head or indexed[i] or (d == 0 and sim == 1.0)):
                            continue  # unindexed, and no exact copy
                        row = base + i
                    # unverifiable: after every verified candidate
                    key = (1, 0.0, d, row) if math.isnan(sim) else (0, -sim, d, row)
                    if best is None or key < best:
                        best = key
                if best is None:
                    kept[pos] = True
                    if crowded[pos]:
                        met = int(seen[pos]) + sum(kept[i] and indexed[i] for i in earlier_near.get(pos, ()))
                        indexed[pos] = met < self.crowd
                else:
                    target[pos] = (best[3], best[2])
                prefix.decided(pos, kept[pos] and indexed[pos])  # an unindexed row is filed nowhere
        is_kept = np.array(kept, bool)
        new = np.flatnonzero(is_kept)
        new_rows = np.full(len(present), -1, np.int64)
        new_rows[new] = np.arange(base, base + len(new))
        self._reserve(base + len(new))
        self._sketches[base : base + len(new)] = mine[new]
        self._has[base : base + len(new)] = has_mine[new]
        self.ids.extend(docs[present[pos]].id for pos in new.tolist())
        for pos, (i, row) in enumerate(zip(present, new_rows.tolist())):
            if row >= 0:
                decisions[i] = Decision(docs[i], fps[i], "unique", row)
                continue
            row, d = target[pos]
            if row >= base:  # a document of this batch, by position
                row = int(new_rows[row - base])
            decisions[i] = Decision(docs[i], fps[i], "duplicate", row, self.ids[row], d)
        is_indexed = np.array(indexed, bool)[is_kept]
        self.index.add_many(fparray[is_kept], None if is_indexed.all() else is_indexed)
        self._add_copies(new_rows[is_kept][~is_indexed & has_mine[is_kept]])
        heads_kept = is_kept[head.pos] & np.array(calm, bool)[head.pos]
        self._add_heads(head.fps[heads_kept], new_rows[head.pos[heads_kept]])
        kept_ones = is_kept[prefix.pos] & np.array(indexed, bool)[prefix.pos]
        self.prefix_index.add(
            new_rows[prefix.pos[kept_ones]], prefix.values[kept_ones], prefix.filed[kept_ones]
        )
        return decisions

    def _search_kept(
        self,
        fparray: np.ndarray,
        mine: np.ndarray,
        has_mine: np.ndarray,
        beside: ThreadPoolExecutor | None,
        searched: tuple[Any, ...] | None = None,
        sliced: bool = False,
    ) -> tuple[Any, ...]:
        """(q, rows, ds, sims, seen): _verified_kept's, half of it in `beside`, and how
        many indexed kept rows each query met, verified or not (also added to `met`);
        without crowds, only their total is counted (a bincount of millions of pairs a
        batch cost 5-10% where documents crowd), and `seen` is None, but where `sliced`.
        `searched`: the same made when the index held `since` rows, (since, q, rows, ds,
        sims, seen): only the indexed rows added since are searched."""
        if searched is not None:
            since, *found, seen = searched
            seen = None if seen is None else seen.copy()
            added = since + np.flatnonzero(~self.index.unindexed_array(since))
            if len(added):
                among = BlockIndex(self.settings.bits, self.index.distance)
                among.add_many(fingerprint_array(self.index.rows_of(added), self.settings.bits))
                for lo, hi in _query_slices(among, fparray):  # as below
                    q, at, ds = among.search(fparray[lo:hi], ordered=False)
                    part = None if seen is None else seen[lo:hi]
                    more = self._verified(mine[lo:hi], has_mine[lo:hi], part, (q, added[at], ds))
                    found = [np.concatenate(x) for x in zip(found, (more[0] + lo, *more[1:]))]
                    self.met += len(q)
            return (*found, seen)
        if not (self.crowd or sliced):
            total = np.zeros(1, np.int64)
            found = self._search_beside(fparray, mine, has_mine, beside, total)
            self.met += int(total[0])
            self.searched += len(fparray)
            return (*found, None)
        # A crowded batch is searched whole, before it is cut in pieces: in slices of at
        # most MATCH_CANDIDATES candidates (BlockIndex.candidates), as match_many, so
        # that its pairs are held a slice at a time (at 128 bits numpy holds every
        # candidate before it compares them: 4.7 GB for 10,000 CSV rows; whole, 25,000
        # CSV rows took 1.57 GB, 4,096 of them against each kept one).
        seen = np.zeros(len(fparray), np.int64)
        parts = []
        for lo, hi in _query_slices(self.index, fparray):
            q, *rest = self._search_beside(fparray[lo:hi], mine[lo:hi], has_mine[lo:hi], beside, seen[lo:hi])
            parts.append((q + lo, *rest))
        found = tuple(np.concatenate(x) for x in zip(*parts))
        self.met += int(seen.sum())
        self.searched += len(fparray)
        return (*found, seen)

    def _search_beside(
        self,
        fparray: np.ndarray,
        mine: np.ndarray,
        has_mine: np.ndarray,
        beside: ThreadPoolExecutor | None,
        seen: np.ndarray,
    ) -> tuple[np.ndarray, ...]:
        """_verified_kept's (q, rows, ds, sims), half of the tables in `beside`, counting
        into `seen` (in place: a query each, or one for their total)."""
        if beside is None:
            return self._verified_kept(fparray, mine, has_mine, seen=seen)  # type: ignore[no-any-return]
        seen_half = np.zeros_like(seen)
        half = beside.submit(self._verified_kept, fparray, mine, has_mine, 1, 2, seen_half)
        parts = zip(self._verified_kept(fparray, mine, has_mine, 0, 2, seen), half.result())
        found = tuple(np.concatenate(x) for x in parts)
        seen += seen_half
        return found

    def _decide_in_pieces(
        self,
        docs: Sequence[Document],
        fps: Sequence[int | None],
        given: tuple[Any, ...],
        present: list[int],
        pieces: list[int],
        search: tuple[Any, ...],
    ) -> list[Decision]:
        """_decide_batch of a crowded batch, in pieces that start at these positions among
        the present documents, each with its part of the batch's search (_search_kept)."""
        q, rows, ds, sims, seen = search
        since = len(self.index)
        decisions: list[Decision] = []
        starts = [0, *(present[pos] for pos in pieces[1:])]
        for lo, hi, start, end in zip(pieces, [*pieces[1:], len(present)], starts, [*starts[1:], len(docs)]):
            mine = np.flatnonzero((q >= lo) & (q < hi))
            part = (
                since,
                q[mine] - lo,
                rows[mine],
                ds[mine],
                sims[mine],
                None if seen is None else seen[lo:hi],
            )
            at = list(range(start, end))
            decisions += self._decide_batch(
                [docs[i] for i in at], [fps[i] for i in at], *self._take(given, at), searched=part
            )
        return decisions

    def _batch_pairs(
        self, fparray: np.ndarray, mine: np.ndarray, has_mine: np.ndarray, crowded: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """(first, second, d) of the batch (first < second, sorted by first, then
        second) that can make `second` a duplicate of `first`, where the documents
        `crowded` marks already meet the crowd in the index, so that kept they are
        unindexed: the pairs within the distance whose first is not one of them, and
        those whose first is, with `second` an exact copy of it (the same fingerprint
        and sketch). Of a batch in a crowd (near_pair_arrays'), those are the few: more
        copies than a pair a document are decided apart, as twins (decide_many). Each
        copy is paired with every earlier one: the earliest may be a duplicate by its
        head alone, and a later one kept, once the head crowded (a review)."""
        bits, k = self.settings.bits, self.index.distance
        parts = [near_pairs_after(fparray, ~crowded, bits, k, self.index.compiled)]
        if not crowded.any():
            return parts[0]
        words = fparray.reshape(len(fparray), -1)
        earlier: dict[bytes, list[int]] = {}
        copies: list[tuple[int, int]] = []
        for pos in np.flatnonzero(has_mine & crowded).tolist():  # copies share fingerprints: and crowds
            same = earlier.setdefault(words[pos].tobytes() + mine[pos].tobytes(), [])
            copies += [(was, pos) for was in same]
            same.append(pos)
        if copies:
            pairs = np.array(copies, np.int64)
            parts.append((pairs[:, 0], pairs[:, 1], np.zeros(len(pairs), np.int64)))
        first, second, ds = (np.concatenate(x) for x in zip(*parts))
        order = np.lexsort((second, first))
        return first[order], second[order], ds[order]

    @_one_thread
    def match_many(
        self,
        docs: Sequence[Document],
        fps: Sequence[int | None],
        sketches: np.ndarray | None = None,
        heads: Sequence[int | None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """For each document, the kept row it would duplicate and the distance, or -1 and
        -1; nothing is kept. The row is chosen as decide_many chooses among kept rows:
        verified ones first, the most similar, then the nearest, then the earliest.
        `sketches` and `heads` as decide_many takes them."""
        return self._match_in_pieces(docs, fps, sketches, heads)

    def _candidates(self, fps: Sequence[int | None], *given: Any) -> np.ndarray:
        """Those of the index's search and of the head index's."""
        _, heads = given
        bits = self.settings.bits
        return candidates_of(self.index, fps, bits) + candidates_of(self.head_index, heads, bits)

    def _match_many(
        self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        sketches, heads = given  # as _given made them
        rows = np.full(len(fps), -1, dtype=np.int64)
        dists = np.full(len(fps), -1, dtype=np.int64)
        present = [i for i, fp in enumerate(fps) if fp is not None]
        if not present:
            return rows, dists
        mine, has_mine = self._batch_sketches(docs, present, sketches)
        fparray = fingerprint_array([fps[i] for i in present], self.settings.bits)
        q, found, ds, sims = self._verified_kept(fparray, mine, has_mine)
        copies = self._copies_of(fparray.reshape(len(fparray), -1), mine, has_mine)
        # Kept rows by head: each head's first HEAD_CROWD, all verified (_Heads.in_index).
        head = _Heads.in_index(self, docs, present, heads, fparray, mine, has_mine)
        by_head = (head.q, head.rows, head.ds, head.sims)
        by_prefix = _Prefixes.of(self, fparray, mine, has_mine, batch=False).pairs()
        q, found, ds, _ = _best_of_each(
            *(np.concatenate(x) for x in zip((q, found, ds, sims), copies, by_head, by_prefix))
        )
        at = np.asarray(present)[q]
        rows[at], dists[at] = found, ds
        return rows, dists

    def _verified_kept(
        self,
        fparray: np.ndarray,
        mine: np.ndarray,
        has_mine: np.ndarray,
        part: int = 0,
        parts: int = 1,
        seen: np.ndarray | None = None,
    ) -> tuple[np.ndarray, ...]:
        """(q, rows, ds, sims): the kept rows within the distance of each query that
        verify, with their distances and similarities (NaN: a side has no sketch, decided
        on the fingerprint); of one part of the index's tables (BlockIndex.search).
        `seen` (int64, a query each) counts the rows each query met, verified or not (one: their total)."""
        keep = partial(self._verified, mine, has_mine, seen)
        return self.index.search(fparray, ordered=False, part=part, parts=parts, keep=keep)

    def _verified(
        self, mine: np.ndarray, has_mine: np.ndarray, seen: np.ndarray | None, pairs: tuple[np.ndarray, ...]
    ) -> tuple[np.ndarray, ...]:
        """Of one run's pairs (q, rows, ds) found for the batch, (q, rows, ds, sims) of
        those that verify (_verified_kept)."""
        q, rows, ds = pairs
        if seen is not None and len(q):
            if len(seen) == 1:  # their total alone (_search_kept)
                seen += len(q)
            else:
                seen += np.bincount(q, minlength=len(seen))
        if self.index.compiled:  # verified and filtered in one compiled loop
            q, rows, ds, sims = self.sketcher.verified_pairs(  # type: ignore[attr-defined]
                mine, has_mine, self._sketches, self._has, pairs, self.min_jaccard
            )
            self._too_few_bins(mine, q, self._sketches, rows, ds, sims)
        else:
            sims = self._similarities(mine, has_mine, q, self._sketches, self._has, rows, ds)
        ok = ~(sims < self.min_jaccard)
        return q[ok], rows[ok], ds[ok], sims[ok]

    def _batch_sketches(
        self, docs: Sequence[Document], present: list[int], sketches: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sketches, has) of the present documents; a document given as features has none."""
        has = np.array([docs[i].features is None for i in present], bool)
        if sketches is not None:
            if sketches.shape != (len(docs), self.sketcher.nbytes):
                raise ValueError(f"{len(docs)} documents but sketches of shape {sketches.shape}")
            if sketches.dtype != np.uint8:  # floats from a DataFrame were compared as they were
                raise ValueError(
                    f"sketches are a uint8 array (fingerprints_and_sketches makes them), not {sketches.dtype}"
                )
            mine = sketches[present]
            self.sketcher.check(mine)
        else:
            mine = np.zeros((len(present), self.sketcher.nbytes), np.uint8)
            texts = [docs[i].text for i, h in zip(present, has.tolist()) if h]
            if texts:
                mine[has] = self.sketcher.sketch(*_shingle_runs(texts, self.settings.fold))
        mine[~has] = 0
        return mine, has

    def _similarities(
        self,
        a: np.ndarray,
        a_has: np.ndarray,
        a_rows: np.ndarray,
        b: np.ndarray,
        b_has: np.ndarray,
        b_rows: np.ndarray,
        ds: np.ndarray,
    ) -> np.ndarray:
        """Estimated Jaccard of a[a_rows[t]] and b[b_rows[t]] for every t, in one call
        (`a`: the batch's sketches; ds[t]: the distance of the pair's fingerprints); NaN
        where either has no sketch, -1.0 where it is below min_jaccard or the pair is too
        small to verify on it (too_few_bins): every caller keeps only the pairs that
        reach it, and a large index's compiled loop stops reading a pair's sketches once
        they prove it."""
        out = np.full(len(a_rows), np.nan)
        both = np.flatnonzero(a_has[a_rows] & b_has[b_rows])
        if not len(both):
            return out
        if self.index.compiled:  # the compiled loops built, 64-bit fingerprints
            out[both] = self.sketcher.pair_similarity(a, a_rows[both], b, b_rows[both], self.min_jaccard)
        else:  # sketches gathered a slice of pairs at a time, to bound their memory
            for lo in range(0, len(both), PAIR_SLICE):
                at = both[lo : lo + PAIR_SLICE]
                sims = self.sketcher.similarity(a[a_rows[at]], b[b_rows[at]])
                out[at] = np.where(sims < self.min_jaccard, -1.0, sims)
        self._too_few_bins(a, a_rows, b, b_rows, ds, out)
        return out

    def _too_few_bins(
        self,
        a: np.ndarray,
        a_rows: np.ndarray,
        b: np.ndarray,
        b_rows: np.ndarray,
        ds: np.ndarray,
        sims: np.ndarray,
    ) -> None:
        """Sets to -1.0 the similarities that reach min_jaccard of pairs too small to
        verify on it (too_few_bins). Those that reach it have their sketches gathered, a
        slice at a time: usually about as many as the duplicates, but a flood of near
        copies verify with each other (100,000 lines a word off one line: 393 MB whole,
        where their decisions took 186 MB)."""
        reach = np.flatnonzero(sims >= self.min_jaccard)
        # A pair whose batch side alone holds FEWEST_BINS bins never is too few (nor is
        # one exact sketch of one shingle): most pairs, each one's sketches were gathered
        # for nothing (where copies of copies were kept, 3.8M pairs for 100,000 lines).
        used = np.zeros(len(a), bool)
        used[a_rows[reach]] = True
        rows = np.flatnonzero(used)
        alone = np.zeros(len(a), bool)
        alone[rows] = self.sketcher.bins_in_either(a[rows], a[rows]) >= FEWEST_BINS
        reach = reach[~alone[a_rows[reach]]]
        for lo in range(0, len(reach), PAIR_SLICE):
            at = reach[lo : lo + PAIR_SLICE]
            small = too_few_bins(self.sketcher, a[a_rows[at]], b[b_rows[at]], ds[at])
            sims[at[small]] = -1.0


@dataclass
class _Heads:
    """A batch's head fingerprints and what they find, for decide_many's walk.

    `pos`: the batch positions (among the present documents) that have a head, `fps`
    their heads. Candidates that verified, by head: (q, rows, ds, sims) with rows >= 0
    a kept row and rows < 0 an earlier batch position i as -1 - i; ds is the distance
    of the whole fingerprints. A head's candidates are the first HEAD_CROWD kept heads
    within the distance, by row: those in the index, then the earlier documents of the
    batch kept with their heads (firsts). A head is calm (kept with its document) while
    at most HEAD_CROWD kept heads are within the distance: `crowd_in_index` counts those
    in the index, `earlier` lists each position's earlier batch neighbours, which count
    if they were kept and calm themselves."""

    pos: np.ndarray
    fps: np.ndarray
    q: np.ndarray
    rows: np.ndarray
    ds: np.ndarray
    sims: np.ndarray
    crowd_in_index: np.ndarray
    earlier: dict[int, np.ndarray]

    @classmethod
    def in_index(
        cls,
        dd: VerifyingDeduplicator,
        docs: Sequence[Document],
        present: list[int],
        heads: Sequence[int | None] | None,
        fparray: np.ndarray,
        mine: np.ndarray,
        has_mine: np.ndarray,
    ) -> _Heads:
        """The _Heads of the index alone: no batch pairs, `earlier` empty (and_batch adds
        them)."""
        bits = dd.settings.bits
        if heads is None:
            heads = _heads_of(docs, dd.settings, dd.hashfunc)
        pos = np.array([p for p, i in enumerate(present) if heads[i] is not None and has_mine[p]], np.int64)
        fps = fingerprint_array([heads[present[p]] for p in pos.tolist()], bits)
        # A head's pairs past the crowd are counted, not kept (a crowded batch of `index
        # query` held them all: 4,096 CSV rows' heads against 50,000 took 3 GB, a review).
        # Without the compiled loops (128 bits) a search holds every candidate of its
        # queries before it compares them: the queries go a slice of MATCH_CANDIDATES
        # candidates at a time (a crowded batch of 4,096 short lines took 1.1 GB whole).
        crowd = np.zeros(len(pos), np.int64)
        slices = [(0, len(pos))] if dd.head_index.compiled else _query_slices(dd.head_index, fps)
        found = [_NONE_FOUND]
        for lo, hi in slices:
            part = crowd[lo:hi]

            # A query's pairs come run by run, in order of rows (BlockIndex.search): those
            # of a run are its first rows while the earlier runs gave fewer than HEAD_CROWD.
            def first_ones(pairs: tuple[np.ndarray, ...], part: np.ndarray = part) -> tuple[np.ndarray, ...]:
                q, rows, d = pairs
                room = np.maximum(HEAD_CROWD - part, 0)
                part += np.bincount(q, minlength=len(part))
                return _first_rows(q, dd._head_rows[rows], room)

            q, rows, _ = dd.head_index.search(fps[lo:hi], ordered=False, keep=first_ones)
            found.append((q + lo, rows))
        hq, rows = (np.concatenate(x) for x in zip(*found))
        crowd_in_index = np.zeros(len(present), np.int64)
        crowd_in_index[pos] = crowd
        q = pos[hq]
        ds = dd.index.distances_to(rows, fparray[q])
        sims = dd._similarities(mine, has_mine, q, dd._sketches, dd._has, rows, ds)
        ok = sims >= dd.min_jaccard  # NaN (a side without a sketch) never verifies a head
        return cls(pos, fps, q[ok], rows[ok], ds[ok], sims[ok], crowd_in_index, {})

    def and_batch(
        self,
        dd: VerifyingDeduplicator,
        fparray: np.ndarray,
        mine: np.ndarray,
        has_mine: np.ndarray,
        resolved: np.ndarray | None = None,
    ) -> _Heads:
        """These _Heads of the index alone, with the batch's head pairs too. `resolved`
        (a bool a present position): documents known to be duplicates already, which
        no later head pairs with."""
        pos, crowd_in_index = self.pos, self.crowd_in_index
        if len(pos) < 2:
            return self
        # the pairs whose earlier head may be calm and kept: another never counts, nor finds
        may = crowd_in_index[pos] <= HEAD_CROWD
        if resolved is not None:
            may &= ~resolved[pos]
        first, second, _ = near_pairs_after(
            self.fps, may, dd.settings.bits, dd.index.distance, dd.index.compiled
        )
        first, second = pos[first], pos[second]
        order = np.argsort(second, kind="stable")
        first, second = first[order], second[order]
        cuts = np.flatnonzero(np.r_[True, second[1:] != second[:-1]]) if len(second) else _NONE
        earlier = dict(zip(second[cuts].tolist(), np.split(first, cuts[1:])))
        live = crowd_in_index[second] < HEAD_CROWD  # room for a kept head of the batch
        bq, bfirst = second[live], first[live]
        bds = distances(fparray[bq], fparray[bfirst], dd.settings.bits)
        bsims = dd._similarities(mine, has_mine, bq, mine, has_mine, bfirst, bds)
        ok = bsims >= dd.min_jaccard
        return _Heads(
            pos,
            self.fps,
            np.concatenate([self.q, bq[ok]]),
            np.concatenate([self.rows, -1 - bfirst[ok]]),
            np.concatenate([self.ds, bds[ok]]),
            np.concatenate([self.sims, bsims[ok]]),
            crowd_in_index,
            earlier,
        )

    def settled(self, resolved: np.ndarray) -> np.ndarray:
        """Of these _Heads of the index alone, the present positions not `resolved` yet
        that a verified head candidate from the index decides whatever the batch does:
        all that have one, as the walk takes every such candidate (the index's kept
        heads come before the batch's). A 300-word flood's lines meet their kept line by
        head only (8 random words each move the whole fingerprints past k), and its
        batches went down in halves."""
        settle = np.zeros(len(resolved), bool)
        settle[self.q] = True  # (rows in the index: no batch pairs here)
        return settle & ~resolved

    @property
    def walked(self) -> np.ndarray:
        """The positions whose decision or calm depends on what came before them."""
        in_index = self.pos[self.crowd_in_index[self.pos] > 0]
        return np.concatenate([in_index, np.array(list(self.earlier), np.int64)])

    def candidates(self) -> Iterable[tuple[int, int, int, float]]:
        """(pos, row, d, sim): of the kept rows, only the best for each position (they
        all count or none, as its head is calm or not); every earlier batch position."""
        kept = self.rows >= 0
        best = _best_of_each(self.q[kept], self.rows[kept], self.ds[kept], self.sims[kept])
        batch = (self.q[~kept], self.rows[~kept], self.ds[~kept], self.sims[~kept])
        return chain(*(zip(*(x.tolist() for x in part)) for part in (best, batch)))

    def calm(self, pos: int, kept: list[bool], calm: list[bool]) -> bool:
        """Whether the head at batch position `pos` has at most HEAD_CROWD kept heads
        within the distance, given which earlier positions were kept and calm."""
        crowd = int(self.crowd_in_index[pos])
        if crowd > HEAD_CROWD:
            return False
        for i in self.earlier.get(pos, _NONE).tolist():
            if kept[i] and calm[i]:
                crowd += 1
                if crowd > HEAD_CROWD:
                    return False
        return True

    def firsts(self, pos: int, kept: list[bool], calm: list[bool]) -> set[int]:
        """The earlier batch positions whose heads are among the first HEAD_CROWD kept
        heads within the distance of the head at `pos` (after those in the index),
        given which earlier positions were kept and calm."""
        room = HEAD_CROWD - int(self.crowd_in_index[pos])
        out: set[int] = set()
        for i in self.earlier.get(pos, _NONE).tolist() if room > 0 else ():
            if kept[i] and calm[i]:
                out.add(i)
                if len(out) == room:
                    break
        return out


def _first_rows(q: np.ndarray, rows: np.ndarray, most: np.ndarray) -> tuple[np.ndarray, ...]:
    """(q, rows, rows) of the pairs (q, rows) (int64, >= 0) that are among the most[q]
    smallest rows of their q (a BlockIndex.search keep's three columns): the pairs of a
    q with no more as they are, then the others in order of q, then row. Sorted as one
    int64 key, and only where a q has more (a lexsort of all was 3% of `scan`'s time on
    English pages, whose heads crowd)."""
    over = np.bincount(q, minlength=len(most))[q] > most[q] if len(q) else np.zeros(0, bool)
    if not over.any():
        return q, rows, rows
    oq, orows = q[over], rows[over]
    if int(orows.max()) < 2**32 and int(oq.max()) < 2**31:
        key = np.sort(oq << 32 | orows)
        oq, orows = key >> 32, key & 0xFFFFFFFF
    else:
        order = np.lexsort((orows, oq))
        oq, orows = oq[order], orows[order]
    starts = np.flatnonzero(np.r_[True, oq[1:] != oq[:-1]])
    first = np.arange(len(oq)) - np.repeat(starts, np.diff(np.r_[starts, len(oq)])) < most[oq]
    under = ~over
    rows = np.concatenate([rows[under], orows[first]])
    return np.concatenate([q[under], oq[first]]), rows, rows


_NONE = np.zeros(0, np.int64)
_NONE_FOUND = (_NONE, _NONE)


@dataclass
class _Prefixes:
    """A batch's prefix values (prefixes.py) and what they find, for decide_many's walk.

    A value gives the first PREFIX_CROWD kept documents that hold it, those filed under
    it, whatever holds it after them: one template's lines share their values, so no
    more (and the same ones to a second run of the same documents, which found none once
    the value held PREFIX_CROWD: a trial's real lines sent again were kept again).

    `pos`, `values`, `filed`: the prefix values of the batch positions with an exact
    sketch, a position's after another's, and the rows filed under each before the
    batch. The batch's holders of a value form a group; where a group holds more than
    its room (PREFIX_CROWD less `filed`), which of its holders are filed depends on how
    many before them were kept: such a group is counted (an id >= 0) and its holders
    walked in order (decided). `found`: position -> (row, d, sim) of each pair that
    verified, once, rows >= 0 kept rows and rows < 0 an earlier batch position i as
    -1 - i among its group's first `room` holders, filed if kept (which the walk
    checks). Holders past a counted group's room are filed only where earlier ones were
    not kept: verified in the walk (_late)."""

    dd: VerifyingDeduplicator
    fparray: np.ndarray
    mine: np.ndarray
    has_mine: np.ndarray
    pos: np.ndarray
    values: np.ndarray
    filed: np.ndarray
    found: dict[int, list[tuple[int, int, float]]]
    # position -> [(group, its place in the group)], for counted groups
    member: dict[int, list[tuple[int, int]]]
    room: list[int]
    held: list[int]  # kept holders of each counted group so far, in the walk
    late: list[list[int]]  # kept holders of each counted group past its room, within it

    @classmethod
    def of(
        cls,
        dd: VerifyingDeduplicator,
        fparray: np.ndarray,
        mine: np.ndarray,
        has_mine: np.ndarray,
        batch: bool = True,
    ) -> _Prefixes:
        bits = dd.settings.bits
        pos, values = prefixes(dd.sketcher, mine, has_mine, dd.min_jaccard)
        filed, which, rows = dd.prefix_index.lookup(values)
        member: dict[int, list[tuple[int, int]]] = {}
        room: list[int] = []
        pairs = [(pos[which], rows)]  # (q, rows), before verification
        if batch and len(pos) > 1:
            order = np.lexsort((pos, values))
            v = values[order]
            starts = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
            sizes = np.diff(np.r_[starts, len(v)])
            group_room = PREFIX_CROWD - filed[order][starts]
            first, second = pairs_in_groups(order, starts, sizes, group_room)
            # Only where a group holds more than its room do its holders' decisions
            # count (which of them fill it), so only then are they walked.
            counted = (sizes > group_room) & (group_room > 0)
            room = group_room[counted].tolist()
            for g, (start, size) in enumerate(zip(starts[counted].tolist(), sizes[counted].tolist())):
                for place, at in enumerate(pos[order[start : start + size]].tolist()):
                    member.setdefault(at, []).append((g, place))
            pairs.append((pos[second], -1 - pos[first]))
        # each pair verified once, however many values it shares
        uq, urows = _unique_pairs(*(np.concatenate(x) for x in zip(*pairs)))
        kept_rows = urows >= 0
        ds = np.empty(len(uq), np.int64)
        sims = np.empty(len(uq))
        at = np.flatnonzero(kept_rows)
        ds[at] = dd.index.distances_to(urows[at], fparray[uq[at]])
        sims[at] = dd._similarities(mine, has_mine, uq[at], dd._sketches, dd._has, urows[at], ds[at])
        at = np.flatnonzero(~kept_rows)
        ds[at] = distances(fparray[uq[at]], fparray[-1 - urows[at]], bits)
        sims[at] = dd._similarities(mine, has_mine, uq[at], mine, has_mine, -1 - urows[at], ds[at])
        ok = sims >= dd.min_jaccard
        found: dict[int, list[tuple[int, int, float]]] = {}
        for p, row, d, sim in zip(*(x[ok].tolist() for x in (uq, urows, ds, sims))):
            found.setdefault(p, []).append((row, d, sim))
        return cls(
            dd,
            fparray,
            mine,
            has_mine,
            pos,
            values,
            filed,
            found,
            member,
            room,
            [0] * len(room),
            [[] for _ in room],
        )

    @property
    def walked(self) -> np.ndarray:
        return np.array([*self.found, *self.member], np.int64)

    def candidates(self, pos: int) -> list[tuple[int, int, float, bool]]:
        """(row, d, sim, False): the candidates of `pos` that verified, with the kept
        holders past their group's room that were filed (late ones)."""
        if pos not in self.found and pos not in self.member:  # (most walked positions: 2.5 µs each)
            return []
        return [(row, d, sim, False) for row, d, sim in self.found.get(pos, ())] + self._late(pos)

    def _late(self, pos: int) -> list[tuple[int, int, float, bool]]:
        """(row, d, sim, False) of the kept holders past their group's room that were
        filed (earlier ones not kept), share a value with `pos` and verify with it."""
        earlier = sorted({i for g, _ in self.member.get(pos, ()) for i in self.late[g]})
        if not earlier:
            return []
        firsts = np.array(earlier, np.int64)
        q = np.full(len(firsts), pos, np.int64)
        ds = distances(self.fparray[q], self.fparray[firsts], self.dd.settings.bits)
        sims = self.dd._similarities(self.mine, self.has_mine, q, self.mine, self.has_mine, firsts, ds)
        ok = sims >= self.dd.min_jaccard
        return [
            (-1 - i, d, sim, False)
            for i, d, sim in zip(firsts[ok].tolist(), ds[ok].tolist(), sims[ok].tolist())
        ]

    def pairs(self) -> tuple[np.ndarray, ...]:
        """(q, rows, ds, sims) of the kept rows that verified (match_many's candidates)."""
        got = [(p, row, d, sim) for p, found in self.found.items() for row, d, sim in found if row >= 0]
        if not got:
            return _no_pairs()
        q, rows, ds, sims = (np.array(x) for x in zip(*got))
        return q.astype(np.int64), rows.astype(np.int64), ds.astype(np.int64), sims.astype(np.float64)

    def decided(self, pos: int, kept: bool) -> None:
        """Counts `pos` among the kept holders of its groups, once decided (in order)."""
        if not kept or pos not in self.member:
            return
        for g, place in self.member[pos]:
            if self.held[g] < self.room[g] and place >= self.room[g]:
                self.late[g].append(pos)
            self.held[g] += 1


def _query_slices(index: BlockIndex, queries: np.ndarray) -> list[tuple[int, int]]:
    """(lo, hi) of the slices of `queries` a search of `index` is given at once: at most
    MATCH_CANDIDATES candidates a slice (a query's alone may be more), ~100 MB of pairs
    where the compiled loops keep only those within the distance; a quarter of it where
    numpy holds every candidate before it compares them (at 128 bits ~110 bytes each:
    440 MB a slice, a review)."""
    most = MATCH_CANDIDATES if index.compiled else MATCH_CANDIDATES // 4
    cuts = _cuts(index.candidates(queries), most)
    return list(zip(cuts, cuts[1:]))


def _heads_crowd(
    heads: Sequence[int | None] | None, present: list[int], resolved: np.ndarray | None = None
) -> bool:
    """Whether the batch's equal heads alone make it crowded_batch: pages of one site's
    boilerplate share their head, and a batch of 4,096 paired them all (8.4M pairs, a
    trial's 0.94 GB), where whole fingerprints, 120 words of 600 apart, were not near.
    `resolved` (a bool a present position): the pairs whose first is one do not count."""
    if heads is None:  # made later, from the texts (_Heads.in_index)
        return False
    if resolved is None:
        counts = Counter(head for i in present if (head := heads[i]) is not None)
        return crowded_batch(sum(c * (c - 1) // 2 for c in counts.values()), len(present))
    earlier: Counter[int] = Counter()  # of each head, the positions so far not resolved
    pairs = 0
    for i, done in zip(present, resolved.tolist()):
        if (head := heads[i]) is not None:
            pairs += earlier[head]
            earlier[head] += not done
    return crowded_batch(pairs, len(present))


def _best_of_each(
    q: np.ndarray, rows: np.ndarray, ds: np.ndarray, sims: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Of the candidates (q, rows, ds, sims) of each position q, the one (in order of q)
    that decide_many's walk and match_many take: the most similar, then the nearest, then
    the first row; one with no similarity (NaN) after all that have one. The walk gets
    only these of the kept rows found by fingerprint, which it never holds back (nor
    those found by head, all of which it holds back or none): where copies of copies
    were kept, each line of such a flood had hundreds, 3.9M candidates walked in
    Python for 100,000 lines."""
    if len(q) < 2:
        return q, rows, ds, sims
    if (q[1:] < q[:-1]).any():  # match_many's, from several searches
        order = np.argsort(q, kind="stable")
        q, rows, ds, sims = q[order], rows[order], ds[order], sims[order]
    new = q[1:] != q[:-1]
    if new.all():  # one candidate a position: nothing to choose
        return q, rows, ds, sims
    # Each key in turn, a pass over the groups (a lexsort of the five took a fifth of the
    # walk's time on copies of copies): the best value of the ones still in.
    starts = np.flatnonzero(np.r_[True, new])
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(q)]))
    similar = np.where(np.isnan(sims), -np.inf, sims)  # none after every one
    best = similar == np.maximum.reduceat(similar, starts)[group]
    for key in (ds, rows):
        at = np.where(best, key, key.max())  # the others are out already
        best &= at == np.minimum.reduceat(at, starts)[group]
    taken = np.flatnonzero(best)
    first = taken[np.r_[True, group[taken[1:]] != group[taken[:-1]]]]
    return q[first], rows[first], ds[first], sims[first]


def _no_pairs() -> tuple[np.ndarray, ...]:
    """(q, rows, ds, sims) of no pair."""
    return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)


def _unique_pairs(q: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(q, rows): the distinct pairs of (q, rows) (q >= 0 below 2 ** 31, rows from -2 ** 31
    to 2 ** 32), in order of q, then rows."""
    keys = distinct((q.astype(np.int64) << 33) + rows.astype(np.int64) + (1 << 31))
    return keys >> 33, (keys & ((1 << 33) - 1)) - (1 << 31)


def _beside() -> ThreadPoolExecutor:
    """Threads for one batch's head-index search and half of its index search, named
    so that tests can find them."""
    return ThreadPoolExecutor(2, thread_name_prefix=HEAD_THREAD)


HEAD_THREAD = "simdedup-heads"
#: A batch's first rows, paired to tell whether it crowds (crowded_batch) before all of
#: it is.
CROWD_SAMPLE = 512
#: Documents a batch holds, at least, for _beside's threads to search it: `filter` of
#: 2,000 lines written 5 ms apart, a batch each, took 3.49 s of CPU with them, 2.86 s
#: without.
BESIDE_FROM = 32


#: Up to this many fingerprints near_pairs_after compares every one with each chosen one,
#: whatever their share: a review found the tables slower at 4,096 with 1,024-3,000
#: chosen at k = 3-5 (0.65-1.0 ms against 0.46 at k = 3), and at k >= 7.
CROSS_BRUTE_FORCE = 8192


def near_pairs_after(
    fparray: np.ndarray, firsts: np.ndarray, bits: int, k: int, compiled: bool
) -> tuple[np.ndarray, ...]:
    """near_pair_arrays' (i, j, d), sorted, of the pairs whose i is one of `firsts` (a
    bool a fingerprint): a batch in a crowd has few such i and many pairs without one."""
    if firsts.all():
        return near_pair_arrays(fparray, bits, k, compiled=compiled)
    chosen = np.flatnonzero(firsts)
    if compiled and bits == 64 and len(fparray) <= CROSS_BRUTE_FORCE:
        from .compiled import cross_pairs

        second, found, ds = cross_pairs(fparray, fparray[chosen], k)
    elif Layout.for_(bits, k).brute_force:  # numpy's index would hold every pair at once
        return brute_pairs_after(fparray, bits, k, chosen)
    elif 2 * len(chosen) > len(fparray):  # numpy's index of the chosen would hold them twice
        first, second, ds = near_pair_arrays(fparray, bits, k, compiled=compiled)
        mine = firsts[first]
        return first[mine], second[mine], ds[mine]
    else:  # a slice of the queries at a time, as _search_kept's
        among = BlockIndex(bits, k)
        among.add_many(fparray[chosen])
        parts = [(_NONE, _NONE, _NONE)]
        for lo, hi in _query_slices(among, fparray):
            q, at, d = among.search(fparray[lo:hi], ordered=False)
            parts.append((q + lo, at, d))
        second, found, ds = (np.concatenate(x) for x in zip(*parts))
    first = chosen[found]
    later = first < second
    first, second, ds = first[later], second[later], ds[later]
    order = np.lexsort((second, first))
    return first[order], second[order], ds[order]


def _quiet_cuts(first: np.ndarray, second: np.ndarray, lo: int, hi: int) -> list[int]:
    """Where pieces of batch positions lo..hi - 1 start, halved until the pairs (first,
    second) inside each are not crowded_batch: a piece's own pairs are fewer still,
    once its crowded documents are known (VerifyingDeduplicator._batch_pairs), so it is
    decided whole, its kept rows searched once."""
    inside = (first >= lo) & (second < hi)
    if not crowded_batch(int(np.count_nonzero(inside)), hi - lo):
        return [lo]
    first, second, mid = first[inside], second[inside], (lo + hi) // 2  # the halves' pairs are among these
    return _quiet_cuts(first, second, lo, mid) + _quiet_cuts(first, second, mid, hi)


def _refuse_textless(docs: Sequence[Document], fps: Sequence[int | None], what: str) -> None:
    """Refuse to make `what` of a batch from texts that are not there: a document with a
    fingerprint but an empty text had it made elsewhere (a worker) and its text left out.
    Made from "", its sketch or head matched nothing, and 1,407 of 11,000 decisions
    differed from dedup()'s, without an error (a review)."""
    for n, (doc, fp) in enumerate(zip(docs, fps)):
        if fp is not None and not doc.text and doc.features is None:
            raise ValueError(
                f"document {n} of the batch has a fingerprint but no text to make its {what} "
                "from: give the sketches and heads made with the fingerprints too "
                "(sketch.fingerprints_and_sketches)"
            )


def _heads_of(docs: Sequence[Document], settings: Settings, hashfunc: HashFunc) -> list[int | None]:
    """The head fingerprints of a batch's texts (None for documents given as features)."""
    heads: list[int | None] = [None] * len(docs)
    texts = [i for i, doc in enumerate(docs) if doc.features is None]
    norm = normalized_many([docs[i].text for i in texts], settings)
    for i, head in zip(texts, normalized_batch_fingerprints(norm, settings, hashfunc, heads=True)[2]):
        heads[i] = head
    return heads


def deduplicator(settings: Settings, verify: float | None = None, crowd: int = CROWD) -> Deduplicator:
    """A Deduplicator, verifying candidates at Jaccard >= `verify` when it is given
    (and leaving crowds unindexed: VerifyingDeduplicator's `crowd`)."""
    if verify is None:
        return Deduplicator(settings)
    return VerifyingDeduplicator(settings, min_jaccard=verify, crowd=crowd)
