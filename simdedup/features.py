"""Stage 2: turn a document's text into weighted features.

Normalize (NFKC, case folding, traditional to simplified Chinese), split into tokens
(Unicode words, jieba words for Chinese, or character n-grams), optionally join word
shingles, and weigh them. Pure functions of (text, Settings): no I/O beyond jieba's and
opencc's own dictionaries, no printing.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from types import ModuleType
from typing import Any

import numpy as np

from .settings import Settings

Features = dict[str, float]

_WORD = re.compile(r"\w+")
# CJK Unified Ideographs (with extension A and compatibility ideographs): text jieba should cut.
_HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
_HAN_CLASS = "[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _HAN_RANGES) + "]"
# Chinese puts no spaces between words, so whitespace between two Han characters is
# layout (a hard-wrapped line), and would otherwise cut a word in two.
_HAN_GAP = f"(?<={_HAN_CLASS})\\s+(?={_HAN_CLASS})"


@cache
def _pattern(source: str) -> re.Pattern[str]:
    """re.compile(source), when first needed: a pattern with _HAN_CLASS takes 1-3 ms to
    compile (re walks each of its 28,000 code points), and ASCII text never needs one."""
    return re.compile(source)


#: opencc configuration that folds Chinese scripts: traditional to simplified, with
#: Taiwan's regional phrases (軟體 -> 软件, 滑鼠 -> 鼠标) as well as characters.
SCRIPT_FOLD = "tw2sp"


@lru_cache(maxsize=1)
def _script_folder() -> Any:
    import opencc

    return opencc.OpenCC(SCRIPT_FOLD)


def normalize(text: str, fold: bool = True) -> str:
    """Unicode NFKC (full-width to half-width, ligatures, ...), case folding, and for
    text with Han characters: whitespace between two of them removed and, with `fold`,
    traditional Chinese folded to simplified (opencc SCRIPT_FOLD)."""
    if text.isascii():  # O(1) in CPython: NFKC changes nothing and there is no Han
        return text.casefold()
    return _normalize_unicode(text, fold)


#: How the compiled core reads a code point of normalized text (core_reads).
ASCII, WORD_BYTES, SEPARATOR, TO_FOLD, NOT_READ = range(5)


def core_reads(c: str) -> int:
    """How the compiled core reads a character of a text that normalize() made
    (compiled_text.core_spans): ASCII (the core folds its case and knows whether it is a
    word character); WORD_BYTES, a word character whose case fold is itself, which the
    core reads as word bytes (it takes every byte of UTF-8 past ASCII for one);
    SEPARATOR, one that is not a word character, which it must be given as a space;
    TO_FOLD, one whose case fold is another; NOT_READ, a Han character (jieba cuts
    those) or a lone surrogate (no UTF-8), which keep a text from the core."""
    if c.isascii():
        return ASCII
    if _pattern(_HAN_CLASS).match(c) or "\ud800" <= c <= "\udfff":
        return NOT_READ
    if c.casefold() != c:
        return TO_FOLD
    return WORD_BYTES if _WORD.match(c) else SEPARATOR


def normalize_many(texts: Sequence[str], fold: bool = True) -> list[str]:
    """normalize() of each text, the same strings, faster on a batch of Chinese text.

    Full-width ASCII forms (，：（）) are what keep most Chinese text from being NFKC
    already, and NFKC is slow (about 90 ns a character). They are mapped to the ASCII
    NFKC gives them first, in one numpy pass over the batch; NFKC of the result is NFKC
    of the text (a character replaced by its own decomposition decomposes the same),
    and most texts then pass NFKC's quick check and are not normalized again."""
    out = [t.casefold() if t.isascii() else "" for t in texts]
    other = [i for i, t in enumerate(texts) if not t.isascii()]
    for i, t in zip(other, _half_width([texts[i] for i in other])):
        out[i] = _normalize_unicode(t, fold)
    return out


def _half_width(texts: list[str]) -> list[str]:
    """Each text with full-width ASCII forms (U+FF01-FF5E) and the ideographic space
    (U+3000) replaced by the ASCII character that is their NFKC."""
    if not texts:
        return texts
    codes, ends = _code_points(texts)  # one code point a unit: lengths carry over
    wide = (codes - np.uint32(0xFF01)) <= np.uint32(0xFF5E - 0xFF01)
    space = codes == 0x3000
    if not (wide.any() or space.any()):
        return texts
    codes = codes.copy()  # _code_points' array is a read-only view of the bytes
    codes[wide] -= np.uint32(0xFF01 - 0x21)
    codes[space] = 0x20
    joined = codes.tobytes().decode("utf-32-le", "surrogatepass")
    return [joined[a:b] for a, b in zip([0, *ends[:-1].tolist()], ends.tolist())]


def _normalize_unicode(text: str, fold: bool) -> str:
    if not unicodedata.is_normalized("NFKC", text):  # the quick check: ~1.5 ns a character
        text = unicodedata.normalize("NFKC", _few_marks(text))
    text = text.casefold()
    if not _pattern(_HAN_CLASS).search(text):
        return text
    text = _pattern(_HAN_GAP).sub("", text)
    if not fold:
        return text
    try:
        return _script_folder().convert(text)
    except UnicodeEncodeError:  # a lone surrogate, which OpenCC's UTF-8 cannot take: as the
        return _script_folder().convert(_SURROGATE.sub("\ufffd", text))  # reader, U+FFFD


_SURROGATE = re.compile("[\ud800-\udfff]")

#: The combining marks kept of a run of them, where the text is normalized: NFKC orders
#: each run by its marks' classes in time quadratic in its length. One line of 240 KB
#: that alternated two classes ('a' + U+0301 U+0316 ...) took 17 s, 480 KB 53 s (a
#: review). No language writes more than a few marks on a letter; the rest is noise.
MARK_RUN = 32


def _few_marks(text: str) -> str:
    """`text` with each run of combining marks (characters of a nonzero combining
    class) cut to its first MARK_RUN."""
    return text if len(text) <= MARK_RUN else _long_mark_runs().sub(r"\1", text)


@lru_cache(maxsize=1)
def _long_mark_runs() -> re.Pattern[str]:
    """Runs of more than MARK_RUN combining marks, the first MARK_RUN as group 1. Made
    when first needed (~15 ms): no mark lies above U+1FFFF."""
    ranges: list[list[int]] = []
    for c in range(0x20000):
        if unicodedata.combining(chr(c)):
            if ranges and ranges[-1][1] == c - 1:
                ranges[-1][1] = c
            else:
                ranges.append([c, c])
    mark = "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]"
    return re.compile(f"({mark}{{{MARK_RUN}}}){mark}+")


def has_chinese(text: str) -> bool:
    # isascii() is O(1) on a str; the regex scan costs ~40% of a tokenization pass.
    return not text.isascii() and _pattern(_HAN_CLASS).search(text) is not None


#: Runs of Han characters: the text the segmenter cuts. Everything between them (Latin
#: words, digits, identifiers in mixed text) is cut into Unicode words, as in English.
_HAN_RUN = f"({_HAN_CLASS}+)"


@lru_cache(maxsize=1)
def _jieba() -> ModuleType:
    """Import jieba on first use only, and keep it quiet ("Building prefix dict ...").

    Only its IDF table (weights="tfidf") is used; rjieba cuts the words."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    """rjieba's cut: jieba's dictionary and HMM in jieba-rs (Rust), imported on first use.

    It cuts runs of Han characters into the same words as jieba.lcut, at about 12 times
    its speed (benchmarks/bench.py measures both)."""
    import rjieba

    return rjieba.cut


def jieba_words(text: str) -> list[str]:
    """jieba's default (accurate) mode on each run of Han characters, Unicode words
    (as words() makes them) on the text between the runs, in text order.

    Cutting Han runs only keeps the words of mixed text independent of how a segmenter
    treats Latin letters, digits and underscores (jieba and jieba-rs differ there).

    The runs are cut in one call, joined by a newline: jieba cuts the blocks between
    whitespace independently and returns the whitespace as a token of its own, so the
    cut is each run's words with a newline between runs (a test checks this against
    cutting run by run), at about half the cost of a call per run."""
    parts = _pattern(_HAN_RUN).split(text)
    if len(parts) == 1:
        return _WORD.findall(text)
    cut = _segmenter()("\n".join(parts[1::2]))
    out = _WORD.findall(parts[0])
    start = 0
    for gap in parts[2:-1:2]:
        end = cut.index("\n", start)
        out += cut[start:end]
        out += _WORD.findall(gap)
        start = end + 1
    out += cut[start:]
    out += _WORD.findall(parts[-1])
    return out


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values): the sorted distinct values, by a sort. numpy 2.3+ finds them
    by a hash table instead, which took 6.9 ms for 50,000 distinct int64s against 1.7 ms
    sorted (1.7 s against 0.11 s for 2M), and its first call imports numpy.ma, 8-10 ms
    of a run's start-up."""
    values = np.sort(values)
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if len(values) else values


def runs_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """starts[0], starts[0] + 1, ... (lengths[0] of them), then the same for run 1, ..."""
    lengths = np.asarray(lengths, np.intp)  # np.repeat converts other counts slowly
    total = int(lengths.sum())
    # run r's t-th index is starts[r] + (t - where run r begins among all of them)
    return np.repeat(np.asarray(starts, np.intp) - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)


def _code_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(codes, ends): the texts' code points one after another (UTF-32, so one unit a
    code point; surrogatepass keeps lone surrogates) and where each text ends."""
    ends = np.cumsum(np.fromiter(map(len, texts), np.intp, len(texts)))
    codes = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), "<u4")
    return codes, ends


def _is_han(codes: np.ndarray) -> np.ndarray:
    """_HAN_CLASS, code point by code point."""
    in_range = np.zeros(len(codes), bool)
    for low, high in _HAN_RANGES:
        in_range |= (codes - np.uint32(low)) <= np.uint32(high - low)
    return in_range


class _CharacterClass:
    """A class of characters, code point by code point: `member` is asked about each code
    point the first time it is seen (2.2 MB of tables, once)."""

    def __init__(self, member: Callable[[str], bool]) -> None:
        self._is = member
        self._seen = np.zeros(0x110000, bool)
        self._member = np.zeros(0x110000, bool)

    def __call__(self, codes: np.ndarray) -> np.ndarray:
        seen = self._seen[codes]
        if not seen.all():
            new = distinct(codes[~seen])
            found = (self._is(chr(c)) for c in new.tolist())
            self._member[new] = np.fromiter(found, bool, len(new))
            self._seen[new] = True
        return self._member[codes]


_WORD_CHARACTER = _CharacterClass(lambda c: _WORD.match(c) is not None)


#: A word of other characters (Latin, digits) within this many word characters of a
#: Han character is cut into characters, as the Chinese around it is.
NEAR_HAN = 8


def han_word_units(
    texts: Sequence[str], hash_many: Callable[[list[str]], list[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """(units, counts): every text's \\w+ words, in text order, one text after another,
    and how many each text has, where a Han character is a unit of its own, its code
    point, and so is each character of a word within NEAR_HAN word characters of a Han
    character; every other word is a unit, its hash by `hash_many` (uint64).

    Chinese is characters then, and so are the Latin words and numbers among it, while
    the English of a mixed text away from its Chinese stays words, however much
    Chinese the text holds: the cut of each place depends only on what is near it."""
    codes, ends = _code_points(texts)
    word = _WORD_CHARACTER(codes)
    han = _is_han(codes) & word
    starts, lengths = _spans(word & ~han, ends)
    values = codes.astype(np.uint64)  # each unit at the place where it starts
    unit = han  # the places where a unit starts
    if len(starts):
        near = _near_han(word, han, ends, starts, lengths)
        unit[runs_index(starts[near], lengths[near])] = True
        starts, lengths = starts[~near], lengths[~near]
        if len(starts):
            values[starts] = hash_many(_joined(codes, starts, lengths, " ").split(" "))
            unit[starts] = True
    before = np.concatenate([[0], np.cumsum(unit)])
    return values[unit], np.diff(before[np.concatenate([[0], ends])])


def _near_han(
    word: np.ndarray, han: np.ndarray, ends: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """Which runs (of word characters, not Han) have a Han character of their own text
    within NEAR_HAN word characters before or after them."""
    han_at = np.flatnonzero(han)
    if not len(han_at):
        return np.zeros(len(starts), bool)
    words_before = np.cumsum(word) - word  # word characters before each place
    han_words = words_before[han_at]
    text = np.searchsorted(ends, starts, "right")
    text_start = np.concatenate([[0], ends])[text]
    last = starts + lengths - 1
    before = np.maximum(np.searchsorted(han_at, starts) - 1, 0)  # the Han character before, if any
    near = (han_at[before] < starts) & (han_at[before] >= text_start)
    near &= words_before[starts] - han_words[before] <= NEAR_HAN
    after = np.minimum(np.searchsorted(han_at, last), len(han_at) - 1)  # the one after, if any
    near_after = (han_at[after] > last) & (han_at[after] < ends[text])
    near_after &= han_words[after] - words_before[last] <= NEAR_HAN
    return near | near_after


def _spans(mask: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) of the runs of True in mask, cut where a text ends."""
    n = len(mask)
    boundary = np.zeros(n + 1, bool)
    boundary[ends] = True  # ends[-1] == n
    boundary[0] = True
    before = np.zeros(n, bool)
    before[1:] = mask[:-1]
    after = np.zeros(n, bool)
    after[:-1] = mask[1:]
    starts = np.flatnonzero(mask & (~before | boundary[:n]))
    stops = np.flatnonzero(mask & (~after | boundary[1:])) + 1
    return starts, stops - starts


def _joined(codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray, sep: str) -> str:
    """The runs' text, one separator between runs."""
    picked = codes[runs_index(starts, lengths)]
    if len(starts) > 1:
        picked = np.insert(picked, np.cumsum(lengths)[:-1], np.uint32(ord(sep)))
    return picked.tobytes().decode("utf-32-le", "surrogatepass")


def jieba_words_many(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(tokens, counts): jieba_words() of every text, one list after another, and how
    many tokens each text has; the same tokens, found for the whole batch at once."""
    pool, order, counts = jieba_word_pool(texts)
    return list(map(pool.__getitem__, order.tolist())), counts


def jieba_word_pool(texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(pool, order, counts): jieba_words_many() as the strings the segmenter and one
    str.split made (pool) and the indexes into them in text order, so that a caller can
    hash the pool and reorder the hashes in numpy instead of the strings in Python.

    The Han runs and the \\w runs between them are found in numpy over the batch's code
    points. All the Han runs are cut in one call, joined by newlines as jieba_words()
    does; a newline is a token of its own, so the token that starts where a newline was
    put is that newline, and order skips it."""
    codes, ends = _code_points(texts)
    han = _is_han(codes)
    han_starts, han_lengths = _spans(han, ends)
    word_starts, word_lengths = _spans(~han & _WORD_CHARACTER(codes), ends)
    pool: list[str] = []
    per_run = firsts = np.zeros(0, np.intp)
    if len(han_starts):
        pool = _segmenter()(_joined(codes, han_starts, han_lengths, "\n"))
        lengths = np.fromiter(map(len, pool), np.intp, len(pool))
        put_at = np.cumsum(han_lengths + 1)[:-1] - 1  # the newlines, in the joined text
        newline = np.zeros(len(pool), bool)
        newline[np.searchsorted(np.cumsum(lengths) - lengths, put_at)] = True
        per_run = np.bincount(np.cumsum(newline)[~newline], minlength=len(han_starts))
        firsts = np.concatenate([[0], np.flatnonzero(newline) + 1])
    if len(word_starts):
        firsts = np.concatenate([firsts, len(pool) + np.arange(len(word_starts))])
        pool += _joined(codes, word_starts, word_lengths, " ").split(" ")
    starts = np.concatenate([han_starts, word_starts])
    sizes = np.concatenate([per_run, np.ones(len(word_starts), np.intp)])
    order = np.argsort(starts, kind="stable")  # the two kinds of run, in text order
    text = np.searchsorted(ends, starts[order], side="right")
    counts = np.bincount(text, weights=sizes[order], minlength=len(texts)).astype(np.intp)
    return pool, runs_index(firsts[order], sizes[order]), counts


# Bytes that \w matches in ASCII text: in a str that is all ASCII, \w+ is [0-9A-Za-z_]+.
_ASCII_WORD = np.zeros(256, dtype=bool)
_ASCII_WORD[list(b"0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")] = True


def ascii_word_spans(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the \\w+ tokens of ASCII bytes, in order, found by numpy.

    The same tokens as `words(data.decode("ascii"))`, without a Python object per
    token: the batch fingerprint path hashes them straight from the buffer.
    """
    word = np.zeros(len(data) + 2, dtype=bool)
    word[1:-1] = _ASCII_WORD[np.frombuffer(data, dtype=np.uint8)]
    edges = np.flatnonzero(word[1:] != word[:-1])
    return edges[0::2], edges[1::2]


def char_ngrams(text: str, n: int) -> list[str]:
    """Character n-grams over the word tokens joined by single spaces.

    Joining by single spaces makes the features blind to how much whitespace or
    punctuation lies between two words, not to whether any does: an n-gram spans the
    space, so a space added between Chinese and a digit (`2023 年`) or a Chinese comma
    taken out changes the n-grams there (a review: 12-18 bits on a paragraph; the
    word tokenizer is blind to both). A text shorter than n characters is one feature.
    """
    joined = " ".join(_WORD.findall(text))
    if len(joined) <= n:
        return [joined] if joined else []
    return [joined[i : i + n] for i in range(len(joined) - n + 1)]


def shingles(tokens: list[str], n: int) -> list[str]:
    """Runs of n consecutive tokens joined by a space; fewer than n tokens make one shingle."""
    if n == 1 or not tokens:
        return tokens
    if len(tokens) <= n:
        return [" ".join(tokens)]
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def normalized(text: str, settings: Settings) -> str:
    """The text as tokenize() sees it (every tokenizer, and the batch path, start here)."""
    return normalize(text, settings.fold)


def normalized_many(texts: Sequence[str], settings: Settings) -> list[str]:
    """normalized() of each text (normalize_many: the batch path)."""
    return normalize_many(texts, settings.fold)


def tokenize(text: str, settings: Settings) -> list[str]:
    """The normalized text's tokens (after shingling), in text order."""
    return tokens_of_normalized(normalized(text, settings), settings)


def tokens_of_normalized(text: str, settings: Settings) -> list[str]:
    """tokenize() of a text that normalized() already made."""
    tokenizer = settings.tokenizer
    if tokenizer == "auto":
        tokenizer = "jieba" if has_chinese(text) else "words"
    if tokenizer == "chars":
        return char_ngrams(text, settings.ngram)
    tokens = jieba_words(text) if tokenizer == "jieba" else words(text)
    return shingles(tokens, settings.shingle)


@lru_cache(maxsize=1)
def _idf_table() -> tuple[Mapping[str, float], float]:
    """jieba's IDF table and its median, used for unknown features (as jieba.analyse does)."""
    _jieba()
    from jieba.analyse import default_tfidf

    return default_tfidf.idf_freq, default_tfidf.median_idf


def weigh(tokens: list[str], settings: Settings) -> Features:
    """Feature -> weight: term frequency, TF x IDF, or 1 per distinct feature.

    With settings.top_k, only the top_k heaviest features are kept (ties: the
    lexicographically smaller feature), like the seeds' keyword extraction.
    """
    counts = Counter(tokens)
    if settings.weights == "binary":
        weights: Features = dict.fromkeys(counts, 1.0)
    elif settings.weights == "tfidf":
        idf, median = _idf_table()
        weights = {t: c * idf.get(t, median) for t, c in counts.items()}
    else:
        weights = counts  # type: ignore[assignment]  # a Counter is already feature -> count
    if settings.top_k and len(weights) > settings.top_k:
        heaviest = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[: settings.top_k]
        weights = dict(heaviest)
    return weights


def extract(text: str, settings: Settings) -> Features:
    """A document's weighted features: tokenize, then weigh."""
    return features_of_normalized(normalized(text, settings), settings)


def features_of_normalized(text: str, settings: Settings) -> Features:
    """extract() of a text that normalized() already made."""
    return weigh(tokens_of_normalized(text, settings), settings)
