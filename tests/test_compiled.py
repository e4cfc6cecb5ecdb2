"""The compiled loops (compiled.py) give what the numpy paths give, and what brute force gives,
in every kind of them that this CPU runs (_indexcore.c: AVX-512, popcnt, generic)."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_index import brute_pairs, clustered

from simdedup import BlockIndex, Document, Settings, _indexcore
from simdedup import index as index_module
from simdedup import sketch as sketch_module
from simdedup import verify as verify_module
from simdedup.index import Layout, _Run, near_pair_arrays
from simdedup.sketch import SKETCH
from simdedup.verify import VerifyingDeduplicator


@pytest.fixture(scope="module", autouse=True, params=_indexcore.kinds())
def loops(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs with each kind of compiled loops this CPU runs."""
    before = _indexcore.in_use()
    _indexcore.use(request.param)
    yield request.param
    _indexcore.use(before)


def test_a_process_starts_with_the_fastest_loops_its_cpu_runs() -> None:
    code = "from simdedup import _indexcore as c; print(c.in_use(), c.kinds()[0], c.kinds()[-1])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    fastest, first, last = done.stdout.split()
    assert fastest == first and last == "generic"
    with pytest.raises(ValueError, match="no loops named"):
        _indexcore.use("quantum")


def test_an_index_installed_without_its_loops_searches_by_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    fps = [int(x) for x in np.random.default_rng(3).integers(0, 2**64, 1000, dtype=np.uint64)]
    fps += [fp ^ 1 << (i % 64) for i, fp in enumerate(fps[:300])]
    monkeypatch.setattr(index_module, "COMPILED_ROWS", 0)
    monkeypatch.setattr(index_module, "LOOPS_BUILT", False)  # as where pip found no C compiler
    index = BlockIndex(64, 3, buffer_rows=256)
    index.add_many(np.array(fps, np.uint64))
    assert not index.compiled
    q, rows, _ = index.search(np.array(fps, np.uint64))
    assert {(int(a), int(b)) for a, b in zip(q, rows) if a > b} == {(j, i) for i, j, _ in brute_pairs(fps, 3)}


def compiled_from_the_first_row() -> mock._patch:  # type: ignore[type-arg]
    return mock.patch.object(index_module, "COMPILED_ROWS", 0)


@settings(max_examples=150, deadline=None)
@given(
    fps=clustered(),
    k=st.integers(0, 16),
    buffer=st.sampled_from([1, 2, 5, 1024]),
    copied=st.sampled_from([1, 2, 3, index_module.COPIED_BUCKET]),
)
def test_compiled_index_finds_exactly_the_brute_force_pairs(
    fps: list[int], k: int, buffer: int, copied: int
) -> None:
    # copied: the least bucket size whose fingerprints a run copies in order (hot_copies)
    with compiled_from_the_first_row(), mock.patch.object(index_module, "COPIED_BUCKET", copied):
        index = BlockIndex(64, k, buffer_rows=buffer)
        found = []
        for j, fp in enumerate(fps):
            found.extend((i, j, d) for i, d in index.query(fp))
            index.add(fp)
        index._check()
    assert sorted(found) == brute_pairs(fps, k)


@settings(max_examples=80, deadline=None)
@given(fps=clustered(), k=st.integers(0, 16), sparse=st.booleans(), start=st.integers(0, 5))
def test_compiled_tables_are_the_numpy_tables(fps: list[int], k: int, sparse: bool, start: int) -> None:
    words = np.array(fps, np.uint64).reshape(-1, 1)
    layout = Layout.for_(64, k)
    start = min(start, len(fps))
    numpy_run = _Run(layout, words, start, len(fps), sparse=sparse, compiled=False)
    compiled_run = _Run(layout, words, start, len(fps), sparse=sparse, compiled=True)
    assert np.array_equal(compiled_run.order, numpy_run.order)
    assert np.array_equal(compiled_run.offsets, numpy_run.offsets)


@settings(max_examples=60, deadline=None)
@given(
    fps=clustered(),
    k=st.integers(0, 8),
    parts=st.integers(2, 20),
    compiled=st.booleans(),
    buffer=st.sampled_from([1, 7]),
)
def test_a_search_split_over_tables_finds_each_pair_of_the_whole_once(
    fps: list[int], k: int, parts: int, compiled: bool, buffer: int
) -> None:
    with mock.patch.object(index_module, "COMPILED_ROWS", 0 if compiled else 1 << 62):
        index = BlockIndex(64, k, buffer_rows=buffer)
        index.add_many(np.array(fps[: len(fps) // 2], np.uint64))  # runs and a buffer
        queries = np.array(fps[len(fps) // 2 :], np.uint64)
        whole = index.search(queries)
        split = [index.search(queries, ordered=False, part=p, parts=parts) for p in range(parts)]
    q, rows, d = (np.concatenate(x) for x in zip(*split))
    order = np.lexsort((rows, d, q))
    assert all(np.array_equal(x[order], y) for x, y in zip((q, rows, d), whole))


@settings(max_examples=60, deadline=None)
@given(
    fps=clustered(),
    k=st.integers(0, 16),
    lo=st.integers(0, 30),
    width=st.integers(0, 30),
    top=st.sampled_from([0, 1, 3, 8, 9, 16, 17, 24, 31]),
)
def test_keys_in_order_are_each_tables_key_hashes_and_the_order_of_their_top_bits(
    fps: list[int], k: int, lo: int, width: int, top: int
) -> None:
    # search_run takes every run's buckets as the top p <= `top` bits of these hashes,
    # grouped in this order
    layout = Layout.for_(64, k)
    words = np.array(fps, np.uint64).reshape(-1, 1)
    n_tables = len(layout.keys)
    tables = range(min(lo, n_tables), min(lo + width, n_tables))
    hashes, by_hash = layout.keys_in_order(words, tables, top)
    expected = layout.key_hashes(words)
    for t in range(n_tables):
        if t not in tables:  # another thread's part of the tables: left alone
            assert not hashes[t].any() and not by_hash[t].any()
            continue
        assert np.array_equal(hashes[t], expected[t])
        assert np.array_equal(np.sort(by_hash[t]), np.arange(len(fps)))
        tops = hashes[t] >> np.uint64(64 - top) if top else np.zeros(len(fps), np.uint64)
        assert np.array_equal(by_hash[t], np.argsort(tops, kind="stable"))


def hot_and_random(seed: int, n: int) -> np.ndarray:
    """Half the fingerprints near a few centres (hot buckets), half uniform."""
    rng = np.random.default_rng(seed)
    centres = rng.integers(0, 2**64, 5, dtype=np.uint64)
    flips = np.zeros(n // 2, np.uint64)
    for _ in range(4):
        flips |= np.uint64(1) << rng.integers(0, 64, n // 2).astype(np.uint64)
    near = centres[rng.integers(0, 5, n // 2)] ^ flips
    return np.concatenate([near, rng.integers(0, 2**64, n - n // 2, dtype=np.uint64)])[rng.permutation(n)]


@pytest.mark.parametrize("copied", [2, 1 << 62])
def test_compiled_tables_and_search_equal_numpy_ones_on_hot_buckets(copied: int, monkeypatch) -> None:
    monkeypatch.setattr(index_module, "COPIED_BUCKET", copied)
    fps = hot_and_random(3, 20_000)
    by_numpy, by_loops = BlockIndex(64, 4), BlockIndex(64, 4)
    results = []
    for index, compiled in ((by_numpy, False), (by_loops, True)):
        with mock.patch.object(index_module, "COMPILED_ROWS", 0 if compiled else 1 << 62):
            found = []
            for lo in range(0, len(fps), 1000):
                found.append(index.search(fps[lo : lo + 1000]))
                index.add_many(fps[lo : lo + 1000])
            index._check()
            results.append(found)
    for run_a, run_b in zip(by_numpy._runs, by_loops._runs):
        assert np.array_equal(run_a.order, run_b.order)
        assert np.array_equal(run_a.offsets, run_b.offsets)
    assert sum(len(q) for q, _, _ in results[0]) > 10_000  # the hot buckets found many
    copied_rows = sum(len(run.hot[3]) for run in by_loops._runs)
    assert (copied_rows > 0) == (copied == 2)  # with copies of the hot buckets, and without
    for a, b in zip(*results):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


@settings(max_examples=80, deadline=None)
@given(fps=clustered(), k=st.integers(0, 16))
def test_compiled_all_pairs_equal_the_numpy_ones(fps: list[int], k: int) -> None:
    array = np.array(fps, np.uint64)
    expected = near_pair_arrays(array, 64, k)
    got = near_pair_arrays(array, 64, k, compiled=True)
    assert all(np.array_equal(x, y) for x, y in zip(expected, got))
    assert list(zip(*(x.tolist() for x in got))) == brute_pairs(fps, k)


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    pairs=st.integers(0, 300),
    visit=st.sampled_from([(1 << 62, 64), (0, 1), (0, 4), (0, 64)]),
    ahead=st.sampled_from([0, 1, 16, 1000]),
)
def test_pair_similarity_gives_the_same_floats_as_similarity(
    seed: int, pairs: int, visit: tuple[int, int], ahead: int
) -> None:
    # visit: (VISIT_BY_ROW, ROW_GROUP): pairs in the order given, or by groups of b's rows;
    # ahead: the pairs between one whose sketches are fetched and the one compared
    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    a = gen.integers(0, 256, (40, SKETCH.nbytes), dtype=np.uint8)
    b = a.copy()
    for row in range(40):  # some rows nearly equal, some unrelated, some empty
        roll = rng.random()
        if roll < 0.3:
            b[row, rng.randrange(SKETCH.nbytes)] ^= 1 << rng.randrange(8)
        elif roll < 0.6:
            b[row] = gen.integers(0, 256, SKETCH.nbytes, dtype=np.uint8)
        elif roll < 0.7:
            b[row] = 0
    a_rows = gen.integers(0, 40, pairs)
    b_rows = gen.integers(0, 40, pairs)
    expected = SKETCH.similarity(a[a_rows], b[b_rows])
    with (
        mock.patch.object(sketch_module, "VISIT_BY_ROW", visit[0]),
        mock.patch.object(sketch_module, "ROW_GROUP", visit[1]),
        mock.patch.object(sketch_module, "AHEAD", ahead),
    ):
        assert np.array_equal(SKETCH.pair_similarity(a, a_rows, b, b_rows), expected)


@settings(max_examples=50, deadline=None)
@given(rows=st.lists(st.integers(0, 5000), max_size=300), group=st.sampled_from([1, 2, 64, 4096]))
def test_by_row_group_visits_every_pair_once_by_groups_of_rows_in_order(rows: list[int], group: int) -> None:
    array = np.array(rows, np.int64)
    with mock.patch.object(sketch_module, "ROW_GROUP", group):
        order = sketch_module.by_row_group(array)
    assert np.array_equal(order, np.argsort(array // group, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(
    runs=st.lists(st.integers(0, 200), min_size=1, max_size=12),
    tables=st.integers(1, 4),
    rows=st.sampled_from([3, 2**8 + 1, 2**17]),
    seed=st.integers(0, 2**32),
)
def test_pairs_in_order_sorts_every_run_as_lexsort_does(
    runs: list[int], tables: int, rows: int, seed: int
) -> None:
    # Runs short enough for insertion and long enough for the radix sort, j that differ
    # in their low byte only or in higher ones too; each pair packed with its distance
    # as table_pairs packs it.
    from simdedup.compiled import pairs_in_order

    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**64, max(rows, len(runs)), dtype=np.uint64)
    i = np.repeat(np.arange(len(runs)), runs)
    rng.shuffle(i)
    j = rng.integers(0, rng.choice([3, rows]), len(i))
    once = np.unique(i << 32 | j, return_index=True)[1]  # table_pairs gives a pair once
    i, j = i[once], j[once]
    d = np.bitwise_count(words[i] ^ words[j]).astype(np.int64)
    packed = i << 36 | j << 8 | d
    cuts = np.sort(rng.integers(0, len(i) + 1, tables - 1))
    parts = [packed[a:b] for a, b in zip([0, *cuts], [*cuts, len(i)])]
    order = np.lexsort((j, i))
    got = pairs_in_order(parts, len(words))
    assert all(np.array_equal(x, y[order]) for x, y in zip(got, (i, j, d)))


@pytest.mark.parametrize(
    ("order", "offsets", "start", "k", "error"),
    [
        ([0, 1], [0, 2], 2**32 - 1, 4, "a row past the words"),
        ([0, 2**28 + 2], [0, 2], 0, 4, "a row past the words"),
        ([0, 1], [0, 2], 2**28, 4, "rows past 2 \\*\\* 28"),
        ([2**31, 2**31 + 1], [0, 2], 2**63 - 2**30, 4, "a row past the words"),  # wrapped: a crash
        ([0, 1], [0, 2], -1, 4, "a negative start"),
        ([0, 1], [0, 2_000_000], 0, 4, "offsets that are not buckets"),
        ([0, 1], [1, 2], 0, 4, "offsets that are not buckets"),
        ([0, 1], [0, 2, 1], 0, 4, "offsets that are not buckets"),
        ([0, 1], [0, 2], 0, 256, "k outside 0-255"),
    ],
)
def test_table_pairs_refuses_tables_that_do_not_fit_their_arrays(
    order: list[int], offsets: list[int], start: int, k: int, error: str
) -> None:
    # A review: called with arrays that disagree, it read past them (and crashed). A
    # pair is packed in 64 bits: rows below 2 ** 28, distances below 256.
    from simdedup.compiled import table_pairs

    rule = Layout.for_(64, 4).first_table_rules[0]
    words = np.zeros(2**28 + 2, np.uint64)  # 2 GiB of zero pages, never touched
    words[1] = 0b111 << 61  # within 4 of words[0], table 0 the first keyed on blocks they share
    with pytest.raises(ValueError, match=error):
        table_pairs(np.array(order, np.uint32), np.array(offsets, np.uint32), start, words, k, rule)
    fine = table_pairs(np.array([0, 1], np.uint32), np.array([0, 2], np.uint32), 0, words, 4, rule)
    assert fine.tolist() == [1 << 8 | 3]  # (0, 1, d = 3), packed
    wide = table_pairs(np.array([0, 1]), np.array([0, 2]), 0, words, 4, rule)  # int64, read as rows
    assert wide.tolist() == fine.tolist()


@pytest.mark.parametrize("bounds", [[1, 2, 2, 2], [0, 1, 1, 1], [0, 3, 3, 3], [0, 2, 1, 2]])
def test_sorted_runs_refuses_bounds_that_do_not_tile_the_pairs(bounds: list[int]) -> None:
    # A review: slots outside the runs were left unwritten. (0, 2, d = 5) and (0, 1, d = 0):
    packed, i, d = np.array([2 << 8 | 5, 1 << 8]), np.empty(2, np.int64), np.empty(2, np.int64)
    with pytest.raises(ValueError, match="not runs of the pairs"):
        _indexcore.sorted_runs(packed.copy(), np.array(bounds), i, d)
    _indexcore.sorted_runs(packed, np.array([0, 2, 2, 2]), i, d)  # rows 0-2, both pairs row 0's
    assert (i.tolist(), packed.tolist(), d.tolist()) == ([0, 0], [1, 2], [0, 5])


def test_compiled_all_pairs_through_the_tables_equal_the_numpy_ones() -> None:
    fps = hot_and_random(4, 12_000)
    expected = near_pair_arrays(fps, 64, 4)
    with compiled_from_the_first_row():
        got = near_pair_arrays(fps, 64, 4)  # more than compiled_brute_force: through the tables
    assert len(got[0]) > 10_000
    assert all(np.array_equal(x, y) for x, y in zip(expected, got))


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32), at_least=st.sampled_from([0.3, 0.5, 0.8, 0.95, 1.0]))
def test_pair_similarity_rejects_exactly_the_pairs_below_at_least(seed: int, at_least: float) -> None:
    gen = np.random.default_rng(seed)
    # sparse sketches, as of short documents: most bins empty; copies with a few bins changed
    a = gen.integers(0, 256, (30, SKETCH.nbytes), dtype=np.uint8) * (gen.random((30, SKETCH.nbytes)) < 0.2)
    b = np.concatenate([a, gen.integers(0, 256, (30, SKETCH.nbytes), dtype=np.uint8)])
    b[:30] ^= (gen.random((30, SKETCH.nbytes)) < gen.random((30, 1)) * 0.3) * np.uint8(3)
    b = b.astype(np.uint8)
    a_rows = gen.integers(0, 30, 400)
    b_rows = np.where(gen.random(400) < 0.5, a_rows, gen.integers(0, 60, 400))  # half: a row and its copy
    exact = SKETCH.similarity(a[a_rows], b[b_rows])
    got = SKETCH.pair_similarity(a, a_rows, b, b_rows, at_least)
    assert np.array_equal(got[exact >= at_least], exact[exact >= at_least])
    assert np.all(got[exact < at_least] < at_least)
    assert np.all((got == -1.0) | (got == exact))


def test_the_compared_pairs_are_checked_before_any_sketch_is_read() -> None:
    # A row outside the sketches, or a fetch a negative number of pairs ahead, would read
    # outside them: refused before the loop.
    from simdedup import compiled

    words = np.zeros((3, SKETCH.nbytes // 8), np.uint64)
    has = np.ones(3, bool)
    rows = np.array([0, 1, 2], np.int64)
    for bad_rows, ahead, error in ((np.array([0, 3, 1]), 0, IndexError), (rows, -1, ValueError)):
        with pytest.raises(error):
            compiled.pair_similarity(words, rows, words, bad_rows, 2, 0, 1, 0.0, rows, ahead)
        for grouped in (0, 1 << 62):  # by groups of rows, and in the pairs' order
            with pytest.raises(error):
                compiled.verified_pairs(
                    rows, bad_rows, rows, words, has, words, has, 2, 0, 1, 0.0, 0, grouped, 0, ahead
                )


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    at_least=st.sampled_from([0.0, 0.5, 0.8, 1.0]),
    order=st.sampled_from([(1 << 62, 1 << 62, 64), (0, 0, 1), (0, 0, 64), (0, 1 << 62, 1)]),
    ahead=st.sampled_from([0, 1, 16, 1000]),
)
def test_verified_pairs_keeps_the_pairs_that_reach_at_least_or_lack_a_sketch(
    seed: int, at_least: float, order: tuple[int, int, int], ahead: int
) -> None:
    # order: (VISIT_BY_ROW, CACHED_SKETCHES, ROW_GROUP): the pairs' order, by groups of
    # rows of one or of 64, or too few rows met to be read by groups
    gen = np.random.default_rng(seed)
    a = gen.integers(0, 256, (30, SKETCH.nbytes), dtype=np.uint8) * (gen.random((30, SKETCH.nbytes)) < 0.2)
    b = np.concatenate([a, gen.integers(0, 256, (30, SKETCH.nbytes), dtype=np.uint8)])
    b[:30] ^= (gen.random((30, SKETCH.nbytes)) < gen.random((30, 1)) * 0.3) * np.uint8(3)
    a, b = a.astype(np.uint8), b.astype(np.uint8)
    a_has, b_has = gen.random(30) < 0.9, gen.random(60) < 0.9
    q = gen.integers(0, 30, 400)
    rows = np.where(gen.random(400) < 0.5, q, gen.integers(0, 60, 400))  # half: a row and its copy
    d = gen.integers(0, 5, 400)
    exact = np.where(a_has[q] & b_has[rows], SKETCH.similarity(a[q], b[rows]), np.nan)
    want = np.flatnonzero(~(exact < at_least))
    with (
        mock.patch.object(sketch_module, "VISIT_BY_ROW", order[0]),
        mock.patch.object(sketch_module, "CACHED_SKETCHES", order[1]),
        mock.patch.object(sketch_module, "ROW_GROUP", order[2]),
        mock.patch.object(sketch_module, "AHEAD", ahead),
    ):
        got = SKETCH.verified_pairs(a, a_has, b, b_has, (q, rows, d), at_least)
    expected = sorted(
        zip(q[want].tolist(), rows[want].tolist(), d[want].tolist(), np.nan_to_num(exact[want], nan=-9))
    )
    assert sorted(zip(*(x.tolist() for x in got[:3]), np.nan_to_num(got[3], nan=-9))) == expected
    assert len(want) and (at_least == 0.0 or len(want) < 400)  # some pairs kept, some not


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), at_least=st.sampled_from([0.0, 0.5, 0.8]))
def test_the_compiled_loops_compare_exact_sketches_as_similarity_does(seed: int, at_least: float) -> None:
    # Lines of a dozen words (exact sketches), longer texts (sketches of bins) and the same
    # texts as sketches of bins alone (an index an earlier simdedup wrote): every pairing.
    rng = random.Random(seed)
    lengths = [12, 200] + [rng.choice([2, 12, 40, 55, 70, 200]) for _ in range(8)]
    texts = [[f"w{rng.randrange(500)}" for _ in range(n)] for n in lengths]
    for _ in range(20):  # copies with a word or two changed
        copy = list(rng.choice(texts[:10]))
        for _ in range(rng.randint(1, 2)):
            copy[rng.randrange(len(copy))] = "changed"
        texts.append(copy)
    texts = [" ".join(words) for words in texts]
    hashes, counts = sketch_module.shingle_hashes(texts)
    a = SKETCH.sketch(hashes, counts)
    b = np.concatenate([a, sketch_module.OnePermutation().sketch(hashes, counts)])
    assert SKETCH.exact_rows(a).any() and not SKETCH.exact_rows(a).all()
    q = np.array([rng.randrange(30) for _ in range(500)])
    rows = np.array([rng.randrange(60) for _ in range(500)])
    expected = SKETCH.similarity(a[q], b[rows])
    got = SKETCH.pair_similarity(a, q, b, rows, at_least)
    assert np.array_equal(got[expected >= at_least], expected[expected >= at_least])
    assert np.all((got == -1.0) | (got == expected))
    has = np.ones(60, bool)
    verified = SKETCH.verified_pairs(a, has[:30], b, has, (q, rows, np.zeros(500, np.int64)), at_least)
    want = expected >= at_least
    assert sorted(zip(*(x.tolist() for x in verified[:2]), verified[3].tolist())) == sorted(
        zip(q[want].tolist(), rows[want].tolist(), expected[want].tolist())
    )


def test_the_compiled_loops_share_sketch_pys_constants() -> None:
    assert (_indexcore.EXACT_MARK, _indexcore.HELD) == (sketch_module.EXACT_MARK, sketch_module._HELD)


def test_a_large_verified_index_leaves_no_thread_behind_for_forked_workers() -> None:
    # decide_many searches the head index in a thread once compiled loops serve the
    # index; the thread must end with the batch, since workers are forked later.
    texts = [" ".join(f"w{(i * 7 + j) % 500}" for j in range(40)) for i in range(300)]
    with (
        compiled_from_the_first_row(),
        mock.patch.object(verify_module, "_beside", wraps=verify_module._beside) as made,
    ):
        dd = VerifyingDeduplicator(Settings())
        decisions = dd.process([Document(str(i), t, b"") for i, t in enumerate(texts)])
    assert len(decisions) == 300 and made.called  # the head index was searched beside
    assert not [t for t in threading.enumerate() if t.name.startswith(verify_module.HEAD_THREAD)]


@pytest.mark.parametrize("k", [3, 4, 8])
def test_a_small_bucket_gives_only_its_own_rows_to_a_query_near_zero(k: int) -> None:
    # A bucket's last places (all of a small one's) are compared eight at a time, the
    # lanes past its end masked off: unmasked, their zeros were near a query near 0.
    fps = [0, 1, 3, 1 << 40, (1 << 40) | 1, 5, 0, 7]
    queries = [0, 1, 2, 1 << 40]
    with compiled_from_the_first_row():
        index = BlockIndex(64, k, buffer_rows=1)
        index.add_many(np.array(fps, np.uint64))
        q, rows, ds = index.search(np.array(queries, np.uint64))
    assert index.compiled
    expected = {(a, b, bin(x ^ fp).count("1")) for a, x in enumerate(queries) for b, fp in enumerate(fps)}
    assert sorted(zip(q.tolist(), rows.tolist(), ds.tolist())) == sorted(t for t in expected if t[2] <= k)
