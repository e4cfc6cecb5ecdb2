"""What head fingerprints cost on a crawl whose pages share their first words.

Verification's second candidate source (simdedup.verify) indexes a fingerprint of each
document's first HEAD_TOKENS tokens. On a crawl, the pages of one site usually begin
with the same navigation, so their heads agree and every page would be a candidate of
every earlier one: quadratic verification work. HEAD_CROWD bounds that: a head gives
the first HEAD_CROWD kept heads within the distance of it, and one within the distance
of more is not kept.

The generated crawl (deterministic for --seed): bench.py's English-like documents, each
the body of a page of one of --sites sites, site sizes Zipf-distributed (the largest
site holds about a fifth of the pages); every page of a site starts with the site's
navigation of 40-80 words, and --titled of the sites put the page's own 3-word title
inside it (so their heads differ a little from page to page). About 10% of pages are
copies of an earlier page of the same site: bench.py's 1-3 word edits, a 5-30% cut from
the end, or 10-40 words added at the end.

It scans the first 10,000, 20,000 and 40,000 pages in-process (simdedup.dedup.dedup,
batches of 1,024 as `scan` reads files) with heads as shipped, and again with heads
switched off, and prints the wall time of each, the duplicates found, the heads kept
and the bytes verification holds.
It also runs the same with every page's navigation removed, to separate the cost of
shared heads from the cost of heads at all, and counts the pairs of pages whose whole
fingerprints are within k: shared navigation makes those grow with the square of a
site's pages, and each is a verification, heads or not.

    .venv/bin/python benchmarks/crawl_heads.py                 # 10k, 20k, 40k pages: ~10 seconds
    .venv/bin/python benchmarks/crawl_heads.py --pages 100000
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

from simdedup import Document, Settings  # noqa: E402
from simdedup.dedup import dedup  # noqa: E402
from simdedup.fingerprint import fingerprint_texts  # noqa: E402
from simdedup.index import fingerprint_array, near_pair_arrays  # noqa: E402
from simdedup.settings import HEAD_CROWD, HEAD_TOKENS  # noqa: E402
from simdedup.verify import VerifyingDeduplicator  # noqa: E402

#: Documents per batch, as `scan` reads files (pipeline.PIPELINE_BATCH).
BATCH = 1024


def make_crawl(pages: int, sites: int, titled: float, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    lang = bench.Language.make(rng, bench.TOPIC_SHARE)
    weights = 1.0 / np.arange(1, sites + 1)
    site_of = rng.choice(sites, size=pages, p=weights / weights.sum())
    navigation = [
        " ".join(lang.vocab[i] for i in bench.zipf_draws(lang.cdf, rng, int(rng.integers(40, 81))))
        for _ in range(sites)
    ]
    has_title = rng.random(sites) < titled
    texts: list[str] = []
    bodies: list[str] = []
    by_site: dict[int, list[int]] = {}
    for n, site in enumerate(site_of.tolist()):
        earlier = by_site.setdefault(site, [])
        if earlier and rng.random() < bench.DUP_FRACTION:
            body = bodies[earlier[int(rng.integers(len(earlier)))]]
            words = body.split(" ")
            roll = rng.random()
            if roll < 0.4:
                body = bench.edited_copy(body, lang, rng)
            elif roll < 0.7:
                body = " ".join(words[: int(len(words) * rng.uniform(0.7, 0.95))])
            else:
                extra = bench.zipf_draws(lang.cdf, rng, int(rng.integers(10, 41)))
                body = body + " " + " ".join(lang.vocab[i] for i in extra)
        else:
            body = bench.original_document(lang, rng)
        nav = navigation[site]
        if has_title[site]:
            cut = nav.split(" ")
            title = " ".join(lang.vocab[i] for i in bench.zipf_draws(lang.cdf, rng, 3))
            nav = " ".join(cut[:20] + [title] + cut[20:])
        bodies.append(body)
        texts.append(nav + "\n" + body)
        earlier.append(n)
    return texts


@contextmanager
def heads_off() -> Iterator[None]:
    """Every document decided as one without a head. (It set fingerprint.HEAD_TOKENS
    past any text, which the compiled core, making ASCII texts' heads itself, never
    read: heads stayed on in both runs, which gave the same figures.)"""
    given = VerifyingDeduplicator._given

    def headless(self: VerifyingDeduplicator, docs: Sequence[Document], fps: Any, *rest: Any) -> Any:
        sketches, _ = given(self, docs, fps, *rest)
        return sketches, [None] * len(docs)

    VerifyingDeduplicator._given = headless  # type: ignore[method-assign]
    try:
        yield
    finally:
        VerifyingDeduplicator._given = given  # type: ignore[method-assign]


def scan(texts: Sequence[str]) -> tuple[float, int, VerifyingDeduplicator]:
    dd = VerifyingDeduplicator(Settings())
    docs = (Document(str(i), t, b"") for i, t in enumerate(texts))
    start = time.perf_counter()
    duplicates = sum(d.status == "duplicate" for d in dedup(docs, deduplicator=dd, batch_size=BATCH))
    return time.perf_counter() - start, duplicates, dd


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default="10000,20000,40000", help="crawl sizes, comma-separated")
    ap.add_argument("--sites", type=int, default=2_000)
    ap.add_argument(
        "--titled", type=float, default=0.5, help="share of sites with page titles in the navigation"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    sizes = [int(n) for n in args.pages.split(",")]
    crawl = make_crawl(max(sizes), args.sites, args.titled, args.seed)
    titled = f"{args.titled:.0%} with page titles in the navigation"
    k = Settings().distance
    print(f"# pages of {args.sites:,} sites ({titled}); HEAD_TOKENS {HEAD_TOKENS}, HEAD_CROWD {HEAD_CROWD},")
    print(f"# k = {k}, batches of {BATCH:,}; pairs: of pages whose whole fingerprints are within k\n")
    columns = ("pages", "pairs", "heads", "seconds", "docs/s", "duplicates", "heads kept", "verify B/doc")
    print(f"{'input':<18} " + " ".join(f"{c:>12}" for c in columns))
    ratios = []
    for name, corpus in (("with navigation", crawl), ("bodies only", [t.split("\n", 1)[1] for t in crawl])):
        fps = fingerprint_array([fp or 0 for fp in fingerprint_texts(corpus)])
        for n in sizes:
            pairs = len(near_pair_arrays(fps[:n], 64, k)[0])
            seconds = {}
            for on in (True, False):
                with contextlib.nullcontext() if on else heads_off():
                    seconds[on], dups, dd = scan(corpus[:n])
                per_doc = dd.sketch_bytes() / max(1, len(dd.ids))
                print(
                    f"{name:<18} {n:12,} {pairs:12,} {'on' if on else 'off':>12} {seconds[on]:12.1f} "
                    f"{n / seconds[on]:12,.0f} {dups:12,} {len(dd.head_index):12,} {per_doc:12.0f}"
                )
            ratios.append(f"{name}, {n:,} pages: {seconds[True] / seconds[False]:.2f}")
    print("\ntime with heads / without:\n" + "\n".join(ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
