"""Calibration: how well "fingerprints within k bits" separates a user's labelled pairs.

Given pairs of texts labelled duplicate or not, gives precision, recall and F1 at each
distance for each settings preset (verified as scan verifies, with the same sketches,
and without), so a threshold can be chosen for the user's own data. Pure functions:
reads no file, never prints.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .features import normalized_many
from .fingerprint import BATCH_SIZE, FeatureHasher, distance, normalized_batch_fingerprints
from .settings import MAX_DISTANCE, MIN_JACCARD, Settings
from .sketch import SKETCH, similarity, text_sketches
from .verify import candidate_distance, too_few_bins, verifies


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
        """tp / (tp + fp); 1.0 where nothing is predicted a duplicate (0 / 0), for F1,
        but shown as undefined (shown_precision)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def shown_precision(self) -> float | None:
        return self.precision if self.tp + self.fp else None

    @property
    def shown_recall(self) -> float | None:
        return self.recall if self.tp + self.fn else None

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def shown_f1(self) -> float | None:
        """F1 as shown: undefined where no pair is a duplicate and none was predicted
        one (0 / 0 both ways), where it showed 1.000."""
        return self.f1 if self.tp + self.fp + self.fn else None


def presets(base: Settings, verify: float | None) -> dict[str, tuple[Settings, float | None]]:
    """The settings compared by default: `base` and `verify` (the command line's), the
    same the other way round (--no-verify, or verified at 0.8), and a few variations of
    `base`, each named by the option that makes it from `base`, verified as it is: the
    other fold, the other weights (binary only without top_k), and chars for words (auto
    for chars). name -> (settings, minimum Jaccard or None)."""
    other = ("--no-verify", None) if verify is not None else ("--verify 0.8", 0.8)
    if base.tokenizer == "chars":
        tokenizer = ("--tokenizer auto", replace(base, tokenizer="auto"))
    else:
        tokenizer = ("--tokenizer chars", replace(base, tokenizer="chars", shingle=1))
    variations = [
        ("--no-fold" if base.fold else "--fold", replace(base, fold=not base.fold)),
        *(
            (f"--weights {w}", replace(base, weights=w))
            for w in ("tf", "binary", "tfidf")
            if w != base.weights and not (w == "binary" and base.top_k)  # no heaviest under binary
        ),
        tokenizer,
    ]
    return {"settings": (base, verify), other[0]: (base, other[1])} | {
        name: (settings, verify) for name, settings in variations
    }


def default_presets() -> dict[str, tuple[Settings, float | None]]:
    """presets() of the default settings, verified as the commands verify."""
    return presets(Settings(), MIN_JACCARD)


def calibrate(
    pairs: Sequence[LabelledPair | tuple[str, str, bool]],
    presets: Mapping[str, tuple[Settings, float | None]] | None = None,
    distances: Iterable[int] = range(MAX_DISTANCE + 1),
) -> list[Score]:
    """A Score for every preset and distance: a pair is predicted a duplicate when both
    texts have fingerprints within the distance (and, with a minimum Jaccard, when the
    estimate from their sketches reaches it, as in scan, where their head fingerprints
    within the distance make them candidates too, and two short texts are candidates at
    any distance). An empty text is never a duplicate.
    Pairs are LabelledPairs or (a, b, duplicate) tuples; `presets` default to the
    command's for the default settings (default_presets())."""
    pairs = [p if isinstance(p, LabelledPair) else LabelledPair(*p) for p in pairs]
    for p in pairs:  # "no" and 2 were counted by their truth, into the scores (a trial)
        if (
            not isinstance(p.a, str)
            or not isinstance(p.b, str)
            or not isinstance(p.duplicate, (bool, np.bool_))
        ):
            raise TypeError(
                f"a labelled pair is two texts (str) and whether they are duplicates (bool), not {p!r}"
            )
    pairs = [replace(p, duplicate=bool(p.duplicate)) for p in pairs]  # numpy's bool too
    if presets is None:
        presets = default_presets()
    for name, (_, min_jaccard) in presets.items():
        ok = (
            isinstance(min_jaccard, numbers.Real)
            and not isinstance(min_jaccard, bool)
            and 0 < min_jaccard <= 1
        )
        if min_jaccard is not None and not ok:
            raise ValueError(
                f"preset {name!r}: a minimum Jaccard is a number in (0, 1] or None, not {min_jaccard!r}"
            )
    distances = list(distances)
    if not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= MAX_DISTANCE for k in distances):
        raise ValueError(f"distances are ints from 0 to {MAX_DISTANCE}, not {distances!r}")
    scores = []
    sketches: dict[bool, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # by fold: the presets share them
    for name, (settings, min_jaccard) in presets.items():
        fa, ha = _fingerprints_and_heads([p.a for p in pairs], settings)
        fb, hb = _fingerprints_and_heads([p.b for p in pairs], settings)
        d_whole = [_distance(x, y) for x, y in zip(fa, fb)]
        d_head = [_distance(x, y) for x, y in zip(ha, hb)]
        if min_jaccard is not None:
            if settings.fold not in sketches:
                sa = text_sketches([p.a for p in pairs], settings.fold)
                sb = text_sketches([p.b for p in pairs], settings.fold)
                sketches[settings.fold] = (sa, sb, similarity(sa, sb))
            sa, sb, sims = sketches[settings.fold]
            unequal = np.array([x is None or y is None or x != y for x, y in zip(fa, fb)], bool)
            few = too_few_bins(SKETCH, sa, sb, unequal).tolist()
            short = (SKETCH.exact_rows(sa) & SKETCH.exact_rows(sb)).tolist()
        else:
            sims, few, short = [1.0] * len(pairs), [False] * len(pairs), [False] * len(pairs)
        # As scan decides a pair (verify.candidate_distance, verify.verifies).
        d = [candidate_distance(*x, min_jaccard) for x in zip(d_whole, d_head, short)]
        verified = [verifies(float(j), f, min_jaccard) for j, f in zip(sims, few)]
        for k in distances:
            tp = fp = fn = 0
            for pair, dist, ok in zip(pairs, d, verified):
                predicted = dist is not None and dist <= k and ok
                tp += predicted and pair.duplicate
                fp += predicted and not pair.duplicate
                fn += pair.duplicate and not predicted
            scores.append(Score(name, k, tp, fp, fn))
    return scores


def _fingerprints_and_heads(
    texts: Sequence[str], settings: Settings
) -> tuple[list[int | None], list[int | None]]:
    """The texts' fingerprints and head fingerprints, BATCH_SIZE at a time."""
    hasher = FeatureHasher(settings.bits, settings.seed)
    fps: list[int | None] = []
    heads: list[int | None] = []
    for lo in range(0, len(texts), BATCH_SIZE):
        norm = normalized_many(texts[lo : lo + BATCH_SIZE], settings)
        batch_fps, _, batch_heads = normalized_batch_fingerprints(norm, settings, hasher, heads=True)
        fps += batch_fps
        heads += batch_heads
    return fps, heads


def _distance(x: int | None, y: int | None) -> int | None:
    return None if x is None or y is None else distance(x, y)


def best(scores: Iterable[Score]) -> dict[str, Score]:
    """Each preset's highest-F1 distance (ties: the smaller distance), among those whose
    F1 is defined: a preset with none (no pair labelled a duplicate, none predicted one)
    has no best, where k = 0 was marked best of nothing (a trial)."""
    top: dict[str, Score] = {}
    for s in scores:
        if s.shown_f1 is None:
            continue
        if s.preset not in top or (s.f1, -s.distance) > (top[s.preset].f1, -top[s.preset].distance):
            top[s.preset] = s
    return top
