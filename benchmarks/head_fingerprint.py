"""Experiment: a second fingerprint of each document's first words as a candidate source.

Not a simdedup feature (yet). On quality.py's set, keep-first runs with candidates from
the whole-document fingerprint (what simdedup does) and, beside it, from fingerprints
of the first N word tokens ("head"), of the first half, or of the first and last 64
tokens; every candidate within k on any of them is verified with exact Jaccard >= 0.8,
as quality.py's "exact Jaccard" rows are. Brute force over the kept documents, so it
says what such an index would find, not what it would cost: on a real crawl, pages of
one site share their first words (navigation, headers), and a head fingerprint would
make them all candidates of each other. "pairs" counts the pairs of documents within k
on the extra fingerprints, a proxy for that cost (the set's boilerplate edits share a
few header lines, as a site would). The "after common lines" variant is one guard: the
head starts after the lines already seen in COMMON (10) or more earlier documents.

    .venv/bin/python benchmarks/head_fingerprint.py            # about 5 minutes

"pairs" is for the last fingerprint of each row (the whole one for "whole only").
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quality  # noqa: E402
from realtext import build_documents, jaccard_scores, truth_set  # noqa: E402

from simdedup import Settings  # noqa: E402
from simdedup.features import tokenize  # noqa: E402
from simdedup.fingerprint import FeatureHasher, fingerprint_batch  # noqa: E402

#: name -> the token lists whose fingerprints are candidate sources, beside the whole.
EXTRA: dict[str, Callable[[list[str]], list[list[str]]]] = {
    "whole only": lambda t: [],
    "+ first 32 tokens": lambda t: [t[:32]],
    "+ first 64 tokens": lambda t: [t[:64]],
    "+ first half": lambda t: [t[: max(1, len(t) // 2)]],
    "+ first 64 and last 64 tokens": lambda t: [t[:64], t[-64:]],
}
GUARDED = "+ first 32 tokens after common lines"
#: A line is boilerplate once this many earlier documents had it: more than a document
#: and its few edited copies share (quality.py makes at most 8 of each original).
COMMON = 10


def without_common_lines(texts: Sequence[str], seen_in: int = COMMON) -> list[str]:
    """Each text without the lines that `seen_in` or more earlier texts had, in input order."""
    seen: Counter[str] = Counter()
    out = []
    for text in texts:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        out.append("\n".join(line for line in lines if seen[line] < seen_in))
        seen.update(set(lines))
    return out


def pairs_within(column: list[int | None], k: int, chunk: int = 512) -> int:
    """Pairs of documents whose fingerprints in `column` are within k of each other."""
    fps = np.array([0 if fp is None else fp for fp in column], dtype=np.uint64)
    within = 0
    for lo in range(0, len(fps), chunk):
        block = fps[lo : lo + chunk]
        within += int((np.bitwise_count(block[:, None] ^ fps[None, :]) <= k).sum()) - len(block)
    return within // 2


def fingerprints(token_lists: Sequence[list[str]]) -> list[int | None]:
    return fingerprint_batch([dict(Counter(t)) for t in token_lists], 64, FeatureHasher(64))


def keep_first(columns: list[list[int | None]], sets: Sequence[frozenset[str]], k: int) -> list[int]:
    """Keep-first groups: a document joins the kept document most similar to it among
    those within k on any fingerprint column, if that Jaccard is >= 0.8."""
    kept: list[int] = []
    kept_fps: list[list[int]] = []
    group: list[int] = []
    for i in range(len(sets)):
        mine = [column[i] for column in columns]
        best, best_j = i, 0.0
        if kept_fps and mine[0] is not None:
            table = np.array(kept_fps, dtype=np.uint64)
            near: set[int] = set()
            for c, fp in enumerate(mine):
                if fp is not None:
                    near.update(np.flatnonzero(np.bitwise_count(table[:, c] ^ np.uint64(fp)) <= k).tolist())
            for j in near:
                s, t = sets[i], sets[kept[j]]
                inter = len(s & t)
                jac = inter / max(1, len(s) + len(t) - inter)
                if jac >= 0.8 and jac > best_j:
                    best, best_j = group[kept[j]], jac
        if best == i and mine[0] is not None:
            kept.append(i)
            kept_fps.append([0 if fp is None else fp for fp in mine])
        group.append(best)
    return group


def main() -> None:
    picked = build_documents(2500, 2500, 0, min_han=8)
    print(
        "lang  candidates from                        k      P      R     F1  largest    +bp    -bp  trunc"
        "      pairs"
    )
    for lang in quality.LANGS:
        c = quality.build_corpus(lang, picked[lang], 400, 0)
        c.threshold = 0.8
        c.sets = [truth_set(t, lang, script_fold=True) for t in c.texts]
        c.jaccard = jaccard_scores(c.sets, Fraction(1, 2))
        tokens = [tokenize(t, Settings()) for t in c.texts]
        whole = fingerprints(tokens)
        guarded = [tokenize(t, Settings())[:32] for t in without_common_lines(c.texts)]
        for name, extra in [*EXTRA.items(), (GUARDED, None)]:
            if extra is None:
                columns = [whole, fingerprints([g or t[:32] for g, t in zip(guarded, tokens)])]
            else:
                parts = [extra(t) for t in tokens]
                columns = [whole] + [fingerprints([p[n] for p in parts]) for n in range(len(parts[0]))]
            for k in (3, 4):
                out = quality.score(keep_first(columns, c.sets, k), c)
                recall = (out[f"R_{kind}"] for kind in ("add_boilerplate", "remove_boilerplate", "truncate"))
                pairs = pairs_within(columns[-1], k)
                print(
                    f"{lang:<4}  {name:<38} {k:>3}  {out['P']:.3f}  {out['R']:.3f}  {out['F1']:.3f}  "
                    f"{out['largest']:>7}  " + "  ".join(f"{r:.3f}" for r in recall) + f"  {pairs:>9,}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
