"""Reading: lines, JSONL records, directories, gzip, stdin; every bad input is a Problem."""

from __future__ import annotations

import contextlib
import fnmatch
import gzip
import io
import json
import os
import random
import signal
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from simdedup import Document, Problem, ReadOptions, read_documents
from simdedup import read as read_module
from simdedup.read import (
    BARRIER,
    MAX_DOC_SIZE,
    Chunk,
    Lines,
    Span,
    SpanReader,
    Stretch,
    first_bytes,
    looks_binary,
    read_chunk,
    read_chunks,
    size_text,
)


def read(paths: list[str], options: ReadOptions | None = None, stdin: bytes | None = None):
    problems: list[Problem] = []
    docs = list(
        read_documents(
            paths,
            options or ReadOptions(),
            problems.append,
            stdin=io.BytesIO(stdin) if stdin is not None else None,
        )
    )
    return docs, problems


def test_a_text_file_is_one_document_per_line_with_path_line_ids(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_bytes(b"first\r\nsecond\n\nfourth")
    docs, problems = read([str(f)])
    assert [(d.id, d.text, d.raw) for d in docs] == [
        (f"{f}:1", "first", b"first\r"),  # the CR is the line's, to write back; not the text's
        (f"{f}:2", "second", b"second"),
        (f"{f}:3", "", b""),
        (f"{f}:4", "fourth", b"fourth"),
    ]
    assert problems == []


def test_jsonl_records_keep_their_raw_form_and_ids(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text('{"id": "x", "text": "hi", "url": "u"}\n\n{"text": "no id"}\n{"id": 7, "text": "n"}\n')
    docs, problems = read([str(f)])
    assert [d.id for d in docs] == ["x", f"{f}:3", "7"]
    assert docs[0].raw == b'{"id": "x", "text": "hi", "url": "u"}'
    assert problems == []


def test_gzip_files_are_read_transparently(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl.gz"
    with gzip.open(f, "wt") as g:
        g.write('{"id": "a", "text": "zipped"}\n')
    docs, _ = read([str(f)])
    assert [(d.id, d.text) for d in docs] == [("a", "zipped")]


def test_bad_jsonl_lines_are_named_and_skipped(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text('{"text": "ok"}\nnot json\n[1, 2]\n{"body": "x"}\n{"text": 5}\n')
    docs, problems = read([str(f)])
    assert [d.text for d in docs] == ["ok"]
    assert [(p.where, p.kind) for p in problems] == [
        (f"{f}:2", "bad-json"),
        (f"{f}:3", "bad-record"),
        (f"{f}:4", "bad-record"),
        (f"{f}:5", "bad-record"),
    ]
    assert "no 'text' field" in problems[2].message


def test_a_record_without_the_text_field_names_the_string_fields_it_has(tmp_path: Path) -> None:
    # A misspelt --text-field: every record says so, and what it holds says what was meant.
    long = "x" * 100
    f = tmp_path / "records.jsonl"
    f.write_text(
        json.dumps({"id": "a", "n": 1, "body": "t", long: "v", **{f"f{i}": "s" for i in range(6)}})
        + "\n"
        + json.dumps({"id": "b", "n": 2})
        + "\n"
        + json.dumps({"n": 3})
        + "\n"
    )
    _, problems = read([str(f)], ReadOptions(text_field="text"))
    assert [p.message for p in problems] == [
        f"no 'text' field (its string fields: 'id', 'body', '{long[:36]}..., 'f0', 'f1', 'f2', ...)",
        "no 'text' field (its string fields: 'id')",
        "no 'text' field",
    ]
    # a nested field asked for: said not to be read (it read as if misspelt, a trial)
    nested = tmp_path / "nested.jsonl"
    nested.write_text(json.dumps({"id": "a", "content": {"body": "t"}}) + "\n")
    _, problems = read([str(nested)], ReadOptions(text_field="content.body"))
    assert [p.message for p in problems] == [
        "no 'content.body' field (its string fields: 'id'); a field inside 'content' is not read:"
        " --text-field names a top-level field"
    ]


def test_invalid_utf8_is_read_as_windows_1252_reported_and_kept_raw(tmp_path: Path) -> None:
    f = tmp_path / "latin1.txt"
    f.write_bytes(b"caf\xe9 au lait\n")
    docs, problems = read([str(f)])
    assert docs[0].text == "café au lait" and docs[0].raw == b"caf\xe9 au lait"
    assert [(p.where, p.kind) for p in problems] == [(f"{f}:1", "invalid-utf8")]


def test_an_unpaired_surrogate_escape_in_json_is_replaced_and_reported(tmp_path: Path) -> None:
    # json.loads gives a str no UTF-8 can encode; fingerprinting (opencc, xxh3) needs UTF-8.
    f = tmp_path / "s.jsonl"
    f.write_text(
        '{"text": "\u4e00\u4e8c\\udcff", "id": "a\\ud800"}\n{"text": "\\ud83d\\ude00 ok"}\n', encoding="utf-8"
    )
    docs, problems = read([str(f)], ReadOptions(jsonl=True))
    assert [(d.id, d.text) for d in docs] == [("a\ufffd", "一二\ufffd"), (f"{f}:2", "\U0001f600 ok")]
    assert [(p.where, p.kind) for p in problems] == [(f"{f}:1", "invalid-utf8")] * 2
    # each names the field it is in: the id's and the text's were said alike (a review)
    assert "unpaired surrogate \\ud800 in the id at character 2" in problems[0].message
    assert "unpaired surrogate \\udcff in 'text' at character 3" in problems[1].message


def test_unpaired_surrogates_in_a_features_records_id_and_names_are_replaced_too(tmp_path: Path) -> None:
    # Left in, they took the whole run down where the id or a name was encoded (a trial).
    f = tmp_path / "f.jsonl"
    f.write_text('{"id": "x\\ud800y", "f": {"\\udc80": 1, "\\udc81": 2, "e": 1}}\n', encoding="utf-8")
    docs, problems = read([str(f)], ReadOptions(jsonl=True, features_field="f"))
    assert [(d.id, d.features) for d in docs] == [("x\ufffdy", {"\ufffd": 3.0, "e": 1.0})]
    assert [(p.where, p.kind) for p in problems] == [(f"{f}:1", "invalid-utf8")] * 2


def test_a_missing_path_and_an_empty_file_are_problems(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    docs, problems = read([str(tmp_path / "nope.txt"), str(tmp_path / "empty.txt")])
    assert docs == []
    assert [p.kind for p in problems] == ["missing", "empty-file"]


def test_a_document_over_the_size_limit_is_fingerprinted_on_its_start(tmp_path: Path) -> None:
    f = tmp_path / "big.txt"
    f.write_bytes(b"x" * 100 + b"\nsmall\n")
    docs, problems = read([str(f)], ReadOptions(max_doc_size=10))
    assert docs[0].text == "x" * 10 and docs[0].raw == b"x" * 100
    assert [p.kind for p in problems] == ["too-large"]


def test_a_compressed_member_over_the_size_limit_is_said_by_its_text(tmp_path: Path) -> None:
    # A trial: a .gz file smaller than the limit was "file is over 16.0 MiB".
    (tmp_path / "plain.txt").write_bytes(b"words " * 1000)
    with gzip.open(tmp_path / "packed.txt.gz", "wb") as f:
        f.write(b"words " * 1000)
    assert (tmp_path / "packed.txt.gz").stat().st_size < 600  # the file is under the limit
    docs, problems = read([str(tmp_path)], ReadOptions(max_doc_size=600))
    assert [d.text for d in docs] == ["words " * 100] * 2
    assert [(os.path.basename(p.where), p.message) for p in problems] == [
        ("packed.txt.gz", "its text is over 600 bytes; fingerprinted its first part"),
        ("plain.txt", "file is over 600 bytes; fingerprinted its first part"),
    ]


def test_a_link_to_a_file_read_through_a_link_to_its_folder_names_it_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A trial: `alias -> real` read first, `flink -> real/f.txt` was "a link to
    # /abs/real/f.txt, which is read under that name", read as alias/f.txt instead.
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("some text here for testing links")
    (tmp_path / "alias").symlink_to("real")
    (tmp_path / "flink").symlink_to(os.path.join("real", "f.txt"))
    monkeypatch.chdir(tmp_path)
    docs, problems = read(["."])
    assert [d.id for d in docs] == [os.path.join(".", "alias", "f.txt")]
    assert [(p.where, p.message) for p in problems] == [
        (
            os.path.join(".", "flink"),
            f"a link to {os.path.join('real', 'f.txt')}, which this run reads in its folder; skipped",
        ),
        (os.path.join(".", "real"), "already read (given twice, or through a link); skipped"),
    ]


def test_a_line_over_the_size_limit_is_decoded_only_up_to_it(tmp_path: Path) -> None:
    # "é" is 2 bytes, cut by the limit; the byte that is no UTF-8 lies past the limit.
    f = tmp_path / "long.txt"
    line = b"x" * 9 + "é".encode() + b"\xff" * 10 + b"x" * (8 << 20)
    f.write_bytes(line + b"\nsmall\n")
    tracemalloc.start()
    try:
        docs, problems = read([str(f)], ReadOptions(max_doc_size=10))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert docs[0].text == "x" * 9 and docs[0].raw == line
    assert [(p.kind, p.message) for p in problems] == [
        ("too-large", "document is 8.0 MiB; fingerprinted its first 10 bytes (--max-doc-size)")
    ]
    # The line as read and as its raw bytes; its text (8 MiB more) is not made.
    assert peak < 2.5 * len(line)


def test_a_directory_is_walked_in_sorted_order_with_patterns(tmp_path: Path) -> None:
    for name in ["b.txt", "a.md", "sub/c.txt", "skip/d.txt"]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    docs, _ = read([str(tmp_path)], ReadOptions(glob=("*.txt",), exclude=("skip",)))
    assert [os.path.relpath(d.id, tmp_path) for d in docs] == ["b.txt", os.path.join("sub", "c.txt")]
    assert docs[0].raw == os.fsencode(tmp_path / "b.txt")


def test_a_directory_is_read_in_the_order_of_its_names_whatever_they_share(tmp_path: Path) -> None:
    # Names that are prefixes of others, or differ just after a shared prefix.
    names = ["a", "a b", "a-b", "a.b", "a.b.c", "ab", "b", "\u00e9", "Z", "_"]
    for name in names:
        (tmp_path / name).write_text(name)
    docs, _ = read([str(tmp_path)])
    assert [os.path.basename(d.id) for d in docs] == sorted(names)


def test_names_that_are_not_utf8_sort_by_their_bytes(tmp_path: Path) -> None:
    # U+E000 is b"\xee\x80\x80", below the byte 0xf5 that is no UTF-8; as a string,
    # that byte's surrogate U+DCF5 sorts below U+E000.
    names = [b"a\xee\x80\x80", b"a\xf5", b"a\xc3", b"b"]
    for name in names:
        (tmp_path / os.fsdecode(name)).write_bytes(name)
    docs, _ = read([str(tmp_path)])
    assert [os.path.basename(d.raw) for d in docs] == sorted(names)


def test_what_a_directory_holds_besides_files_is_reported_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first")
    (tmp_path / "b-gone").symlink_to(tmp_path / "nowhere")
    (tmp_path / "c-sub").mkdir()
    (tmp_path / "c-sub" / "doc.txt").write_text("inside")
    os.mkfifo(tmp_path / "d-fifo")
    (tmp_path / "e-link").symlink_to(tmp_path / "a.txt")
    docs, problems = read([str(tmp_path)])
    assert [os.path.relpath(d.id, tmp_path) for d in docs] == ["a.txt", os.path.join("c-sub", "doc.txt")]
    assert [(os.path.basename(p.where), p.kind, p.message) for p in problems] == [
        ("b-gone", "unreadable", "broken symbolic link"),
        ("d-fifo", "not-a-file", "not a regular file; skipped"),
        (
            "e-link",
            "revisited",
            f"a link to {tmp_path / 'a.txt'}, which this run reads in its folder; skipped",
        ),
    ]


@pytest.mark.parametrize("link_name", ["a-link.txt", "z-link.txt"])
def test_a_link_to_a_file_the_run_reads_is_skipped_wherever_it_sorts(tmp_path: Path, link_name: str) -> None:
    # Read through a link that sorted first, a file was a duplicate of itself, and
    # deleting the duplicates scan listed deleted the file (a review).
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "real.txt").write_text("the real file")
    (tree / link_name).symlink_to(os.path.join("sub", "real.txt"))
    docs, problems = read([str(tree)])
    assert [d.id for d in docs] == [str(tree / "sub" / "real.txt")]
    assert [(p.where, p.kind) for p in problems] == [(str(tree / link_name), "revisited")]


def test_a_file_outside_the_folders_is_read_once_through_its_links(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "outside.txt").write_text("kept elsewhere")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("a-link", "b-link"):
        (tree / name).symlink_to(tmp_path / "elsewhere" / "outside.txt")
    (tree / "left-out.txt").write_text("not read under this name")
    (tree / "c-link").symlink_to("left-out.txt")
    (tree / "d-folder").symlink_to(tmp_path / "elsewhere")  # the file again, not as a link
    docs, problems = read([str(tree)], ReadOptions(exclude=("left-out.txt",)))
    assert [os.path.basename(d.id) for d in docs] == ["a-link", "c-link"]
    assert [(os.path.relpath(p.where, tree), p.kind) for p in problems] == [
        ("b-link", "revisited"),
        (os.path.join("d-folder", "outside.txt"), "revisited"),
    ]


@pytest.mark.parametrize("folder_link", ["a-folder", os.path.join("a-deeper", "sub", "folder")])
def test_a_file_read_through_a_link_to_its_folder_is_not_read_again_by_a_later_link(
    tmp_path: Path, folder_link: str
) -> None:
    # A trial: a link to the folder sorting before a link to the file listed the file as
    # its own duplicate (only a link to a file, or a file with hard links, was noted).
    (tmp_path / "elsewhere" / "inner").mkdir(parents=True)
    (tmp_path / "elsewhere" / "inner" / "outside.txt").write_text("kept elsewhere")
    tree = tmp_path / "tree"
    (tree / folder_link).parent.mkdir(parents=True, exist_ok=True)
    (tree / folder_link).symlink_to(tmp_path / "elsewhere")
    (tree / "b-link").symlink_to(tmp_path / "elsewhere" / "inner" / "outside.txt")
    docs, problems = read([str(tree)])
    assert [os.path.relpath(d.id, tree) for d in docs] == [os.path.join(folder_link, "inner", "outside.txt")]
    assert [(os.path.relpath(p.where, tree), p.kind) for p in problems] == [("b-link", "revisited")]


def test_a_link_to_a_file_in_another_folder_of_the_run_is_skipped(tmp_path: Path) -> None:
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
    (tmp_path / "two" / "real.txt").write_text("in the second folder")
    (tmp_path / "one" / "link.txt").symlink_to(tmp_path / "two" / "real.txt")
    docs, problems = read([str(tmp_path / "one"), str(tmp_path / "two")])
    assert [d.id for d in docs] == [str(tmp_path / "two" / "real.txt")]
    assert [(p.where, p.kind) for p in problems] == [(str(tmp_path / "one" / "link.txt"), "revisited")]
    docs, _ = read([str(tmp_path / "one")])  # alone, it is the only way to the file
    assert [d.id for d in docs] == [str(tmp_path / "one" / "link.txt")]


def test_the_names_of_a_file_with_hard_links_are_one_document(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one file, two names")
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    (tmp_path / "c.txt").write_text("one file, two names")  # a copy: a document of its own
    docs, problems = read([str(tmp_path)])
    assert [os.path.basename(d.id) for d in docs] == ["a.txt", "c.txt"]
    assert [(os.path.basename(p.where), p.kind) for p in problems] == [("b.txt", "revisited")]


@pytest.mark.skipif(os.sep != "/", reason="POSIX paths")
def test_the_ids_below_a_directory_do_not_depend_on_the_slashes_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nightly.sh's "$crawl/$day" with a crawl typed `cr/` named the night's pages
    # `cr//2024-01-01/a.txt` (a trial): ids that differed from the other nights'.
    (tmp_path / "cr" / "day" / "sub").mkdir(parents=True)
    (tmp_path / "cr" / "day" / "a.txt").write_text("a page")
    (tmp_path / "cr" / "day" / "sub" / "b.txt").write_text("another page")
    monkeypatch.chdir(tmp_path)
    ids = ["cr/day/a.txt", "cr/day/sub/b.txt"]
    for typed in ("cr/day", "cr/day/", "cr//day//", "cr///day"):
        docs, problems = read([typed])
        assert [d.id for d in docs] == ids and problems == [], typed
    leading = f"/{tmp_path}/cr/day"  # `//tmp/...`: left to the system
    assert [d.id for d in read([leading])[0]] == [f"{leading}/a.txt", f"{leading}/sub/b.txt"]
    (tmp_path / "cr" / "empty").mkdir()
    assert [p.where for p in read(["cr//empty//"])[1]] == ["cr/empty/"]


@pytest.mark.parametrize("trailing", ["", os.sep])
def test_patterns_match_paths_relative_to_the_directory_given(tmp_path: Path, trailing: str) -> None:
    for name in ["keep.txt", "a/keep.txt", "a/b/drop.txt", "a/b/keep.md", "c/drop.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    top = str(tmp_path) + trailing
    options = ReadOptions(glob=("*.txt", "a/b/*"), exclude=(os.path.join("a", "b", "drop.txt"), "c"))
    docs, _ = read([top], options)
    # ids are the paths as os.path.join makes them from the directory given
    assert [d.id for d in docs] == [
        os.path.join(top, "a", "b", "keep.md"),
        os.path.join(top, "a", "keep.txt"),
        os.path.join(top, "keep.txt"),
    ]


def test_a_glob_that_matches_no_file_of_a_directory_is_warned_about(tmp_path: Path) -> None:
    # With the directory's own name in the pattern, nothing was read, without a word (a trial).
    for name in ["a/x.txt", "a/y.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    docs, problems = read([str(tmp_path / "a")], ReadOptions(glob=("a/*",)))
    assert docs == []
    assert [(p.where, p.kind, p.severity) for p in problems] == [(str(tmp_path / "a"), "no-match", "warning")]
    assert "--glob 'a/*' matched none of its 2 files" in problems[0].message
    assert read([str(tmp_path / "a")], ReadOptions(glob=("x*",)))[1] == []  # one matched
    (tmp_path / "empty").mkdir()
    empty = read([str(tmp_path / "empty")], ReadOptions(glob=("*",)))[1]
    assert [p.kind for p in empty] == ["empty-dir"]  # no file to match: said as that


def test_a_folder_left_out_by_exclude_is_not_an_empty_directory(tmp_path: Path) -> None:
    # Its files were never listed, so the directory read as empty: an error and exit 3
    # where `--exclude 'drafts/*'` gave exit 0 (a review).
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "x.txt").write_text("a draft")
    (tmp_path / "keep").mkdir()
    everything = [(str(tmp_path), "no-match", "warning")]  # said, but not as an error
    for exclude in ("drafts", "drafts/*", "x.txt"):
        docs, problems = read([str(tmp_path)], ReadOptions(exclude=(exclude,)))
        assert docs == [] and [(p.where, p.kind, p.severity) for p in problems] == everything, exclude
    (tmp_path / "keep" / "y.txt").write_text("a page")
    docs, problems = read([str(tmp_path)], ReadOptions(glob=("y*",), exclude=("keep", "drafts")))
    assert docs == [] and [(p.where, p.kind, p.severity) for p in problems] == everything


def test_an_exclude_that_left_everything_out_is_warned_about(tmp_path: Path) -> None:
    # `--exclude '*'` read nothing, exit 0, without a word (a trial).
    (tmp_path / "a.txt").write_text("a page")
    [problem] = read([str(tmp_path)], ReadOptions(exclude=("*",)))[1]
    assert (problem.where, problem.severity) == (str(tmp_path), "warning")
    assert problem.message == "--exclude '*' left out everything in it: no file is read"
    assert read([str(tmp_path)], ReadOptions(exclude=("b*",)))[1][0].message.startswith(
        "--exclude 'b*' left nothing"
    )


def test_an_exclude_that_left_nothing_out_of_the_run_is_warned_about_once(tmp_path: Path) -> None:
    # `--exclude crawl/drafts`, with the folder's own name, read the drafts without a
    # word (a trial). A pattern that leaves something out of one folder of the run is
    # not said of the others, where it had nothing to match.
    for name in ("crawl/a.txt", "crawl/drafts/b.txt", "more/c.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    crawl, more = str(tmp_path / "crawl"), str(tmp_path / "more")
    options = ReadOptions(exclude=("crawl/drafts", "drafts", "nothing*"))
    docs, problems = read([crawl, more], options)
    assert [d.text for d in docs] == ["crawl/a.txt", "more/c.txt"]
    assert [(p.where, p.kind, p.severity) for p in problems] == [(crawl, "no-match", "warning")] * 2
    assert [p.message.split(" (")[0] for p in problems] == [
        "--exclude 'crawl/drafts' left nothing out below it, nor below the 1 other folder given",
        "--exclude 'nothing*' left nothing out below it, nor below the 1 other folder given",
    ]
    [problem] = read([more], ReadOptions(exclude=("drafts",)))[1]
    assert problem.message.startswith("--exclude 'drafts' left nothing out below it (patterns match")
    assert [p.kind for p in read([crawl, more, more], ReadOptions(exclude=("drafts",)))[1]] == ["revisited"]


def test_a_glob_passes_over_links_that_cannot_be_followed_alike(tmp_path: Path) -> None:
    # A broken link the glob left out went quietly; links that point at each other were
    # still errors (a review).
    (tmp_path / "a.txt").write_text("alpha beta gamma")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "dangling").symlink_to("nowhere")
    docs, problems = read([str(tmp_path)], ReadOptions(glob=("*.txt",)))
    assert [d.text for d in docs] == ["alpha beta gamma"] and problems == []
    _, problems = read([str(tmp_path)], ReadOptions(glob=("loop1", "dangling")))
    assert [(p.where, p.message) for p in problems] == [
        (str(tmp_path / "dangling"), "broken symbolic link"),
        (str(tmp_path / "loop1"), "symbolic link loop; not followed"),
    ]


def test_one_file_is_said_as_one(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("text")
    [problem] = read([str(tmp_path)], ReadOptions(glob=("*.md",)))[1]
    assert problem.message.startswith("--glob '*.md' matched none of its 1 file (")


def test_an_empty_compressed_file_in_a_directory_is_cut_short(tmp_path: Path) -> None:
    # It was read as an empty document, without a word; `gzip -d` calls it cut short.
    (tmp_path / "empty.gz").write_bytes(b"")
    (tmp_path / "empty.txt").write_bytes(b"")
    docs, problems = read([str(tmp_path)])
    assert [(d.id, d.text) for d in docs] == [(str(tmp_path / "empty.txt"), "")]
    assert [(p.where, p.kind, p.message) for p in problems] == [
        (str(tmp_path / "empty.gz"), "unreadable", "the gzip stream is cut short; skipped")
    ]


def test_a_file_that_became_a_named_pipe_after_the_listing_is_skipped_not_waited_on(
    tmp_path: Path,
) -> None:
    # Replaced by a pipe between the directory's listing and its open(), a file held the
    # run in open() for good, waiting for a writer (a review: a cron job that never ended).
    (tmp_path / "a.txt").write_text("alpha beta")
    os.mkfifo(tmp_path / "b.txt")
    listing = read_module._listing

    def stale(directory: str) -> tuple[list[str], dict[str, str]]:  # listed while b.txt was a file
        entries, errors = listing(directory)
        return [e[:-1] + read_module._FILE for e in entries], errors

    result: list[tuple[list[Document], list[Problem]]] = []
    with mock.patch.object(read_module, "_listing", stale):
        reading = threading.Thread(target=lambda: result.append(read([str(tmp_path)])), daemon=True)
        reading.start()
        reading.join(timeout=30)
    assert result, "the read waited on the pipe"
    [(docs, problems)] = result
    assert [d.text for d in docs] == ["alpha beta"]
    assert [(p.where, p.kind, p.message) for p in problems] == [
        (str(tmp_path / "b.txt"), "not-a-file", "not a regular file; skipped")
    ]


def test_binary_files_are_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "img.png").write_bytes(b"\x89PNG\x00\x00data")
    docs, problems = read([str(tmp_path)])
    assert docs == []
    assert [(p.kind, p.severity, p.skipped) for p in problems] == [("binary", "warning", True)]


def test_binary_files_without_a_nul_are_skipped_too_and_text_is_not(tmp_path: Path) -> None:
    # git's objects (zlib streams) held no NUL: read as text of replacement characters,
    # each an invalid-UTF-8 error, exit 3 (a review). Text in other encodings, a log with
    # its colours and a form feed stay text.
    packed = zlib.compress(random.Random(0).randbytes(4000), 1).replace(b"\0", b"\1")
    (tmp_path / "object").write_bytes(packed)
    (tmp_path / "latin1.txt").write_bytes("Café crème à la française. ".encode("latin-1") * 40)
    (tmp_path / "koi8.txt").write_bytes("Привет, как дела? ".encode("koi8-r") * 40)
    (tmp_path / "log.txt").write_bytes(b"\x1b[31merror\x1b[0m at line 4\n\f" * 40)
    # A formatted man page's overstrike, ISO-2022-KR's shifts, vim's ^V (a review).
    (tmp_path / "man.txt").write_bytes(b"N\bNA\bAM\bME\bE\n     ls - list\n" * 40)
    (tmp_path / "shifts.txt").write_bytes(b"\x1b$)C\x0e!!\x0f text \x0e#$\x0f\n" * 40)
    (tmp_path / "macro.vim").write_bytes(b"map \x16\x16 :x\x16<CR>\n" * 40)
    docs, problems = read([str(tmp_path)])
    assert [os.path.basename(d.id) for d in docs] == [
        "koi8.txt", "latin1.txt", "log.txt", "macro.vim", "man.txt", "shifts.txt"
    ]  # fmt: skip
    assert [(os.path.basename(p.where), p.kind) for p in problems if p.kind == "binary"] == [
        ("object", "binary")
    ]


def test_a_symlink_loop_is_reported_not_followed(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "doc.txt").write_text("text")
    (tmp_path / "sub" / "loop").symlink_to(tmp_path)
    docs, problems = read([str(tmp_path)])
    assert [d.text for d in docs] == ["text"]
    assert [p.kind for p in problems] == ["ancestor"]
    assert problems[0].severity == "warning"


def test_a_folder_entered_again_reads_what_glob_and_exclude_passed_over_before(tmp_path: Path) -> None:
    # `Latest -> nightly` sorts first: --glob 'nightly/*' passed over every file under
    # Latest/, then skipped nightly/ as already read, and its documents were read nowhere,
    # exit 0 (a review).
    crawl = tmp_path / "crawl"
    (crawl / "nightly" / "deep").mkdir(parents=True)
    (crawl / "nightly" / "page.txt").write_text("page")
    (crawl / "nightly" / "deep" / "more.txt").write_text("more")
    (crawl / "top.txt").write_text("top")
    (crawl / "Latest").symlink_to("nightly")
    for options, ids in [
        (ReadOptions(glob=("nightly/*",)), ["nightly/deep/more.txt", "nightly/page.txt"]),
        (ReadOptions(exclude=("Latest/*",)), ["nightly/deep/more.txt", "nightly/page.txt", "top.txt"]),
        (ReadOptions(glob=("*.txt",)), ["Latest/deep/more.txt", "Latest/page.txt", "top.txt"]),
        (ReadOptions(), ["Latest/deep/more.txt", "Latest/page.txt", "top.txt"]),
    ]:
        docs, problems = read([str(crawl)], options)
        assert [os.path.relpath(d.id, crawl) for d in docs] == ids, options
        # Said only where nothing more was read: each document is read once.
        revisited = [p.where for p in problems if p.kind == "revisited"]
        assert revisited == (
            [] if options.glob == ("nightly/*",) or options.exclude else [f"{crawl}/nightly"]
        )
    # The same with a folder given twice: the second reads what the first left out.
    tree = tmp_path / "tree"
    (tree / "sub" / "deep").mkdir(parents=True)
    (tree / "sub" / "a.txt").write_text("a")
    (tree / "sub" / "deep" / "b.txt").write_text("b")
    (tree / "c.txt").write_text("c")
    docs, problems = read([str(tree), str(tree / "sub")], ReadOptions(exclude=("sub/*",)))
    assert [os.path.relpath(d.id, tree) for d in docs] == ["c.txt", "sub/a.txt", "sub/deep/b.txt"]
    assert problems == []
    docs, problems = read([str(tree), str(tree / "sub")])
    assert [os.path.relpath(d.id, tree) for d in docs] == ["c.txt", "sub/a.txt", "sub/deep/b.txt"]
    assert [(p.kind, p.where) for p in problems] == [("revisited", str(tree / "sub"))]
    # Entered a third time, or again with nothing left for it to read: said to be read
    # already, not an empty directory (exit 3) nor a --glob that matched nothing (a review).
    (tree / "sub" / "deep" / "c.md").write_text("c")
    for paths, options in [
        ([crawl, crawl / "Latest"], ReadOptions(glob=("nightly/*",))),
        ([tree, tree], ReadOptions(glob=("*.txt",))),
        ([tree, tree / "sub"], ReadOptions(glob=("*.txt",))),
    ]:
        docs, problems = read(list(map(str, paths)), options)
        assert len(docs) == (2 if paths[0] == crawl else 3), paths
        assert [(p.kind, p.where) for p in problems] == [("revisited", str(paths[1]))], paths


def test_stdin_is_read_as_lines_named_dash() -> None:
    docs, _ = read(["-"], stdin=b"one\ntwo\n")
    assert [d.id for d in docs] == ["-:1", "-:2"]


def pipe_with(data: bytes, close: bool = True) -> tuple[Lines, int]:
    """Lines over the read end of a pipe holding data (under 64 KiB); the write end."""
    r, w = os.pipe()
    os.write(w, data)
    if close:
        os.close(w)
    return Lines(os.fdopen(r, "rb")), w


@given(
    st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r\n", b"\xff", b" "]), max_size=60), st.integers(1, 9)
)
def test_lines_read_through_their_own_buffer_are_the_streams_lines(parts: list[bytes], chunk: int) -> None:
    data = b"".join(parts)
    lines, _ = pipe_with(data)
    lines.CHUNK = chunk  # line ends fall anywhere in a read, or between reads
    with lines.stream:
        assert list(lines) == [line.removesuffix(b"\n") for line in io.BytesIO(data)]


def test_lines_wait_only_while_the_writer_is_quiet() -> None:
    lines, w = pipe_with(b"one\n", close=False)
    it = iter(lines)
    assert not lines.waiting()  # not reading yet
    assert next(it) == b"one"
    assert lines.waiting()
    os.write(w, b"two\nthr")
    assert not lines.waiting()
    assert next(it) == b"two"
    assert lines.waiting()  # "thr" is half a line: the next one waits on the writer
    os.write(w, b"ee")
    os.close(w)
    assert not lines.waiting()  # the end is there to read
    assert list(it) == [b"three"]
    lines.stream.close()


def _written_apart(w: int, lines: list[bytes], seconds: float) -> threading.Thread:
    """A thread that writes each of `lines` to `w`, `seconds` apart, then closes it."""

    def write() -> None:
        for line in lines:
            os.write(w, line)
            time.sleep(seconds)
        os.close(w)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_lines_that_trickle_close_together_make_a_chunk_and_say_it_is_all_there_is() -> None:
    # A chunk a line cost ~1 ms of CPU a line in the stages after: `tail -f` of 1,000
    # lines a second kept a core busy (a trial). The stages after hand a chunk on at
    # once while it is `paced`.
    lines, w = pipe_with(b"", close=False)
    writer = _written_apart(w, [b"line %d\n" % i for i in range(200)], 0.0005)
    paced = []
    with lines.stream:
        chunks = [c for c in read_chunks(["-"], ReadOptions(), lines) if not paced.append(lines.paced)]
    writer.join()
    assert b"".join(c.data for c in chunks) == b"".join(b"line %d\n" % i for i in range(200))
    assert len(chunks) <= 20 and all(paced[:-1])  # the last, at the end of the input, is not


def test_lines_that_never_pause_are_still_cut_once_the_first_has_waited_long_enough() -> None:
    # Lines 1 ms apart never leave the pipe quiet for TRICKLE_GAP: without a bound on how
    # long the first waits, they were held until a chunk's bytes filled (seconds).
    lines, w = pipe_with(b"", close=False)
    count = int(6 * read_module.TRICKLE_WAIT / 0.001)
    writer = _written_apart(w, [b"line %d\n" % i for i in range(count)], 0.001)
    with lines.stream:
        chunks = list(read_chunks(["-"], ReadOptions(), lines))
    writer.join()
    assert sum(c.data.count(b"\n") for c in chunks) == count and len(chunks) >= 2


def test_a_chunk_that_fills_slowly_is_handed_on_at_once_too() -> None:
    # A pipe of a few MB a second fills a chunk in tens of ms without a pause: cut for its
    # size, not `paced`, the stages after held it for the next, 100-580 ms (a review).
    now = [0.0]

    def blocks(gap: float) -> Iterator[bytes]:
        for i in range(40):
            now[0] = i * gap
            yield b"x" * 1023 + b"\n"

    for gap, handed_on in ((0.001, True), (0.0001, False)):  # 32 KiB in 32 ms; in 3.2 ms
        stream = _Flowing()
        with (
            mock.patch.object(read_module.time, "monotonic", lambda: now[0]),
            mock.patch.object(read_module, "FIRST_CHUNK_BYTES", 32 << 10),
        ):
            first = next(read_module._chunks(blocks(gap), "-", 32 << 10, stream))  # type: ignore[arg-type]
            assert len(first.data) == 32 << 10 and stream.paced is handed_on


class _Flowing:
    """A stream for _chunks whose writer never pauses (quiet() is never true)."""

    paced = False

    def quiet(self, seconds: float) -> bool:
        return False


def test_what_came_while_a_chunk_was_taken_in_counts_its_wait_from_the_cut() -> None:
    # Timed from the next read, lines that came while the stages after took a chunk in
    # waited up to TRICKLE_WAIT more (a review: answers ~75-120 ms late at -j2).
    now = [0.0]

    def blocks() -> Iterator[bytes]:
        for at in (0.0, 0.06, 0.17, 0.18):
            now[0] = max(now[0], at)
            yield b"a line\n"

    with mock.patch.object(read_module.time, "monotonic", lambda: now[0]):
        chunks = read_module._chunks(blocks(), "-", 1 << 20, _Flowing())  # type: ignore[arg-type]
        assert next(chunks).data == b"a line\n" * 2  # cut TRICKLE_WAIT after the first came
        now[0] += 0.1  # the stages after take it in
        assert next(chunks).data == b"a line\n"  # the next read's line waited since the cut
        assert next(chunks).data == b"a line\n"  # the end


def _ctrl_c_as_each_read_returns(monkeypatch: pytest.MonkeyPatch, fd: int) -> None:
    """os.read of `fd`, as read.py calls it, followed by a Ctrl-C as it returns."""
    real_read = os.read

    def read_then_ctrl_c(descriptor: int, size: int) -> bytes:
        data = real_read(descriptor, size)
        if descriptor == fd:
            signal.raise_signal(signal.SIGINT)
        return data

    monkeypatch.setattr(read_module.os, "read", read_then_ctrl_c)


@pytest.mark.skipif(os.name != "posix", reason="reads a pipe's descriptor")
@pytest.mark.parametrize("then", ["read on", "closed"])
def test_an_interrupt_as_a_read_of_a_pipe_returns_hands_on_what_it_read_first(
    monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    # Python raises a signal's KeyboardInterrupt as a call returns: raised as os.read
    # returned, the bytes it took from the pipe were never seen (7,280 lines lost in 1
    # of 120 runs of `filter -j2` under strace, stopped by SIGTERM). Held for after
    # them, it was dropped where the reader was closed after them (a review).
    read_end, write_end = os.pipe()
    os.write(write_end, b"one\ntwo\n")
    os.close(write_end)
    _ctrl_c_as_each_read_returns(monkeypatch, read_end)
    got = []
    with open(read_end, "rb", buffering=0) as stream, pytest.raises(KeyboardInterrupt):
        blocks = read_module.Lines(stream).blocks()
        got.append(next(blocks))
        if then == "closed":
            blocks.close()
        else:
            got.extend(blocks)
    assert got == [b"one\ntwo\n"]


@pytest.mark.skipif(os.name != "posix", reason="descriptors")
def test_a_stream_on_a_descriptor_past_selects_limit_is_read(tmp_path: Path) -> None:
    # select() takes descriptors below 1,024 only: a named pipe opened once that many
    # files were open raised ValueError, a traceback (a review).
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1600:
        pytest.skip("fewer than 1,600 descriptors allowed")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1600), hard))
    read_end, write_end = os.pipe()
    try:
        high = os.dup2(read_end, 1500)
        os.write(write_end, b"one\ntwo\n")
        os.close(write_end)
        with open(high, "rb", buffering=0) as stream:
            lines = read_module.Lines(stream)
            assert list(lines) == [b"one", b"two"] and not lines.quiet(0)
    finally:
        os.close(read_end)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_an_interrupt_while_reading_hands_on_the_whole_lines_read_first() -> None:
    # SIGTERM and Ctrl-C decide every line read: the lines read but not yet cut into a
    # chunk were lost (a run stopped during a bulk pipe answered 6 lines fewer than it read).
    def blocks() -> Iterator[bytes]:
        yield b"one\ntwo\nthr"
        raise KeyboardInterrupt

    chunks = read_module._chunks(blocks(), "-", 1 << 20)
    assert next(chunks).data == b"one\ntwo\n"
    with pytest.raises(KeyboardInterrupt):
        next(chunks)


def test_a_stream_without_a_descriptor_is_read_as_it_is() -> None:
    lines = Lines(io.BytesIO(b"one\ntwo"))
    assert list(lines) == [b"one\n", b"two"] and not lines.waiting()


def test_features_field_gives_weighted_features(tmp_path: Path) -> None:
    f = tmp_path / "f.jsonl"
    f.write_text('{"id": "v", "features": {"dim0": 3.0, "dim1": 2}}\n{"id": "w", "features": {"a": "x"}}\n')
    docs, problems = read([str(f)], ReadOptions(features_field="features"))
    assert docs == [Document("v", "", docs[0].raw, {"dim0": 3.0, "dim1": 2.0})]
    assert [p.where for p in problems] == [f"{f}:2"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    f = tmp_path / "secret.txt"
    f.write_text("x")
    f.chmod(0)
    _, problems = read([str(f)])
    assert [p.kind for p in problems] == ["unreadable"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root searches folders whatever their mode")
def test_a_file_in_a_folder_out_of_reach_is_said_to_be_so_not_missing(tmp_path: Path) -> None:
    # "no such file or directory" of a file in a folder the user may not search (a review).
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "a.txt").write_text("x")
    folder.chmod(0)
    try:
        for problems in (
            read([str(folder / "a.txt")])[1],
            read_in_chunks([str(folder / "a.txt")], ReadOptions(), 64)[1],
        ):
            assert [(p.kind, p.message) for p in problems] == [("unreadable", "Permission denied")]
    finally:
        folder.chmod(0o755)


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists folders whatever their mode")
def test_a_link_to_a_file_in_a_folder_that_cannot_be_listed_is_read_through_the_link(tmp_path: Path) -> None:
    # Skipped as a file the walk reads in its folder, which it then could not list: the
    # file was read nowhere (a trial).
    folder = tmp_path / "X"
    (folder / "secret").mkdir(parents=True)
    (folder / "secret" / "f.txt").write_text("the hidden words\n")
    (folder / "link").symlink_to(folder / "secret" / "f.txt")
    (folder / "secret").chmod(0o311)  # searched, not listed
    try:
        docs, problems = read([str(folder)])
    finally:
        (folder / "secret").chmod(0o755)
    assert [d.id for d in docs] == [f"{folder}/link"]
    assert [(p.where, p.kind) for p in problems] == [(f"{folder}/secret", "unreadable")]


def test_names_that_are_no_file_are_said_as_in_a_folder(tmp_path: Path) -> None:
    # A broken link given by name was "No such file or directory", a loop "Too many
    # levels of symbolic links", a socket "No such device or address" (a review).
    (tmp_path / "broken").symlink_to("nowhere")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    try:
        paths = [str(tmp_path / name) for name in ("missing", "broken", "loop1", "sock")]
        for problems in (read(paths)[1], read_in_chunks(paths, ReadOptions(), 64)[1]):
            assert [(p.kind, p.message) for p in problems] == [
                ("missing", "no such file or directory"),
                ("missing", "broken symbolic link"),
                ("symlink-loop", "symbolic link loop; not followed"),
                ("not-a-file", "not a regular file; skipped"),
            ]
    finally:
        sock.close()


def read_in_chunks(
    paths: list[str],
    options: ReadOptions,
    size: int,
    stretches: bool = False,
    before: Callable[[Stretch], None] = lambda stretch: None,
) -> tuple[list[Document], list[Problem]]:
    """read_chunks then read_chunk on each, as the workers read files (a Span or a
    Stretch from its file, `before` called before a Stretch is read), a Stretch's lines
    numbered after those before it."""
    docs: list[Document] = []
    problems: list[Problem] = []
    spans = SpanReader()
    line = 0
    for item in read_chunks(paths, options, size=size, stretches=stretches):
        if item is BARRIER:  # no work: everything before it is read (here, always)
            continue
        if isinstance(item, Stretch):
            before(item)
            data = spans.stretch(item)
            assert isinstance(data, bytes)
            line = item.first or line
            item = Chunk(item.name, line, data)
            line += data.count(b"\n") + (not data.endswith(b"\n") and data != b"")
        if isinstance(item, Span):
            item = spans(item)
        if isinstance(item, Problem):
            problems.append(item)
        else:
            docs.extend(read_chunk(item, options, problems.append))
    return docs, problems


line_parts = st.sampled_from(
    [
        b"a b",
        b"\n",
        b"\r\n",
        b"\xef\xbb\xbf",
        b"\xff",
        b"caf\xc3\xa9",
        b"",
        b'{"id": 1, "text": "t"}',
        b"{",
        b"  ",
    ]
)


@settings(max_examples=60, deadline=None)
# A buffer grown for a long line and cut back to `size` with the rest of a line filling
# it read nothing more: the file's last line lost its end (found by this test in CI).
@example(files=[b"a ba b\na b"], sizes=(1, 1), jsonl=False, limit=3, zipped="no", stretches=False)
# Stretches of 2 bytes: lines that begin in one and end in the next, one that spans
# several, an empty one, a last line without a newline.
@example(files=[b"a\nbcdef\n\ngh\r\n\xffi"], sizes=(2, 2), jsonl=False, limit=3, zipped="no", stretches=True)
# A Stretch that ends with its last line's newline: the next line is the next one's.
@example(files=[b"a\nbc\nde\nf"], sizes=(2, 3), jsonl=False, limit=3, zipped="no", stretches=True)
@given(
    files=st.lists(st.lists(line_parts, max_size=12).map(b"".join), min_size=1, max_size=3),
    sizes=st.tuples(st.integers(1, 9) | st.just(1 << 16), st.integers(1, 9) | st.just(1 << 20)),
    jsonl=st.booleans(),
    limit=st.sampled_from([3, MAX_DOC_SIZE]),
    zipped=st.sampled_from(["no", "gzip", "cut gzip"]),
    stretches=st.booleans(),
)
def test_files_read_in_chunks_give_what_reading_them_whole_gives(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[bytes],
    sizes: tuple[int, int],
    jsonl: bool,
    limit: int,
    zipped: str,
    stretches: bool,
) -> None:
    top = tmp_path_factory.mktemp("chunks")
    paths = [str(top / "missing.txt")]
    for i, data in enumerate(files):
        path = top / (f"{i}.txt" if zipped == "no" else f"{i}.txt.gz")
        if zipped != "no":
            data = gzip.compress(data)
            data = data[: len(data) // 2] if zipped == "cut gzip" else data
        path.write_bytes(data)
        paths.append(str(path))
    options = ReadOptions(jsonl=jsonl, max_doc_size=limit)
    with mock.patch.object(read_module, "FIRST_CHUNK_BYTES", sizes[0]):
        assert read_in_chunks(paths, options, sizes[1], stretches) == read(paths, options)


@settings(max_examples=60, deadline=None)
# The file's last Stretch shorter than the rest: the next one went on from a full
# Stretch's length past it, and what was written since in between was never read (found
# by a session's review: 14,000 lines appended to a file being read were left out, and
# the ids after them were short by as many).
@example(data=b"ab\ncd\n", extra=b"ef\ngh\n", sizes=(3, 4))
@given(
    # Whole lines: a line that grows once a Stretch of it was read is cut where the
    # file ended then, as any reader of a growing file (tail) may find it.
    data=st.lists(line_parts, min_size=1, max_size=12).map(lambda parts: b"".join(parts) + b"\n"),
    extra=st.lists(line_parts, min_size=1, max_size=12).map(b"".join),
    sizes=st.tuples(st.integers(1, 9), st.integers(1, 9)),
)
def test_stretches_of_a_file_that_grows_as_it_is_cut_cover_what_was_written_since(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, extra: bytes, sizes: tuple[int, int]
) -> None:
    f = tmp_path_factory.mktemp("grows") / "f.txt"
    f.write_bytes(data)
    options = ReadOptions(max_doc_size=MAX_DOC_SIZE)
    grown = []

    def grow(stretch: Stretch) -> None:  # once, at the last Stretch of the file as cut
        if not grown and stretch.at + stretch.size == stretch.ends:
            with f.open("ab") as more:
                more.write(extra)
            grown.append(stretch)

    with mock.patch.object(read_module, "FIRST_CHUNK_BYTES", sizes[0]):
        got = read_in_chunks([str(f)], options, sizes[1], stretches=True, before=grow)
    assert got == read([str(f)], options)


@contextlib.contextmanager
def _stretched(tmp_path: Path) -> Iterator[tuple[Path, Iterator[Any]]]:
    """A file of 100 short lines, and read_chunks' items of it after its first Span:
    Stretches of 256 bytes."""
    f = tmp_path / "f.txt"
    f.write_bytes(b"".join(b"line %d\n" % i for i in range(100)))
    with mock.patch.object(read_module, "FIRST_CHUNK_BYTES", 64):
        items = read_chunks([str(f)], ReadOptions(), size=256, stretches=True)
        assert isinstance(next(items), Span)
        yield f, items


@pytest.mark.parametrize(("lines", "regime"), [(100, "a chunk"), (2000, "between"), (20_000, "as asked")])
def test_stretches_are_as_wide_as_asked_where_the_file_still_makes_enough_of_them(
    tmp_path: Path, lines: int, regime: str
) -> None:
    # fingerprint's workers get Stretches of STRETCH_BYTES, a file of few of them
    # narrower, so that they share out evenly (STRETCHES_A_FILE), and never narrower
    # than a chunk.
    f = tmp_path / "f.txt"
    f.write_bytes(b"".join(b"line %d\n" % i for i in range(lines)))
    with mock.patch.object(read_module, "FIRST_CHUNK_BYTES", 64):
        items = list(read_chunks([str(f)], ReadOptions(), size=256, stretches=True, stretch_size=4096))
    stretches = [item for item in items if isinstance(item, Stretch)]
    wide = max(256, min(4096, f.stat().st_size // read_module.STRETCHES_A_FILE))
    assert {"a chunk": wide == 256, "between": 256 < wide < 4096, "as asked": wide == 4096}[regime]
    assert {s.size for s in stretches[:-1]} == {wide} and 0 < stretches[-1].size <= wide
    assert stretches[0].at + sum(s.size for s in stretches) == f.stat().st_size


def test_a_file_cut_shorter_before_its_stretches_are_cut_is_said_to_have_shrunk(tmp_path: Path) -> None:
    # Its Stretches end where it ends now; the stream was left a Stretch's length past
    # that end, so the shrinking went unsaid (or said with more bytes than it held).
    with _stretched(tmp_path) as (f, items):
        with f.open("r+b") as cut:
            cut.truncate(500)
        rest = list(items)
    assert [(s.at, s.size) for s in rest if isinstance(s, Stretch)] == [(63, 256), (319, 181)]
    [problem] = [p for p in rest if isinstance(p, Problem)]
    assert problem.kind == "shrank" and "(500 of 790 bytes)" in problem.message


def test_a_file_that_grows_is_cut_to_its_new_end_once_its_stretches_so_far_are_read(tmp_path: Path) -> None:
    # Its size was asked again as soon as its Stretches were cut, before workers read
    # them: lines appended meanwhile were never read, without a word (a review). A
    # BARRIER comes first, after which (all read) the size is asked again.
    with _stretched(tmp_path) as (f, items):
        cut = []
        for item in items:
            if item is BARRIER and len(cut) == 3:
                with f.open("ab") as more:
                    more.write(b"".join(b"line %d\n" % i for i in range(100, 150)))
            cut.append(item)
    stretches = [(s.at, s.size) for s in cut if isinstance(s, Stretch)]
    assert stretches == [(63, 256), (319, 256), (575, 215), (790, 256), (1046, 194)]
    assert [item is BARRIER for item in cut] == [False, False, False, True, False, False, True]
    # A file not written to lately is asked at once: a BARRIER empties the workers' queue
    # (15% slower for 770 files of 80 KiB).
    os.utime(f, (time.time() - 60, time.time() - 60))
    with mock.patch.object(read_module, "FIRST_CHUNK_BYTES", 64):
        assert BARRIER not in list(read_chunks([str(f)], ReadOptions(), size=256, stretches=True))


def test_a_span_of_a_file_rewritten_in_place_since_it_was_cut_is_not_read(tmp_path: Path) -> None:
    # Truncated and written again (the same inode): the lines counted for its ids were
    # not the lines read, and two documents got one id (a session's review).
    f = tmp_path / "f.txt"
    f.write_bytes(b"".join(b"line %d\n" % i for i in range(100)))
    with mock.patch.object(read_module, "FIRST_CHUNK_BYTES", 64):
        spans = [s for s in read_chunks([str(f)], ReadOptions(), size=128) if isinstance(s, Span)]
    assert [type(SpanReader()(span)) for span in spans] == [Chunk] * len(spans)
    with f.open("r+b") as rewritten:  # as many bytes, the newlines elsewhere
        rewritten.write(b"".join(b"%d\n" % i for i in range(200))[: f.stat().st_size])
    got = SpanReader()(spans[1])
    assert isinstance(got, Problem) and got.message.startswith("the file changed while it was read: lines")


def test_chunks_hold_whole_lines_and_know_their_first_line_number(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_bytes(b"one\ntwo\nthree\nfour")
    expected = [
        Chunk(str(f), 1, b"one\n"),
        Chunk(str(f), 2, b"two\n"),
        Chunk(str(f), 3, b"three\n"),
        Chunk(str(f), 4, b"four"),
    ]
    gz = tmp_path / "a.txt.gz"  # read by this process: Chunks of the bytes
    gz.write_bytes(gzip.compress(f.read_bytes()))
    with mock.patch.object(read_module, "FIRST_CHUNK_BYTES", 5):
        assert list(read_chunks([str(gz)], ReadOptions(), size=6)) == [
            c._replace(name=str(gz)) for c in expected
        ]
        spans = list(read_chunks([str(f)], ReadOptions(), size=6))
    # A plain file: Spans of it, the same lines, that a worker reads itself.
    assert all(isinstance(span, Span) for span in spans)
    assert [(s.first, s.lines, s.at, s.size) for s in spans] == [
        (1, 1, 0, 4),
        (2, 1, 4, 4),
        (3, 1, 8, 6),
        (4, 1, 14, 4),
    ]
    assert [SpanReader()(span) for span in spans] == expected


def test_a_span_of_a_file_replaced_or_cut_since_it_was_read_is_a_problem_naming_its_lines(
    tmp_path: Path,
) -> None:
    # Workers read a plain file's Spans after the main process has cut it into them;
    # what changed meanwhile loses those lines, and says which.
    f = tmp_path / "a.txt"
    f.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 20_001)))
    spans = list(read_chunks([str(f)], ReadOptions(), size=4096))
    assert len(spans) > 3 and all(isinstance(span, Span) for span in spans)
    read = SpanReader()
    assert isinstance(read(spans[0]), Chunk)
    os.truncate(f, spans[2].at + 10)
    cut, gone = read(spans[2]), read(spans[3])
    assert isinstance(cut, Problem) and cut.kind == "unreadable" and cut.skipped
    assert cut.where == f"{f}:{spans[2].first}"
    last = spans[2].first + spans[2].lines - 1
    assert (
        cut.message == f"the file shrank while it was read: lines {spans[2].first:,} to {last:,} are not read"
    )
    assert isinstance(gone, Problem) and "shrank" in gone.message
    replaced = tmp_path / "b.txt"
    replaced.write_bytes(f.read_bytes())
    os.replace(replaced, f)
    # A reader that holds the file open reads on in it; one that opens its name finds another.
    assert isinstance(read(spans[1]), Chunk)
    problem = SpanReader()(spans[1])
    assert isinstance(problem, Problem) and problem.kind == "unreadable"
    assert problem.message.startswith("the file was replaced while it was read: lines ")


def test_only_plain_files_that_another_process_finds_again_are_read_in_spans(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_bytes(b"one\ntwo\n")
    link = tmp_path / "link.txt"
    link.symlink_to(f)
    # A file of one first chunk is read here: sending it costs less than opening it again.
    assert list(read_chunks([str(link)], ReadOptions())) == [Chunk(str(link), 1, b"one\ntwo\n")]
    with mock.patch.object(read_module, "FIRST_CHUNK_BYTES", 4):
        span, *_ = read_chunks([str(link)], ReadOptions())
    assert isinstance(span, Span) and span.name == str(link) and span.path == str(f)
    assert SpanReader()(span) == Chunk(str(link), 1, b"one\n")
    # /proc's files are each process's own and have no size: read here.
    status = Path("/proc/self/status")
    if status.exists():
        first = next(read_chunks([str(status)], ReadOptions()))
        assert isinstance(first, Chunk) and first.data.startswith(b"Name:")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert [p.kind for p in read_chunks([str(empty)], ReadOptions())] == ["empty-file"]


def test_directories_are_not_read_in_chunks_and_stdin_needs_its_stream(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a directory is read a document at a time"):
        list(read_chunks([str(tmp_path)], ReadOptions()))
    with pytest.raises(ValueError, match="needs a stdin stream"):
        list(read_chunks(["-"], ReadOptions()))


@settings(max_examples=30, deadline=None)
@given(data=st.lists(line_parts, max_size=12).map(b"".join), jsonl=st.booleans())
def test_stdin_read_in_chunks_gives_what_reading_it_by_lines_gives(data: bytes, jsonl: bool) -> None:
    options = ReadOptions(jsonl=jsonl)
    docs: list[Document] = []
    problems: list[Problem] = []
    for item in read_chunks(["-"], options, Lines(io.BytesIO(data))):
        if isinstance(item, Problem):
            problems.append(item)
        else:
            docs.extend(read_chunk(item, options, problems.append))
    assert (docs, problems) == read(["-"], options, stdin=data)


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(line_parts, max_size=16).map(b"".join),
    jsonl=st.booleans(),
    most=st.integers(1, 3),
    size=st.integers(1, 24),
)
def test_stdin_cut_into_chunks_of_few_lines_gives_what_reading_it_by_lines_gives(
    data: bytes, jsonl: bool, most: int, size: int
) -> None:
    # A MiB read from stdin was one chunk, however many lines: of blank lines, a million
    # documents and their sketches at once (1.1 GB for 2M, a trial); now CHUNK_LINES at most.
    options = ReadOptions(jsonl=jsonl)
    with mock.patch.object(read_module, "CHUNK_LINES", most):
        items = list(read_chunks(["-"], options, Lines(io.BytesIO(data)), size=size))
    chunks = [item for item in items if isinstance(item, Chunk)]
    assert all(chunk.data.count(b"\n") <= most for chunk in chunks)
    assert all(len(chunk.data) <= size or chunk.data.count(b"\n") <= 1 for chunk in chunks)
    docs: list[Document] = []
    problems: list[Problem] = []
    for item in items:
        if isinstance(item, Problem):
            problems.append(item)
        else:
            docs.extend(read_chunk(item, options, problems.append))
    assert (docs, problems) == read(["-"], options, stdin=data)


def test_a_file_cut_shorter_while_it_is_read_is_warned_about(tmp_path: Path) -> None:
    # A trial: a file truncated mid-read ended in a piece of a line taken as a whole
    # document, without a word (a log rotated by truncation, a crawl rewritten).
    f = tmp_path / "growing.txt"
    f.write_text("".join(f"line {i} of a file that is cut while it is read\n" for i in range(20_000)))
    problems: list[Problem] = []
    docs = read_documents([str(f)], ReadOptions(), problems.append)
    assert next(docs).id == f"{f}:1"
    os.truncate(f, 1000)
    rest = list(docs)
    assert [p.kind for p in problems] == ["shrank"] and len(rest) < 20_000 - 1
    assert "the file shrank while it was read" in problems[0].message
    items = read_chunks([str(f)], ReadOptions(), size=4096)
    f.write_text("".join(f"line {i} of a file that is cut while it is read\n" for i in range(20_000)))
    assert isinstance(next(items), Span)
    os.truncate(f, 1000)
    last = list(items)[-1]
    assert isinstance(last, Problem) and last.kind == "shrank"
    # A file read whole, or one that grows while it is read, is not warned about.
    problems.clear()
    f.write_text("".join(f"line {i} of a file that grows while it is read\n" for i in range(20_000)))
    docs = read_documents([str(f)], ReadOptions(), problems.append)
    next(docs)
    with open(f, "a") as grown:
        grown.write("one more line\n")
    assert list(docs)[-1].text == "one more line" and problems == []


def test_an_empty_directory_is_an_error_as_an_empty_file_is(tmp_path: Path) -> None:
    # A night whose crawl made nothing passed as 0 documents and exit 0 (a review).
    (tmp_path / "night" / "sub").mkdir(parents=True)
    (tmp_path / "some").mkdir()
    (tmp_path / "some" / "a.txt").write_text("words")
    docs, problems = read([str(tmp_path / "night")])
    assert docs == [] and [(p.where, p.kind, p.severity) for p in problems] == [
        (str(tmp_path / "night"), "empty-dir", "error")
    ]
    # a folder read once already, or files left out on purpose, are no empty directory
    _, again = read([str(tmp_path / "some"), str(tmp_path / "some")])
    _, left_out = read([str(tmp_path / "some")], ReadOptions(exclude=("*.txt",)))
    assert [p.kind for p in again] == ["revisited"]
    assert [(p.kind, p.severity) for p in left_out] == [("no-match", "warning")]  # everything left out


def test_sizes_are_said_in_words() -> None:
    # "--max-doc-size 1" was said as "its first 1 bytes" (a review).
    assert [size_text(n) for n in (1, 2, 1023, 2**20, 3 * 2**20 // 2)] == [
        "1 byte", "2 bytes", "1,023 bytes", "1.0 MiB", "1.5 MiB"
    ]  # fmt: skip


def test_the_byte_said_of_invalid_utf8_counts_a_byte_order_mark_before_it(tmp_path: Path) -> None:
    # "byte 8" of the 11th byte: counted after the mark (a review).
    folder = tmp_path / "d"
    folder.mkdir()
    data = b"\xef\xbb\xbfThe caf\xe9 x\n"
    (folder / "x.txt").write_bytes(data)
    (tmp_path / "lines.txt").write_bytes(data + b"caf\xe9\n")
    for path in (folder, tmp_path / "lines.txt"):
        _, problems = read([str(path)])
        assert [p.message for p in problems][
            0
        ] == "invalid UTF-8 at byte 11, its bytes that are not UTF-8 read as Windows-1252"
    assert problems[1].message.startswith("invalid UTF-8 at byte 4, ")  # line 2: none


# ---------------------------------------------------------------- read once, and read


@pytest.mark.parametrize("order", [["-", "g"], ["g", "-"]])
def test_stdin_from_a_file_in_a_folder_given_is_that_file_read_once(tmp_path: Path, order: list[str]) -> None:
    # `scan - g < g/top.txt` listed g/top.txt as a duplicate of -:1 (and `scan g -` the
    # other way round): deleting the duplicates listed deleted the only copy (a trial).
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "top.txt").write_text("some words for the top file here\n")
    (folder / "b.txt").write_text("other text\n")
    problems: list[Problem] = []
    paths = [str(folder) if p == "g" else p for p in order]
    with open(folder / "top.txt", "rb") as stdin:
        docs = list(read_documents(paths, ReadOptions(), problems.append, stdin=stdin))
    assert sorted(d.text.strip() for d in docs) == ["other text", "some words for the top file here"]
    assert [p.kind for p in problems] == ["revisited"]


def test_a_file_refused_by_one_name_is_read_by_another(tmp_path: Path) -> None:
    # Counted read before it was read, a file refused under one name was "already read"
    # under the other, and read nowhere: UTF-16 given by name (not read line by line)
    # and in its folder; a hard link named .gz (not gzip data) beside its .txt (a trial).
    folder = tmp_path / "U"
    folder.mkdir()
    (folder / "u16.txt").write_bytes("the quick brown fox\n".encode("utf-16"))
    docs, problems = read([str(folder / "u16.txt"), str(folder)])
    assert [d.text for d in docs] == ["the quick brown fox\n"]
    assert len(problems) == 1 and "UTF-16 text is not read line by line" in problems[0].message
    linked = tmp_path / "HL"
    linked.mkdir()
    (linked / "notes.txt").write_text("plain text notes\n")
    os.link(linked / "notes.txt", linked / "notes.gz")
    docs, problems = read([str(linked)])
    assert [d.id for d in docs] == [f"{linked}/notes.txt"] and len(problems) == 1


@pytest.mark.parametrize("refused", ["utf16", "gzip"])
def test_stdin_refused_leaves_its_file_to_the_folder_given(tmp_path: Path, refused: str) -> None:
    # Counted read before it was refused, stdin's file in a folder given was "already
    # read" there, and read nowhere (a review).
    folder = tmp_path / "h"
    folder.mkdir()
    name, data = (
        ("u16.txt", "quick brown fox jumps\n".encode("utf-16"))
        if refused == "utf16"
        else ("z.gz", gzip.compress(b"some gz words here\n"))
    )
    (folder / name).write_bytes(data)
    problems: list[Problem] = []
    with open(folder / name, "rb") as stdin:
        docs = list(read_documents(["-", str(folder)], ReadOptions(), problems.append, stdin=stdin))
    assert [d.id for d in docs] == [f"{folder}/{name}"] and [p.where for p in problems] == ["-"]


def test_a_file_named_and_in_its_folder_is_read_once_unless_refused_by_its_name(tmp_path: Path) -> None:
    # notes.gz named (not gzip data) and its folder: its hard link notes.txt was "already
    # read" (a review); a JSONL file named whose records all fail is read once, not again
    # as a whole-file document (a review of the first fix).
    k = tmp_path / "k"
    k.mkdir()
    (k / "notes.txt").write_text("plain text notes here\n")
    os.link(k / "notes.txt", k / "notes.gz")
    docs, _ = read([str(k / "notes.gz"), str(k)])
    assert [d.id for d in docs] == [f"{k}/notes.txt"]
    d = tmp_path / "d"
    d.mkdir()
    (d / "data.jsonl").write_text('{"id": 1, "text": "a b"}\n')
    docs, problems = read([str(d / "data.jsonl"), str(d)], ReadOptions(text_field="body"))
    assert docs == [] and [p.kind for p in problems][-1] == "revisited"


def test_a_binary_member_is_read_no_further_than_its_first_piece(tmp_path: Path) -> None:
    # A directory's 50 MB video was read 16 MiB to be skipped (a trial).
    class Counted(io.BytesIO):
        asked = 0

        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            Counted.asked += len(data)
            return data

    data, _ = first_bytes(Counted(b"\0" * (20 << 20)), MAX_DOC_SIZE, binary_stops=True)
    assert looks_binary(data) and Counted.asked <= 1 << 16
    text, whole = first_bytes(io.BytesIO(b"words " * 30_000), MAX_DOC_SIZE, binary_stops=True)
    assert whole and len(text) == 180_000  # text is read whole
    # ... as a folder's member, and a file already read is not read again by its hard
    # link's name (read first, a hard-linked tree was read twice: a review).
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"\0" * (4 << 20))
    (folder / "b.txt").write_text("words " * 30_000)
    os.link(folder / "b.txt", folder / "c.txt")
    read_bytes: list[int] = []
    reading = read_module._read_up_to

    def counted(f: Any, size: int, enough: Any = None) -> bytes:
        data = reading(f, size, enough)
        read_bytes.append(len(data))
        return data

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(read_module, "_read_up_to", counted)
        docs, problems = read([str(folder)])
    assert [d.id for d in docs] == [f"{folder}/b.txt"] and read_bytes == [1 << 16, 180_000]


def test_a_link_to_a_folder_that_holds_the_folder_given_is_not_followed(tmp_path: Path) -> None:
    # `up -> ..` in the folder given was followed: it read the folder again beside
    # everything else there (a trial); a link to / read the whole file system. (No link
    # to / is made here: where this fails, it would walk the machine's files.)
    top = tmp_path / "top"
    top.mkdir()
    (top / "in.txt").write_text("in\n")
    (tmp_path / "sib").mkdir()
    (tmp_path / "sib" / "secret.txt").write_text("outside\n")
    (top / "up").symlink_to("..")
    (top / "above").symlink_to(tmp_path)
    docs, problems = read([str(top)])
    assert [d.id for d in docs] == [f"{top}/in.txt"]
    assert sorted((p.where, p.kind) for p in problems) == [
        (f"{top}/above", "ancestor"),
        (f"{top}/up", "ancestor"),
    ]


def test_a_link_back_to_the_folder_holding_a_folder_given_through_a_link_is_not_followed(
    tmp_path: Path,
) -> None:
    # x/lb -> ../real/b given, real/b/back -> ../../x: by the real path alone, x was not
    # a folder above, and x/xx.txt, beside the folder given, was read (a review).
    (tmp_path / "real" / "b").mkdir(parents=True)
    (tmp_path / "real" / "b" / "in.txt").write_text("in\n")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "xx.txt").write_text("beside\n")
    (tmp_path / "x" / "lb").symlink_to("../real/b")
    (tmp_path / "real" / "b" / "back").symlink_to("../../x")
    docs, problems = read([str(tmp_path / "x" / "lb")])
    assert [d.id for d in docs] == [f"{tmp_path}/x/lb/in.txt"]
    assert [(p.where, p.kind) for p in problems] == [(f"{tmp_path}/x/lb/back", "ancestor")]


def test_what_one_reader_refuses_another_name_may_read_and_records_that_fail_are_read_once(
    tmp_path: Path,
) -> None:
    # A review of the read-once fixes: a file with a NUL after its first line, binary to
    # a folder, was "already read" when named after it, and read nowhere; a compressed
    # JSONL file named, whose records all failed, was read again as a whole-file document;
    # stdin partway into a file in a folder given was taken for all of that file.
    b = tmp_path / "b"
    b.mkdir()
    (b / "m.txt").write_bytes(b"good text here\nx\0y\n")
    docs, problems = read([str(b), str(b / "m.txt")])
    assert [d.id for d in docs] == [f"{b}/m.txt:1", f"{b}/m.txt:2"] and [p.kind for p in problems] == [
        "binary"
    ]
    j = tmp_path / "j"
    j.mkdir()
    (j / "x.jsonl.gz").write_bytes(gzip.compress(b'{"id": "r1", "body": "first record"}\n'))
    docs, problems = read([str(j / "x.jsonl.gz"), str(j)])
    assert docs == [] and [p.kind for p in problems][-1] == "revisited"
    o = tmp_path / "o"
    o.mkdir()
    (o / "a.txt").write_text("first line\nsecond line\n")
    with open(o / "a.txt", "rb", buffering=0) as stdin:
        stdin.read(len("first line\n"))  # `{ read l; simdedup - o; } < o/a.txt`
        got = list(read_documents(["-", str(o)], ReadOptions(), lambda p: None, stdin=stdin))
    assert [d.id for d in got] == ["-:1", f"{o}/a.txt"]


def _forms(pattern: str) -> set[str]:
    """The pattern with each `**/` that starts it or follows a '/' kept or left out."""
    forms = {pattern}
    for _ in range(pattern.count("**/")):
        forms |= {
            form[:i] + form[i + 3 :]
            for form in forms
            for i in range(len(form))
            if form.startswith("**/", i) and (i == 0 or form[i - 1] == "/")
        }
    return forms


_PATTERN_PIECES = st.sampled_from(["a", "b", "/", "*", "**/", "?", "[ab]", ".txt", "x", "**"])
_PATH_PIECES = st.sampled_from(["a", "b", "/", "x", ".txt", "ab/", "\n"])


@settings(max_examples=300, deadline=None)
@given(
    pattern=st.lists(_PATTERN_PIECES, min_size=1, max_size=7).map("".join),
    paths=st.lists(st.lists(_PATH_PIECES, max_size=8).map("".join), min_size=1, max_size=20),
)
def test_a_pattern_matches_what_one_of_its_forms_with_and_without_each_double_star_matches(
    pattern: str, paths: list[str]
) -> None:
    # `**/` is any folders or none (.gitignore): the pattern with each `**/` kept or left
    # out, as fnmatch matches those; in one regex (the forms themselves grew as 2 ** n).
    found = read_module.pattern_regex(pattern)
    for path in paths:
        assert bool(found.match(path)) == any(fnmatch.fnmatchcase(path, form) for form in _forms(pattern))


def test_a_pattern_of_many_double_stars_is_one_regex() -> None:
    pattern = "".join(f"d{i}/**/" for i in range(40)) + "x.txt"  # 2 ** 40 forms
    found = read_module.pattern_regex(pattern)
    assert found.match("/".join(f"d{i}" for i in range(40)) + "/q/x.txt")
    assert not found.match("/".join(f"d{i}" for i in range(39)) + "/x.txt")


@pytest.mark.parametrize("name", ["plain.txt", "zipped.txt.gz"])
def test_a_files_first_chunks_are_small(tmp_path: Path, name: str) -> None:
    # With --jobs 0 the main process does the first FIRST_CHUNKS chunks itself, timing
    # them, before any worker starts: small ones keep that serial part short (20,000
    # Chinese lines, `scan -j0`: 40-55 ms sooner with two of 64 KiB than with one).
    data = b"".join(b"line %d of a few words\n" % i for i in range(60_000))  # 1.5 MB
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    items = list(read_chunks([str(path)], ReadOptions(), size=256 << 10))
    sizes = [item.size if isinstance(item, Span) else len(item.data) for item in items]
    first = read_module.FIRST_CHUNK_BYTES
    assert all(abs(n - first) < 30 for n in sizes[:2]), sizes[:3]  # whole lines: about that
    assert sizes[2] > 2 * first, sizes[:3]
    assert sum(sizes) == len(data)


class _ShortReads(io.FileIO):
    """A file whose every read gives at most 7 bytes, as some file systems' reads may."""

    def read(self, size: int = -1) -> bytes:
        return super().read(min(size, 7) if size >= 0 else 7)


@pytest.mark.parametrize("text", ["a line of text\nand another\n" * 50, "\ufeff" + "wide text" * 30])
def test_a_directory_member_is_read_whole_through_short_reads(tmp_path: Path, text: str) -> None:
    # A directory's files are read unbuffered (read._open_member), where one read may
    # give fewer bytes than asked before the end; first_bytes reads on until the end.
    encoding = "utf-8" if text.isascii() else "utf-16"
    path = tmp_path / "member.txt"
    path.write_bytes(text.encode(encoding))
    with _ShortReads(path) as f:
        data, whole = first_bytes(f, 1 << 20)
    assert whole and data == path.read_bytes()
    with _ShortReads(path) as f:  # and up to a limit, past it
        data, whole = first_bytes(f, 100)
    assert not whole and len(data) == (100 + 4 if encoding == "utf-8" else 2 * 100 + 4)
