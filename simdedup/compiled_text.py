"""A compiled core (numba) for ASCII text: words found, hashed, summed and sketched in one pass.

What features.py, fingerprint.py and sketch.py do for a batch of ASCII texts in several
numpy passes (\\w+ words, xxh3-64, +-1 column sums, the head window, the verification
sketch), done here in one compiled call, with the same results, bit for bit
(tests/test_compiled_text.py). A first pass over the batch's bytes, without branches,
folds their case and marks which are word bytes, one bit a byte; then each document's
words are found 64 bytes at a time, as the bits where that mark changes, and hashed,
summed and sketched in one loop. Pure functions of arrays: none keeps state between
calls or prints.

numba costs a process about half a second the first time it calls a compiled function
(compiled.py's docstring), so callers switch to this core only once a run is large
(fingerprint.CompiledAfter); the results are the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from .fingerprint import _LANE_MASK as _LANE
from .fingerprint import _LANE_MAX
from .settings import HEAD_TOKENS
from .sketch import _EMPTY, _FMIX, _MIX
from .xxh3 import _MASK32, _PRIME64_1, _PRIME64_2, _PRIME64_3, _PRIME_MX1, _PRIME_MX2, _SECRET, VECTORIZED_MAX

#: The secret's 64-bit little-endian words at every byte offset xxh3 reads from.
_S64 = np.array([int.from_bytes(_SECRET[o : o + 8], "little") for o in range(len(_SECRET) - 7)], np.uint64)
_FLIP_1TO3 = np.uint64(
    (int.from_bytes(_SECRET[0:4], "little") ^ int.from_bytes(_SECRET[4:8], "little")) & 0xFFFFFFFF
)
_FLIP_4TO8 = np.uint64(int(_S64[8]) ^ int(_S64[16]))
_FLIP_9TO16 = (np.uint64(int(_S64[24]) ^ int(_S64[32])), np.uint64(int(_S64[40]) ^ int(_S64[48])))


@njit(inline="always")
def _read(buf, at, width):  # type: ignore[no-untyped-def]
    # `width` bytes at buf[at] as a little-endian integer.
    x = np.uint64(0)
    for i in range(width):
        x |= np.uint64(buf[at + i]) << np.uint64(8 * i)
    return x


@njit(inline="always")
def _mul128_fold64(a, b):  # type: ignore[no-untyped-def]
    # xxh3.py's: the 128-bit product from 32-bit halves, its halves xored.
    a_lo, a_hi = a & _MASK32, a >> np.uint64(32)
    b_lo, b_hi = b & _MASK32, b >> np.uint64(32)
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    cross = (lo_lo >> np.uint64(32)) + (hi_lo & _MASK32) + a_lo * b_hi
    upper = (hi_lo >> np.uint64(32)) + (cross >> np.uint64(32)) + a_hi * b_hi
    return ((cross << np.uint64(32)) | (lo_lo & _MASK32)) ^ upper


@njit(inline="always")
def _avalanche(h):  # type: ignore[no-untyped-def]
    h ^= h >> np.uint64(37)
    h *= _PRIME_MX1
    return h ^ (h >> np.uint64(32))


@njit(inline="always")
def _mix16(buf, at, secret):  # type: ignore[no-untyped-def]
    return _mul128_fold64(_read(buf, at, 8) ^ _S64[secret], _read(buf, at + 8, 8) ^ _S64[secret + 8])


@njit(inline="always")
def _xxh3(buf, at, n):  # type: ignore[no-untyped-def]
    """xxh3-64, seed 0, of buf[at:at + n], 1 <= n <= 128 (xxh3.py's length classes)."""
    length = np.uint64(n)
    if n <= 3:
        c1, c2, c3 = np.uint64(buf[at]), np.uint64(buf[at + (n >> 1)]), np.uint64(buf[at + n - 1])
        h = ((c1 << np.uint64(16)) | (c2 << np.uint64(24)) | c3 | (length << np.uint64(8))) ^ _FLIP_1TO3
        h ^= h >> np.uint64(33)
        h *= _PRIME64_2
        h ^= h >> np.uint64(29)
        h *= _PRIME64_3
        return h ^ (h >> np.uint64(32))
    if n <= 8:
        h = (_read(buf, at + n - 4, 4) + (_read(buf, at, 4) << np.uint64(32))) ^ _FLIP_4TO8
        h ^= ((h << np.uint64(49)) | (h >> np.uint64(15))) ^ ((h << np.uint64(24)) | (h >> np.uint64(40)))
        h *= _PRIME_MX2
        h ^= (h >> np.uint64(35)) + length
        h *= _PRIME_MX2
        return h ^ (h >> np.uint64(28))
    if n <= 16:
        lo = _read(buf, at, 8) ^ _FLIP_9TO16[0]
        hi = _read(buf, at + n - 8, 8) ^ _FLIP_9TO16[1]
        swapped = np.uint64(0)  # lo's bytes reversed
        for i in range(8):
            swapped |= ((lo >> np.uint64(8 * i)) & np.uint64(0xFF)) << np.uint64(56 - 8 * i)
        return _avalanche(length + swapped + hi + _mul128_fold64(lo, hi))
    acc = length * _PRIME64_1
    end = at + n
    acc += _mix16(buf, at, 0) + _mix16(buf, end - 16, 16)
    for round_ in range(1, 4):  # 32 more bytes a round, from both ends, while the string lasts
        if n <= 32 * round_:
            break
        acc += _mix16(buf, at + 16 * round_, 32 * round_) + _mix16(
            buf, end - 16 * round_ - 16, 32 * round_ + 16
        )
    return _avalanche(acc)


_U8 = np.uint8
_ONE = np.uint64(1)
#: Eight bytes of 0 or 1 (little-endian, in a word) times this: their eight bits in the top byte.
_GATHER_BITS = np.uint64(0x0102040810204080)


@njit(inline="always")
def _fold(raw, low, word_bits):  # type: ignore[no-untyped-def]
    """low: raw's ASCII bytes case-folded; word_bits: bit i % 64 of word i // 64 is 1
    where low[i] is a \\w byte, [0-9a-z_]. Branch-free, so LLVM vectorizes it."""
    n = raw.shape[0]
    is_word = np.zeros(64 * word_bits.shape[0], np.uint8)
    for i in range(n):
        c = raw[i]
        c += _U8(32) * _U8(_U8(c - _U8(65)) < _U8(26))  # A-Z
        low[i] = c
        is_word[i] = _U8(_U8(c - _U8(97)) < _U8(26)) | _U8(_U8(c - _U8(48)) < _U8(10)) | _U8(c == _U8(95))
    eights = is_word.view(np.uint64)
    for w in range(word_bits.shape[0]):
        x = np.uint64(0)
        for j in range(8):
            x |= ((eights[8 * w + j] * _GATHER_BITS) >> np.uint64(56)) << np.uint64(8 * j)
        word_bits[w] = x


@njit(inline="always")
def _word_edges(word_bits, start, end, edges):  # type: ignore[no-untyped-def]
    """Where the words of [start, end) start and end, in order, into `edges` (a word
    ends where the span does if it is still open there); how many were written. One
    step per 64 bytes and one per edge, found as the bits where word_bits changes."""
    count = 0
    before = np.uint64(0)  # the last byte of the 64 before, as a bit
    for base in range(start & ~63, end, 64):
        w = word_bits[base >> 6]
        if base < start:
            w &= ~((_ONE << np.uint64(start - base)) - _ONE)
        if end - base < 64:
            w &= (_ONE << np.uint64(end - base)) - _ONE
        changes = w ^ ((w << _ONE) | before)
        before = w >> np.uint64(63)
        while changes:
            edges[count] = base + trailing_zeros(changes)
            count += 1
            changes &= changes - _ONE
    if count % 2:
        edges[count] = end
        count += 1
    return count


@njit(inline="always")
def _fingerprint(hashes, lo, hi, lanes, ones):  # type: ignore[no-untyped-def]
    """fingerprint.occurrence_fingerprints of hashes[lo:hi] (hi > lo): bit i is 1 when
    more than half the hashes have it. Counted in byte lanes, as there: (h >> j) &
    0x0101..01 puts bits j, j + 8, ... in the bytes of one word, emptied into `ones`
    every _LANE_MAX hashes."""
    ones[:] = 0
    for start in range(lo, hi, _LANE_MAX):
        l0 = l1 = l2 = l3 = l4 = l5 = l6 = l7 = np.uint64(0)
        for t in range(start, min(start + _LANE_MAX, hi)):
            x = hashes[t]
            l0 += x & _LANE
            l1 += (x >> np.uint64(1)) & _LANE
            l2 += (x >> np.uint64(2)) & _LANE
            l3 += (x >> np.uint64(3)) & _LANE
            l4 += (x >> np.uint64(4)) & _LANE
            l5 += (x >> np.uint64(5)) & _LANE
            l6 += (x >> np.uint64(6)) & _LANE
            l7 += (x >> np.uint64(7)) & _LANE
        lanes[0], lanes[1], lanes[2], lanes[3] = l0, l1, l2, l3
        lanes[4], lanes[5], lanes[6], lanes[7] = l4, l5, l6, l7
        for j in range(8):
            for b in range(8):
                ones[8 * b + j] += np.int64((lanes[j] >> np.uint64(8 * b)) & np.uint64(0xFF))
    fp = np.uint64(0)
    for i in range(64):
        if 2 * ones[i] > hi - lo:
            fp |= np.uint64(1) << np.uint64(i)
    return fp


@njit(cache=True, nogil=True)
def ascii_documents(
    raw, starts, ends, heads, log2_bins, bits, fps, found, head_fps, has_head, sketches, done
):  # type: ignore[no-untyped-def]
    """For each document d, raw[starts[d]:ends[d]] (ASCII bytes, case-folded here): its
    fingerprint (fps[d]; found[d]: it has a word), with `heads` its head fingerprint
    (head_fps[d]; has_head[d]: it has more than HEAD_TOKENS words), and where
    sketches has rows, its one-permutation sketch of 2 ** log2_bins bins of `bits`
    bits (sketch.OnePermutation.sketch of sketch.shingles_of_units of its words).
    done[d] is False for a document with a word longer than xxh3.VECTORIZED_MAX
    bytes, which the numpy path hashes instead (its other outputs are not written)."""
    buf = np.empty(raw.shape[0], np.uint8)
    word_bits = np.empty((raw.shape[0] + 63) // 64, np.uint64)
    _fold(raw, buf, word_bits)
    longest = 0
    for d in range(starts.shape[0]):
        longest = max(longest, ends[d] - starts[d])
    edges = np.empty(longest + 2, np.int64)
    hashes = np.empty(longest // 2 + 1, np.uint64)
    lanes = np.empty(8, np.uint64)
    ones = np.empty(64, np.int64)
    minima = np.empty(1 << log2_bins, np.uint16)
    per_byte = 8 // bits
    codes = (1 << bits) - 1
    sketch = sketches.shape[0] > 0
    for d in range(starts.shape[0]):
        m = _word_edges(word_bits, starts[d], ends[d], edges) // 2  # words
        done[d] = True
        for w in range(m):
            p, q = edges[2 * w], edges[2 * w + 1]
            if q - p > VECTORIZED_MAX:
                done[d] = False
                break
            hashes[w] = _xxh3(buf, p, q - p)
        if not done[d]:
            continue
        found[d] = m > 0
        has_head[d] = False
        if m > 0:
            fps[d] = _fingerprint(hashes, 0, m, lanes, ones)
        if heads and m > HEAD_TOKENS:
            best = 0  # the first of the smallest hashes that HEAD_TOKENS - 1 words follow
            for s in range(1, m - HEAD_TOKENS + 1):
                if hashes[s] < hashes[best]:
                    best = s
            head_fps[d] = _fingerprint(hashes, best, best + HEAD_TOKENS, lanes, ones)
            has_head[d] = True
        if not sketch:
            continue
        minima[:] = _EMPTY
        # Word 3-shingles; a text of one or two words is one shingle, padded with 0.
        for s in range(max(m - 2, 1) if m > 0 else 0):
            b = hashes[s + 1] if s + 1 < m else np.uint64(0)
            c = hashes[s + 2] if s + 2 < m else np.uint64(0)
            h = hashes[s] * _MIX[0] + b * _MIX[1] + c
            h ^= h >> np.uint64(33)
            h *= _FMIX[0]
            h ^= h >> np.uint64(33)
            h *= _FMIX[1]
            h ^= h >> np.uint64(33)
            slot = np.int64(h >> np.uint64(64 - log2_bins))
            value = min(np.int64((h >> np.uint64(48 - log2_bins)) & np.uint64(0xFFFF)), _EMPTY - 1)
            if value < minima[slot]:
                minima[slot] = value
        for w in range(sketches.shape[1]):
            packed = 0
            for j in range(per_byte):  # codes 1 .. 2 ** bits - 1 by multiply-shift, 0 if empty
                least = np.int64(minima[per_byte * w + j])
                packed |= ((((least & 0xFF) * codes >> 8) + 1) * (least != _EMPTY)) << (bits * j)
            sketches[d, w] = packed


def ascii_batch(
    texts: Sequence[str], heads: bool, sketch_bins: int = 0, sketch_bits: int = 2
) -> tuple[list[int | None], list[int | None], np.ndarray, np.ndarray]:
    """(fingerprints, head fingerprints, sketches, done) of ASCII texts, as the numpy
    path makes them (None: no word; no head: HEAD_TOKENS words or fewer, or `heads`
    False). Sketches: (len(texts), sketch_bins * sketch_bits / 8) uint8 where sketch_bins
    > 0, else none. done[i] is False for a text the numpy path must do instead (a word
    longer than xxh3.VECTORIZED_MAX bytes); its other results are meaningless."""
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    starts = np.cumsum(lengths + 1) - lengths - 1
    data = " ".join(texts).encode("ascii")
    return ascii_spans(data, starts, starts + lengths, heads, sketch_bins, sketch_bits)


def ascii_spans(
    data: bytes, starts: np.ndarray, ends: np.ndarray, heads: bool, sketch_bins: int = 0, sketch_bits: int = 2
) -> tuple[list[int | None], list[int | None], np.ndarray, np.ndarray]:
    """ascii_batch of the texts data[starts[i]:ends[i]] (ASCII bytes, int64 bounds),
    read where they are: the lines of a chunk of a file (read.AsciiLines)."""
    n = len(starts)
    buf = np.frombuffer(data, np.uint8)
    fps, head_fps = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    found, has_head, done = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
    width = sketch_bins * sketch_bits // 8
    sketches = np.zeros((n if sketch_bins else 0, width), np.uint8)
    log2_bins = max(sketch_bins.bit_length() - 1, 0)
    ascii_documents(
        buf,
        np.ascontiguousarray(starts, np.int64),  # the types warm() compiled for
        np.ascontiguousarray(ends, np.int64),
        heads,
        log2_bins,
        sketch_bits,
        fps,
        found,
        head_fps,
        has_head,
        sketches,
        done,
    )
    return (
        [fp if ok else None for fp, ok in zip(fps.tolist(), found.tolist())],
        [fp if ok else None for fp, ok in zip(head_fps.tolist(), has_head.tolist())],
        sketches,
        done,
    )


def load() -> None:
    """numba and ascii_documents loaded from numba's cache and run once: ~0.55 s in a
    process that has not run numba yet, ~20 ms in one that has."""
    ascii_batch([""], heads=True, sketch_bins=64)


def warm() -> None:
    """Compile ascii_documents into numba's cache, for the argument types ascii_batch gives."""
    ascii_batch(["a b c " * 12, "x" * 200], heads=True, sketch_bins=1024)
    ascii_batch(["a"], heads=False)
