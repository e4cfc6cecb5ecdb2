"""The compiled core for text without Han characters: words found, hashed, summed and
sketched in one pass.

What features.py, fingerprint.py and sketch.py do for a batch of texts in several numpy
passes (\\w+ words, xxh3-64, +-1 column sums, the head window, the verification sketch),
done in one call of a C extension (_textcore.c), with the same results, bit for bit
(tests/test_compiled_text.py). It reads ASCII, and other text as core_spans (below)
makes it: normalized, in UTF-8, with spaces for the characters past ASCII that are not
word characters, so that every byte past ASCII is a word byte. A first pass over the
batch's bytes folds their ASCII case and marks which are word bytes, one bit a byte; then
each document's words are found 64 bytes at a time, as the bits where that mark changes,
and hashed, summed and sketched in one loop. Pure functions of arrays: none keeps state
between calls or prints.

It loads with the package, at no cost a process can measure, so every batch that it
serves goes through it (numba's version of it cost a process ~0.25-0.55 s to load, and
served only runs large enough to repay that).
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Sequence

import numpy as np

from ._textcore import text_documents, utf8_forms
from .features import TO_FOLD, core_reads, distinct, has_chinese, normalize_many


def ascii_batch(
    texts: Sequence[str], heads: bool, sketch_bins: int = 0, sketch_bits: int = 2, sketch_exact: int = 0
) -> tuple[list[int | None], list[int | None], np.ndarray, np.ndarray]:
    """(fingerprints, head fingerprints, sketches, done) of ASCII texts, as the numpy
    path makes them (None: no word; no head: HEAD_TOKENS words or fewer, or `heads`
    False). Sketches: (len(texts), sketch_bins * sketch_bits / 8) uint8 where sketch_bins
    > 0, else none (exact sketches for texts of 1 to sketch_exact distinct shingles:
    sketch.OnePermutation). done[i] is False for a text the numpy path must do instead (a word
    longer than xxh3.VECTORIZED_MAX bytes); its other results are meaningless."""
    data, starts, ends = _ascii_spans(texts)
    return text_spans(data, starts, ends, heads, sketch_bins, sketch_bits, sketch_exact)


def _ascii_spans(texts: Sequence[str]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """(data, starts, ends): ASCII texts joined by spaces, and where each is in it."""
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    starts = np.cumsum(lengths + 1) - lengths - 1
    return " ".join(texts).encode("ascii"), starts, starts + lengths


def text_spans(
    data: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    heads: bool,
    sketch_bins: int = 0,
    sketch_bits: int = 2,
    sketch_exact: int = 0,
) -> tuple[list[int | None], list[int | None], np.ndarray, np.ndarray]:
    """ascii_batch of the texts data[starts[i]:ends[i]] (int64 bounds), read where they
    are: the lines of a chunk of a file (read.AsciiLines), or what core_spans made of a
    batch (ASCII, or UTF-8 in which every byte past ASCII is a word byte)."""
    fps, found, head_fps, has_head, sketches, done = _made(
        data, starts, ends, heads, sketch_bins, sketch_bits, sketch_exact
    )
    return (
        [fp if ok else None for fp, ok in zip(fps.tolist(), found.tolist())],
        [fp if ok else None for fp, ok in zip(head_fps.tolist(), has_head.tolist())],
        sketches,
        done,
    )


def span_fingerprints(data: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, ...]:
    """(fps, found, done) of the texts data[starts[i]:ends[i]] as arrays: uint64
    fingerprints, found[i] False for a text without a word (its fp meaningless), done[i]
    False for one the numpy path must do instead (ascii_batch). For `fingerprint`'s
    output of a chunk's lines, which needs no Python object a line."""
    fps, found, _, _, _, done = _made(data, starts, ends, False, 0, 2, 0)
    return fps, found, done


def _made(
    data: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    heads: bool,
    sketch_bins: int,
    sketch_bits: int,
    sketch_exact: int,
) -> tuple[np.ndarray, ...]:
    n = len(starts)
    fps, head_fps = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    found, has_head, done = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
    width = sketch_bins * sketch_bits // 8
    sketches = np.zeros((n if sketch_bins else 0, width), np.uint8)
    log2_bins = max(sketch_bins.bit_length() - 1, 0)
    text_documents(
        data,
        np.ascontiguousarray(starts, np.int64),  # as the core reads them
        np.ascontiguousarray(ends, np.int64),
        heads,
        log2_bins,
        sketch_bits,
        sketch_exact,
        fps,
        found,
        head_fps,
        has_head,
        sketches,
        done,
    )
    return fps, found, head_fps, has_head, sketches, done


def core_spans(texts: Sequence[str]) -> tuple[np.ndarray, bytes, np.ndarray, np.ndarray]:
    """(rows, data, starts, ends): which texts the compiled core can read, and what it
    reads of each, data[starts[k]:ends[k]] for texts[rows[k]] (rows ascending).

    An ASCII text is its bytes (the core folds their case). Any other text without Han
    characters is normalized as features.normalize() does it (NFKC, case folding), in
    UTF-8, with a space for each character past ASCII that is not a word character: the
    core takes every byte past ASCII for a word byte, so its words are the normalized
    text's \\w+ words, hashed as their UTF-8 (as FeatureHasher does). Texts with Han
    characters are not among the rows: their words are jieba's (and a lone surrogate has
    no UTF-8). Their code points are read by a compiled loop (utf8_forms) through a table
    of how each reads (features.core_reads), filled as code points are first met."""
    n = len(texts)
    other = [i for i, t in enumerate(texts) if not t.isascii()]
    plain = [i for i, t in enumerate(texts) if t.isascii()] if other else list(range(n))
    if len(other) <= _FEW:  # Chinese (for jieba) found by a regex costs a few texts less
        other = [i for i in other if not has_chinese(texts[i])]
    if not (plain or other):
        return np.zeros(0, np.int64), b"", np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts, ends = np.zeros(n, np.int64), np.zeros(n, np.int64)
    data, starts[plain], ends[plain] = _ascii_spans([texts[i] for i in plain])
    if other:
        rows, utf8, other_starts, other_ends = _past_ascii([texts[i] for i in other])
        read = [other[j] for j in rows.tolist()]
        starts[read], ends[read] = len(data) + other_starts, len(data) + other_ends
        data = b"".join([data, utf8])
        plain = sorted(plain + read)
    return np.array(plain, np.int64), data, starts[plain], ends[plain]


#: Texts past ASCII that core_spans asks a regex about Han first (the Chinese of a
#: library's one-document calls cost ~15 µs more without).
_FEW = 32

#: A code point that features.core_reads has not been asked about yet (_READS).
_UNSEEN = 255
# utf8_forms' flags of a text (_textcore.c)
_HAS_NOT_READ, _FOLDS_INTO_SEVERAL, _HAS_UNSEEN = 1, 2, 4


def _past_ascii(forms: list[str]) -> tuple[np.ndarray, bytes | np.ndarray, np.ndarray, np.ndarray]:
    """core_spans of texts past ASCII: (the ones read, their UTF-8, where each starts and
    ends in it). A text not in NFKC (rare but for Chinese), or with a character whose
    case fold is several and has no row of _SEVERAL, is normalized whole, as
    normalize_many() does it, and read again."""
    utf8, starts, ends, flags = _utf8(forms)
    whole = [
        j
        for j, (form, said) in enumerate(zip(forms, flags.tolist()))
        if not said & _HAS_NOT_READ
        and (said & _FOLDS_INTO_SEVERAL or not unicodedata.is_normalized("NFKC", form))
    ]
    read = flags == 0
    if whole:
        again, again_starts, again_ends, again_flags = _utf8(normalize_many([forms[j] for j in whole]))
        read[whole] = again_flags == 0  # a fold into several, again: not read (none in Unicode 15)
        starts[whole], ends[whole] = len(utf8) + again_starts, len(utf8) + again_ends
        utf8 = b"".join([utf8, again])
    return np.flatnonzero(read), utf8, starts[read], ends[read]


def _utf8(forms: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(utf8, starts, ends, flags): utf8_forms of the texts, one after another."""
    codes = np.frombuffer("".join(forms).encode("utf-32-le", "surrogatepass"), "<u4")
    code_ends = np.cumsum(np.fromiter(map(len, forms), np.int64, len(forms)))
    out, ends, flags = (
        np.empty(_SEVERAL_MOST * 4 * len(codes), np.uint8),  # pages touched only as written
        np.empty(len(forms), np.int64),
        np.empty(len(forms), np.uint8),
    )
    utf8_forms(codes, code_ends, _READS, _FOLDS, _SEVERAL, out, ends, flags)
    if (flags & _HAS_UNSEEN).any():  # code points met for the first time: learnt, then read again
        _learn(distinct(codes[_READS[codes] == _UNSEEN]))
        utf8_forms(codes, code_ends, _READS, _FOLDS, _SEVERAL, out, ends, flags)
    starts = np.concatenate([[0], ends[:-1]])
    return out[: ends[-1] if len(ends) else 0], starts, ends, flags  # joined into bytes by core_spans


#: The tables utf8_forms reads code points through: features.core_reads of each code
#: point (_UNSEEN until met; ASCII's from the start); for one TO_FOLD, the one code point
#: its case fold is, or where that is several (ß: ss), _SEVERAL_ROW and the row of
#: _SEVERAL that holds them: 1.1 MB, and 4.4 MB touched as code points are met. Made at
#: import: made on first use, two threads starting at once each made their own (a review).
_READS = np.full(0x110000, _UNSEEN, np.uint8)
_READS[:0x80] = 0
_FOLDS = np.zeros(0x110000, np.uint32)
_SEVERAL_MOST = 3  # the most code points a case fold is (_textcore.SEVERAL_MOST)
_SEVERAL_ROW = 0x80000000
#: Rows for all of Unicode 15's 104 folds into several; past them, a fold is left 0 and
#: its texts are folded whole in Python (_past_ascii).
_SEVERAL = np.zeros((256, _SEVERAL_MOST), np.uint32)
_several_rows = 0
_LEARNING = threading.Lock()


def _learn(new: np.ndarray) -> None:
    """core_reads of these code points into the tables, and of what each folds into.
    One thread at a time: two taking one row of _SEVERAL each left a fold a row of
    zeros, and its character was not written (a review)."""
    global _several_rows
    with _LEARNING:
        for c in new.tolist():
            if _READS[c] != _UNSEEN:  # learnt as what another folds into, or by another thread
                continue
            reads = core_reads(chr(c))
            if reads == TO_FOLD:
                fold = chr(c).casefold()
                for piece in fold:
                    if _READS[ord(piece)] == _UNSEEN:
                        _READS[ord(piece)] = core_reads(piece)
                if len(fold) == 1:
                    _FOLDS[c] = ord(fold)
                elif len(fold) <= _SEVERAL_MOST and _several_rows < len(_SEVERAL):
                    _SEVERAL[_several_rows, : len(fold)] = [ord(piece) for piece in fold]
                    _FOLDS[c] = _SEVERAL_ROW | _several_rows
                    _several_rows += 1
            _READS[c] = reads  # last: the loop reads _FOLDS[c] only for a TO_FOLD
