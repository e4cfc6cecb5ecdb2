"""The compiled core for text without Han characters: words found, hashed, summed and
sketched in one pass.

What features.py, fingerprint.py and sketch.py do for a batch of texts in several numpy
passes (\\w+ words, xxh3-64, +-1 column sums, the head window, the verification sketch),
done in one call of a C extension (_textcore.c), with the same results, bit for bit
(tests/test_compiled_text.py). It reads ASCII, and other text as features.core_spans
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

from collections.abc import Sequence

import numpy as np

from ._textcore import text_documents


def ascii_batch(
    texts: Sequence[str], heads: bool, sketch_bins: int = 0, sketch_bits: int = 2, sketch_exact: int = 0
) -> tuple[list[int | None], list[int | None], np.ndarray, np.ndarray]:
    """(fingerprints, head fingerprints, sketches, done) of ASCII texts, as the numpy
    path makes them (None: no word; no head: HEAD_TOKENS words or fewer, or `heads`
    False). Sketches: (len(texts), sketch_bins * sketch_bits / 8) uint8 where sketch_bins
    > 0, else none (exact sketches for texts of 1 to sketch_exact distinct shingles:
    sketch.OnePermutation). done[i] is False for a text the numpy path must do instead (a word
    longer than xxh3.VECTORIZED_MAX bytes); its other results are meaningless."""
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    starts = np.cumsum(lengths + 1) - lengths - 1
    data = " ".join(texts).encode("ascii")
    return text_spans(data, starts, starts + lengths, heads, sketch_bins, sketch_bits, sketch_exact)


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
    are: the lines of a chunk of a file (read.AsciiLines), or what features.core_spans
    made of a batch (ASCII, or UTF-8 in which every byte past ASCII is a word byte)."""
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
