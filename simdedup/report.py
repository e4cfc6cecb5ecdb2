"""Stage 6: write what was decided: unique documents, duplicates, per-document reports,
duplicate groups and the run summary.

Writers take binary streams and write one complete line per record, so output that is
cut short (Ctrl-C, a full disk) still parses up to its last line. Never prints to the
terminal itself: the CLI hands it the streams.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from json.encoder import encode_basestring
from typing import IO, Any, Protocol

import numpy as np

from .dedup import Decision
from .fingerprint import format_fingerprint
from .read import plain_name, printable

TABULAR = ("tsv", "csv")


#: json.dumps(record, ensure_ascii=False) makes an encoder a call (4.5 us a report
#: record of 7 fields; this one's encode: 2.6 us). The same text; it keeps no state.
_JSON = json.JSONEncoder(ensure_ascii=False)


def _json_line(record: dict[str, Any]) -> bytes:
    try:
        return (_JSON.encode(record) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # an id stored by a library run with a byte that is not UTF-8
        return (_JSON.encode(_printable(record)) + "\n").encode("utf-8")


def _printable(value: Any) -> Any:
    """A record's or row's values with each str as read.printable writes it (a byte that is
    not UTF-8 as \\xNN), for the ids that no reader made so: an index saved by the library
    holds them as given, and listing one raised UnicodeEncodeError halfway (a review)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: _printable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_printable(v) for v in value)
    return value


#: TSV's escapes, and what needs one: most fields (numbers, hex, ids) have none.
#: NUL too: written raw, it made the whole listing binary to grep ("binary file matches").
_TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0"})
_TSV_SPECIAL = re.compile(r"[\\\t\n\r\0]")


def tsv_field(value: object) -> str:
    text = "" if value is None else value if isinstance(value, str) else str(value)
    return text.translate(_TSV_ESCAPES) if _TSV_SPECIAL.search(text) else text


def fingerprint_lines(ids: Sequence[str], fps: Sequence[int | None], bits: int, fmt: str) -> bytes:
    """`fingerprint`'s output: FINGERPRINT<TAB>ID lines ("-": none), or JSONL records
    {"id": ..., "fingerprint": ...} (null: none), byte for byte as RecordWriter writes
    them, at a few tenths of a microsecond a line: TSV's escapes are looked for once in
    all the ids, and a record is its id as a JSON string (json's own encoder of one)
    in a fixed frame (json.dumps of each record took ~2.9 us)."""
    hexes = ["-" if fp is None else format_fingerprint(fp, bits) for fp in fps]
    if fmt == "tsv":
        if _TSV_SPECIAL.search("".join(ids)):
            ids = [tsv_field(i) for i in ids]
        return "".join([f"{hex_fp}\t{i}\n" for hex_fp, i in zip(hexes, ids)]).encode()
    if fmt != "jsonl":
        raise ValueError(f"fingerprint lines are tsv or jsonl, not {fmt!r}")
    frame = '{{"id": {}, "fingerprint": {}}}\n'.format
    values = ["null" if hex_fp == "-" else f'"{hex_fp}"' for hex_fp in hexes]
    return "".join(map(frame, map(encode_basestring, ids), values)).encode("utf-8")


def numbered_fingerprint_lines(name: str, first: int, fps: np.ndarray, found: np.ndarray, fmt: str) -> bytes:
    """fingerprint_lines of the ids f"{name}:{n}", n = first, first + 1, ... (the lines of
    the file `name`, printable already), of 64-bit fingerprints as a uint64 array and
    `found` (False: none): the same bytes, in one compiled call (_textcore.c), without a
    Python object a line. A line number needs no escape, so its name's prefix is escaped
    once for all of them."""
    from ._textcore import numbered_lines

    prefix = f"{name}:"
    if fmt == "tsv":
        escaped = tsv_field(prefix)
    elif fmt == "jsonl":
        escaped = encode_basestring(prefix)[1:-1]
    else:
        raise ValueError(f"fingerprint lines are tsv or jsonl, not {fmt!r}")
    return numbered_lines(escaped.encode(), first, fps, found, fmt == "jsonl")  # type: ignore[no-any-return]


class RecordWriter:
    """Rows of named fields as JSONL, CSV (with a header) or TSV (with a header).

    TSV escapes backslash, tab, newline, CR and NUL inside fields as \\\\, \\t, \\n, \\r
    and \\0.
    """

    def __init__(self, stream: IO[bytes], fmt: str, columns: tuple[str, ...]) -> None:
        if fmt not in ("jsonl", *TABULAR):
            raise ValueError(f"unknown record format {fmt!r}")
        self.stream, self.fmt, self.columns = stream, fmt, columns
        # A stream that shows what it is given (stdout on a terminal) names the escapes
        # its CSV fields take first, so that a newline in an id cannot split a row there.
        self._escapes = getattr(stream, "field_escapes", None)
        if fmt in TABULAR:
            self._write_row(columns)

    def _write_row(self, values: tuple[object, ...]) -> None:
        try:
            data = self._line(values).encode("utf-8")
        except UnicodeEncodeError:  # see _printable
            data = self._line(_printable(values)).encode("utf-8")
        self.stream.write(data)

    def _line(self, values: tuple[object, ...]) -> str:
        if self.fmt == "tsv":
            line = "\t".join([tsv_field(v) for v in values]) + "\n"
        else:
            # csv quotes a field holding a character of its line terminator: with "\r\n",
            # a lone CR is quoted too (with "\n" it was not, and the row broke there).
            buf = io.StringIO()
            if self._escapes is not None:
                values = tuple(v.translate(self._escapes) if isinstance(v, str) else v for v in values)
            csv.writer(buf, lineterminator="\r\n").writerow(["" if v is None else v for v in values])
            line = buf.getvalue()[:-2] + "\n"
        return line

    def write(self, record: dict[str, Any]) -> None:
        if self.fmt == "jsonl":
            self.stream.write(_json_line(record))
        else:
            self._write_row(tuple(record[c] for c in self.columns))

    def flush(self) -> None:
        self.stream.flush()


def format_for(path: str, default: str = "jsonl") -> str:
    """The record format a file name asks for: .csv, .tsv, else `default`."""
    for fmt in TABULAR:
        if plain_name(path).lower().endswith(f".{fmt}"):
            return fmt
    return default


def fingerprint_text(fp: int | None, bits: int) -> str | None:
    return None if fp is None else format_fingerprint(fp, bits)


class UniqueWriter:
    """Unique (and empty) documents in their input form: the line, the JSONL record
    unchanged, or a directory member's path; with `names` (on a terminal), a member's
    path as `names` shows it: a crawled file's name held an escape sequence that drove
    the terminal (a review). A member is known by its id, its path as printable() gives
    it."""

    def __init__(
        self, stream: IO[bytes], *, keep_empty: bool = True, names: Callable[[bytes], bytes] | None = None
    ) -> None:
        self.stream, self.keep_empty, self.names = stream, keep_empty, names

    def write(self, decision: Decision) -> None:
        if decision.status == "unique" or (decision.status == "empty" and self.keep_empty):
            raw = decision.doc.raw
            if self.names is not None and decision.doc.id == printable(os.fsdecode(raw)):
                raw = self.names(raw)
            self.stream.write(raw + b"\n")

    def flush(self) -> None:
        self.stream.flush()


DUPLICATE_COLUMNS = ("id", "duplicate_of", "distance", "fingerprint", "duplicate_of_fingerprint")


class DuplicatesWriter:
    """One record per duplicate: its id, the kept id it duplicates, distance, fingerprints.

    With `run_of` (kept row -> the name of the run that kept it, for a stored index), a
    last field, `duplicate_of_run`, says which run kept the document it duplicates."""

    def __init__(
        self,
        stream: IO[bytes],
        fmt: str,
        bits: int,
        kept_fingerprints: Any,
        run_of: Callable[[int], str] | None = None,
    ) -> None:
        columns = DUPLICATE_COLUMNS + (("duplicate_of_run",) if run_of else ())
        self.out = RecordWriter(stream, fmt, columns)
        self.bits, self.kept, self.run_of = bits, kept_fingerprints, run_of

    def write(self, decision: Decision) -> None:
        if decision.status != "duplicate":
            return
        assert decision.row is not None
        record = {
            "id": decision.doc.id,
            "duplicate_of": decision.duplicate_of,
            "distance": decision.distance,
            "fingerprint": fingerprint_text(decision.fingerprint, self.bits),
            "duplicate_of_fingerprint": fingerprint_text(self.kept[decision.row], self.bits),
        }
        if self.run_of is not None:
            record["duplicate_of_run"] = self.run_of(decision.row)
        self.out.write(record)

    def flush(self) -> None:
        self.out.flush()


REPORT_COLUMNS = ("id", "fingerprint", "status", "duplicate_of", "distance")


class ReportWriter:
    """One record per document, in input order: id, fingerprint, status, duplicate_of,
    distance; with `run_of` (as DuplicatesWriter takes it), `duplicate_of_run` too: an
    index's ids may repeat from night to night (`-:1` on stdin), its run tells them apart."""

    def __init__(
        self, stream: IO[bytes], fmt: str, bits: int, run_of: Callable[[int], str] | None = None
    ) -> None:
        self.out = RecordWriter(stream, fmt, REPORT_COLUMNS + (("duplicate_of_run",) if run_of else ()))
        self.bits, self.run_of = bits, run_of

    def write(self, decision: Decision) -> None:
        record = {
            "id": decision.doc.id,
            "fingerprint": fingerprint_text(decision.fingerprint, self.bits),
            "status": decision.status,
            "duplicate_of": decision.duplicate_of,
            "distance": decision.distance,
        }
        if self.run_of is not None:
            duplicate = decision.status == "duplicate" and decision.row is not None
            record["duplicate_of_run"] = self.run_of(decision.row) if duplicate else None
        self.out.write(record)

    def flush(self) -> None:
        self.out.flush()


@dataclass
class Groups:
    """The duplicate groups, collected as decisions arrive: kept row -> its duplicates.

    Only documents in a group are held (id, fingerprint, distance), never their text.
    """

    members: dict[int, list[tuple[str, int, int]]] = field(default_factory=dict)

    def add(self, decision: Decision) -> None:
        if decision.status == "duplicate":
            assert decision.row is not None and decision.fingerprint is not None
            entry = (decision.doc.id, decision.distance or 0, decision.fingerprint)
            self.members.setdefault(decision.row, []).append(entry)

    def __len__(self) -> int:
        return len(self.members)

    def sizes(self) -> dict[int, int]:
        """Group size (the kept document and its duplicates) -> how many groups have it."""
        return group_sizes(len(m) + 1 for m in self.members.values())

    def rows(
        self, kept_ids: Any, kept_fps: Any, bits: int, runs: RunNames | None = None
    ) -> Iterator[dict[str, Any]]:
        """Flat rows, groups in the kept document's input order: the kept one, then its
        duplicates. With `runs` (a stored index), a last field, `run`: the run that kept
        the kept document, and this run for its duplicates."""
        columns = GROUP_COLUMNS if runs is None else GROUP_RUN_COLUMNS
        for values in self.row_values(kept_ids, kept_fps, bits, runs):
            yield dict(zip(columns, values))

    def row_values(
        self, kept_ids: Any, kept_fps: Any, bits: int, runs: RunNames | None = None
    ) -> Iterator[tuple[Any, ...]]:
        """rows' values, in GROUP_COLUMNS' order (GROUP_RUN_COLUMNS' with `runs`)."""
        for group, row in enumerate(sorted(self.members), 1):
            kept_run = () if runs is None else (runs.run_of(row),)
            yield (group, "kept", kept_ids[row], 0, format_fingerprint(kept_fps[row], bits), *kept_run)
            run = () if runs is None else (runs.run_name,)
            for doc_id, d, fp in self.members[row]:
                yield (group, "duplicate", doc_id, d, format_fingerprint(fp, bits), *run)

    def tsv_blocks(
        self, kept_ids: Any, kept_fps: Any, bits: int, runs: RunNames | None = None
    ) -> Iterator[bytes]:
        """rows as TSV lines without the header, byte for byte as RecordWriter writes
        them, TSV_BLOCK_ROWS at a time (a dict and a write a row: 0.12 s for 33,600 rows)."""
        values = self.row_values(kept_ids, kept_fps, bits, runs)
        while block := list(itertools.islice(values, TSV_BLOCK_ROWS)):
            try:
                data = _tsv_block(block).encode("utf-8")
            except UnicodeEncodeError:  # see _printable
                data = _tsv_block(_printable(block)).encode("utf-8")
            yield data

    def records(
        self, kept_ids: Any, kept_fps: Any, bits: int, runs: RunNames | None = None
    ) -> Iterator[dict[str, Any]]:
        """One nested record per group, for --format jsonl; with `runs`, `kept_run` too
        (its duplicates are this run's)."""
        for group, row in enumerate(sorted(self.members), 1):
            record: dict[str, Any] = {
                "group": group,
                "kept": kept_ids[row],
                "fingerprint": format_fingerprint(kept_fps[row], bits),
            }
            if runs is not None:
                record["kept_run"] = runs.run_of(row)
            record["duplicates"] = [
                {"id": i, "distance": d, "fingerprint": format_fingerprint(fp, bits)}
                for i, d, fp in self.members[row]
            ]
            yield record


def _tsv_block(block: list[tuple[Any, ...]]) -> str:
    """Groups.row_values' rows as TSV lines. Only ids and run names are text to escape:
    escapes are looked for in a block's ids at once."""
    ids = [row[2] for row in block]
    if _TSV_SPECIAL.search("".join(ids)):
        ids = [tsv_field(i) for i in ids]
    ran = [f"\t{tsv_field(row[5])}" for row in block] if len(block[0]) > 5 else itertools.repeat("")
    return "".join([f"{g}\t{s}\t{i}\t{d}\t{fp}{r}\n" for (g, s, _, d, fp, *_), i, r in zip(block, ids, ran)])


class RunNames(Protocol):
    """What the group listing needs of a stored index (store.IndexSession)."""

    run_name: str

    def run_of(self, row: int) -> str: ...


GROUP_COLUMNS = ("group", "status", "id", "distance", "fingerprint")
GROUP_RUN_COLUMNS = GROUP_COLUMNS + ("run",)  # with --index
#: Rows a piece of Groups.tsv_blocks.
TSV_BLOCK_ROWS = 4096


def group_sizes(sizes: Iterable[int]) -> dict[int, int]:
    """size -> how many groups have it."""
    out: dict[int, int] = {}
    for size in sizes:
        out[size] = out.get(size, 0) + 1
    return out


@dataclass
class Summary:
    """Counts for the run; `errors` counts input problems, `skipped` inputs left out."""

    documents: int = 0
    unique: int = 0
    duplicates: int = 0
    empty: int = 0
    skipped: int = 0
    errors: int = 0
    warnings: int = 0
    invalid_utf8: int = 0
    groups: int = 0
    #: the most documents in one group (a kept one and its duplicates), and how many
    #: groups have each size: chaining shows here first
    largest_group: int = 0
    group_sizes: dict[int, int] = field(default_factory=dict)
    seconds: float = 0.0

    def count(self, decision: Decision) -> None:
        self.documents += 1
        if decision.status == "unique":
            self.unique += 1
        elif decision.status == "duplicate":
            self.duplicates += 1
        else:
            self.empty += 1

    def set_groups(self, sizes: dict[int, int]) -> None:
        self.groups = sum(sizes.values())
        self.group_sizes = dict(sorted(sizes.items()))
        self.largest_group = max(sizes, default=0)

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 3)
        out["docs_per_second"] = round(self.docs_per_second, 1)
        return out

    def line(self) -> str:
        return (
            f"{counted(self.documents, 'document')}: {self.unique:,} unique, "
            f"{counted(self.duplicates, 'duplicate')} in {counted(self.groups, 'group')}, "
            f"{self.empty:,} empty, {self.skipped:,} skipped, {counted(self.errors, 'error')}; "
            f"{self.seconds:.2f} s ({self.docs_per_second:,.0f} docs/s)"
        )


def counted(n: int, noun: str) -> str:
    """A count and its noun: "1 document", "2 documents", "1,000 documents"."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
