"""The stored index file: what goes in comes out, and nothing half-read or made with other
settings is ever loaded."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import struct
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import xxhash
from exact import head_of_words
from filelock import FileLock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simdedup import store as store_module
from simdedup.dedup import Deduplicator, Ids
from simdedup.index import Layout
from simdedup.read import Document
from simdedup.settings import FINGERPRINT_SPEC_VERSION, HEAD_TOKENS, Settings
from simdedup.sketch import SKETCH, SKETCH_BYTES, SKETCH_SPEC, text_sketches
from simdedup.status import (
    ExitStatus,
    IndexCorruptError,
    IndexFileError,
    IndexLockedError,
    IndexSettingsError,
)
from simdedup.store import (
    FORMAT_VERSION,
    MAGIC,
    IndexSession,
    StoredIndex,
    block_values,
    check_settings,
    empty_index,
    fingerprint_record,
    index_lock,
    key_buckets,
    lock_path,
    merge_indexes,
    read_header,
    read_index,
    write_index,
)
from simdedup.verify import VerifyingDeduplicator


def make_index(fps: list[int], ids: list[str], run_rows: list[int], s: Settings | None = None) -> StoredIndex:
    s = s or Settings()
    index = empty_index(s)
    words = s.bits // 64
    mask = (1 << 64) - 1
    if words == 1:
        index.fingerprints = np.array(fps, dtype=np.uint64)
    else:
        index.fingerprints = np.array([[fp >> 64, fp & mask] for fp in fps], dtype=np.uint64).reshape(-1, 2)
    packed = Ids()
    packed.extend(ids)
    index.id_bytes, index.id_ends = packed.to_arrays()
    index.run_rows = np.array(run_rows, dtype=np.uint32)
    runs = max(run_rows, default=-1) + 1
    # each with an id, as every run saved gets one: runs of two indexes made here are
    # not the same run (merge_indexes leaves a run out that it holds already)
    index.runs = [
        {"name": f"run {r}", "started": "s", "finished": "f", "added": 0, "id": uuid.uuid4().hex}
        for r in range(runs)
    ]
    return index


def same(a: StoredIndex, b: StoredIndex) -> bool:
    return (
        a.fingerprint == b.fingerprint
        and np.array_equal(a.fingerprints, b.fingerprints)
        and a.fingerprints.shape == b.fingerprints.shape
        and list(a.ids()) == list(b.ids())
        and np.array_equal(a.run_rows, b.run_rows)
        and a.runs == b.runs
        and (a.created, a.updated) == (b.created, b.updated)
        and (a.sketches is None) == (b.sketches is None)
        and (a.sketches is None or np.array_equal(a.sketches, b.sketches))
        and (a.sketched is None or np.array_equal(a.sketched, b.sketched))
        and a.sketch == b.sketch
        and (a.heads is None) == (b.heads is None)
        and (a.heads is None or np.array_equal(a.heads, b.heads) and a.heads.shape == b.heads.shape)
        and (a.headed is None or np.array_equal(a.headed, b.headed))
    )


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.sdx"
    write_index(path, make_index([1, 2**63 + 5, 0xFFFF], ["a", "béta", "文档"], [0, 0, 1]))
    return path


# ---------------------------------------------------------------- round trip


@st.composite
def stored_indexes(draw: st.DrawFn) -> StoredIndex:
    bits = draw(st.sampled_from([64, 128]))
    s = Settings(
        bits=bits, distance=draw(st.integers(0, 8)), tokenizer=draw(st.sampled_from(["auto", "words"]))
    )
    n = draw(st.integers(0, 40))
    fps = draw(st.lists(st.integers(0, 2**bits - 1), min_size=n, max_size=n))
    ids = draw(st.lists(st.text(max_size=12), min_size=n, max_size=n))
    runs = draw(st.integers(1, 4))
    run_rows = draw(st.lists(st.integers(0, runs - 1), min_size=n, max_size=n))
    index = make_index(fps, ids, run_rows, s)
    index.runs = [{"name": draw(st.text(max_size=8)), "added": i} for i in range(runs)]
    if draw(st.booleans()):  # rows verified with --verify carry sketches, some rows none
        seed = draw(st.integers(0, 2**32 - 1))
        rng = np.random.default_rng(seed)
        index.sketched = rng.integers(0, 2, n, dtype=np.uint8)
        index.sketches = rng.integers(0, 256, (n, SKETCH.nbytes), dtype=np.uint8) * index.sketched[:, None]
        index.sketch = SKETCH_SPEC
        if draw(st.booleans()):  # and of those, rows of long texts carry heads
            index.headed = index.sketched * rng.integers(0, 2, n, dtype=np.uint8)
            shape = index.fingerprints.shape
            heads = rng.integers(0, 2**63, shape, dtype=np.uint64)
            index.heads = heads * (index.headed if len(shape) == 1 else index.headed[:, None]).astype(
                np.uint64
            )
    return index


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=stored_indexes())
def test_writing_then_reading_gives_the_same_fingerprints_ids_runs_and_settings(
    tmp_path: Path, index: StoredIndex
) -> None:
    path = tmp_path / "x.sdx"
    write_index(path, index)
    back = read_index(path)
    assert same(back, index)
    assert back.bits == index.bits
    assert [back.run_name(r) for r in range(len(back))] == [index.run_name(r) for r in range(len(index))]


def test_a_version_1_file_is_read_as_rows_without_sketches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simdedup.store as store

    with monkeypatch.context() as m:  # what simdedup wrote before the sketches
        m.setattr(store, "FORMAT_VERSION", 1)
        m.setattr(store, "ARRAYS", store.ARRAYS[:4])
        write_index(tmp_path / "v1.sdx", make_index([1, 2], ["a", "b"], [0, 0]))
    assert read_header(tmp_path / "v1.sdx")[0]["format_version"] == 1
    back = read_index(tmp_path / "v1.sdx")
    assert list(back.ids()) == ["a", "b"] and back.sketches is None


def test_a_version_2_file_is_read_as_rows_without_heads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simdedup.store as store

    index = make_index([1, 2], ["a", "b"], [0, 0])
    index.sketches, index.sketched, index.sketch = (
        np.ones((2, SKETCH.nbytes), np.uint8),
        np.ones(2, np.uint8),
        SKETCH_SPEC,
    )
    with monkeypatch.context() as m:  # what simdedup wrote before the heads
        m.setattr(store, "FORMAT_VERSION", 2)
        m.setattr(store, "ARRAYS", store.ARRAYS[:6])
        write_index(tmp_path / "v2.sdx", index)
    assert read_header(tmp_path / "v2.sdx")[0]["format_version"] == 2
    back = read_index(tmp_path / "v2.sdx")
    assert back.sketched is not None and back.sketched.tolist() == [1, 1] and back.heads is None


def test_heads_of_the_first_32_tokens_are_read_as_rows_without_heads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the anchored window a head covered the first 32 tokens: such heads would
    never match today's, so those rows are read as rows without a head."""
    import simdedup.store as store

    index = make_index([1, 2], ["a", "b"], [0, 0])
    index.sketches, index.sketched, index.sketch = (
        np.ones((2, SKETCH.nbytes), np.uint8),
        np.ones(2, np.uint8),
        SKETCH_SPEC,
    )
    index.heads, index.headed = np.array([5, 0], np.uint64), np.array([1, 0], np.uint8)
    with monkeypatch.context() as m:
        m.setattr(store, "HEAD_SPEC", "first 32 tokens")
        write_index(tmp_path / "old.sdx", index)
    write_index(tmp_path / "new.sdx", index)
    assert read_header(tmp_path / "old.sdx")[0]["heads"] == "first 32 tokens"
    assert read_index(tmp_path / "old.sdx").heads is None
    back = read_index(tmp_path / "new.sdx")
    assert back.heads is not None and back.heads.tolist() == [5, 0]


def test_sketches_and_heads_survive_a_run_without_verification_and_merge(tmp_path: Path) -> None:
    long = " ".join(f"word{i}" for i in range(HEAD_TOKENS + 8))  # it has a head
    texts = [long, "a second and different one"]
    path = tmp_path / "x.sdx"
    with IndexSession(path, Settings(), run_name="verified") as session:
        dd = VerifyingDeduplicator(Settings())
        session.preload(dd)
        dd.decide_many([Document(t, t, b"") for t in texts], [0, 2**64 - 1])
        session.save(dd)
    with IndexSession(path, Settings(), run_name="plain") as session:
        plain = Deduplicator(Settings())
        session.preload(plain)
        plain.decide_many([Document("third", "third text", b"")], [2**32 - 1])  # 32 bits from both
        stored = session.save(plain)
    assert stored.sketched is not None and stored.sketches is not None
    assert stored.sketched.tolist() == [1, 1, 0]
    assert np.array_equal(stored.sketches[:2], text_sketches(texts))
    assert stored.headed is not None and stored.headed.tolist() == [1, 0, 0]
    assert stored.heads is not None and stored.heads[0] == head_of_words(long)
    merged = merge_indexes([("a", read_index(path)), ("b", make_index([7], ["z"], [0]))])
    assert merged.sketched is not None and merged.sketched.tolist() == [1, 1, 0, 0]
    reloaded = VerifyingDeduplicator(Settings())
    merged.load_into(reloaded)
    sketches, has = reloaded.sketch_array()
    assert has.tolist() == [True, True, False, False]
    assert np.array_equal(sketches[:2], text_sketches(texts))
    heads, headed = reloaded.head_array()
    assert headed.tolist() == [True, False, False, False] and heads[0] == stored.heads[0]


def test_unindexed_rows_stay_unindexed_through_saves_runs_without_verification_and_merges(
    tmp_path: Path,
) -> None:
    """A crowd's rows (verify.py) are stored unindexed: a later run must not index them
    (its documents would meet the whole crowd again), and still find their exact copies."""
    texts = [f"w{i} x{i} y{i} z{i} v{i} u{i}" for i in range(5)]  # none verifies another
    path = tmp_path / "x.sdx"
    with IndexSession(path, Settings(), run_name="day 1") as session:
        dd = VerifyingDeduplicator(Settings(), crowd=2)
        session.preload(dd)
        got = dd.decide_many([Document(t, t, b"") for t in texts], [7] * 5)  # one fingerprint
        assert [d.status for d in got] == ["unique"] * 5
        stored = session.save(dd)
    assert read_header(path)[0]["format_version"] == FORMAT_VERSION == 4
    assert stored.unindexed is not None and stored.unindexed.tolist() == [0, 0, 1, 1, 1]
    assert read_index(path).unindexed.tolist() == [0, 0, 1, 1, 1]  # type: ignore[union-attr]
    with IndexSession(path, Settings(), run_name="day 2, unverified") as session:
        plain = Deduplicator(Settings())
        session.preload(plain)
        assert plain.index.unindexed_array().tolist() == [False, False, True, True, True]
        assert [d.row for d in plain.decide_many([Document("n", "new", b"")], [7])] == [0]
        session.save(plain)
    with IndexSession(path, Settings(), run_name="day 3") as session:
        again = VerifyingDeduplicator(Settings(), crowd=2)
        session.preload(again)
        later = [Document("c", texts[3], b""), Document("o", "other words", b"")]
        copy, other = again.decide_many(later, [7, 7])
        assert (copy.status, copy.row, copy.distance) == ("duplicate", 3, 0)  # an exact copy of row 3
        assert (other.status, other.row) == ("unique", 5)
        session.save(again)
    back = read_index(path)
    assert back.unindexed is not None and back.unindexed.tolist() == [0, 0, 1, 1, 1, 1]
    merged = merge_indexes([("a", make_index([1], ["first"], [0])), ("x", back)])
    assert merged.unindexed is not None and merged.unindexed.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert back.without_runs(back.runs[:1]).unindexed.tolist() == [1]  # type: ignore[union-attr]


def test_an_empty_index_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "empty.sdx"
    write_index(path, empty_index(Settings(bits=128)))
    back = read_index(path)
    assert len(back) == 0 and back.fingerprints.shape == (0, 2)


def test_the_file_is_magic_version_json_header_arrays_and_a_checksum(small: Path) -> None:
    data = small.read_bytes()
    magic, version, header_len = struct.unpack("<8sII", data[:16])
    assert (magic, version) == (MAGIC, 3)  # no row unindexed: the version earlier simdedups read
    header = json.loads(data[16 : 16 + header_len])
    assert header["count"] == 3
    assert [a["name"] for a in header["arrays"]] == [
        "fingerprints",
        "id_ends",
        "run_rows",
        "id_bytes",
        "sketches",
        "sketched",
        "heads",
        "headed",
    ]
    assert header["sketch"] is None and header["heads"] is None  # no row has a sketch or a head
    start = 16 + header_len
    assert np.frombuffer(data[start : start + 24], "<u8").tolist() == [1, 2**63 + 5, 0xFFFF]


# ---------------------------------------------------------------- what fingerprints depend on


def test_the_record_holds_every_settings_field_the_hash_jieba_and_the_spec_version() -> None:
    record = fingerprint_record(Settings(tokenizer="words", top_k=7))
    assert record["settings"] == {
        f.name: getattr(Settings(tokenizer="words", top_k=7), f.name) for f in dataclasses.fields(Settings)
    }
    assert record["hash"] == "xxh3_64" and record["spec_version"] >= 1
    assert record["rjieba_version"] and len(record["jieba_idf_xxh3"]) == 16
    assert "opencc_version" in record


@dataclasses.dataclass(frozen=True)
class LaterSettings(Settings):
    """Settings as another engineer may extend them: a new field with a default."""

    stemming: bool = False


def test_a_settings_field_added_later_is_recorded_and_checked_by_the_store(tmp_path: Path) -> None:
    assert fingerprint_record(LaterSettings())["settings"]["stemming"] is False
    path = tmp_path / "x.sdx"
    with IndexSession(path, LaterSettings(stemming=True)) as session:
        session.preload(Deduplicator(Settings()))
        session.save(Deduplicator(Settings()))
    with pytest.raises(IndexSettingsError, match="stemming is True there, False in this run"):
        IndexSession(path, LaterSettings()).__enter__()


def test_a_file_older_than_a_settings_field_counts_as_its_default(tmp_path: Path) -> None:
    path = tmp_path / "x.sdx"
    index = make_index([5], ["a"], [0])
    del index.fingerprint["settings"]["seed"]
    write_index(path, index)
    with IndexSession(path, Settings()) as session:
        assert session.loaded == 1
    with pytest.raises(IndexSettingsError, match="seed is 0 there, 9 in this run"):
        IndexSession(path, Settings(seed=9)).__enter__()


@pytest.mark.parametrize(
    "change, named",
    [
        ({"tokenizer": "words"}, "tokenizer is 'auto' there, 'words' in this run"),
        ({"bits": 128}, "bits is 64 there, 128 in this run"),
        ({"weights": "tfidf", "shingle": 2}, "shingle is 1 there, 2 in this run; weights is 'tf' there"),
    ],
)
def test_other_settings_are_refused_naming_each_difference(small: Path, change: dict, named: str) -> None:
    with pytest.raises(IndexSettingsError, match=named) as e:
        IndexSession(small, Settings(**change)).__enter__()
    assert e.value.exit_status == ExitStatus.USAGE
    assert "\n" not in str(e.value)


def test_a_run_may_search_a_stored_index_at_another_distance(small: Path) -> None:
    # The distance shapes no fingerprint: the in-memory index is rebuilt at every load.
    with IndexSession(small, Settings(distance=6)) as session:
        assert session.loaded == 3


def test_an_index_of_another_spec_version_asks_for_a_new_index(tmp_path: Path) -> None:
    index = make_index([5], ["a"], [0])
    index.fingerprint["spec_version"] = 2
    write_index(tmp_path / "x.sdx", index)
    with pytest.raises(
        IndexSettingsError,
        match=f"spec version 2; this simdedup makes spec version {FINGERPRINT_SPEC_VERSION}",
    ) as e:
        IndexSession(tmp_path / "x.sdx", Settings()).__enter__()
    assert "build a new index" in str(e.value) and "\n" not in str(e.value)


def test_another_chinese_segmenter_is_refused(tmp_path: Path) -> None:
    index = make_index([5], ["a"], [0])
    index.fingerprint["rjieba_version"] = "0.0.1"
    write_index(tmp_path / "x.sdx", index)
    with pytest.raises(IndexSettingsError, match="the rjieba version \\(Chinese words\\) is '0.0.1' there"):
        IndexSession(tmp_path / "x.sdx", Settings()).__enter__()


# ---------------------------------------------------------------- damaged and foreign files


def test_every_truncation_is_detected_and_nothing_is_loaded(small: Path, tmp_path: Path) -> None:
    data = small.read_bytes()
    cut = tmp_path / "cut.sdx"
    for size in range(1, len(data)):
        cut.write_bytes(data[:size])
        with pytest.raises(IndexCorruptError, match="corrupt"):
            read_index(cut)


def test_every_altered_bit_is_detected(small: Path, tmp_path: Path) -> None:
    # Every bit: "<u8" with one flipped is ",u8", which numpy's dtype() read as Python and
    # raised SyntaxError: a traceback and exit 1 (a session's review found it).
    data = small.read_bytes()
    altered = tmp_path / "altered.sdx"
    for i in range(len(data)):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[i] ^= 1 << bit
            altered.write_bytes(bytes(flipped))
            with pytest.raises(IndexFileError):
                read_index(altered)


def test_sketches_of_another_width_than_their_kind_are_refused(small: Path) -> None:
    index = make_index([1, 2], ["a", "b"], [0, 0])
    index.sketches, index.sketched = np.zeros((2, SKETCH_BYTES // 2), np.uint8), np.ones(2, bool)
    index.sketch = SKETCH_SPEC
    with pytest.raises(ValueError, match=f"sketches of {SKETCH_BYTES // 2} bytes"):
        write_index(small, index)


def test_an_altered_fingerprint_is_a_checksum_mismatch(small: Path) -> None:
    data = bytearray(small.read_bytes())
    header_len = struct.unpack("<I", data[12:16])[0]
    data[16 + header_len] ^= 1
    small.write_bytes(bytes(data))
    with pytest.raises(IndexCorruptError, match="checksum mismatch"):
        read_index(small)


@pytest.mark.parametrize("shape", [[10**20], [2**32, 2**32], [2**62, 2**62]])
def test_a_header_whose_shapes_overflow_is_corrupt_not_a_traceback(small: Path, shape: list[int]) -> None:
    # An edited id_bytes shape raised OverflowError, or wrapped to 0 in int64 and passed
    # the size check (its bytes taken out) to fail in np.empty: a traceback and exit 1
    # (a review).
    data = small.read_bytes()
    header_len = struct.unpack("<I", data[12:16])[0]
    header = json.loads(data[16 : 16 + header_len])
    at, arrays = 16 + header_len, []
    for spec in header["arrays"]:
        size = int(np.prod(spec["shape"])) * np.dtype(spec["dtype"]).itemsize
        size += -size % 8
        arrays.append(b"" if spec["name"] == "id_bytes" else data[at : at + size])
        at += size
        if spec["name"] == "id_bytes":
            spec["shape"] = shape
    edited = json.dumps(header).encode()
    edited += b" " * (-len(edited) % 8)
    small.write_bytes(data[:12] + struct.pack("<I", len(edited)) + edited + b"".join(arrays) + data[at:])
    with pytest.raises(IndexCorruptError):
        read_index(small)


def test_a_newer_format_version_asks_for_an_upgrade(small: Path) -> None:
    data = bytearray(small.read_bytes())
    data[8:12] = struct.pack("<I", FORMAT_VERSION + 1)
    data[-8:] = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(data[:-8])))  # as a newer one writes it
    small.write_bytes(bytes(data))
    with pytest.raises(
        IndexFileError, match=f"format version {FORMAT_VERSION + 1} is newer .* upgrade simdedup"
    ):
        read_index(small)


@pytest.mark.parametrize("content", [b"id\ttext\n", b"\x89PNG\r\n\x1a\n" + b"\0" * 100])
def test_a_file_that_is_not_an_index_says_so(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(IndexFileError, match="not a simdedup index file"):
        read_index(path)


def test_an_empty_file_says_how_to_start_a_new_index(tmp_path: Path) -> None:
    # `: > seen.sdx` or `touch` left a file that was "not a simdedup index file", with no
    # word of what to do (a trial); a missing file is a new index.
    path = tmp_path / "seen.sdx"
    path.write_bytes(b"")
    with pytest.raises(
        IndexFileError, match=r"an empty file, not a simdedup index; .* Remove it to start a new index"
    ):
        read_index(path)
    write_index(path, make_index([1], ["a"], [0]))
    lock = tmp_path / "seen.sdx.lock"  # not to be removed while runs may hold it (a trial)
    lock.write_bytes(b"")
    with pytest.raises(IndexFileError, match=f"^{lock} is the lock file of the index {path}, not an index$"):
        read_index(lock)


def test_a_missing_file_or_a_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(IndexFileError, match="no such index file"):
        read_index(tmp_path / "nope.sdx")
    with pytest.raises(IndexFileError, match="is a directory"):
        read_index(tmp_path)


def test_read_header_checks_the_size_without_reading_the_arrays(small: Path) -> None:
    header, size = read_header(small)
    assert size == small.stat().st_size and header["count"] == 3
    small.write_bytes(small.read_bytes()[:-1])
    with pytest.raises(IndexCorruptError, match="truncated"):
        read_header(small)


# ---------------------------------------------------------------- atomic replacement


def test_a_failed_save_leaves_the_previous_file_and_no_temporary_file(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = small.read_bytes()

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(IndexFileError, match="No space left on device; the previous index is unchanged"):
        write_index(small, make_index([7], ["x"], [0]))
    assert small.read_bytes() == before
    assert sorted(p.name for p in small.parent.iterdir()) == ["small.sdx"]


def test_a_save_whose_directory_fails_to_sync_says_that_the_index_was_saved(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The new file has its name by then: "the previous index is unchanged" was untrue.
    def failing(directory: Path) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(store_module, "_fsync_directory", failing)
    with pytest.raises(IndexFileError, match=r"saved index .*small\.sdx, but could not sync its directory"):
        write_index(small, make_index([7], ["x"], [0]))
    assert list(read_index(small).ids()) == ["x"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="gives a file to another user")
def test_a_lock_made_for_another_users_index_is_that_users(small: Path) -> None:
    # Root's cron run made a root-owned lock, which the user's own runs could not open
    # to write: the user's index blocked for the user (a session's review).
    os.chown(small, 65534, 65534)
    Path(lock_path(small)).unlink(missing_ok=True)
    with index_lock(small):
        pass
    st = os.stat(lock_path(small))
    assert (st.st_uid, st.st_gid) == (65534, 65534)


@pytest.mark.parametrize(
    ("index_mode", "umask", "lock_before", "lock_mode"),
    [
        (0o664, 0o022, None, 0o664),
        (None, 0o002, None, 0o664),
        (0o600, 0o022, None, 0o644),
        (0o664, 0o022, 0o644, 0o664),  # one made 0644 before: widened (a review)
    ],
)
def test_a_lock_can_be_opened_by_whoever_may_write_its_index(
    tmp_path: Path, index_mode: int | None, umask: int, lock_before: int | None, lock_mode: int
) -> None:
    # Made 0644 whatever the umask and the index, a group's shared index (0664) could not
    # be used by the group's other members (a trial): the lock follows the umask, and
    # gives the index's readers and writers the same rights.
    path = tmp_path / "shared.sdx"
    if index_mode is not None:
        write_index(path, make_index([7], ["x"], [0]))
        path.chmod(index_mode)
        Path(lock_path(path)).unlink(missing_ok=True)
    if lock_before is not None:
        Path(lock_path(path)).touch(lock_before)
        Path(lock_path(path)).chmod(lock_before)
    was = os.umask(umask)
    try:
        with index_lock(path):
            pass
    finally:
        os.umask(was)
    assert os.stat(lock_path(path)).st_mode & 0o777 == lock_mode


def test_saving_keeps_the_files_permissions(small: Path) -> None:
    small.chmod(0o640)
    write_index(small, make_index([7], ["x"], [0]))
    assert small.stat().st_mode & 0o777 == 0o640


def test_leftovers_of_killed_saves_are_removed_under_the_lock_and_no_other_file(small: Path) -> None:
    stale = small.parent / ".small.sdx.abc_12de.tmp"  # as tempfile.mkstemp names a save's file
    stale.write_bytes(b"half")
    # What other runs write beside it, under other locks: a save of the index
    # small.sdx.1 and a --summary-json small.sdx.1.summary.json. Both were removed.
    others = [
        small.parent / ".small.sdx.1.k2j4x8q0.tmp",
        small.parent / ".small.sdx.1.summary.json.k2j4x8q0.tmp",
    ]
    for other in others:
        other.write_bytes(b"being written")
    with index_lock(small):
        pass
    assert not stale.exists() and all(other.exists() for other in others)


# ---------------------------------------------------------------- locking


def test_a_held_lock_fails_at_once_without_wait(small: Path) -> None:
    with FileLock(lock_path(small)):
        start = time.monotonic()
        with pytest.raises(IndexLockedError, match="in use by another simdedup run") as e, index_lock(small):
            pass
        assert time.monotonic() - start < 1
    assert e.value.exit_status == ExitStatus.USAGE


def test_wait_waits_for_the_lock_before_giving_up(small: Path) -> None:
    with FileLock(lock_path(small)):
        start = time.monotonic()
        with pytest.raises(IndexLockedError, match="after waiting 0.3 s"), index_lock(small, wait=0.3):
            pass
        assert time.monotonic() - start >= 0.3
    with index_lock(small, wait=0.3):
        pass


def test_a_wait_is_said_in_words(small: Path) -> None:
    # `--wait 1e9` was said as "up to 1e+09 s" (a trial).
    said: list[str] = []

    def wait(seconds: float) -> None:
        with index_lock(small, wait=seconds, on_wait=said.append):
            pass

    for seconds, words in ((1e9, "for as long as it takes"), (3600.0, "up to 3,600 s"), (2.5, "up to 2.5 s")):
        with FileLock(lock_path(small)):
            waiting = threading.Thread(target=wait, args=(seconds,))
            waiting.start()
            deadline = time.monotonic() + 10
            while not said and time.monotonic() < deadline:
                time.sleep(0.01)
        waiting.join(10)
        assert said == [f"{small} is in use by another simdedup run: waiting for it, {words}"]
        said.clear()


def test_a_missing_directory_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(IndexFileError, match="no such directory"), index_lock(tmp_path / "nope" / "x.sdx"):
        pass


def test_a_link_into_a_missing_directory_names_the_missing_one_not_the_links(tmp_path: Path) -> None:
    # It said "no such directory sub" of sub/dl.sdx -> ../nothere/x.sdx, where sub exists (a trial).
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "dl.sdx").symlink_to("../nothere/x.sdx")
    said = "a link to ../nothere/x.sdx, whose directory ../nothere does not exist"
    with pytest.raises(IndexFileError, match=re.escape(said)), index_lock(tmp_path / "sub" / "dl.sdx"):
        pass


# ---------------------------------------------------------------- a run against the file


def docs(*texts: str) -> list[Document]:
    return [Document(f"d{i}-{t[:8]}", t, b"") for i, t in enumerate(texts)]


A = "the harbour was quiet that morning with fishing boats tied up along the stone wall"
B = "our library card now works at every branch in the county and members can borrow"
C = "a sourdough starter needs flour water and patience and a warm corner of the kitchen"


def test_a_session_preloads_the_stored_rows_and_saves_this_runs_kept_ones(tmp_path: Path) -> None:
    path = tmp_path / "x.sdx"
    with IndexSession(path, Settings(), run_name="monday") as session:
        dd = Deduplicator(Settings())
        session.preload(dd)
        assert [d.status for d in dd.process(docs(A, B))] == ["unique", "unique"]
        session.save(dd)
    with IndexSession(path, Settings(), run_name="tuesday") as session:
        dd = Deduplicator(Settings())
        session.preload(dd)
        assert session.loaded == 2
        decisions = dd.process(docs(A.upper(), C))
        assert [d.status for d in decisions] == ["duplicate", "unique"]
        assert decisions[0].duplicate_of == "d0-the harb" and session.run_of(decisions[0].row) == "monday"
        assert session.run_of(decisions[1].row) == "tuesday"
        session.save(dd)
    stored = read_index(path)
    assert list(stored.ids()) == ["d0-the harb", "d1-our libr", "d1-a sourdo"]
    assert [stored.run_name(r) for r in range(3)] == ["monday", "monday", "tuesday"]
    assert [(r["name"], r["added"]) for r in stored.runs] == [("monday", 2), ("tuesday", 1)]
    assert stored.created == stored.runs[0]["started"]


def test_a_session_preloads_and_saves_only_inside_its_with_block(tmp_path: Path) -> None:
    # Outside it, preload gave nothing and save wrote the run's rows over every stored
    # one; a save after the block wrote without the lock (a trial of the library).
    path = tmp_path / "x.sdx"
    with IndexSession(path, Settings(), run_name="monday") as session:
        dd = Deduplicator(Settings())
        session.preload(dd)
        dd.process(docs(A, B))
        session.save(dd)
    with pytest.raises(RuntimeError, match=r"IndexSession.save\(\) runs inside `with IndexSession"):
        session.save(dd)  # after the block
    forgot = IndexSession(path, Settings(), run_name="tuesday")
    with pytest.raises(RuntimeError, match=r"IndexSession.preload\(\) runs inside"):
        forgot.preload(Deduplicator(Settings()))
    with pytest.raises(RuntimeError, match=r"IndexSession.save\(\) runs inside"):
        forgot.save(Deduplicator(Settings()))
    refused = IndexSession(path, Settings(seed=9))
    with pytest.raises(IndexSettingsError):
        refused.__enter__()
    with pytest.raises(RuntimeError, match="runs inside"):
        refused.preload(Deduplicator(Settings()))  # a failed entry holds no lock either
    assert [r["name"] for r in read_index(path).runs] == ["monday"]
    assert list(read_index(path).ids()) == ["d0-the harb", "d1-our libr"]


def test_a_session_whose_lock_file_was_removed_and_made_again_does_not_save(tmp_path: Path) -> None:
    # The lock file removed by hand while a run held it: a second run made a new one,
    # locked it, and the two runs saved in turn, the last dropping the other's rows (a
    # trial). The second run saves; the first refuses, and the index keeps the second's.
    path = tmp_path / "x.sdx"
    with IndexSession(path, Settings(), run_name="first") as first:
        dd = Deduplicator(Settings())
        first.preload(dd)
        dd.process(docs(A))
        Path(lock_path(path)).unlink()
        with IndexSession(path, Settings(), run_name="second") as second:
            other = Deduplicator(Settings())
            second.preload(other)
            other.process(docs(B))
            second.save(other)
        with pytest.raises(IndexFileError, match=r"its lock file .*x\.sdx\.lock was removed while this run"):
            first.save(dd)
    assert [r["name"] for r in read_index(path).runs] == ["second"]
    # Behind a symbolic link, the lock named is the one beside the index itself.
    link = tmp_path / "links" / "x.sdx"
    link.parent.mkdir()
    link.symlink_to(path)
    with IndexSession(link, Settings(), run_name="linked") as linked:
        dd = Deduplicator(Settings())
        linked.preload(dd)
        Path(lock_path(path)).unlink()
        with pytest.raises(IndexFileError, match=f"its lock file {re.escape(lock_path(path))} was removed"):
            linked.save(dd)
    # Removed and not made again, it keeps out no run that comes before the save ends
    # (a review): that save is refused too.
    with IndexSession(path, Settings(), run_name="third") as third:
        dd = Deduplicator(Settings())
        third.preload(dd)
        dd.process(docs(A))
        Path(lock_path(path)).unlink()
        with pytest.raises(IndexFileError, match="was removed while this run held it"):
            third.save(dd)
    assert [r["name"] for r in read_index(path).runs] == ["second"]


def test_merge_concatenates_rows_and_runs(tmp_path: Path) -> None:
    a = make_index([1, 2], ["a1", "a2"], [0, 1])
    b = make_index([3], ["b1"], [0])
    merged = merge_indexes([("a", a), ("b", b)])
    assert merged.fingerprints.tolist() == [1, 2, 3]
    assert list(merged.ids()) == ["a1", "a2", "b1"]
    assert merged.run_rows.tolist() == [0, 1, 2]
    assert len(merged.runs) == 3


def test_merge_adds_no_run_twice_as_index_merge_does(tmp_path: Path) -> None:
    # merge_indexes([a, a]) doubled a's rows, where `index merge` leaves a run merged
    # already out (a review).
    a = make_index([1, 2], ["a1", "a2"], [0, 1])
    b = make_index([3], ["b1"], [0])
    merged = merge_indexes([("a", a), ("b", b), ("a again", a)])
    assert merged.fingerprints.tolist() == [1, 2, 3]
    assert list(merged.ids()) == ["a1", "a2", "b1"]
    assert merge_indexes([("merged", merged), ("b", b)]).fingerprints.tolist() == [1, 2, 3]


def test_merge_refuses_other_settings(tmp_path: Path) -> None:
    a = make_index([1], ["a"], [0])
    b = make_index([2], ["b"], [0], Settings(tokenizer="chars"))
    with pytest.raises(IndexSettingsError, match="b was made with other fingerprint settings: tokenizer"):
        merge_indexes([("a", a), ("b", b)])


def test_write_index_and_load_into_name_what_they_take(tmp_path: Path) -> None:
    # Each failed on a missing attribute (a library trial).
    with pytest.raises(TypeError, match="write_index writes a StoredIndex, not str"):
        write_index(tmp_path / "x.sdx", "x")  # type: ignore[arg-type]
    assert not (tmp_path / "x.sdx").exists()
    with pytest.raises(TypeError, match="load_into fills a Deduplicator, not NoneType"):
        make_index([1], ["a"], [0]).load_into(None)  # type: ignore[arg-type]


def test_merge_takes_named_indexes_and_says_so() -> None:
    # Indexes alone: "cannot unpack non-iterable StoredIndex" (a library trial).
    a = make_index([1], ["a"], [0])
    for wrong in ([a, a], [("a", a, "x")], [("a", "not an index")]):
        with pytest.raises(TypeError, match=r"merge_indexes takes \(name, StoredIndex\) pairs"):
            merge_indexes(wrong)  # type: ignore[arg-type]
    assert list(merge_indexes([("a", a)]).ids()) == ["a"]


def test_a_file_made_with_top_k_and_binary_weights_is_still_read(tmp_path: Path) -> None:
    # The command line refuses the pair now; Settings refusing it made such a file
    # "corrupt", not even `index info` could read it (a review).
    path = tmp_path / "bt.sdx"
    write_index(path, make_index([1, 2], ["a", "b"], [0, 0], Settings(top_k=10, weights="binary")))
    assert read_index(path).settings["top_k"] == 10
    from click.testing import CliRunner

    from simdedup.cli import main

    info = CliRunner().invoke(main, ["index", "info", str(path)])
    assert info.exit_code == 0 and "top_k=10" in info.stdout, info.stderr


def test_a_file_made_with_tokenizer_jieba_serves_auto_and_a_seed_is_named_as_the_librarys() -> None:
    # Files record "jieba" where Settings kept it; the same tokens as "auto" (a review).
    stored = fingerprint_record(Settings())
    stored["settings"]["tokenizer"] = "jieba"
    check_settings("old.sdx", stored, Settings())
    check_settings("old.sdx", stored, Settings(tokenizer="jieba"))
    # No command has --seed: the message says where a seed comes from.
    seeded = fingerprint_record(Settings(seed=5))
    with pytest.raises(IndexSettingsError, match=r"seed is 5 there, 0 in this run.*Settings\(seed=...\)"):
        check_settings("seeded.sdx", seeded, Settings())


# ---------------------------------------------------------------- key buckets


@settings(max_examples=40, deadline=None)
@given(
    bits=st.sampled_from([64, 128]),
    distance=st.integers(0, 9),
    fps=st.lists(st.integers(0, 2**128 - 1), min_size=1, max_size=30),
)
def test_key_buckets_count_what_brute_force_counts(bits: int, distance: int, fps: list[int]) -> None:
    fps = [fp % (1 << bits) for fp in fps]
    array = make_index(
        fps, [""] * len(fps), [0] * len(fps), Settings(bits=bits, distance=distance)
    ).fingerprints
    tables = key_buckets(array, bits, distance, top=2)
    assert len(tables) == len(Layout.for_(bits, distance).keys)
    for t in tables:
        keys = []
        for fp in fps:
            key = 0
            for start, width in t.blocks:
                key = key << width | (fp >> start) & ((1 << width) - 1)
            keys.append(key)
        for start, width in t.blocks:
            if width <= 64:
                assert block_values(array, start, width).tolist() == [
                    (fp >> start) & ((1 << width) - 1) for fp in fps
                ]
        counts = sorted(((keys.count(v), v) for v in set(keys)), key=lambda cv: (-cv[0], cv[1]))
        assert t.distinct == len(set(keys))
        assert [n for _, n in t.largest] == [n for n, _ in counts[:2]]
        assert all(keys.count(v) == n for v, n in t.largest)


def test_sketches_of_another_kind_are_not_read_and_their_rows_merge_without_them(tmp_path: Path) -> None:
    # Shingles defined otherwise (an older simdedup's) would not compare with this one's:
    # the rows are read as rows without a sketch, matched on the fingerprint alone.
    other = make_index([1, 2], ["a", "b"], [0, 0])
    other.sketches = np.zeros((2, 16), np.uint8)
    other.sketched = np.ones(2, np.uint8)
    other.sketch = "some-older-sketch"
    write_index(tmp_path / "old.sdx", other)
    old = read_index(tmp_path / "old.sdx")
    assert old.sketches is None and old.dropped_sketches == 2 and old.dropped_sketch == "some-older-sketch"
    with IndexSession(tmp_path / "old.sdx", Settings()) as session:
        assert session.dropped_sketches == 2
    ours = make_index([3], ["c"], [0])
    ours.sketches = np.zeros((1, SKETCH.nbytes), np.uint8)
    ours.sketched = np.ones(1, np.uint8)
    ours.sketch = SKETCH_SPEC
    merged = merge_indexes([("old", old), ("ours", ours)])
    assert merged.sketched.tolist() == [0, 0, 1] and merged.sketch == SKETCH_SPEC
    other.sketch = "another-older-sketch"  # built by hand, not read: still refused
    with pytest.raises(IndexSettingsError, match="sketches of different kinds"):
        merge_indexes([("other", other), ("ours", ours)])
