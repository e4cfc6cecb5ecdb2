"""Calibration: how well "fingerprints within k bits" separates a user's labelled pairs.

Given pairs of texts labelled duplicate or not, gives precision, recall and F1 at each
distance for each settings preset (and with --verify's shingle check), so a threshold
can be chosen for the user's own data. Pure functions: reads no file, never prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .fingerprint import distance, fingerprint_texts
from .settings import MAX_DISTANCE, Settings
from .verify import MIN_JACCARD, jaccard, shingle_hashes


@dataclass(frozen=True)
class LabelledPair:
    a: str
    b: str
    duplicate: bool


@dataclass(frozen=True)
class Score:
    """Pair-level counts and scores of one preset at one distance."""

    preset: str
    distance: int
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def presets(base: Settings) -> dict[str, tuple[Settings, float | None]]:
    """The settings compared by default: `base` (the command line's), a few variations of
    it, and `base` with --verify at MIN_JACCARD. name -> (settings, minimum Jaccard or None)."""
    return {
        "settings": (base, None),
        f"settings + verify {MIN_JACCARD:g}": (base, MIN_JACCARD),
        "--no-fold": (replace(base, fold=False), None),
        "--weights binary": (replace(base, weights="binary"), None),
        "--weights tfidf": (replace(base, weights="tfidf"), None),
        "--tokenizer chars": (replace(base, tokenizer="chars", shingle=1), None),
    }


def calibrate(
    pairs: Sequence[LabelledPair],
    presets: Mapping[str, tuple[Settings, float | None]],
    distances: Iterable[int] = range(MAX_DISTANCE + 1),
) -> list[Score]:
    """A Score for every preset and distance: a pair is predicted a duplicate when both
    texts have fingerprints within the distance (and, with a minimum Jaccard, when
    their shingles reach it). An empty text is never a duplicate."""
    distances = list(distances)
    scores = []
    for name, (settings, min_jaccard) in presets.items():
        fa = fingerprint_texts([p.a for p in pairs], settings)
        fb = fingerprint_texts([p.b for p in pairs], settings)
        d = [distance(x, y) if x is not None and y is not None else None for x, y in zip(fa, fb)]
        if min_jaccard is not None:
            verified = [
                jaccard(shingle_hashes(p.a, settings.fold), shingle_hashes(p.b, settings.fold)) >= min_jaccard
                for p in pairs
            ]
        else:
            verified = [True] * len(pairs)
        for k in distances:
            tp = fp = fn = 0
            for pair, dist, ok in zip(pairs, d, verified):
                predicted = dist is not None and dist <= k and ok
                tp += predicted and pair.duplicate
                fp += predicted and not pair.duplicate
                fn += pair.duplicate and not predicted
            scores.append(Score(name, k, tp, fp, fn))
    return scores


def best(scores: Iterable[Score]) -> dict[str, Score]:
    """Each preset's highest-F1 distance (ties: the smaller distance)."""
    top: dict[str, Score] = {}
    for s in scores:
        if s.preset not in top or (s.f1, -s.distance) > (top[s.preset].f1, -top[s.preset].distance):
            top[s.preset] = s
    return top
