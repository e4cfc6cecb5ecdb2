"""Detection quality on real text: simdedup settings against MinHash LSH, same set, same run.

The set (offline, deterministic for a given machine and --seed)
    Real English and Chinese documents read from this machine by realtext.py
    (licences, copyright files, stdlib docstrings, man pages, distribution METADATA;
    zh_CN/zh_TW/zh_HK gettext catalogs, Chinese man pages, Vim's tutors, GnuPG and
    systemd texts), cut into 300-2000-character documents, exact duplicates dropped.
    A random subset of the documents ("originals") gets one edited copy per edit type,
    each edit of random strength, so that some copies end up below the threshold:
      typo                1-6% of the words mistyped (Chinese: Han characters replaced)
      word_edit           1-5% of the words inserted, deleted or replaced
      reorder             two sentences (or lines) swapped
      add_boilerplate     a web-page header or footer added
      remove_boilerplate  half of the originals carry a header or footer (the same few
                          for every document, as on a real site); the copy lacks it
      punct               reflowed lines, whitespace and punctuation, full/half width
      truncate            the last 5-30% cut off
      script              (Chinese) simplified to traditional with Taiwan phrasing
                          (opencc s2twp), or a traditional original to simplified
    Originals and copies are then shuffled together, so a copy may come first.

Ground truth (independent of SimHash)
    Exact Jaccard of word 3-shingles (English) or character 3-grams of the word
    characters (Chinese, after folding traditional to simplified with opencc tw2sp),
    after NFKC and case folding. Every pair with Jaccard >= --lower (0.5) is found by
    all-pairs prefix filtering and its Jaccard kept; near-duplicate means >= --jaccard
    (0.8). Any other pair is a negative, so precision is exact.

Scores (per language)
    Each method runs keep-first over the shuffled documents and its output groups (a
    kept document with its duplicates) are scored: pair precision, recall and F1,
    counting every pair inside a group; recall per edit type (over the original-copy
    pairs that are near-duplicates by the truth); B-cubed F1 against the connected
    components of the truth graph; the largest group; throughput in documents per
    second from text (each method in its own worker process; every method is run once
    untimed on each set's first 200 documents before any is timed, so that loading a
    library's dictionaries is charged to none of them, and the benchmark's own objects
    are frozen out of the garbage collector).

    simdedup: `dedup()` of the library, with each --settings. Verified at Jaccard 0.8
    as the CLI is unless verify=off; verify=J checks candidates at Jaccard >= J,
    estimated from the library's sketch, or with sketch=SPEC from another: `exact` (every shingle hash:
    the reference), `oph:BINS:BITS` (one-permutation hashing) or `bottomk:K`; the
    report then adds the microseconds per document to sketch each one.
    MinHash LSH (datasketch, 128 permutations, threshold 0.8): the truth's own shingle
    sets (with and without the script fold), each candidate verified with exact Jaccard
    >= 0.8; a document is a duplicate of the kept candidate with the highest Jaccard.
    "MinHash LSH 0.6" is the same with the LSH threshold at 0.6 (more candidates, the
    same verification): a tuned baseline beside the one the issue asks for.

Run
    .venv/bin/python benchmarks/quality.py                  # about 3 minutes on 2 cores
    .venv/bin/python benchmarks/quality.py --settings distance=6 --settings verify=off,distance=3
    .venv/bin/python benchmarks/quality.py --settings distance=5,verify=0.8,sketch=exact \
        --settings distance=5,verify=0.8 --settings distance=5,verify=0.8,sketch=oph:1024:2
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import math
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from multiprocessing import get_context
from typing import Any

import numpy as np
from defaults import punct, sentences, typo
from realtext import (
    HAN,
    build_documents,
    converter,
    fmt,
    jaccard_scores,
    log,
    revision,
    table,
    truth_set,
)

from simdedup import Deduplicator, Document, Settings, dedup, features
from simdedup.features import tokenize, weigh
from simdedup.fingerprint import FeatureHasher, fingerprint_batch, text_batch_fingerprints
from simdedup.settings import FINGERPRINT_SPEC_VERSION, MIN_JACCARD
from simdedup.sketch import SKETCH, OnePermutation, Sketcher, shingle_hashes
from simdedup.verify import VerifyingDeduplicator

LANGS = ("en", "zh")
EDITS = {
    "en": ("typo", "word_edit", "reorder", "add_boilerplate", "remove_boilerplate", "punct", "truncate"),
    "zh": (
        "typo",
        "word_edit",
        "reorder",
        "add_boilerplate",
        "remove_boilerplate",
        "punct",
        "truncate",
        "script",
    ),
}

BOILERPLATE = {
    "en": [
        "Skip to main content. Home > Documentation > Reference manual",
        "This page was last edited on 3 March 2021, at 14:05. Content is available under the "
        "Creative Commons Attribution-ShareAlike License unless otherwise noted.",
        "Copyright (c) 2024 Example Corporation. All rights reserved. "
        "Privacy policy | Terms of use | Contact us",
        "Share this page: Twitter, Facebook, LinkedIn, Email. Print this page.",
        "Was this page helpful? Yes / No. Report a problem with this page.",
        "Subscribe to our newsletter to get the latest updates delivered to your inbox every week.",
    ],
    "zh": [
        "跳到主要内容。首页 > 文档 > 参考手册",
        "本页面最后修订于2021年3月3日14:05。除非另有声明，本网站内容采用知识共享署名-相同方式共享许可协议授权。",
        "版权所有 © 2024 示例公司。保留所有权利。隐私政策 | 使用条款 | 联系我们",
        "分享本页：微博、微信、电子邮件。打印本页。",
        "本页内容对您有帮助吗？是 / 否。报告本页问题。",
        "订阅我们的新闻简报，每周第一时间获取最新动态。",
    ],
}


# --------------------------------------------------------------------------- the set


@dataclass
class Corpus:
    lang: str
    texts: list[str]
    sources: Counter[str]
    originals: int
    #: (original row, copy row, edit type), rows after shuffling
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    sets: list[frozenset[str]] = field(default_factory=list)
    #: (i, j) -> Jaccard, i < j, for every pair >= the lower bound
    jaccard: dict[tuple[int, int], float] = field(default_factory=dict)
    threshold: float = 0.8

    def truth(self) -> list[tuple[int, int]]:
        return [p for p, j in self.jaccard.items() if j >= self.threshold]


def is_traditional(text: str) -> bool:
    return converter("t2s").convert(text) != text


def edit_typo(text: str, lang: str, rng: random.Random, pool: Sequence[str]) -> str:
    rate = rng.uniform(0.01, 0.06)
    if lang == "en":
        return re.sub(r"[A-Za-z]{3,}", lambda m: typo(m[0], rng) if rng.random() < rate else m[0], text)
    return HAN.sub(lambda m: rng.choice(pool) if rng.random() < rate else m[0], text)


def edit_words(text: str, lang: str, rng: random.Random, pool: Sequence[str]) -> str:
    """Insert, delete or replace 1-5% of the words (Chinese: two-character runs)."""
    rate = rng.uniform(0.01, 0.05)
    pattern = re.compile(r"[A-Za-z]+" if lang == "en" else f"{HAN.pattern}{{2}}")
    sep = " " if lang == "en" else ""

    def change(m: re.Match[str]) -> str:
        if rng.random() >= rate:
            return m[0]
        op = rng.randrange(3)
        if op == 0:
            return ""
        if op == 1:
            return rng.choice(pool)
        return m[0] + sep + rng.choice(pool)

    return re.sub(r"  +", " ", pattern.sub(change, text))


def edit_reorder(text: str, lang: str, rng: random.Random) -> str:
    parts = sentences(text, lang)
    if len(parts) < 2:
        half = len(text) // 2
        return text[half:] + "\n" + text[:half]
    i, j = sorted(rng.sample(range(len(parts)), 2))
    parts[i], parts[j] = parts[j], parts[i]
    return (" " if lang == "en" else "").join(parts)


def edit_add_boilerplate(text: str, lang: str, rng: random.Random) -> str:
    lines = rng.sample(BOILERPLATE[lang], rng.choice((1, 1, 2)))
    for line in lines:
        text = f"{line}\n{text}" if rng.random() < 0.5 else f"{text}\n{line}"
    return text


def edit_truncate(text: str, lang: str, rng: random.Random) -> str:
    cut = round(len(text) * (1 - rng.uniform(0.05, 0.3)))
    if lang == "en":
        space = text.rfind(" ", 0, cut)
        cut = space if space > len(text) // 2 else cut
    return text[:cut].rstrip()


def edit_script(text: str, lang: str, rng: random.Random) -> str:
    return converter("tw2sp" if is_traditional(text) else "s2twp").convert(text)


def make_edit(kind: str, text: str, lang: str, rng: random.Random, pools: dict[str, list[str]]) -> str:
    if kind == "typo":
        return edit_typo(text, lang, rng, pools["chars"])
    if kind == "word_edit":
        return edit_words(text, lang, rng, pools["words"])
    return {
        "reorder": edit_reorder,
        "add_boilerplate": edit_add_boilerplate,
        "punct": punct,
        "truncate": edit_truncate,
        "script": edit_script,
    }[kind](text, lang, rng)


def build_corpus(lang: str, docs: list[tuple[str, str]], originals: int, seed: int) -> Corpus:
    """The documents, their edited copies (edit recorded), shuffled together."""
    rng = random.Random(f"{seed}-{lang}-quality")
    texts = [t for _, t in docs]
    if lang == "en":
        words = sorted({w for t in texts for w in re.findall(r"\b[a-z]{4,}\b", t)})
        pools = {"chars": words, "words": words}
    else:
        pools = {
            "chars": sorted({c for t in texts for c in HAN.findall(t)}),
            "words": sorted({w for t in texts for w in re.findall(f"{HAN.pattern}{{2}}", t)}),
        }
    edits: list[tuple[int, int, str]] = []
    for i in sorted(rng.sample(range(len(texts)), min(originals, len(texts)))):
        bare = texts[i]
        if rng.random() < 0.5:  # a page with a site's header or footer; one copy lacks it
            line = rng.choice(BOILERPLATE[lang])
            texts[i] = f"{line}\n{bare}" if rng.random() < 0.5 else f"{bare}\n{line}"
            edits.append((i, len(texts), "remove_boilerplate"))
            texts.append(bare)
        for kind in EDITS[lang]:
            if kind != "remove_boilerplate":
                edits.append((i, len(texts), kind))
                texts.append(make_edit(kind, texts[i], lang, rng, pools))
    order = list(range(len(texts)))
    rng.shuffle(order)
    new_row = {old: new for new, old in enumerate(order)}
    return Corpus(
        lang,
        [texts[old] for old in order],
        Counter(s for s, _ in docs),
        len(docs),
        sorted((new_row[o], new_row[c], kind) for o, c, kind in edits),
    )


# --------------------------------------------------------------------------- scoring


def components(n: int, pairs: Sequence[tuple[int, int]]) -> list[int]:
    """Union-find: each row's component (its smallest row)."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [find(x) for x in range(n)]


def score(group: Sequence[int], c: Corpus) -> dict[str, Any]:
    """Scores of a keep-first grouping: group[i] is the group of row i."""
    n = len(group)
    truth = c.truth()
    sizes = Counter(group)
    predicted = sum(m * (m - 1) // 2 for m in sizes.values())
    tp = sum(group[a] == group[b] for a, b in truth)
    p = tp / predicted if predicted else 1.0
    r = tp / len(truth) if truth else 1.0
    out: dict[str, Any] = {
        "P": p,
        "R": r,
        "F1": 2 * p * r / (p + r) if p + r else 0.0,
        "pred": predicted,
        "largest": max(sizes.values()),
    }
    bands: Counter[str] = Counter()
    for (a, b), j in c.jaccard.items():
        if j < c.threshold and group[a] == group[b]:
            bands["fp >= 0.7" if j >= 0.7 else "fp 0.5-0.7"] += 1
    out["fp >= 0.7"] = bands["fp >= 0.7"]
    out["fp 0.5-0.7"] = bands["fp 0.5-0.7"]
    out["fp < 0.5"] = predicted - tp - sum(bands.values())
    hits: Counter[str] = Counter()
    for o, v, kind in c.edits:
        if c.jaccard.get((min(o, v), max(o, v)), 0.0) >= c.threshold:
            hits[kind] += group[o] == group[v]
    for kind, total in positives(c).items():
        out[f"R_{kind}"] = hits[kind] / total if total else float("nan")
    # B-cubed against the connected components of the truth graph.
    true = components(n, truth)
    tsize, both = Counter(true), Counter(zip(group, true))
    bp = sum(both[group[i], true[i]] / sizes[group[i]] for i in range(n)) / n
    br = sum(both[group[i], true[i]] / tsize[true[i]] for i in range(n)) / n
    out["B3 F1"] = 2 * bp * br / (bp + br)
    return out


def positives(c: Corpus) -> Counter[str]:
    """Original-copy pairs of each edit type that are near-duplicates by the truth."""
    n: Counter[str] = Counter({kind: 0 for kind in EDITS[c.lang]})
    for o, v, kind in c.edits:
        n[kind] += c.jaccard.get((min(o, v), max(o, v)), 0.0) >= c.threshold
    return n


_CORPORA: dict[str, Corpus] = {}  # set before the process pool forks


def run_simdedup(lang: str, row: Row) -> tuple[list[int], float]:
    """Keep-first groups from the library's dedup(), and documents per second."""
    c = _CORPORA[lang]
    settings, verify, sketch = row
    docs = [Document(str(i), t, b"") for i, t in enumerate(c.texts)]
    dd = Deduplicator(settings)
    if verify is not None:
        dd = VerifyingDeduplicator(settings, min_jaccard=verify, sketcher=sketcher(sketch, c.texts))
    t0 = time.perf_counter()
    decisions = list(dedup(docs, settings, deduplicator=dd))
    elapsed = time.perf_counter() - t0
    kept_row: dict[int, int] = {}
    group = []
    for i, d in enumerate(decisions):
        if d.status == "unique":
            kept_row[d.row] = i  # type: ignore[index]
            group.append(i)
        elif d.status == "duplicate":
            group.append(kept_row[d.row])  # type: ignore[index]
        else:
            group.append(i)
    return group, len(docs) / elapsed


def run_minhash(lang: str, script_fold: bool, lsh_threshold: float = 0.8) -> tuple[list[int], float]:
    """datasketch MinHash LSH, keep-first, each candidate verified with exact Jaccard >= 0.8.

    At threshold 0.8 datasketch picks 9 bands of 13 rows: a pair at Jaccard 0.8 becomes a
    candidate with probability 0.40 only; a lower LSH threshold finds more candidates."""
    from datasketch import MinHash, MinHashLSH

    c = _CORPORA[lang]
    t0 = time.perf_counter()
    sets = [truth_set(t, lang, script_fold) for t in c.texts]
    hashes = MinHash.bulk([[s.encode() for s in x] for x in sets], num_perm=128)
    lsh = MinHashLSH(threshold=lsh_threshold, num_perm=128)
    group = []
    for i, (s, m) in enumerate(zip(sets, hashes)):
        best, best_j = i, 0.0
        for j in sorted(lsh.query(m)) if s else ():
            inter = len(s & sets[j])
            jac = inter / (len(s) + len(sets[j]) - inter)
            if jac >= 0.8 and jac > best_j:
                best, best_j = group[j], jac
        if best == i and s:
            lsh.insert(i, m)
        group.append(best)
    return group, len(sets) / (time.perf_counter() - t0)


def warm_up(docs: int = 200) -> None:
    """Run each method once, untimed, on each set's first documents: what a library
    loads on first use (jieba's and opencc's dictionaries, datasketch's permutations)
    is then not charged to whichever row happens to run first. Before the pool forks,
    so that every worker starts warm."""
    from datasketch import MinHash

    for lang, c in _CORPORA.items():
        list(dedup([Document(str(i), t, b"") for i, t in enumerate(c.texts[:docs])]))
        for fold in (False, True):
            sets = [truth_set(t, lang, fold) for t in c.texts[:docs]]
            MinHash.bulk([[s.encode() for s in x] for x in sets], num_perm=128)


def run(task: tuple[str, str, Any]) -> tuple[str, str, dict[str, Any]]:
    name, lang, arg = task
    group, rate = run_minhash(lang, *arg) if name.startswith("MinHash") else run_simdedup(lang, arg)
    out = score(group, _CORPORA[lang])
    out["docs/s"] = rate
    return name, lang, out


# --------------------------------------------------------------------------- --grid

# English and Chinese function words, for the "without stop words" candidate.
_STOP = """
a an the and or but if of to in on at by for with from as is are was were be been being it its this
that these those not no can may will would should could do does did has have had which who what when
where how than then there so such also into over under about after before any all each other more most
some only own same very just 的 了 是 在 和 与 或 及 也 都 就 而 着 之 于 为 以 被 把 让 从 对 等 中 上 下
个 这 那 其 该 此 将 已 可 能 会 要 不 有
"""
STOP_WORDS = frozenset(_STOP.split())
ONE_ASCII = re.compile(r"[a-z0-9]")


def _grid_weights() -> dict[str, Callable[[list[str]], dict[str, float]]]:
    """Weightings tried on the same tokens: simdedup's own, and candidates it does not have."""

    def simdedup_weights(weights: str) -> Callable[[list[str]], dict[str, float]]:
        settings = Settings(weights=weights)  # type: ignore[arg-type]
        return lambda tokens: weigh(tokens, settings)

    def keep_all_if_empty(tokens: list[str], kept: dict[str, float]) -> dict[str, float]:
        return kept or dict(Counter(tokens))

    return {
        "tf (default)": simdedup_weights("tf"),
        "binary": simdedup_weights("binary"),
        "tfidf (jieba's IDF)": simdedup_weights("tfidf"),
        "sublinear tf, 1 + ln tf": lambda t: {w: 1 + math.log(c) for w, c in Counter(t).items()},
        "sqrt tf": lambda t: {w: math.sqrt(c) for w, c in Counter(t).items()},
        "tf capped at 8": lambda t: {w: min(c, 8) for w, c in Counter(t).items()},
        "tf without stop words": lambda t: keep_all_if_empty(
            t, {w: c for w, c in Counter(t).items() if w not in STOP_WORDS}
        ),
        "tf without 1-char ASCII tokens": lambda t: keep_all_if_empty(
            t, {w: c for w, c in Counter(t).items() if not ONE_ASCII.fullmatch(w)}
        ),
    }


GRID_KS = (3, 4, 5, 6)


def keep_first_groups(fps: Sequence[int | None], settings: Settings) -> list[int]:
    """Keep-first groups of given fingerprints, from the library's Deduplicator."""
    decisions = Deduplicator(settings).decide_many([Document(str(i), "", b"") for i in range(len(fps))], fps)
    kept_row: dict[int, int] = {}
    group = []
    for i, d in enumerate(decisions):
        if d.status == "duplicate":
            group.append(kept_row[d.row])  # type: ignore[index]
        else:
            if d.status == "unique":
                kept_row[d.row] = i  # type: ignore[index]
            group.append(i)
    return group


def run_grid(lang: str) -> list[tuple[str, int, dict[str, Any]]]:
    """Weightings x distances on tokens made once, the script fold's opencc configuration,
    and the default's spread over feature-hash seeds."""
    c = _CORPORA[lang]
    out = []
    tokens = [tokenize(t, Settings()) for t in c.texts]
    for name, weights in _grid_weights().items():
        fps = fingerprint_batch([weights(t) for t in tokens], 64, FeatureHasher(64))
        out += [(name, k, score(keep_first_groups(fps, Settings(distance=k)), c)) for k in GRID_KS]
    for seed in range(6):
        s = Settings(seed=seed)
        fps = fingerprint_batch([weigh(t, s) for t in tokens], 64, FeatureHasher(64, seed))
        out.append((f"tf (default), hash seed {seed}", s.distance, score(keep_first_groups(fps, s), c)))
    if lang == "zh":
        for config in ("t2s", "hk2s", None):
            features.SCRIPT_FOLD = config or features.SCRIPT_FOLD
            features._script_folder.cache_clear()
            s = Settings(fold=config is not None)
            fps = fingerprint_batch([weigh(tokenize(t, s), s) for t in c.texts], 64, FeatureHasher(64))
            out += [
                (f"tf, fold {config or 'off'}", k, score(keep_first_groups(fps, replace(s, distance=k)), c))
                for k in (3, 4)
            ]
        features.SCRIPT_FOLD = "tw2sp"
        features._script_folder.cache_clear()
    return out


# --------------------------------------------------------------------------- sketches


class Gathered:
    """What VerifyingDeduplicator asks of a sketch besides similarity(), for the ones
    here: pair_similarity() by gathering the rows (the library's compiled loop reads
    them where they are), below `at_least` as -1.0 as it gives them."""

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def pair_similarity(
        self, a: np.ndarray, a_rows: np.ndarray, b: np.ndarray, b_rows: np.ndarray, at_least: float = 0.0
    ) -> np.ndarray:
        sims = self.similarity(a[a_rows], b[b_rows])
        return np.where(sims < at_least, -1.0, sims)

    def verified_pairs(
        self,
        a: np.ndarray,
        a_has: np.ndarray,
        b: np.ndarray,
        b_has: np.ndarray,
        pairs: tuple[np.ndarray, ...],
        at_least: float,
    ) -> tuple[np.ndarray, ...]:
        """The pairs (q, rows, d) that reach `at_least` or lack a sketch, with their
        similarities (NaN: a side has none)."""
        q, rows, d = pairs
        sims = np.full(len(q), np.nan)
        both = a_has[q] & b_has[rows]
        sims[both] = self.similarity(a[q[both]], b[rows[both]])
        keep = ~(sims < at_least)
        return q[keep], rows[keep], d[keep], sims[keep]

    def exact_rows(self, sketches: np.ndarray) -> np.ndarray:
        """None of these sketches is an exact sketch in sketch.OnePermutation's sense."""
        return np.zeros(len(sketches), bool)

    def as_bins(self, sketches: np.ndarray) -> np.ndarray:
        return sketches

    def check(self, sketches: np.ndarray) -> None:
        pass

    def exact_most(self) -> int:
        return 0


@dataclass(frozen=True)
class ExactShingles(Gathered):
    """The reference for sketches: every distinct shingle hash, sorted, zero-padded to
    `width` (which must hold the largest document), so Jaccard is exact."""

    width: int

    @property
    def nbytes(self) -> int:
        return 8 * self.width

    @property
    def spec(self) -> str:
        return f"exact-{self.width}"

    def sketch(self, hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        out = np.zeros((len(counts), self.width), np.uint64)
        for d, run in enumerate(np.split(hashes, np.cumsum(counts)[:-1])):
            distinct = np.unique(run)
            if len(distinct) > self.width:
                raise ValueError(f"{len(distinct)} shingles do not fit in {self.width}")
            out[d, : len(distinct)] = distinct
        return out.view(np.uint8)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        common, union = self._counts(a, b)
        return np.where(union > 0, common / np.maximum(union, 1), 1.0)

    def bins_in_either(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The distinct shingles of the two (the union), as verify.too_few_bins reads it."""
        return self._counts(a, b)[1]

    @staticmethod
    def _counts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = a.view(np.uint64), b.view(np.uint64)
        common, union = np.empty(len(a), np.int64), np.empty(len(a), np.int64)
        for lo in range(0, len(a), 256):  # a slice's sort stays within a few MB
            both = np.sort(np.concatenate([a[lo : lo + 256], b[lo : lo + 256]], axis=1), axis=1)
            common[lo : lo + 256] = ((both[:, 1:] == both[:, :-1]) & (both[:, 1:] != 0)).sum(axis=1)
            union[lo : lo + 256] = (both != 0).sum(axis=1) - common[lo : lo + 256]
        return common, union


@dataclass(frozen=True)
class BottomK(Gathered):
    """The k smallest distinct 32-bit shingle hashes (their top bits), padded with 2**32 - 1;
    Jaccard is estimated on the k smallest of the union (exact below k shingles)."""

    k: int

    @property
    def nbytes(self) -> int:
        return 4 * self.k

    @property
    def spec(self) -> str:
        return f"bottom-{self.k}x32"

    def sketch(self, hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        doc = np.repeat(np.arange(len(counts), dtype=np.uint64), counts)
        keys = np.unique((doc << np.uint64(32)) | (hashes >> np.uint64(32)))
        doc_of = (keys >> np.uint64(32)).astype(np.intp)
        rank = np.arange(len(keys)) - np.searchsorted(doc_of, doc_of)
        out = np.full((len(counts), self.k), 0xFFFFFFFF, np.uint32)
        keep = rank < self.k
        out[doc_of[keep], rank[keep]] = keys[keep].astype(np.uint32)
        return out.view(np.uint8)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        both = np.sort(np.concatenate([a.view(np.uint32), b.view(np.uint32)], axis=1), axis=1)
        pad = both == 0xFFFFFFFF
        new = np.ones_like(pad)
        new[:, 1:] = both[:, 1:] != both[:, :-1]
        shared = np.zeros_like(pad)
        shared[:, :-1] = both[:, 1:] == both[:, :-1]
        first_k = new & ~pad & (np.cumsum(new & ~pad, axis=1) <= self.k)
        union = first_k.sum(axis=1)
        return np.where(union > 0, (first_k & shared).sum(axis=1) / np.maximum(union, 1), 1.0)

    def bins_in_either(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The distinct hashes the two keep (the union below 2k), as verify.too_few_bins reads it."""
        both = np.sort(np.concatenate([a.view(np.uint32), b.view(np.uint32)], axis=1), axis=1)
        new = np.ones(both.shape, bool)
        new[:, 1:] = both[:, 1:] != both[:, :-1]
        return (new & (both != 0xFFFFFFFF)).sum(axis=1)


def sketcher(spec: str, texts: Sequence[str]) -> Sketcher:
    """'' (the library's), 'exact' (wide enough for texts), 'oph:BINS:BITS' or 'bottomk:K'."""
    name, *args = spec.split(":") if spec else ["default"]
    if name == "default" and not args:
        return SKETCH
    if name == "exact" and not args:
        _, counts = shingle_hashes(texts)
        return ExactShingles(max(1, int(counts.max(initial=0))))
    if name == "oph" and len(args) == 2:
        return OnePermutation(int(args[0]), int(args[1]))
    if name == "bottomk" and len(args) == 1:
        return BottomK(int(args[0]))
    raise SystemExit(f"sketch={spec!r}: expected exact, oph:BINS:BITS or bottomk:K")


def sketch_speeds(specs: Sequence[str], docs: int = 1024) -> list[list[str]]:
    """Microseconds per document to sketch the first `docs` texts of each corpus (best of 5),
    beside the fingerprints of the same texts."""
    lines = []
    for lang in LANGS:
        texts = _CORPORA[lang].texts[:docs]
        jobs: dict[str, Callable[[Sequence[str]], object]] = {
            "fingerprints (text_batch_fingerprints)": lambda t: text_batch_fingerprints(t, Settings()),
            "shingle hashes only": shingle_hashes,
        }
        for spec in dict.fromkeys(specs):
            sk = sketcher(spec, texts)
            jobs[f"{sk} ({sk.nbytes} B)"] = lambda t, sk=sk: sk.sketch(*shingle_hashes(t))
        for name, job in jobs.items():
            job(texts)
            best = math.inf
            for _ in range(5):
                t0 = time.perf_counter()
                job(texts)
                best = min(best, time.perf_counter() - t0)
            lines.append([name, lang, str(len(texts)), f"{1e6 * best / len(texts):.1f}"])
    return lines


# --------------------------------------------------------------------------- settings


#: Settings for the fingerprints, the minimum Jaccard of --verify (None: no
#: verification), and how verification sketches the shingles (see sketcher()).
Row = tuple[Settings, float | None, str]


def parse_settings(spec: str) -> Row:
    """'weights=tf,distance=4,verify=0.8,sketch=exact'
    -> (Settings(weights='tf', distance=4), 0.8, 'exact')."""
    types = {f.name: f.type for f in fields(Settings)}
    kwargs: dict[str, Any] = {}
    verify: float | None = MIN_JACCARD  # as the CLI: verified unless verify=off
    sketch = ""
    for item in filter(None, spec.split(",")):
        key, _, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if key == "verify":
            verify = None if value.strip().lower() in ("off", "none", "no") else float(value)
            continue
        if key == "sketch":
            sketcher(value.strip(), [])  # fail early on a bad spec
            sketch = value.strip()
            continue
        if key not in types:
            raise SystemExit(f"--settings: unknown field {key!r} (fields: {', '.join(types)})")
        value = value.strip()
        if "bool" in str(types[key]):
            kwargs[key] = value.lower() in ("1", "true", "yes", "on")
        elif "int" in str(types[key]):
            kwargs[key] = int(value)
        else:
            kwargs[key] = value
    return replace(Settings(), **kwargs), verify, sketch


def presets() -> list[tuple[str, Row]]:
    """The rows scored when no --settings is given: the defaults (k = 4, verified at 0.8
    with sketches), the defaults before verification (k = 3, --no-verify), each change
    on its own, the script fold off, other distances, and exact Jaccard instead of the
    sketch."""
    default = Settings()
    k = default.distance
    return [
        (f"simdedup defaults (k = {k}, verified)", (default, MIN_JACCARD, "")),
        ("--no-verify -k 3 (the defaults before)", (replace(default, distance=3), None, "")),
        (f"--no-verify (k = {k})", (default, None, "")),
        ("-k 3", (replace(default, distance=3), MIN_JACCARD, "")),
        ("--no-fold", (replace(default, fold=False), MIN_JACCARD, "")),
        ("-k 5", (replace(default, distance=5), MIN_JACCARD, "")),
        ("-k 6", (replace(default, distance=6), MIN_JACCARD, "")),
        ("-k 8", (replace(default, distance=8), MIN_JACCARD, "")),
        (f"exact Jaccard (k = {k})", (default, MIN_JACCARD, "exact")),
        ("-k 6, exact Jaccard", (replace(default, distance=6), MIN_JACCARD, "exact")),
    ]


# --------------------------------------------------------------------------- report

SHORT = {
    "typo": "typo",
    "word_edit": "words",
    "reorder": "reord",
    "add_boilerplate": "+bp",
    "remove_boilerplate": "-bp",
    "punct": "punct",
    "truncate": "trunc",
    "script": "script",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--en-docs", type=int, default=2500, help="English documents, at most (default 2500)")
    ap.add_argument("--zh-docs", type=int, default=2500, help="Chinese documents, at most (default 2500)")
    ap.add_argument("--originals", type=int, default=400, help="documents per language that get copies")
    ap.add_argument(
        "--jaccard", type=Fraction, default=Fraction(4, 5), help="near-duplicate: Jaccard >= this"
    )
    ap.add_argument("--lower", type=Fraction, default=Fraction(1, 2), help="Jaccard kept for pairs >= this")
    ap.add_argument("--settings", action="append", default=[], metavar="FIELD=VALUE,...")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--grid", action="store_true", help="also score the weighting grid (about 2 more minutes)"
    )
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    picked = build_documents(args.en_docs, args.zh_docs, args.seed, min_han=8)
    corpora = {lang: build_corpus(lang, picked[lang], args.originals, args.seed) for lang in LANGS}
    log(f"documents and copies: {time.perf_counter() - t0:.1f}s")
    for c in corpora.values():
        c.threshold = float(args.jaccard)
        c.sets = [truth_set(t, c.lang, script_fold=True) for t in c.texts]
        c.jaccard = jaccard_scores(c.sets, args.lower.limit_denominator(1000))
    log(f"ground truth: {time.perf_counter() - t0:.1f}s")

    rows = [(spec, parse_settings(spec)) for spec in args.settings] or presets()
    tasks: list[tuple[str, str, Any]] = []
    for lang in LANGS:
        tasks += [("MinHash LSH", lang, (False, 0.8)), ("MinHash LSH, script fold", lang, (True, 0.8))]
        tasks += [("MinHash LSH 0.6, script fold", lang, (True, 0.6))]
        tasks += [(name, lang, s) for name, s in rows]
    global _CORPORA
    _CORPORA = corpora
    warm_up()
    # The documents and their truth are millions of objects that no method needs
    # traversed: without this, the full collections they cost fall in some rows and not
    # others (the first simdedup row in Chinese, one run each: 6,461 docs/s without,
    # 8,031 with).
    gc.collect()
    gc.freeze()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("fork")) as pool:
            results = list(pool.map(run, tasks))
    else:
        results = list(map(run, tasks))
    log(f"runs and scores: {time.perf_counter() - t0:.1f}s")

    digest = hashlib.sha256("\x00".join(t for c in corpora.values() for t in c.texts).encode()).hexdigest()
    print(f"# simdedup quality benchmark (seed {args.seed}, set digest {digest[:16]})\n")
    print(f"simdedup {revision()}, fingerprint spec {FINGERPRINT_SPEC_VERSION}\n")
    for name, (s, verify, sketch) in rows:
        print(f"- {name}: {s}" + (f", verify={verify}, sketch={sketch or SKETCH}" if verify else ""))
    print()
    for c in corpora.values():
        truth = c.truth()
        true_largest = max(Counter(components(len(c.texts), truth)).values())
        pos = positives(c)
        made = Counter(kind for _, _, kind in c.edits)
        print(
            f"{c.lang}: {c.originals} documents + {len(c.edits)} edited copies = {len(c.texts)}; "
            f"{len(truth)} near-duplicate pairs (Jaccard >= {c.threshold:g}), "
            f"{len(c.jaccard) - len(truth)} more pairs >= {float(args.lower):g}; "
            f"largest true component {true_largest}"
        )
        print("    sources: " + ", ".join(f"{src} {n}" for src, n in sorted(c.sources.items())))
        print(
            "    copies still near-duplicates: "
            + ", ".join(f"{kind} {pos[kind]}/{made[kind]}" for kind in EDITS[c.lang])
        )
    print()
    header = [
        "method",
        "lang",
        "P",
        "R",
        "F1",
        "B3 F1",
        "largest",
        "FP J>=.7",
        "FP .5-.7",
        "FP <.5",
        "docs/s",
    ]
    lines = []
    for name, lang, out in results:
        lines.append(
            [name, lang, fmt(out["P"]), fmt(out["R"]), fmt(out["F1"]), fmt(out["B3 F1"]), str(out["largest"])]
            + [str(out[k]) for k in ("fp >= 0.7", "fp 0.5-0.7", "fp < 0.5")]
            + [f"{out['docs/s']:,.0f}"]
        )
    print("## Pairs, clusters and speed\n")
    print(table(lines, header))
    print("\n## Recall per edit type (original-copy pairs that are near-duplicates by the truth)\n")
    for lang in LANGS:
        header = ["method"] + [SHORT[k] for k in EDITS[lang]]
        lines = [
            [f"{name} ({lang})"] + [fmt(out[f"R_{k}"]) for k in EDITS[lang]]
            for name, la, out in results
            if la == lang
        ]
        print(table(lines, header) + "\n")
    specs = [sketch for _, (_, verify, sketch) in rows if verify is not None and sketch != "exact"]
    if specs:
        print("## Sketching speed (microseconds per document, the first documents of each set)\n")
        print(table(sketch_speeds(specs), ["sketch", "lang", "docs", "us/doc"]) + "\n")
    if args.grid:
        print_grid(args.jobs)
    log(f"total: {time.perf_counter() - t0:.1f}s")
    return 0


def print_grid(jobs: int) -> None:
    if jobs > 1:
        with ProcessPoolExecutor(jobs, mp_context=get_context("fork")) as pool:
            grids = dict(zip(LANGS, pool.map(run_grid, LANGS)))
    else:
        grids = {lang: run_grid(lang) for lang in LANGS}
    print("## Grid: weightings and distances on the same tokens (no --verify)\n")
    print("F1 / largest group at each k; P and R at k=3. Candidates that are not simdedup options are")
    print("computed here from simdedup's tokens and fingerprinted with fingerprint_batch.\n")
    names = list(dict.fromkeys(name for name, _, _ in grids["en"]))
    header = ["weighting"] + [f"{lang} {m}" for lang in LANGS for m in ("P k3", "R k3")]
    header += [f"{lang} k={k}" for lang in LANGS for k in GRID_KS]
    rows = []
    for name in names:
        got = {(lang, k): out for lang in LANGS for n, k, out in grids[lang] if n == name}
        if not all((lang, k) in got for lang in LANGS for k in GRID_KS):
            continue  # the seed rows: the default distance only, in the table after this one
        row = [name] + [fmt(got[lang, 3][m]) for lang in LANGS for m in ("P", "R")]
        row += [f"{got[lang, k]['F1']:.3f} / {got[lang, k]['largest']}" for lang in LANGS for k in GRID_KS]
        rows.append(row)
    print(table(rows, header))
    k = Settings().distance
    print(f"\n## The default fingerprint's spread over feature-hash seeds (k={k}, no --verify)\n")
    rows = [
        [name]
        + [f"{out['F1']:.3f} / {out['largest']}" for lang in LANGS for n, k, out in grids[lang] if n == name]
        for name in dict.fromkeys(n for n, _, _ in grids["en"] if "seed" in n)
    ]
    print(table(rows, ["setting", "en F1 / largest", "zh F1 / largest"]))
    print("\n## The script fold's opencc configuration (zh, tf)\n")
    rows = [
        [
            f"{n}, k={k}",
            fmt(out["P"]),
            fmt(out["R"]),
            fmt(out["F1"]),
            str(out["largest"]),
            fmt(out["R_script"]),
        ]
        for n, k, out in grids["zh"]
        if n.startswith("tf, fold")
    ]
    print(table(rows, ["setting", "P", "R", "F1", "largest", "script R"]))
    print()


if __name__ == "__main__":
    sys.exit(main())
