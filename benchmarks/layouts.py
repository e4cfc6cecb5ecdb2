"""Keep-first over the generated corpus at larger distances: which index layout, what it costs.

For each distance k, the index tables keyed on single blocks (k + 1 blocks) and on pairs
of blocks (k + 2 blocks, one table per pair) are timed on the streaming keep-first path
`scan` uses (Deduplicator.decide_many, batches of 1,024, fingerprints given), on
index_bench.py's corpus fingerprints and on as many uniform random ones, with the index
memory per fingerprint. Both layouts are exact, so both keep the same documents. A
layout whose keys would meet index.BRUTE_FORCE_SHARE of the rows (single blocks from
k = 6) compares every row instead (Layout.brute_force; benchmarks/wide.py).

    .venv/bin/python benchmarks/layouts.py --docs 300000 --distances 4,5,6   # ~10 min
    .venv/bin/python benchmarks/layouts.py --docs 1000000 --distances 3,4 --keys 2
"""

from __future__ import annotations

import argparse
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_bench import corpus_fingerprints  # noqa: E402

from simdedup import Deduplicator, Document, Settings  # noqa: E402
from simdedup.index import BlockIndex, Layout  # noqa: E402
from simdedup.settings import block_layout  # noqa: E402


def keep_first(fps: np.ndarray, k: int, layout: Layout, batch: int = 1024) -> tuple[float, int, float]:
    """(seconds, documents kept, index bytes per fingerprint)."""
    dd = Deduplicator(Settings(distance=k), index=BlockIndex(64, k, layout=layout))
    docs = [Document(str(i), "", b"") for i in range(len(fps))]
    values = fps.tolist()
    kept = 0
    start = time.perf_counter()
    for lo in range(0, len(values), batch):
        decisions = dd.decide_many(docs[lo : lo + batch], values[lo : lo + batch])
        kept += sum(d.status == "unique" for d in decisions)
    stats = dd.index.stats()
    return time.perf_counter() - start, kept, stats.nbytes / stats.fingerprints


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=300_000)
    parser.add_argument("--distances", default="4,5,6")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keys", default="1,2", help="blocks per table key to time: 1, 2 or both")
    args = parser.parse_args()
    real = corpus_fingerprints(args.docs, args.seed, Settings())
    rand = np.random.default_rng(args.seed + 1).integers(0, 2**64, size=args.docs, dtype=np.uint64)
    print(f"{args.docs:,} fingerprints, keep-first in batches of 1,024")
    print(f"{'k':>2}  {'layout':<50} {'corpus':>8} {'random':>8} {'ratio':>6} {'kept':>9} {'B/fp':>6}")
    for k in map(int, args.distances.split(",")):
        for per_key in map(int, args.keys.split(",")):
            blocks = block_layout(64, k + per_key - 1)
            layout = Layout(64, k, blocks, tuple(combinations(range(len(blocks)), per_key)))
            t_real, kept, nbytes = keep_first(real, k, layout)
            t_rand, _, _ = keep_first(rand, k, layout)
            print(
                f"{k:>2}  {layout.describe():<50} {t_real:7.2f}s {t_rand:7.2f}s {t_real / t_rand:5.2f}x "
                f"{kept:>9,} {nbytes:6.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
