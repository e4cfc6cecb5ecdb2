"""What `--crowd N` costs and saves: the same documents decided at each N, in process.

For each input and each N (0: exact, every kept document indexed), decides the
documents in batches of 4,096 with VerifyingDeduplicator(crowd=N) and prints the time
(and its ratio to N = 0 in the same run), the duplicates found, how many of N = 0's
duplicates it did not find, and the rows it left unindexed. Inputs:

- `csv`: rows of 40 small numbers (the stop 39 review's generator, seed 1), whose
  fingerprints crowd while their shingles do not verify: quadratic at N = 0;
- `english`: the first lines of bench.py's generated English corpus, which has crowds
  of its own (clusters of topic words): what N loses where text is ordinary.

Run: .venv/bin/python benchmarks/crowds.py --csv 50000 --english 200000 --crowds 0 4096 1024
(about two minutes; the English file is benchmarks/.data/english-1000000.txt, which
`make bench` writes).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from simdedup import Document, Settings
from simdedup.sketch import fingerprints_and_sketches
from simdedup.verify import VerifyingDeduplicator

BATCH = 4096
ENGLISH = Path(__file__).resolve().parent / ".data" / "english-1000000.txt"


def csv_rows(n: int) -> list[str]:
    rng = random.Random(1)
    return [
        ",".join(str(rng.choice([0, 0, 0, 0, 1, 2, 3, rng.randint(0, 99999)])) for _ in range(40))
        for _ in range(n)
    ]


def english_lines(n: int) -> list[str]:
    with open(ENGLISH, encoding="utf-8") as f:
        return [line.rstrip("\n") for line, _ in zip(f, range(n))]


def decide(texts: list[str], crowd: int) -> tuple[float, list[tuple[str, int | None]], int]:
    """(seconds deciding, (status, row duplicated) per document, rows unindexed)."""
    settings = Settings()
    batches = []
    for lo in range(0, len(texts), BATCH):
        docs = [Document(str(i), t, b"") for i, t in enumerate(texts[lo : lo + BATCH], lo)]
        batches.append(
            (docs, fingerprints_and_sketches([d.text for d in docs], settings, None, compiled=True))
        )
    dd = VerifyingDeduplicator(settings, crowd=crowd)
    start = time.perf_counter()
    decided = [d for docs, made in batches for d in dd.decide_many(docs, *made)]
    seconds = time.perf_counter() - start
    return (
        seconds,
        [(d.status, d.row if d.status == "duplicate" else None) for d in decided],
        dd.index.unindexed,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=int, default=50_000, help="CSV rows (0: none)")
    parser.add_argument("--english", type=int, default=200_000, help="English lines (0: none)")
    parser.add_argument("--crowds", type=int, nargs="+", default=[0, 4096, 1024])
    args = parser.parse_args()
    inputs = [("csv", csv_rows(args.csv)) if args.csv else None]
    inputs.append(("english", english_lines(args.english)) if args.english else None)
    for name, texts in filter(None, inputs):
        print(f"{name}, {len(texts):,} documents")
        base: tuple[float, list[tuple[str, int | None]], int] | None = None
        for crowd in args.crowds:
            seconds, decided, unindexed = decide(texts, crowd)
            base = base or (seconds, decided, unindexed)
            found = sum(status == "duplicate" for status, _ in decided)
            lost = sum(a[0] == "duplicate" and b[0] != "duplicate" for a, b in zip(base[1], decided))
            first = args.crowds[0]
            print(
                f"  crowd {crowd:>5}: {seconds:7.2f} s ({seconds / base[0]:.2f}x crowd {first}), "
                f"{found:,} duplicates, {lost:,} of crowd {first}'s not found, {unindexed:,} unindexed",
                flush=True,
            )


if __name__ == "__main__":
    main()
