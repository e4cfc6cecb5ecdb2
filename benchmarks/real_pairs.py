"""All pairs within k of real text's fingerprints against as many uniform random ones.

Issue 5's target is all pairs of 1M real-corpus fingerprints in at most 2x the time for
1M random ones. index_bench.py measures it on bench.py's generated corpus, whose
unrelated documents crowd within a few bits of each other far more than real text's
do (buckets.py, crowding.py). This measures it on real text: the distinct lines of
four words or more in this machine's text files (documentation, changelogs, man page
sources, licences, the Python and C sources of its packages), a random sample of
them, fingerprinted at the default settings. What it reads is listed in ROOTS, so
another machine gives another corpus; the script prints its size and a digest.

Each round times near_pair_arrays on the real fingerprints and then on the random
ones, at k = 3 and at the default distance, in one process (which touches 3 GiB
first, so that neither side pays for the first use of the memory the pairs take);
the pairs' digest must be the same every round. Each k ends with the median of the
rounds' ratios and the ratio of the fastest real round to the fastest random one: the
VM this was written on varies by 20% or more from minute to minute, on either side.

    .venv/bin/python benchmarks/real_pairs.py                 # 1M lines, 3 rounds: ~1 minute
    .venv/bin/python benchmarks/real_pairs.py --docs 200000 --rounds 5
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Iterator

import numpy as np

from simdedup import Settings, fingerprint_texts
from simdedup.index import Layout, near_pair_arrays

ROOTS = (
    "/usr/share/doc",
    "/usr/share/man",
    "/usr/share/common-licenses",
    "/usr/share/info",
    "/usr/share/perl",
    "/usr/share/perl5",
    "/usr/share/vim",
    "/usr/include",
    "/usr/lib/python3",
    f"/usr/lib/python{sys.version_info.major}.{sys.version_info.minor}",
    *sorted({p for p in sys.path if p.endswith("site-packages")}),
)
WORD = re.compile(r"\w+")
MIN_WORDS = 4
LARGEST_FILE = 20_000_000


def texts(roots: tuple[str, ...]) -> Iterator[str]:
    """The UTF-8 text of each plain or gzipped file under `roots`, in a fixed order;
    links, binary files (a NUL in the first 4 KiB) and files over LARGEST_FILE left out."""
    for root in roots:
        for folder, subfolders, names in os.walk(root):
            subfolders.sort()
            for name in sorted(names):
                path = os.path.join(folder, name)
                try:
                    if os.path.islink(path) or os.path.getsize(path) > LARGEST_FILE:
                        continue
                    with open(path, "rb") as f:
                        raw = f.read()
                    if path.endswith(".gz"):
                        raw = gzip.decompress(raw)
                    if b"\0" not in raw[:4096]:
                        yield raw.decode("utf-8")
                except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError):
                    continue


def distinct_lines(roots: tuple[str, ...]) -> list[str]:
    """Every distinct line (runs of white space made one space) of MIN_WORDS words or
    more, in the order first met."""
    seen: dict[str, None] = {}
    for text in texts(roots):
        for line in text.splitlines():
            line = " ".join(line.split())
            if line not in seen and len(WORD.findall(line)) >= MIN_WORDS:
                seen[line] = None
    return list(seen)


def timed_pairs(fps: np.ndarray, k: int) -> tuple[float, int, str]:
    """near_pair_arrays' time, its pairs' count and their digest."""
    start = time.perf_counter()
    i, j, _ = near_pair_arrays(fps, 64, k)
    seconds = time.perf_counter() - start
    return seconds, len(i), hashlib.sha256(i.tobytes() + j.tobytes()).hexdigest()[:12]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    lines = distinct_lines(ROOTS)
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]
    print(f"{len(lines):,} distinct lines of {MIN_WORDS}+ words on this machine (sha256 {digest})")
    if len(lines) < args.docs:
        sys.exit(f"fewer lines than --docs {args.docs:,}")
    sample = random.Random(args.seed).sample(lines, args.docs)
    del lines
    words = sum(len(WORD.findall(line)) for line in sample) / len(sample)
    real = np.array(fingerprint_texts(sample, Settings()), np.uint64)
    rand = np.random.default_rng(args.seed + 1).integers(0, 2**64, size=len(real), dtype=np.uint64)
    equal = len(real) - len(np.unique(real))
    print(
        f"{args.docs:,} of them, seed {args.seed}: {words:.1f} words a line; "
        f"{equal:,} fingerprints equal to an earlier one"
    )
    np.ones(3 << 30, np.uint8).sum()
    print(f"{'k':>2} {'round':>5} {'real':>8} {'random':>8} {'ratio':>6}  pairs (real)  digest")
    for k in sorted({3, Settings().distance}):
        print(f"k = {k}: {Layout.for_(64, k).describe()}")
        digests, reals, randoms = set(), [], []
        for r in range(args.rounds):
            t_real, pairs, pairs_digest = timed_pairs(real, k)
            t_rand, none, _ = timed_pairs(rand, k)
            digests.add(pairs_digest)
            reals.append(t_real)
            randoms.append(t_rand)
            print(
                f"{k:>2} {r + 1:>5} {t_real:>7.3f}s {t_rand:>7.3f}s {t_real / t_rand:>5.2f}x"
                f"  {pairs:>12,}  {pairs_digest}  ({none} random pairs)",
                flush=True,
            )
        if len(digests) > 1:
            sys.exit(f"k = {k}: the pairs differ from round to round")
        ratios = [a / b for a, b in zip(reals, randoms)]
        print(
            f"k = {k}: median ratio {statistics.median(ratios):.2f}x "
            f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x); "
            f"fastest rounds {min(reals):.3f}s / {min(randoms):.3f}s = {min(reals) / min(randoms):.2f}x"
        )


if __name__ == "__main__":
    main()
