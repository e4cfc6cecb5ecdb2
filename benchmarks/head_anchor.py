"""Where a head starts, rule against rule: how often an edit leaves the head within k.

A head is the 32 tokens from the one with the smallest feature hash (ties: the earliest;
settings.HEAD_SPEC). A trial found that a header holding one of a few common words
with small hashes ("it", "code") moves it in a large share of documents (README, Known
limits, "Heads anchor on a few common words"). This measures the current rule against
three others on real text of this machine (realtext.py, English, documents of 62 to
400 tokens), edit by edit: the share of documents whose head, after the edit, is
within 4 bits of the original's. Heads only: whether the whole fingerprint still finds
the copy is the same under every rule.

    .venv/bin/python benchmarks/head_anchor.py [--docs 600]

Rules: earliest (the current one), latest (ties: the last), once (the smallest hash
among the tokens the document holds once; earliest where none is), middle (the
smallest hash among the starts in the middle 80% of the document).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realtext  # noqa: E402

from simdedup import Settings  # noqa: E402
from simdedup.features import normalized_many  # noqa: E402
from simdedup.fingerprint import FeatureHasher, occurrence_fingerprints, word_hashes  # noqa: E402
from simdedup.settings import HEAD_TOKENS  # noqa: E402

K = 4
HASHER = FeatureHasher()


def token_hashes(text: str) -> np.ndarray:
    hashes, _ = word_hashes(normalized_many([text], Settings()), HASHER)
    return hashes.astype(np.uint64)


def head_start(h: np.ndarray, rule: str) -> int:
    starts = h[: len(h) - HEAD_TOKENS + 1]
    smallest = np.flatnonzero(starts == starts.min())
    if rule == "earliest":
        return int(smallest[0])
    if rule == "latest":
        return int(smallest[-1])
    if rule == "once":
        _, inverse, counts = np.unique(h, return_inverse=True, return_counts=True)
        once = counts[inverse[: len(starts)]] == 1
        if not once.any():
            return int(smallest[0])
        return int(np.argmin(np.where(once, starts, np.uint64(2**64 - 1))))
    lo = int(len(h) * 0.1)
    hi = max(lo + 1, min(len(starts), int(len(h) * 0.9)))
    return lo + int(np.argmin(starts[lo:hi]))


def head(text: str, rule: str) -> int | None:
    h = token_hashes(text)
    if len(h) <= HEAD_TOKENS:
        return None
    s = head_start(h, rule)
    return occurrence_fingerprints(h[s : s + HEAD_TOKENS], np.array([HEAD_TOKENS]))[0]


def cut(fraction: float, end: bool = True) -> Callable[[str], str]:
    def edit(text: str) -> str:
        words = text.split()
        k = int(len(words) * fraction)
        return " ".join(words[: len(words) - k] if end else words[k:])

    return edit


def inserted(text: str) -> str:
    sentences = re.split(r"(?<=[.!?])\s+", text)
    sentences.insert(len(sentences) // 2, "This paragraph was updated by the editors on Tuesday.")
    return " ".join(sentences)


EDITS: dict[str, Callable[[str], str]] = {
    "header: ... in Programming Tips": lambda t: "Posted by admin on March 3, 2024 in Programming Tips\n" + t,
    "header: ... in Code Tips": lambda t: "Posted by admin on March 3, 2024 in Code Tips\n" + t,
    "header: Note: it was last reviewed": lambda t: "Note: it was last reviewed on March 3, 2024\n" + t,
    "header: a breadcrumb": lambda t: "Home > Docs > Reference > Library\n" + t,
    "footer: share, 14 words": lambda t: (
        t + "\nShare this article. It is also on our website, where you will find more."
    ),
    "footer: copyright": lambda t: t + "\nCopyright 2024 Example Inc. All rights reserved.",
    "end cut, 10%": cut(0.10),
    "end cut, 20%": cut(0.20),
    "start cut, 10%": cut(0.10, end=False),
    "a sentence inserted": inserted,
}
RULES = ("earliest", "latest", "once", "middle")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=600)
    args = parser.parse_args()
    pool = [t for _, t in realtext.build_documents(20 * args.docs, 0, 0)["en"]]
    docs = [t for t in pool if 62 <= len(token_hashes(t)) <= 400][: args.docs]
    print(f"{len(docs)} English documents of 62-400 tokens; the share whose head stays within {K} bits")
    print(f"{'edit':<36}" + "".join(f"{r:>10}" for r in RULES))
    base = {r: [head(t, r) for t in docs] for r in RULES}
    for name, edit in EDITS.items():
        edited = [edit(t) for t in docs]
        shares = []
        for r in RULES:
            kept = sum(
                a is not None and b is not None and bin(a ^ b).count("1") <= K
                for a, b in zip(base[r], (head(u, r) for u in edited))
            )
            shares.append(kept / len(docs))
        print(f"{name:<36}" + "".join(f"{s:10.3f}" for s in shares))


if __name__ == "__main__":
    main()
