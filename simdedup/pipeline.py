"""The stages joined as the commands run them: read -> fingerprint (in worker processes
where that pays) -> decide (in a thread beside the reading), a batch at a time, in input
order; and `fingerprint`'s printing in its workers. Never prints, never exits, and
imports no click: cli.py writes what this hands back and turns signals into exits.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from .dedup import DECIDE_BATCH, Decision, Deduplicator, batches
from .fingerprint import FeatureHasher, compiled_serves, span_fingerprints, text_batch_fingerprints
from .parallel import (
    AUTO,
    chunk_batches,
    chunk_chars,
    chunk_task,
    default_jobs,
    fingerprint_batches,
    ordered_map,
)
from .read import (
    CHUNK_BYTES,
    STDIN,
    AsciiLines,
    Chunk,
    Document,
    Problem,
    ReadOptions,
    Span,
    SpanReader,
    Streams,
    Stretch,
    is_stream,
    plain_lines,
    printable,
    read_chunks,
    read_documents,
)
from .report import fingerprint_lines, numbered_fingerprint_lines
from .settings import Settings


class Hold(Protocol):
    """What holds a signal while a decision goes from one stage to the next whole
    (cli._Writing): with `now` set, a signal is held; done() unsets it and raises what
    came meanwhile."""

    now: bool

    def done(self) -> None: ...


class _NoHold:
    """A Hold for callers without one: a signal is raised where it lands."""

    now = False

    def done(self) -> None:
        self.now = False


#: Documents read, fingerprinted and decided together (dedup.DECIDE_BATCH).
PIPELINE_BATCH = DECIDE_BATCH
#: ... and at most about this many characters of text (a directory's long files).
PIPELINE_CHARS = 2 << 20


def fingerprinted(
    sources: list[str],
    stdin: Streams,
    read_options: ReadOptions,
    settings: Settings,
    jobs: int,
    sketches: bool,
    on_problem: Callable[[Problem], None],
    raw: bool = True,
) -> Iterator[tuple[Any, ...]]:
    """read -> batches -> fingerprints (and sketches) in `jobs` processes: (batch, its
    fingerprints, ...) as fingerprint_batches gives them, each input problem reported
    before the batch it is in. Files and stdin are read in chunks of lines that the
    workers parse too (read.read_chunks, parallel.chunk_batches), so the main process
    only moves bytes (of a plain file none: the workers read its Spans) and documents
    without their texts (and with raw=False without their input form, Document.raw);
    a directory a document at a time. From stdin, a batch also ends where its writer
    goes quiet (Lines.waiting). --jobs 0 starts workers only where fingerprinting is
    the slow part (chunk_jobs with `timed`). Close the iterator to stop the workers."""
    idle = idle_of(sources, stdin)
    jobs_here = chunk_jobs(sources, jobs, timed=True)
    if jobs_here is None:
        docs = read_documents(sources, read_options, on_problem, stdin)
        return batched(docs, settings, jobs, sketches, idle)
    setup = functools.partial(chunk_task, settings, read_options, sketches, raw)
    chunks = read_chunks(sources, read_options, stdin, DECIDED_CHUNK_BYTES)
    answers = ordered_map(setup, chunks, jobs_here, idle, chunk_chars)
    return chunk_batches(answers, PIPELINE_BATCH, on_problem, idle)


#: Bytes of input per chunk for the commands that decide (~400 documents of ~640
#: bytes): chunk_batches joins them into batches of PIPELINE_BATCH, and smaller chunks
#: share a short input out among the workers (Chinese text: ~0.15 s of work each).
DECIDED_CHUNK_BYTES = 256 << 10


def idle_of(sources: list[str], stdin: Streams) -> Callable[[], bool] | None:
    """What says the input waits on its writer: only a stream can (stdin, a named pipe;
    files never do)."""
    return stdin.waiting if any(map(is_stream, sources)) else None


def batched(
    docs: Iterator[Document], settings: Settings, jobs: int, sketches: bool, idle: Callable[[], bool] | None
) -> Iterator[tuple[Any, ...]]:
    """Batches of PIPELINE_BATCH documents, or fewer where idle() says the input waits
    on its writer, each with its fingerprints (and sketches) from `jobs` processes."""
    cut = batches(docs, PIPELINE_BATCH, flush=idle, chars=PIPELINE_CHARS)
    return fingerprint_batches(cut, settings, jobs, sketches=sketches, idle=idle)


@dataclass
class HandedOut:
    """How many decisions `decisions` handed out, and the last: the one in the caller's
    hands if an interrupt lands between its yield and its writing."""

    count: int = 0
    last: Decision | None = None


def decisions(
    made: Iterator[tuple[Any, ...]],
    dd: Deduplicator,
    idle: Callable[[], bool] | None = None,
    after_batch: Callable[[], None] | None = None,
    out: HandedOut | None = None,
    hold: Hold | None = None,
) -> Iterator[Decision]:
    """Batches with their fingerprints (and sketches: `made`, from fingerprinted) -> keep-first
    decisions, in input order; after_batch() runs once a batch's decisions are all
    taken. Closing this closes `made`.

    Each batch is decided in a thread of its own while this one writes the batch before
    it and reads and fingerprints the next: the index's compiled loops release the GIL,
    so deciding shares the cores with the rest (a 1M-document scan: 7-16% faster). The
    batches are still decided one at a time, in order. A batch is handed back before
    reading on when the input waits on its writer, and on Ctrl-C every batch read so far
    is still decided and handed back before the interrupt goes on. `hold` (the CLI's
    signal handler) holds a signal from a batch's deciding until it is queued, and from
    a decision's handing back until the caller has written it (Hold)."""
    hold = hold or _NoHold()
    deciding: deque[Future[list[Decision]]] = deque()
    given = 0  # how many of deciding[0]'s decisions were handed back

    def handed(keep: int = 0) -> Iterator[Decision]:
        """The decisions of all but the last `keep` batches being decided, in order. A
        KeyboardInterrupt thrown in at a yield (Ctrl-C while the caller writes) leaves
        the rest to be handed back by the next call."""
        nonlocal given
        while len(deciding) > keep:
            decided = deciding[0].result()  # interrupted here, the batch stays queued
            while given < len(decided):
                # A signal from here on is held until the caller has written this one
                # (_Writing): raised between the count and the yield, it lost the
                # decision from every output, though the index kept it (a review).
                hold.now = True
                given += 1
                if out is not None:
                    out.count, out.last = out.count + 1, decided[given - 1]
                yield decided[given - 1]
            # Held between the two: raised in between, as many of the next batch's
            # decisions were skipped, though the index kept them (seen once, with a
            # trace written in between to widen the gap).
            hold.now = True
            deciding.popleft()
            given = 0
            hold.done()
            if after_batch is not None:
                after_batch()

    with contextlib.closing(made), ThreadPoolExecutor(1, thread_name_prefix="decide") as decider:
        try:
            for batch, *results in made:
                # Held until the batch is queued: raised in between, it was decided into
                # the index (and saved) but handed to no output (a review).
                hold.now = True
                deciding.append(decider.submit(dd.decide_many, batch, *results))
                hold.done()
                yield from handed(keep=0 if idle is not None and idle() else 1)
            yield from handed()
        except KeyboardInterrupt:
            # What `made` took but had not handed on yet (parallel.chunk_batches: documents
            # whose problems it reported) is decided too; one that holds none, or has
            # ended, raises the interrupt back.
            throw = getattr(made, "throw", None)  # a generator's
            with contextlib.suppress(KeyboardInterrupt, StopIteration):
                if throw is not None:
                    batch, *results = throw(KeyboardInterrupt())
                    hold.now = True
                    deciding.append(decider.submit(dd.decide_many, batch, *results))
                    hold.done()
            yield from handed()
            raise


def chunk_jobs(sources: list[str], jobs: int, timed: bool = False) -> int | None:
    """The processes that fingerprint `sources` read in chunks; None where one is a
    directory. --jobs 0, for stdin (workers start only once a second chunk comes) and
    for files that hold CHUNK_WORKERS_FROM bytes: one per CPU (`fingerprint`, whose main
    process only moves bytes), or with `timed` (the commands that do something with
    each document in this process) only where fingerprinting is the slow part: AUTO,
    for ordered_map to time the first chunks with text (parallel.chunk_chars). English
    text in workers was slower there: `scan` of 1M lines took 29.0-29.7 s against
    24.5-26.1 s in one process, which already keeps more than one CPU busy (the
    compiled core and the index searches run outside the GIL, beside the decisions);
    `index query` of 200,000, 4.6-4.9 s against 4.6-4.7 s. Else 1."""
    if any(source != STDIN and os.path.isdir(source) for source in sources):
        return None
    if jobs != AUTO:
        return jobs
    streams = any(map(is_stream, sources))
    if not streams and _input_bytes(sources) < CHUNK_WORKERS_FROM:
        return 1
    return AUTO if timed else default_jobs()


def _input_bytes(sources: list[str]) -> int:
    """The bytes of the regular files among `sources` (compressed ones: as stored)."""
    size = 0
    for source in sources:
        if source == STDIN:
            continue
        with contextlib.suppress(OSError):
            info = os.stat(source)
            size += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return size


#: --jobs 0 reads named files with workers from this many bytes on.
CHUNK_WORKERS_FROM = 2 * CHUNK_BYTES


class Unnumbered(NamedTuple):
    """A Stretch's lines fingerprinted, one a line (`found` False: none), and its
    problems as (line, kind, message), line 0 its first: for numbered to print once
    the lines before it are counted. `first`: the Stretch's. `lost`: it could not be
    read (its Problem has no line number yet)."""

    name: str
    first: int
    fps: np.ndarray
    found: np.ndarray
    problems: list[tuple[int, str, str]]
    lost: Problem | None = None


def chunk_printer(
    settings: Settings, read_options: ReadOptions, fmt: str
) -> Callable[[Chunk | Span | Stretch | Problem], tuple[bytes, list[Problem]] | Unnumbered]:
    """A worker's task for `fingerprint` (parallel.ordered_map): parallel.chunk_task's
    documents and fingerprints, printed, with the input problems; of a Stretch, left
    for numbered to print (Unnumbered). Plain ASCII lines (read.plain_lines) go from
    the chunk's bytes to the printed lines in two compiled calls, with no Document, id
    or int a line: the same bytes, in 0.6 of the time (benchmarks/README.md, "Stop 32");
    other plain lines, decoded at once, without a Document either."""
    fingerprinted = chunk_task(settings, read_options, sketches=False, raw=False)
    hasher = FeatureHasher(settings.bits, settings.seed)
    spans = SpanReader()  # each process reads its Spans' bytes itself
    fast = compiled_serves(settings)

    def compiled(chunk: Chunk) -> tuple[np.ndarray, np.ndarray] | None:
        if not fast or (lines := plain_lines(chunk, read_options)) is None:
            return None
        if isinstance(lines, AsciiLines):
            fps, found, done = span_fingerprints(lines.data, lines.starts, lines.ends)
            return (fps, found) if done.all() else None  # else a word too long for the core
        made = text_batch_fingerprints(lines, settings, hasher, compiled=True)
        return np.array([fp or 0 for fp in made], np.uint64), np.array([fp is not None for fp in made], bool)

    def stretched(stretch: Stretch) -> Unnumbered:
        data = spans.stretch(stretch)
        if isinstance(data, Problem):
            return Unnumbered(stretch.name, stretch.first, _NO_FPS, _NO_FPS.astype(bool), [], data)
        # Read as lines from line 2 on (the first is checked for other formats): a
        # non-JSONL file's line gives one document, named by its number, and problems
        # named so too; the numbers are taken back to the Stretch's own.
        chunk = Chunk(stretch.name, _STRETCH_LINE, data)
        if (made := compiled(chunk)) is not None:
            return Unnumbered(stretch.name, stretch.first, *made, [])
        problems, _, fps = fingerprinted(chunk)
        at = [(int(p.where.rpartition(":")[2]) - _STRETCH_LINE, p.kind, p.message) for p in problems]
        values = np.array([fp or 0 for fp in fps or []], np.uint64)
        found = np.array([fp is not None for fp in fps or []], bool)
        return Unnumbered(stretch.name, stretch.first, values, found, at)

    def printed(item: Chunk | Span | Stretch | Problem) -> tuple[bytes, list[Problem]] | Unnumbered:
        if isinstance(item, Stretch):
            return stretched(item)
        if isinstance(item, Span):
            item = spans(item)
        if isinstance(item, Chunk) and (made := compiled(item)) is not None:
            return numbered_fingerprint_lines(printable(item.name), item.first, *made, fmt), []
        problems, docs, fps = fingerprinted(item)
        return fingerprint_lines([doc.id for doc in docs], fps or [], settings.bits, fmt), problems

    return printed


_NO_FPS = np.zeros(0, np.uint64)
_STRETCH_LINE = 2


def numbered(
    answers: Iterator[tuple[bytes, list[Problem]] | Unnumbered], fmt: str
) -> Iterator[tuple[bytes, list[Problem]]]:
    """chunk_printer's answers, in order, Stretches' printed with their line numbers:
    a file's first Stretch has its number, each next one starts after the last line of
    the one before. Where one could not be read, the rest of that file is not either."""
    line, lost = 0, False
    try:
        for answer in answers:
            if not isinstance(answer, Unnumbered):
                yield answer
                continue
            if answer.first:  # a file's first Stretch
                line, lost = answer.first, False
            if lost:
                continue
            if answer.lost is not None:
                lost = True
                said = f"{answer.lost.message}: lines {line:,} on are not read"
                yield b"", [Problem(f"{answer.name}:{line}", answer.lost.kind, said)]
                continue
            shown = printable(answer.name)
            problems = [Problem(f"{shown}:{line + n}", kind, message) for n, kind, message in answer.problems]
            yield numbered_fingerprint_lines(shown, line, answer.fps, answer.found, fmt), problems
            line += len(answer.fps)
    finally:
        if hasattr(answers, "close"):
            answers.close()
