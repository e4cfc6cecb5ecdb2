"""Batches of copies: `scan` of N copies of a few lines against N distinct lines.

Repeated lines (logs, mirrored pages) are the commonest duplicates. Within a batch,
copies used to be compared pair by pair (1,000 copies of one line: 500,000 verified
pairs); Deduplicator.decide_many now decides them in stretches without two copies and
by their earlier copy. Near copies (a flood of lines each a word or two off one line)
are all near each other: a batch of them was halved down to pieces of 32-63 lines;
now a batch is searched first, and lines that verify with a kept one pair with no
later line; so are lines whose head meets a kept one's and verifies, where that head
cannot be crowded (300 words, 8 random ones each: most whole fingerprints are apart
from the kept line's, the heads one). This prints, for each input, the wall time, the documents per second and
the peak resident memory of `simdedup scan -j1 -q` on it, and the ratio of each to the
distinct lines' run (the baseline, made in the same run); the near copies are 100
words a line, as the second distinct lines are.

    .venv/bin/python benchmarks/copies.py --docs 100000
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

LINE = "the same line of text repeated many many times over in a log"


def inputs(count: int, folder: Path) -> dict[str, Path]:
    """The inputs, written a line at a time: a scan's peak memory (ru_maxrss) counts
    what this process held when it forked it (302 MiB each, when these were lists)."""
    rng = random.Random(0)
    words = [f"w{i}" for i in range(20_000)]
    messages = [f"{LINE} {i} " + " ".join(rng.choice(words) for _ in range(8)) for i in range(20)]
    made: dict[str, Callable[[], Iterable[str]]] = {
        "distinct lines (baseline)": lambda: (
            " ".join(rng.choice(words) for _ in range(12)) for _ in range(count)
        ),
        "one line, repeated": lambda: [LINE] * count,
        "20 messages, interleaved": lambda: (rng.choice(messages) for _ in range(count)),
        "empty lines": lambda: [""] * count,
        "distinct 100-word lines": lambda: (
            " ".join(rng.choice(words) for _ in range(100)) for _ in range(count)
        ),
        "a word or two off one line": lambda: near_copies(rng.choices(words, k=100), words, count, rng),
        "300 words, 8 random ones each": lambda: head_copies(rng.choices(words, k=300), words, count, rng),
    }
    paths = {}
    for name, lines in made.items():
        path = folder / f"{len(paths)}.txt"
        with path.open("w") as f:
            f.writelines(line + "\n" for line in lines())
        paths[name] = path
    return paths


def near_copies(line: list[str], words: list[str], count: int, rng: random.Random) -> Iterator[str]:
    """`count` copies of `line`, each with one or two of its words replaced."""
    for _ in range(count):
        copy = list(line)
        for _ in range(rng.randint(1, 2)):
            copy[rng.randrange(len(copy))] = rng.choice(words)
        yield " ".join(copy)


def head_copies(line: list[str], words: list[str], count: int, rng: random.Random) -> Iterator[str]:
    """`count` copies of `line`, each with 8 random words after it: they meet the first
    by head, most of their whole fingerprints past k."""
    for _ in range(count):
        yield " ".join(line + rng.choices(words, k=8))


def run(path: Path, extra: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one scan, in a process of its own."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "simdedup", "scan", str(path), "-j1", "-q", *extra], stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"scan of {path} failed: {status}")
    return time.perf_counter() - start, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        paths = inputs(args.docs, Path(folder))
        for extra in ([], ["--no-verify"]):
            print(f"scan -j1 {' '.join(extra) or '(verified, the default)'}, {args.docs:,} lines each")
            base = None
            for name, path in paths.items():
                seconds, rss = run(path, extra)
                base = base or (seconds, rss)
                print(
                    f"  {name:28s} {seconds:7.2f} s {args.docs / seconds:9,.0f} docs/s {rss / 1024:7.0f} MiB"
                    f"   time x{seconds / base[0]:.2f}, memory x{rss / base[1]:.2f}"
                )


if __name__ == "__main__":
    main()
