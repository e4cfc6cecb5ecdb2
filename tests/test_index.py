"""The block index finds exactly what brute force finds, for many k, widths and shapes of data,
built and searched by its compiled loops and by numpy."""

from __future__ import annotations

import random
from collections.abc import Iterator
from unittest import mock

import numpy as np
import pytest
from cores import needs_index_core
from hypothesis import given, settings
from hypothesis import strategies as st

from simdedup import BlockIndex, block_layout, near_pairs
from simdedup import index as index_module
from simdedup.index import Layout, fingerprint_array, fingerprint_ints, near_pair_arrays


@pytest.fixture(scope="module", autouse=True, params=["compiled", "numpy"])
def loops(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here runs with the compiled loops (every index of 64-bit fingerprints has
    them) and with numpy's, which an index gets where simdedup was built without them."""
    with mock.patch.object(index_module, "COMPILED_ROWS", 0 if request.param == "compiled" else 1 << 62):
        yield request.param


def brute_pairs(fps: list[int], k: int) -> list[tuple[int, int, int]]:
    return sorted(
        (i, j, d) for j in range(len(fps)) for i in range(j) if (d := (fps[i] ^ fps[j]).bit_count()) <= k
    )


@st.composite
def clustered(draw: st.DrawFn, bits: int = 64) -> list[int]:
    """Fingerprints around a few centres, a few bits flipped each: many near pairs and hot buckets."""
    centres = draw(st.lists(st.integers(0, 2**bits - 1), min_size=1, max_size=4))
    n = draw(st.integers(0, 80))
    rng = random.Random(draw(st.integers(0, 2**32)))
    fps = []
    for _ in range(n):
        fp = rng.choice(centres)
        for _ in range(rng.randint(0, 6)):
            fp ^= 1 << rng.randrange(bits)
        fps.append(fp)
    return fps


@settings(max_examples=150, deadline=None)
@given(fps=clustered(), k=st.integers(0, 16), buffer=st.sampled_from([1, 2, 5, 1024]))
def test_index_finds_exactly_the_brute_force_pairs_in_clustered_data(
    fps: list[int], k: int, buffer: int
) -> None:
    # buffer_rows=1 makes every row a run and merges runs all the time; 1024 keeps all in the buffer.
    index = BlockIndex(64, k, buffer_rows=buffer)
    found = []
    for j, fp in enumerate(fps):
        found.extend((i, j, d) for i, d in index.query(fp))
        index.add(fp)
    assert sorted(found) == brute_pairs(fps, k)
    index._check()


def test_unindexed_flags_are_bools() -> None:
    # 0.0 / 1.0 or 'a' / '' were taken by their truth (a library trial).
    index = BlockIndex(64, 3)
    for flags in (np.array([0.0, 1.0]), ["a", ""], [1, 0]):
        with pytest.raises(ValueError, match="indexed is a bool a fingerprint, not"):
            index.add_many(fingerprint_array([1, 2]), flags)  # type: ignore[arg-type]
    assert len(index) == 0
    index.add_many(fingerprint_array([1, 2]), [False, True])  # type: ignore[arg-type]
    assert index.unindexed_array().tolist() == [True, False]


@settings(max_examples=100, deadline=None)
@given(
    fps=clustered(),
    k=st.integers(0, 9),
    buffer=st.sampled_from([1, 2, 5, 1024]),
    bits=st.sampled_from([64, 128]),
    flags=st.randoms(use_true_random=False),
)
def test_unindexed_rows_are_numbered_and_never_found(
    fps: list[int], k: int, buffer: int, bits: int, flags: random.Random
) -> None:
    """Rows stored unindexed (a crowd's: verify.py) keep their numbers and fingerprints;
    a search finds exactly the brute-force pairs among the indexed rows, wherever the
    rows sit (buffer, runs, merged runs), and counts no more candidates than it meets."""
    fps = [fp << 64 | fp if bits == 128 else fp for fp in fps]
    indexed = [flags.random() < 0.6 for _ in fps]
    index = BlockIndex(bits, k, buffer_rows=buffer)
    for lo in range(0, len(fps), 7):
        index.add_many(fingerprint_array(fps[lo : lo + 7], bits), np.array(indexed[lo : lo + 7], bool))
    index._check()
    assert fingerprint_ints(index.fingerprint_array()) == fps
    assert index.unindexed_array().tolist() == [not on for on in indexed]
    assert index.unindexed_array(3).tolist() == [not on for on in indexed[3:]]
    assert index.unindexed == indexed.count(False) == index.stats().unindexed
    queries = fps[::3] + [fp ^ 1 for fp in fps[1::3]]
    q, rows, d = index.search(fingerprint_array(queries, bits))
    expected = sorted(
        (a, r, dist)
        for a, query in enumerate(queries)
        for r, fp in enumerate(fps)
        if indexed[r] and (dist := (query ^ fp).bit_count()) <= k
    )
    assert sorted(zip(q.tolist(), rows.tolist(), d.tolist())) == expected
    met = np.bincount(q, minlength=len(queries)) if len(q) else np.zeros(len(queries), np.int64)
    assert np.all(index.candidates(fingerprint_array(queries, bits)) >= met)


@settings(max_examples=60, deadline=None)
@given(
    stored=clustered(),
    queries=clustered(),
    k=st.integers(0, 8),
    buffer=st.sampled_from([1, 3, 64]),
)
def test_nearest_many_equals_brute_force_nearest_with_earliest_ties(
    stored: list[int], queries: list[int], k: int, buffer: int
) -> None:
    index = BlockIndex(64, k, buffer_rows=buffer)
    index.add_many(fingerprint_array(stored))
    rows, dists = index.nearest_many(fingerprint_array(queries))
    for q, row, d in zip(queries, rows.tolist(), dists.tolist()):
        near = [(dd, r) for r, fp in enumerate(stored) if (dd := (q ^ fp).bit_count()) <= k]
        assert (row, d) == ((min(near)[1], min(near)[0]) if near else (-1, -1))


@settings(max_examples=100, deadline=None)
@given(fps=st.lists(st.integers(0, 2**64 - 1), max_size=60), k=st.integers(0, 16))
def test_index_finds_exactly_the_brute_force_pairs_in_random_data(fps: list[int], k: int) -> None:
    assert near_pairs(fps, 64, k) == brute_pairs(fps, k)


@settings(max_examples=60, deadline=None)
@given(fps=clustered(bits=128), k=st.integers(0, 16))
def test_index_is_exact_for_128_bit_fingerprints(fps: list[int], k: int) -> None:
    assert near_pairs(fps, 128, k) == brute_pairs(fps, k)


@settings(max_examples=100, deadline=None)
@given(fps=clustered(), k=st.integers(0, 16), bits=st.sampled_from([64, 128]))
def test_all_pairs_through_the_tables_equal_brute_force(fps: list[int], k: int, bits: int) -> None:
    i, j, d = near_pair_arrays(fingerprint_array(fps, bits), bits, k, brute_force=0)
    assert list(zip(i.tolist(), j.tolist(), d.tolist())) == brute_pairs(fps, k)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_all_pairs_stay_exact_when_buckets_are_hot(k: int) -> None:
    rng = random.Random(k)
    # 3,000 fingerprints around 5 centres, up to 8 bits flipped: buckets of hundreds of rows.
    centres = [rng.getrandbits(64) for _ in range(5)]
    fps = []
    for _ in range(3000):
        fp = rng.choice(centres)
        for _ in range(rng.randint(0, 8)):
            fp ^= 1 << rng.randrange(64)
        fps.append(fp)
    index = BlockIndex.from_fingerprints(fps, 64, k)
    assert index.stats().largest_bucket > 64  # the dense path runs
    i, j, d = near_pair_arrays(fingerprint_array(fps), 64, k, brute_force=0)
    assert list(zip(i.tolist(), j.tolist(), d.tolist())) == brute_pairs(fps, k)


def test_identical_fingerprints_are_found() -> None:
    # A popular C++ implementation skips exact matches; they are the most duplicate of all.
    assert near_pairs([0xABC, 0xABC, 0xABC], 64, 3) == [(0, 1, 0), (0, 2, 0), (1, 2, 0)]


def test_query_returns_nearest_first_then_earliest() -> None:
    index = BlockIndex.from_fingerprints([0b111, 0b1, 0b11, 0b0], 64, 3)
    assert index.query(0b0) == [(3, 0), (1, 1), (2, 2), (0, 3)]
    assert index.nearest(0b1000) == (3, 1)


def test_nearest_breaks_ties_by_earliest_row() -> None:
    index = BlockIndex.from_fingerprints([0b10, 0b01], 64, 3)
    assert index.nearest(0b00) == (0, 1)


def test_a_block_value_shared_by_all_rows_does_not_make_one_bucket_hold_them_all() -> None:
    rng = random.Random(7)
    # 2,000 fingerprints sharing their lowest 16 bits (a hot block for the classic 4-block
    # index), far apart elsewhere: keys on pairs of blocks still tell them apart.
    fps = [(rng.getrandbits(48) << 16) | 0xBEEF for _ in range(2000)]
    index = BlockIndex.from_fingerprints(fps, 64, 3)
    index._check()
    stats = index.stats()
    assert stats.tables == 10 and stats.largest_bucket < 100
    assert near_pairs(fps, 64, 3) == brute_pairs(fps, 3)


def test_fingerprint_arrays_round_trip_at_64_and_128_bits() -> None:
    fps = [0, 1, 2**64 - 1, 0xDEADBEEF]
    assert fingerprint_ints(fingerprint_array(fps)) == fps
    wide = [0, 2**128 - 1, 1 << 64, (1 << 127) | 5]
    assert fingerprint_array(wide, 128).shape == (4, 2)
    assert fingerprint_ints(fingerprint_array(wide, 128)) == wide


def test_index_rejects_a_fingerprint_wider_than_its_bits() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        BlockIndex(64, 3).add(1 << 64)


@pytest.mark.parametrize("k", range(0, 17))
def test_block_layout_covers_every_bit_once_in_k_plus_1_blocks(k: int) -> None:
    layout = block_layout(64, k)
    assert len(layout) == k + 1
    covered = [b for start, width in layout for b in range(start, start + width)]
    assert covered == list(range(64))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.integers(1, 6), buffer=st.sampled_from([1, 4, 32]))
def test_seeded_stress_keeps_the_index_invariants(seed: int, k: int, buffer: int) -> None:
    rng = random.Random(seed)
    index = BlockIndex(64, k, buffer_rows=buffer)
    base = rng.getrandbits(64)
    for _ in range(30):
        batch = [base ^ rng.getrandbits(64) & rng.getrandbits(64) & rng.getrandbits(64) for _ in range(10)]
        index.add_many(fingerprint_array(batch))
        index._check()
    assert index.fingerprints[-10:] == batch


@pytest.mark.parametrize("k", [0, 1, 3, 4, 7])
def test_each_set_of_agreeing_blocks_is_reported_by_the_first_table_keyed_inside_it(k: int) -> None:
    layout = Layout.for_(64, k)
    for mask in range(1 << len(layout.blocks)):
        inside = [t for t, key in enumerate(layout.keys) if all(mask >> b & 1 for b in key)]
        assert layout.first_tables[mask] == (inside[0] if inside else -1)


@needs_index_core
@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5, 6, 7])
def test_the_compiled_first_table_rules_say_what_first_tables_says(k: int) -> None:
    # The compiled loops test a table's rule on an XOR with masks (_indexcore.c's
    # near_here); first_tables is the reference. Each non-agreeing block gets a single
    # bit at its edges, or noise.
    from simdedup._indexcore import near_here as _near_here

    layout = Layout.for_(64, k)
    rng = random.Random(k)
    for mask in range(1 << len(layout.blocks)):
        for trial in range(6):
            x = 0
            for b, (start, width) in enumerate(layout.blocks):
                if not mask >> b & 1:
                    x |= [1, 1 << (width - 1), rng.randrange(1, 1 << width)][trial % 3] << start
            agree = layout.agreeing_blocks(np.array([[x]], np.uint64), np.zeros((1, 1), np.uint64))[0]
            assert agree == mask
            for t, rule in enumerate(layout.first_table_rules):
                assert _near_here(x, 64, rule) == (layout.first_tables[mask] == t), (mask, t)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5, 6, 7, 8, 16])
def test_every_set_of_at_most_k_differing_blocks_leaves_a_table_whose_key_agrees(k: int) -> None:
    # The index is exact only if its tables cover every way k bits can fall: each set of
    # agreeing blocks that k differing bits leave holds some table's key (pigeonhole, and
    # at k = 4 the pairs inside two groups of 3 and 4 blocks: settings.index_layout).
    layout = Layout.for_(64, k)
    n = len(layout.blocks)
    for mask in range(1 << n):
        if n - bin(mask).count("1") <= k:
            assert layout.first_tables[mask] >= 0, (k, bin(mask))


def test_four_bits_have_nine_tables_in_two_groups() -> None:
    layout = Layout.for_(64, 4)
    assert layout.groups == ((0, 1, 2), (3, 4, 5, 6))
    assert layout.keys == ((0, 1), (0, 2), (1, 2), (3, 4), (3, 5), (3, 6), (4, 5), (4, 6), (5, 6))
    assert layout.describe() == "7 blocks of 10/9/9/9/9/9/9 bits, 9 tables keyed on 2 in groups of 3 and 4"


@pytest.mark.parametrize("k", [3, 4])
def test_a_stored_fingerprint_costs_under_64_bytes(k: int) -> None:
    # At k = 4 (the default) the 15 tables of every pair of 6 blocks held 82 bytes.
    fps = np.random.default_rng(5).integers(0, 2**64, size=100_000, dtype=np.uint64)
    index = BlockIndex(64, k)
    for lo in range(0, len(fps), 4096):
        index.add_many(fps[lo : lo + 4096])
    stats = index.stats()
    assert stats.fingerprints == 100_000
    assert stats.nbytes / stats.fingerprints < 64


def test_tables_built_in_threads_equal_tables_built_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    import simdedup.index as index_module

    fps = np.random.default_rng(9).integers(0, 2**64, size=5000, dtype=np.uint64)
    in_turn = BlockIndex(64, 3, buffer_rows=5000)
    in_turn.add_many(fps)
    monkeypatch.setattr(index_module, "PARALLEL_BUILD_ROWS", 0)
    threaded = BlockIndex(64, 3, buffer_rows=5000)
    threaded.add_many(fps)
    threaded._check()
    assert np.array_equal(threaded._runs[0].order, in_turn._runs[0].order)
    assert np.array_equal(threaded._runs[0].offsets, in_turn._runs[0].offsets)


@settings(max_examples=40, deadline=None)
@given(stored=clustered(), queries=clustered(), k=st.integers(0, 8))
def test_unordered_search_finds_the_same_pairs(stored: list[int], queries: list[int], k: int) -> None:
    index = BlockIndex(64, k, buffer_rows=4)
    index.add_many(fingerprint_array(stored))
    ordered = index.search(fingerprint_array(queries))
    loose = index.search(fingerprint_array(queries), ordered=False)
    assert sorted(zip(*(a.tolist() for a in loose))) == sorted(zip(*(a.tolist() for a in ordered)))


def test_a_wide_distance_compares_every_row_instead_of_tables_of_short_keys() -> None:
    # From k = 7 at 64 bits a query would meet 3% of the rows or more in its tables'
    # buckets (keys of 8 bits or fewer), each dearer than a plain comparison.
    assert not Layout.for_(64, 6).brute_force and Layout.for_(64, 7).brute_force
    index = BlockIndex.from_fingerprints(range(5000), 64, 16)
    assert index.stats().runs == 0
    widths = "4/" * 13 + "3/3/3/3"
    assert index.stats().layout == f"every row compared (keys of {widths} bits would meet 131% of the rows)"
    assert BlockIndex.from_fingerprints(range(5000), 64, 6).stats().runs > 0


@settings(max_examples=60, deadline=None)
@given(fps=clustered(), k=st.integers(7, 20), cells=st.sampled_from([1, 7, 64]), split=st.integers(0, 80))
def test_every_row_compared_a_few_cells_at_a_time_is_exact(
    fps: list[int], k: int, cells: int, split: int
) -> None:
    # numpy compares MATRIX_CELLS (query, row) cells at a time, to bound its memory
    with mock.patch.object(index_module, "MATRIX_CELLS", cells):
        assert near_pairs(fps, 64, k) == brute_pairs(fps, k)
        index = BlockIndex.from_fingerprints(fps[:split], 64, k)
        q, rows, ds = index.search(fingerprint_array(fps[split:]))
    stored = fps[:split]
    expected = sorted(
        (qi, d, r)
        for qi, fp in enumerate(fps[split:])
        for r, s in enumerate(stored)
        if (d := (fp ^ s).bit_count()) <= k
    )
    assert sorted(zip(q.tolist(), ds.tolist(), rows.tolist())) == expected


@pytest.mark.parametrize("bits", [256, 320])
def test_wide_fingerprints_far_apart_are_not_found_near(bits: int) -> None:
    # numpy's counts of set bits are uint8: summed over 4 words or more they wrapped
    # around, and 0 and all ones were found at distance 0 (a trial).
    ones = (1 << bits) - 1
    assert near_pairs([0, ones], bits=bits, distance=8) == []
    index = BlockIndex(bits, 3)
    index.add(0)
    assert index.query(ones) == [] and index.query(1) == [(0, 1)]
    far = index_module.distances(fingerprint_array([0], bits), fingerprint_array([ones], bits), bits)
    assert far.tolist() == [bits]
