"""bench.py's measurements of the real CLI: CPU time, --jobs scaling, Chinese, the
C++ simhash-pybind baseline, and the long streaming runs of --full.

Every CLI run is a subprocess whose CPU time (user + system, workers included: they
are reaped by it) and peak resident memory come from os.wait4, so figures per CPU
second hold on a machine that other jobs share. Nothing here asserts a timing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PYBIND_PATH = ROOT / ".venv" / "baselines" / "simhash-pybind"
PYBIND_SCRIPT = Path(__file__).resolve().parent / "pybind_baseline.py"


def simdedup_command() -> list[str]:
    exe = Path(sys.executable).parent / "simdedup"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "simdedup"]


def write_lines(texts: Sequence[str], path: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(t + "\n")
    return path


# ---------------------------------------------------------------- measured runs


@dataclass
class Run:
    wall: float
    #: user + system seconds of the process and every worker it reaped
    cpu: float
    #: the largest resident set of the process or any one worker, bytes
    max_rss: int
    status: int
    #: the CLI's --summary-json, when asked for
    summary: dict = field(default_factory=dict)
    #: (seconds, input bytes read, RSS of the parent, RSS of the workers) samples
    samples: list[tuple[float, int, int, int]] = field(default_factory=list)
    stderr: str = ""


def run_measured(
    args: Sequence[str],
    stdout: IO[bytes] | int = subprocess.DEVNULL,
    summary: str | None = None,
    sample_input: str | None = None,
    every: float = 0.5,
) -> Run:
    """Run a command; with `sample_input`, sample its memory every `every` seconds
    (and how far it has read that file) while it runs."""
    cmd = [*args, "--summary-json", summary] if summary else list(args)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    samples: list[tuple[float, int, int, int]] = []
    stop = threading.Event()
    sampler = None
    if sample_input is not None:
        sampler = threading.Thread(target=_sample, args=(proc.pid, sample_input, samples, stop, every, start))
        sampler.start()
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    stop.set()
    if sampler is not None:
        sampler.join()
    record = json.loads(Path(summary).read_text()) if summary and os.path.exists(summary) else {}
    return Run(
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss * 1024,
        proc.returncode,
        record,
        samples,
        stderr,
    )


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def _position(pid: int, path: str) -> int:
    """How far the process has read `path`: the offset of its open file."""
    target = os.path.realpath(path)
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
                        if line.startswith("pos:"):
                            return int(line.split()[1])
            except OSError:
                continue
    except OSError:
        pass
    return -1


def _sample(pid: int, path: str, samples: list, stop: threading.Event, every: float, start: float) -> None:
    while not stop.wait(every):
        parent = _rss(pid)
        if not parent:
            return
        workers = sum(_rss(c) for c in _children(pid))
        samples.append((time.perf_counter() - start, _position(pid, path), parent, workers))


# ---------------------------------------------------------------- the C++ baseline


@dataclass
class Pybind:
    #: hash name -> (cpu seconds, fingerprints) of the fingerprint loop
    runs: dict[str, tuple[float, list[int]]]
    error: str = ""


def run_pybind(path: str, repeat: int = 1) -> Pybind:
    """simhash-pybind on every line of `path`, with xxh3_64 and with its own md5 hash;
    the least CPU time of `repeat` round-robin passes."""
    if not PYBIND_PATH.exists():
        return Pybind({}, f"{PYBIND_PATH} is missing (make bench puts it there)")
    env = {**os.environ, "PYTHONPATH": str(PYBIND_PATH)}
    runs: dict[str, tuple[float, list[int]]] = {}
    for _ in range(repeat):
        for name in ("xxh3", "md5"):
            done = subprocess.run(
                [sys.executable, str(PYBIND_SCRIPT), path, name], env=env, capture_output=True, text=True
            )
            if done.returncode:
                return Pybind(runs, done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
            out = json.loads(done.stdout)
            if name not in runs or out["cpu"] < runs[name][0]:
                runs[name] = (out["cpu"], [int(h, 16) for h in out["fps"]])
    return Pybind(runs)


# ---------------------------------------------------------------- Chinese corpus

ZH_DOC_CHARS = 210
_HAN_WORD = re.compile(r"^[\u4e00-\u9fff]+$")


def chinese_vocabulary(size: int = 30_000) -> tuple[list[str], np.ndarray]:
    """The `size` most frequent all-Han words of jieba's dictionary, and their shares."""
    import jieba

    words, freqs = [], []
    with open(Path(jieba.__file__).parent / "dict.txt", encoding="utf-8") as f:
        for line in f:
            word, freq, *_ = line.split()
            if _HAN_WORD.match(word):
                words.append(word)
                freqs.append(int(freq))
    order = np.argsort(-np.array(freqs), kind="stable")[:size]
    p = np.array(freqs, dtype=np.float64)[order]
    return [words[i] for i in order], p / p.sum()


def make_chinese_corpus(count: int, seed: int, topic_share: float = 0.3) -> list[str]:
    """`count` documents of about ZH_DOC_CHARS characters: jieba dictionary words drawn
    by their frequency, topic_share of them from one of 1,000 topics of 200 words,
    sentences of 6-17 words ending in "。"; about 10% are copies of an earlier document
    with 1-3 words substituted, inserted or deleted."""
    rng = np.random.default_rng(seed)
    vocab, p = chinese_vocabulary()
    cdf = np.cumsum(p)
    topics = rng.integers(len(vocab), size=(1000, 200))
    docs: list[list[str]] = []
    for i in range(count):
        if i and rng.random() < 0.1:
            words = list(docs[int(rng.integers(i))])
            for _ in range(int(rng.integers(1, 4))):
                at, op = int(rng.integers(len(words))), int(rng.integers(3))
                new = vocab[int(np.searchsorted(cdf, rng.random()))]
                if op == 0:
                    words[at] = new
                elif op == 1:
                    words.insert(at, new)
                elif len(words) > 1:
                    del words[at]
        else:
            n = ZH_DOC_CHARS // 2
            anywhere = np.minimum(np.searchsorted(cdf, rng.random(n)), len(vocab) - 1)
            topical = topics[int(rng.integers(1000))][rng.integers(200, size=n)]
            ids = np.where(rng.random(n) < topic_share, topical, anywhere)
            words, chars = [], 0
            for w in ids:
                words.append(vocab[w])
                chars += len(vocab[w])
                if chars >= ZH_DOC_CHARS:
                    break
        docs.append(words)
    return [_sentences(words, rng) for words in docs]


def _sentences(words: list[str], rng: np.random.Generator) -> str:
    out, i = [], 0
    while i < len(words):
        n = int(rng.integers(6, 18))
        out.append("".join(words[i : i + n]) + "。")
        i += n
    return "".join(out)


# ---------------------------------------------------------------- large generated files


def write_english_file(path: str, count: int | None, seed: int, max_bytes: int | None = None) -> int:
    """Stream a generated English corpus (bench.py's language) to `path`, 50,000
    documents at a time so that it never sits in memory, until `count` documents or
    `max_bytes`; returns the count. Near-duplicates copy documents of their own chunk."""
    import bench

    rng = np.random.default_rng(seed)
    lang = bench.Language.make(rng, bench.TOPIC_SHARE)
    written, size = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while (count is None or written < count) and (max_bytes is None or size < max_bytes):
            chunk: list[str] = []
            for i in range(50_000):
                if i and rng.random() < bench.DUP_FRACTION:
                    text = bench.edited_copy(chunk[int(rng.integers(i))], lang, rng)
                else:
                    text = bench.original_document(lang, rng)
                chunk.append(text)
                f.write(text + "\n")
                size += len(text) + 1
                written += 1
                if written == count or (max_bytes is not None and size >= max_bytes):
                    return written
    return written


# ---------------------------------------------------------------- the machine's free cores

_BUSY = "import time\nt = time.process_time()\nx = 0\nfor i in range({n}): x += i\n"


def parallel_capacity(loops: int = 10_000_000) -> float:
    """Throughput of two CPU-bound processes at once over one alone: 2.0 on two idle
    cores, less when other jobs share the machine. The ceiling for --jobs 2 right now."""
    code = _BUSY.format(n=loops)
    one = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    one = time.perf_counter() - one
    two = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    for p in procs:
        p.wait()
    two = time.perf_counter() - two
    return 2 * one / two
