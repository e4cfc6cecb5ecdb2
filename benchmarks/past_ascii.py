"""Text past ASCII through the compiled core, against the same lines in ASCII, in one run.

    .venv/bin/python benchmarks/past_ascii.py [corpus.txt] --docs 40000 --rounds 3

Takes the first --docs lines of an English corpus (by default, lines that
scaling.write_english_file generates) and makes variants of each line with the same
words: one accented word a line; a third of the words accented (as in French); every
letter in Cyrillic or Greek, the first word capitalized (so most lines hold a capital
to case-fold); German with ß and a capital umlaut; two emoji a line; ten emoji and
dashes a line. Each variant is fingerprinted in batches of 4,096 by the compiled core
(fingerprint.text_batch_fingerprints, compiled=True) and, with verification's sketches
and heads, as `scan` does (sketch.fingerprints_and_sketches), best of --rounds, and
once by the numpy path (compiled=False), which must give the same fingerprints and
sketches. Prints microseconds a line and each variant's ratio to the ASCII lines.
Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from scaling import write_english_file  # noqa: E402

from simdedup.fingerprint import FeatureHasher, text_batch_fingerprints  # noqa: E402
from simdedup.settings import Settings  # noqa: E402
from simdedup.sketch import fingerprints_and_sketches  # noqa: E402

BATCH = 4096
_CYRILLIC = dict(zip("abcdefghijklmnopqrstuvwxyz", "абцдефгхийклмнопярстуввхыз"))
_GREEK = dict(zip("abcdefghijklmnopqrstuvwxyz", "αβψδεφγηιξκλμνοπθρστυωςχυζ"))
_EMOJI = "😀🎉👍🔥😂✨🙏💯🚀"


def variants(lines: list[str], seed: int = 0) -> dict[str, list[str]]:
    rng = random.Random(seed)

    def each_word(line: str, change: Callable[[str], str]) -> str:
        return " ".join(change(w) for w in line.split(" "))

    def one_word(line: str) -> str:
        words = line.split(" ")
        i = rng.randrange(len(words))
        words[i] += "é"
        return " ".join(words)

    def letters(table: dict[str, str]) -> Callable[[str], str]:
        def to(line: str) -> str:
            text = "".join(table.get(c, c) for c in line)
            return text[:1].upper() + text[1:]

        return to

    def emoji(line: str, count: int, dashes: bool = False) -> str:
        words = line.split(" ")
        for _ in range(count):
            words.insert(rng.randrange(len(words) + 1), rng.choice(_EMOJI) + (" —" if dashes else ""))
        return " ".join(words)

    return {
        "ASCII (the baseline)": lines,
        "one accented word a line": [one_word(t) for t in lines],
        "a third of the words accented": [
            each_word(t, lambda w: w.replace("e", "é") if rng.random() < 0.33 else w) for t in lines
        ],
        "Cyrillic letters, capitalized": [letters(_CYRILLIC)(t) for t in lines],
        "Greek letters, capitalized": [letters(_GREEK)(t) for t in lines],
        "German: ß, Ü": ["Über " + t.replace("ss", "ß") for t in lines],
        "two emoji a line": [emoji(t, 2) for t in lines],
        "ten emoji and dashes a line": [emoji(t, 10, True) for t in lines],
    }


def best(rounds: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def batched(texts: list[str], work: Callable[[list[str]], object]) -> Callable[[], list[object]]:
    return lambda: [work(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus", nargs="?", help="an English text file, one document a line (default: generated)")
    p.add_argument("--docs", type=int, default=40_000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    if args.corpus:
        with open(args.corpus, encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line, _ in zip(f, range(args.docs))]
    else:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "english.txt")
            write_english_file(path, args.docs, 0)
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
    s, hasher = Settings(), FeatureHasher(64)

    def fingerprints(compiled: bool) -> Callable[[list[str]], object]:
        return lambda batch: text_batch_fingerprints(batch, s, hasher, compiled=compiled)

    def with_sketches(compiled: bool) -> Callable[[list[str]], object]:
        return lambda batch: fingerprints_and_sketches(batch, s, hasher, compiled=compiled)

    print(f"{len(lines):,} lines of {np.mean([len(t) for t in lines]):.0f} characters, batches of {BATCH:,}")
    header = ("variant", "fingerprints", "ratio", "+ sketches", "ratio", "numpy path")
    print("{:<32} {:>13} {:>6} {:>11} {:>6} {:>11}".format(*header))
    base: tuple[float, float] | None = None
    for name, texts in variants(lines).items():
        core = best(args.rounds, batched(texts, fingerprints(True))) / len(texts) * 1e6
        scan = best(args.rounds, batched(texts, with_sketches(True))) / len(texts) * 1e6
        numpy_path = best(1, batched(texts, with_sketches(False))) / len(texts) * 1e6
        same = all(
            a[0] == b[0] and np.array_equal(a[1], b[1]) and a[2] == b[2]
            for a, b in zip(batched(texts, with_sketches(True))(), batched(texts, with_sketches(False))())
        )
        base = base or (core, scan)
        print(
            f"{name:<32} {core:>10.2f} µs {core / base[0]:>5.1f}x {scan:>8.2f} µs {scan / base[1]:>5.1f}x "
            f"{numpy_path:>8.2f} µs{'' if same else '  DIFFERENT RESULTS'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
