"""Real text from this machine, cut into documents, and exact Jaccard ground truth.

Shared by the quality benchmarks (defaults.py, quality.py): what they read, how they
cut it and how they decide that two documents are near-duplicates, in one place.
Reads only local files (and runs `man -l`); never downloads anything.
"""

from __future__ import annotations

import ast
import gettext
import glob
import math
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from functools import lru_cache
from typing import Any

from simdedup.features import shingles

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"\w+")
MIN_CHARS, MAX_CHARS = 300, 2000

# --------------------------------------------------------------------------- corpus


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fold(text: str) -> str:
    """NFKC and case folding: the benchmark's own normalization, fixed whatever simdedup's becomes."""
    return unicodedata.normalize("NFKC", text).casefold()


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def split_paragraphs(text: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def pack(paragraphs: Iterable[str], lo: int = MIN_CHARS, hi: int = MAX_CHARS) -> list[str]:
    """Join consecutive paragraphs until a document has at least `lo` characters.

    A paragraph longer than `hi` is cut at line ends first; documents outside
    [lo, hi] are dropped.
    """
    pieces: list[str] = []
    for p in paragraphs:
        if len(p) <= hi:
            pieces.append(p)
            continue
        chunk = ""
        for line in p.splitlines(keepends=True):
            if chunk and len(chunk) + len(line) > hi:
                pieces.append(chunk.rstrip("\n"))
                chunk = ""
            chunk += line
        if chunk.strip():
            pieces.append(chunk.rstrip("\n"))
    docs, cur = [], ""
    for p in pieces:
        cur = f"{cur}\n\n{p}" if cur else p
        if len(cur) >= lo:
            if len(cur) <= hi:
                docs.append(cur)
            cur = ""
    return docs


def han_share(text: str) -> float:
    word_chars = sum(len(w) for w in WORD.findall(text))
    return len(HAN.findall(text)) / word_chars if word_chars else 0.0


def looks_english(text: str) -> bool:
    """Mostly ASCII letters, no Han characters, and not a listing of file paths."""
    letters = sum(c.isascii() and c.isalpha() for c in text)
    paths = text.count("/") > 0.1 * len(WORD.findall(text))
    return not HAN.search(text) and not paths and letters >= 0.6 * len(text.replace(" ", ""))


def render_man(path: str, width: int = 80) -> str:
    """A man page as plain text (overstrikes and escapes removed, lines dedented)."""
    env = dict(os.environ, MANWIDTH=str(width), MANPAGER="cat", PAGER="cat", GROFF_NO_SGR="1")
    env.setdefault("LANG", "C.UTF-8")
    try:
        out = subprocess.run(
            ["man", "-l", path], capture_output=True, env=env, timeout=30, check=False
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError):
        return ""
    out = re.sub(r".\x08", "", out)
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    lines = out.splitlines()[1:-1]  # the page's header and footer lines
    return "\n".join(line.strip() for line in lines)


def render_many(paths: Sequence[str]) -> list[str]:
    if not paths or shutil.which("man") is None:
        return []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(render_man, paths))


def stdlib_docstrings() -> list[str]:
    """Docstrings (modules, classes, functions) of the standard library's sources."""
    root = sysconfig.get_paths()["stdlib"]
    skip = re.compile(r"/(test|tests|idlelib|site-packages|dist-packages|lib2to3|turtledemo)/")
    texts = []
    for path in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
        if skip.search(path):
            continue
        try:
            tree = ast.parse(read_text(path))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc and len(doc) >= 200:
                    texts.append(doc)
    return texts


def english_sources(rng: random.Random) -> dict[str, list[str]]:
    sources: dict[str, list[str]] = {}
    paths = sorted(glob.glob("/usr/share/common-licenses/*"))
    sources["common-licenses"] = [d for p in paths for d in pack(split_paragraphs(read_text(p)))]
    paths = sorted(glob.glob("/usr/share/doc/*/copyright"))
    paths = sorted(rng.sample(paths, min(150, len(paths))))
    sources["doc/*/copyright"] = [d for p in paths for d in pack(split_paragraphs(read_text(p)))]
    sources["stdlib docstrings"] = [d for t in stdlib_docstrings() for d in pack(split_paragraphs(t))]
    pages = sorted(
        p for s in ("1", "5", "8") for p in glob.glob(f"/usr/share/man/man{s}/*") if os.path.isfile(p)
    )
    pages = sorted(rng.sample(pages, min(60, len(pages))))
    sources["man pages"] = [d for t in render_many(pages) for d in pack(split_paragraphs(t))]
    # (not simdedup's own: its README, installed with it, changed the set as it changed)
    metas = sorted(glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "*.dist-info", "METADATA")))
    metas = [p for p in metas if not os.path.basename(os.path.dirname(p)).startswith("simdedup-")]
    bodies = [read_text(p).partition("\n\n")[2] for p in metas]
    sources["dist-info METADATA"] = [d for t in bodies for d in pack(split_paragraphs(t))]
    return {k: [d for d in v if looks_english(d)] for k, v in sources.items()}


def chinese_sources(min_han: int = 15) -> dict[str, list[str]]:
    """Chinese documents; gettext messages with at least `min_han` Han characters are packed."""
    sources: dict[str, list[str]] = {}
    catalogs = []
    for path in sorted(glob.glob("/usr/share/locale/zh_*/LC_MESSAGES/*.mo")):
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        except (OSError, gettext.error, UnicodeDecodeError):
            continue
        messages = [v.strip() for k, v in sorted(catalog.items(), key=repr) if k and isinstance(v, str)]
        catalogs.append(pack(m for m in messages if len(HAN.findall(m)) >= min_han))
    sources["gettext catalogs zh_*"] = [d for c in catalogs for d in c]
    pages = sorted(p for p in glob.glob("/usr/share/man/zh_*/man*/*") if os.path.isfile(p))
    sources["man pages zh_*"] = [d for t in render_many(pages) for d in pack(split_paragraphs(t))]
    other = [
        "/usr/share/vim/vim90/tutor/tutor.zh_cn.utf-8",
        "/usr/share/vim/vim90/tutor/tutor.zh_tw.utf-8",
        *sorted(glob.glob("/usr/share/vim/vim*/tutor/tutor.zh*.utf-8")),
        *sorted(glob.glob("/usr/share/gnupg/help.zh_*.txt")),
        *sorted(glob.glob("/usr/lib/systemd/catalog/*.zh_*.catalog")),
    ]
    other = list(dict.fromkeys(p for p in other if os.path.isfile(p)))
    sources["vim tutor, gnupg help, systemd catalog"] = [
        d for p in other for d in pack(split_paragraphs(read_text(p)))
    ]
    return {k: [d for d in v if han_share(d) >= 0.3] for k, v in sources.items()}


def dedup_exact(docs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    out = []
    for source, text in docs:
        key = " ".join(WORD.findall(fold(text)))
        if key not in seen:
            seen.add(key)
            out.append((source, text))
    return out


def build_documents(
    en_docs: int, zh_docs: int, seed: int, min_han: int = 15
) -> dict[str, list[tuple[str, str]]]:
    """(source, text) documents per language: up to en_docs English, zh_docs Chinese,
    sampled with a fixed seed from every source, exact duplicates dropped."""
    return {
        "en": pick(english_sources(random.Random(seed)), en_docs, random.Random(f"{seed}-en")),
        "zh": pick(chinese_sources(min_han), zh_docs, random.Random(f"{seed}-zh")),
    }


def pick(sources: dict[str, list[str]], target: int, rng: random.Random) -> list[tuple[str, str]]:
    pool = dedup_exact((s, d) for s, docs in sources.items() for d in docs)
    if len(pool) > target:
        pool = [pool[i] for i in sorted(rng.sample(range(len(pool)), target))]
    return pool


# --------------------------------------------------------------------------- ground truth


#: opencc configuration the ground truth folds Chinese scripts with: traditional (Taiwan
#: phrasing included) to simplified, so a traditional copy of a text is that text.
TRUTH_SCRIPT_FOLD = "tw2sp"


@lru_cache(maxsize=4)
def converter(config: str) -> Any:
    import opencc

    return opencc.OpenCC(config)


def truth_set(text: str, lang: str, script_fold: bool = False) -> frozenset[str]:
    """Word 3-shingles (English) or character 3-grams of the word characters (Chinese),
    after NFKC and case folding, and with `script_fold` traditional to simplified Chinese."""
    text = fold(text)
    if script_fold and HAN.search(text):
        text = converter(TRUTH_SCRIPT_FOLD).convert(text)
    if lang == "en":
        return frozenset(shingles(WORD.findall(text), 3))
    joined = "".join(WORD.findall(text))
    return frozenset(joined[i : i + 3] for i in range(max(1, len(joined) - 2)))


def jaccard_pairs(sets: Sequence[frozenset[str]], threshold: Fraction) -> set[tuple[int, int]]:
    """Every (i, j), i < j, with Jaccard >= threshold (see jaccard_scores)."""
    return set(jaccard_scores(sets, threshold))


def jaccard_scores(sets: Sequence[frozenset[str]], threshold: Fraction) -> dict[tuple[int, int], float]:
    """(i, j) -> Jaccard for every i < j with Jaccard >= threshold: exact, by all-pairs
    prefix filtering.

    Tokens are ordered rarest first; two sets with Jaccard >= t share a token within
    their first |x| - ceil(t |x|) + 1 tokens, and their sizes differ by at most t.
    """
    num, den = threshold.numerator, threshold.denominator
    df = Counter(tok for s in sets for tok in s)
    order = sorted(range(len(sets)), key=lambda i: len(sets[i]))
    index: dict[str, list[int]] = defaultdict(list)
    found: dict[tuple[int, int], float] = {}
    for i in order:  # smaller sets first: earlier ones in the index are never larger
        s = sets[i]
        if not s:
            continue
        ranked = sorted(s, key=lambda tok: (df[tok], tok))
        prefix = ranked[: len(s) - math.ceil(num * len(s) / den) + 1]
        candidates: set[int] = set()
        for tok in prefix:
            candidates.update(index[tok])
            index[tok].append(i)
        for j in candidates:
            t = sets[j]
            if den * len(t) < num * len(s):
                continue
            inter = len(s & t)
            union = len(s) + len(t) - inter
            if den * inter >= num * union:
                found[(min(i, j), max(i, j))] = inter / union
    return found


# --------------------------------------------------------------------------- report


def fmt(x: float) -> str:
    return "  -  " if x != x else f"{x:.3f}"


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        cells = (v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths)))
        return "  ".join(cells).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def revision() -> str:
    """The repository's commit (with '+' if its simdedup/ has changes), or 'unknown'."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        git = ["git", "-C", here]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "../simdedup"], capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return (
        f"{head.stdout.strip()}{'+' if dirty.stdout.strip() else ''}" if head.returncode == 0 else "unknown"
    )
