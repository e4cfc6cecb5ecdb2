"""Fingerprints: the numpy batch path equals a per-bit reference, and never depends on
the batch, the run or the process."""

from __future__ import annotations

import math
import pickle
import random
import subprocess
import sys

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from simdedup import (
    FeatureHasher,
    Settings,
    extract,
    fingerprint_batch,
    fingerprint_texts,
    format_fingerprint,
)
from simdedup.dedup import dedup
from simdedup.fingerprint import text_batch_fingerprints
from simdedup.read import Document
from simdedup.settings import HEAD_TOKENS

feature_sets = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(st.integers(-50, 50).map(float), st.floats(-1e3, 1e3, allow_nan=False)),
    max_size=20,
)
texts = st.text(alphabet=st.sampled_from("abc de 中文字 .,\n"), max_size=60)


def reference_simhash(features: dict[str, float], bits: int) -> int | None:
    """The seeds' algorithm, one bit at a time, with the same xxh3 feature hash and
    exact column sums (math.fsum), so the sign never depends on the order of addition."""
    if not any(features.values()):
        return None
    digest = xxhash.xxh3_64_intdigest if bits == 64 else xxhash.xxh3_128_intdigest
    columns: list[list[float]] = [[] for _ in range(bits)]
    for feature, weight in features.items():
        h = digest(feature.encode("utf-8"))
        for i in range(bits):
            columns[i].append(weight if h >> i & 1 else -weight)
    return sum(1 << i for i in range(bits) if math.fsum(columns[i]) > 0)


@settings(max_examples=200, deadline=None)
@given(batch=st.lists(feature_sets, max_size=6), bits=st.sampled_from([64, 128]))
def test_batch_fingerprints_equal_the_bit_by_bit_reference(batch: list[dict[str, float]], bits: int) -> None:
    assert fingerprint_batch(batch, bits) == [reference_simhash(f, bits) for f in batch]


@settings(max_examples=100, deadline=None)
@given(docs=st.lists(texts, max_size=12), size=st.integers(1, 12))
def test_a_fingerprint_does_not_depend_on_the_batch_size(docs: list[str], size: int) -> None:
    whole = fingerprint_texts(docs)
    pieces = [fp for i in range(0, len(docs), size) for fp in fingerprint_texts(docs[i : i + size])]
    assert pieces == whole


@settings(max_examples=50, deadline=None)
@given(docs=st.lists(texts, max_size=20), size=st.integers(1, 7))
def test_dedup_decisions_do_not_depend_on_the_batch_size(docs: list[str], size: int) -> None:
    documents = [Document(str(i), t, b"") for i, t in enumerate(docs)]

    def run(batch_size: int) -> list[tuple[str, int | None, str | None]]:
        return [(d.status, d.fingerprint, d.duplicate_of) for d in dedup(documents, batch_size=batch_size)]

    assert run(size) == run(256)


def test_a_sign_decided_by_a_tiny_weight_is_the_exact_sums() -> None:
    # 1 - 1 + 3e-217 is 3e-217 > 0 exactly; numpy's own order of addition gives 0.
    hashes = {"a": 0b01, "b": 0b00, "c": 0b01}
    [fp] = fingerprint_batch([{"a": 1.0, "b": 1.0, "c": 3e-217}], 2, hashfunc=hashes.__getitem__)
    assert fp == 0b01


def test_fingerprints_are_the_same_in_every_process() -> None:
    code = "from simdedup import fingerprint_texts as f; print(f(['one two three', '一二三 四五']))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1


def test_the_feature_hasher_pickles_without_its_cache_and_hashes_the_same() -> None:
    hasher = FeatureHasher(64)
    before = hasher("word")
    clone = pickle.loads(pickle.dumps(hasher))
    assert clone._cache == {}
    assert clone("word") == before == xxhash.xxh3_64_intdigest(b"word")


@settings(max_examples=100, deadline=None)
@given(
    batches=st.lists(st.lists(st.sampled_from(["é1", "é2", "é3", "é4", "字", "ß"]), max_size=6), max_size=8)
)
def test_a_full_feature_cache_is_dropped_without_losing_a_hash(batches: list[list[str]]) -> None:
    # A batch that overflows the cache clears it: the batch's features cached before
    # were dropped with the rest and must be hashed again (they raised KeyError: a
    # process that met ~1M distinct non-ASCII words stopped with a traceback).
    hasher = FeatureHasher(64, cache_size=3)
    for batch in batches:
        assert hasher.many(batch) == [xxhash.xxh3_64_intdigest(f.encode()) for f in batch]
    small = FeatureHasher(64, cache_size=5)
    texts = [f"mot{i}é autre{i}é et{i % 3}é" for i in range(40)]
    assert fingerprint_texts(texts, Settings(), small) == fingerprint_texts(texts, Settings())


@pytest.mark.parametrize("seed", [-1, 1 << 64, True, 1.0, "1", None])
def test_a_feature_hasher_refuses_a_seed_that_settings_refuse(seed: object) -> None:
    # xxh3 took -1 as 2 ** 64 - 1 and 2 ** 64 as 0 (a library trial).
    with pytest.raises(ValueError, match=r"seed must be 0 \.\. 2 \*\* 64 - 1, not"):
        FeatureHasher(64, seed)  # type: ignore[arg-type]
    assert FeatureHasher(64, np.uint64((1 << 64) - 1)).seed == (1 << 64) - 1


def test_format_fingerprint_takes_ints_only() -> None:
    # True was written 0000000000000001; 3.0 and None failed in format's own words (a trial).
    for wrong in (True, 3.0, None, "5"):
        with pytest.raises(TypeError, match="a fingerprint is an int, not"):
            format_fingerprint(wrong)  # type: ignore[arg-type]
    assert format_fingerprint(np.uint64(5)) == format_fingerprint(5) == "0000000000000005"


def test_a_document_without_features_has_no_fingerprint() -> None:
    assert fingerprint_texts(["", "   \n\t", "!!! ... ,,, —"]) == [None, None, None]
    assert fingerprint_texts(["0"])[0] is not None


def test_empty_documents_are_never_duplicates_of_each_other() -> None:
    docs = [Document(str(i), t, b"") for i, t in enumerate(["", "  ", "..."])]
    assert [d.status for d in dedup(docs)] == ["empty", "empty", "empty"]


def test_full_width_and_case_do_not_change_the_fingerprint() -> None:
    a, b = fingerprint_texts(["Ｈｅｌｌｏ ＷＯＲＬＤ，ｆｕｌｌ ｗｉｄｔｈ", "hello world, full width"])
    assert a == b


def test_whitespace_between_chinese_characters_is_layout() -> None:
    a, b = fingerprint_texts(
        ["北京是中国的首都，也是一座历史名城。", "北京是中\n国的首都，也是一座历\n史名城。"]
    )
    assert a == b


def test_128_bit_fingerprints_use_xxh3_128_feature_hashes() -> None:
    text = "a few words of text, a few more"
    [fp] = fingerprint_texts([text], Settings(bits=128))
    assert fp == reference_simhash(extract(text, Settings()), 128)


def test_an_injected_hash_function_is_used() -> None:
    # a = 0b01, b = 0b11, weight 1 each: column 0 sums to 2, column 1 to 0, the rest to -2.
    [fp] = fingerprint_texts(["b a"], Settings(), hashfunc={"a": 0b01, "b": 0b11}.__getitem__)
    assert fp == 0b01


ascii_texts = st.text(alphabet=st.sampled_from("ab Cd_9 .,-\n\t"), max_size=80)
#: A few texts, ASCII or not, for the paths that split a batch by it.
some_texts = st.lists(st.one_of(ascii_texts, texts), max_size=6)


@settings(max_examples=300, deadline=None)
@given(batch=st.lists(st.one_of(ascii_texts, texts), max_size=8), long=st.integers(0, 700))
def test_the_numpy_batch_path_equals_extract_then_fingerprint_batch(batch: list[str], long: int) -> None:
    assert_fingerprinted_as_extract_then_fingerprint_batch(batch, long, Settings())


def assert_fingerprinted_as_extract_then_fingerprint_batch(batch: list[str], long: int, s: Settings) -> None:
    """text_batch_fingerprints of `batch` and a document of `long` tokens (past 255 the
    byte-lane counts are summed in pieces) are extract()'s, then fingerprint_batch()'s."""
    batch = [*batch, " ".join(["w"] * long) + " x" * (long // 3)]
    expected = fingerprint_batch([extract(t, s) for t in batch], s.bits, FeatureHasher(s.bits, s.seed))
    assert text_batch_fingerprints(batch, s) == expected


@settings(max_examples=200, deadline=None)
@given(
    batch=some_texts,
    long=st.integers(0, 400),
    options=st.sampled_from(
        [
            {"tokenizer": "chars"},
            {"tokenizer": "chars", "ngram": 1, "weights": "binary"},
            {"tokenizer": "chars", "seed": 7},
            {"shingle": 2},
            {"shingle": 3, "weights": "binary"},
            {"weights": "binary"},
            {"weights": "binary", "tokenizer": "words", "fold": False},
            {"bits": 128},
            {"bits": 128, "weights": "binary", "seed": 3},
            {"bits": 128, "tokenizer": "chars"},
        ]
    ),
)
def test_unit_weights_summed_per_occurrence_equal_extract_then_fingerprint_batch(
    batch: list[str], long: int, options: dict[str, object]
) -> None:
    # chars, shingles, binary weights and 128 bits: each feature occurrence (or distinct
    # feature) counted in byte lanes, where fingerprint_batch multiplies a float matrix
    # (stop 39; 128 bits, a word at a time, stop 42).
    assert_fingerprinted_as_extract_then_fingerprint_batch(batch, long, Settings(**options))  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(batch=some_texts, long=st.integers(0, 300), weights=st.sampled_from(["tf", "binary"]))
def test_128_bit_fingerprints_and_heads_counted_in_lanes_equal_the_float_sums(
    batch: list[str], long: int, weights: str
) -> None:
    # The heads too: a hash function that is not a FeatureHasher takes the float sums.
    from simdedup.features import normalized_many
    from simdedup.fingerprint import normalized_batch_fingerprints

    batch = [
        *batch,
        " ".join(f"w{i % 40}" for i in range(long)),
        " ".join(f"v{i % 7}" for i in range(long + 70)),
    ]
    s = Settings(bits=128, weights=weights)  # type: ignore[arg-type]
    hasher = FeatureHasher(128)
    norm = normalized_many(batch, s)
    lanes = normalized_batch_fingerprints(norm, s, hasher, heads=True)
    general = normalized_batch_fingerprints(norm, s, lambda f: hasher(f), heads=True)
    assert (lanes[0], lanes[2]) == (general[0], general[2])
    assert any(fp is not None and fp >> 64 for fp in lanes[0]) or not any(lanes[0])


@settings(max_examples=150, deadline=None)
@given(
    batch=some_texts,
    long=st.integers(0, 120),
    options=st.sampled_from(
        [{"tokenizer": "chars", "ngram": n} for n in (1, 3, 5)]
        + [{"shingle": n} for n in (2, 3, 9)]
        + [{"tokenizer": "chars", "bits": 128}, {"shingle": 2, "bits": 128}]
    ),
)
def test_ascii_ngrams_and_shingles_found_in_one_buffer_equal_a_text_at_a_time(
    batch: list[str], long: int, options: dict[str, object]
) -> None:
    # ascii_feature_hashes (stop 39) against the general path, heads included: a hash
    # function that is not a FeatureHasher takes the general path, the same hashes.
    from simdedup.features import normalized_many
    from simdedup.fingerprint import normalized_batch_fingerprints

    batch = [*batch, " ".join(["w", "x-y"] * long)] * 16  # enough to take it (ASCII_FEATURES_BATCH)
    s = Settings(**options)  # type: ignore[arg-type]
    hasher = FeatureHasher(s.bits)
    norm = normalized_many(batch, s)
    fast = normalized_batch_fingerprints(norm, s, hasher, heads=True)
    general = normalized_batch_fingerprints(norm, s, lambda f: hasher(f), heads=True)
    assert (fast[0], fast[2]) == (general[0], general[2])


@pytest.mark.parametrize("options", [{}, {"tokenizer": "chars"}, {"weights": "binary"}])
def test_a_feature_hasher_subclass_at_128_bits_is_checked_as_any_hash_function(
    options: dict[str, str],
) -> None:
    # Its hashes are taken as hash_bits takes any: the low 128 bits of wider ones, and a
    # bool refused (counted in lanes, a wider one overflowed and a bool passed: a review).
    class Wider(FeatureHasher):
        def many(self, features: list[str]) -> list[int]:
            return [h | 1 << 131 for h in super().many(features)]

    class Bools(FeatureHasher):
        def many(self, features: list[str]) -> list[int]:
            return [True for _ in features]

    s = Settings(bits=128, **options)  # type: ignore[arg-type]
    texts = ["the quick brown fox", "jumps over the lazy dog"]
    assert fingerprint_texts(texts, s, Wider(128)) == fingerprint_texts(texts, s, FeatureHasher(128))
    with pytest.raises(ValueError, match="a feature hash is an int"):
        fingerprint_texts(texts, s, Bools(128))


def test_the_vectorized_xxh3_equals_xxhash_at_every_length() -> None:
    import random

    import numpy as np

    from simdedup.xxh3 import hash_spans

    rng = random.Random(5)
    pieces = [rng.randbytes(n) for n in list(range(300)) * 3]
    ends = np.cumsum([len(p) for p in pieces])
    got = hash_spans(b"".join(pieces), ends - [len(p) for p in pieces], ends).tolist()
    assert got == [xxhash.xxh3_64_intdigest(p) for p in pieces]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(max_size=140) | st.sampled_from([b"", b"a", b"the", b"word", b"x" * 17]), max_size=40)
)
def test_the_vectorized_xxh3_128_equals_xxhash(pieces: list[bytes]) -> None:
    # Every length class of xxh3-128 up to 128 bytes, and the longer ones it hands on.
    import random

    import numpy as np

    from simdedup.xxh3 import hash_spans128

    rng = random.Random(len(pieces))
    pieces = [*pieces, *(rng.randbytes(n) for n in range(0, 200, 7))]
    ends = np.cumsum([len(p) for p in pieces])
    low, high = hash_spans128(b"".join(pieces), ends - [len(p) for p in pieces], ends).T.tolist()
    assert [h << 64 | lo for lo, h in zip(low, high)] == [xxhash.xxh3_128_intdigest(p) for p in pieces]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(HEAD_TOKENS + 1, HEAD_TOKENS + 40), min_size=1, max_size=6),
    st.integers(1, 2**64 - 1),
    st.randoms(use_true_random=False),
)
def test_head_starts_are_head_window_starts(counts: list[int], top: int, rnd: random.Random) -> None:
    """The vectorized anchor (numpy, batch) is head_window()'s (Python, one text),
    equal hashes included: the earliest of them."""
    from simdedup.fingerprint import head_starts, head_window

    hashes = np.array([rnd.randint(0, top) for _ in range(sum(counts))], np.uint64)
    first = np.cumsum(counts) - counts
    starts = head_starts(hashes, first, np.array(counts))
    for f, n, start in zip(first.tolist(), counts, starts.tolist()):
        tokens = [str(h) for h in hashes[f : f + n].tolist()]
        window = head_window(tokens, lambda t: int(t))
        assert tokens[start - f : start - f + HEAD_TOKENS] == window
        assert start - f == min(range(n - HEAD_TOKENS + 1), key=lambda i: (hashes[f + i], i))


def test_a_head_stays_put_when_the_text_gains_a_header_or_loses_its_end() -> None:
    """The window starts at the smallest word hash it may start at: words added before
    it, or cut after it, leave it where it was."""
    from simdedup.fingerprint import normalized_batch_fingerprints

    body = [f"b{i}" for i in range(100)]
    hashes = [xxhash.xxh3_64_intdigest(w.encode()) for w in body]
    anchor = min(range(len(body) - HEAD_TOKENS + 1), key=hashes.__getitem__)
    larger = (f"nav{i}" for i in range(400) if xxhash.xxh3_64_intdigest(f"nav{i}".encode()) > hashes[anchor])
    header = list(larger)[:20]
    texts = [" ".join(body), " ".join(header + body), " ".join(body[: anchor + HEAD_TOKENS])]
    heads = normalized_batch_fingerprints(texts, Settings(), heads=True)[2]
    assert heads[0] is not None and heads == [heads[0]] * 3
    fps = fingerprint_texts(texts)
    assert all((fps[0] ^ fp).bit_count() > 0 for fp in fps[1:])  # the whole fingerprints moved
