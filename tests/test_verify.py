"""--verify: a fingerprint match is a duplicate only when the texts' shingles agree."""

from __future__ import annotations

import importlib
import math
import pickle
import random
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import hypothesis
import numpy as np
import pytest
from click.testing import CliRunner
from cores import needs_index_core
from exact import exact_shingles as shingle_hashes
from exact import head_of_words, jaccard
from hypothesis import strategies as st

from simdedup import Document, Settings, dedup
from simdedup import index as index_module
from simdedup import prefixes as prefixes_module
from simdedup import verify as verify_module
from simdedup.cli import main
from simdedup.dedup import Deduplicator
from simdedup.fingerprint import fingerprint_texts
from simdedup.index import fingerprint_array, fingerprint_ints, near_pair_arrays
from simdedup.settings import HEAD_TOKENS
from simdedup.sketch import EXACT_MARK, SKETCH_BYTES, OnePermutation, text_sketches
from simdedup.sketch import shingle_hashes as shingle_runs
from simdedup.verify import FEWEST_BINS, VerifyingDeduplicator, deduplicator

WORDS = "the quick brown fox jumps over the lazy dog near the river bank today"
# The same bag of words in another order: the same word-TF fingerprint, no common 3-shingle.
SHUFFLED = " ".join(reversed(WORDS.split()))
EDITED = WORDS.replace("today", "again")


dedup_module = importlib.import_module("simdedup.dedup")  # `simdedup.dedup` is the function


def docs(*texts: str) -> list[Document]:
    return [Document(str(i), t, b"") for i, t in enumerate(texts)]


def test_shingles_are_word_3_shingles_after_normalization() -> None:
    assert len(shingle_hashes("A b, C d")) == 2
    assert np.array_equal(shingle_hashes("A b, C d"), shingle_hashes("a  B c\nD!"))


def test_chinese_shingles_are_character_3_grams_across_scripts() -> None:
    assert len(shingle_hashes("我们的软件")) == 3
    assert np.array_equal(shingle_hashes("我們的軟體"), shingle_hashes("我们的软件"))


def test_jaccard_of_hash_sets() -> None:
    a, b = shingle_hashes("a b c d e"), shingle_hashes("a b c d f")
    assert jaccard(a, b) == pytest.approx(2 / 4)
    assert jaccard(a, a) == 1.0


def test_a_match_with_other_text_is_not_a_duplicate_when_verified() -> None:
    plain = [d.status for d in dedup(docs(WORDS, SHUFFLED), verify=None)]
    verified = [d.status for d in dedup(docs(WORDS, SHUFFLED), deduplicator=VerifyingDeduplicator())]
    assert plain == ["unique", "duplicate"]
    assert verified == ["unique", "unique"]


def test_a_verified_near_duplicate_is_still_a_duplicate() -> None:
    dd = VerifyingDeduplicator(Settings(distance=16), min_jaccard=0.8)
    decisions = dd.process(docs(WORDS, EDITED))  # 11 of 12 shingles shared
    assert [d.status for d in decisions] == ["unique", "duplicate"]
    assert decisions[1].duplicate_of == "0"


def test_the_most_similar_kept_document_wins() -> None:
    other = WORDS.replace("lazy dog", "sleepy dog")
    dd = VerifyingDeduplicator(Settings(distance=16), min_jaccard=0.3)
    decisions = dd.process(docs(other, SHUFFLED + " x", WORDS.replace("bank", "side")))
    # the third document is far nearer in text to the first than to the shuffled one
    assert decisions[2].status == "duplicate" and decisions[2].duplicate_of == "0"


def test_preloaded_rows_without_shingles_are_matched_on_the_fingerprint() -> None:
    dd = VerifyingDeduplicator()
    [fp] = Deduplicator().process(docs(WORDS))[0:1]
    dd.extend([fp.fingerprint], ["stored"])
    decision = dd.process(docs(SHUFFLED))[0]
    assert decision.status == "duplicate" and decision.duplicate_of == "stored"


def test_sketch_memory_is_a_fixed_size_per_row() -> None:
    dd = VerifyingDeduplicator()
    dd.process(docs(*(f"document number {i} of many" for i in range(3000))))
    rows = len(dd.ids)
    assert rows == 3000
    assert rows * (SKETCH_BYTES + 1) <= dd.sketch_bytes() <= 2 * rows * (SKETCH_BYTES + 1)
    dd._check()


@pytest.mark.parametrize("view_held", [False, True])
def test_kept_sketches_survive_the_arrays_growth_in_place_or_copied(view_held: bool) -> None:
    # The sketches grow in place (a memory map) unless a view of them is alive; then
    # they are copied. Either way every kept row keeps its sketch, and the rest are zeros.
    texts = [f"document number {i} of many, {i % 7} words about {i % 13} things" for i in range(2500)]
    dd = VerifyingDeduplicator()
    dd.process(docs(*texts[:1000]))  # 1,024 rows of room
    held = dd._sketches[:10] if view_held else None
    before = dd._sketches[: len(dd.ids)].copy()
    dd.process(docs(*texts[1000:]))  # grows
    assert len(dd._has) >= len(dd.ids) > 1024
    assert np.array_equal(dd._sketches[: len(before)], before)
    assert np.array_equal(dd._sketches[len(before) : len(dd.ids)], text_sketches(texts[1000:]))
    if held is not None:
        assert np.array_equal(held, before[:10])
    dd._check()


def test_sketch_array_holds_every_kept_rows_sketch() -> None:
    dd = VerifyingDeduplicator()
    dd.extend([1], ["stored"])
    texts = [WORDS, "something else entirely here"]
    dd.process(docs(*texts))
    sketches, has = dd.sketch_array()
    assert has.tolist() == [False, True, True]
    assert not sketches[0].any()
    assert np.array_equal(sketches[1:], text_sketches(texts))


def test_process_decides_as_decide_many_on_sketches_made_apart() -> None:
    tf = {w: float(WORDS.split().count(w)) for w in WORDS.split()}  # WORDS' own features
    batch = [*docs(WORDS, EDITED, "", SHUFFLED), Document("f", "", b"", features=tf)]
    settings = Settings(distance=16)
    fps = [d.fingerprint for d in Deduplicator(settings).process(batch)]
    apart = VerifyingDeduplicator(settings).decide_many(batch, fps)
    assert VerifyingDeduplicator(settings).process(batch) == apart
    assert [d.status for d in apart] == ["unique", "duplicate", "empty", "unique", "duplicate"]


def test_given_sketches_are_the_ones_verified() -> None:
    batch = docs(WORDS, EDITED)
    computed = VerifyingDeduplicator(Settings(distance=16)).process(batch)
    dd = VerifyingDeduplicator(Settings(distance=16))
    fps = [d.fingerprint for d in computed]
    given = dd.decide_many(batch, fps, text_sketches([WORDS, SHUFFLED]))
    assert [d.status for d in computed] == ["unique", "duplicate"]
    assert [d.status for d in given] == ["unique", "unique"]


def test_preloaded_rows_with_sketches_are_verified() -> None:
    [stored] = Deduplicator().process(docs(WORDS))
    dd = VerifyingDeduplicator()
    dd.extend([stored.fingerprint], ["stored"], text_sketches([WORDS]))
    assert dd.process(docs(SHUFFLED))[0].status == "unique"
    assert dd.process(docs(WORDS))[0].duplicate_of == "stored"
    with pytest.raises(ValueError):
        dd.extend([stored.fingerprint], ["again"], text_sketches([WORDS, WORDS]))


def test_a_few_words_verify_on_their_exact_shingles_and_stored_bins_only_when_equal() -> None:
    # Two lines of a few words, one shingle each and none shared: a stored sketch of bins
    # (an earlier simdedup's) read 1.0 from one bin whose 2-bit codes agreed, so such
    # pairs verify only with equal fingerprints; exact sketches read 0.0.
    stored, line = "line number 19", "line number 19086"
    [fp] = fingerprint_texts([stored])
    bins = OnePermutation().sketch(*shingle_runs([stored]))
    assert OnePermutation().similarity(bins, OnePermutation().sketch(*shingle_runs([line])))[0] == 1.0
    for sketches in (bins, text_sketches([stored])):
        dd = VerifyingDeduplicator()
        dd.extend([fp], ["stored"], sketches)
        assert dd.process(docs(line))[0].status == "unique"
        assert dd.process(docs(stored))[0].duplicate_of == "stored"
    # So where the batch's sketch is the one of bins (given so, as an earlier simdedup
    # made it): a pair is let off the rule only where that side alone fills the bins.
    dd = VerifyingDeduplicator()
    dd.extend([fp], ["stored"], text_sketches([stored]))
    [line_fp] = fingerprint_texts([line])
    line_bins = OnePermutation().sketch(*shingle_runs([line]))
    assert dd.decide_many(docs(line), [line_fp], line_bins)[0].status == "unique"
    # Exact shingles need no such rule: a line and its copy with a word added (6 of 7
    # shingles shared, 7 bins between them) are near-duplicates where k reaches them.
    short, longer = (
        "alpha beta gamma delta epsilon zeta eta theta",
        "alpha beta gamma delta epsilon zeta eta theta iota",
    )
    decided = VerifyingDeduplicator(Settings(distance=8)).process(docs(short, longer))
    assert [d.status for d in decided] == ["unique", "duplicate"] and decided[1].distance == 7


def test_exact_copies_of_unindexed_rows_an_earlier_simdedup_sketched_in_bins_are_found() -> None:
    # An index written by --crowd before exact sketches: its short rows' sketches are
    # bins, their copies' sketches now exact; the copies were all missed (a review).
    texts = [f"row {i} of the nightly export from the billing system" for i in range(6)]
    fps = fingerprint_texts(texts)
    for crowd in (0, 8):
        dd = VerifyingDeduplicator(crowd=crowd)
        bins = OnePermutation().sketch(*shingle_runs(texts))
        dd.extend(fps, [f"s{i}" for i in range(6)], bins, indexed=np.zeros(6, bool))
        assert not dd.sketcher.exact_rows(dd.sketch_array()[0]).any()
        decided = dd.process(docs(*texts))
        assert [(d.status, d.duplicate_of) for d in decided] == [("duplicate", f"s{i}") for i in range(6)]
        assert [d.status for d in dd.process(docs(texts[0] + " again"))] == ["unique"]


@pytest.mark.parametrize(
    ("stored", "other", "similarity"),
    [
        ("v36 extra extra", "v43 extra extra", 0.0),  # a review: a duplicate at similarity 0
        (
            "alpha beta gamma delta epsilon zeta eta theta 2239",
            "alpha beta gamma delta epsilon zeta eta theta 14000",
            0.75,
        ),
    ],
)
def test_an_unindexed_row_is_an_exact_copy_only_of_the_same_shingles_not_of_the_same_bins(
    stored: str, other: str, similarity: float
) -> None:
    # Two short lines of one fingerprint whose exact sketches differ but fall in the
    # same bins: not copies, whatever their similarity below 1.0.
    settings = Settings(distance=6)
    fps = fingerprint_texts([stored, other], settings)
    sketches = text_sketches([stored, other])
    dd = VerifyingDeduplicator(settings, min_jaccard=0.9, crowd=4)
    assert fps[0] == fps[1] and not np.array_equal(*sketches)
    assert np.array_equal(*dd.sketcher.as_bins(sketches))
    assert dd.sketcher.similarity(sketches[:1], sketches[1:])[0] == similarity
    dd.extend(fps[:1], ["stored"], sketches[:1], indexed=np.array([False]))
    assert [d.status for d in dd.decide_many(docs(other), fps[1:], sketches[1:])] == ["unique"]
    assert [d.duplicate_of for d in dd.decide_many(docs(stored), fps[:1], sketches[:1])] == ["stored"]


def test_an_unindexed_row_of_61_shingles_and_the_same_text_a_word_longer_alike_in_bins_are_copies() -> None:
    # A review: 63 words (61 shingles: an exact sketch) and the same with a word more
    # (62: a sketch of bins) have one fingerprint, and their bins agree: at similarity
    # 1.0 they are exact copies, both ways (as an older index's row of bins and its
    # text sketched now are), as the walk takes them within a batch and the definition
    # takes them (exact Jaccard 61/62).
    base = " ".join(f"b0w{i}" for i in range(63))
    texts = [base, base + " z1642"]
    settings = Settings()
    fps, sketches = fingerprint_texts(texts, settings), text_sketches(texts)
    dd = VerifyingDeduplicator(settings, crowd=4)
    assert fps[0] == fps[1] and dd.sketcher.exact_rows(sketches).tolist() == [True, False]
    for stored, later in ((0, 1), (1, 0)):
        dd = VerifyingDeduplicator(settings, crowd=4)
        dd.extend(
            fps[stored : stored + 1], ["stored"], sketches[stored : stored + 1], indexed=np.array([False])
        )
        batch, fp, sketch = docs(texts[later]), fps[later : later + 1], sketches[later : later + 1]
        expected = one_at_a_time(dd, batch, fp, sketch)
        assert (
            [(d.status, d.duplicate_of, d.distance) for d in dd.decide_many(batch, fp, sketch)]
            == [(status, of, d) for status, _, of, d in expected]
            == [("duplicate", "stored", 0)]
        )


def test_exact_sketches_whose_values_do_not_ascend_are_refused() -> None:
    sketches = text_sketches(["a line of a few words", "another line of words"])
    words = sketches.view("<u4")
    words[1, 3], words[1, 4] = words[1, 4], words[1, 3]  # made by hand, out of order
    dd = VerifyingDeduplicator()
    with pytest.raises(ValueError, match="sketch 1: an exact sketch's values do not ascend"):
        dd.extend([1, 2], ["a", "b"], sketches)
    with pytest.raises(ValueError, match="do not ascend"):
        dd.decide_many(docs("x y z", "y z w"), [1, 2], sketches)
    assert len(dd.ids) == 0


def test_a_pickle_from_before_prefix_values_files_its_short_rows_as_it_loads() -> None:
    short, longer = (
        "alpha beta gamma delta epsilon zeta eta theta",
        "alpha beta gamma delta epsilon zeta eta theta iota",
    )
    dd = VerifyingDeduplicator()
    dd.process(docs(short))
    state = dd.__getstate__()
    del state["prefix_index"]  # as a pickle of 370deae's holds it
    loaded = VerifyingDeduplicator.__new__(VerifyingDeduplicator)
    loaded.__setstate__(state)
    [decided] = loaded.process(docs(longer))
    assert decided.status == "duplicate" and decided.distance == 7  # by its shingles, 7 bits apart


def test_preloaded_rows_flagged_without_a_sketch_are_matched_on_the_fingerprint() -> None:
    [stored] = Deduplicator().process(docs(WORDS))
    dd = VerifyingDeduplicator()
    dd.extend([stored.fingerprint], ["stored"], text_sketches([WORDS]), np.array([False]))
    assert dd.process(docs(SHUFFLED))[0].duplicate_of == "stored"
    assert not dd.sketch_array()[0].any()


def test_documents_given_as_features_are_matched_on_the_fingerprint() -> None:
    dd = VerifyingDeduplicator()
    [kept] = dd.process(docs(WORDS))
    features_only = Document("f", "", b"", features={"anything": 1.0})
    decision = dd.decide_many([features_only], [kept.fingerprint])[0]
    assert decision.status == "duplicate" and decision.duplicate_of == "0"


def test_deduplicator_verifies_only_when_asked() -> None:
    assert type(deduplicator(Settings())) is Deduplicator
    assert isinstance(deduplicator(Settings(), 0.8), VerifyingDeduplicator)
    with pytest.raises(ValueError):
        VerifyingDeduplicator(min_jaccard=0.0)


def test_cli_verify_keeps_reordered_words_apart() -> None:
    text = f"{WORDS}\n{SHUFFLED}\n"
    runner = CliRunner()
    plain = runner.invoke(main, ["filter", "-q", "--no-verify", "-"], input=text)
    verified = runner.invoke(main, ["filter", "-q", "-"], input=text)  # verified by default
    assert plain.exit_code == 0 and plain.stdout == f"{WORDS}\n"
    assert verified.exit_code == 0 and verified.stdout == text
    assert verified.stderr == ""


def test_cli_verify_must_be_a_similarity() -> None:
    result = CliRunner().invoke(main, ["scan", "--verify", "1.5", "-"], input="a\n")
    assert result.exit_code == 2 and "--verify" in result.stderr


def test_decisions_do_not_depend_on_the_batch_size() -> None:
    texts = [WORDS, SHUFFLED, EDITED, WORDS + " again", SHUFFLED, "", "other words here", EDITED]
    settings = Settings(distance=8)
    by_batch = {
        size: [
            (d.status, d.duplicate_of)
            for d in dedup(docs(*texts), deduplicator=VerifyingDeduplicator(settings), batch_size=size)
        ]
        for size in (1, 3, 256)
    }
    assert by_batch[1] == by_batch[3] == by_batch[256]
    assert by_batch[1][1] == ("unique", None) and by_batch[1][4] == ("duplicate", "1")


def test_seeded_stress_decisions_do_not_depend_on_batches_or_where_sketches_come_from() -> None:
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(60)]
    originals = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 30))) for _ in range(900)]
    texts = [t if rng.random() < 0.5 else t.replace(rng.choice(vocabulary), "edit") for t in originals * 2]
    rng.shuffle(texts)
    settings = Settings(distance=6)
    fps = Deduplicator(settings).process(docs(*texts))
    runs = []
    for size, given in ((7, False), (300, False), (300, True)):
        dd = VerifyingDeduplicator(settings)
        out = []
        for lo in range(0, len(texts), size):
            batch = docs(*texts)[lo : lo + size]
            sketches = text_sketches(texts[lo : lo + size]) if given else None
            out += dd.decide_many(batch, [d.fingerprint for d in fps[lo : lo + size]], sketches)
        dd._check()
        runs.append([(d.status, d.duplicate_of) for d in out])
    assert runs[0] == runs[1] == runs[2]
    assert len(VerifyingDeduplicator(settings).process(docs(*texts))) == len(texts)
    assert 1024 < sum(status == "unique" for status, _ in runs[0]) < len(texts)  # the arrays grew


@pytest.mark.parametrize("verify", [None, 0.8])
def test_match_many_picks_what_deciding_one_at_a_time_would(verify: float | None) -> None:
    rng = random.Random(11)
    vocabulary = [f"w{i}" for i in range(40)]
    kept = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 25))) for _ in range(400)]
    queries = [t.replace(rng.choice(vocabulary), "edit") for t in rng.sample(kept, 150)] + ["", "w1 w2"]
    settings = Settings(distance=6)
    dd = deduplicator(settings, verify)
    dd.process(docs(*kept))
    qdocs = docs(*queries)
    fps = [d.fingerprint for d in Deduplicator(settings).process(qdocs)]
    before = len(dd.ids)
    rows, dists = dd.match_many(qdocs, fps)
    assert len(dd.ids) == len(dd.index) == before  # nothing was kept
    expected = []
    for doc, fp in zip(qdocs, fps):
        alone = deduplicator(settings, verify)
        alone.process(docs(*kept))
        d = alone.decide_many([doc], [fp])[0]
        expected.append((d.row, d.distance) if d.status == "duplicate" else (-1, -1))
    assert list(zip(rows.tolist(), dists.tolist())) == expected
    assert sum(r >= 0 for r in rows.tolist()) > 10


def test_cli_index_query_verifies_like_scan(tmp_path: Path) -> None:
    day1, day2, index = tmp_path / "day1.txt", tmp_path / "day2.txt", tmp_path / "seen.sdx"
    day1.write_text(WORDS + "\n")
    day2.write_text(SHUFFLED + "\n" + EDITED + "\n")  # the same words reversed; one word edited
    runner = CliRunner()
    assert runner.invoke(main, ["scan", str(day1), "--index", str(index), "-k", "8"]).exit_code == 0
    expected = {"--verify=0.7": ["new", "duplicate"], "--no-verify": ["duplicate", "duplicate"]}
    for flag, statuses in expected.items():
        result = runner.invoke(main, ["index", "query", str(index), str(day2), "-k", "8", flag])
        rows = [line.split("\t") for line in result.stdout.splitlines()[1:]]
        assert [r[1] for r in rows] == statuses, flag


def head_of(doc: Document) -> int | None:
    """A document's head fingerprint, by its definition (exact.head_of_words; tests use
    lowercase ASCII words); None for short texts and documents given as features."""
    return None if doc.features is not None else head_of_words(doc.text)


def bins_with_shingles(a: np.ndarray, b: np.ndarray) -> int:
    """How many of two default sketches' bins hold a shingle in either, code by code (a
    byte holds four 2-bit codes, the first in its lowest bits; 0 is an empty bin)."""
    codes = [[(byte >> shift) & 3 for byte in s.tolist() for shift in (0, 2, 4, 6)] for s in (a, b)]
    return sum(1 for x, y in zip(*codes) if x or y)


def held_whole(sketch: np.ndarray) -> bool:
    """Whether a default sketch is an exact one: it starts with the mark."""
    return sketch[:8].tobytes() == EXACT_MARK.to_bytes(8, "little")


def one_held(sketch: np.ndarray) -> bool:
    """Whether a default sketch is an exact one of one shingle: its count, after the mark."""
    return held_whole(sketch) and int.from_bytes(sketch[8:12].tobytes(), "little") == 1


def prefix_of(sketch: np.ndarray, has: bool, min_jaccard: float) -> list[int]:
    """A document's prefix values (prefixes.py), from its sketch's bytes: of an exact
    sketch's n values (ascending, after the mark and the count), the first n - ceil(t n)
    + 1; none for other sketches, or without a sketch."""
    if not has or not held_whole(sketch):
        return []
    n = int.from_bytes(sketch[8:12].tobytes(), "little")
    values = [int.from_bytes(sketch[12 + 4 * i : 16 + 4 * i].tobytes(), "little") for i in range(n)]
    return values[: n - math.ceil(min_jaccard * n - 1e-9) + 1]


def same_shingles(dd: VerifyingDeduplicator, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two sketches verify at similarity 1.0: the same bytes where both are
    exact, the same bins where either is not."""
    return bool(dd.sketcher.similarity(a[None], b[None])[0] == 1.0)


def one_at_a_time(
    dd: VerifyingDeduplicator,
    docs: list[Document],
    fps: list[int | None],
    sketches: np.ndarray,
    given_heads: list[int | None] | None = None,
) -> list[tuple[str, int | None, str | None, int | None]]:
    """The definition decide_many must match, by brute force: each document in turn
    against every kept row (preloaded ones too). Candidates: rows within the distance,
    and the first HEAD_CROWD rows whose head is within the distance of the document's
    head (a head candidate must verify). Verified candidates first,
    the most similar, then the nearest, then the earliest; unverifiable ones (no sketch
    on a side) after them. A kept document's head is kept if at most HEAD_CROWD kept
    heads were within the distance of it.
    Short documents: rows filed under a value of the document's prefix (prefix_of), the
    first PREFIX_CROWD kept rows holding it, are candidates too (and must verify),
    however many hold it.
    Crowds (dd.crowd): a kept document is indexed while fewer than dd.crowd indexed kept
    rows are within the distance; an unindexed row is a candidate by fingerprint only to
    its exact copies (distance 0, similarity 1.0: the same sketch, or where one of the
    two is a sketch of bins, the same bins), and filed under no prefix value.
    Decides without changing `dd`."""
    k = dd.index.distance
    kept_fps = fingerprint_ints(dd.index.fingerprint_array())
    kept_ids = list(dd.ids)
    kept_sketches, kept_has = (list(a) for a in dd.sketch_array())
    heads, headed = dd.head_array()
    kept_heads: list[int | None] = [
        h if on else None for h, on in zip(fingerprint_ints(heads), headed.tolist())
    ]
    kept_indexed = (~dd.index.unindexed_array()).tolist()
    filed: dict[int, list[int]] = {}  # prefix value -> the first PREFIX_CROWD kept rows holding it

    def file(row: int, sketch: np.ndarray, has: bool) -> None:
        for value in prefix_of(sketch, has, dd.min_jaccard):
            rows = filed.setdefault(value, [])
            if len(rows) < prefixes_module.PREFIX_CROWD:
                rows.append(row)

    for row, (sketch, has) in enumerate(zip(kept_sketches, kept_has)):
        file(row, sketch, has and kept_indexed[row])  # an unindexed row: an exact copy's only
    out: list[tuple[str, int | None, str | None, int | None]] = []
    for n, (doc, fp, sketch) in enumerate(zip(docs, fps, sketches)):
        if fp is None:
            out.append(("empty", None, None, None))
            continue
        has = doc.features is None
        by_prefix = {r for value in prefix_of(sketch, has, dd.min_jaccard) for r in filed.get(value, ())}
        head = head_of(doc) if given_heads is None else given_heads[n]
        near_heads = (
            []
            if head is None
            else [r for r, h in enumerate(kept_heads) if h is not None and (h ^ head).bit_count() <= k]
        )
        calm = len(near_heads) <= verify_module.HEAD_CROWD
        best = None
        for row, (other, other_sketch, other_has) in enumerate(zip(kept_fps, kept_sketches, kept_has)):
            d = (fp ^ other).bit_count()
            by_head = row in near_heads[: verify_module.HEAD_CROWD]
            copy = d == 0 and has and other_has and same_shingles(dd, sketch, other_sketch)
            near = d <= k and (kept_indexed[row] or copy)
            if not near and not by_head and row not in by_prefix:
                continue
            if has and other_has:
                sim = float(dd.sketcher.similarity(sketch[None], other_sketch[None])[0])
                if sim < dd.min_jaccard or (  # a few bins verify only with equal fingerprints...
                    d != 0
                    and not (held_whole(sketch) and held_whole(other_sketch))  # ...unless held exactly
                    and bins_with_shingles(sketch, other_sketch) < FEWEST_BINS
                ):
                    continue
                if d != 0 and one_held(sketch) and one_held(other_sketch):  # and so does one shingle each
                    continue
                key = (0, -sim, d, row)
            elif not near:
                continue  # a head candidate must verify
            else:
                key = (1, 0.0, d, row)
            best = key if best is None else min(best, key)
        if best is not None:
            out.append(("duplicate", best[3], kept_ids[best[3]], best[2]))
            continue
        out.append(("unique", len(kept_fps), None, None))
        crowd = sum((fp ^ other).bit_count() <= k for other, on in zip(kept_fps, kept_indexed) if on)
        kept_indexed.append(not dd.crowd or crowd < dd.crowd)
        file(len(kept_fps), sketch, has and kept_indexed[-1])
        kept_fps.append(fp)
        kept_ids.append(doc.id)
        kept_sketches.append(sketch if has else np.zeros_like(sketch))
        kept_has.append(has)
        kept_heads.append(head if has and calm else None)
    return out


def set_crowds(monkeypatch: pytest.MonkeyPatch, prefix_crowd: int, compiled: bool) -> None:
    """prefixes.PREFIX_CROWD, where prefixes.py and verify.py read it; with `compiled`,
    the compiled loops from the first row (index.COMPILED_ROWS = 0)."""
    monkeypatch.setattr(prefixes_module, "PREFIX_CROWD", prefix_crowd)
    monkeypatch.setattr(verify_module, "PREFIX_CROWD", prefix_crowd)
    if compiled:
        monkeypatch.setattr(index_module, "COMPILED_ROWS", 0)


_WORD = st.sampled_from([f"u{i}" for i in range(40)])


@st.composite
def edited_lines(draw: st.DrawFn) -> list[str]:
    """Lines of 1-40 words, most of them an earlier line with a word or two replaced,
    inserted or deleted: pairs at every Jaccard around the thresholds."""
    lines: list[list[str]] = []
    for _ in range(draw(st.integers(1, 50))):
        if not lines or draw(st.integers(0, 3)) == 0:
            lines.append(draw(st.lists(_WORD, min_size=1, max_size=40)))
            continue
        words = list(draw(st.sampled_from(lines)))
        for _ in range(draw(st.integers(1, 2))):
            at = draw(st.integers(0, len(words)))
            cut = draw(st.integers(0, 1))
            words[at : at + cut] = draw(st.lists(_WORD, max_size=1)) or ([] if len(words) > 1 else ["u0"])
        lines.append(words)
    return [" ".join(words) for words in lines]


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    texts=edited_lines(), min_jaccard=st.sampled_from([0.5, 0.8, 0.9, 1.0]), size=st.sampled_from([1, 7, 50])
)
def test_every_pair_of_short_documents_at_the_jaccard_is_found(
    texts: list[str], min_jaccard: float, size: int
) -> None:
    # Prefix filtering against brute force: at k = 0 the fingerprint finds only equal
    # ones, yet a line is a duplicate exactly when some kept line before it reaches the
    # Jaccard, by every shingle hash (no value here is held by 64 kept lines).
    dd = VerifyingDeduplicator(Settings(distance=0), min_jaccard=min_jaccard)
    kept: list[str] = []
    for lo in range(0, len(texts), size):
        for d in dd.process(docs(*texts[lo : lo + size])):
            best = max((jaccard(shingle_hashes(d.doc.text), shingle_hashes(k)) for k in kept), default=0.0)
            assert (d.status == "duplicate") == (best >= min_jaccard), (d.doc.text, best)
            if d.status == "unique":
                kept.append(d.doc.text)


@hypothesis.settings(max_examples=80, deadline=None)
@hypothesis.given(
    batches=st.lists(
        st.lists(
            st.integers(0, 2**32 - 1)
            | st.integers(0, 2)
            | st.integers(0, 40)
            | st.integers(2**31, 2**31 + 40)
            | st.integers(2**32 - 9, 2**32 - 1),
            max_size=300,
        ),
        max_size=12,
    ),
    pickled=st.sampled_from([False, True]),
    crowd=st.sampled_from([1, 3, prefixes_module.PREFIX_CROWD]),
)
def test_the_prefix_index_files_the_first_rows_of_each_value_and_finds_them_all(
    batches: list[list[int]], pickled: bool, crowd: int
) -> None:
    # Against a dict: values near 0 (where prefixes crowd), 2 ** 31 and 2 ** 32, repeated
    # past the cap, over runs that merge; a pickle from before the runs' directories
    # (runs keyed by the values themselves) is keyed anew as it loads.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefixes_module, "PREFIX_CROWD", crowd)
        _file_and_find(batches, pickled, crowd)


def _file_and_find(batches: list[list[int]], pickled: bool, crowd: int) -> None:
    """The prefix index's lookups before each batch and its entries at the end, against
    a dict of the first `crowd` rows of each value."""
    index, filed, row = prefixes_module.PrefixIndex(), {}, 0
    for batch in batches:
        values = np.array(batch, np.uint32)
        asked = np.r_[values, np.array([7, 2**32 - 1, 123456789], np.uint32)]
        counts, which, rows = index.lookup(asked)
        assert counts.tolist() == [len(filed.get(v, ())) for v in asked.tolist()]
        assert sorted(zip(which.tolist(), rows.tolist())) == sorted(
            (i, r) for i, v in enumerate(asked.tolist()) for r in filed.get(v, ())
        )
        index.add(np.arange(row, row + len(values)), values)
        for v in values.tolist():
            if len(filed.setdefault(v, [])) < crowd:
                filed[v].append(row)
            row += 1
        if pickled:  # as stop 41 pickled it: runs of value << 32 | row, and no more
            keys = sorted(v << 32 | r for v, rows in filed.items() for r in rows)
            cut = len(keys) // 3
            index = prefixes_module.PrefixIndex.__new__(prefixes_module.PrefixIndex)
            index.__setstate__({"_runs": [np.array(part, np.uint64) for part in (keys[:cut], keys[cut:])]})
    assert len(index) == sum(map(len, filed.values()))


@pytest.mark.parametrize(
    ("seed", "size", "min_jaccard", "prefix_crowd", "compiled", "crowd"),
    # (seeds 26 and 55: where holders past a value's room decide from 35 to 549 lines)
    [
        (11, 1, 0.8, 2, False, 0),
        (26, 37, 0.8, 3, True, 0),
        (55, 37, 0.8, 2, False, 0),
        (13, 600, 0.6, 2, False, 0),
        (14, 250, 0.8, 64, True, 0),
        (26, 37, 0.8, 3, True, 2),
        (55, 600, 0.8, 2, False, 3),
        (14, 1, 0.8, 64, False, 1024),
        (101, 37, 0.8, 2, False, 1),  # where an unindexed holder was counted in its value's room
    ],
)
def test_short_copies_found_by_their_prefixes_as_one_at_a_time(
    seed: int,
    size: int,
    min_jaccard: float,
    prefix_crowd: int,
    compiled: bool,
    crowd: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Variants of a few lines of 12-25 words (a word or two edited, again and again),
    # repeated copies among them, at k = 2: most near pairs share a prefix value, not a
    # fingerprint; a few values are held by many lines, and copies (not kept) sit among
    # their holders. With crowds too (unindexed rows filed under no value), which once
    # turned these candidates off for every document (a trial).
    set_crowds(monkeypatch, prefix_crowd, compiled)
    rng = random.Random(seed)
    vocabulary = [f"v{i}" for i in range(200)]
    originals = [[rng.choice(vocabulary) for _ in range(rng.randint(12, 25))] for _ in range(12)]
    texts: list[str] = []
    for _ in range(600):
        if texts and rng.random() < 0.35:
            texts.append(rng.choice(texts[-40:]))
            continue
        # an edit of an original or of a recent line: lines drift away from the first holders
        words = (
            rng.choice(texts[-30:]) if texts and rng.random() < 0.7 else " ".join(rng.choice(originals))
        ).split()
        for _ in range(rng.randint(0, 2)):
            at = rng.randrange(len(words))
            words[at : at + 1] = rng.choice([[], [rng.choice(vocabulary)], [words[at], "extra"]])
        texts.append(" ".join(words))
    batch = docs(*texts)
    settings = Settings(distance=2)
    fps = [d.fingerprint for d in Deduplicator(settings).process(batch)]
    sketches = text_sketches(texts)
    dd = VerifyingDeduplicator(settings, min_jaccard=min_jaccard, crowd=crowd)
    by_prefix = 0
    for lo in range(0, len(batch), size):
        expected = one_at_a_time(dd, batch[lo : lo + size], fps[lo : lo + size], sketches[lo : lo + size])
        got = dd.decide_many(batch[lo : lo + size], fps[lo : lo + size], sketches[lo : lo + size])
        assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
        by_prefix += sum(d.status == "duplicate" and d.distance > 2 for d in got)
        dd._check()
    assert by_prefix > 5  # found by their prefixes alone


# compiled: the index, pairs and similarities by compiled.py's loops from the first row
# (index.COMPILED_ROWS = 0), as a large index has them. Distance 12: an index that
# compares every row (Layout.brute_force); sliced: numpy's matrices and gathered
# sketches a few cells and pairs at a time.
# prefix_crowd: prefixes.PREFIX_CROWD, so low that values fill, and a value's kept
# holders past the first ones of a batch become candidates where earlier ones were not kept.
@pytest.mark.parametrize(
    ("seed", "size", "min_jaccard", "compiled", "distance", "sliced", "prefix_crowd"),
    [
        (1, 1, 0.8, False, 6, False, 64),
        (2, 9, 0.8, True, 6, False, 64),
        (3, 64, 0.5, True, 6, False, 64),
        (4, 1000, 0.8, False, 6, False, 64),
        (5, 300, 0.5, False, 6, True, 64),
        (6, 300, 0.5, False, 12, True, 64),
        (7, 300, 0.5, True, 12, False, 64),
        (8, 300, 0.8, False, 4, False, 2),
        (9, 37, 0.5, True, 4, False, 2),
        (10, 1200, 0.8, True, 4, False, 3),
    ],
)
def test_seeded_decisions_equal_deciding_each_document_against_every_kept_row(
    seed: int,
    size: int,
    min_jaccard: float,
    compiled: bool,
    distance: int,
    sliced: bool,
    prefix_crowd: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_crowds(monkeypatch, prefix_crowd, compiled)
    if sliced:
        monkeypatch.setattr(index_module, "MATRIX_CELLS", 50)
        monkeypatch.setattr(verify_module, "PAIR_SLICE", 7)
        monkeypatch.setattr(verify_module, "PREFIX_SLICE", 7)
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(30)]

    def text() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12)))

    originals = [text() for _ in range(300)]
    batch: list[Document] = []
    for n in range(1200):
        # edits of earlier edits too: chains A~B~C where C is far from A
        source = rng.choice(originals) if n < 50 or rng.random() < 0.7 else rng.choice(batch[-50:]).text
        roll = rng.random()
        if roll < 0.05:  # given as features: no sketch, decided on the fingerprint
            batch.append(Document(f"f{n}", "", b"", features=dict.fromkeys(source.split()[:3] or ["x"], 1.0)))
        elif roll < 0.5:
            batch.append(Document(str(n), source.replace(rng.choice(vocabulary), "edit"), b""))
        else:
            batch.append(Document(str(n), source if roll < 0.8 else text(), b""))
    settings = Settings(distance=distance)
    fps = [d.fingerprint for d in Deduplicator(settings).process(batch)]
    sketches = text_sketches([d.text for d in batch])
    dd = VerifyingDeduplicator(settings, min_jaccard=min_jaccard)
    stored = originals[:40]
    stored_fps = [d.fingerprint for d in Deduplicator(settings).process(docs(*stored))]
    present = [i for i, fp in enumerate(stored_fps) if fp is not None]
    dd.extend(
        [stored_fps[i] for i in present],
        [f"s{i}" for i in present],
        text_sketches([stored[i] for i in present]),
        np.array([i % 3 > 0 for i in present]),  # a third preloaded without a sketch
    )
    statuses: set[str] = set()
    for lo in range(0, len(batch), size):
        expected = one_at_a_time(dd, batch[lo : lo + size], fps[lo : lo + size], sketches[lo : lo + size])
        given = sketches[lo : lo + size] if lo % 2 else None  # sketched here, or handed in
        got = dd.decide_many(batch[lo : lo + size], fps[lo : lo + size], given)
        assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
        statuses.update(d.status for d in got)
        dd._check()
    assert statuses == {"unique", "duplicate", "empty"}


# ---------------------------------------------------------------- heads


# A site's navigation, long enough that a page of it and a few words has its head in it.
HEADER = " ".join(f"nav{i}" for i in range(2 * HEAD_TOKENS))
BODY = " ".join(f"b{i}" for i in range(150))


def test_a_copy_whose_whole_fingerprint_moved_is_found_by_its_head() -> None:
    original = BODY
    extended = BODY + " " + " ".join(f"tail{i}" for i in range(20))  # 20 words added at the end
    fps = fingerprint_texts([original, extended])
    assert (fps[0] ^ fps[1]).bit_count() > Settings().distance  # out of reach of the whole fingerprint
    assert jaccard(shingle_hashes(original), shingle_hashes(extended)) >= 0.8
    out = list(dedup(docs(original, extended)))
    assert [(d.status, d.duplicate_of, d.distance) for d in out] == [
        ("unique", None, None),
        ("duplicate", "0", (fps[0] ^ fps[1]).bit_count()),
    ]
    assert [d.status for d in dedup(docs(original, extended), verify=None)] == ["unique", "unique"]


def test_a_shared_header_alone_makes_no_duplicate() -> None:
    texts = [HEADER + " " + " ".join(f"p{n}w{i}" for i in range(60)) for n in range(3)]
    assert [d.status for d in dedup(docs(*texts))] == ["unique"] * 3


def test_a_crowded_head_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module, "HEAD_CROWD", 3)
    pages = [HEADER + " " + " ".join(f"p{n}w{i}" for i in range(12)) for n in range(10)]
    assert len({head_of_words(page) for page in pages}) == 1  # the navigation's
    dd = VerifyingDeduplicator(Settings())
    assert [d.status for d in dd.process(docs(*pages))] == ["unique"] * 10
    assert len(dd.head_index) == 4  # the first four; the rest met more than 3 kept heads
    heads, headed = dd.head_array()
    assert headed.tolist() == [True] * 4 + [False] * 6 and len(set(heads[:4].tolist())) == 1


@pytest.mark.parametrize(
    ("seed", "size", "crowd", "compiled"),
    [(5, 1, 3, False), (6, 7, 3, True), (7, 1000, 3, True), (8, 64, 64, False)],
)
def test_seeded_decisions_with_heads_equal_the_brute_force_definition(
    seed: int, size: int, crowd: int, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long documents that share headers, copies truncated, extended or edited: heads
    find candidates, and some headers are crowded."""
    monkeypatch.setattr(verify_module, "HEAD_CROWD", crowd)
    if compiled:
        monkeypatch.setattr(index_module, "COMPILED_ROWS", 0)
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(50)]
    headers = [" ".join(rng.choice(vocabulary) for _ in range(36)) for _ in range(4)]

    def body(n: int) -> list[str]:
        return [rng.choice(vocabulary) for _ in range(n)]

    originals = [
        " ".join(([rng.choice(headers)] if rng.random() < 0.5 else []) + body(rng.randint(5, 80)))
        for _ in range(120)
    ]
    texts: list[str] = []
    for _ in range(700):
        words = rng.choice(originals if rng.random() < 0.6 or not texts else texts[-40:]).split()
        roll = rng.random()
        if roll < 0.25:
            words = words[: max(1, int(len(words) * rng.uniform(0.7, 1.0)))]
        elif roll < 0.5:
            words = words + body(rng.randint(1, 20))
        elif roll < 0.75:
            words[rng.randrange(len(words))] = "edit"
        texts.append(" ".join(words))
    batch = docs(*texts)
    settings = Settings()
    fps = [d.fingerprint for d in Deduplicator(settings).process(batch)]
    sketches = text_sketches(texts)
    dd = VerifyingDeduplicator(settings)
    found_by_head = 0
    for lo in range(0, len(batch), size):
        expected = one_at_a_time(dd, batch[lo : lo + size], fps[lo : lo + size], sketches[lo : lo + size])
        got = dd.decide_many(
            batch[lo : lo + size], fps[lo : lo + size], sketches[lo : lo + size] if lo % 2 else None
        )
        assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
        found_by_head += sum(d.status == "duplicate" and d.distance > settings.distance for d in got)
        dd._check()
    assert found_by_head > 5
    assert 0 < len(dd.head_index) < len(dd.ids)
    # index query's match_many: the row deciding each would choose, by the same definition.
    queries = docs(*[" ".join(t.split()[: int(len(t.split()) * 0.9) or 1]) for t in texts[-120:]])
    qfps = [d.fingerprint for d in Deduplicator(settings).process(queries)]
    qsketches = text_sketches([d.text for d in queries])
    # Each query alone: match_many keeps none of them, so none is a candidate of another.
    expected = [
        one_at_a_time(dd, [q], [fp], qsketches[i : i + 1])[0] for i, (q, fp) in enumerate(zip(queries, qfps))
    ]
    rows, dists = dd.match_many(queries, qfps)
    assert [(r, d) if r >= 0 else None for r, d in zip(rows.tolist(), dists.tolist())] == [
        (row, d) if status == "duplicate" else None for status, row, _, d in expected
    ]
    assert sum(r >= 0 for r in rows.tolist()) > 10


@pytest.mark.parametrize(("seed", "size", "crowd", "compiled"), [(21, 1500, 3, False), (22, 500, 3, True)])
def test_seeded_batches_of_copies_decide_as_the_brute_force_definition(
    seed: int, size: int, crowd: int, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches mostly of exact copies (repeated lines, mirrors), interleaved, after
    preloaded rows that make some first copies duplicates: twins are decided in
    stretches and by their earlier twin (Deduplicator.decide_many), which must be the
    definition's decisions. 1,000 copies of one line once took 8M verified pairs."""
    monkeypatch.setattr(verify_module, "HEAD_CROWD", crowd)
    if compiled:
        monkeypatch.setattr(index_module, "COMPILED_ROWS", 0)
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(40)]
    header = " ".join(rng.choice(vocabulary) for _ in range(36))
    pool = [
        " ".join(
            ([header] if rng.random() < 0.5 else [])
            + [rng.choice(vocabulary) for _ in range(rng.randint(4, 50))]
        )
        for _ in range(25)
    ]
    pool += [t.replace(t.split()[-1], "edit") for t in pool[:10]]  # near copies beside the exact ones
    texts = [rng.choice(pool[: rng.randint(1, len(pool))]) for _ in range(size)] + [pool[0]] * 300
    settings = Settings()
    dd = VerifyingDeduplicator(settings)
    dd.process(docs(*rng.sample(pool, 8)))  # kept before: their copies' first ones are duplicates
    batch = docs(*texts)
    fps = [d.fingerprint for d in Deduplicator(settings).process(batch)]
    sketches = text_sketches(texts)
    expected = one_at_a_time(dd, batch, fps, sketches)
    got = dd.decide_many(batch, fps, sketches if seed % 2 else None)
    assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
    dd._check()
    assert sum(status == "unique" for status, *_ in expected) < len(pool) < len(texts) // 10


def few_word_batch(rng: random.Random, count: int) -> tuple[list[Document], list[int | None], np.ndarray]:
    """Documents of 40 words of six (their fingerprints crowd, their shingles do not
    verify), exact repeats of earlier ones and near copies (one word changed): with
    their fingerprints and sketches at the default settings."""
    vocabulary = ["0", "1", "2", "3", "x", "y"]
    texts: list[str] = []
    for _ in range(count):
        roll = rng.random()
        if texts and roll < 0.15:
            texts.append(rng.choice(texts))
        elif texts and roll < 0.3:
            words = rng.choice(texts).split()
            words[rng.randrange(len(words))] = "edit"
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(rng.choice(vocabulary) for _ in range(40)))
    batch = docs(*texts)
    return batch, [d.fingerprint for d in Deduplicator(Settings()).process(batch)], text_sketches(texts)


@pytest.mark.parametrize(("seed", "compiled"), [(46, True), (47, False)])
def test_a_crowded_batch_is_searched_in_slices_and_decided_as_the_brute_force_definition(
    seed: int, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without crowds, a crowded batch is searched whole before it is decided (in
    halves, where it still crowds), and its pairs with the kept rows are held a slice
    at a time: whole, 4,096 CSV rows of small numbers against 20,000 kept ones took
    1.57 GB. In batches of any size, the definition's decisions."""
    set_crowds(monkeypatch, prefixes_module.PREFIX_CROWD, compiled)
    monkeypatch.setattr(verify_module, "MATCH_CANDIDATES", 4000)
    found: list[int] = []  # the pairs (query, kept row) of each search, before verification
    verified = VerifyingDeduplicator._verified

    def counted(dd: VerifyingDeduplicator, *args: Any) -> tuple[np.ndarray, ...]:
        found.append(len(args[-1][0]))
        return verified(dd, *args)

    monkeypatch.setattr(VerifyingDeduplicator, "_verified", counted)
    settings = Settings()
    batch, fps, sketches = few_word_batch(random.Random(seed), 700)
    expected = one_at_a_time(VerifyingDeduplicator(settings), batch, fps, sketches)
    for cuts in ([0, 400, 700], [0, 700]):  # the last batch against kept rows, or alone
        dd = VerifyingDeduplicator(settings)
        got = []
        for lo, hi in zip(cuts, cuts[1:]):
            found.clear()
            got += dd.decide_many(batch[lo:hi], fps[lo:hi], sketches[lo:hi])
        assert sum(found) > 10_000
        assert max(found) <= 4000 + len(dd.index)  # a query alone may pass it
        assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
        dd._check()
    assert 300 < sum(status == "unique" for status, *_ in expected) < len(batch) - 100


@pytest.mark.parametrize(
    ("seed", "compiled", "slice_candidates", "prefix_crowd"),
    [(41, False, 0, 16), (42, True, 0, 16), (43, True, 64, 16), (44, False, 0, 2), (45, True, 0, 3)],
)
def test_seeded_crowds_decide_as_the_brute_force_definition(
    seed: int, compiled: bool, slice_candidates: int, prefix_crowd: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines of few distinct words (their fingerprints crowd, their shingles do not
    verify), exact repeats and near copies (one word changed) of earlier ones, after
    preloaded rows of which some are unindexed: with a crowd of 4, in batches of any
    size (a large one is crowded, and decided in pieces; its search in slices of
    `slice_candidates`), the definition's decisions. The lines are short: near copies
    are found by their shingles' prefix values too (a value gives the first
    `prefix_crowd` rows filed under it), where only indexed rows are filed."""
    set_crowds(monkeypatch, prefix_crowd, compiled)
    if slice_candidates:
        monkeypatch.setattr(verify_module, "MATCH_CANDIDATES", slice_candidates)
    settings = Settings()
    batch, fps, sketches = few_word_batch(random.Random(seed), 500)
    runs = []
    for size in (1, 37, 500):
        dd = VerifyingDeduplicator(settings, crowd=4)
        dd.extend(fps[:12], [f"p{i}" for i in range(12)], sketches[:12], indexed=np.arange(12) % 3 == 0)
        expected = one_at_a_time(dd, batch, fps, sketches)
        got = []
        for lo in range(0, len(batch), size):
            got += dd.decide_many(batch[lo : lo + size], fps[lo : lo + size], sketches[lo : lo + size])
        assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
        dd._check()
        runs.append(dd.index.unindexed_array())
    unindexed = runs[0]
    assert all(np.array_equal(unindexed, other) for other in runs)
    assert 100 < np.count_nonzero(unindexed) < len(unindexed) - 4
    by_copy = [row for status, row, _, d in expected if status == "duplicate" and unindexed[row]]
    assert by_copy and len(by_copy) < sum(status == "duplicate" for status, *_ in expected)


@pytest.mark.parametrize("size", [1, 2, 8])
def test_a_document_left_unindexed_in_its_batch_is_found_by_its_exact_copies_only(size: int) -> None:
    """With a crowd of 2 (one fingerprint for all; texts that do not verify each other):
    the third kept document is unindexed, so its near copy is not its duplicate and its
    exact copy is, whether they come in its batch or a later one."""
    line = [f"w{i}" for i in range(30)]
    texts = [" ".join(line[::-1]), " ".join(line[::2] + line[1::2]), " ".join(line)]
    near = " ".join([*line[:-1], "edit"])  # verifies with texts[2] (Jaccard ~0.87)
    batch = docs(*texts, near, texts[2], "other words")
    fps = [7] * len(batch)
    dd = VerifyingDeduplicator(Settings(), crowd=2)
    expected = one_at_a_time(dd, batch, fps, text_sketches([d.text for d in batch]))
    got = []
    for lo in range(0, len(batch), size):
        got += dd.decide_many(batch[lo : lo + size], fps[lo : lo + size])
    assert [(d.status, d.row, d.distance) for d in got] == [e[:2] + e[3:] for e in expected]
    assert [(d.status, d.row, d.distance) for d in got] == [
        ("unique", 0, None),
        ("unique", 1, None),
        ("unique", 2, None),
        ("unique", 3, None),  # texts[2]'s near copy: texts[2] is unindexed
        ("duplicate", 2, 0),  # its exact copy
        ("unique", 4, None),
    ]
    assert dd.index.unindexed_array().tolist() == [False, False, True, True, True]
    assert VerifyingDeduplicator(Settings(), crowd=0).decide_many(batch, fps)[3].row == 2  # without crowds
    shipped = pickle.loads(pickle.dumps(dd))  # a Dask worker's state: its copies still found
    assert [(d.status, d.row) for d in shipped.decide_many(docs(texts[2], near), [7, 7])] == [
        ("duplicate", 2),
        ("duplicate", 3),
    ]
    shipped._check()


def test_copies_found_by_their_head_stay_found_once_the_head_crowds_in_their_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Copy c of text T is a duplicate of R by its head alone; two documents with that
    head are kept after it, so the head crowds; copies i and j are still R's duplicates,
    R being the first kept head near theirs. (Once a crowded head gave no candidates:
    i was kept, crowded and unindexed, and j, paired with the earliest copy c alone,
    was kept too, where one at a time it was i's duplicate: a review.) Texts too long
    for exact sketches: a short copy of R's would find R by its shingles (prefixes.py)."""
    monkeypatch.setattr(verify_module, "HEAD_CROWD", 2)
    text = " ".join(f"t{i}" for i in range(80))
    other = " ".join(f"x{i}" for i in range(80))
    head = 0xABCDEF0123456789
    dd = VerifyingDeduplicator(Settings(), crowd=1)
    dd.extend(
        [0, 2**64 - 1],
        ["X", "R"],
        text_sketches([other, text]),
        heads=[0, head],
        headed=np.array([False, True]),
    )
    texts = [text, *(" ".join(f"d{j}_{i}" for i in range(80)) for j in range(2)), text, text]
    batch = [Document(name, t, b"") for name, t in zip(["c", "d0", "d1", "i", "j"], texts)]
    fps = [0, 0x5555 << 20, 0xAAAA << 20, 0, 0]
    sketches, heads = text_sketches(texts), [head] * len(batch)
    expected = one_at_a_time(dd, batch, fps, sketches, heads)
    assert [(status, of) for status, _, of, _ in expected] == [
        ("duplicate", "R"),
        ("unique", None),
        ("unique", None),
        ("duplicate", "R"),
        ("duplicate", "R"),
    ]
    got = dd.decide_many(batch, fps, sketches, heads)
    assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected


def decided_as_defined(
    dd: VerifyingDeduplicator, texts: list[str]
) -> list[tuple[str, int | None, str | None, int | None]]:
    """dd's decisions of `texts` as one batch, given their sketches and heads, checked
    to be the definition's (one_at_a_time)."""
    batch = docs(*texts)
    fps = [d.fingerprint for d in Deduplicator(dd.settings).process(batch)]
    if dd.settings.bits == 64:
        heads = [head_of(d) for d in batch]
    else:
        heads = verify_module._heads_of(batch, dd.settings, dd.hashfunc)
    expected = one_at_a_time(dd, batch, fps, text_sketches(texts), heads)
    got = dd.decide_many(batch, fps, text_sketches(texts), heads)
    assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
    return expected


def pieces_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The documents of each batch VerifyingDeduplicator decides in pieces, as it does."""
    halves: list[int] = []
    in_pieces = VerifyingDeduplicator._decide_in_pieces

    def pieces(dd: VerifyingDeduplicator, docs: list[Document], *rest: object) -> list[object]:
        halves.append(len(docs))
        return in_pieces(dd, docs, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(VerifyingDeduplicator, "_decide_in_pieces", pieces)
    return halves


@pytest.mark.parametrize(("verify", "crowd"), [(True, 0), (True, 1024), (False, 0)])
def test_a_batch_of_templated_pages_is_decided_in_halves_as_one_at_a_time(
    verify: bool, crowd: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of one template, a few words changed in each, all near each other: every
    pair within the batch was a candidate in Python, and 4,096 such pages took 35 s and
    9 GB (a review). A batch that crowded is decided in halves (with crowds on: in
    pieces, after one search), which must be the definition's decisions."""
    halves = pieces_counted(monkeypatch)
    split = dedup_module.split_batch

    def counted(dd: Deduplicator, docs: list[Document], *rest: object) -> list[object]:
        halves.append(len(docs))
        return split(dd, docs, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(dedup_module, "split_batch", counted)
    rng = random.Random(31)
    settings = Settings()
    if verify:  # texts: copies of a template with 2 to 6 words changed, every 7th with 60
        vocabulary = [f"w{i}" for i in range(300)]
        template = [rng.choice(vocabulary) for _ in range(300)]
        texts = []
        for n in range(400):
            words = list(template)
            for _ in range(rng.randint(2, 6) if n % 7 else 60):
                words[rng.randrange(len(words))] = rng.choice(vocabulary)
            texts.append(" ".join(words))
        batch = docs(*texts)
        fps = [d.fingerprint for d in Deduplicator(settings).process(batch)]
        dd: Deduplicator = VerifyingDeduplicator(settings, crowd=crowd)
        expected = one_at_a_time(dd, batch, fps, text_sketches(texts))  # type: ignore[arg-type]
    else:  # fingerprints within 2 bits of one, all distinct (a copy is a twin: decided apart)
        base = rng.getrandbits(64)
        flips = sorted({(1 << rng.randrange(64)) | (1 << rng.randrange(64)) for _ in range(600)})
        fps = [base ^ f for f in rng.sample(flips, 300)] + [rng.getrandbits(64) for _ in range(100)]
        rng.shuffle(fps)
        batch = docs(*map(str, range(len(fps))))
        dd = Deduplicator(settings)
        one = Deduplicator(settings)
        expected = [(d.status, d.row, d.duplicate_of, d.distance) for d in map(one.decide, batch, fps)]
    got = dd.decide_many(batch, fps)
    assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
    assert halves and halves[0] == len(batch)  # it was crowded, and split
    assert 2 < sum(status == "unique" for status, *_ in expected) < len(batch) // 2


def test_a_batch_of_pages_of_one_boilerplate_is_decided_in_halves_as_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pages whose first 480 words are one site's and whose last 120 are their own:
    their heads are one, their whole fingerprints far apart, so the batch was not split
    and every pair of heads was paired (4,096 such pages: 0.94 GB, a trial; 55 MB now).
    Equal heads alone split it, into the definition's decisions."""
    halves = pieces_counted(monkeypatch)
    rng = random.Random(32)
    vocabulary = [f"w{i}" for i in range(5000)]
    site = [rng.choice(vocabulary) for _ in range(480)]
    texts = [" ".join(site + [rng.choice(vocabulary) for _ in range(120)]) for _ in range(300)]
    texts += texts[:20]  # and copies of some, which are duplicates
    batch = docs(*texts)
    settings = Settings()
    fps = [d.fingerprint for d in Deduplicator(settings).process(batch)]
    heads = [head_of(d) for d in batch]
    assert max(map(heads.count, set(heads))) > 200  # most share one head
    assert near_pair_arrays(fingerprint_array(fps, 64), 64, 4)[0].size < 16 * len(fps)  # not the wholes
    dd = VerifyingDeduplicator(settings)
    expected = one_at_a_time(dd, batch, fps, text_sketches(texts), heads)
    got = dd.decide_many(batch, fps, text_sketches(texts), heads)
    assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
    assert halves and halves[0] == len(batch)  # its heads crowded it, and it was split
    assert sum(status == "duplicate" for status, *_ in expected) == 20


@pytest.mark.parametrize("flood", ["after the first rows", "first"])
def test_a_crowded_batch_keeps_its_pairs_that_can_decide(flood: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch whose first 512 rows do not crowd has all its pairs found at once; where
    it crowds further on (a flood of copies of a kept line), the pairs left once its
    search settles the flood are those pairs, filtered. One whose first rows crowd has
    only theirs: the rest are found once the flood is settled. Either way a new line's
    copies at the end are its duplicates, as the definition has it, and the batch is
    decided whole."""
    halves = pieces_counted(monkeypatch)
    rng = random.Random(35)
    vocabulary = [f"w{i}" for i in range(5000)]

    def copies(line: list[str], n: int) -> list[str]:
        made = []
        for _ in range(n):
            words = list(line)
            words[rng.randrange(len(words))] = rng.choice(vocabulary)
            made.append(" ".join(words))
        return made

    kept, new = rng.choices(vocabulary, k=100), rng.choices(vocabulary, k=100)
    unrelated = [" ".join(rng.choices(vocabulary, k=60)) for _ in range(560)]
    flooded = copies(kept, 180)
    lines = flooded + unrelated if flood == "first" else unrelated + flooded
    batches = [[" ".join(kept)], lines + copies(new, 12)]
    settings = Settings()
    dd = VerifyingDeduplicator(settings)
    for texts in batches:
        expected = decided_as_defined(dd, texts)
    assert not halves
    tail = [status for status, *_ in expected[-12:]]
    assert tail[0] == "unique" and tail.count("duplicate") >= 8, tail
    assert sum(status == "duplicate" for status, *_ in expected[:-12]) == 180


def test_heads_searched_a_slice_at_a_time_find_what_one_search_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the compiled loops (128 bits, a small index) a search holds every
    candidate before it compares them, so the head index is searched a slice of
    MATCH_CANDIDATES candidates at a time: the same candidates and head crowds."""
    rng = random.Random(34)
    vocabulary = [f"w{i}" for i in range(2000)]
    site = rng.choices(vocabulary, k=60)

    def page() -> str:
        return " ".join(site + rng.choices(vocabulary, k=40))

    settings = Settings(bits=128)
    dd = VerifyingDeduplicator(settings)
    kept = [page() for _ in range(150)] + [" ".join(rng.choices(vocabulary, k=100)) for _ in range(50)]
    before = docs(*kept)
    dd.decide_many(before, [d.fingerprint for d in Deduplicator(settings).process(before)])
    assert not dd.head_index.compiled
    texts = [page() for _ in range(100)] + kept[100:180]
    batch = docs(*texts)
    fparray = fingerprint_array([d.fingerprint for d in Deduplicator(settings).process(batch)], 128)
    present = list(range(len(batch)))
    heads = verify_module._heads_of(batch, settings, dd.hashfunc)
    mine, has = dd._batch_sketches(batch, present, None)
    whole = verify_module._Heads.in_index(dd, batch, present, heads, fparray, mine, has).and_batch(
        dd, fparray, mine, has
    )
    monkeypatch.setattr(verify_module, "MATCH_CANDIDATES", 30)
    searches: list[int] = []
    search = dd.head_index.search

    def counted(queries: np.ndarray, **kwargs: Any) -> tuple[np.ndarray, ...]:
        searches.append(len(queries))
        return search(queries, **kwargs)

    monkeypatch.setattr(dd.head_index, "search", counted)
    sliced = verify_module._Heads.in_index(dd, batch, present, heads, fparray, mine, has).and_batch(
        dd, fparray, mine, has
    )
    assert len(searches) > 10 and sum(searches) == len(batch)
    for name in ("q", "rows", "ds", "crowd_in_index"):
        assert np.array_equal(getattr(whole, name), getattr(sliced, name))
    assert (whole.q >= 100).any()  # found in a later slice: the copies of kept pages


@pytest.mark.parametrize("mix", ["flood", "flood and pages of one head", "flood and twins"])
def test_a_flood_of_near_copies_once_one_is_kept_is_decided_whole_as_one_at_a_time(
    mix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines that are each a word or two off one line are all near each other: every
    batch of them crowded, and was halved down to pieces of 32-63 lines, each paired
    whole (100,000 such lines: 9 s, against 2 s now). A document that verifies with a
    kept row is a duplicate whatever the batch decides, so once one of the flood is
    kept, later batches have few pairs that can decide, and are decided whole: the
    definition's decisions, with pages of one head among them (they still crowd by
    their heads) or copies of the same line (twins)."""
    halves = pieces_counted(monkeypatch)
    paired: list[int] = []  # the pairs within a batch found by fingerprint or by head
    pairs_after = verify_module.near_pairs_after

    def counted(*args: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        made = pairs_after(*args, **kwargs)
        paired.append(len(made[0]))
        return made

    monkeypatch.setattr(verify_module, "near_pairs_after", counted)
    monkeypatch.setattr(verify_module, "PAIR_SLICE", 50)  # pairs too small to verify: a slice at a time
    rng = random.Random(33)
    vocabulary = [f"w{i}" for i in range(3000)]
    line = [rng.choice(vocabulary) for _ in range(100)]
    site = [rng.choice(vocabulary) for _ in range(480)]

    def flood(n: int) -> list[str]:
        texts = []
        for _ in range(n):
            words = list(line)
            for _ in range(rng.randint(1, 2)):
                words[rng.randrange(len(words))] = rng.choice(vocabulary)
            texts.append(" ".join(words))
        return texts

    batches = [flood(200), flood(200)]
    if mix == "flood and pages of one head":  # pages unlike each other but by their head
        pages = [" ".join(site + [rng.choice(vocabulary) for _ in range(120)]) for _ in range(150)]
        batches[1] = batches[1][:100] + pages + batches[1][100:] + pages[:10]
    elif mix == "flood and twins":
        batches[1] += batches[1][:60] + batches[0][:20]
    settings = Settings()
    dd = VerifyingDeduplicator(settings)
    for n, texts in enumerate(batches):
        halves.clear()
        paired.clear()
        expected = decided_as_defined(dd, texts)
        assert sum(status == "duplicate" for status, *_ in expected) > 150
        if n == 0:
            assert halves and halves[0] == len(texts)  # it crowded, and nothing was kept yet
        elif mix == "flood and pages of one head":
            assert halves and halves[0] == len(texts)  # the pages' heads crowd it still
        else:
            assert not halves  # decided whole
            # and its heads too were paired only where the earlier one can decide (all
            # of them: 100,000 lines took 292 s and 9.7 GB)
            assert paired and max(paired) < 4 * len(texts)  # of 19,900
    if mix == "flood and pages of one head":
        assert sum(status == "unique" for status, *_ in expected) >= 150


@pytest.mark.parametrize("layout", ["footer", "four in a row", "first alone"])
@pytest.mark.parametrize("verify", [True, False])
def test_copies_across_batches_and_in_a_row_decide_as_one_at_a_time_in_few_stretches(
    layout: str, verify: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A footer after every line was a twin of its first copy in each batch, and each
    line four times in a row a twin of the one before: both broke every batch into
    stretches of one to three documents, each decided in full, 8 to 30 times slower (a
    review). A twin kept in an earlier batch, or right before, decides its copies."""
    stretches: list[int] = []
    decide_batch = Deduplicator._decide_batch if not verify else VerifyingDeduplicator._decide_batch

    def counted(self: Deduplicator, docs: list[Document], *rest: object) -> list[object]:
        stretches.append(len(docs))
        return decide_batch(self, docs, *rest)  # type: ignore[arg-type]

    rng = random.Random(41)
    vocabulary = [f"w{i}" for i in range(500)]
    lines = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(8, 40))) for _ in range(300)]
    lines += lines[:20]  # copies far apart, each a twin of nothing in its batch
    footer = "share this article on social media copyright example inc"
    if layout == "footer":
        texts = [t for line in lines for t in (line, footer)]
    elif layout == "four in a row":
        texts = [line for line in lines for _ in range(4)]
    else:  # 8 lines once in a first batch that has twins of others, then copies of them
        # repeated within later batches among new lines: a line kept without a twin in
        # its batch was not remembered, and its copies broke each later batch into
        # stretches (a trial: 90% copies of 1,000 lines, 2.5x the time of none)
        first = lines[:8] + [lines[8 + i % 4] for i in range(60)] + lines[12:44]
        later = [lines[100 + i] if i % 5 < 2 else lines[rng.randrange(8)] for i in range(200)]
        texts = first + later
    settings = Settings()
    batch = docs(*texts)
    fps = [d.fingerprint for d in Deduplicator(settings).process(batch)]
    dd = VerifyingDeduplicator(settings) if verify else Deduplicator(settings)
    if verify:
        expected = one_at_a_time(dd, batch, fps, text_sketches(texts))  # type: ignore[arg-type]
    else:
        one = Deduplicator(settings)
        expected = [(d.status, d.row, d.duplicate_of, d.distance) for d in map(one.decide, batch, fps)]
    monkeypatch.setattr(VerifyingDeduplicator if verify else Deduplicator, "_decide_batch", counted)
    got = []
    for lo in range(0, len(batch), 100):
        got += dd.decide_many(batch[lo : lo + 100], fps[lo : lo + 100])
    assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected
    assert len(stretches) <= 2 * (len(batch) // 100 + 1), stretches  # one or two a batch


def test_copies_decide_without_verification_as_one_at_a_time() -> None:
    rng = random.Random(3)
    pool = [" ".join(f"w{rng.randrange(30)}" for _ in range(rng.randint(2, 12))) for _ in range(30)]
    texts = [rng.choice(pool) for _ in range(3000)]
    settings = Settings(distance=6)
    in_turn = Deduplicator(settings)
    expected = [in_turn.process([d])[0] for d in docs(*texts)]
    got = Deduplicator(settings).process(docs(*texts))
    assert [(d.status, d.row, d.distance) for d in got] == [(d.status, d.row, d.distance) for d in expected]


def test_a_copy_after_a_closer_document_was_kept_is_its_duplicate_not_the_first_copys_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # T is kept before; A copies it loosely (Jaccard ~0.84), C closer to A (~0.91) but not
    # to T (~0.77). The first two copies of A duplicate T; C is kept; the last copy of A,
    # after C, must duplicate C. Deciding it as its earlier twin was (with C kept since,
    # or waiting undecided beside it) would say T.
    rng = random.Random(0)
    words = [f"v{rng.randrange(5000)}" for _ in range(200)]

    def edited(count: int, tag: str) -> str:
        out = list(words)
        for p in rng.sample(range(200), count):
            out[p] = f"{tag}{p}"
        return " ".join(out)

    a, t, c = " ".join(words), edited(6, "t"), edited(3, "c")
    dedup_module = sys.modules["simdedup.dedup"]  # `simdedup.dedup` is also the function
    monkeypatch.setattr(dedup_module, "TWIN_PAIRS_PER_DOCUMENT", 0)  # three copies: decided apart
    dd = VerifyingDeduplicator(Settings())
    dd.process(docs(t))
    batch = [Document(name, text, b"") for name, text in (("a1", a), ("a2", a), ("c", c), ("a3", a))]
    fps = fingerprint_texts([d.text for d in batch])
    expected = one_at_a_time(dd, batch, fps, text_sketches([d.text for d in batch]))
    assert [(status, dup) for status, _, dup, _ in expected] == [
        ("duplicate", "0"),
        ("duplicate", "0"),
        ("unique", None),
        ("duplicate", "c"),
    ]
    got = dd.decide_many(batch, fps)
    assert [(d.status, d.row, d.duplicate_of, d.distance) for d in got] == expected


def test_english_with_a_chinese_line_keeps_its_english_shingles_and_its_copy() -> None:
    # A text with one Han character was shingled by characters throughout, so an English
    # page and the same page with a Chinese credit line shared no shingle (Jaccard 0).
    # Now only the words just before the line (within NEAR_HAN characters) are cut so.
    english = " ".join(f"w{i} harbour" for i in range(60))
    mixed = english + "\n转载自：某某网"
    assert len(set(shingle_hashes(english).tolist()) - set(shingle_hashes(mixed).tolist())) == 2
    assert jaccard(shingle_hashes(english), shingle_hashes(mixed)) > 0.85
    decisions = dedup([Document("a", english, b""), Document("b", mixed, b"")])
    assert [d.status for d in decisions] == ["unique", "duplicate"]


@needs_index_core
@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(
    seed=st.integers(0, 2**32),
    n=st.integers(0, 60),
    k=st.integers(0, 14),
    share=st.sampled_from([0.0, 0.1, 0.5, 0.6, 1.0]),
    brute=st.booleans(),
    bits=st.sampled_from([64, 128]),
    compiled=st.booleans(),
    slice_candidates=st.sampled_from([8, 1 << 22]),
)
def test_the_pairs_after_a_crowd_are_the_brute_force_pairs_of_its_first_documents(
    seed: int, n: int, k: int, share: float, brute: bool, bits: int, compiled: bool, slice_candidates: int
) -> None:
    # near_pairs_after compares every pair (cross_pairs, or numpy's matrices where the
    # layout compares every pair), searches tables of the chosen documents, or filters
    # the batch's pairs where most are chosen: all give the same pairs.
    rng = random.Random(seed)
    centres = [rng.getrandbits(bits) for _ in range(3)]
    fps = []
    for _ in range(n):
        fp = rng.choice(centres)
        for _ in range(rng.randint(0, 5)):
            fp ^= 1 << rng.randrange(bits)
        fps.append(fp)
    firsts = np.array([rng.random() < share for _ in range(n)], bool)
    fparray = fingerprint_array(fps, bits)
    with (
        mock.patch.object(verify_module, "CROSS_BRUTE_FORCE", 1 << 20 if brute else 0),
        mock.patch.object(verify_module, "MATCH_CANDIDATES", slice_candidates),  # its search in slices
    ):
        got = verify_module.near_pairs_after(fparray, firsts, bits, k, compiled=compiled)
    expected = [
        (i, j, bin(fps[i] ^ fps[j]).count("1"))
        for i in range(n)
        for j in range(i + 1, n)
        if firsts[i] and bin(fps[i] ^ fps[j]).count("1") <= k
    ]
    assert list(zip(*(x.tolist() for x in got))) == expected


def head_flood(rng: random.Random, vocabulary: list[str], line: str, n: int, words: int = 8) -> list[str]:
    """`n` copies of `line`, each with `words` random words after it: their heads are
    the line's, their whole fingerprints often apart by more than the distance."""
    return [line + " " + " ".join(rng.choices(vocabulary, k=words)) for _ in range(n)]


def test_a_flood_that_meets_its_kept_line_by_head_is_decided_whole_as_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lines of the same 300 words with 8-12 random ones each: most of their whole
    fingerprints are apart, their heads one, so each meets the kept line by head only. Such a
    candidate was taken only in the walk, so every batch crowded by its heads went down
    in halves (100,000 lines: 10 s, against 1.7 s now). A verified head candidate from
    the index settles a line whose head cannot be crowded: the batch is decided whole,
    as the definition decides it."""
    halves = pieces_counted(monkeypatch)
    rng = random.Random(37)
    vocabulary = [f"w{i}" for i in range(5000)]
    line = " ".join(rng.choices(vocabulary, k=300))
    settings = Settings()
    dd = VerifyingDeduplicator(settings)
    for texts in [head_flood(rng, vocabulary, line, 1, 12), head_flood(rng, vocabulary, line, 300, 12)]:
        expected = decided_as_defined(dd, texts)
    assert [status for status, *_ in expected] == ["duplicate"] * len(texts)
    apart = [d > dd.index.distance for *_, d in expected]  # from the kept line: met by head
    assert sum(apart) > 0.5 * len(texts), sum(apart)
    assert not halves  # decided whole


@pytest.mark.parametrize(("seed", "bits"), [*((seed, 64) for seed in range(6)), (0, 128), (5, 128)])
def test_lines_a_kept_head_meets_among_pages_of_its_head_decide_as_one_at_a_time(
    seed: int, bits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A head candidate from the index settles a line beforehand: the index's kept heads
    come before the batch's, so the walk takes it whatever the batch decides. Pages of
    that head that verify with nothing may be kept, and make later heads crowded, but
    not the kept heads of the index less near. Mixed so, with 1 or 2 kept heads and
    crowds of 1 to 3, the definition's decisions (at 128 bits too, where none is
    settled so: the head index's search is not compiled)."""
    crowd = 1 + seed % 3
    monkeypatch.setattr(verify_module, "HEAD_CROWD", crowd)
    rng = random.Random(100 + seed)
    vocabulary = [f"w{i}" for i in range(5000)]
    site = rng.choices(vocabulary, k=300)

    def page() -> str:  # the site's words and 40 of its own: verifies with no other page
        return " ".join(site + rng.choices(vocabulary, k=40))

    kept = [page() for _ in range(1 + seed % 2)]
    mixed = head_flood(rng, vocabulary, kept[0], 80, 12) + [page() for _ in range(crowd + 2)]
    rng.shuffle(mixed)
    mixed += mixed[:5]  # copies
    settings = Settings(bits=bits)
    dd = VerifyingDeduplicator(settings)
    statuses = []
    for texts in [kept, mixed, head_flood(rng, vocabulary, kept[-1], 30)]:
        expected = decided_as_defined(dd, texts)
        statuses += [status for status, *_ in expected]
    assert statuses.count("duplicate") > 40 and statuses.count("unique") > crowd


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    st.lists(
        st.tuples(
            st.integers(0, 5),
            st.integers(0, 9),
            st.integers(0, 4),
            st.sampled_from([math.nan, 0.8, 0.85, 0.9, 1.0]),
        ),
        max_size=30,
    )
)
def test_the_best_kept_row_of_each_position_is_the_one_the_walk_takes(
    candidates: list[tuple[int, int, int, float]],
) -> None:
    # decide_many's walk takes, of a position's candidates, the least key: verified ones
    # first, the most similar, the nearest, the first row. It now gets only each
    # position's best kept row, and match_many takes it, from _best_of_each.
    def key(row: int, d: int, sim: float) -> tuple[int, float, int, int]:
        return (1, 0.0, d, row) if math.isnan(sim) else (0, -sim, d, row)

    q, rows, ds, sims = (np.array(x) for x in zip(*candidates)) if candidates else [np.zeros(0)] * 4
    best = verify_module._best_of_each(q.astype(np.int64), rows.astype(np.int64), ds.astype(np.int64), sims)
    got = {p: key(r, d, s) for p, r, d, s in zip(*(x.tolist() for x in best))}
    expected: dict[int, tuple[int, float, int, int]] = {}
    for p, r, d, s in candidates:
        expected[p] = min(expected.get(p, key(r, d, s)), key(r, d, s))
    assert got == expected


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2**40)), unique=True, max_size=200),
    st.lists(st.integers(0, 20), min_size=10, max_size=10),
)
def test_first_rows_keeps_the_smallest_rows_of_each_query(
    pairs: list[tuple[int, int]], most: list[int]
) -> None:
    # A head's candidates are its first HEAD_CROWD kept heads, by row (_Heads.in_index).
    q, rows = (
        (np.array(x, np.int64).reshape(-1) for x in zip(*pairs)) if pairs else (np.zeros(0, np.int64),) * 2
    )
    got_q, got_rows, again = verify_module._first_rows(q, rows, np.array(most, np.int64))
    expected = [
        p for query in set(q.tolist()) for p in sorted(p for p in pairs if p[0] == query)[: most[query]]
    ]
    assert sorted(zip(got_q.tolist(), got_rows.tolist())) == sorted(expected)
    assert np.array_equal(again, got_rows)
