"""The shipped examples/ show what examples/README.md says they show."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from simdedup.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def groups(*paths: str) -> tuple[list[list[str]], str]:
    """[[kept, duplicate, ...], ...] with ids relative to examples/, and stderr."""
    result = CliRunner().invoke(main, ["scan", *paths, "--format", "tsv"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    found: dict[str, list[str]] = {}
    for line in result.stdout.splitlines()[1:]:
        group, _, doc_id, _, _ = line.split("\t")
        found.setdefault(group, []).append(doc_id.replace(str(EXAMPLES) + os.sep, ""))
    return list(found.values()), result.stderr


@pytest.fixture(autouse=True)
def in_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)


def test_the_directory_example_groups_each_original_with_its_variants() -> None:
    found, stderr = groups("docs")
    expected = [
        ["en/bike-commute.txt", "en/bike-commute_footer.txt"],
        [
            "en/harbour-walk.txt",
            "en/harbour-walk_edited.txt",
            "en/harbour-walk_footer.txt",
            "en/harbour-walk_reflowed.txt",
        ],
        ["en/library-card.txt", "en/library-card_reflowed.txt"],
        ["en/sourdough-starter.txt", "en/sourdough-starter_edited.txt"],
        ["zh/dumplings.txt", "zh/dumplings_reflowed.txt"],
        [
            "zh/morning-market.txt",
            "zh/morning-market_edited.txt",
            "zh/morning-market_footer.txt",
            "zh/morning-market_reflowed.txt",
        ],
        ["zh/subway-commute.txt", "zh/subway-commute_footer.txt"],
    ]
    assert found == [[f"docs/{p}" for p in g] for g in expected]
    assert "21 documents: 9 unique, 11 duplicates in 7 groups, 1 empty" in stderr


def test_the_lines_example_groups_each_original_line_with_its_variant() -> None:
    found, stderr = groups("lines.txt")
    assert found == [
        [f"lines.txt:{a}", f"lines.txt:{b}"] for a, b in [(1, 4), (2, 6), (3, 8), (5, 9), (7, 11)]
    ]
    assert "11 documents: 6 unique, 5 duplicates in 5 groups" in stderr


def test_the_jsonl_example_groups_records_by_text() -> None:
    found, stderr = groups("records.jsonl")
    assert found == [
        ["gazette-garden-opens", "weekly-digest-garden"],
        ["review-kettle-1041", "review-kettle-1041-partner"],
        ["news-bike-share-update", "mirror-bike-share-update"],
    ]
    assert "8 documents: 5 unique, 3 duplicates in 3 groups" in stderr


def test_no_group_spans_the_three_shapes() -> None:
    found, _ = groups("docs", "lines.txt", "records.jsonl")
    assert len(found) == 7 + 5 + 3
