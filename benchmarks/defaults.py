"""Choose simdedup's default fingerprint settings by measurement on real text.

What it measures
    For each candidate Settings (tokenizer, ngram, shingle, weights, top_k) at
    distance k = 3, how well "fingerprints within k bits" finds the near-duplicate
    pairs of a corpus: pair-level precision, recall and F1, per language, plus the
    recall per kind of edit. Every setting is also scored at k = 2..6: the table
    gives each one's best k, and the best setting's full row at each k.

The corpus (offline, from what is on this machine)
    English: /usr/share/common-licenses, a sample of /usr/share/doc/*/copyright,
    docstrings of the Python standard library (read with ast, nothing imported),
    a sample of English man pages (rendered with `man -l`, if man is installed) and
    the METADATA of installed distributions. Chinese: the zh_* gettext catalogs in
    /usr/share/locale (translated messages, consecutive ones packed together), the
    zh_CN / zh_TW man pages, Vim's Chinese tutor and the zh_CN help/catalog files of
    GnuPG and systemd. Text is split into paragraph-sized documents (300-2000
    characters); exact duplicates (after normalization) are dropped.

    A random subset of documents gets one variant per edit type (fixed seed):
    substitute (about 2% of words / Han characters replaced or mistyped), punct
    (reflow, whitespace and punctuation changes, full-/half-width for Chinese),
    add_line (a boilerplate sentence added), del_sentence (one sentence or line
    removed; the second half of a one-sentence document) and truncate (the last
    ~10% dropped).

Ground truth (independent of SimHash)
    Two documents are near-duplicates when the Jaccard similarity of their word
    3-shingles (English) or character 3-grams over word characters (Chinese) is
    >= 0.8 (--jaccard), after NFKC + case folding. It is computed exactly for every
    pair that can reach the threshold (all-pairs prefix filtering, then exact
    verification). Variants whose edit pushed them below it are negatives, not misses.

Run
    .venv/bin/python benchmarks/defaults.py            # about 1-3 minutes on 2 cores
    .venv/bin/python benchmarks/defaults.py --jaccard 0.9 --top 12   # a stricter truth

Deterministic for a given machine: the same files on disk and the same arguments
give the same corpus digest and the same table.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from multiprocessing import get_context

from realtext import (
    HAN,
    WORD,
    build_documents,
    fmt,
    jaccard_pairs,
    log,
    revision,
    table,
    truth_set,
)

from simdedup.features import tokenize, weigh
from simdedup.fingerprint import FeatureHasher, fingerprint_batch, fingerprint_texts
from simdedup.index import near_pairs
from simdedup.settings import FINGERPRINT_SPEC_VERSION, Settings

EDITS = ("substitute", "punct", "add_line", "del_sentence", "truncate")
LANGS = ("en", "zh")
KS = (2, 3, 4, 5, 6)


# --------------------------------------------------------------------------- edits

BOILERPLATE = {
    "en": [
        "This document is provided for information only and may change without notice.",
        "Copyright (c) 2024 Example Corporation. All rights reserved.",
        "For the latest version of this text, see the project's web site.",
        "Please report any errors in this text to the maintainers.",
    ],
    "zh": [
        "本文内容仅供参考，如有变动，恕不另行通知。",
        "版权所有 © 2024 示例公司。保留所有权利。",
        "如发现翻译错误，请向翻译团队报告。",
        "更多信息请访问项目主页。",
    ],
}
TO_FULL = str.maketrans({",": "，", ";": "；", ":": "：", "(": "（", ")": "）", "?": "？", "!": "！"})
TO_HALF = str.maketrans({v: k for k, v in {",": "，", ";": "；", ":": "：", "(": "（", ")": "）"}.items()})


def typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word) - 1)
    if rng.random() < 0.5:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]  # swap two letters
    return word[:i] + word[i + 1 :]  # drop one


def substitute(text: str, lang: str, rng: random.Random, pool: Sequence[str]) -> str:
    """Replace or mistype about 2% of the words (English) or Han characters (Chinese)."""
    pattern = re.compile(r"[A-Za-z]{3,}") if lang == "en" else HAN
    spans = [m.span() for m in pattern.finditer(text)]
    total = len(WORD.findall(text)) if lang == "en" else len(spans)
    n = min(len(spans), max(1, round(0.02 * total)))
    chars = list(text)
    for start, end in sorted(rng.sample(spans, n), reverse=True):
        old = text[start:end]
        if lang == "en":
            new = typo(old, rng) if rng.random() < 0.5 else rng.choice(pool)
        else:
            new = rng.choice(pool)
        chars[start:end] = new
    return "".join(chars)


def punct(text: str, lang: str, rng: random.Random) -> str:
    """Reflow lines and change whitespace and punctuation; the words stay the same."""
    if lang == "en":
        text = re.sub(r"\s+", " ", text).replace(" - ", " -- ").replace("'", "\u2019")
        text = re.sub(r",(?=\s)", lambda m: ";" if rng.random() < 0.3 else ",", text)
        text = re.sub(r"\.(?=\s)", lambda m: ".  " if rng.random() < 0.3 else ".", text)
        return textwrap.fill(text, width=rng.randint(60, 100), break_on_hyphens=False)
    text = text.translate(TO_HALF) if rng.random() < 0.5 else text.translate(TO_FULL)
    # Drop or add the spaces between Han and Latin text, and join the lines.
    if rng.random() < 0.5:
        text = re.sub(rf"(?<={HAN.pattern}) (?=[A-Za-z0-9])|(?<=[A-Za-z0-9]) (?={HAN.pattern})", "", text)
    else:
        text = re.sub(rf"(?<={HAN.pattern})(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?={HAN.pattern})", " ", text)
    return re.sub(r"\s*\n\s*", "", text) if rng.random() < 0.5 else text.replace("\n", "\n\n")


def add_line(text: str, lang: str, rng: random.Random) -> str:
    line = rng.choice(BOILERPLATE[lang])
    return f"{line}\n{text}" if rng.random() < 0.5 else f"{text}\n{line}"


def sentences(text: str, lang: str) -> list[str]:
    splitter = r"(?<=[.!?])\s+|\n" if lang == "en" else r"(?<=[。！？；!?;])|\n"
    return [s for s in re.split(splitter, text) if s.strip()]


def del_sentence(text: str, lang: str, rng: random.Random) -> str:
    parts = sentences(text, lang)
    if len(parts) < 2:
        return text[: len(text) // 2]
    i = rng.randrange(len(parts))
    return (" " if lang == "en" else "").join(parts[:i] + parts[i + 1 :])


def truncate(text: str, lang: str, rng: random.Random) -> str:
    cut = round(len(text) * 0.9)
    if lang == "en":
        space = text.rfind(" ", 0, cut)
        cut = space if space > len(text) // 2 else cut
    return text[:cut].rstrip()


def make_edit(kind: str, text: str, lang: str, rng: random.Random, pool: Sequence[str]) -> str:
    if kind == "substitute":
        return substitute(text, lang, rng, pool)
    edit: Callable[[str, str, random.Random], str] = {
        "punct": punct,
        "add_line": add_line,
        "del_sentence": del_sentence,
        "truncate": truncate,
    }[kind]
    return edit(text, lang, rng)


@dataclass
class Corpus:
    lang: str
    texts: list[str]
    sources: Counter[str]
    originals: int
    #: variant row -> (original row, edit type)
    variants: dict[int, tuple[int, str]] = field(default_factory=dict)
    truth: set[tuple[int, int]] = field(default_factory=set)
    #: each text's ground-truth set (truth_set)
    sets: list[frozenset[str]] = field(default_factory=list)


def build_corpus(lang: str, docs: list[tuple[str, str]], originals: int, seed: int) -> Corpus:
    rng = random.Random(f"{seed}-{lang}-edits")
    texts = [t for _, t in docs]
    if lang == "en":
        pool = sorted({w for t in texts for w in re.findall(r"\b[a-z]{4,}\b", t)})
    else:
        pool = sorted({c for t in texts for c in HAN.findall(t)})
    corpus = Corpus(lang, list(texts), Counter(s for s, _ in docs), len(texts))
    for i in sorted(rng.sample(range(len(texts)), min(originals, len(texts)))):
        for kind in EDITS:
            corpus.variants[len(corpus.texts)] = (i, kind)
            corpus.texts.append(make_edit(kind, texts[i], lang, rng, pool))
    return corpus


# --------------------------------------------------------------------------- ground truth


# --------------------------------------------------------------------------- scoring

#: (tokenizer, ngram, shingle): each is tokenized once, then weighed six ways (one task each).
TOKENIZATIONS: list[tuple[str, int, int]] = [
    ("auto", 3, 1),
    ("auto", 3, 2),
    ("auto", 3, 3),
    ("chars", 2, 1),
    ("chars", 3, 1),
    ("chars", 4, 1),
]
WEIGHTS = ("tf", "binary", "tfidf")
TOP_KS = (0, 64)

_CORPORA: list[Corpus] = []  # set before the process pool forks


def label(s: Settings) -> str:
    tok = f"chars n={s.ngram}" if s.tokenizer == "chars" else f"{s.tokenizer} shingle={s.shingle}"
    return f"{tok} {s.weights} top_k={s.top_k}"


def score(pairs: set[tuple[int, int]], corpus: Corpus) -> dict[str, float]:
    tp = len(pairs & corpus.truth)
    p = tp / len(pairs) if pairs else 1.0
    r = tp / len(corpus.truth) if corpus.truth else 1.0
    out = {"P": p, "R": r, "F1": 2 * p * r / (p + r) if p + r else 0.0, "pred": len(pairs)}
    hits: Counter[str] = Counter()
    for v, (o, kind) in corpus.variants.items():
        if (o, v) in corpus.truth:
            hits[kind] += (o, v) in pairs
    for kind, n in positives(corpus).items():
        out[f"R_{kind}"] = hits[kind] / n if n else float("nan")
    return out


def positives(corpus: Corpus) -> Counter[str]:
    """How many (original, variant) pairs of each edit type are near-duplicates by the truth."""
    n: Counter[str] = Counter({kind: 0 for kind in EDITS})
    for v, (o, kind) in corpus.variants.items():
        n[kind] += (o, v) in corpus.truth
    return n


Result = tuple[Settings, dict[str, dict[int, dict[str, float]]]]


def run_tokenization(tokenization: tuple[str, int, int]) -> list[Result]:
    """Score the six (weights, top_k) settings that share one tokenization, in both languages."""
    tokenizer, ngram, shingle = tokenization
    base = Settings(tokenizer=tokenizer, ngram=ngram, shingle=shingle)  # type: ignore[arg-type]
    tokens = {c.lang: [tokenize(t, base) for t in c.texts] for c in _CORPORA}
    hasher = FeatureHasher(base.bits, base.seed)
    results = []
    for weights in WEIGHTS:
        for top_k in TOP_KS:
            s = Settings(tokenizer=tokenizer, ngram=ngram, shingle=shingle, weights=weights, top_k=top_k)  # type: ignore[arg-type]
            by_lang = {}
            for c in _CORPORA:
                fps = fingerprint_batch([weigh(t, s) for t in tokens[c.lang]], s.bits, hasher)
                # Tokenizing once must give what the library's one call gives.
                assert fps[:5] == fingerprint_texts(c.texts[:5], s), label(s)
                assert all(fp is not None for fp in fps)
                found = near_pairs(fps, s.bits, max(KS))  # type: ignore[arg-type]
                by_lang[c.lang] = {k: score({(i, j) for i, j, d in found if d <= k}, c) for k in KS}
            results.append((s, by_lang))
    return results


# --------------------------------------------------------------------------- report


def prf(en: dict[str, float], zh: dict[str, float]) -> list[str]:
    """Precision, recall and F1 of English, then of Chinese, as table cells."""
    return [fmt(scores[m]) for scores in (en, zh) for m in ("P", "R", "F1")]


def misses(s: Settings, corpora: Sequence[Corpus], threshold: Fraction, k: int = 3) -> str:
    """The Jaccard of the false positives, and the recall on short and on longer documents."""
    near = float(threshold) - 0.1
    bands = ("< 0.5", f"0.5-{near:g}", f"{near:g}-{float(threshold):g}")
    lines = []
    for c in corpora:
        found = {(i, j) for i, j, _ in near_pairs(fingerprint_texts(c.texts, s), s.bits, k)}  # type: ignore[arg-type]
        counts: Counter[str] = Counter()
        for i, j in found - c.truth:
            jac = len(c.sets[i] & c.sets[j]) / len(c.sets[i] | c.sets[j])
            counts[bands[0] if jac < 0.5 else bands[1] if jac < near else bands[2]] += 1
        by_band = ", ".join(f"{b}: {counts[b]}" for b in bands)
        lines.append(f"{c.lang}: {len(found - c.truth)} false positives; their Jaccard {by_band}")
        for name, short in (("the shorter one < 500 chars", True), ("both >= 500 chars", False)):
            pairs = [p for p in c.truth if (min(len(c.texts[p[0]]), len(c.texts[p[1]])) < 500) == short]
            recall = fmt(sum(p in found for p in pairs) / len(pairs)) if pairs else "-"
            lines.append(f"    recall on the {len(pairs)} true pairs with {name}: {recall}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--en-docs", type=int, default=1500, help="English documents to sample (default 1500)")
    ap.add_argument(
        "--zh-docs", type=int, default=1500, help="Chinese documents to sample, at most (default 1500)"
    )
    ap.add_argument(
        "--originals", type=int, default=250, help="documents per language that get edited variants"
    )
    ap.add_argument("--jaccard", type=Fraction, default=Fraction(4, 5), help="ground truth: Jaccard >= this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    ap.add_argument("--top", type=int, default=36, help="rows of the main table to print")
    args = ap.parse_args(argv)
    threshold = args.jaccard.limit_denominator(1000)
    if not 0 < threshold <= 1:
        ap.error("--jaccard must be in (0, 1]")
    t0 = time.perf_counter()

    picked = build_documents(args.en_docs, args.zh_docs, args.seed)
    log(f"read corpus: {time.perf_counter() - t0:.1f}s")
    corpora = [build_corpus(lang, picked[lang], args.originals, args.seed) for lang in LANGS]
    for c in corpora:
        c.sets = [truth_set(t, c.lang) for t in c.texts]
        c.truth = jaccard_pairs(c.sets, threshold)
    log(f"variants and ground truth: {time.perf_counter() - t0:.1f}s")

    digest = hashlib.sha256("\x00".join(t for c in corpora for t in c.texts).encode()).hexdigest()[:16]
    print(f"# simdedup default-settings benchmark (seed {args.seed}, corpus digest {digest})\n")
    print(f"simdedup {revision()}, fingerprint spec {FINGERPRINT_SPEC_VERSION}\n")
    for c in corpora:
        chars = sum(len(t) for t in c.texts[: c.originals])
        print(
            f"{c.lang}: {c.originals} documents ({chars / c.originals:.0f} chars on average) "
            f"+ {len(c.variants)} variants = {len(c.texts)}; "
            f"{len(c.truth)} near-duplicate pairs (Jaccard >= {float(threshold):g})"
        )
        for source, n in sorted(c.sources.items()):
            print(f"    {n:5d}  {source}")
        pos = positives(c)
        natural = sum(1 for i, j in c.truth if j < c.originals)
        varied = len(c.variants) // len(EDITS)
        per_edit = ", ".join(f"{k} {pos[k]}/{varied}" for k in EDITS)
        print(
            f"    original-variant pairs still >= {float(threshold):g}: {per_edit};"
            f" pairs among the originals: {natural}"
        )
    print()

    global _CORPORA
    _CORPORA = corpora
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("fork")) as pool:
            results = [r for rs in pool.map(run_tokenization, TOKENIZATIONS) for r in rs]
    else:
        results = [r for rs in map(run_tokenization, TOKENIZATIONS) for r in rs]
    log(f"fingerprints and scores: {time.perf_counter() - t0:.1f}s")

    default = Settings()

    def mean_f1(r: Result, k: int = 3) -> float:
        return sum(r[1][lang][k]["F1"] for lang in LANGS) / len(LANGS)

    def best_k(r: Result) -> int:
        return max(KS, key=lambda k: (mean_f1(r, k), -k))

    results.sort(key=lambda r: (-mean_f1(r), label(r[0])))

    print("## All settings at k=3, by mean F1 of en and zh (* = the current Settings() default)\n")
    print("best k: the k in 2..6 with the highest mean F1 for that setting, and that F1.\n")
    rows = []
    for rank, r in enumerate(results[: args.top], 1):
        s, res = r
        en, zh = res["en"][3], res["zh"][3]
        star = "*" if s == default else ""
        rows.append(
            [
                f"{rank:2d} {label(s)}{star}",
                *prf(en, zh),
                fmt(mean_f1(r)),
                str(best_k(r)),
                fmt(mean_f1(r, best_k(r))),
            ]
        )
    print(
        table(
            rows,
            ["setting", "en P", "en R", "en F1", "zh P", "zh R", "zh F1", "mean F1", "best k", "F1 @best k"],
        )
    )

    print("\n## Recall per edit type at k=3 (top 10 settings)\n")
    short = {
        "substitute": "subst",
        "punct": "punct",
        "add_line": "add",
        "del_sentence": "del",
        "truncate": "trunc",
    }
    header = ["setting"] + [f"{lang} {short[k]}" for lang in LANGS for k in EDITS]
    rows = [
        [f"{rank:2d} {label(s)}"] + [fmt(res[lang][3][f"R_{k}"]) for lang in LANGS for k in EDITS]
        for rank, (s, res) in enumerate(results[:10], 1)
    ]
    print(table(rows, header))

    also = "" if results[0][0] == default else " and for the current default"
    print(f"\n## Distance k for the best setting{also}\n")
    picks = [results[0]] + [r for r in results if r[0] == default and r is not results[0]]
    rows = []
    for s, res in picks:
        for k in KS:
            en, zh = res["en"][k], res["zh"][k]
            rows.append(
                [
                    f"{label(s)} k={k}",
                    *prf(en, zh),
                    fmt((en["F1"] + zh["F1"]) / 2),
                ]
                + [fmt(res[lang][k][f"R_{e}"]) for lang in LANGS for e in ("add_line", "truncate")]
            )
    print(
        table(
            rows,
            [
                "setting",
                "en P",
                "en R",
                "en F1",
                "zh P",
                "zh R",
                "zh F1",
                "mean F1",
                "en add",
                "en trunc",
                "zh add",
                "zh trunc",
            ],
        )
    )
    print(f"\n## Where the best setting errs at k=3 ({label(results[0][0])})\n")
    print(misses(results[0][0], corpora, threshold))
    log(f"total: {time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
