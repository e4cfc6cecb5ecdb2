"""Sketches: fixed-size summaries of the verification shingles, and Jaccard estimates from them."""

from __future__ import annotations

import random
from itertools import groupby

import numpy as np
import pytest
import xxhash
from exact import exact_shingles, jaccard
from hypothesis import given, settings
from hypothesis import strategies as st

from simdedup import FeatureHasher, Settings
from simdedup.features import NEAR_HAN, normalize, tokenize, weigh, words
from simdedup.fingerprint import fingerprint_batch, fingerprint_work, head_window
from simdedup.settings import HEAD_TOKENS
from simdedup.sketch import (
    EXACT_SHINGLES,
    SKETCH,
    SKETCH_BYTES,
    OnePermutation,
    fingerprints_and_sketches,
    shingle_hashes,
    similarity,
    text_sketches,
)

# Words, Chinese, and the characters in between (accents, full width, punctuation).
TEXT = st.text(alphabet=st.sampled_from("ab cdé,.\n我們的软件ＡＢ1"), max_size=80) | st.lists(
    st.sampled_from(["the", "fox", "我们", "軟體", "über", "x1", "", "!"]), max_size=60
).map(" ".join)


def exact(a: str, b: str) -> float:
    return jaccard(exact_shingles(a), exact_shingles(b))


def edited_pairs(seed: int, vocabulary: list[str], sep: str, n: int = 200) -> list[tuple[str, str]]:
    """n documents of 30-400 units, each beside a copy with 0-15% of its units replaced."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        units = [rng.choice(vocabulary) for _ in range(rng.randint(30, 400))]
        rate = rng.uniform(0.0, 0.15)
        copy = [u if rng.random() >= rate else rng.choice(vocabulary) for u in units]
        pairs.append((sep.join(units), sep.join(copy)))
    return pairs


def estimate_errors(pairs: list[tuple[str, str]]) -> np.ndarray:
    got = similarity(text_sketches([a for a, _ in pairs]), text_sketches([b for _, b in pairs]))
    return np.abs(got - np.array([exact(a, b) for a, b in pairs]))


@settings(max_examples=50)
@given(st.lists(TEXT, min_size=2, max_size=8), st.sampled_from([(64, 2), (1024, 2), (256, 4), (64, 8)]))
def test_bins_in_either_counts_the_bins_that_hold_a_shingle_in_either_sketch(
    texts: list[str], shape: tuple[int, int]
) -> None:
    sketcher = OnePermutation(*shape)
    sketches = sketcher.sketch(*shingle_hashes(texts))
    a, b = sketches[:-1], sketches[1:]
    per_byte = 8 // sketcher.bits
    mask = (1 << sketcher.bits) - 1

    def codes(row: np.ndarray) -> list[int]:
        return [(byte >> (sketcher.bits * j)) & mask for byte in row.tolist() for j in range(per_byte)]

    expected = [sum(1 for x, y in zip(codes(r), codes(s)) if x or y) for r, s in zip(a, b)]
    assert sketcher.bins_in_either(a, b).tolist() == expected


def test_sketches_are_fixed_size_bytes() -> None:
    sketches = text_sketches(["a b c", "", "我们的软件" * 50, "word " * 1000])
    assert sketches.shape == (4, SKETCH_BYTES) and sketches.dtype == np.uint8
    assert SKETCH_BYTES == 256


@given(TEXT)
def test_identical_texts_have_similarity_one(text: str) -> None:
    sketches = text_sketches([text, text])
    assert similarity(sketches[:1], sketches[1:]).tolist() == [1.0]


@settings(max_examples=50)
@given(st.lists(TEXT, max_size=8), st.randoms(use_true_random=False))
def test_a_sketch_does_not_depend_on_its_batch(texts: list[str], rng: random.Random) -> None:
    alone = [text_sketches([t])[0] for t in texts]
    order = list(range(len(texts)))
    rng.shuffle(order)
    shuffled = text_sketches([texts[i] for i in order])
    for row, i in enumerate(order):
        assert np.array_equal(shuffled[row], alone[i])


@settings(max_examples=50)
@given(TEXT, TEXT)
def test_similarity_is_symmetric_and_within_0_and_1(a: str, b: str) -> None:
    sa, sb = text_sketches([a]), text_sketches([b])
    forth, back = similarity(sa, sb), similarity(sb, sa)
    assert forth.tolist() == back.tolist() and 0.0 <= forth[0] <= 1.0


def reference_shingle_hashes(text: str) -> list[int]:
    """One shingle at a time, in Python ints: the definition the batch path must match."""
    m = (1 << 64) - 1

    def fmix64(h: int) -> int:
        h ^= h >> 33
        h = h * 0xFF51AFD7ED558CCD & m
        h ^= h >> 33
        h = h * 0xC4CEB9FE1A85EC53 & m
        return h ^ h >> 33

    def is_han(ch: str) -> bool:
        return 0x3400 <= ord(ch) <= 0x4DBF or 0x4E00 <= ord(ch) <= 0x9FFF or 0xF900 <= ord(ch) <= 0xFAFF

    # Units: each Han character (its code point, flagged), each character of a run of
    # other word characters within NEAR_HAN word characters of a Han one, each other
    # run (its xxh3-64): the English of mixed text stays words, whatever its share.
    tokens = words(normalize(text))
    han_at = [i for i, ch in enumerate("".join(tokens)) if is_han(ch)]
    units: list[tuple[int, bool]] = []
    at = 0  # word characters so far
    for token in tokens:
        for han, run in groupby(token, is_han):
            piece = "".join(run)
            first, last = at, at + len(piece) - 1
            at += len(piece)
            near = any(first - h <= NEAR_HAN for h in han_at if h < first)
            near |= any(h - last <= NEAR_HAN for h in han_at if h > last)
            if han or near:
                units += [(ord(ch), True) for ch in piece]
            else:
                units.append((xxhash.xxh3_64_intdigest(piece.encode()), False))
    if 0 < len(units) < 3:
        units += [(0, True)] * (3 - len(units))
    out = []
    for (a, x), (b, y), (c, z) in zip(units, units[1:], units[2:]):
        mixed = (
            a << 42 | b << 21 | c if x and y and z else a * 0x9E3779B97F4A7C15 + b * 0xC2B2AE3D27D4EB4F + c
        )
        out.append(fmix64(mixed & m))
    return out


@settings(max_examples=50)
@given(st.lists(TEXT, max_size=8))
def test_batch_shingle_hashes_match_hashing_one_shingle_at_a_time(texts: list[str]) -> None:
    hashes, counts = shingle_hashes(texts)
    runs = np.split(hashes, np.cumsum(counts)[:-1]) if texts else []
    assert [run.tolist() for run in runs] == [reference_shingle_hashes(t) for t in texts]


def test_shingles_are_word_3_shingles_or_chinese_character_3_grams() -> None:
    hashes, counts = shingle_hashes(["A b, C d", "我們的軟體", "one", "", "a b c d é"])
    assert counts.tolist() == [2, 3, 1, 0, 3]
    assert len(hashes) == counts.sum()


@pytest.mark.parametrize("seed", [0, 1])
def test_estimates_track_exact_jaccard_of_edited_english(seed: int) -> None:
    errors = estimate_errors(edited_pairs(seed, [f"w{i}" for i in range(2000)], " "))
    assert errors.mean() < 0.03 and errors.max() < 0.15


@pytest.mark.parametrize("seed", [0, 1])
def test_estimates_track_exact_jaccard_of_edited_chinese(seed: int) -> None:
    errors = estimate_errors(edited_pairs(seed, [chr(0x4E00 + i) for i in range(3000)], ""))
    assert errors.mean() < 0.03 and errors.max() < 0.15


def test_short_documents_are_compared_almost_exactly() -> None:
    a = " ".join(f"w{i}" for i in range(40))
    b = a.replace("w20", "x")  # 3 of 38 shingles changed: Jaccard 35 / 41
    assert similarity(text_sketches([a]), text_sketches([b]))[0] == pytest.approx(exact(a, b), abs=0.02)


def test_traditional_and_simplified_chinese_have_the_same_sketch() -> None:
    traditional, simplified = text_sketches(["這個軟體可以在網路上免費下載", "这个软件可以在网络上免费下载"])
    assert np.array_equal(traditional, simplified)
    folded_off = text_sketches(["這個軟體可以在網路上免費下載", "这个软件可以在网络上免费下载"], fold=False)
    assert similarity(folded_off[:1], folded_off[1:])[0] < 0.5


def test_mixed_chinese_and_english_text_is_sketched_by_characters() -> None:
    a = "Linux 和 macOS 都支持这个软件，可以在网络上免费下载使用。" * 3
    b = a.replace("免费", "付费")
    got = similarity(text_sketches([a]), text_sketches([b]))[0]
    assert got == pytest.approx(exact(a, b), abs=0.05) and got < 1.0


def test_empty_text_has_an_empty_sketch() -> None:
    empty, words = text_sketches(["", "some words here"])
    assert not empty.any()
    assert similarity(empty[None], empty[None]).tolist() == [1.0]
    assert similarity(empty[None], words[None]).tolist() == [0.0]


def test_similarity_compares_many_rows_at_once() -> None:
    texts = ["a b c d e f", "a b c d e g", "x y z w v u", ""]
    s = text_sketches(texts)
    got = similarity(s[[0, 0, 2, 3]], s[[0, 1, 0, 3]])
    assert got.tolist() == pytest.approx([1.0, exact(texts[0], texts[1]), 0.0, 1.0], abs=0.01)


@pytest.mark.parametrize(
    ("bins", "bits", "exact"), [(100, 2, 0), (4, 2, 0), (512, 3, 0), (512, 1, 0), (1024, 2, 62), (64, 2, 2)]
)
def test_one_permutation_needs_a_power_of_two_of_bins_and_whole_codes_per_byte(
    bins: int, bits: int, exact: int
) -> None:
    # ... and exact sketches of no more shingles than fit in it (16 bytes: one)
    with pytest.raises(ValueError):
        OnePermutation(bins, bits, exact)


# Texts of a dozen words (a log line's), whose shingles an exact sketch holds, or about
# as many shingles as it holds at most.
FEW = st.lists(
    st.sampled_from(["job", "42", "ok", "the", "queue", "7", "默认", "列"]), min_size=1, max_size=70
).map(" ".join)


@settings(max_examples=200)
@given(FEW | TEXT, FEW | TEXT)
def test_texts_of_few_shingles_are_held_exactly_and_compared_by_their_exact_jaccard(a: str, b: str) -> None:
    sketches = text_sketches([a, b])
    held = SKETCH.exact_rows(sketches)
    assert held.tolist() == [0 < len(exact_shingles(t)) <= EXACT_SHINGLES for t in (a, b)]
    if held.all():
        assert similarity(sketches[:1], sketches[1:])[0] == exact(a, b)


def test_template_log_lines_with_their_own_ids_are_not_taken_for_copies() -> None:
    # Jaccard 10/16 for any two: 3 of 13 shingles hold the id. In sketches of bins, two
    # different shingles of a bin whose 2-bit codes agree (1 in 3,072) look shared, and
    # two such bins read 0.857: among 300 lines' 44,850 pairs, some do.
    rng = random.Random(5)
    lines = [
        f"INFO worker started job {rng.randrange(10**9):09d} on queue default with priority normal and three"
        " retries left"
        for _ in range(300)
    ]
    a, b = np.triu_indices(len(lines), 1)
    bins = OnePermutation().sketch(*shingle_hashes(lines))
    assert OnePermutation().similarity(bins[a], bins[b]).max() >= 0.8  # so this test can fail
    sketches = text_sketches(lines)
    assert set(similarity(sketches[a], sketches[b]).tolist()) == {10 / 16}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        FEW | TEXT | st.integers(62, 300).map(lambda n: " ".join(f"w{i % 97}" for i in range(n))),
        min_size=2,
        max_size=10,
    )
)
def test_an_exact_sketch_compares_with_a_sketch_of_bins_as_its_own_bins_would(texts: list[str]) -> None:
    # Beside a sketch of bins (a longer text, or one an earlier simdedup stored), an exact
    # sketch stands for the bins of the same shingles: the same floats and the same union.
    bins_only = OnePermutation()
    hashes, counts = shingle_hashes(texts)
    new, old = SKETCH.sketch(hashes, counts), bins_only.sketch(hashes, counts)
    a, b = (x.ravel() for x in np.meshgrid(range(len(texts)), range(len(texts))))
    assert SKETCH.bins_in_either(new[a], old[b]).tolist() == bins_only.bins_in_either(old[a], old[b]).tolist()
    assert SKETCH.similarity(new[a], old[b]).tolist() == bins_only.similarity(old[a], old[b]).tolist()
    one_side = ~(SKETCH.exact_rows(new[a]) & SKETCH.exact_rows(new[b]))
    assert (
        SKETCH.similarity(new[a], new[b])[one_side].tolist()
        == bins_only.similarity(old[a], old[b])[one_side].tolist()
    )


# Texts (English, Chinese, accented, empty) and documents given as feature dicts.
WORK = st.lists(
    TEXT | st.dictionaries(st.sampled_from(["x", "y", "软件"]), st.floats(0.5, 3.0), max_size=3), max_size=12
)
# The default path, and the general ones that share only the normalization.
SETTINGS = st.sampled_from(
    [
        Settings(),
        Settings(fold=False),
        Settings(tokenizer="words"),
        Settings(tokenizer="chars"),
        Settings(weights="binary"),
        Settings(bits=128),
    ]
)


@settings(max_examples=200, deadline=None)
@given(WORK, SETTINGS)
def test_one_pass_gives_the_fingerprints_sketches_and_heads_of_three(work: list, s: Settings) -> None:
    fps, sketches, heads = fingerprints_and_sketches(work, s, FeatureHasher(s.bits, s.seed))
    assert fps == fingerprint_work(work, s, FeatureHasher(s.bits, s.seed))
    texts = [w if isinstance(w, str) else "" for w in work]  # features: no sketch
    assert sketches.tobytes() == text_sketches(texts, s.fold).tobytes()
    assert sketches.shape == (len(work), SKETCH_BYTES)
    # A head is the fingerprint of the features of the text's head_window(), for texts
    # with more tokens than HEAD_TOKENS; none for the rest and for documents given as features.
    tokens = [tokenize(w, s) if isinstance(w, str) else [] for w in work]
    hasher = FeatureHasher(s.bits, s.seed)
    expected = [
        fingerprint_batch([weigh(head_window(t, hasher), s)], s.bits, hasher)[0]
        if len(t) > HEAD_TOKENS
        else None
        for t in tokens
    ]
    assert heads == expected


def test_a_batch_is_sketched_in_slices_with_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    # A chunk of empty or one-word lines holds hundreds of thousands of documents, and a
    # sketch takes 2 KB of minima first: they are made a slice at a time.
    from simdedup import sketch as sketch_module

    work = [f"w{i % 13} w{i % 7} " * (i % 5) for i in range(50)] + [{"f": 1.0}, "中文 文本 " * 3]
    whole = sketch_module.fingerprints_and_sketches(work, Settings(), FeatureHasher())
    monkeypatch.setattr(sketch_module, "SKETCH_SLICE", 7)
    sliced = sketch_module.fingerprints_and_sketches(work, Settings(), FeatureHasher())
    assert sliced[0] == whole[0] and sliced[2] == whole[2]
    assert np.array_equal(sliced[1], whole[1]) and sliced[1].shape == (len(work), SKETCH_BYTES)
