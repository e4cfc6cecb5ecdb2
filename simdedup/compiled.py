"""Compiled loops for the index and verification, where numpy's passes cost most.

Each function here does in one compiled loop (the C extension _indexcore.c) what index.py
or sketch.py does in several numpy passes, and gives the same result, bit for bit
(tests/test_compiled.py). They are pure functions of arrays; none keeps state between
calls or prints. They serve every index of 64-bit fingerprints (BlockIndex.compiled,
index.COMPILED_ROWS), and the verification of its candidates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _indexcore

_I64 = np.int64
_U64 = np.uint64


def _c(a: Any, dtype: Any) -> np.ndarray:
    return np.ascontiguousarray(a, dtype)


def _int64s(made: tuple[bytearray, ...]) -> tuple[np.ndarray, ...]:
    return tuple(np.frombuffer(column, np.int64) for column in made)


def table_buckets(words, starts, masks, mix, p):  # type: ignore[no-untyped-def]
    """Each 64-bit fingerprint's bucket (int64) in a table keyed on the blocks at
    `starts` with `masks`, among 2 ** p: index.Layout.key_hash and _bucket_of in one
    pass, the same integers, without their arrays."""
    out = np.empty(len(words), np.int64)
    _indexcore.key_hashes(_c(words, _U64), _c(starts, _U64), _c(masks, _U64), _c(mix, _U64), p, out)
    return out


def key_hashes(words, starts, masks, mix):  # type: ignore[no-untyped-def]
    """Each 64-bit fingerprint's key hash in a table, as index.Layout.key_hash gives it."""
    hashes = np.empty(len(words), np.uint64)
    _indexcore.key_hashes(_c(words, _U64), _c(starts, _U64), _c(masks, _U64), _c(mix, _U64), -1, hashes)
    return hashes


def keys_in_order(words, starts, masks, mix, top=31):  # type: ignore[no-untyped-def]
    """(hashes, order): each 64-bit fingerprint's key hash in a table (as
    index.Layout.key_hash gives it) and the fingerprints' places ordered by the top
    `top` (< 32) bits of it, equal tops in place order. A run's bucket is a hash's top p
    bits (p < 32: its rows are numbered in 32 bits), so with `top` at least every run's p
    this order groups the queries by bucket in every run: search_run sorts once a table
    instead of once a table and run."""
    hashes = key_hashes(words, starts, masks, mix)
    order = np.empty(len(words), np.int64)
    _indexcore.top_order(hashes, top, order)
    return hashes, order


def build_table(buckets, order, offsets):  # type: ignore[no-untyped-def]
    """One table of a run from each row's bucket (int64): its rows grouped by bucket,
    ascending inside a bucket, written to `order` (uint32, one per row), and where each
    bucket starts written to `offsets` (uint32, buckets + 1, zeros on entry). A counting
    sort, O(rows), where index._Run's numpy path sorts."""
    _indexcore.build_table(_c(buckets, _I64), order, offsets)


def search_run(order, offsets, start, p, hashes, by_hash, words, queries, k, rules, t_lo, t_hi, hot):  # type: ignore[no-untyped-def]
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
    time, in a pass that tells both whether a row is within k and whether this table is
    the pair's first: a pair met in several tables costs a write in one.

    Each table is searched in passes over the queries in bucket order: the buckets'
    bounds, then the rows of the buckets not copied, then those rows' fingerprints,
    then the comparisons. The reads of a pass do not wait on one another, so the CPU
    has many in flight. Read bucket by bucket, each waited on the one before: 1.6-2x
    the time on random fingerprints, 1.1-1.3x on crowded ones (1M-3M rows)."""
    hot_ids, hot_tables, hot_at, hot_words, least = hot
    tables, m = hashes.shape
    if len(hot_tables) < tables + 1:  # a run with no copies: no bucket reaches `least`
        hot_tables = np.zeros(tables + 1, np.int64)
    made = _indexcore.search_run(
        order,
        offsets,
        start,
        p,
        _c(hashes, _U64),
        _c(by_hash, _I64),
        _c(words, _U64),
        _c(queries, _U64),
        k,
        _c(rules, _U64),
        t_lo,
        t_hi,
        _c(hot_ids, _I64),
        _c(hot_tables, _I64),
        _c(hot_at, _I64),
        _c(hot_words, _U64),
        least,
        tables,
        m,
    )
    return _int64s(made)


def hot_copies(order, offsets, start, words, least):  # type: ignore[no-untyped-def]
    """The buckets of at least `least` rows of a run's tables (order, offsets: as
    search_run takes them) and a copy of their rows' fingerprints in the tables' order:
    (ids, tables, at, copy), where table t's copied buckets are ids[tables[t]:tables[t +
    1]] (ascending) and the fingerprints of bucket ids[i]'s rows start at copy[at[i]],
    as many as the bucket holds. In a crowded index most of a query's candidates sit in
    a few large buckets; search_run reads those in order from here instead of gathering
    them from all over the index."""
    ids, tables, at, copy = _indexcore.hot_copies(
        order, offsets, start, _c(words, _U64), least, offsets.shape[0]
    )
    return (
        np.frombuffer(ids, np.int64),
        np.frombuffer(tables, np.int64),
        np.frombuffer(at, np.int64),
        np.frombuffer(copy, np.uint64),
    )


def table_pairs(order, offsets, start, words, k, rule):  # type: ignore[no-untyped-def]
    """The pairs (i, j), i < j, of the rows of one table of a run (order, offsets: that
    table's) that share a bucket, are within k, and have this table as the first keyed
    on blocks they agree on (`rule`: its row of index.Layout.first_table_rules), each
    packed with its distance d as i << 36 | j << 8 | d in an int64 array (rows below
    index.PAIR_ROWS, k below 256; pairs_in_order puts them in order): index._Run.pairs for
    64-bit fingerprints. Each bucket's fingerprints are gathered once and compared in
    order."""
    order, offsets = _c(order, np.uint32), _c(offsets, np.uint32)
    [pairs] = _int64s(_indexcore.table_pairs(order, offsets, start, _c(words, _U64), k, _c(rule, _U64)))
    return pairs


def pair_similarity(a, a_rows, b, b_rows, bits, exact, lanes, at_least, visit, ahead):  # type: ignore[no-untyped-def]
    """sketch.OnePermutation.similarity of a[a_rows[t]] and b[b_rows[t]] for every t,
    without gathering the rows: a and b are sketches as (rows, words) uint64, `lanes`
    the lowest bit of every code, `exact` the sketcher's (0: no row is an exact
    sketch). The same integers and the same one division, so the same floats.

    Pairs that cannot reach `at_least` (> 0) get -1.0, decided as soon as the bins read
    so far prove it: with C codes, the estimate is (C agree - both) / ((C - 1) either),
    and the bins still unread can at best add all of a's remaining non-empty bins as
    agreeing ones, which bounds it by (C agree - both + (C - 1) r) / ((C - 1) (either +
    r)), r = a's non-empty bins left. Most candidate pairs of a crowded index are
    unrelated texts, rejected after a cache line or two of their 256 bytes. A pair with
    an exact sketch is read whole. `a` should
    be the smaller side (a batch): its non-empty bins are counted for every row. Pairs
    are visited in the order of `visit` (a permutation of the pairs; sketch.by_row_group puts
    b's rows nearly in order, so that a large b is read nearly in order), the first cache
    lines of a pair's sketches fetched while the pair `ahead` visits before it is compared
    (0: none), so that the reads from memory overlap."""
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"sketches of {a.shape[1]} and {b.shape[1]} words")
    out = np.empty(len(a_rows), np.float64)
    _indexcore.pair_similarity(
        _c(a, _U64),
        _c(a_rows, _I64),
        _c(b, _U64),
        _c(b_rows, _I64),
        int(bits),
        int(exact),
        int(lanes),
        float(at_least),
        _c(visit, _I64),
        a.shape[1],
        int(ahead),
        out,
    )
    return out


def verified_pairs(  # type: ignore[no-untyped-def]
    q, rows, d, a, a_has, b, b_has, bits, exact, lanes, at_least, shift, grouped, cached, ahead
):
    """Of a search's pairs (q, rows, d: int64), the (q, rows, d, sims) whose sketches
    a[q[t]] and b[rows[t]] (as pair_similarity takes them) may reach `at_least`, with
    their similarities; NaN where a[q] or b[row] has no sketch (a_has, b_has: bool per
    row). pair_similarity and the filter in one loop: a crowded index finds many pairs,
    and the few kept are all that come back, in no set order.

    `grouped` pairs or more whose rows of b hold more than `cached` bytes of sketches
    are read by groups of rows >> `shift` (sketch.by_row_group), from copies of the
    pairs in that order; fewer rows, which stay in the CPU's caches, in the pairs' order
    (a search gives a query's rows of a bucket in ascending order). `ahead` as
    pair_similarity takes it."""
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"sketches of {a.shape[1]} and {b.shape[1]} words")
    made = _indexcore.verified_pairs(
        _c(q, _I64),
        _c(rows, _I64),
        _c(d, _I64),
        _c(a, _U64),
        _c(a_has, np.bool_),
        _c(b, _U64),
        _c(b_has, np.bool_),
        int(bits),
        int(exact),
        int(lanes),
        float(at_least),
        a.shape[1],
        int(shift),
        int(grouped),
        int(cached),
        int(ahead),
    )
    return (*_int64s(made[:3]), np.frombuffer(made[3], np.float64))


def all_pairs(words, k):  # type: ignore[no-untyped-def]
    """Every (i, j, d), i < j, with d = popcount(words[i] ^ words[j]) <= k, sorted by i
    then j: index.near_pair_arrays for a batch, comparing every pair."""
    words = _c(words, _U64)
    return _int64s(_indexcore.pairs(words, words, k, True))


def cross_pairs(queries, words, k):  # type: ignore[no-untyped-def]
    """Every (q, j, d) with d = popcount(queries[q] ^ words[j]) <= k, sorted by q then
    j: a batch of queries against the index's buffer of recent rows."""
    return _int64s(_indexcore.pairs(_c(queries, _U64), _c(words, _U64), k, False))


def pairs_in_order(parts: list[np.ndarray], rows: int) -> tuple[np.ndarray, ...]:
    """The pairs of every part (int64 arrays of i << 36 | j << 8 | d, as table_pairs gives
    them; i, j < rows, each pair once) as three int64 arrays (i, j, d) sorted by i, then
    j: index.near_pair_arrays's pairs, found table by table. One counting pass puts each
    j << 8 | d in its i's run, and each run, a few hundred pairs, is sorted where it lies:
    the 82M pairs of 1M corpus fingerprints at k = 4 took 18.5 s to concatenate and
    argsort. Consumes `parts`: each is dropped once it is placed."""
    total = sum(len(pairs) for pairs in parts)
    bounds = np.zeros(rows + 1, np.int64)
    for pairs in parts:
        _indexcore.count(_c(pairs, _I64), bounds)
    np.cumsum(bounds, out=bounds)  # i's run: bounds[i]:bounds[i + 1]
    at, j = bounds[:-1].copy(), np.empty(total, np.int64)
    while parts:
        _indexcore.place(_c(parts.pop(0), _I64), at, j)
    i, d = np.empty(total, np.int64), np.empty(total, np.int64)
    _indexcore.sorted_runs(j, bounds, i, d)
    return i, j, d
