"""Keep-first semantics: what is kept, what duplicates what, in input order."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdedup import Deduplicator, Document, Settings, dedup
from simdedup.dedup import Ids


def decide_all(fps: list[int | None], k: int = 3) -> list[tuple[str, str | None, int | None]]:
    dd = Deduplicator(Settings(distance=k))
    out = []
    for i, fp in enumerate(fps):
        d = dd.decide(Document(f"d{i}", "", b""), fp)
        out.append((d.status, d.duplicate_of, d.distance))
    return out


def test_the_first_of_a_group_is_kept_and_later_ones_duplicate_it() -> None:
    assert decide_all([0b0, 0b1, 0b11]) == [
        ("unique", None, None),
        ("duplicate", "d0", 1),
        ("duplicate", "d0", 2),
    ]


def test_a_chain_keeps_both_ends_because_duplicates_are_not_indexed() -> None:
    a, b, c = 0, 0b111, 0b111111  # a~b (3), b~c (3), a and c 6 apart
    assert [s for s, _, _ in decide_all([a, b, c])] == ["unique", "duplicate", "unique"]


def test_a_duplicate_names_the_nearest_kept_document() -> None:
    far, near = 0b0111, 0b1000_0000
    assert decide_all([far, near, 0b1000_0001])[2] == ("duplicate", "d1", 1)


def test_ties_go_to_the_earliest_kept_document() -> None:
    assert decide_all([0b0110000, 0b0001100, 0b0000000])[2] == ("duplicate", "d0", 2)


def test_empty_documents_are_never_kept_or_matched() -> None:
    assert decide_all([None, 0, None]) == [
        ("empty", None, None),
        ("unique", None, None),
        ("empty", None, None),
    ]


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(0, 60), k=st.integers(0, 8))
def test_decisions_match_a_brute_force_keep_first(seed: int, n: int, k: int) -> None:
    rng = random.Random(seed)
    centre = rng.getrandbits(64)
    fps = [centre ^ (rng.getrandbits(64) & rng.getrandbits(64) & rng.getrandbits(64)) for _ in range(n)]
    expected, kept = [], []
    for i, fp in enumerate(fps):
        near = [((fp ^ kept_fp).bit_count(), j) for j, kept_fp in kept if (fp ^ kept_fp).bit_count() <= k]
        if near:
            d, j = min(near)
            expected.append(("duplicate", f"d{j}", d))
        else:
            kept.append((i, fp))
            expected.append(("unique", None, None))
    assert decide_all(fps, k) == expected


def _docs(texts: list[str], start: int = 0) -> list[Document]:
    return [Document(f"d{start + i}", t, t.encode()) for i, t in enumerate(texts)]


def test_extend_preloads_kept_documents_with_their_ids() -> None:
    first = Deduplicator()
    first.process(_docs(["alpha beta gamma delta", "one two three four"]))
    second = Deduplicator()
    second.extend(first.index.fingerprint_array(), first.ids)
    [decision] = second.process(_docs(["alpha beta gamma delta"], start=10))
    assert (decision.status, decision.duplicate_of) == ("duplicate", "d0")
    assert list(second.ids) == ["d0", "d1"]


def test_another_deduplicators_ids_are_copied_not_shared() -> None:
    # Taken over, each one's kept rows were added to both, and a duplicate in one named
    # the other's document (a library trial).
    first = Deduplicator()
    first.process(_docs(["alpha beta gamma delta", "one two three four"]))
    second = Deduplicator()
    second.extend(first.index.fingerprint_array(), first.ids)
    second.process(_docs(["brand new words entirely here"], start=10))
    first.process(_docs(["something else completely"], start=20))
    [decision] = first.process(_docs(["something else completely"], start=30))
    assert decision.duplicate_of == "d20"
    assert list(first.ids) == ["d0", "d1", "d20"] and list(second.ids) == ["d0", "d1", "d10"]
    third = Deduplicator()  # and the copy is no longer the first's, once taken over
    third.extend(second.index.fingerprint_array(), second.ids)
    second.process(_docs(["yet another text of its own"], start=40))
    assert list(third.ids) == ["d0", "d1", "d10"]


def test_extend_refuses_a_count_mismatch() -> None:
    with pytest.raises(ValueError, match="2 fingerprints but 1 ids"):
        Deduplicator().extend([1, 2], ["a"])


def test_extending_twice_appends_the_second_ids_after_the_first() -> None:
    dd = Deduplicator()
    dd.extend([1, 2], ["a", "bb"])
    more = Deduplicator()
    more.extend([3], ["ccc"])
    dd.extend(more.index.fingerprint_array(), more.ids)
    assert list(dd.ids) == ["a", "bb", "ccc"] and dd.index.fingerprints[2] == 3


ID = st.text(st.characters(codec="utf-8") | st.sampled_from(["\udcff", "\udc80"]), max_size=12)


@given(st.lists(st.tuples(st.booleans(), st.lists(ID, max_size=6)), max_size=8))
def test_ids_hold_what_was_appended_and_extended_in_order(steps: list[tuple[bool, list[str]]]) -> None:
    packed, plain = Ids(), []
    for one_by_one, ids in steps:
        if one_by_one:
            for doc_id in ids:
                packed.append(doc_id)
        else:
            packed.extend(iter(ids))
        plain.extend(ids)
    assert len(packed) == len(plain) and list(packed) == plain
    again = Ids()
    again.extend(packed)  # packed to packed
    assert list(again) == plain


def test_an_empty_index_given_to_the_deduplicator_is_the_one_it_fills() -> None:
    # An empty BlockIndex has len() 0; it must still be used, not replaced by a default one.
    from simdedup.index import BlockIndex

    index = BlockIndex(64, Settings().distance)
    dd = Deduplicator(Settings(), index=index)
    dd.decide_many([Document("a", "", b"")], [0])
    assert dd.index is index and len(index) == 1


def test_an_index_of_other_settings_is_refused() -> None:
    # It decided at the index's distance while dd.settings said another (library trial).
    from simdedup.index import BlockIndex

    with pytest.raises(ValueError, match="distance 8, for settings of 64 bits, distance 0"):
        Deduplicator(Settings(distance=0), index=BlockIndex(64, 8))
    with pytest.raises(ValueError, match="an index of 128 bits"):
        Deduplicator(Settings(), index=BlockIndex(128, 4))


def test_the_library_dedup_verifies_like_the_cli_unless_told_not_to() -> None:
    words = "the quick brown fox jumps over the lazy dog near the river bank today"
    shuffled = " ".join(reversed(words.split()))  # the same words: the same fingerprint
    texts = [Document(str(i), t, b"") for i, t in enumerate([words, shuffled])]
    assert [d.status for d in dedup(texts)] == ["unique", "unique"]
    assert [d.status for d in dedup(texts, verify=None)] == ["unique", "duplicate"]


def test_batches_end_at_a_number_of_documents_or_of_characters() -> None:
    # A directory's long files went 4,096 to a batch, held with what fingerprinting makes
    # of them: 300 files of 50-500 KB took 2.9 GB (a trial).
    from simdedup.dedup import batches

    docs = [Document(f"d{i}", "x" * n, b"") for i, n in enumerate([5, 5, 5, 20, 1, 1, 1, 1, 1])]
    sizes = [[len(d.text) for d in batch] for batch in batches(docs, 4, chars=12)]
    assert sizes == [[5, 5, 5], [20], [1, 1, 1, 1], [1]]
    assert [len(b) for b in batches(docs, 4)] == [4, 4, 1]


def test_a_directorys_long_files_are_fingerprinted_a_few_at_a_time(tmp_path: Path) -> None:
    from unittest import mock

    from simdedup import cli, pipeline

    for i in range(6):
        (tmp_path / f"f{i}.txt").write_text(" ".join(f"w{i}x{j}" for j in range(2000)))
    seen: list[int] = []
    real = pipeline.fingerprint_batches

    def counted(batched, *args, **kwargs):  # type: ignore[no-untyped-def]
        return real((seen.append(len(b)) or b for b in batched), *args, **kwargs)

    with (
        mock.patch.object(pipeline, "PIPELINE_CHARS", 30_000),
        mock.patch.object(pipeline, "fingerprint_batches", counted),
    ):
        result = CliRunner().invoke(cli.main, ["fingerprint", str(tmp_path)])
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 6
    assert seen == [3, 3]  # about 13,000 characters a file
