"""Block-bucket sizes of the default fingerprints of real text, beside random ones.

Real text piles fingerprints into a few block values (frequent words make bits agree);
this measures how much, on the real English and Chinese documents that
benchmarks/realtext.py reads from this machine, with the default settings, and how the
index copes (sub-tables, depth, all-pairs time against as many random fingerprints).

Run: .venv/bin/python benchmarks/buckets.py        (about half a minute)
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtext import chinese_sources, english_sources, pick  # noqa: E402

from simdedup import BlockIndex, Settings, fingerprint_texts, near_pairs  # noqa: E402


def bucket_report(name: str, fps: list[int], settings: Settings) -> str:
    sizes = [
        Counter((fp >> start) & ((1 << width) - 1) for fp in fps).most_common(1)[0][1]
        for start, width in settings.blocks
    ]
    stats = BlockIndex.from_fingerprints(fps, settings.bits, settings.distance).stats()
    start = time.perf_counter()
    pairs = near_pairs(fps, settings.bits, settings.distance)
    seconds = time.perf_counter() - start
    largest = max(sizes)
    return (
        f"{name:<22} {len(fps):>6,}  {largest:>6,} ({largest / len(fps):6.1%})  "
        f"{' '.join(f'{s:>5,}' for s in sizes)}  {stats.tables:>6,}  {stats.depth:>5}  "
        f"{seconds:>6.2f}  {len(pairs):>8,}"
    )


def main() -> None:
    rng = random.Random(0)
    settings = Settings()
    corpora = {
        "English (real text)": [t for _, t in pick(english_sources(rng), 5000, rng)],
        "Chinese (real text)": [t for _, t in pick(chinese_sources(), 5000, rng)],
    }
    print(f"settings: {settings}")
    print(
        f"{'fingerprints':<22} {'count':>6}  {'largest bucket':>15}  {'per block':>23}  "
        f"{'tables':>6}  {'depth':>5}  {'pairs s':>6}  {'pairs':>8}"
    )
    for name, texts in corpora.items():
        fps = [fp for fp in fingerprint_texts(texts, settings) if fp is not None]
        print(bucket_report(name, fps, settings))
        uniform = [rng.getrandbits(64) for _ in fps]
        print(bucket_report("  uniform random", uniform, settings))


if __name__ == "__main__":
    main()
