"""xxh3-64 and xxh3-128 (seed 0) of many short byte strings at once, in numpy.

The same hashes as `xxhash.xxh3_64_intdigest(data)` (hash_spans) and
`xxhash.xxh3_128_intdigest(data)` (hash_spans128, `--bits 128`), computed for a whole
batch of tokens of one buffer without a Python call per token. Strings of up to 128
bytes take the vectorized path; longer ones (rare in text) go to the xxhash package one
by one. Never allocates per token in Python; never prints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import xxhash

#: The first 128 bytes of xxh3's default secret (kSecret), all that strings up to
#: 128 bytes read.
_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
)
VECTORIZED_MAX = 128
_PRIME32_1 = np.uint64(0x9E3779B1)
_PRIME64_1 = np.uint64(0x9E3779B185EBCA87)
_PRIME64_2 = np.uint64(0xC2B2AE3D27D4EB4F)
_PRIME64_3 = np.uint64(0x165667B19E3779F9)
_PRIME_MX1 = np.uint64(0x165667919E3779F9)
_PRIME_MX2 = np.uint64(0x9FB21C651E98DF25)
_MASK32 = np.uint64(0xFFFFFFFF)


def _s64(offset: int) -> np.uint64:
    return np.uint64(int.from_bytes(_SECRET[offset : offset + 8], "little"))


def _s32(offset: int) -> int:
    return int.from_bytes(_SECRET[offset : offset + 4], "little")


_U = {n: np.uint64(n) for n in range(65)}


def _xorshift(h: np.ndarray, shift: int) -> np.ndarray:
    return h ^ (h >> _U[shift])


def _avalanche(h: np.ndarray) -> np.ndarray:
    h = _xorshift(h, 37)
    h *= _PRIME_MX1
    return _xorshift(h, 32)


def _xxh64_avalanche(h: np.ndarray) -> np.ndarray:
    h = _xorshift(h, 33)
    h *= _PRIME64_2
    h = _xorshift(h, 29)
    h *= _PRIME64_3
    return _xorshift(h, 32)


def _mul128(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper): the 64-bit halves of the full 128-bit product a * b, from 32-bit
    halves."""
    a_lo, a_hi = a & _MASK32, a >> _U[32]
    b_lo, b_hi = b & _MASK32, b >> _U[32]
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    hi_hi = a_hi * b_hi
    cross = (lo_lo >> _U[32]) + (hi_lo & _MASK32) + lo_hi
    upper = (hi_lo >> _U[32]) + (cross >> _U[32]) + hi_hi
    lower = (cross << _U[32]) | (lo_lo & _MASK32)
    return lower, upper


def _mul128_fold64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a * b) mod 2**64 xor (a * b) >> 64."""
    lower, upper = _mul128(a, b)
    return lower ^ upper


def _windows(buf: np.ndarray, width: int) -> np.ndarray:
    """Every `width`-byte window of buf as a little-endian unsigned integer view source."""
    return np.lib.stride_tricks.sliding_window_view(buf, width)


def _read64(win8: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(win8[pos]).view("<u8").ravel().astype(np.uint64, copy=False)


def _read32(win4: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(win4[pos]).view("<u4").ravel().astype(np.uint64)


def hash_spans(data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """xxh3_64 (seed 0) of data[starts[i]:ends[i]] for every i, as uint64.

    >>> import xxhash
    >>> hash_spans(b"hello world", np.array([0, 6]), np.array([5, 11])).tolist() == [
    ...     xxhash.xxh3_64_intdigest(b"hello"), xxhash.xxh3_64_intdigest(b"world")]
    True
    """
    classes = ((0, 0, _len0), (1, 3, _len1to3), (4, 8, _len4to8), (9, 16, _len9to16), (17, 128, _len17to128))
    return _by_length(data, starts, ends, classes, (), xxhash.xxh3_64_intdigest)


def _by_length(
    data: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    classes: tuple[tuple[int, int, Any], ...],
    shape: tuple[int, ...],
    longer: Callable[[bytes], Any],
) -> np.ndarray:
    """Each span's hash, of `shape` uint64 words: `classes` (first, last length, the
    function) hash the spans of each length class up to VECTORIZED_MAX bytes at once,
    `longer` the longer ones one by one."""
    starts = np.asarray(starts, dtype=np.intp)
    ends = np.asarray(ends, dtype=np.intp)
    n = len(starts)
    out = np.empty((n, *shape), dtype=np.uint64)
    if not n:
        return out
    # Padding lets every 8-byte read past a short token's end stay inside the buffer.
    buf = np.frombuffer(data + bytes(16), dtype=np.uint8)
    win8, win4 = _windows(buf, 8), _windows(buf, 4)
    lengths = ends - starts
    with np.errstate(over="ignore"):
        for first, last, fn in classes:
            idx = np.flatnonzero((lengths >= first) & (lengths <= last))
            if len(idx) == n:
                out[:] = fn(buf, win8, win4, starts, lengths)
            elif len(idx):
                out[idx] = fn(buf, win8, win4, starts[idx], lengths[idx])
    for i in np.flatnonzero(lengths > VECTORIZED_MAX).tolist():
        out[i] = longer(data[starts[i] : ends[i]])
    return out


def _len0(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    value = _xxh64_avalanche(np.array([_s64(56) ^ _s64(64)], dtype=np.uint64))[0]
    return np.full(len(starts), value, dtype=np.uint64)


def _len1to3(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    c1 = buf[starts].astype(np.uint64)
    c2 = buf[starts + (lengths >> 1)].astype(np.uint64)
    c3 = buf[starts + lengths - 1].astype(np.uint64)
    combined = (c1 << _U[16]) | (c2 << _U[24]) | c3 | (lengths.astype(np.uint64) << _U[8])
    bitflip = np.uint64((_s32(0) ^ _s32(4)) & 0xFFFFFFFF)
    return _xxh64_avalanche(combined ^ bitflip)


def _len4to8(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    input1 = _read32(win4, starts)
    input2 = _read32(win4, starts + lengths - 4)
    bitflip = _s64(8) ^ _s64(16)
    h = (input2 + (input1 << _U[32])) ^ bitflip
    h ^= ((h << _U[49]) | (h >> _U[15])) ^ ((h << _U[24]) | (h >> _U[40]))
    h *= _PRIME_MX2
    h ^= (h >> _U[35]) + lengths.astype(np.uint64)
    h *= _PRIME_MX2
    return _xorshift(h, 28)


def _bswap64(x: np.ndarray) -> np.ndarray:
    return x.byteswap()


def _len9to16(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    lo = _read64(win8, starts) ^ (_s64(24) ^ _s64(32))
    hi = _read64(win8, starts + lengths - 8) ^ (_s64(40) ^ _s64(48))
    acc = lengths.astype(np.uint64) + _bswap64(lo) + hi + _mul128_fold64(lo, hi)
    return _avalanche(acc)


def _mix16(win8, at, secret_offset):  # type: ignore[no-untyped-def]
    return _mul128_fold64(
        _read64(win8, at) ^ _s64(secret_offset), _read64(win8, at + 8) ^ _s64(secret_offset + 8)
    )


def _len17to128(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    acc = lengths.astype(np.uint64) * _PRIME64_1
    ends = starts + lengths
    acc += _mix16(win8, starts, 0) + _mix16(win8, ends - 16, 16)
    for limit, first, secret in ((32, 16, 32), (64, 32, 64), (96, 48, 96)):
        longer = np.flatnonzero(lengths > limit)
        if not len(longer):
            break
        s, e = starts[longer], ends[longer]
        acc[longer] += _mix16(win8, s + first, secret) + _mix16(win8, e - first - 16, secret + 16)
    return _avalanche(acc)


_PRIME32_2 = np.uint64(0x85EBCA77)
_PRIME64_4 = np.uint64(0x85EBCA77C2B2AE63)


def hash_spans128(data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """xxh3_128 (seed 0) of data[starts[i]:ends[i]] for every i, as an (n, 2) uint64
    array of its low and high 64 bits (`xxhash.xxh3_128_intdigest` is high << 64 | low).

    >>> import xxhash
    >>> low, high = hash_spans128(b"hello", np.array([0]), np.array([5]))[0].tolist()
    >>> high << 64 | low == xxhash.xxh3_128_intdigest(b"hello")
    True
    """
    classes = (
        (0, 0, _len0_128),
        (1, 3, _len1to3_128),
        (4, 8, _len4to8_128),
        (9, 16, _len9to16_128),
        (17, 128, _len17to128_128),
    )
    return _by_length(data, starts, ends, classes, (2,), _halves)


def _halves(data: bytes) -> tuple[int, int]:
    value = xxhash.xxh3_128_intdigest(data)
    return value & 0xFFFFFFFFFFFFFFFF, value >> 64


def _len0_128(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    pair = np.array([_s64(64) ^ _s64(72), _s64(80) ^ _s64(88)], dtype=np.uint64)
    return np.tile(_xxh64_avalanche(pair), (len(starts), 1))


_U32_BYTE = (np.uint64(0xFF), np.uint64(0xFF00))


def _bswap32(x: np.ndarray) -> np.ndarray:
    """The byte-swap of 32-bit values held in uint64."""
    return (
        ((x & _U32_BYTE[0]) << _U[24])
        | ((x & _U32_BYTE[1]) << _U[8])
        | ((x >> _U[8]) & _U32_BYTE[1])
        | (x >> _U[24])
    )


def _len1to3_128(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    c1 = buf[starts].astype(np.uint64)
    c2 = buf[starts + (lengths >> 1)].astype(np.uint64)
    c3 = buf[starts + lengths - 1].astype(np.uint64)
    low = (c1 << _U[16]) | (c2 << _U[24]) | c3 | (lengths.astype(np.uint64) << _U[8])
    swapped = _bswap32(low)
    high = ((swapped << _U[13]) | (swapped >> _U[19])) & _MASK32
    flip_low = np.uint64(_s32(0) ^ _s32(4))
    flip_high = np.uint64(_s32(8) ^ _s32(12))
    return np.column_stack((_xxh64_avalanche(low ^ flip_low), _xxh64_avalanche(high ^ flip_high)))


def _len4to8_128(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    keyed = (_read32(win4, starts) + (_read32(win4, starts + lengths - 4) << _U[32])) ^ (_s64(16) ^ _s64(24))
    low, high = _mul128(keyed, _PRIME64_1 + (lengths.astype(np.uint64) << _U[2]))
    high += low << _U[1]
    low ^= high >> _U[3]
    low = _xorshift(low, 35)
    low *= _PRIME_MX2
    return np.column_stack((_xorshift(low, 28), _avalanche(high)))


def _len9to16_128(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    input_lo = _read64(win8, starts)
    input_hi = _read64(win8, starts + lengths - 8)
    low, high = _mul128(input_lo ^ input_hi ^ (_s64(32) ^ _s64(40)), np.full(len(starts), _PRIME64_1))
    low += (lengths.astype(np.uint64) - _U[1]) << _U[54]
    input_hi ^= _s64(48) ^ _s64(56)
    high += input_hi + (input_hi & _MASK32) * (_PRIME32_2 - _U[1])
    low ^= _bswap64(high)
    h_low, h_high = _mul128(low, np.full(len(starts), _PRIME64_2))
    h_high += high * _PRIME64_2
    return np.column_stack((_avalanche(h_low), _avalanche(h_high)))


def _len17to128_128(buf, win8, win4, starts, lengths):  # type: ignore[no-untyped-def]
    ends = starts + lengths
    low = lengths.astype(np.uint64) * _PRIME64_1
    high = np.zeros(len(starts), np.uint64)
    # xxh3's mix32B, from the middle out: bytes 48.., 32.., 16.. where the input is longer
    # than 96, 64, 32 bytes, then 0.. (the order matters: each step adds and xors)
    for limit, first, secret in ((96, 48, 96), (64, 32, 64), (32, 16, 32), (-1, 0, 0)):
        at = np.flatnonzero(lengths > limit)
        if not len(at):
            continue
        one, two = starts[at] + first, ends[at] - first - 16
        low[at] += _mix16(win8, one, secret)
        low[at] ^= _read64(win8, two) + _read64(win8, two + 8)
        high[at] += _mix16(win8, two, secret + 16)
        high[at] ^= _read64(win8, one) + _read64(win8, one + 8)
    h_low = low + high
    h_high = low * _PRIME64_1 + high * _PRIME64_4 + lengths.astype(np.uint64) * _PRIME64_2
    return np.column_stack((_avalanche(h_low), np.uint64(0) - _avalanche(h_high)))
