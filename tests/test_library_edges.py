"""The library off the happy path, as a Dask user's trial met it: state that must
pickle, arguments that were silently coerced or dropped, and text the CLI's reader
would have cleaned first."""

from __future__ import annotations

import copy
import hashlib
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
from cores import needs_index_core

from simdedup import (
    BlockIndex,
    Deduplicator,
    Document,
    FeatureHasher,
    IndexSession,
    ReadOptions,
    Settings,
    VerifyingDeduplicator,
    calibrate,
    dedup,
    distance,
    fingerprint_batch,
    fingerprint_batches,
    fingerprint_documents,
    fingerprint_texts,
    format_fingerprint,
    near_pairs,
    read_documents,
)
from simdedup.dedup import Ids
from simdedup.sketch import fingerprints_and_sketches
from simdedup.status import IndexSettingsError
from simdedup.store import read_index

WORDS = ["harbour", "morning", "boats", "wall", "gulls", "market", "traders", "crates", "mackerel", "library"]


def texts(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 40)) for _ in range(count)]


def test_chinese_text_with_a_lone_surrogate_is_fingerprinted_as_the_reader_would(tmp_path) -> None:
    # OpenCC takes UTF-8: the surrogate raised there and took the whole batch down.
    assert fingerprint_texts(["中文\ud800文本"]) == fingerprint_texts(["中文\ufffd文本"])
    docs = [Document(str(i), t, b"") for i, t in enumerate(texts(30, 0))]
    docs.append(Document("x", "中文\ud800文本", b""))
    assert len(list(dedup(docs))) == 31


def test_a_verifying_deduplicator_pickles_and_goes_on_deciding_the_same() -> None:
    # Its sketches live in a memory map, which does not pickle.
    first, later = texts(2000, 1), texts(2000, 2)
    dd = VerifyingDeduplicator()
    dd.process([Document(str(i), t, b"") for i, t in enumerate(first)])
    copies = [pickle.loads(pickle.dumps(dd)), copy.deepcopy(dd)]
    batch = [Document(f"n{i}", t, b"") for i, t in enumerate(later + first[:50])]
    decided = [[(d.status, d.row, d.duplicate_of) for d in x.process(batch)] for x in (dd, *copies)]
    assert decided[0] == decided[1] == decided[2]
    assert {s for s, _, _ in decided[0]} == {"unique", "duplicate"}
    for x in (dd, *copies):
        x._check()


def test_batches_and_fingerprints_that_do_not_fit_are_refused() -> None:
    docs = [Document(str(i), t, b"") for i, t in enumerate(["a b c d e", "a b c d e", "f g h"])]
    with pytest.raises(ValueError, match="batch size"):
        list(dedup(docs, batch_size=0))
    for dd in (Deduplicator(), VerifyingDeduplicator()):
        with pytest.raises(ValueError, match="3 documents but 1 fingerprints"):
            dd.decide_many(docs, [5])
    given = Deduplicator().decide_many(docs[:1], np.array([5], np.uint64))
    assert type(given[0].fingerprint) is int


def test_near_pairs_takes_fingerprint_texts_output_at_the_default_k() -> None:
    fps = fingerprint_texts(["some text here", "Some text, here!", "", "other words"])
    assert near_pairs(fps) == [(0, 1, 0)]
    assert near_pairs([0, 0b1111]) == [(0, 1, 4)]  # k = Settings().distance
    assert BlockIndex().distance == Settings().distance


@pytest.mark.parametrize(
    "call",
    [
        lambda: BlockIndex(64, 3).add_many(np.array([1.5, 2.7])),
        lambda: BlockIndex(64, 3).add_many(np.array([-1], np.int32)),
        lambda: near_pairs(["0000000000000001", "0000000000000003"]),
        lambda: near_pairs([1 << 130, 0], bits=128),
        lambda: near_pairs([0, 0, 1], distance=-1),
        lambda: BlockIndex(bits=32),
        lambda: BlockIndex(64, -1),
        lambda: fingerprint_texts(["alpha beta"], Settings(bits=128), FeatureHasher(64)),
        lambda: fingerprint_texts(["a b"], Settings(seed=7), FeatureHasher()),
        lambda: fingerprint_batch([{"a": float("nan")}]),
        lambda: fingerprint_batch([{"a": "1"}]),
        lambda: fingerprint_batch([{"a": 1.0, "b": 2}, {"c": 0.5, "d": True}]),  # a bool among numbers
        lambda: fingerprint_batch([{"a": 1.0}, {"b": None}]),
        lambda: Settings(distance=4.5),
        lambda: Settings(distance=True),
        lambda: Settings(fold="no"),
    ],
)
def test_arguments_that_were_silently_coerced_are_refused(call) -> None:
    with pytest.raises(ValueError):
        call()


def test_one_str_is_not_taken_for_a_collection_of_texts() -> None:
    for one in ("hello world", b"hello world"):
        with pytest.raises(TypeError, match="not one: wrap it in a list"):
            fingerprint_texts(one)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="texts \\(str\\), not NoneType"):
        fingerprint_texts(["a", None])  # type: ignore[list-item]


def test_one_path_is_not_walked_character_by_character(tmp_path: Path) -> None:
    # read_documents("/data/x.txt") read the directory "/" (the path's first character):
    # the whole file system (library trial). A Path in a list is read.
    (tmp_path / "x.txt").write_text("one line\n")
    for one in (str(tmp_path / "x.txt"), tmp_path / "x.txt"):
        with pytest.raises(TypeError, match="not one path"):
            read_documents(one, ReadOptions(), print)  # type: ignore[arg-type]
    docs = list(read_documents([tmp_path / "x.txt"], ReadOptions(), print))
    assert [d.text for d in docs] == ["one line"]


@pytest.mark.parametrize(
    "call",
    [
        lambda: dedup([], verify=True),  # True == 1: Jaccard 1.0 silently
        lambda: dedup([], verify="0.8"),
        lambda: dedup([], batch_size=0),  # refused at the call, not at the first document
        lambda: distance(-1, 0),
        lambda: format_fingerprint(-1),
        lambda: format_fingerprint(1 << 64),
        lambda: format_fingerprint(1, bits=63),
        lambda: near_pairs([1, 2], 64, 64),  # a distance of every bit: no block layout
        lambda: BlockIndex(64, 4).query(5, distance=-1),
        lambda: fingerprint_batch([{"a": 1.0}], hashfunc=lambda f: 1.5),  # a float hash was truncated
        lambda: fingerprint_batch([{"a": 1.0}], hashfunc=lambda f: -1),
        lambda: list(fingerprint_batches([], Settings(), jobs=-1)),
        # a second trial: TypeErrors where the README promises ValueError
        lambda: BlockIndex().add("5"),
        lambda: BlockIndex().add(5.0),
        lambda: distance(1.0, 0),
        lambda: distance(0, True),
        lambda: VerifyingDeduplicator(Settings()).decide_many(
            [Document("a", "x y", b"x y")], [1], heads=[1, 2]
        ),
        lambda: VerifyingDeduplicator(Settings()).decide_many(
            [Document("a", "x y", b"x y")], [1], sketches=np.zeros((2, 256), np.uint8)
        ),
    ],
)
def test_library_arguments_a_trial_found_taken_are_refused(call) -> None:
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize(
    ("call", "error"),
    [
        # A label counted by its truth ("no" as a duplicate), or added into the counts (a trial)
        (lambda: calibrate([("the cat sat", "a dog ran", "no")], distances=[4]), TypeError),
        (lambda: calibrate([("the cat sat", "the cat sat", 2)], distances=[4]), TypeError),
        (lambda: calibrate([(1, 2, True)], distances=[4]), TypeError),
        (lambda: calibrate([("a b", "a b", True)], {"x": (Settings(), 2.0)}, [4]), ValueError),
        (lambda: calibrate([("a b", "a b", True)], {"x": (Settings(), float("nan"))}, [4]), ValueError),
        (lambda: calibrate([("a b", "a b", True)], {"x": (Settings(), True)}, [4]), ValueError),
        (lambda: dedup([], deduplicator=5), TypeError),  # failed at the first document
        (lambda: near_pairs(b"\x01\x03"), TypeError),  # bytes iterate as ints
        (lambda: near_pairs(bytearray(b"\x01\x03")), TypeError),
        (lambda: near_pairs({1, 3}), TypeError),  # no order for the pairs to name
        (lambda: BlockIndex(buffer_rows="8"), ValueError),  # a TypeError comparing it
        (lambda: BlockIndex(buffer_rows=1.5), ValueError),  # taken
        (lambda: BlockIndex().search([1], parts=0), ValueError),  # IndexError
        (lambda: BlockIndex().search([1], part=5, parts=2), ValueError),
        (lambda: BlockIndex().search([1], part=-1, parts=2), ValueError),  # the last part's pairs
    ],
)
def test_more_arguments_a_trial_found_taken_are_refused(call, error) -> None:
    with pytest.raises(error):
        call()
    assert calibrate([("a b", "a b", np.bool_(True))], distances=[0])[0].tp == 1  # numpy's bool is a bool
    assert near_pairs({1: "a", 3: "b"}.keys()) == [(0, 1, 1)]  # a dict's keys are in order (a review)


def test_a_feature_hash_wider_than_the_fingerprint_gives_its_low_bits() -> None:
    wide = lambda f: int.from_bytes(hashlib.md5(f.encode()).digest(), "little")  # noqa: E731
    low = lambda f: wide(f) & ((1 << 64) - 1)  # noqa: E731
    batch = [{"a": 1.0, "b": 2.0}, {"c": 1.0}]
    assert fingerprint_batch(batch, 64, wide) == fingerprint_batch(batch, 64, low)


def test_wrong_documents_and_ids_are_refused_by_name() -> None:
    with pytest.raises(TypeError, match="documents are simdedup.Document"):
        list(dedup(["a", "b"]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not one str"):
        Deduplicator().extend([1, 2, 3], "abc")


@pytest.mark.parametrize("make", [Deduplicator, VerifyingDeduplicator])
def test_a_document_with_an_id_or_text_not_a_str_is_refused_before_anything_changes(make) -> None:
    # An int id raised halfway through a VerifyingDeduplicator's batch, its ids a row
    # ahead of its index: a later duplicate named the wrong kept document (trial).
    dd = make()
    bad = [
        [Document("a", "x y z w", b""), Document(5, "p q r s", b"")],  # type: ignore[arg-type]
        [Document("a", "x y z w", b""), Document("b", float("nan"), b"")],  # type: ignore[arg-type]
    ]
    for batch, said in zip(bad, ["its id is 5 (int)", "its text is nan (float)"]):
        for decide in (dd.process, lambda docs: dd.decide_many(docs, [1, 2])):
            with pytest.raises(TypeError, match=re.escape(f"document 1 of the batch: {said}, not a str")):
                decide(batch)
    assert (len(dd.ids), len(dd.index)) == (0, 0)
    later = dd.process([Document("b", "p q r s", b""), Document("c", "p q r s", b"")])
    assert [(d.status, d.duplicate_of) for d in later] == [("unique", None), ("duplicate", "b")]


@pytest.mark.parametrize("make", [Deduplicator, VerifyingDeduplicator])
def test_an_id_no_file_can_store_is_refused_before_anything_changes(make) -> None:
    # A lone surrogate (JSON's "\\ud800") failed as the batch's ids were stored, after
    # the first: the ids a row ahead of the index, a later duplicate named wrongly (a review).
    dd = make()
    batch = [Document("a", "x y z w v", b""), Document("page-\ud800", "p q r s t", b"")]
    said = "document 1 of the batch: its id 'page-.ud800' holds a lone surrogate"
    with pytest.raises(ValueError, match=said):
        dd.process(batch)
    assert (len(dd.ids), len(dd.index)) == (0, 0)
    # an undecodable byte as surrogateescape gives it is stored
    dd.process([Document("a", "x y z w v", b""), Document("b\udc80", "p q r s t", b"")])
    assert [d.duplicate_of for d in dd.process([Document("b-copy", "p q r s t", b"")])] == ["b\udc80"]


@pytest.mark.parametrize("make", [Deduplicator, VerifyingDeduplicator])
def test_an_index_given_with_rows_but_no_ids_is_refused(make) -> None:
    # Its rows had no ids: a copy of row 0 was said to duplicate the next kept document (a review).
    with pytest.raises(ValueError, match="an index of 1 fingerprints without their ids"):
        make(index=BlockIndex.from_fingerprints([12345]))
    assert len(make(index=BlockIndex()).index) == 0  # an empty one is taken


def test_extend_refuses_bad_heads_before_any_row_is_added() -> None:
    texts_ = [f"alpha beta gamma {i} " * 12 for i in range(3)]
    fps, sketches, heads = fingerprints_and_sketches(texts_, Settings(), FeatureHasher())
    dd = VerifyingDeduplicator()
    for bad in (np.array(heads, float), np.array(heads[:2], np.uint64)):
        with pytest.raises(ValueError):
            dd.extend(fps, ["a", "b", "c"], sketches, None, bad, np.ones(3, bool))
        assert (len(dd.index), len(dd.ids)) == (0, 0)
    dd.extend(fps, ["a", "b", "c"], sketches, None, np.array(heads, np.uint64), np.ones(3, bool))
    assert (len(dd.index), len(dd.ids), len(dd.head_index)) == (3, 3, 3)


def test_sizes_may_be_numpy_integers() -> None:
    docs = [Document(str(i), t, b"") for i, t in enumerate(["a b c d", "a b c d", "e f g h"])]
    assert [d.status for d in dedup(docs, batch_size=np.int64(2))] == ["unique", "duplicate", "unique"]


def test_a_stored_index_loads_only_into_a_deduplicator_of_its_settings(tmp_path) -> None:
    from click.testing import CliRunner

    from simdedup.cli import main

    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(texts(20, 3)) + "\n")
    seen = tmp_path / "seen.sdx"
    CliRunner().invoke(main, ["scan", str(lines), "-q", "--index", str(seen)], catch_exceptions=False)
    stored = read_index(seen)
    with pytest.raises(IndexSettingsError, match="tokenizer"):
        stored.load_into(VerifyingDeduplicator(Settings(tokenizer="chars")))
    dd = VerifyingDeduplicator()
    stored.load_into(dd)
    assert len(dd.index) == 20


def test_a_session_saves_only_the_deduplicator_it_preloaded_or_a_copy(tmp_path: Path) -> None:
    # Another one's rows replaced every stored one without a word (trial).
    path = tmp_path / "seen.simdedup"
    docs = lambda texts: [Document(t, t, b"") for t in texts]  # noqa: E731
    with IndexSession(path, Settings(), run_name="n1") as session:
        dd = VerifyingDeduplicator()
        session.preload(dd)
        dd.process(docs(["a b c d", "e f g h"]))
        session.save(dd)
    with IndexSession(path, Settings(), run_name="n2") as session:
        dd = VerifyingDeduplicator()
        session.preload(dd)
        for other in (["p1 x y z", "p2 q r s", "p3 u v w"], ["p1 x y z"]):
            another = VerifyingDeduplicator()
            another.process(docs(other))
            with pytest.raises(ValueError, match="preload\\(\\) filled \\(or a copy of it\\), not another"):
                session.save(another)
        copied = pickle.loads(pickle.dumps(dd))  # sent to a worker and back
        copied.process(docs(["i j k l"]))
        assert len(session.save(copied)) == 3
    stored = read_index(path).ids()
    assert [stored[row] for row in range(len(stored))] == ["a b c d", "e f g h", "i j k l"]


def test_an_index_refuses_a_deduplicator_of_another_feature_hash(tmp_path: Path) -> None:
    # It recorded "xxh3_64" for fingerprints of the caller's hashfunc, and a later run
    # with the default hash took them for its own (library trial).
    md5 = lambda f: int.from_bytes(hashlib.md5(f.encode()).digest()[:8], "little")  # noqa: E731
    path = tmp_path / "seen.simdedup"
    with IndexSession(path, Settings()) as session:
        with pytest.raises(IndexSettingsError, match="hashfunc"):
            session.preload(Deduplicator(Settings(), hashfunc=md5))
        dd = Deduplicator(Settings())
        session.preload(dd)
        dd.process([Document("a", "some words of a text", b"")])
        session.save(dd)
    with pytest.raises(IndexSettingsError, match="hashfunc"):
        read_index(path).load_into(Deduplicator(Settings(), hashfunc=md5))
    read_index(path).load_into(Deduplicator(Settings(), hashfunc=FeatureHasher(64)))  # the default: taken


@pytest.mark.parametrize(
    ("call", "error", "said"),
    [  # each once raised late, or something else than what was wrong (trial)
        (
            lambda: fingerprint_texts(["a"], {"bits": 64}),
            TypeError,
            "settings are a simdedup.Settings, not dict",
        ),
        (lambda: Deduplicator({"bits": 64}), TypeError, "settings are a simdedup.Settings, not dict"),
        (lambda: dedup([], 3), TypeError, "settings are a simdedup.Settings, not int"),
        (
            lambda: dedup([], hashfunc=5),
            TypeError,
            "hashfunc is a function of a feature (str) to an int, not 5",
        ),
        (lambda: Settings(seed=-1), ValueError, "seed must be 0 .. 2 ** 64 - 1, not -1"),
        (lambda: Settings(seed=2**64), ValueError, "seed must be 0 .. 2 ** 64 - 1"),
        (
            lambda: next(fingerprint_batches([], Settings(), piece=0)),
            ValueError,
            "piece is a number of documents",
        ),
        (lambda: ReadOptions(glob="*.md"), TypeError, "glob is a tuple of patterns (str), not '*.md'"),
        (lambda: ReadOptions(exclude="a.txt"), TypeError, "exclude is a tuple of patterns (str)"),
        (lambda: ReadOptions(max_doc_size=-1), ValueError, "max_doc_size is a number of bytes, 1 or more"),
    ],
)
def test_bad_library_arguments_are_refused_at_once_by_name(call, error, said) -> None:
    with pytest.raises(error, match=re.escape(said)):
        call()


def test_near_pairs_takes_any_iterable_numpy_distances_and_fingerprint_arrays() -> None:
    fps = [1, 3, 7, None, 2**64 - 1]
    expected = [(0, 1, 1), (0, 2, 2), (1, 2, 1)]
    assert near_pairs(fp for fp in fps) == expected
    assert near_pairs(fps, distance=np.int64(4)) == expected
    assert near_pairs(np.array([1, 3, 7], np.uint64)) == expected
    # int64, as Spark and Parquet keep 64-bit fingerprints, is read as its bits: "not an
    # array of int64" was said of it, where int64 without a negative one was taken (trial).
    signed = np.array([1, 3, 7, -1], np.int64)
    assert near_pairs(signed) == near_pairs(signed.view(np.uint64)) == expected
    assert near_pairs(np.array([-1, -2], np.int64)) == [(0, 1, 1)]
    wide = BlockIndex(128, 4)
    wide.add_many(np.array([[0, 1], [0, 3], [2**20 - 1, 0]], np.uint64))
    assert near_pairs(wide.fingerprint_array(), bits=128) == [(0, 1, 1)]
    assert ReadOptions(glob=["*.md"]).glob == ("*.md",)


def test_decide_many_takes_int64_fingerprints_and_numpy_integers_as_near_pairs_does() -> None:
    # Spark's and Parquet's int64 fingerprints were refused by decide_many whenever one
    # had its top bit set (about half of them), though near_pairs and add_many read them
    # as their bits; a list of np.uint64 reached Decision.fingerprint as np.uint64 (trial).
    batch = texts(200, 3) + texts(20, 3)  # 20 copies
    docs = [Document(str(i), t, b"") for i, t in enumerate(batch)]
    unsigned = np.array(fingerprint_texts(batch), np.uint64)
    assert (unsigned >= 1 << 63).any()
    for make in (Deduplicator, VerifyingDeduplicator):
        expected = [(d.status, d.fingerprint, d.duplicate_of) for d in make().decide_many(docs, unsigned)]
        assert sum(status == "duplicate" for status, _, _ in expected) >= 20
        for given in (unsigned.view(np.int64), list(unsigned)):
            decided = make().decide_many(docs, given)
            assert [(d.status, d.fingerprint, d.duplicate_of) for d in decided] == expected
            assert all(type(d.fingerprint) is int for d in decided)
    with pytest.raises(ValueError, match="not an array of float64"):
        Deduplicator().decide_many(docs[:2], np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="a fingerprint is an int"):
        Deduplicator().decide_many(docs[:2], [1.0, 2.0])


def test_sketches_that_are_not_bytes_are_refused() -> None:
    # Floats (sketches through a DataFrame) were compared as they were: 304 duplicates
    # of 4,000 documents where their bytes gave 325 (trial).
    from simdedup.sketch import fingerprints_and_sketches

    batch = texts(50, 4)
    docs = [Document(str(i), t, b"") for i, t in enumerate(batch)]
    fps, sketches, heads = fingerprints_and_sketches(batch, Settings(), FeatureHasher())
    for dtype in ("float64", "float32", "int64"):
        with pytest.raises(ValueError, match=f"sketches are a uint8 array .*, not {dtype}"):
            VerifyingDeduplicator().decide_many(docs, fps, sketches.astype(dtype), heads)
    assert len(VerifyingDeduplicator().decide_many(docs, fps, sketches, heads)) == 50


# ---------------------------------------------------------------- a Dask user's review


def test_a_128_bit_deduplicator_refuses_a_64_bit_array_and_takes_its_own_form() -> None:
    # A partition's uint64 array was taken as 128-bit fingerprints: an exact copy of a
    # kept document came out unique. The (n, 2) form crashed (unhashable list).
    ts = texts(3, seed=1)
    ts[1] = ts[0]
    docs = [Document(str(i), t, b"") for i, t in enumerate(ts)]
    wide = Settings(bits=128)
    for cls in (Deduplicator, VerifyingDeduplicator):
        with pytest.raises(ValueError, match="expected 128-bit fingerprints as shape"):
            cls(wide).decide_many(docs, np.array(fingerprint_texts(ts), np.uint64))
        fps = fingerprint_texts(ts, wide)
        as_words = np.array([[fp >> 64, fp & (2**64 - 1)] for fp in fps], np.uint64)
        decided = [d.status for d in cls(wide).decide_many(docs, as_words)]
        assert (
            decided
            == [d.status for d in cls(wide).decide_many(docs, fps)]
            == ["unique", "duplicate", "unique"]
        )


def test_a_feature_hasher_of_other_bits_or_seed_is_refused_by_every_batch_function() -> None:
    from simdedup import fingerprint_documents
    from simdedup.sketch import fingerprints_and_sketches

    docs = [Document("a", "the harbour at morning", b"")]
    for hasher in (FeatureHasher(64, 5), FeatureHasher(128)):
        with pytest.raises(ValueError, match="a FeatureHasher of"):
            fingerprint_documents(docs, Settings(), hasher)
        with pytest.raises(ValueError, match="a FeatureHasher of"):
            fingerprints_and_sketches(["the harbour at morning"], Settings(), hasher)
    with pytest.raises(ValueError, match="a FeatureHasher of 64 bits, for 128-bit fingerprints"):
        fingerprint_batch([{"harbour": 1.0}], 128, FeatureHasher(64))


def test_a_refused_batch_or_preload_leaves_the_deduplicator_as_it_was() -> None:
    # Refused halfway, a retried task found the first stretch kept (a document a
    # duplicate of itself), or rows added without their sketches.
    docs = [Document(f"d{i}", "same text", b"") for i in range(10)] + [
        Document("x", "other text", b""),
        Document("bad", "t", b""),
    ]
    for cls in (Deduplicator, VerifyingDeduplicator):
        dd = cls()
        with pytest.raises(ValueError, match="64-bit unsigned ints"):
            dd.decide_many(docs, [7] * 10 + [12345, -1])
        assert len(dd.index) == len(dd.ids) == 0
    dd = VerifyingDeduplicator()
    for bad in (
        {"sketches": np.zeros((2, 128), np.uint8)},
        {"sketches": dd.sketch_array()[0][:0], "has": [True]},
    ):
        with pytest.raises(ValueError, match="2 rows but"):
            dd.extend([1, 2], ["a", "b"], **bad)
        assert len(dd.index) == len(dd.ids) == 0


def test_an_index_refuses_negative_ints_everywhere_and_takes_numpy_distances() -> None:
    index = BlockIndex(64, 4)
    for call in (index.add_many, index.search, index.nearest_many):
        with pytest.raises(ValueError, match="64-bit unsigned ints"):
            call([-1, -2])
    index.add_many([5, 6])
    assert index.query(5, np.int64(1)) == index.query(5, 1) == [(0, 0)]
    assert index.search([5], np.int64(2))[1].tolist() == index.search([5], 2)[1].tolist()


def test_a_shared_feature_hasher_whose_cache_fills_serves_threads_without_key_errors() -> None:
    # Another thread's clear() between this one's inserts and its lookup: KeyError.
    import sys
    import threading

    hasher = FeatureHasher(64, cache_size=500)
    words = [f"w{i}" for i in range(5000)]
    reference = dict(zip(words, FeatureHasher(64).many(words)))
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(200):
                batch = [str(w) for w in rng.choice(words, 300)]
                assert hasher.many(batch) == [reference[w] for w in batch]
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []


def test_auto_jobs_in_a_daemonic_process_work_there_and_explicit_ones_are_refused() -> None:
    import multiprocessing as mp

    with mp.get_context("fork").Pool(1) as pool:
        assert pool.apply(_batches_in_a_pool_worker, (0,)) == "ok"
        assert pool.apply(_batches_in_a_pool_worker, (2,)).startswith(
            "ValueError: jobs=2 in a daemonic process"
        )


def _batches_in_a_pool_worker(jobs: int) -> str:
    docs = [Document(str(i), "我们今天去市场买鱼 " * 40, b"") for i in range(200)]
    try:
        got = [fps for _, fps in fingerprint_batches([docs[:100], docs[100:]], Settings(), jobs=jobs)]
    except ValueError as e:
        return f"ValueError: {e}"
    return "ok" if sum(map(len, got)) == 200 else "short"


def test_ids_refuse_a_negative_row_past_the_first() -> None:
    # ids[-4] of three ids wrapped to the last (a review).
    ids = Ids()
    ids.extend(["a", "bb", "ccc"])
    assert [ids[-1], ids[-3], ids[0], ids[2]] == ["ccc", "a", "a", "ccc"]
    for row in (-4, -5, 3):
        with pytest.raises(IndexError):
            ids[row]


def test_an_index_buffer_of_no_rows_is_refused() -> None:
    # buffer_rows=0 made an empty run at each add_many, and the runs no longer tiled the
    # rows (a review).
    for rows in (0, -1):
        with pytest.raises(ValueError, match="buffer_rows"):
            BlockIndex(64, 3, buffer_rows=rows)


# A second review as a Dask user (stop 39): sharing, partial arguments, shards.


@pytest.mark.parametrize("cls", [Deduplicator, VerifyingDeduplicator])
def test_a_deduplicator_refuses_a_second_thread_while_one_decides(cls: type[Deduplicator]) -> None:
    # Shared by a thread pool (`pool.map(dd.process, parts)`), batches interleaved and
    # rows got other documents' ids, with no error (a review).
    import threading

    dd = cls()
    inside, release = threading.Event(), threading.Event()
    decide = dd._decide_batch

    def slow(*args: object) -> object:
        inside.set()
        release.wait(10)
        return decide(*args)  # type: ignore[arg-type]

    dd._decide_batch = slow  # type: ignore[method-assign]
    first = [Document(str(i), t, b"") for i, t in enumerate(texts(20, 1))]
    worker = threading.Thread(target=dd.process, args=(first,))
    worker.start()
    try:
        assert inside.wait(10)
        later = [Document("later", "other words entirely", b"")]
        for call in (lambda: dd.process(later), lambda: dd.extend([1], ["x"])):
            with pytest.raises(RuntimeError, match="another thread is using this deduplicator"):
                call()
        with pytest.raises(RuntimeError, match="another thread"):
            dd.match_many(later, fingerprint_texts(["other words entirely"]))
    finally:
        release.set()
        worker.join()
    del dd._decide_batch
    assert len(dd.ids) == len(dd.index) and list(dd.ids)[0] == "0"  # nothing half-added
    assert [d.status for d in dd.process(later)] == ["unique"]  # usable again, and pickles
    assert len(pickle.loads(pickle.dumps(dd)).ids) == len(dd.ids)


def test_text_batch_fingerprints_checks_its_arguments_as_fingerprint_texts_does() -> None:
    from simdedup.fingerprint import text_batch_fingerprints

    batch = ["some text here", "other words"]
    with pytest.raises(ValueError, match="seed 0, for settings of 64 bits, seed 5"):
        text_batch_fingerprints(batch, Settings(seed=5), FeatureHasher(64, 0), compiled=True)
    with pytest.raises(ValueError, match="seed 5, for settings of 64 bits, seed 0"):
        text_batch_fingerprints(batch, Settings(), FeatureHasher(64, 5))
    with pytest.raises(TypeError, match="not one: wrap it in a list"):
        text_batch_fingerprints("some text", Settings())
    with pytest.raises(TypeError, match="not one: wrap it in a list"):
        fingerprints_and_sketches("some text", Settings(), FeatureHasher(64))
    with pytest.raises(TypeError, match="simdedup.Settings, not dict"):
        text_batch_fingerprints(batch, {"bits": 64})  # type: ignore[arg-type]


def test_decide_many_refuses_to_make_sketches_or_heads_of_texts_left_out() -> None:
    # Workers sent back fingerprints and sketches, the texts left out: the heads were
    # made of "", and 1,407 of 11,000 decisions were not dedup()'s (a review).
    corpus = texts(30, 2) + [t + " gulls" for t in texts(30, 2)]
    docs = [Document(str(i), t, b"") for i, t in enumerate(corpus)]
    fps, sketches, heads = fingerprints_and_sketches(corpus, Settings(), FeatureHasher(64))
    bare = [Document(d.id, "", b"") for d in docs]
    for given in ((sketches,), (None, heads), ()):
        with pytest.raises(ValueError, match="document 0 of the batch has a fingerprint but no text"):
            VerifyingDeduplicator().decide_many(bare, fps, *given)
    expected = [(d.status, d.duplicate_of) for d in dedup(docs)]
    decided = VerifyingDeduplicator().decide_many(bare, fps, sketches, heads)
    assert [(d.status, d.duplicate_of) for d in decided] == expected


def test_extend_takes_heads_without_flags_and_refuses_heads_without_sketches() -> None:
    source = VerifyingDeduplicator()
    source.process([Document(str(i), t, b"") for i, t in enumerate(texts(10, 3))])
    fps = source.index.fingerprint_array()
    sketches, has = source.sketch_array()
    heads, headed = source.head_array()
    assert headed.all()
    dd = VerifyingDeduplicator()
    dd.extend(fps, list(source.ids), sketches, has, heads)  # headed left out: all of them
    assert np.array_equal(dd.head_array()[0], heads)  # the heads were dropped, unsaid (a review)
    with pytest.raises(ValueError, match="heads without sketches"):
        VerifyingDeduplicator().extend(fps, list(source.ids), heads=heads)
    with pytest.raises(ValueError, match="without the heads"):
        VerifyingDeduplicator().extend(fps, list(source.ids), sketches, has, headed=headed)


def test_load_into_refuses_a_deduplicator_that_holds_rows(tmp_path: Path) -> None:
    # Loaded twice, every stored row was there twice (a review).
    path = tmp_path / "seen.sdx"
    with IndexSession(path, Settings()) as session:
        dd = VerifyingDeduplicator()
        session.preload(dd)
        dd.process([Document(str(i), t, b"") for i, t in enumerate(texts(5, 4))])
        session.save(dd)
    fresh = VerifyingDeduplicator()
    read_index(path).load_into(fresh)
    assert len(fresh.ids) == 5
    with pytest.raises(ValueError, match="load_into needs an empty Deduplicator; this one holds 5 rows"):
        read_index(path).load_into(fresh)
    assert len(fresh.ids) == len(fresh.index) == 5


@pytest.mark.parametrize(
    ("bad", "error", "said"),
    [
        ({"a": "x"}, ValueError, "a weight is a number, not 'x'"),
        ({"a": float("inf")}, ValueError, "weights are finite numbers"),
        ({1: 2.0}, TypeError, "a feature is a str, not 1"),
        (["a"], TypeError, "its features are a {feature: weight} mapping, not list"),
    ],
)
def test_a_bad_feature_set_names_its_document(bad: object, error: type[Exception], said: str) -> None:
    # One bad document failed the batch without saying which; a list or an int feature
    # failed with an AttributeError (a review).
    with pytest.raises(error, match=re.escape(f"document 2 of the batch: {said}")):
        fingerprint_batch([{"ok": 1.0}, {}, bad])  # type: ignore[list-item]


def test_a_batch_item_that_is_no_text_nor_features_is_named_by_its_place() -> None:
    # bytes for a text were said to be no features mapping, numbered among the batch's
    # features rather than in the batch (a library trial).
    from simdedup.sketch import fingerprints_and_sketches

    for batch in (["a text", b"bytes"], ["a text", {"ok": 1.0}, None]):
        said = f"document {len(batch) - 1} of the batch: a text is a str, features a"
        with pytest.raises(TypeError, match=said):
            fingerprints_and_sketches(batch, Settings(), FeatureHasher(64))  # type: ignore[arg-type]


@needs_index_core  # the numpy path holds more (351 MiB for Deduplicator) and takes minutes
@pytest.mark.parametrize("cls", [Deduplicator, VerifyingDeduplicator])
def test_matching_a_batch_against_a_crowd_holds_a_piece_of_its_pairs(cls: type[Deduplicator]) -> None:
    # match_many (`index query`) held every pair of its batch: 4,096 CSV rows against
    # 50,000 kept ones took 5-10 GB, where scan splits such a batch (a review).
    import tracemalloc

    text = " ".join(["0"] * 60)
    fp = fingerprint_texts([text])[0]
    dd = cls()
    kept = 20_000
    if isinstance(dd, VerifyingDeduplicator):
        _, sketches, heads = fingerprints_and_sketches([text], Settings(), FeatureHasher(64))
        other = sketches.copy()
        other[0, ::2] ^= 0xFF  # verifies against nothing: every pair is compared
        dd.extend([fp] * kept, [str(i) for i in range(kept)], np.repeat(other, kept, 0), None, heads * kept)
    else:
        dd.extend([fp] * kept, [str(i) for i in range(kept)])
    queries = [Document(f"q{i}", text, b"") for i in range(2_000)]  # 40M pairs within k
    tracemalloc.start()
    try:
        rows, dists = dd.match_many(queries, [fp] * len(queries))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    expected = -1 if isinstance(dd, VerifyingDeduplicator) else 0
    assert rows.tolist() == [expected] * len(queries)
    assert peak < 300 << 20, f"{peak / 2**20:.0f} MiB"  # the 40M pairs alone: 960 MiB


def test_match_many_still_takes_sketches_by_keyword() -> None:
    # match_many(docs, fps, sketches=...) broke when the batch was matched in pieces
    # (a review of stop 39).
    dd = Deduplicator()
    fps = fingerprint_texts(["a b c d", "e f g h"])
    dd.extend(fps[:1], ["kept"])
    docs = [Document("q0", "a b c d", b""), Document("q1", "e f g h", b"")]
    rows, dists = dd.match_many(docs, fps, sketches=None)
    assert rows.tolist() == [0, -1] and dists.tolist() == [0, -1]


class _NoTruth(list):
    """A sequence with no truth value, as a pandas Series is."""

    def __bool__(self) -> bool:
        raise ValueError("The truth value of a sequence is ambiguous")


@pytest.mark.parametrize("make", [Deduplicator, VerifyingDeduplicator])
def test_fingerprints_in_a_sequence_without_a_truth_value_are_taken(make) -> None:
    # A pandas Series of fingerprints was refused after its checks were made faster (a review).
    batch = ["the cat sat on the mat today", "the cat sat on the mat today", "something else entirely"]
    docs = [Document(str(i), t, b"") for i, t in enumerate(batch)]
    decided = make().decide_many(docs, _NoTruth(fingerprint_texts(batch)))
    assert [d.status for d in decided] == ["unique", "duplicate", "unique"]


def test_bad_documents_given_as_an_iterator_are_still_refused_by_name() -> None:
    # The fast check of a batch used an iterator up, and a bad document went unsaid (a review).
    with pytest.raises(TypeError, match="document 0 of the batch: its id is 5 \\(int\\)"):
        fingerprint_documents(iter([Document(5, "x y z", b"")]), Settings())  # type: ignore[arg-type]
