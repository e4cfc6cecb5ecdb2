"""How far the verification sketch's Jaccard estimate lands from the exact one, by length.

For each length, makes pairs of texts of that many random 7-letter words (so that
every shingle is distinct), the second a copy with 1-5% of its words replaced, which
puts their exact Jaccard around 0.7-0.9. Each pair's exact Jaccard (every shingle hash,
sketch.shingle_hashes) is set beside its estimate from the two 256-byte sketches
(sketch.similarity), and the table gives, over the pairs whose exact Jaccard is between
0.7 and 0.9: the mean and 99th-percentile absolute error, the largest, and how often a
pair lands on the other side of --verify 0.8 by its distance from it. Texts of at most
61 distinct shingles have exact sketches, so their error is 0.

Run: .venv/bin/python benchmarks/sketch_error.py (about a minute; --pairs to change the
1,000 pairs a length).
"""

from __future__ import annotations

import argparse
import random
import string

import numpy as np

from simdedup.sketch import shingle_hashes, similarity, text_sketches

THRESHOLD = 0.8
#: exact-Jaccard bands beside the threshold: (low, high, whether the band's pairs
#: should verify)
BANDS = ((0.76, 0.78, False), (0.78, 0.80, False), (0.80, 0.82, True), (0.82, 0.84, True))


def pair(words: int, rng: random.Random) -> tuple[str, str]:
    a = ["".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(words)]
    b = list(a)
    for _ in range(max(1, round(words * rng.uniform(0.01, 0.05)))):
        b[rng.randrange(words)] = "".join(rng.choices(string.ascii_lowercase, k=7))
    return " ".join(a), " ".join(b)


def exact_jaccard(a: str, b: str) -> float:
    sa, sb = (set(shingle_hashes([text])[0].tolist()) for text in (a, b))
    return len(sa & sb) / len(sa | sb)


def measure(words: int, pairs: int, rng: random.Random) -> np.ndarray:
    """(exact, estimate) of `pairs` pairs of `words` words."""
    rows = []
    for _ in range(pairs):
        a, b = pair(words, rng)
        sketches = text_sketches([a, b])
        rows.append((exact_jaccard(a, b), float(similarity(sketches[:1], sketches[1:])[0])))
    return np.array(rows)


def wrong_side(rows: np.ndarray, low: float, high: float, verifies: bool) -> str:
    """The share of the band's pairs that the estimate puts on the wrong side."""
    band = rows[(rows[:, 0] >= low) & (rows[:, 0] < high)]
    if not len(band):
        return "-"
    wrong = band[:, 1] < THRESHOLD if verifies else band[:, 1] >= THRESHOLD
    return f"{wrong.mean():.3f} ({len(band)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=1000, help="pairs a length (default 1,000)")
    parser.add_argument("--words", type=int, nargs="+", default=[40, 70, 100, 300, 1000, 3000])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    bands = [f"{'accepted' if not ok else 'rejected'} {low:.2f}-{high:.2f}" for low, high, ok in BANDS]
    print(
        f"{'words':>6} {'mean |err|':>10} {'p99 |err|':>9} {'max':>7}  "
        + "  ".join(f"{b:>22}" for b in bands)
    )
    for words in args.words:
        rows = measure(words, args.pairs, rng)
        near = rows[(rows[:, 0] > 0.7) & (rows[:, 0] < 0.9)]
        err = np.abs(near[:, 1] - near[:, 0])
        sides = [wrong_side(rows, low, high, ok) for low, high, ok in BANDS]
        print(
            f"{words:>6} {err.mean():>10.4f} {np.quantile(err, 0.99):>9.4f} {err.max():>7.4f}  "
            + "  ".join(f"{s:>22}" for s in sides),
            flush=True,
        )
    print("(a band's share: of its pairs by exact Jaccard, those the estimate puts on the other side of 0.8)")


if __name__ == "__main__":
    main()
