"""Benchmark simdedup against baselines measured in the same run.

The corpus is generated, deterministic for a given --seed: English-like documents of
about 640 bytes, words drawn from a 50,000-word Zipf vocabulary (exponent 1.1; the top
ranks are real English function words, the rest made up), 30% of each document's words
from one of 1,000 topics (--topic-share), and about 10% near-duplicates: copies of
earlier documents with 1-3 word substitutions, insertions or deletions.

What it measures:

* Throughput in documents per second:
  - the floor: a bare ``re.findall(r"\\w+", text)`` pass over the same texts;
  - simdedup end to end in-process (text -> fingerprint, default Settings, batches
    of simdedup.dedup.BATCH_SIZE as the CLI makes them), and the same with the
    verification sketch made in the same pass, as the default scan's workers do;
  - the fingerprint stage alone on the same word features (64 bits, term-frequency
    weights): simdedup's ``fingerprint_batch`` against the PyPI ``simhash.Simhash``,
    with its default md5 feature hash and with simdedup's xxh3_64 (which must then
    give identical fingerprints);
  - the real CLI once, end to end: ``simdedup scan FILE --format tsv -q`` in a subprocess,
    verified (the default) and with ``--no-verify``, and ``simdedup fingerprint FILE``,
    each with --jobs 1 and 2.
* All-pairs near-duplicate search, k = 3: simdedup's ``near_pairs`` (a BlockIndex) on the
  corpus fingerprints and on as many uniform random 64-bit fingerprints (real text
  makes hot buckets), and the PyPI ``simhash.SimhashIndex`` (k = 3) on the first
  --pypi-docs of the same fingerprints, and on its own md5 ones. SimhashIndex is slow
  (quadratic in a hot bucket), hence the bound.
* Correctness: near_pairs must equal a brute-force numpy all-pairs (popcount of XOR)
  on the first --check-docs fingerprints, and SimhashIndex's pairs must equal near_pairs'.

Ratios are simdedup / baseline, so they are comparable across machines. Timings are
reported, never asserted; the exit status is 1 only when a correctness check fails.

Run:  make bench                                  (20,000 documents, ~1-2 minutes on 2 cores)
      .venv/bin/python benchmarks/bench.py --docs 50000 --seed 1
      .venv/bin/python benchmarks/bench.py --full   (200,000 documents: about 10 minutes)
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TypeVar

import numpy as np
import scaling
import simhash
import xxhash

from simdedup import BlockIndex, FeatureHasher, Settings, extract, fingerprint_batch, near_pairs
from simdedup.dedup import BATCH_SIZE
from simdedup.fingerprint import fingerprint_texts
from simdedup.sketch import fingerprints_and_sketches

T = TypeVar("T")

K = 3
BITS = 64
DOC_BYTES = 640
DUP_FRACTION = 0.10
VOCAB_SIZE = 50_000
ZIPF_EXPONENT = 1.1
#: Each original document is on one of TOPICS topics: TOPIC_SHARE of its words come from
#: its topic's TOPIC_WORDS words (Zipf-distributed too). Without topics every document is
#: an i.i.d. draw dominated by the same few frequent words, so their fingerprints crowd
#: together far more than real text's do (see README.md).
TOPICS = 1_000
TOPIC_WORDS = 200
TOPIC_SHARE = 0.3

#: The most frequent English words take the top Zipf ranks; the rest are made up.
_COMMON_WORDS = (
    "the of and to a in is it you that he was for on are with as i his they be at one have "
    "this from or had by not word but what some we can out other were all there when up use "
    "your how said an each she which do their time if will way about many then them write "
    "would like so these her long make thing see him two has look more day could go come did "
    "number sound no most people my over know water than call first who may down side been now"
)
COMMON = tuple(_COMMON_WORDS.split())
ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "tr")
NUCLEI = ("a", "e", "i", "o", "u", "ea", "ou", "ai")
CODAS = ("", "", "n", "r", "s", "t", "l", "nd", "ng")


# ---------------------------------------------------------------- corpus


@dataclass
class Corpus:
    texts: list[str]
    #: (source, copy) document numbers of the planted near-duplicates.
    planted: list[tuple[int, int]] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(len(t.encode("utf-8")) for t in self.texts)

    def digest(self) -> str:
        h = hashlib.sha256()
        for t in self.texts:
            h.update(t.encode("utf-8") + b"\n")
        return h.hexdigest()[:12]


def make_vocabulary(rng: np.random.Generator, size: int = VOCAB_SIZE) -> list[str]:
    """COMMON, then distinct made-up words of 1-4 syllables, in Zipf rank order."""
    words = list(dict.fromkeys(COMMON))
    seen = set(words)
    while len(words) < size:
        count = size - len(words)
        syllables = rng.integers(1, 5, size=count)
        parts = (rng.integers(len(ONSETS), size=(count, 4)), rng.integers(len(NUCLEI), size=(count, 4)))
        codas = rng.integers(len(CODAS), size=(count, 4))
        for n, on, nu, co in zip(syllables, *parts, codas):
            word = "".join(ONSETS[on[s]] + NUCLEI[nu[s]] + CODAS[co[s]] for s in range(n))
            if word not in seen:
                seen.add(word)
                words.append(word)
    return words


def zipf_cdf(size: int, exponent: float = ZIPF_EXPONENT) -> np.ndarray:
    """Cumulative probabilities of ranks 1..size with P(rank r) proportional to r ** -exponent."""
    cdf = np.cumsum(np.arange(1, size + 1, dtype=np.float64) ** -exponent)
    return cdf / cdf[-1]


def zipf_draws(cdf: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    """`size` vocabulary numbers (0 = most frequent) drawn by Zipf's law."""
    return np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), len(cdf) - 1)


def sentences(words: Sequence[str], rng: np.random.Generator) -> str:
    """Words as sentences of 6-17 words: capitalized, ending with a period."""
    out, i = [], 0
    while i < len(words):
        n = int(rng.integers(6, 18))
        chunk = list(words[i : i + n])
        chunk[0] = chunk[0].capitalize()
        out.append(" ".join(chunk) + ".")
        i += n
    return " ".join(out)


@dataclass
class Language:
    """What documents are drawn from: a Zipf vocabulary and topics over it."""

    vocab: list[str]
    lengths: np.ndarray  # bytes of each word with its space
    cdf: np.ndarray  # Zipf over the whole vocabulary
    topics: np.ndarray  # TOPICS x TOPIC_WORDS vocabulary numbers, from below the COMMON head
    topic_cdf: np.ndarray  # Zipf within a topic
    topic_share: float

    @classmethod
    def make(cls, rng: np.random.Generator, topic_share: float) -> Language:
        vocab = make_vocabulary(rng)
        topics = rng.integers(len(COMMON), len(vocab), size=(TOPICS, TOPIC_WORDS))
        lengths = np.array([len(w) + 1 for w in vocab])
        return cls(vocab, lengths, zipf_cdf(len(vocab)), topics, zipf_cdf(TOPIC_WORDS), topic_share)


def original_document(lang: Language, rng: np.random.Generator) -> str:
    """About DOC_BYTES bytes on one topic: topic_share of the words from it, the rest from anywhere."""
    n = DOC_BYTES // 2  # every word takes at least 2 bytes with its space: always enough
    topic = lang.topics[rng.integers(len(lang.topics))]
    anywhere = zipf_draws(lang.cdf, rng, n)
    topical = topic[zipf_draws(lang.topic_cdf, rng, n)]
    ids = np.where(rng.random(n) < lang.topic_share, topical, anywhere)
    end = int(np.searchsorted(np.cumsum(lang.lengths[ids]), DOC_BYTES)) + 1
    return sentences([lang.vocab[i] for i in ids[:end]], rng)


def edited_copy(text: str, lang: Language, rng: np.random.Generator) -> str:
    """A copy of `text` with 1-3 edits, each a word substitution, insertion or deletion."""
    words = text.split(" ")
    edits = int(rng.integers(1, 4))
    for op, new in zip(rng.integers(3, size=edits), zipf_draws(lang.cdf, rng, edits)):
        at = int(rng.integers(len(words)))
        if op == 0:
            words[at] = lang.vocab[new]
        elif op == 1:
            words.insert(at, lang.vocab[new])
        elif len(words) > 1:
            del words[at]
    return " ".join(words)


def make_corpus(count: int, seed: int, topic_share: float = TOPIC_SHARE) -> Corpus:
    """`count` documents; about DUP_FRACTION of them are edited copies of earlier ones."""
    rng = np.random.default_rng(seed)
    lang = Language.make(rng, topic_share)
    corpus = Corpus([])
    for i in range(count):
        if i and rng.random() < DUP_FRACTION:
            src = int(rng.integers(i))
            corpus.texts.append(edited_copy(corpus.texts[src], lang, rng))
            corpus.planted.append((src, i))
        else:
            corpus.texts.append(original_document(lang, rng))
    return corpus


# ---------------------------------------------------------------- timing


def cpu_timed(fn: Callable[[], T]) -> tuple[float, T]:
    """The CPU time of one call in this process (single-threaded passes), and its result:
    unlike wall time it holds up when other jobs share the machine, and it compares
    with the CLI's docs per CPU second."""
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """The wall time of one call, and its result."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def chunks(items: Sequence[T], size: int = BATCH_SIZE) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


# ---------------------------------------------------------------- throughput


def tokenize_floor(texts: Sequence[str]) -> int:
    word = re.compile(r"\w+")
    return sum(len(word.findall(t)) for t in texts)


def simdedup_end_to_end(texts: Sequence[str], settings: Settings | None = None) -> list[int | None]:
    """Text -> fingerprint as the pipeline does it: default Settings, one hasher, batches."""
    settings = settings or Settings()
    hasher = FeatureHasher(settings.bits, settings.seed)
    fps: list[int | None] = []
    for batch in chunks(texts):
        fps.extend(fingerprint_texts(batch, settings, hasher))
    return fps


def simdedup_with_sketches(texts: Sequence[str], compiled: bool = True) -> list[int | None]:
    """Text -> fingerprint and verification sketch, as the default (verified) scan makes
    them: one pass per batch (sketch.fingerprints_and_sketches), ASCII text through the
    compiled core (compiled_text); with compiled=False all of it by the numpy path."""
    settings = Settings()
    hasher = FeatureHasher(settings.bits, settings.seed)
    fps: list[int | None] = []
    for batch in chunks(texts):
        fps.extend(fingerprints_and_sketches(batch, settings, hasher, compiled)[0])
    return fps


def word_features(texts: Sequence[str]) -> list[dict[str, float]]:
    """simdedup's word features (normalized, \\w+ tokens, term-frequency weights)."""
    settings = Settings(tokenizer="words")
    return [extract(t, settings) for t in texts]


def simdedup_fingerprint_stage(features: Sequence[dict[str, float]]) -> list[int | None]:
    hasher = FeatureHasher(BITS)
    fps: list[int | None] = []
    for batch in chunks(features):
        fps.extend(fingerprint_batch(batch, BITS, hasher))
    return fps


def pypi_fingerprints(features: Sequence[dict[str, int]], hashfunc: Callable | None = None) -> list[int]:
    """simhash.Simhash on the same features; integer weights take its fast path."""
    kw = {"hashfunc": hashfunc} if hashfunc else {}
    return [simhash.Simhash(f, f=BITS, **kw).value for f in features]


@dataclass
class CliRuns:
    """The real CLI on the corpus file, each run once, CPU time from os.wait4."""

    docs: int
    #: "scan 1", "scan 2" (--jobs; verified, the default), "scan-no-verify 1", "scan-no-verify 2",
    #: "fingerprint 1", "fingerprint 2"
    runs: dict[str, scaling.Run]
    start_up: scaling.Run
    lines: int
    #: --jobs 2 wrote the same bytes as --jobs 1 (scan groups and fingerprints)
    same_output: bool
    #: two busy processes / one, measured just before the --jobs runs (2.0: two idle cores)
    capacity: float

    def per_cpu(self, what: str) -> float:
        return self.docs / self.runs[what].cpu

    def per_wall(self, what: str) -> float:
        return self.docs / self.runs[what].wall

    def loop_rate(self, what: str) -> float:
        """docs/s of the read-decide-write loop alone (the CLI's own --summary-json)."""
        seconds = self.runs[what].summary.get("seconds")
        return self.docs / seconds if seconds else float("nan")


#: The CLI runs: name -> (command, its options after FILE). The default scan verifies.
CLI_RUNS = {
    "scan": ("scan", ["--format", "tsv", "-q"]),
    "scan-no-verify": ("scan", ["--format", "tsv", "-q", "--no-verify"]),
    "fingerprint": ("fingerprint", []),
}


def cli_label(name: str) -> str:
    """The run "scan-no-verify 2" as a command line: simdedup scan FILE --no-verify --jobs 2."""
    what, jobs = name.split()
    command, extra = CLI_RUNS[what]
    flags = "".join(f" {x}" for x in extra if x == "--no-verify")
    return f"simdedup {command} FILE{flags} --jobs {jobs}"


def run_cli(path: str, docs: int, workdir: str, jobs: Sequence[int] = (1, 2), repeat: int = 1) -> CliRuns:
    """`simdedup scan FILE --format tsv -q` (verified, the default, and with --no-verify)
    and `simdedup fingerprint FILE` with each --jobs, and `simdedup --version` for the
    start-up alone: `repeat` round-robin passes, keeping each command's run with the
    shortest wall time (a single run on a shared machine can be 40% slow)."""
    cmd = scaling.simdedup_command()
    start_up = scaling.run_measured([*cmd, "--version"])
    capacity = scaling.parallel_capacity()
    runs: dict[str, scaling.Run] = {}
    outputs = {}
    for _ in range(repeat):
        for name, (command, extra) in CLI_RUNS.items():
            for j in jobs:
                out_path = os.path.join(workdir, f"{name}{j}.out")
                summary = os.path.join(workdir, f"{name}{j}.json") if command == "scan" else None
                with open(out_path, "wb") as out:
                    run = scaling.run_measured([*cmd, command, path, *extra, "--jobs", str(j)], out, summary)
                if run.status:
                    raise RuntimeError(f"{cli_label(f'{name} {j}')} failed: {run.stderr}")
                key = f"{name} {j}"
                if key not in runs or run.wall < runs[key].wall:
                    runs[key] = run
                outputs[name, j] = Path(out_path).read_bytes()
    same = all(outputs[c, j] == outputs[c, jobs[0]] for c, j in outputs)
    return CliRuns(docs, runs, start_up, outputs["scan", jobs[0]].count(b"\n"), same, capacity)


# ---------------------------------------------------------------- all pairs


def pypi_near_pairs(fps: Sequence[int]) -> list[tuple[int, int, int]]:
    """near_pairs with simhash.SimhashIndex: query each fingerprint, then add it."""
    index = simhash.SimhashIndex([], f=BITS, k=K)
    pairs = []
    for j, fp in enumerate(fps):
        h = simhash.Simhash(fp, f=BITS)
        pairs.extend((int(i), j, (fp ^ fps[int(i)]).bit_count()) for i in index.get_near_dups(h))
        index.add(str(j), h)
    pairs.sort()
    return pairs


def _popcount64(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x)
    table = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)
    return table[x.view(np.uint8)].reshape(*x.shape, 8).sum(axis=-1)


def brute_force_pairs(fps: Sequence[int], k: int = K, rows: int = 512) -> list[tuple[int, int, int]]:
    """Every (i, j, d) with i < j and popcount(fps[i] ^ fps[j]) = d <= k, by numpy."""
    arr = np.array(fps, dtype=np.uint64)
    pairs = []
    for start in range(0, len(arr), rows):
        block = arr[start : start + rows]
        dist = _popcount64(block[:, None] ^ arr[None, :])
        i, j = np.nonzero(dist <= k)
        i += start
        keep = i < j
        pairs.extend(zip(i[keep].tolist(), j[keep].tolist(), dist[i[keep] - start, j[keep]].tolist()))
    pairs.sort()
    return pairs


def random_fingerprints(count: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed + 1)
    return rng.integers(0, 2**64, size=count, dtype=np.uint64).tolist()


# ---------------------------------------------------------------- measuring


Pairs = list[tuple[int, int, int]]


@dataclass
class Throughput:
    docs: int
    #: measurement -> best seconds
    seconds: dict[str, float]
    #: simdedup's fingerprints of every document (None for an empty one)
    fps: list[int | None]
    #: the fingerprint stage's, and PyPI Simhash's with md5 and with xxh3_64
    stage_fps: list[int | None]
    md5_fps: list[int]
    xxh_fps: list[int]
    cli: CliRuns
    pybind: scaling.Pybind
    #: the same fingerprints by the numpy path, without the compiled core
    numpy_fps: list[int | None]

    def rate(self, what: str) -> float:
        return self.docs / self.seconds[what]


def measure_throughput(texts: Sequence[str], repeat: int) -> Throughput:
    """Each in-process pass `repeat` times, round-robin, so that a slow spell of a shared
    machine hits every pass alike; the best time of each counts. Then the CLI, once."""
    features = word_features(texts)
    int_features = [{t: int(w) for t, w in f.items()} for f in features]
    passes: dict[str, Callable[[], list]] = {
        "floor": lambda: [tokenize_floor(texts)],
        "e2e": lambda: simdedup_end_to_end(texts),
        "e2e_sketch": lambda: simdedup_with_sketches(texts),
        "e2e_numpy": lambda: simdedup_with_sketches(texts, compiled=False),
        "stage": lambda: simdedup_fingerprint_stage(features),
        "md5": lambda: pypi_fingerprints(int_features),
        "xxh": lambda: pypi_fingerprints(int_features, xxhash.xxh3_64_intdigest),
    }
    seconds = dict.fromkeys(passes, float("inf"))
    results: dict[str, list] = {}
    for _ in range(repeat):
        for name, run_pass in passes.items():
            elapsed, results[name] = cpu_timed(run_pass)
            seconds[name] = min(seconds[name], elapsed)
    with tempfile.TemporaryDirectory(prefix="simdedup-bench-") as workdir:
        path = scaling.write_lines(texts, os.path.join(workdir, "corpus.txt"))
        cli = run_cli(path, len(texts), workdir, repeat=min(repeat, 3))
        pybind = scaling.run_pybind(path, min(repeat, 3))
    seconds["cli"] = cli.runs["scan 1"].wall
    r = results
    fps = r["e2e"]
    return Throughput(len(texts), seconds, fps, r["stage"], r["md5"], r["xxh"], cli, pybind, r["e2e_numpy"])


@dataclass
class AllPairs:
    real: list[int]
    rand: list[int]
    #: measurement -> (fingerprints, seconds, pairs)
    runs: dict[str, tuple[int, float, Pairs]]

    def seconds(self, what: str) -> float:
        return self.runs[what][1]

    def pairs(self, what: str) -> Pairs:
        return self.runs[what][2]


def measure_all_pairs(
    fps: Sequence[int | None], md5_fps: Sequence[int], pypi_docs: int, seed: int
) -> AllPairs:
    real = [fp for fp in fps if fp is not None]
    own = [md5 for fp, md5 in zip(fps, md5_fps) if fp is not None]
    rand = random_fingerprints(len(real), seed)
    m = min(pypi_docs, len(real))
    # near_pairs at K, not its default distance (the settings' default, 4, since 8dfd602)
    at_k = functools.partial(near_pairs, bits=BITS, distance=K)
    jobs: dict[str, tuple[Sequence[int], Callable[[Sequence[int]], Pairs]]] = {
        "real": (real, at_k),
        "rand": (rand, at_k),
        "prefix": (real[:m], at_k),
        "pypi": (real[:m], pypi_near_pairs),
        "pypi_own": (own[:m], pypi_near_pairs),
    }
    if m == len(real):
        del jobs["prefix"]
    runs = {}
    for name, (data, fn) in jobs.items():
        seconds, pairs = timed(lambda data=data, fn=fn: fn(data))
        runs[name] = (len(data), seconds, pairs)
    runs.setdefault("prefix", runs["real"])
    return AllPairs(real, rand, runs)


def prefix_pairs(fps: Sequence[int], pairs: Pairs, count: int) -> Pairs:
    """near_pairs of fps[:count], reusing `pairs` (those of all fps) when count covers them."""
    return pairs if count == len(fps) else near_pairs(fps[:count], BITS, K)


def run_checks(
    corpus: Corpus, tp: Throughput, ap: AllPairs, check_docs: int
) -> list[tuple[str, bool | None, str]]:
    """(check, passed or None for information only, detail)."""
    c = min(check_docs, len(ap.real))
    expected = brute_force_pairs(ap.real[:c])
    random_expected = brute_force_pairs(ap.rand[:c])
    equal_fps = sum(a == b for a, b in zip(tp.xxh_fps, tp.stage_fps))
    pypi, mine, own = ap.pairs("pypi"), ap.pairs("prefix"), ap.pairs("pypi_own")
    m = ap.runs["prefix"][0]
    fps = tp.fps
    within = sum(
        fps[a] is not None and fps[b] is not None and (fps[a] ^ fps[b]).bit_count() <= K  # type: ignore[operator]
        for a, b in corpus.planted
    )
    planted = len(corpus.planted)
    pybind_fps = tp.pybind.runs.get("xxh3", (0.0, []))[1]
    return [
        (
            f"near_pairs == brute-force numpy, first {c:,}",
            prefix_pairs(ap.real, ap.pairs("real"), c) == expected,
            f"{len(expected):,} pairs",
        ),
        (
            f"same on uniform random fingerprints, first {c:,}",
            prefix_pairs(ap.rand, ap.pairs("rand"), c) == random_expected,
            f"{len(random_expected):,} pairs",
        ),
        (
            "PyPI Simhash(xxh3_64) == simdedup fingerprints",
            equal_fps == tp.docs,
            f"{equal_fps:,} of {tp.docs:,}",
        ),
        (
            "compiled core == numpy path, fingerprints",
            tp.numpy_fps == tp.fps,
            f"{sum(a == b for a, b in zip(tp.numpy_fps, tp.fps)):,} of {tp.docs:,}",
        ),
        (
            f"PyPI SimhashIndex == near_pairs, same fps ({m:,})",
            pypi == mine,
            f"{len(pypi):,} vs {len(mine):,} pairs",
        ),
        (
            f"PyPI SimhashIndex on its own md5 fps ({m:,})",
            None,
            f"{len(own):,} vs {len(mine):,} pairs: md5 feature hashes give other fingerprints",
        ),
        (
            "planted near-duplicates within k",
            None,
            f"{within:,} of {planted:,} ({within / max(1, planted):.0%})",
        ),
        (
            "simhash-pybind(xxh3_64) == simdedup fingerprints",
            (sum(a == b for a, b in zip(pybind_fps, fps)) == tp.docs) if pybind_fps else None,
            f"{sum(a == b for a, b in zip(pybind_fps, fps)):,} of {tp.docs:,}" if pybind_fps else "not run",
        ),
        ("CLI --jobs 2 output == --jobs 1 (scan, fingerprint)", tp.cli.same_output, "byte for byte"),
        ("CLI output lines (tsv duplicate groups)", None, f"{tp.cli.lines:,}"),
    ]


# ---------------------------------------------------------------- report


def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def table(title: str, header: Sequence[str], rows: list[Sequence[object]], align: str = "") -> str:
    """A plain text table; `align` has an "l" or "r" per column (default: "l" then "r"s)."""
    align = align or "l" + "r" * (len(header) - 1)
    cells = [list(header)] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [title]
    for r in cells:
        padded = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align)]
        lines.append(("  " + "  ".join(padded)).rstrip())
    return "\n".join(lines) + "\n"


def machine() -> str:
    load = f", load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs{load}, "
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"simhash {version('simhash')}, simdedup {version('simdedup')} at commit {commit()}"
    )


def commit() -> str:
    """The simdedup checkout's short commit, "+" when it has changes; "?" outside git."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        )
    except OSError:
        return "?"
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "") if head.returncode == 0 else "?"


def say(text: str = "") -> None:
    print(text, flush=True)


def throughput_table(tp: Throughput) -> str:
    labels = {
        "floor": 're.findall(r"\\w+", text) only: the floor',
        "e2e": "simdedup text -> fingerprint, in-process",
        "e2e_sketch": "  the same + verification sketch (the default)",
        "e2e_numpy": "    the same by the numpy path (no compiled core)",
        "stage": "simdedup fingerprint stage, from features",
        "md5": "PyPI Simhash, same features, md5 (default)",
        "xxh": "PyPI Simhash, same features, xxh3_64",
    }
    # In-process passes are timed in CPU seconds; the CLI rows give wall and CPU.
    rows = [(label, f"{tp.seconds[k]:.2f}", "", _num(tp.rate(k))) for k, label in labels.items()]
    for name, (cpu, _) in tp.pybind.runs.items():
        label = f"simhash-pybind (C++), same tokens, {'xxh3_64' if name == 'xxh3' else 'its md5'}"
        rows.append((label, "", "", _num(tp.docs / cpu)))
    if tp.pybind.error:
        rows.append((f"simhash-pybind: not run ({tp.pybind.error})", "", "", ""))
    cli = tp.cli
    for name, run in cli.runs.items():
        scan = name.startswith("scan")
        label = f"CLI: {cli_label(name)}" + (" (wall: run loop)" if scan else "")
        wall = f"{run.wall:.2f}"
        rate = _num(cli.per_wall(name))
        if scan:
            rate += f" ({_num(cli.loop_rate(name))})"
        rows.append((label, wall, rate, _num(cli.per_cpu(name))))
    rows.append(("CLI start-up alone: simdedup --version", f"{cli.start_up.wall:.2f}", "", ""))
    header = ("measurement", "seconds", "docs/s", "docs/CPU s")
    return table(f"Throughput, {tp.docs:,} documents", header, rows)


def all_pairs_table(ap: AllPairs) -> str:
    labels = {
        "real": "simdedup near_pairs, corpus",
        "rand": "simdedup near_pairs, uniform random",
        "prefix": "simdedup near_pairs, corpus prefix",
        "pypi": "PyPI SimhashIndex, same fingerprints",
        "pypi_own": "PyPI SimhashIndex, its own md5 ones",
    }
    if ap.runs["prefix"] is ap.runs["real"]:
        del labels["prefix"]  # the PyPI comparison is on every fingerprint
    rows = [
        (label, f"{ap.runs[k][0]:,}", f"{ap.runs[k][1]:.2f}", f"{len(ap.runs[k][2]):,}")
        for k, label in labels.items()
    ]
    header = ("measurement", "fingerprints", "seconds", "pairs")
    return table(f"All-pairs near-duplicates, k = {K}", header, rows)


def index_table(ap: AllPairs) -> str:
    rows = []
    for name, fps in (("corpus", ap.real), ("uniform random", ap.rand)):
        s = BlockIndex.from_fingerprints(fps, BITS, K).stats()
        share = s.largest_bucket / max(1, s.fingerprints)
        rows.append(
            (
                name,
                f"{s.fingerprints:,}",
                f"{s.largest_bucket:,} ({share:.1%})",
                f"{s.tables:,}",
                getattr(s, "depth", "-"),
            )
        )
    header = ("fingerprints", "count", "largest bucket", "tables", "depth")
    return table("BlockIndex.stats() with every fingerprint added", header, rows)


def ratio_table(tp: Throughput, ap: AllPairs) -> str:
    m, n = ap.runs["prefix"][0], len(ap.real)
    rows = [
        (
            "end-to-end / re.findall, docs per CPU s",
            f"{tp.rate('e2e') / tp.rate('floor'):.3f}",
            "higher: better",
        ),
        *cli_ratio_rows(tp.cli, tp.rate("floor"), tp.pybind, "re.findall"),
        ("fingerprint docs/s / PyPI Simhash, md5", f"{tp.rate('stage') / tp.rate('md5'):.2f}", "> 1: faster"),
        (
            "fingerprint docs/s / PyPI Simhash, xxh3",
            f"{tp.rate('stage') / tp.rate('xxh'):.2f}",
            "> 1: faster",
        ),
        (
            f"all-pairs time / PyPI SimhashIndex ({m:,})",
            f"{ap.seconds('prefix') / ap.seconds('pypi'):.3f}",
            "< 1: faster",
        ),
        (
            f"all-pairs time, corpus / uniform random ({n:,})",
            f"{ap.seconds('real') / ap.seconds('rand'):.1f}",
            "the cost of hot buckets",
        ),
    ]
    return table("Ratios, simdedup / baseline", ("comparison", "ratio", "read as"), rows, align="lrl")


def cli_ratio_rows(
    cli: CliRuns, floor: float, pybind: scaling.Pybind | None, floor_name: str
) -> list[tuple[str, str, str]]:
    """The issue 5 targets: the CLI against the floor and the C++ baseline, and --jobs."""
    rows = [
        (
            f"CLI scan --jobs 1 / {floor_name}, docs per CPU s",
            f"{cli.per_cpu('scan 1') / floor:.3f}",
            "target >= 0.7 (0.9 Chinese)",
        ),
        (
            f"  the same, run loop only (--summary-json, wall) / {floor_name}",
            f"{cli.loop_rate('scan 1') / floor:.3f}",
            "no start-up, wall time",
        ),
        (
            f"CLI scan --no-verify --jobs 1 / {floor_name}, docs per CPU s",
            f"{cli.per_cpu('scan-no-verify 1') / floor:.3f}",
            "verification's cost: the gap to the first row",
        ),
    ]
    for name, (cpu, _) in pybind.runs.items() if pybind else ():
        rows.append(
            (
                f"CLI scan --jobs 1 / simhash-pybind {name}, per CPU s",
                f"{cli.per_cpu('scan 1') / (cli.docs / cpu):.2f}",
                "target >= 1.5" if name == "xxh3" else "> 1: faster",
            )
        )
    rows.append(
        (
            "two busy processes / one, throughput (wall)",
            f"{cli.capacity:.2f}",
            "the machine's free cores just then: --jobs 2's ceiling",
        )
    )
    for command in ("scan", "scan-no-verify", "fingerprint"):
        shown = command.replace("-no-verify", " --no-verify")
        rows.append(
            (
                f"CLI {shown} --jobs 2 / --jobs 1, docs/s (wall)",
                f"{cli.per_wall(command + ' 2') / cli.per_wall(command + ' 1'):.2f}",
                "target >= 1.8 on 2 cores",
            )
        )
        rows.append(
            (
                f"  CPU time of {shown} --jobs 2 / --jobs 1",
                f"{cli.runs[command + ' 2'].cpu / cli.runs[command + ' 1'].cpu:.2f}",
                "the pool's overhead: 1.0 is none",
            )
        )
    return rows


def checks_table(checks: list[tuple[str, bool | None, str]]) -> str:
    marks = {True: "ok", False: "FAILED", None: "info"}
    rows = [(name, marks[ok], detail) for name, ok, detail in checks]
    return table("Checks", ("check", "result", "detail"), rows, align="lll")


# ---------------------------------------------------------------- Chinese


@dataclass
class Chinese:
    docs: int
    chars: float
    #: "floor" (bare jieba.lcut) and "e2e" (simdedup text -> fingerprint): best seconds
    seconds: dict[str, float]
    cli: CliRuns

    def rate(self, what: str) -> float:
        return self.docs / self.seconds[what]


def measure_chinese(count: int, seed: int, repeat: int) -> Chinese:
    """Bare jieba.lcut against simdedup, in-process (round-robin, best of `repeat`)
    and through the CLI, on generated Chinese documents."""
    import jieba

    texts = scaling.make_chinese_corpus(count, seed)
    jieba.setLogLevel(logging.WARNING)
    jieba.lcut("预热")  # the dictionary loads once, outside the timings
    fingerprint_texts(texts[:2])  # and so does the script folder
    passes: dict[str, Callable[[], object]] = {
        "floor": lambda: [jieba.lcut(t) for t in texts],
        "e2e": lambda: simdedup_end_to_end(texts),
        "e2e_sketch": lambda: simdedup_with_sketches(texts),
        # the same without folding traditional to simplified (opencc), to show its share
        "e2e_nofold": lambda: simdedup_end_to_end(texts, Settings(fold=False)),
    }
    seconds = dict.fromkeys(passes, float("inf"))
    for _ in range(repeat):
        for name, run_pass in passes.items():
            seconds[name] = min(seconds[name], cpu_timed(run_pass)[0])
    with tempfile.TemporaryDirectory(prefix="simdedup-bench-zh-") as workdir:
        path = scaling.write_lines(texts, os.path.join(workdir, "zh.txt"))
        cli = run_cli(path, len(texts), workdir, repeat=3 if repeat > 1 else 1)
    return Chinese(len(texts), sum(map(len, texts)) / len(texts), seconds, cli)


def chinese_table(zh: Chinese) -> str:
    rows = [
        (
            "jieba.lcut(text) only, default mode: the floor",
            f"{zh.seconds['floor']:.2f}",
            "",
            _num(zh.rate("floor")),
        ),
        ("simdedup text -> fingerprint, in-process", f"{zh.seconds['e2e']:.2f}", "", _num(zh.rate("e2e"))),
        (
            "  the same + verification sketch (the default)",
            f"{zh.seconds['e2e_sketch']:.2f}",
            "",
            _num(zh.rate("e2e_sketch")),
        ),
        (
            "  the same with --no-fold (no opencc)",
            f"{zh.seconds['e2e_nofold']:.2f}",
            "",
            _num(zh.rate("e2e_nofold")),
        ),
    ]
    for name, run in zh.cli.runs.items():
        rate = _num(zh.cli.per_wall(name))
        if name.startswith("scan"):
            rate += f" ({_num(zh.cli.loop_rate(name))})"
        rows.append(
            (
                f"CLI: {cli_label(name)}",
                f"{run.wall:.2f}",
                rate,
                _num(zh.cli.per_cpu(name)),
            )
        )
    header = ("measurement", "seconds", "docs/s", "docs/CPU s")
    title = f"Chinese, {zh.docs:,} documents of {zh.chars:.0f} characters on average"
    ratios = [
        (
            "end-to-end / jieba.lcut, docs per CPU s",
            f"{zh.rate('e2e') / zh.rate('floor'):.3f}",
            "target >= 0.9",
        ),
        ("  the same with --no-fold", f"{zh.rate('e2e_nofold') / zh.rate('floor'):.3f}", "folding's share"),
        *cli_ratio_rows(zh.cli, zh.rate("floor"), None, "jieba.lcut"),
        ("CLI --jobs 2 == --jobs 1 output", "ok" if zh.cli.same_output else "DIFFERENT", "byte for byte"),
    ]
    return (
        table(title, header, rows)
        + "\n"
        + table(
            "Chinese ratios, simdedup / baseline", ("comparison", "ratio", "read as"), ratios, align="lrl"
        )
    )


# ---------------------------------------------------------------- --jobs, start-up aside


def jobs_run(docs: int, zh_docs: int, seed: int, workdir: str) -> tuple[str, list[bool]]:
    """The CLI's --jobs 2 against --jobs 1 on generated files large enough that the
    0.2-0.3 s start-up, paid once by either, no longer decides the ratio: `docs` English
    documents and `zh_docs` Chinese ones, each command best of 2 round-robin passes.
    Returns the table and, per file, whether --jobs 2 wrote the same bytes."""
    files = []
    if docs:
        path = os.path.join(workdir, "en.txt")
        scaling.write_english_file(path, docs, seed)
        files.append(("English", path, docs))
    if zh_docs:
        texts = scaling.make_chinese_corpus(zh_docs, seed)
        path = scaling.write_lines(texts, os.path.join(workdir, "zh.txt"))
        files.append(("Chinese", path, zh_docs))
    rows, same, capacity, targets = [], [], [], []
    for language, path, count in files:
        cli = run_cli(path, count, workdir, repeat=2)
        capacity.append(cli.capacity)
        same.append(cli.same_output)
        if language == "English":  # the one-job targets again, where start-up is a small share
            with open(path, encoding="utf-8") as f:
                texts = f.read().splitlines()
            floor = count / min(cpu_timed(functools.partial(tokenize_floor, texts))[0] for _ in range(2))
            targets = cli_ratio_rows(cli, floor, scaling.run_pybind(path), "re.findall")[:5]
        for command in CLI_RUNS:
            one, two = cli.runs[f"{command} 1"], cli.runs[f"{command} 2"]
            loop = ""
            if command.startswith("scan"):
                loop = f"{cli.loop_rate(command + ' 2') / cli.loop_rate(command + ' 1'):.2f}"
            rows.append(
                (
                    f"{language}, {count:,}",
                    cli_label(f"{command} 2").replace(" --jobs 2", ""),
                    f"{one.wall:.2f}",
                    f"{two.wall:.2f}",
                    f"{one.wall / two.wall:.2f}",
                    loop,
                    f"{two.cpu / one.cpu:.2f}",
                )
            )
    header = ("input", "command", "-j1 s", "-j2 s", "-j2/-j1", "run loop", "CPU -j2/-j1")
    title = (
        "--jobs at size (target >= 1.8 on 2 cores): -j2/-j1 in wall time, start-up included; "
        "run loop: scan's --summary-json seconds, without it\n"
        "two busy processes / one, just before each file: " + ", ".join(f"{c:.2f}" for c in capacity)
    )
    text = table(title, header, rows, align="llrrrrr")
    if targets:
        title = (
            f"English at size ({docs:,} documents): the one-job targets, "
            "the floor and simhash-pybind on the same file"
        )
        text += "\n" + table(title, ("comparison", "ratio", "read as"), targets, align="lrl")
    return text, same


# ---------------------------------------------------------------- --full: scale and memory

_INDEX_LINE = re.compile(r"index: ([\d,]+) fingerprints;.*?([\d.]+) bytes each")


def _mb(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def scale_run(count: int, seed: int, workdir: str) -> str:
    """A `count`-document English scan, the corpus streamed to a file first: time,
    docs/s, CPU, peak memory."""
    path = os.path.join(workdir, f"english-{count}.txt")
    gen_seconds, written = timed(lambda: scaling.write_english_file(path, count, seed))
    size = os.path.getsize(path)
    cmd = scaling.simdedup_command()
    summary = os.path.join(workdir, "scale-summary.json")
    run = scaling.run_measured(
        [*cmd, "scan", path, "--format", "tsv", "-q"], summary=summary, sample_input=path, every=5.0
    )
    os.unlink(path)
    if run.status:
        return f"scale run failed ({run.status}): {run.stderr}\n"
    peak_sum = max((p + w for _, _, p, w in run.samples), default=0)
    rows = [
        ("documents, input size", f"{written:,}, {size / 1e9:.2f} GB (generated in {gen_seconds:.0f} s)"),
        (
            "unique, duplicates, empty",
            f"{run.summary['unique']:,}, {run.summary['duplicates']:,}, {run.summary['empty']:,}",
        ),
        ("wall time", f"{run.wall:,.0f} s ({written / run.wall:,.0f} docs/s)"),
        ("CPU time, workers included", f"{run.cpu:,.0f} s ({written / run.cpu:,.0f} docs per CPU s)"),
        ("peak RSS, largest process (wait4)", f"{_mb(run.max_rss)} MiB"),
        ("peak RSS, all processes together (sampled every 5 s)", f"{_mb(peak_sum)} MiB"),
    ]
    return table(
        f"Scale: simdedup scan of {written:,} English documents", ("measurement", "value"), rows, "ll"
    )


def stream_run(gigabytes: float, seed: int, workdir: str) -> str:
    """`simdedup filter` over a generated file of `gigabytes`, its resident memory
    sampled as it reads: flat apart from the index, which grows with every kept document."""
    path = os.path.join(workdir, "stream.txt")
    gen_seconds, written = timed(lambda: scaling.write_english_file(path, None, seed, int(gigabytes * 1e9)))
    size = os.path.getsize(path)
    cmd = scaling.simdedup_command()
    run = scaling.run_measured([*cmd, "filter", path, "-v"], sample_input=path, every=1.0)
    os.unlink(path)
    if run.status:
        return f"stream run failed ({run.status}): {run.stderr}\n"
    rows = []
    for tenth in range(1, 11):
        at = [s for s in run.samples if s[1] >= 0 and s[1] <= size * tenth / 10]
        if at:
            t, pos, parent, workers = at[-1]
            rows.append((f"{pos / size:.0%}", f"{t:.0f}", _mb(parent), _mb(workers), _mb(parent + workers)))
    match = _INDEX_LINE.search(run.stderr)
    kept, per = (int(match[1].replace(",", "")), float(match[2])) if match else (0, 0.0)
    header = ("input read", "seconds", "parent MiB", "workers MiB", "total MiB")
    title = (
        f"Memory: simdedup filter of a {size / 1e9:.2f} GB file ({written:,} documents, generated in "
        f"{gen_seconds:.0f} s), RSS sampled every second"
    )
    note = (
        f"  the index at the end (-v): {kept:,} kept fingerprints x {per:.0f} bytes = {_mb(kept * per)} MiB, "
        f"their ids extra; wall {run.wall:.0f} s; peak RSS of the largest process {_mb(run.max_rss)} MiB\n"
    )
    return table(title, header, rows) + note


def tree_run(files: int, per_directory: int, seed: int, workdir: str) -> str:
    """`simdedup filter` over a directory of `files` generated English documents, one a
    file: in directories of `per_directory` files, or all in one directory (0). Its
    resident memory sampled every second: the listing of a directory is held while it
    is read, the files are streamed; the index grows with every kept document."""
    source = os.path.join(workdir, "tree.txt")
    gen_seconds, written = timed(lambda: scaling.write_english_file(source, files, seed))
    top = os.path.join(workdir, "tree")
    with open(source, encoding="utf-8") as f:
        for i, line in enumerate(f):
            directory, name = top, f"f{i:07d}.txt"
            if per_directory:
                directory = os.path.join(top, f"d{i // per_directory:05d}")
                name = f"f{i % per_directory:05d}.txt"
            if i == 0 or (per_directory and i % per_directory == 0):
                os.makedirs(directory, exist_ok=True)
            with open(os.path.join(directory, name), "w", encoding="utf-8") as out:
                out.write(line)
    os.unlink(source)
    os.sync()  # the files written, so that their write-back is not timed with the run
    cmd = [*scaling.simdedup_command(), "filter", top, "-v"]
    run = scaling.run_measured(cmd, sample_input=top, every=1.0)
    shutil.rmtree(top)
    if run.status:
        return f"tree run failed ({run.status}): {run.stderr}\n"
    rows = []
    for tenth in range(1, 11):
        at = [s for s in run.samples if s[0] <= run.wall * tenth / 10]
        if at:
            t, _, parent, workers = at[-1]
            rows.append((f"{tenth / 10:.0%}", f"{t:.0f}", _mb(parent), _mb(workers), _mb(parent + workers)))
    match = _INDEX_LINE.search(run.stderr)
    kept, per = (int(match[1].replace(",", "")), float(match[2])) if match else (0, 0.0)
    layout = f"directories of {per_directory:,} files" if per_directory else "one directory"
    title = (
        f"Memory: simdedup filter of {written:,} files in {layout} (generated in {gen_seconds:.0f} s), "
        "RSS sampled every second"
    )
    header = ("of the wall time", "seconds", "parent MiB", "workers MiB", "total MiB")
    note = (
        f"  {written / run.wall:,.0f} documents/s; the index at the end (-v): {kept:,} kept fingerprints x "
        f"{per:.0f} bytes = {_mb(kept * per)} MiB, their ids and sketches extra; wall {run.wall:.0f} s; "
        f"peak RSS of the largest process {_mb(run.max_rss)} MiB\n"
    )
    return table(title, header, rows) + note


# ---------------------------------------------------------------- main


def run(args: argparse.Namespace) -> int:
    logging.getLogger("simhash").setLevel(logging.ERROR)  # "Big bucket found" on every hot query
    seconds, corpus = timed(lambda: make_corpus(args.docs, args.seed, args.topic_share))
    say(
        f"simdedup benchmark: {len(corpus.texts):,} documents ({len(corpus.planted):,} planted "
        f"near-duplicates), {corpus.nbytes / 1e6:.1f} MB, seed {args.seed}, "
        f"topic share {args.topic_share}, corpus sha256 {corpus.digest()} (generated in {seconds:.1f} s)"
    )
    say(f"machine: {machine()}")
    say(
        f"settings: {BITS} bits, word features, term-frequency weights, k = {K}; "
        f"in-process throughput: CPU time, best of {args.repeat} round-robin passes; "
        f"CLI runs and simhash-pybind: the best of {min(args.repeat, 3)} round-robin passes\n"
    )

    tp = measure_throughput(corpus.texts, args.repeat)
    say(throughput_table(tp))
    ap = measure_all_pairs(tp.fps, tp.md5_fps, args.pypi_docs, args.seed)
    say(all_pairs_table(ap))
    say(index_table(ap))
    say(ratio_table(tp, ap))
    checks = run_checks(corpus, tp, ap, args.check_docs)
    if args.zh_docs:
        zh = measure_chinese(args.zh_docs, args.seed, min(args.repeat, 2))  # jieba is slow: best of 2
        say(chinese_table(zh))
        checks.append(("Chinese: CLI --jobs 2 output == --jobs 1", zh.cli.same_output, "byte for byte"))
    if args.jobs_docs or args.jobs_zh_docs:
        with tempfile.TemporaryDirectory(prefix="simdedup-bench-jobs-", dir=args.workdir) as workdir:
            text, same = jobs_run(args.jobs_docs, args.jobs_zh_docs, args.seed, workdir)
        say(text)
        checks.append(("--jobs at size: --jobs 2 output == --jobs 1", all(same), "byte for byte, every file"))
    if args.scale_docs or args.stream_gb or args.tree_files:
        with tempfile.TemporaryDirectory(prefix="simdedup-bench-scale-", dir=args.workdir) as workdir:
            if args.stream_gb:
                say(stream_run(args.stream_gb, args.seed, workdir))
            if args.tree_files:
                say(tree_run(args.tree_files, args.tree_width, args.seed, workdir))
            if args.scale_docs:
                say(scale_run(args.scale_docs, args.seed, workdir))
    say(checks_table(checks))
    failed = [name for name, ok, _ in checks if ok is False]
    if failed:
        say(f"{len(failed)} check(s) FAILED: " + "; ".join(failed))
        return 1
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, help="documents to generate (default 20,000; 200,000 with --full)")
    p.add_argument("--full", action="store_true", help="the larger run: 200,000 documents (slow)")
    p.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    p.add_argument(
        "--pypi-docs",
        type=int,
        help="PyPI SimhashIndex runs on the first N fingerprints (default 20,000; 50,000 with --full)",
    )
    p.add_argument(
        "--check-docs", type=int, default=20_000, help="fingerprints checked by brute force (default 20,000)"
    )
    p.add_argument(
        "--topic-share",
        type=float,
        default=TOPIC_SHARE,
        help=f"share of a document's words from its topic (default {TOPIC_SHARE}; 0: plain Zipf)",
    )
    p.add_argument(
        "--repeat", type=int, help="best of N for the in-process throughput passes (default 5; 1 with --full)"
    )
    p.add_argument(
        "--zh-docs", type=int, help="generated Chinese documents (default 4,000; 20,000 with --full; 0: none)"
    )
    p.add_argument(
        "--jobs-docs",
        type=int,
        default=200_000,
        help="English documents for --jobs where start-up is a small share (default 200,000; 0: none)",
    )
    p.add_argument(
        "--jobs-zh-docs",
        type=int,
        default=20_000,
        help="Chinese documents for the same (default 20,000; 0: none)",
    )
    p.add_argument(
        "--scale-docs",
        type=int,
        help="also scan this many generated English documents from a file (default 10,000,000 with --full)",
    )
    p.add_argument(
        "--stream-gb",
        type=float,
        help="also stream a generated file of this many GB through `filter`, sampling memory (1 with --full)",
    )
    p.add_argument(
        "--tree-files",
        type=int,
        default=0,
        help="also `filter` a directory of this many generated one-document files, sampling memory",
    )
    p.add_argument(
        "--tree-width", type=int, default=1000, help="files per directory for --tree-files (0: one directory)"
    )
    p.add_argument("--workdir", help="where the large generated files go (default: the temporary directory)")
    args = p.parse_args(argv)
    if args.scale_docs is None:
        args.scale_docs = 10_000_000 if args.full else 0
    if args.stream_gb is None:
        args.stream_gb = 1.0 if args.full else 0
    if args.zh_docs is None:
        args.zh_docs = 20_000 if args.full else 4_000
    if args.docs is None:
        args.docs = 200_000 if args.full else 20_000
    if args.repeat is None:
        args.repeat = 1 if args.full else 5
    if args.pypi_docs is None:
        args.pypi_docs = 50_000 if args.full else 20_000
    if args.docs < 2 or args.pypi_docs < 1 or args.check_docs < 1 or args.repeat < 1:
        p.error("--docs must be at least 2; --pypi-docs, --check-docs and --repeat at least 1")
    if not 0 <= args.topic_share <= 1:
        p.error("--topic-share must be between 0 and 1")
    return args


if __name__ == "__main__":
    sys.exit(run(parse_args()))
