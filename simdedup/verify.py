"""Verification (on by default): a fingerprint match is a duplicate only if the texts agree.

A document within the distance of kept documents is checked against each of them with
the Jaccard similarity of their shingles (word 3-shingles; character 3-grams of the
word characters for text with Chinese, after the same normalization as features),
estimated from fixed-size sketches (sketch.py). Never prints.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from .dedup import Decision, Deduplicator, Ids
from .fingerprint import HashFunc
from .index import BlockIndex, fingerprint_array, near_pair_arrays
from .read import Document
from .settings import MIN_JACCARD, Settings
from .sketch import SHINGLE, SKETCH, Sketcher, fingerprints_and_sketches
from .sketch import shingle_hashes as _shingle_runs

__all__ = ["MIN_JACCARD", "SHINGLE", "VerifyingDeduplicator", "deduplicator"]


class VerifyingDeduplicator(Deduplicator):
    """Keep-first dedup where a candidate within the distance must also reach
    `min_jaccard` on shingles, estimated from sketches; of those that do, the most
    similar kept document wins (ties: the nearest fingerprint, then the earliest row).
    None verified: kept.

    Memory: `sketcher.nbytes` + 1 bytes per row (129 with the default sketch), in arrays
    that grow by half again when full.
    Documents given as features have no sketch, nor do rows preloaded with `extend`
    without sketches: a match involving one is decided on the fingerprint alone.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        hashfunc: HashFunc | None = None,
        index: BlockIndex | None = None,
        min_jaccard: float = MIN_JACCARD,
        sketcher: Sketcher = SKETCH,
    ) -> None:
        super().__init__(settings, hashfunc, index)
        if not 0.0 < min_jaccard <= 1.0:
            raise ValueError("min_jaccard must be in (0, 1]")
        self.min_jaccard = min_jaccard
        self.sketcher = sketcher
        # Row r's sketch is _sketches[r] when _has[r]; rows past len(self.ids) are spare.
        self._sketches = np.zeros((0, sketcher.nbytes), np.uint8)
        self._has = np.zeros(0, bool)

    def _reserve(self, rows: int) -> None:
        """Room for `rows` rows: growth by half again, so appending a row is amortized
        O(1) and at most a third of the arrays is spare."""
        if rows <= len(self._has):
            return
        capacity = max(rows, len(self._has) * 3 // 2, 1024)
        sketches = np.zeros((capacity, self.sketcher.nbytes), np.uint8)
        sketches[: len(self._has)] = self._sketches
        has = np.zeros(capacity, bool)
        has[: len(self._has)] = self._has
        self._sketches, self._has = sketches, has

    def _check(self) -> None:
        assert self._sketches.shape == (len(self._has), self.sketcher.nbytes)
        assert len(self._has) >= len(self.ids) == len(self.index)
        assert not self._sketches[~self._has].any(), "a row without a sketch holds one"

    def extend(
        self,
        fps: np.ndarray | Iterable[int],
        ids: Ids | Iterable[str],
        sketches: np.ndarray | None = None,
        has: np.ndarray | None = None,
    ) -> None:
        """Preload rows (see Deduplicator.extend) with their sketches, (rows, nbytes)
        uint8, and which of them have one (`has`, bool; default: all when sketches are
        given). A row without a sketch is matched on the fingerprint alone."""
        before = len(self.ids)
        super().extend(fps, ids)
        after = len(self.ids)
        self._reserve(after)
        if sketches is None:
            return
        if sketches.shape != (after - before, self.sketcher.nbytes):
            raise ValueError(f"{after - before} rows but sketches of shape {sketches.shape}")
        has = np.ones(after - before, bool) if has is None else np.asarray(has, bool)
        if has.shape != (after - before,):
            raise ValueError(f"{after - before} rows but {has.shape} sketch flags")
        self._sketches[before:after] = sketches
        self._sketches[before:after][~has] = 0
        self._has[before:after] = has

    def sketch_array(self) -> tuple[np.ndarray, np.ndarray]:
        """(sketches, has): every row's sketch, (rows, nbytes) uint8, zeros where it has
        none, and a bool per row saying which have one. Views, valid until the next call
        that adds rows."""
        rows = len(self.ids)
        return self._sketches[:rows], self._has[:rows]

    def sketch_bytes(self) -> int:
        """Memory held for verification, in bytes."""
        return self._sketches.nbytes + self._has.nbytes

    def process(self, docs: Sequence[Document]) -> list[Decision]:
        """Deduplicator.process, the fingerprints and the default sketches made in one pass
        over the texts (sketch.fingerprints_and_sketches)."""
        if self.sketcher != SKETCH:
            return super().process(docs)
        work = [doc.text if doc.features is None else doc.features for doc in docs]
        return self.decide_many(docs, *fingerprints_and_sketches(work, self.settings, self.hashfunc))

    def decide_many(
        self, docs: Sequence[Document], fps: Sequence[int | None], sketches: np.ndarray | None = None
    ) -> list[Decision]:
        """Decisions for a batch, in order, as if each document were decided in turn:
        candidates come from one search of the index and one of the batch against
        itself, and are verified together. `sketches` are the documents' sketches, row
        by row (made from their texts when not given).

        A document with no verified candidate is kept, whatever the rest of the batch
        decides; only the few with one are walked in order, in Python."""
        decisions: list[Decision] = [None] * len(docs)  # type: ignore[list-item]
        present = [i for i, fp in enumerate(fps) if fp is not None]
        if len(present) < len(docs):
            for i, fp in enumerate(fps):
                if fp is None:
                    decisions[i] = Decision(docs[i], None, "empty")
        if not present:
            return decisions
        mine, has_mine = self._batch_sketches(docs, present, sketches)
        bits, k = self.settings.bits, self.index.distance
        fparray = fingerprint_array([fps[i] for i in present], bits)
        # Candidates that verify (similarity NaN: a side has no sketch, decided on the
        # fingerprint): kept rows (q, rows), and earlier documents of this batch (second
        # is a candidate duplicate of first).
        q, rows, ds = self.index.search(fparray)
        sims = self._similarities(mine, has_mine, q, self._sketches, self._has, rows)
        ok = ~(sims < self.min_jaccard)
        q, rows, ds, sims = q[ok], rows[ok], ds[ok], sims[ok]
        first, second, pair_ds = near_pair_arrays(fparray, bits, k)
        pair_sims = self._similarities(mine, has_mine, second, mine, has_mine, first)
        ok = ~(pair_sims < self.min_jaccard)
        first, second, pair_ds, pair_sims = first[ok], second[ok], pair_ds[ok], pair_sims[ok]
        base = len(self.index)
        walked = np.zeros(len(present), bool)
        walked[q] = True
        walked[second] = True
        kept = (~walked).tolist()
        # The chosen candidate of each duplicate: a kept row, or base + its batch position
        # (in the same order as the row it gets: batch rows follow the kept ones, in order).
        target: dict[int, tuple[int, int]] = {}
        if walked.any():
            candidates: dict[int, list[tuple[int, int, float]]] = {}
            for pos, row, d, sim in zip(q.tolist(), rows.tolist(), ds.tolist(), sims.tolist()):
                candidates.setdefault(pos, []).append((row, d, sim))
            for i, j, d, sim in zip(first.tolist(), second.tolist(), pair_ds.tolist(), pair_sims.tolist()):
                candidates.setdefault(j, []).append((-1 - i, d, sim))
            for pos in np.flatnonzero(walked).tolist():
                best: tuple[int, float, int, int] | None = None
                for row, d, sim in candidates[pos]:
                    if row < 0:  # an earlier document of this batch: only if it was kept
                        if not kept[-1 - row]:
                            continue
                        row = base - 1 - row
                    # unverifiable: after every verified candidate
                    key = (1, 0.0, d, row) if math.isnan(sim) else (0, -sim, d, row)
                    if best is None or key < best:
                        best = key
                if best is None:
                    kept[pos] = True
                else:
                    target[pos] = (best[3], best[2])
        is_kept = np.array(kept, bool)
        new = np.flatnonzero(is_kept)
        new_rows = np.full(len(present), -1, np.int64)
        new_rows[new] = np.arange(base, base + len(new))
        self._reserve(base + len(new))
        self._sketches[base : base + len(new)] = mine[new]
        self._has[base : base + len(new)] = has_mine[new]
        for pos in new.tolist():
            self.ids.append(docs[present[pos]].id)
        for pos, (i, row) in enumerate(zip(present, new_rows.tolist())):
            if row >= 0:
                decisions[i] = Decision(docs[i], fps[i], "unique", row)
                continue
            row, d = target[pos]
            if row >= base:  # a document of this batch, by position
                row = int(new_rows[row - base])
            decisions[i] = Decision(docs[i], fps[i], "duplicate", row, self.ids[row], d)
        self.index.add_many(fparray[is_kept])
        return decisions

    def match_many(
        self, docs: Sequence[Document], fps: Sequence[int | None], sketches: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """For each document, the kept row it would duplicate and the distance, or -1 and
        -1; nothing is kept. The row is chosen as decide_many chooses among kept rows:
        verified ones first, the most similar, then the nearest, then the earliest."""
        rows = np.full(len(fps), -1, dtype=np.int64)
        dists = np.full(len(fps), -1, dtype=np.int64)
        present = [i for i, fp in enumerate(fps) if fp is not None]
        if not present:
            return rows, dists
        mine, has_mine = self._batch_sketches(docs, present, sketches)
        q, found, ds = self.index.search(fingerprint_array([fps[i] for i in present], self.settings.bits))
        sims = self._similarities(mine, has_mine, q, self._sketches, self._has, found)
        ok = ~(sims < self.min_jaccard)  # NaN passes: decided on the fingerprint
        q, found, ds, sims = q[ok], found[ok], ds[ok], sims[ok]
        unverified = np.isnan(sims)
        order = np.lexsort((found, ds, -np.nan_to_num(sims), unverified, q))
        first = order[np.r_[True, q[order][1:] != q[order][:-1]]] if len(order) else order
        at = np.asarray(present)[q[first]]
        rows[at], dists[at] = found[first], ds[first]
        return rows, dists

    def _batch_sketches(
        self, docs: Sequence[Document], present: list[int], sketches: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sketches, has) of the present documents; a document given as features has none."""
        has = np.array([docs[i].features is None for i in present], bool)
        if sketches is not None:
            if sketches.shape != (len(docs), self.sketcher.nbytes):
                raise ValueError(f"{len(docs)} documents but sketches of shape {sketches.shape}")
            mine = sketches[present]
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
    ) -> np.ndarray:
        """Estimated Jaccard of a[a_rows[t]] and b[b_rows[t]] for every t, in one call;
        NaN where either has no sketch."""
        out = np.full(len(a_rows), np.nan)
        both = np.flatnonzero(a_has[a_rows] & b_has[b_rows])
        if len(both):
            out[both] = self.sketcher.similarity(a[a_rows[both]], b[b_rows[both]])
        return out


def deduplicator(settings: Settings, verify: float | None = None) -> Deduplicator:
    """A Deduplicator, verifying candidates at Jaccard >= `verify` when it is given."""
    if verify is None:
        return Deduplicator(settings)
    return VerifyingDeduplicator(settings, min_jaccard=verify)
