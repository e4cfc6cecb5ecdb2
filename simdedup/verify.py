"""Optional verification: a fingerprint match is a duplicate only if the texts agree.

A document within the distance of kept documents is checked against each of them with
the exact Jaccard similarity of their shingles (word 3-shingles; character 3-grams of
the word characters for text with Chinese, after the same normalization as features).
Never prints; holds the kept documents' shingle hashes in memory.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np

from .dedup import Decision, Deduplicator, Ids
from .features import has_chinese, normalize, words
from .fingerprint import FeatureHasher, HashFunc
from .index import BlockIndex, fingerprint_array, near_pair_arrays
from .read import Document
from .settings import Settings

#: Shingle length for verification: words for most text, characters for Chinese.
SHINGLE = 3
#: The default minimum Jaccard similarity for a verified duplicate.
MIN_JACCARD = 0.8


_WORD_HASHES = FeatureHasher(64)  # words repeat (Zipf): their hashes are cached
# Odd multipliers that mix three word hashes into one shingle hash (wrapping uint64).
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))
_SHIFT = (np.uint64(21), np.uint64(42))


def shingle_hashes(text: str, fold: bool = True) -> np.ndarray:
    """The sorted, distinct 64-bit hashes of a text's verification shingles.

    Chinese: three code points packed into 63 bits (exact). Words: the xxh3 hashes of
    three words mixed by multiply-add. A text shorter than a shingle is one shingle.
    """
    text = normalize(text, fold)
    tokens = words(text)
    if not tokens:
        return np.empty(0, np.uint64)
    chinese = has_chinese(text)
    if chinese:
        units = np.frombuffer("".join(tokens).encode("utf-32-le"), np.uint32).astype(np.uint64)
    else:
        units = np.array(_WORD_HASHES.many(tokens), dtype=np.uint64)
    if len(units) < SHINGLE:
        units = np.concatenate([units, np.zeros(SHINGLE - len(units), np.uint64)])
    a, b, c = units[:-2], units[1:-1], units[2:]
    # Code points have 21 bits, so three pack exactly.
    mixed = (a << _SHIFT[1]) | (b << _SHIFT[0]) | c if chinese else a * _MIX[0] + b * _MIX[1] + c
    return np.unique(mixed)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sorted arrays of distinct hashes (1.0 for two empty ones)."""
    if not len(a) and not len(b):
        return 1.0
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (len(a) + len(b) - inter)


class VerifyingDeduplicator(Deduplicator):
    """Keep-first dedup where a candidate within the distance must also reach
    `min_jaccard` on shingles; of those that do, the most similar kept document wins
    (ties: the nearest fingerprint, then the earliest row). None verified: kept.

    Memory: 8 bytes per distinct shingle of every kept document, plus 9 bytes per row.
    Rows preloaded with `extend` (a stored index) have no shingles, nor do documents
    given as features: a match involving one is decided on the fingerprint alone.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        hashfunc: HashFunc | None = None,
        index: BlockIndex | None = None,
        min_jaccard: float = MIN_JACCARD,
    ) -> None:
        super().__init__(settings, hashfunc, index)
        if not 0.0 < min_jaccard <= 1.0:
            raise ValueError("min_jaccard must be in (0, 1]")
        self.min_jaccard = min_jaccard
        self._hashes = array("Q")  # every kept row's shingle hashes, one after another
        self._ends = array("Q")  # row -> end offset in _hashes
        self._has = bytearray()  # row -> 1 when its shingles are known

    def extend(self, fps: np.ndarray | Iterable[int], ids: Ids | Iterable[str]) -> None:
        before = len(self.ids)
        super().extend(fps, ids)
        added = len(self.ids) - before
        end = len(self._hashes)
        self._ends.extend([end] * added)
        self._has.extend(bytes(added))

    def shingles_of(self, row: int) -> np.ndarray | None:
        if not self._has[row]:
            return None
        start = self._ends[row - 1] if row else 0
        return np.frombuffer(self._hashes[start : self._ends[row]], np.uint64)  # a copy: _hashes grows

    def shingle_bytes(self) -> int:
        """Memory held for verification, in bytes."""
        return 8 * (len(self._hashes) + len(self._ends)) + len(self._has)

    def decide_many(self, docs: Sequence[Document], fps: Sequence[int | None]) -> list[Decision]:
        """Decisions for a batch, in order, as if each document were decided in turn:
        candidates come from one search of the index and one of the batch against itself."""
        decisions = [Decision(doc, None, "empty") for doc in docs]
        present = [i for i, fp in enumerate(fps) if fp is not None]
        if not present:
            return decisions
        bits, k = self.settings.bits, self.index.distance
        fparray = fingerprint_array([fps[i] for i in present], bits)
        candidates: dict[int, list[tuple[int, int]]] = {}  # position -> [(row or -1 - position, d)]
        for q, row, d in zip(*(a.tolist() for a in self.index.search(fparray))):
            candidates.setdefault(q, []).append((row, d))
        for i, j, d in zip(*(a.tolist() for a in near_pair_arrays(fparray, bits, k))):
            candidates.setdefault(j, []).append((-1 - i, d))
        base = len(self.index)
        kept: dict[int, int] = {}  # position in `present` -> the row it is kept as
        for pos, i in enumerate(present):
            doc, fp = docs[i], fps[i]
            mine = shingle_hashes(doc.text, self.settings.fold) if doc.features is None else None
            best: tuple[int, float, int, int] | None = None
            for row, d in candidates.get(pos, ()):
                if row < 0:  # an earlier document of this batch: only if it was kept
                    row = kept.get(-1 - row, -1)
                    if row < 0:
                        continue
                if mine is None or not self._has[row]:
                    key = (1, 0.0, d, row)  # unverifiable: after every verified candidate
                else:
                    size = self._ends[row] - (self._ends[row - 1] if row else 0)
                    if min(size, len(mine)) < self.min_jaccard * max(size, len(mine)):
                        continue  # Jaccard <= smaller / larger: it cannot reach min_jaccard
                    sim = jaccard(mine, self.shingles_of(row))  # type: ignore[arg-type]
                    if sim < self.min_jaccard:
                        continue
                    key = (0, -sim, d, row)
                if best is None or key < best:
                    best = key
            if best is not None:
                row, d = best[3], best[2]
                decisions[i] = Decision(doc, fp, "duplicate", row, self.ids[row], d)
                continue
            kept[pos] = row = base + len(kept)
            self.ids.append(doc.id)
            if mine is not None:
                self._hashes.extend(mine.tolist())
            self._ends.append(len(self._hashes))
            self._has.append(mine is not None)
            decisions[i] = Decision(doc, fp, "unique", row)
        self.index.add_many(fparray[list(kept)])
        return decisions


def deduplicator(settings: Settings, verify: float | None = None) -> Deduplicator:
    """A Deduplicator, verifying candidates at Jaccard >= `verify` when it is given."""
    if verify is None:
        return Deduplicator(settings)
    return VerifyingDeduplicator(settings, min_jaccard=verify)
