"""calibrate: precision, recall and F1 per distance and preset on labelled pairs."""

from __future__ import annotations

import codecs
import gzip
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from simdedup import Document, Settings, dedup
from simdedup.calibrate import LabelledPair, Score, best, calibrate, presets
from simdedup.cli import main
from simdedup.fingerprint import distance, fingerprint_texts

TEXT = "the harbour walk starts at the old ferry terminal and follows the sea wall to the lighthouse"
PAIRS = [
    LabelledPair(TEXT, TEXT.replace("old", "new"), True),
    LabelledPair(TEXT, TEXT + "!", True),
    LabelledPair(TEXT, "a recipe for sourdough bread with a rye starter and plenty of patience", False),
    LabelledPair(TEXT, " ".join(reversed(TEXT.split())), False),
]


def test_scores_count_pairs_within_the_distance() -> None:
    scores = calibrate(PAIRS, {"default": (Settings(), None)}, range(17))
    at16 = scores[16]
    assert at16.distance == 16 and at16.tp == 2
    assert at16.fp >= 1  # reversed word order has the same word fingerprint
    at0 = scores[0]
    assert at0.tp >= 1 and at0.fn == 2 - at0.tp


def test_verification_removes_pairs_whose_shingles_differ() -> None:
    [plain, verified] = (calibrate(PAIRS, {"x": (Settings(), v)}, [16])[0] for v in (None, 0.8))
    assert verified.fp < plain.fp and verified.fp == 0


def test_verified_pairs_are_candidates_by_their_heads_as_in_scan() -> None:
    body = " ".join(f"b{i}" for i in range(150))
    pair = LabelledPair(body, body + " " + " ".join(f"tail{i}" for i in range(20)), True)  # 20 words added
    whole = distance(*fingerprint_texts([pair.a, pair.b]))
    assert whole > 4
    verified = calibrate([pair], {"x": (Settings(), 0.8)}, [4])[0]
    plain = calibrate([pair], {"x": (Settings(), None)}, [4])[0]
    assert (verified.tp, plain.tp) == (1, 0)
    decisions = list(dedup([Document("a", pair.a, b""), Document("b", pair.b, b"")]))
    assert decisions[1].status == "duplicate"  # scan agrees


def test_short_pairs_are_candidates_by_their_shingles_at_any_distance_as_in_scan() -> None:
    pair = LabelledPair(
        "alpha beta gamma delta epsilon zeta eta theta",
        "alpha beta gamma delta epsilon zeta eta theta iota",
        True,
    )
    assert distance(*fingerprint_texts([pair.a, pair.b])) == 7  # Jaccard 6/7, exactly
    verified = calibrate([pair], {"x": (Settings(), 0.8)}, [0, 4])
    plain = calibrate([pair], {"x": (Settings(), None)}, [0, 4])
    assert [s.tp for s in verified] == [1, 1] and [s.tp for s in plain] == [0, 0]
    decisions = list(dedup([Document("a", pair.a, b""), Document("b", pair.b, b"")], Settings(distance=0)))
    assert decisions[1].status == "duplicate"  # scan agrees, at -k 0 too


def test_pairs_of_a_few_words_verify_only_with_equal_fingerprints_as_in_scan() -> None:
    # One shingle each, none shared, yet an estimate of 1.0 (verify.too_few_bins)
    pairs = [
        LabelledPair("line number 19", "line number 19086", False),
        LabelledPair("a b c", "A b, c!", True),
    ]
    [score] = calibrate(pairs, {"x": (Settings(), 0.8)}, [4])
    assert (score.tp, score.fp, score.fn) == (1, 0, 0)


WORDS = [f"w{i}" for i in range(40)] + ["the", "it", "code", "and", "of"]


@st.composite
def edited_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A text of 0 to 150 words and a copy with a few words changed, inserted or dropped,
    and a header or footer: pairs on both sides of every part of the rule (short ones
    compared by their shingles, long ones by heads, a few words, empty ones)."""
    n = draw(st.sampled_from([0, 2, 8, 30, 60, 61, 62, 90, 150]))
    a = draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n))
    b = list(a)
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(b)))
        edit = draw(st.sampled_from(["change", "insert", "drop"]))
        if edit == "insert":
            b.insert(at, draw(st.sampled_from(WORDS)))
        elif at < len(b):
            b[at : at + 1] = [draw(st.sampled_from(WORDS))] if edit == "change" else []
    header = draw(st.lists(st.sampled_from(WORDS), max_size=12))
    b = header + b if draw(st.booleans()) else b + header
    return " ".join(a), " ".join(b)


BODY = " ".join(f"b{i}" for i in range(150))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=edited_pairs(), verify=st.sampled_from([0.8, None]))
# A case of each part of the rule, should the examples drawn miss it: a long copy found
# by its head alone, a short one by its shingles, one at exactly the Jaccard asked,
# pairs of a few words either way.
@example(pair=(BODY, BODY + " " + " ".join(f"tail{i}" for i in range(20))), verify=0.8)
@example(
    pair=(
        "alpha beta gamma delta epsilon zeta eta theta",
        "alpha beta gamma delta epsilon zeta eta theta iota",
    ),
    verify=0.8,
)
@example(pair=("26608", "52640"), verify=0.8)  # one shingle each, whose kept bits agree
@example(pair=(" ".join(WORDS[:18]), " ".join(WORDS[:22])), verify=0.8)  # Jaccard 16 / 20, exactly
@example(pair=("a b c", "A b, c!"), verify=0.8)
def test_compare_and_calibrate_call_a_pair_near_exactly_when_scan_does(
    pair: tuple[str, str], verify: float | None
) -> None:
    # The rule each applies to one pair (verify.candidate_distance, verifies) against
    # scan's own decisions, which the index, heads and prefixes make for a batch.
    a, b = pair
    docs = [Document("a", a, b""), Document("b", b, b"")]
    scanned = list(dedup(docs, verify=verify))[1].status == "duplicate"
    [score] = calibrate([LabelledPair(a, b, True)], {"x": (Settings(), verify)}, [Settings().distance])
    flag = ["--verify", str(verify)] if verify is not None else ["--no-verify"]
    compared = CliRunner().invoke(main, ["compare", "--text", a, "--text", b, *flag])
    assert compared.exit_code in (0, 1), compared.output
    assert (score.tp == 1, compared.exit_code == 0) == (scanned, scanned)


def test_score_arithmetic() -> None:
    s = Score("p", 3, tp=3, fp=1, fn=3)
    assert (s.precision, s.recall) == (0.75, 0.5) and abs(s.f1 - 0.6) < 1e-12
    assert Score("p", 0, 0, 0, 0).f1 == 1.0


def test_best_prefers_higher_f1_then_smaller_distance() -> None:
    scores = [Score("p", 2, 1, 0, 1), Score("p", 3, 2, 0, 0), Score("p", 4, 2, 0, 0)]
    assert best(scores)["p"].distance == 3


def test_presets_start_from_the_given_settings() -> None:
    got = presets(Settings(distance=5, weights="binary"), 0.9)
    assert got["settings"] == (Settings(distance=5, weights="binary"), 0.9)
    assert got["--no-verify"] == (Settings(distance=5, weights="binary"), None)
    assert got["--no-fold"] == (Settings(distance=5, weights="binary", fold=False), 0.9)
    assert presets(Settings(), None)["--verify 0.8"] == (Settings(), 0.8)


def test_a_top_k_base_has_no_binary_variation() -> None:
    # --top-k keeps the heaviest features, which binary weights do not have: Settings
    # refuses the pair, and calibrate --top-k 5 would have stopped on it.
    got = presets(Settings(top_k=5), 0.8)
    assert "--weights binary" not in got
    assert got["--weights tfidf"][0] == Settings(top_k=5, weights="tfidf")


def test_each_variation_differs_from_the_given_settings() -> None:
    # Given --no-fold --weights binary --tokenizer chars, the rows of those names were
    # copies of the settings row, and --fold, --weights tf never came (trial).
    base = Settings(fold=False, weights="binary", tokenizer="chars")
    got = presets(base, 0.8)
    assert list(got) == [
        "settings", "--no-verify", "--fold", "--weights tf", "--weights tfidf", "--tokenizer auto"
    ]  # fmt: skip
    assert got["--fold"][0] == replace(base, fold=True)
    assert got["--weights tf"][0] == replace(base, weights="tf")
    assert got["--tokenizer auto"][0] == replace(base, tokenizer="auto")
    assert all(
        settings != base
        for name, (settings, _) in got.items()
        if name.startswith("--") and "verify" not in name
    )


def test_cli_prints_a_table_and_names_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    lines = [json.dumps({"a": p.a, "b": p.b, "duplicate": p.duplicate}) for p in PAIRS]
    path.write_text("\n".join([*lines, "not json", '{"a": "x"}', "[" * 1000 + "]" * 1000]) + "\n")
    result = CliRunner().invoke(main, ["calibrate", str(path), "--max-distance", "4"])
    assert result.exit_code == 3
    assert result.stdout.startswith("4 pairs, 2 labelled duplicate\n")
    rows = [line for line in result.stdout.splitlines() if line.startswith("settings ")]
    assert len(rows) == 5  # the settings (verified), at k = 0..4
    assert f"{path}:5: error: not JSON" in result.stderr
    assert f"{path}:6: error: missing field 'b'" in result.stderr
    assert f"{path}:7: error: JSON nested too deeply to read (more than 800 levels)" in result.stderr


def test_cli_json_marks_the_best_distance(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"a": p.a, "b": p.b, "duplicate": p.duplicate}) + "\n" for p in PAIRS))
    result = CliRunner().invoke(main, ["calibrate", str(path), "--json", "--max-distance", "3"])
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 0 and result.stderr == ""
    assert len(records) == 6 * 4
    assert sum(r["best"] for r in records if r["preset"] == "settings") == 1


@pytest.mark.parametrize(
    ("first_labelled", "row", "scores"),
    [
        # No pair within the distance: precision is 0 / 0; it showed 1.000 (a review).
        (True, ["-", "0.000", "0.000", "0", "0", "1"], (None, 0.0, 0.0)),
        # Every pair labelled apart and none predicted: F1 is 0 / 0 too; it showed 1.000.
        (False, ["-", "-", "-", "0", "0", "0"], (None, None, None)),
    ],
)
def test_cli_shows_scores_of_0_over_0_as_undefined(
    tmp_path: Path, first_labelled: bool, row: list[str], scores: tuple[float | None, ...]
) -> None:
    path = tmp_path / "pairs.jsonl"
    pairs = [
        ("red green blue", "cats and dogs", first_labelled),
        ("one two three four", "five six seven", False),
    ]
    path.write_text("".join(json.dumps({"a": a, "b": b, "duplicate": d}) + "\n" for a, b, d in pairs))
    result = CliRunner().invoke(main, ["calibrate", str(path), "--max-distance", "0"])
    assert result.exit_code == 0
    [shown] = [line.split() for line in result.stdout.splitlines() if line.startswith("settings ")]
    best = "0*" if scores[2] is not None else "0"  # no best of F1s all undefined
    assert shown == ["settings", best, *row]
    records = CliRunner().invoke(main, ["calibrate", str(path), "--max-distance", "0", "--json"]).stdout
    first = json.loads(records.splitlines()[0])
    assert (first["precision"], first["recall"], first["f1"]) == scores


def test_cli_reads_pairs_as_scan_reads_jsonl(tmp_path: Path) -> None:
    # A trial: a .gz file was read as lines of binary (48 "not JSON" errors, then no
    # pairs), and a byte-order mark cost the first pair.
    text = "".join(json.dumps({"a": p.a, "b": p.b, "duplicate": p.duplicate}) + "\n" for p in PAIRS)
    packed, marked, hidden = tmp_path / "pairs.jsonl.gz", tmp_path / "bom.jsonl", tmp_path / "pairs.data"
    packed.write_bytes(gzip.compress(text.encode()))
    marked.write_bytes(codecs.BOM_UTF8 + text.encode())
    hidden.write_bytes(gzip.compress(text.encode()))
    for path in (packed, marked):
        result = CliRunner().invoke(main, ["calibrate", str(path), "--max-distance", "2"])
        assert (result.exit_code, result.stderr) == (0, ""), result.output
        assert result.stdout.startswith("4 pairs, 2 labelled duplicate\n")
    for args, stdin in (([str(hidden)], b""), (["-"], packed.read_bytes())):
        result = CliRunner().invoke(main, ["calibrate", *args], input=stdin)
        assert result.exit_code == 3 and result.stderr.count("gzip data is not read as text") == 1
    # gzip's header holds its mtime: one with a newline byte in it made the first line four
    # bytes that looked like UTF-16LE text (this test failed on ~1 run in 60).
    for mtime in (0, 10, 10 << 8, 10 << 16):
        stamped = gzip.compress(text.encode(), mtime=mtime)
        result = CliRunner().invoke(main, ["calibrate", "-"], input=stamped)
        assert result.exit_code == 3 and result.stderr.count("gzip data is not read as text") == 1, mtime


def test_cli_refuses_a_file_without_pairs(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    result = CliRunner().invoke(main, ["calibrate", str(path)])
    assert result.exit_code == 3 and "no labelled pairs" in result.stderr


def test_the_library_call_takes_plain_tuples_and_the_commands_presets() -> None:
    # It needed LabelledPairs and presets, neither of them exported (library trial).
    from simdedup import LabelledPair as Exported
    from simdedup import calibrate as calibrate_function

    assert Exported is LabelledPair
    tuples = [(p.a, p.b, p.duplicate) for p in PAIRS]
    by_default = calibrate_function(tuples, distances=[4])
    assert [s.preset for s in by_default][:2] == ["settings", "--no-verify"]
    assert by_default == calibrate_function([LabelledPair(*t) for t in tuples], distances=[4])
    with pytest.raises(ValueError, match="distances are ints"):
        calibrate_function(tuples, distances=[-1])


def test_a_best_distance_that_scan_serves_by_comparing_every_pair_is_said_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With verification, precision stays 1.000 at every k, so the largest k tried often
    # wins; scan then compares every pair, which nothing said (a new user's trial).
    pairs = str(Path(__file__).parents[1] / "examples" / "pairs.jsonl")
    said = "warning: scan compares every document with every kept one there"
    plain = CliRunner().invoke(main, ["calibrate", pairs, "--max-distance", "8"])
    assert plain.exit_code == 0 and said not in plain.stderr  # the best there is small
    widest = {}

    def last(scores: list[Score]) -> dict[str, Score]:
        for s in scores:
            widest[s.preset] = s
        return widest

    # the module: the name simdedup.calibrate is the function calibrate (simdedup/__init__.py)
    monkeypatch.setattr(sys.modules["simdedup.calibrate"], "best", last)
    wide = CliRunner().invoke(main, ["calibrate", pairs, "--max-distance", "8"])
    assert wide.exit_code == 0
    assert (
        f"k = 8: {said}, so its time grows with the square of the input; its index serves k <= 6"
        in wide.stderr
    )
