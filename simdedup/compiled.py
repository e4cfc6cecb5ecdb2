"""Compiled loops (numba) for the index and verification, where numpy's passes cost most.

Each function here does in one compiled loop what index.py or sketch.py does in several
numpy passes, and gives the same result, bit for bit (tests/test_compiled.py). They are
pure functions of arrays; none keeps state between calls or prints.

numba costs about half a second the first time a process calls one of them (its import
and the compiled code read back from its cache), so they serve an index only once it
holds index.COMPILED_ROWS fingerprints (BlockIndex.compiled), and verification of its
candidates from then on. Compiling them all takes about 8 s: `make install` does it once
(warm()), into numba's cache beside this file.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit(inline="always")
def _popcount(x):  # type: ignore[no-untyped-def]
    # LLVM turns this into one popcnt instruction where the CPU has one.
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@njit(inline="always")
def _key_hash(x, starts, masks, mix):  # type: ignore[no-untyped-def]
    # index.Layout.key_hash of one 64-bit fingerprint (uint64 arithmetic wraps alike).
    h = ((x >> starts[0]) & masks[0]) * mix[0]
    for b in range(1, starts.shape[0]):
        h ^= h >> np.uint64(29)
        h = (h ^ ((x >> starts[b]) & masks[b])) * mix[1]
    h ^= h >> np.uint64(32)
    return h * mix[2]


@njit(cache=True, nogil=True)
def table_buckets(words, starts, masks, mix, p):  # type: ignore[no-untyped-def]
    """Each 64-bit fingerprint's bucket (int64) in a table keyed on the blocks at
    `starts` with `masks`, among 2 ** p: index.Layout.key_hash and _bucket_of in one
    pass, the same integers, without their arrays."""
    out = np.empty(words.shape[0], np.int64)
    shift = np.uint64(64 - p)
    for i in range(words.shape[0]):
        out[i] = np.int64(_key_hash(words[i], starts, masks, mix) >> shift) if p > 0 else 0
    return out


@njit(cache=True, nogil=True)
def keys_in_order(words, starts, masks, mix):  # type: ignore[no-untyped-def]
    """(hashes, order): each 64-bit fingerprint's key hash in a table (as
    index.Layout.key_hash gives it) and the fingerprints' places sorted by it. A run's
    bucket is a hash's top bits, so this order puts the queries in bucket order in every
    run: search_run sorts once a table instead of once a table and run."""
    hashes = np.empty(words.shape[0], np.uint64)
    for i in range(words.shape[0]):
        hashes[i] = _key_hash(words[i], starts, masks, mix)
    return hashes, np.argsort(hashes)


@njit(cache=True, nogil=True)
def build_table(buckets, order, offsets):  # type: ignore[no-untyped-def]
    """One table of a run from each row's bucket (int64): its rows grouped by bucket,
    ascending inside a bucket, written to `order` (uint32, one per row), and where each
    bucket starts written to `offsets` (uint32, buckets + 1, zeros on entry). A counting
    sort, O(rows), where index._Run's numpy path sorts."""
    for i in range(buckets.shape[0]):
        offsets[buckets[i] + 1] += 1
    for b in range(offsets.shape[0] - 1):
        offsets[b + 1] += offsets[b]
    fill = offsets[:-1].astype(np.int64)
    for i in range(buckets.shape[0]):
        b = buckets[i]
        order[fill[b]] = i
        fill[b] += 1


@njit(cache=True, nogil=True)
def search_run(
    order,
    offsets,
    start,
    p,
    hashes,
    by_hash,
    words,
    queries,
    k,
    rules,
    t_lo,
    t_hi,
    hot,
):  # type: ignore[no-untyped-def]
    """(query, row, distance) for every row of one run within k of a query whose first
    table keyed on blocks they agree on is one of tables t_lo..t_hi - 1 (so each pair
    once over all the tables), as index._Run.search finds them, for 64-bit
    fingerprints. `hashes`, `by_hash`: (tables, m) each query's key hash in each table
    and the queries sorted by it (keys_in_order), of which the run's 2 ** p buckets are
    the top p bits; `words`: every stored fingerprint; rows are local + start; `rules`:
    index.Layout.first_table_rules.

    Queries that fall in the same bucket (common words make a few buckets hot) are
    compared with it together: its fingerprints are gathered once (or read from the
    run's copy of its hot buckets, `hot`: see hot_copies), then read in order, 64 at a
    time, in a vectorized pass that tells both whether a row is within k and whether
    this table is the pair's first (_within): a pair met in several tables costs a
    write in one.

    Each table is searched in passes over the queries in bucket order: the buckets'
    bounds, then the rows of the buckets not copied, then those rows' fingerprints,
    then the comparisons. The reads of a pass do not wait on one another, so the CPU
    has many in flight. Read bucket by bucket, each waited on the one before: 1.6-2x
    the time on random fingerprints, 1.1-1.3x on crowded ones (1M-3M rows)."""
    hot_ids, hot_tables, hot_at, hot_words, least = hot
    tables, m = hashes.shape
    shift = np.uint64(64 - p)
    sorted_buckets = np.zeros(m, np.int64)
    size = order.shape[0] // tables
    out = _triples(4 * m + 64)
    n = 0
    near = np.empty(64, np.int64)  # the places in a bucket within k of a query
    # Per group of queries in one bucket, at the group's first place in bucket order:
    # the place after its last, the bucket's bounds in the table, and where the bucket's
    # fingerprints start, in the copies (hot_words) or in `gathered`.
    ends = np.empty(m, np.int64)
    los = np.empty(m, np.int64)
    his = np.empty(m, np.int64)
    copied = np.empty(m, np.bool_)
    at = np.empty(m, np.int64)
    rows = np.empty(8 * m, np.int64)
    gathered = np.empty(8 * m, np.uint64)
    for t in range(t_lo, t_hi):
        by_bucket = by_hash[t]
        if p > 0:
            for i in range(m):
                sorted_buckets[i] = np.int64(hashes[t, by_bucket[i]] >> shift)
        i = 0
        while i < m:
            b = sorted_buckets[i]
            j = i + 1
            while j < m and sorted_buckets[j] == b:
                j += 1
            ends[i], los[i], his[i] = j, offsets[t, b], offsets[t, b + 1]
            i = j
        total = 0
        i = 0
        while i < m:
            copied[i] = his[i] - los[i] >= least
            if copied[i]:
                ids = hot_ids[hot_tables[t] : hot_tables[t + 1]]
                at[i] = hot_at[hot_tables[t] + np.searchsorted(ids, sorted_buckets[i])]
            else:
                at[i] = total
                total += his[i] - los[i]
            i = ends[i]
        if total > rows.shape[0]:
            rows = np.empty(2 * total, np.int64)
            gathered = np.empty(2 * total, np.uint64)
        i = 0
        while i < m:
            if not copied[i]:
                for r in range(his[i] - los[i]):
                    rows[at[i] + r] = np.int64(order[t * size + los[i] + r]) + start
            i = ends[i]
        for c in range(total):
            gathered[c] = words[rows[c]]
        i = 0
        while i < m:
            width = his[i] - los[i]
            if width > near.shape[0]:
                near = np.empty(2 * width, np.int64)
            bucket = (hot_words if copied[i] else gathered)[at[i] : at[i] + width]
            for qi in range(i, ends[i]):
                q = by_bucket[qi]
                value = queries[q]
                for h in range(_within(bucket, value, width, k, near, rules[t])):
                    r = near[h]
                    x = bucket[r] ^ value
                    out = _append(out, n, q, np.int64(order[t * size + los[i] + r]) + start, _popcount(x))
                    n += 1
            i = ends[i]
    return out[0][:n], out[1][:n], out[2][:n]


@njit(cache=True, nogil=True)
def hot_copies(order, offsets, start, words, least):  # type: ignore[no-untyped-def]
    """The buckets of at least `least` rows of a run's tables (order, offsets: as
    search_run takes them) and a copy of their rows' fingerprints in the tables' order:
    (ids, tables, at, copy), where table t's copied buckets are ids[tables[t]:tables[t +
    1]] (ascending) and the fingerprints of bucket ids[i]'s rows start at copy[at[i]],
    as many as the bucket holds. In a crowded index most
    of a query's candidates sit in a few large buckets; search_run reads those in order
    from here instead of gathering them from all over the index."""
    n_tables, n_buckets = offsets.shape[0], offsets.shape[1] - 1
    size = order.shape[0] // max(n_tables, 1)
    tables = np.zeros(n_tables + 1, np.int64)
    total = 0
    for t in range(n_tables):
        tables[t + 1] = tables[t]
        for b in range(n_buckets):
            rows = np.int64(offsets[t, b + 1]) - np.int64(offsets[t, b])
            if rows >= least:
                tables[t + 1] += 1
                total += rows
    ids = np.empty(tables[n_tables], np.int64)
    at = np.empty(tables[n_tables], np.int64)
    copy = np.empty(total, np.uint64)
    i = 0
    n = 0
    for t in range(n_tables):
        for b in range(n_buckets):
            lo, hi = np.int64(offsets[t, b]), np.int64(offsets[t, b + 1])
            if hi - lo < least:
                continue
            ids[i] = b
            at[i] = n
            for p in range(t * size + lo, t * size + hi):
                copy[n] = words[np.int64(order[p]) + start]
                n += 1
            i += 1
    return ids, tables, at, copy


@njit(cache=True, nogil=True)
def table_pairs(order, offsets, start, words, k, rule):  # type: ignore[no-untyped-def]
    """(i, j, d), i < j, for the rows of one table of a run (order, offsets: that
    table's) that share a bucket, are within k, and have this table as the first keyed
    on blocks they agree on (`rule`: its row of index.Layout.first_table_rules):
    index._Run.pairs for 64-bit fingerprints. Each bucket's fingerprints are gathered
    once and compared in order."""
    out = _triples(64)
    n = 0
    gathered = np.empty(64, np.uint64)
    near = np.empty(64, np.int64)
    for b in range(offsets.shape[0] - 1):
        lo, hi = np.int64(offsets[b]), np.int64(offsets[b + 1])
        size = hi - lo
        if size < 2:
            continue
        if size > gathered.shape[0]:
            gathered = np.empty(2 * size, np.uint64)
            near = np.empty(2 * size, np.int64)
        for p in range(size):
            gathered[p] = words[np.int64(order[lo + p]) + start]
        for a in range(size - 1):
            value = gathered[a]
            later = gathered[a + 1 : size]
            for h in range(_within(later, value, size - a - 1, k, near, rule)):
                c = a + 1 + near[h]
                d = _popcount(gathered[c] ^ value)
                out = _append(out, n, np.int64(order[lo + a]) + start, np.int64(order[lo + c]) + start, d)
                n += 1
    return out[0][:n], out[1][:n], out[2][:n]


@njit(inline="always")
def _within(words, value, n, k, at, rule):  # type: ignore[no-untyped-def]
    # The places j of words[:n] within k of value, in order, written to at[:count]
    # (at holds n or more); returns count. 64 places at a time: a mask of their hits,
    # built in a loop that LLVM vectorizes, then one write a hit (the mask's lowest set
    # bit). A place at a time, each written and the count moved on at a hit, cost 3-5
    # times as much where hits are 1-12% of a bucket, as in crowded ones.
    found = 0
    j = 0
    while j + 64 <= n:
        hits = _hits64(words, j, value, k, rule)
        while hits:
            at[found] = j + _popcount((hits & (~hits + _ONE)) - _ONE)  # the lowest set bit's place
            found += 1
            hits &= hits - _ONE
        j += 64
    while j < n:  # the last places (all of a small bucket's), most of them far
        x = words[j] ^ value
        if _popcount(x) <= k and _near_here(x, k, rule):
            at[found] = j
            found += 1
        j += 1
    return found


_ONE = np.uint64(1)


@njit(inline="always")
def _hits64(words, start, value, k, rule):  # type: ignore[no-untyped-def]
    # Bit e set where words[start + e] is a hit of value's (_near_here), for e < 64.
    hits = np.uint64(0)
    for e in range(64):
        hits |= np.uint64(_near_here(words[start + e] ^ value, k, rule)) << np.uint64(e)
    return hits


@njit(inline="always")
def _near_here(x, k, rule):  # type: ignore[no-untyped-def]
    # Whether two fingerprints whose XOR is x are within k and a table whose rule
    # (index.Layout.first_table_rules) is `rule` is the first keyed on blocks they agree
    # on: x is zero on the table's key, and on none of the blocks of `earlier`. For
    # those, y is x with every other bit set, and (y - low) & ~y & high, the classic
    # test for a zero byte made for these blocks, is non-zero exactly when one is zero.
    y = x | ~rule[1]
    return (_popcount(x) <= k) & ((x & rule[0]) == 0) & (((y - rule[2]) & ~y & rule[3]) == 0)


@njit(inline="always")
def _triples(capacity):  # type: ignore[no-untyped-def]
    return np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty(capacity, np.int64)


@njit(inline="always")
def _append(out, n, a, b, c):  # type: ignore[no-untyped-def]
    """Three int64 arrays with (a, b, c) written at n, doubled in size when full."""
    if n == out[0].shape[0]:
        grown = _triples(2 * n)
        for i in range(3):
            grown[i][:n] = out[i]
        out = grown
    out[0][n] = a
    out[1][n] = b
    out[2][n] = c
    return out


#: pair_similarity's unit of work and of early rejection: 8 words, one cache line.
_CHUNK = 8


@njit(cache=True, nogil=True)
def pair_similarity(a, a_rows, b, b_rows, bits, lanes, at_least, visit):  # type: ignore[no-untyped-def]
    """sketch.OnePermutation.similarity of a[a_rows[t]] and b[b_rows[t]] for every t,
    without gathering the rows: a and b are sketches as (rows, words) uint64, `lanes`
    the lowest bit of every code. The same integers and the same one division, so the
    same floats.

    Pairs that cannot reach `at_least` (> 0) get -1.0, decided as soon as the bins read
    so far prove it: with C codes, the estimate is (C agree - both) / ((C - 1) either),
    and the bins still unread can at best add all of a's remaining non-empty bins as
    agreeing ones, which bounds it by (C agree - both + (C - 1) r) / ((C - 1) (either +
    r)), r = a's non-empty bins left. Most candidate pairs of a crowded index are
    unrelated texts, rejected after a cache line or two of their 256 bytes. `a` should
    be the smaller side (a batch): its non-empty bins are counted for every row. Pairs
    are visited in the order of `visit` (a permutation of the pairs; sketch.by_row_group puts
    b's rows nearly in order, so that a large b is read nearly in order)."""
    out = np.empty(a_rows.shape[0], np.float64)
    codes = (1 << bits) - 1
    words = a.shape[1]
    chunks = (words + _CHUNK - 1) // _CHUNK
    # left[r, c]: a's row r's non-empty bins in chunks c.. (after chunk c - 1 is read)
    left = np.zeros((a.shape[0], chunks + 1), np.int64)
    if at_least > 0:
        for r in range(a.shape[0]):
            for w in range(words - 1, -1, -1):
                x = a[r, w]
                nonzero = x
                for i in range(1, bits):
                    nonzero |= x >> np.uint64(i)
                left[r, w // _CHUNK] += _popcount(nonzero & lanes)
            for c in range(chunks - 1, -1, -1):
                left[r, c] += left[r, c + 1]
    for v in range(visit.shape[0]):
        t = visit[v]
        ra, rb = a_rows[t], b_rows[t]
        agree = 0
        both = 0
        either = 0
        rejected = False
        for w in range(words):
            x, y = a[ra, w], b[rb, w]
            nonzero_x, nonzero_y, equal = x, y, ~(x ^ y)
            for i in range(1, bits):
                shift = np.uint64(i)
                nonzero_x |= x >> shift
                nonzero_y |= y >> shift
                equal &= ~(x ^ y) >> shift
            nonzero_x &= lanes
            nonzero_y &= lanes
            agree += _popcount(equal & nonzero_x)
            both += _popcount(nonzero_x & nonzero_y)
            either += _popcount(nonzero_x | nonzero_y)
            if at_least > 0 and (w + 1) % _CHUNK == 0 and w + 1 < words:
                r = left[ra, (w + 1) // _CHUNK]
                bound_den = (codes - 1) * (either + r)
                if bound_den > 0 and (codes * agree - both + (codes - 1) * r) / bound_den < at_least:
                    rejected = True
                    break
        if rejected:
            out[t] = -1.0
        elif either == 0:
            out[t] = 1.0
        else:
            estimate = (codes * agree - both) / max(either * (codes - 1), 1)
            out[t] = min(max(estimate, 0.0), 1.0)
    return out


@njit(cache=True, nogil=True)
def all_pairs(words, k):  # type: ignore[no-untyped-def]
    """Every (i, j, d), i < j, with d = popcount(words[i] ^ words[j]) <= k, sorted by i
    then j: index.near_pair_arrays for a batch, comparing every pair."""
    return _pairs(words, words, k, True)


@njit(cache=True, nogil=True)
def cross_pairs(queries, words, k):  # type: ignore[no-untyped-def]
    """Every (q, j, d) with d = popcount(queries[q] ^ words[j]) <= k, sorted by q then
    j: a batch of queries against the index's buffer of recent rows."""
    return _pairs(queries, words, k, False)


#: A rule (index.Layout.first_table_rules) that every pair within k meets: no table.
_EVERY_PAIR = np.zeros(4, np.uint64)


@njit(inline="always")
def _pairs(queries, words, k, after):  # type: ignore[no-untyped-def]
    n = words.shape[0]
    out = _triples(4 * queries.shape[0] + 64)
    near = np.empty(n, np.int64)
    found = 0
    for q in range(queries.shape[0]):
        value = queries[q]
        lo = q + 1 if after else 0
        for h in range(_within(words[lo:], value, n - lo, k, near, _EVERY_PAIR)):
            j = lo + near[h]
            out = _append(out, found, q, j, _popcount(words[j] ^ value))
            found += 1
    return out[0][:found], out[1][:found], out[2][:found]


def pairs_in_order(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int) -> tuple[np.ndarray, ...]:
    """The (i, j, d) triples of every part (int64 arrays; i, j < n, 0 <= d < 256) as
    three int64 arrays sorted by i, then j: index.near_pair_arrays's pairs, found table
    by table. One counting pass puts each (j, d) in its i's run, and each run, a few
    hundred pairs, is sorted where it lies: the 82M pairs of 1M corpus fingerprints at
    k = 4 took 18.5 s to concatenate and argsort. Consumes `parts`: each is dropped once
    it is placed."""
    total = sum(len(i) for i, _, _ in parts)
    bounds = np.zeros(n + 1, np.int64)
    for i, _, _ in parts:
        _count(i, bounds)
    np.cumsum(bounds, out=bounds)  # i's run: bounds[i]:bounds[i + 1]
    at, packed = bounds[:-1].copy(), np.empty(total, np.int64)  # j << 8 | d
    while parts:
        _place(*parts.pop(0), at, packed)
    i, d = np.empty(total, np.int64), np.empty(total, np.int64)
    _sorted_runs(packed, bounds, i, d)
    return i, packed, d


@njit(cache=True, nogil=True)
def _count(keys, bounds):  # type: ignore[no-untyped-def]
    # bounds[x + 1] += how many keys are x: its cumulative sum then bounds each x's run.
    for t in range(keys.shape[0]):
        bounds[keys[t] + 1] += 1


@njit(cache=True, nogil=True)
def _place(i, j, d, at, packed):  # type: ignore[no-untyped-def]
    for t in range(i.shape[0]):
        packed[at[i[t]]] = (j[t] << 8) | d[t]
        at[i[t]] += 1


@njit(cache=True, nogil=True)
def _sorted_runs(packed, bounds, i, d):  # type: ignore[no-untyped-def]
    # Each run sorted by j, then (i, j, d) written out, packed becoming j in place.
    for x in range(bounds.shape[0] - 1):
        lo, hi = bounds[x], bounds[x + 1]
        if hi - lo > 1:
            packed[lo:hi].sort()
        for t in range(lo, hi):
            i[t] = x
            d[t] = packed[t] & 255
            packed[t] >>= 8


def warm() -> None:
    """Compile every function here into numba's cache (`make install` calls this), so
    that the first large run does not spend seconds compiling."""
    words = np.arange(4, dtype=np.uint64)
    order, offsets = np.zeros(4, np.uint32), np.zeros(3, np.uint32)
    ones = np.ones(1, np.uint64)
    build_table(table_buckets(words, ones, ones, np.ones(3, np.uint64), 1), order, offsets)
    first = np.zeros(2, np.int64)
    hashes, by_hash = keys_in_order(words, ones, ones, np.ones(3, np.uint64))
    hot = (*hot_copies(order, offsets.reshape(1, 3), 0, words, 1), 1)
    keyed = (hashes.reshape(1, 4), by_hash.reshape(1, 4))
    rules = np.zeros((1, 4), np.uint64)
    search_run(order, offsets.reshape(1, 3), 0, 1, *keyed, words, words, 1, rules, 0, 1, hot)
    table_pairs(order, offsets, 0, words, 1, rules[0])
    all_pairs(words, 1)
    cross_pairs(words, words, 1)
    pairs_in_order([(first, first, first)], 2)
    sketches = np.zeros((2, 4), np.uint64)
    for visit in (np.zeros(1, np.int64), np.zeros(1, np.uint32)):  # the pairs' order, or by rows
        pair_similarity(
            sketches, np.zeros(1, np.int64), sketches, np.ones(1, np.int64), 2, np.uint64(1), 0.5, visit
        )
