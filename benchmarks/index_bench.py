"""The index on real-looking fingerprints against uniform random ones, in one run.

Real text makes block values hot: common words pull the same bits the same way, so
many fingerprints share a block. The issue's target: all pairs of 1M corpus
fingerprints in at most 2x the time for 1M random ones. Measured here, each against
the random baseline of the same run:

* all pairs within k (near_pair_arrays), the default layout and the classic four
  16-bit single-block tables;
* the streaming keep-first path `scan` uses (Deduplicator.decide_many, 256 at a time);
* index memory per fingerprint (BlockIndex.stats().nbytes) and per id.

Correctness: every all-pairs result equals a brute-force numpy all-pairs on a prefix.

    .venv/bin/python benchmarks/index_bench.py            # 300k fingerprints, ~2 min
    .venv/bin/python benchmarks/index_bench.py --docs 1000000 -k 3
    .venv/bin/python benchmarks/index_bench.py --docs 1000000 --pairs-only   # the first row only

Corpus fingerprints are cached in benchmarks/.data (the corpus takes longest to make).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import make_corpus  # noqa: E402

from simdedup import Deduplicator, Document, Settings, fingerprint_texts  # noqa: E402
from simdedup.index import Layout, near_pair_arrays  # noqa: E402
from simdedup.settings import block_layout  # noqa: E402

DATA = Path(__file__).resolve().parent / ".data"


def corpus_fingerprints(count: int, seed: int, settings: Settings) -> np.ndarray:
    # The distance shapes no fingerprint: the tag leaves it out (at 3, the value it had
    # when these caches were first made), so a default distance change keeps them.
    tag = hashlib.sha256(repr(replace(settings, distance=3)).encode()).hexdigest()[:8]
    path = DATA / f"index-bench-{count}-{seed}-{tag}.npy"
    if path.exists():
        return np.load(path)
    print(
        f"making and fingerprinting a {count:,}-document corpus (cached in {path.name}) ...", file=sys.stderr
    )
    fps = fingerprint_texts(make_corpus(count, seed).texts, settings)
    array = np.array([0 if fp is None else fp for fp in fps], dtype=np.uint64)
    DATA.mkdir(exist_ok=True)
    np.save(path, array)
    return array


def brute_pairs(fps: np.ndarray, k: int, chunk: int = 512) -> set[tuple[int, int]]:
    found = set()
    for lo in range(0, len(fps), chunk):
        block = fps[lo : lo + chunk]
        d = np.bitwise_count(block[:, None] ^ fps[None, :])
        for i, j in zip(*np.nonzero(d <= k)):
            if lo + i < j:
                found.add((int(lo + i), int(j)))
    return found


def timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def stream(fps: np.ndarray, settings: Settings, batch: int = 256) -> tuple[int, Deduplicator]:
    dd = Deduplicator(settings)
    docs = [Document(f"doc-{i:08d}", "", b"") for i in range(len(fps))]
    values = fps.tolist()
    kept = 0
    for lo in range(0, len(values), batch):
        kept += sum(
            d.status == "unique" for d in dd.decide_many(docs[lo : lo + batch], values[lo : lo + batch])
        )
    return kept, dd


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check-docs", type=int, default=20_000)
    parser.add_argument("-k", type=int, default=Settings().distance, help="distance (default: the default)")
    parser.add_argument(
        "--pairs-only", action="store_true", help="all pairs in the default layout, nothing else"
    )
    args = parser.parse_args()
    settings = Settings(distance=args.k)
    k = settings.distance
    real = corpus_fingerprints(args.docs, args.seed, settings)
    rand = np.random.default_rng(args.seed + 1).integers(0, 2**64, size=args.docs, dtype=np.uint64)
    classic = Layout(64, k, block_layout(64, k), tuple((b,) for b in range(k + 1)))
    print(f"{args.docs:,} fingerprints, k = {k}, default layout: {Layout.for_(64, k).describe()}")
    print(f"{'measurement':<44} {'corpus':>9} {'random':>9} {'ratio':>6}  pairs (corpus)")
    layouts = [
        ("all pairs, default layout", None),
        (f"all pairs, classic {k + 1} single-block tables", classic),
    ]
    for name, layout in layouts[:1] if args.pairs_only else layouts:
        t_real, (i, j, _) = timed(lambda layout=layout: near_pair_arrays(real, 64, k, layout))
        t_rand, _ = timed(lambda layout=layout: near_pair_arrays(rand, 64, k, layout))
        print(f"{name:<44} {t_real:8.2f}s {t_rand:8.2f}s {t_real / t_rand:5.2f}x  {len(i):,}")
        c = min(args.check_docs, len(real))
        ci, cj, _ = near_pair_arrays(real[:c], 64, k, layout)
        assert set(zip(ci.tolist(), cj.tolist())) == brute_pairs(real[:c], k), "index != brute force"
    if args.pairs_only:
        return
    t_real, (kept, dd) = timed(lambda: stream(real, settings))
    t_rand, _ = timed(lambda: stream(rand, settings))
    print(
        f"{'keep-first stream, 256 a batch':<44} {t_real:8.2f}s {t_rand:8.2f}s {t_real / t_rand:5.2f}x  "
        f"{len(real) - kept:,} duplicates"
    )
    stats = dd.index.stats()
    print(
        f"corpus stream: {len(real) / t_real:,.0f} fingerprints/s; index {stats.runs} runs, largest bucket "
        f"{stats.largest_bucket:,}; {stats.nbytes / stats.fingerprints:.1f} bytes per fingerprint, "
        f"ids {dd.ids.nbytes() / len(dd.ids):.1f} bytes each (8 + their UTF-8 length)"
    )
    print(f"brute-force check of all pairs on the first {min(args.check_docs, len(real)):,}: ok")


if __name__ == "__main__":
    main()
