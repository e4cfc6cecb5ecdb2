"""Fingerprint (and sketch) batches of documents in worker processes, in input order.

A pure mapping from batches of Documents to their fingerprints, and their verification
sketches when asked: the same results, in the same order, for any number of jobs (a
fingerprint or a sketch never depends on its batch or process). Workers get the
Settings once, build their own FeatureHasher, ignore Ctrl-C (the parent decides what an
interrupt means) and die with the parent. Never prints.

ordered_map, the one driver of the workers, runs any task over a stream of items in
them, in order: the commands give them whole chunks of lines of files and stdin
(read.read_chunks) to parse and fingerprint (chunk_task; `fingerprint` formats its
output there too), so that the main process only moves bytes, and of a plain file
none: its Spans, which the workers read themselves; chunk_batches joins the
answers into the batches that deciding takes. fingerprint_batches serves directories,
read a document at a time: it maps pieces of their batches and joins the answers back.
"""

from __future__ import annotations

import atexit
import contextlib
import numbers
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache, partial
from itertools import chain
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import signals
from .fingerprint import FeatureHasher, HashFunc, check_hasher, fingerprint_work
from .read import (
    BARRIER,
    FIRST_CHUNKS,
    Chunk,
    Document,
    Problem,
    ReadOptions,
    Span,
    SpanReader,
    plain_documents,
    read_chunk,
)
from .settings import Settings
from .sketch import fingerprints_and_sketches
from .status import WorkerError

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

#: Documents a worker is given at a time: a decided batch (pipeline.PIPELINE_BATCH, 4,096)
#: goes out in pieces, so that a short input still keeps every worker busy.
PIECE = 256
#: Pieces a worker may have out, the one it works on included: enough to keep every
#: worker busy while the parent reads and decides, few enough that memory stays flat
#: (2,048 documents per worker; 24 or 32 measured no faster with batches of 4,096).
PIECES_PER_JOB = 8
#: Bytes a worker's connection may hold unread: its 8 pieces of 256 ~640-byte documents
#: pickle to ~1.4 MB.
SEND_BUFFER = 4 << 20
#: jobs=AUTO: worker processes only where fingerprinting is the slow part.
AUTO = 0
#: Below this many seconds per character of text (English words: ~0.015e-6; Chinese
#: with rjieba: ~0.6e-6), handing texts to workers costs the main process about as much
#: as fingerprinting them itself, so they stay here.
WORKERS_PAY_OFF = 0.2e-6
#: After Ctrl-C, how long the batches already handed to workers may take to come back.
DRAIN_SECONDS = 10.0
#: chunk_task's task: a Chunk, a Span or a Problem in; (problems, documents, Result) out.
ChunkTask = Callable[["Chunk | Span | Problem"], "tuple[list[Problem], list[Document], Result | None]"]

#: What a worker needs of a document: its text, or the features it came with.
Work = Sequence[str | dict[str, float]]
#: What a worker makes of a batch: fingerprints, and with sketches=True the (n, bytes)
#: uint8 sketches of the texts too (zeros for documents given as features) and their
#: head fingerprints (sketch.fingerprints_and_sketches).
Result = list[int | None] | tuple[list[int | None], np.ndarray, list[int | None]]


def default_jobs() -> int:
    """The CPUs this process may run on (os.process_cpu_count on Python 3.13+)."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def batch_results(
    work: Work, settings: Settings, hasher: HashFunc, sketches: bool, compiled: bool = False
) -> Result:
    """A batch's fingerprints, and with `sketches` their texts' verification sketches
    (from the same pass over the texts); `compiled`: through the compiled core where it
    serves (fingerprint.compiled_core)."""
    if sketches:
        return fingerprints_and_sketches(work, settings, hasher, compiled)
    return fingerprint_work(work, settings, hasher, compiled)


def fingerprint_batches(
    batches: Iterable[Sequence[Document]],
    settings: Settings,
    jobs: int = 1,
    sketches: bool = False,
    piece: int = PIECE,
    idle: Callable[[], bool] | None = None,
) -> Iterator[tuple[Any, ...]]:
    """(batch, its fingerprints) for every batch, in input order, with `jobs` processes;
    with sketches=True, (batch, fingerprints, sketches, heads) (see Result). A batch that
    is no Sequence (an iterator) is read into a list, which is handed back.

    jobs=1 works in this process, a batch at a time (so does AUTO in a daemonic process,
    such as a Pool's worker, which cannot start workers). jobs=AUTO times the first piece
    here and goes on with default_jobs() workers only if it took WORKERS_PAY_OFF seconds
    a character or more (the results are the same either way; with workers, ordered_map
    does the next piece here too, as it does any first item). With workers, batches are
    cut into pieces of at most `piece` documents that ordered_map hands out, so that a
    few large batches still keep every worker busy, and its answers are joined back into
    batches here: the first piece is done here (a short input needs no pool, and forked
    workers inherit what it loaded, such as OpenCC's and rjieba's dictionaries), at most
    jobs * PIECES_PER_JOB pieces are out at once, the next batch is read only once no
    batch is back in part, and a batch is handed back as soon as it is next in order and
    all its pieces are back, so a slow input stream is not held back; and with `idle`
    (read.Lines.waiting), every batch out is handed back before reading on while idle()
    says the input waits on its writer. On KeyboardInterrupt the batches already out are
    collected (for up to DRAIN_SECONDS) and handed back before the interrupt is raised
    again, so that every document read so far can still be decided. Close the iterator
    (contextlib.closing) to stop the workers early; they also stop when it is garbage.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, numbers.Integral) or jobs < 0:
        raise ValueError(f"jobs is an int >= 0 (0: one per CPU), not {jobs!r}")
    if isinstance(piece, bool) or not isinstance(piece, numbers.Integral) or piece < 1:
        raise ValueError(f"piece is a number of documents, 1 or more, not {piece!r}")
    jobs, piece = int(jobs), int(piece)  # numpy's integers too
    check_hasher(settings, None)
    if jobs != 1 and _daemonic():
        # A daemonic process (a multiprocessing Pool's worker; Dask's, under a nanny)
        # cannot start workers: AUTO works here, where it started them once it timed
        # Chinese text, and failed deep in multiprocessing (a review).
        if jobs != AUTO:
            raise ValueError(f"jobs={jobs} in a daemonic process, which cannot start workers: jobs=1 there")
        jobs = 1
    setup = partial(_batch_task, settings, sketches)
    cut: deque[tuple[Sequence[Document], int]] = deque()  # batches read, with their number of pieces
    ends = [True]  # whether the last piece taken ends its batch

    def pieces() -> Iterator[Work]:
        for batch in batches:
            if not isinstance(batch, Sequence):  # an iterator, handed back used up (a trial)
                batch = list(batch)
            # jobs as decided by the time the batch is read (AUTO: after the first piece).
            # In this process a batch goes whole: fingerprinting is fastest by the batch.
            split = [batch] if jobs == 1 else _pieces(batch, piece)
            cut.append((batch, len(split)))
            for n, docs in enumerate(split, 1):
                ends[0] = n == len(split)
                yield _work(docs)

    work = pieces()
    done: list[Result] = []
    if jobs == AUTO:
        first = next(work, None)
        if first is None:
            return
        started = time.perf_counter()
        done.append(setup()(first))
        chars = sum(len(w) if isinstance(w, str) else len(w) * 8 for w in first)
        jobs = _jobs_paid_for((time.perf_counter() - started) / max(1, chars))
    results: list[Result] = []  # the answers back so far of the next batch to hand back

    def between() -> bool:
        # Whether every answer out comes back before the next piece is taken: never inside
        # a batch (its next piece reads nothing); before the next batch is read, while a
        # batch is back in part (so that no more is read ahead than whole batches out),
        # and while idle() says reading would wait on the input.
        return ends[0] and (bool(results) or (idle is not None and idle()))

    with contextlib.closing(ordered_map(setup, work, jobs, between)) as answers:
        for result in chain(done, answers):
            results.append(result)
            batch, count = cut[0]
            if len(results) == count:
                cut.popleft()
                yield _as_tuple(batch, _joined(results))
                results.clear()


def _never() -> bool:
    return False


def _jobs_paid_for(seconds_a_char: float) -> int:
    """jobs=AUTO's answer once text took `seconds_a_char` here: default_jobs() where
    that is WORKERS_PAY_OFF or more, else 1."""
    return default_jobs() if seconds_a_char >= WORKERS_PAY_OFF else 1


#: ordered_map's jobs=AUTO times this many items with text, and goes by the fastest: the
#: first one's costs of a first time (16 ms for 64 KiB of short English lines in one
#: process, where the next chunk took 0.14 us a character) do not start workers for
#: English text, nor does jieba's dictionary loading decide for Chinese. A file's first
#: chunks are small for it (read.FIRST_CHUNKS).
AUTO_SAMPLES = FIRST_CHUNKS


def chunk_chars(item: Chunk | Span | Problem) -> int:
    """The characters of a Chunk's or a Span's text (its UTF-8 bytes but the
    continuation bytes); 0 for a Problem: what ordered_map's jobs=AUTO weighs a chunk's
    time by. A Span is read again for it, as only the first few are asked about."""
    if isinstance(item, Span):
        with contextlib.closing(SpanReader()) as read:
            item = read(item)
    if isinstance(item, Problem):
        return 0
    data = np.frombuffer(item.data, np.uint8)
    return len(data) - int(np.count_nonzero((data & 0xC0) == 0x80))


def _pieces(batch: Sequence[Document], size: int) -> list[Sequence[Document]]:
    return [batch[i : i + size] for i in range(0, len(batch), size)] or [batch]


def _joined(results: list[Result]) -> Result:
    """One Result of a batch from the Results of its pieces, in order."""
    if len(results) == 1:
        return results[0]
    if isinstance(results[0], tuple):
        parts = cast(list[tuple[list[int | None], np.ndarray, list[int | None]]], results)
        return (
            [fp for fps, _, _ in parts for fp in fps],
            np.concatenate([sketches for _, sketches, _ in parts]),
            [head for _, _, heads in parts for head in heads],
        )
    return [fp for fps in cast(list[list[int | None]], results) for fp in fps]


def ordered_map(
    setup: Callable[[], Callable[[Any], Any]],
    items: Iterable[Any],
    jobs: int,
    idle: Callable[[], bool] | None = None,
    chars: Callable[[Any], int] | None = None,
) -> Iterator[Any]:
    """task(item) for every item, in order, where task = setup(): in this process when
    jobs == 1, else in `jobs` worker processes, each with a task of its own, fed round
    robin with at most jobs * PIECES_PER_JOB items out at once (so memory stays flat),
    and every answer handed back before the next item is taken while idle() says not to
    take it yet (read.Lines.waiting: taking it would wait on the input). The first item
    is done here before the workers start: they inherit what it loaded (jieba's
    dictionary), and an input of one item starts none. jobs=AUTO (with `chars`, the
    characters of text of an item) does items here until AUTO_SAMPLES of them had text,
    and goes on with default_jobs() workers only if each took WORKERS_PAY_OFF seconds a
    character or more. `setup` must pickle where processes are not forked. Close the
    iterator to stop the workers early. On Ctrl-C, what they finish within
    DRAIN_SECONDS is handed back before the interrupt goes on; on any other exception
    they are stopped at once."""
    if jobs == AUTO and chars is None:
        raise ValueError("jobs=AUTO weighs an item's time by its characters: give chars")
    idle = idle or _never
    it = iter(items)
    work = (item for item in it if item is not BARRIER)  # the items, where nothing is out
    task = setup()
    timed: list[float] = []  # jobs=AUTO: seconds a character of the items with text so far
    for item in work:
        started = time.perf_counter()
        answer, cut = _done_here(task, item)
        seconds = time.perf_counter() - started
        yield answer
        if cut is not None:
            raise cut
        if jobs != AUTO:
            break
        if (count := cast(Callable[[Any], int], chars)(item)) > 0:
            timed.append(seconds / count)
            if len(timed) == AUTO_SAMPLES:
                jobs = _jobs_paid_for(min(timed))
                break
    else:
        return
    if jobs == 1:
        for item in work:
            answer, cut = _done_here(task, item)
            yield answer
            if cut is not None:
                raise cut
        return
    following = next(work, None)
    if following is None:
        return
    try:
        workers = _Workers(setup, jobs)
    except KeyboardInterrupt:  # as they start: the item taken for them is done here (it was
        yield task(following)  # lost in 1 of 120 traced runs of `filter -j2` stopped by SIGTERM)
        raise
    out: deque[Connection] = deque()  # the worker of each item out, in order
    try:
        try:
            for n, item in enumerate(chain((following,), it)):
                if item is BARRIER:  # every item out done before the next is taken
                    while out:
                        yield workers.receive(out[0], then=out.popleft)
                        _interrupted(workers)
                    continue
                conn = workers.conns[n % jobs]
                workers.send(conn, item, then=partial(out.append, conn))
                while out and (len(out) >= jobs * PIECES_PER_JOB or out[0].poll() or idle()):
                    yield workers.receive(out[0], then=out.popleft)
                    _interrupted(workers)
            while out:
                yield workers.receive(out[0], then=out.popleft)
                _interrupted(workers)
        except KeyboardInterrupt:
            # Raised here or thrown in at a yield (chunk_batches, held_back). Workers ignore
            # the interrupt; hand back what they finish in time, then stop.
            workers.clean = False
            deadline = time.monotonic() + DRAIN_SECONDS
            while out and out[0].poll(max(0.0, deadline - time.monotonic())):
                yield workers.receive(out[0], then=out.popleft)  # a second Ctrl-C: this one goes on
            raise
    except BaseException:
        workers.clean = False
        raise
    finally:
        workers.close()


def _done_here(task: Callable[[Any], Any], item: Any) -> tuple[Any, KeyboardInterrupt | None]:
    """task(item) in this process, and the Ctrl-C that came meanwhile, for the caller
    to raise once the answer is handed on: the item is then done again, whole (a second
    Ctrl-C stops that). Raised at once, it lost the lines of the chunk being done."""
    try:
        return task(item), None
    except KeyboardInterrupt as e:
        return task(item), e


def chunk_task(settings: Settings, read_options: ReadOptions, sketches: bool, raw: bool = True) -> ChunkTask:
    """A worker's task (ordered_map's setup) for read.read_chunks' items: a Chunk's or
    a Span's (problems, documents, their Result); a Problem of the reading, passed on in
    its place. The documents come back without their texts, which only fingerprinting
    needs: half the bytes to send; with raw=False without their input form either
    (Document.raw, which only writing the unique documents back needs): the other half."""
    hasher = FeatureHasher(settings.bits, settings.seed)
    spans = SpanReader()  # each process reads its Spans' bytes itself

    def task(item: Chunk | Span | Problem) -> tuple[list[Problem], list[Document], Result | None]:
        if isinstance(item, Span):
            item = spans(item)
        if isinstance(item, Problem):
            return [item], [], None
        # Plain lines: ASCII goes to the compiled core in the chunk's bytes, never decoded.
        if (plain := plain_documents(item, read_options, raw)) is not None:
            docs, texts = plain
            return [], docs, batch_results(texts, settings, hasher, sketches, compiled=True)
        found: list[Problem] = []
        docs = list(read_chunk(item, read_options, found.append))
        result = batch_results(_work(docs), settings, hasher, sketches, compiled=True) if docs else None
        kept = [Document(doc.id, "", doc.raw if raw else b"", doc.features) for doc in docs]
        return found, kept, result

    return task


#: Bytes of documents' input forms that a batch of chunk_batches holds, at most about.
BATCH_RAW_BYTES = 32 << 20


def chunk_batches(
    answers: Iterable[tuple[list[Problem], list[Document], Result | None]],
    size: int,
    on_problem: Callable[[Problem], None],
    idle: Callable[[], bool] | None = None,
    raw_bytes: int = BATCH_RAW_BYTES,
) -> Iterator[tuple[Any, ...]]:
    """chunk_task's answers, in order, as fingerprint_batches gives its batches: (batch,
    fingerprints, ...) of `size` documents, as dedup.batches cuts them, or fewer where
    idle() says the input waits on its writer or it ends, or where they hold `raw_bytes`
    or more of input forms (Document.raw, which `filter` writes back: 4,096 records of
    200 KB held 800 MB, a trial); each problem passed to on_problem before the batch it
    is in. Small chunks share out among the workers;
    batches of `size` are what deciding is fastest with. Closing this closes `answers`.

    On KeyboardInterrupt, raised in here (ordered_map's, once the answers out are back)
    or thrown in at a yield (pipeline.decisions), the documents taken but not yet handed on,
    and those of the answers `answers` still holds (held_back: the chunks out with
    workers), are handed on first, as a last batch, so that every document whose problems were
    reported is decided too (a trial: a summary of 12,288 documents said 14,878
    errors, one a line, after Ctrl-C), and the interrupt is raised at the next call."""
    idle = idle or _never
    docs: list[Document] = []
    results: list[Result] = []
    held = 0  # bytes of the input forms of `docs`
    taking = None  # an answer taken from `it`, not reported and kept yet
    it = iter(answers)
    with contextlib.closing(it) if hasattr(it, "close") else contextlib.nullcontext():
        try:
            for taking in chain(it, [None]):  # None: the end, where what is left goes on
                ended = taking is None
                # Reported and kept as one step, a Ctrl-C held until both are done: one in
                # between handed on a batch of 72,062 documents and 64,065 fingerprints
                # (`scan --jobs 2`, in CI), or dropped documents whose problems were
                # reported. One before it, once the answer is taken, leaves it to the
                # except below.
                with signals.held():
                    cut, taken = _take(taking, on_problem, docs, results) if taking else (None, 0)
                    held, taking = held + taken, None
                if cut is not None:
                    raise cut
                # at each yield, `docs` and `results` hold only what is not handed on yet
                while len(docs) >= size or (docs and (ended or idle() or held >= raw_bytes)):
                    batch, docs, results, held = _cut(docs, results, size)
                    yield batch
        except KeyboardInterrupt:
            # and what the stage before holds: the chunks out with workers (ordered_map)
            for answer in chain([taking] if taking else [], held_back(it)):
                with signals.held():
                    _take(answer, on_problem, docs, results)
            if docs:
                yield _as_tuple(docs, _joined(results))
            raise


def _take(
    answer: tuple[list[Problem], list[Document], Result | None],
    on_problem: Callable[[Problem], None],
    docs: list[Document],
    results: list[Result],
) -> tuple[KeyboardInterrupt | None, int]:
    """chunk_batches' step for each chunk_task answer: its problems reported, every one
    (each_then_interrupt), and its documents and Result added to `docs` and `results`.
    The Ctrl-C raised among the reports, and the bytes of the documents' input forms."""
    problems, chunk_docs, result = answer
    cut = signals.each_then_interrupt(on_problem, problems)
    if result is None:
        return cut, 0
    docs.extend(chunk_docs)
    results.append(result)
    return cut, sum([len(doc.raw) for doc in chunk_docs])


def _cut(
    docs: list[Document], results: list[Result], size: int
) -> tuple[tuple[Any, ...], list[Document], list[Result], int]:
    """chunk_batches' next batch of at most `size` of `docs`, with what is left: the
    documents, their Results and the bytes of their input forms. Changes neither list:
    a Ctrl-C as it returns (before chunk_batches keeps its answer) leaves them whole."""
    joined = _joined(results)
    batch, rest = docs[:size], docs[size:]
    left = [_sliced(joined, size, None)] if rest else []
    return _as_tuple(batch, _sliced(joined, 0, size)), rest, left, sum([len(doc.raw) for doc in rest])


def held_back(it: Iterator[Any]) -> Iterator[Any]:
    """What the generator `it` hands on when a KeyboardInterrupt is thrown in at its
    yield, until it raises it again or ends; nothing from an iterator that takes no
    throw, or a generator that has ended. An interrupt raised in a later stage closed
    ordered_map with its workers' chunks unread: 8,192 lines lost in 9 of 120 traced
    runs of `filter -j2` stopped by SIGTERM (benchmarks/interrupts.py)."""
    throw = getattr(it, "throw", None)
    if throw is None:
        return
    with contextlib.suppress(KeyboardInterrupt, StopIteration):
        item = throw(KeyboardInterrupt())
        while True:
            yield item
            item = next(it)


def _sliced(result: Result, start: int, stop: int | None) -> Result:
    """The Result of documents start..stop of a batch, from the batch's."""
    if isinstance(result, tuple):
        fps, sketches, heads = result
        return fps[start:stop], sketches[start:stop], heads[start:stop]
    return result[start:stop]


def _batch_task(settings: Settings, sketches: bool) -> Callable[[Work], Result]:
    """A worker's task for fingerprint_batches: batch_results with a hasher of its own."""
    hasher = FeatureHasher(settings.bits, settings.seed)
    return lambda work: batch_results(work, settings, hasher, sketches, compiled=True)


class _Workers:
    """`jobs` forked processes, each fed whole batches over a pipe of its own, and each
    doing the task its `setup()` returns to every message. No threads in the parent (a
    process pool's feeder and manager threads cost it about twice the CPU per batch):
    the parent writes a batch, and reads each worker's answers in the order it sent them."""

    def __init__(self, setup: Callable[[], Callable[[Any], Any]], jobs: int) -> None:
        # fork: workers start at once, with the parent's modules (and jieba's
        # dictionary, once loaded) already in memory; elsewhere the platform's default.
        context = _multiprocessing().get_context("fork" if sys.platform == "linux" else None)
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        #: every message sent whole and every answer read: workers can be told to stop
        self.clean = True
        #: a Ctrl-C that came while an answer was read, for after it is handed on (receive)
        self.interrupted = False
        try:
            for _ in range(jobs):
                mine, theirs = context.Pipe()
                self.conns.append(mine)
                _widen(mine)
                proc = context.Process(target=_worker_main, args=(theirs, setup, os.getpid()), daemon=True)
                with _ctrl_c_held():
                    proc.start()
                    _STARTED.add(proc)
                theirs.close()
                self.procs.append(proc)
        except BaseException:  # Ctrl-C while starting them: stop those started
            self.clean = False
            self.close()
            raise

    def send(self, conn: Connection, work: Any, then: Callable[[], None] | None = None) -> None:
        """Send `work` to the worker at `conn`, and then() once it is sent: a Ctrl-C
        meanwhile takes effect after both (signals.held). Raised between the two, it
        left a chunk with a worker whose answer no one waited for: 8,192 lines lost in
        15 of 120 traced runs of `filter -j2` stopped by SIGTERM (benchmarks/interrupts.py)."""
        try:
            with signals.held():  # pickled in here too: raised while it was, the item was lost
                conn.send_bytes(pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL))
                if then is not None:
                    then()
        except OSError as e:  # BrokenPipeError, ConnectionResetError: the worker is gone
            raise _died() from e

    def receive(self, conn: Connection, then: Callable[[], None] | None = None) -> Any:
        """The next answer from `conn`, and then() once it is read (ordered_map: it is no
        longer owed). A Ctrl-C while it is read takes effect once it is whole
        (signals.held), and then only after it is handed on (interrupted, for
        ordered_map to raise): raised here, it lost that answer, already taken from the
        pipe, while the ones after it were still handed on, so a chunk of lines was
        missing from the middle of the output (12 runs in 20 of the Ctrl-C test of
        `fingerprint` from a pipe; none in 20 since)."""

        def read() -> Any:
            message = conn.recv_bytes()
            if then is not None:
                then()
            # Unpickled with the signal held too: raised while it was (ms for a chunk's
            # documents), it lost the answer, 8,192 lines (3 of 48 traced runs of `filter -j2`).
            return pickle.loads(message)

        try:
            (ok, answer), cut = signals.done_whole(read)
        except (EOFError, OSError) as e:
            raise _died() from e
        self.interrupted = self.interrupted or cut is not None
        if not ok and answer is MemoryError:
            raise MemoryError("a fingerprinting worker ran out of memory")
        if not ok:
            raise RuntimeError(f"a fingerprinting worker failed:\n{answer}")
        return answer

    def close(self) -> None:
        """Stop every worker: an empty message when the pipes are in step, else SIGKILL
        (a worker ignores SIGTERM, which the whole process group may get)."""
        if self.clean:
            for conn in self.conns:
                with contextlib.suppress(OSError):
                    conn.send_bytes(b"")
        for proc in self.procs:
            if self.clean:
                proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
            proc.join()
            _STARTED.discard(proc)
        for conn in self.conns:
            conn.close()


#: The workers started and not stopped yet, in this process.
_STARTED: set[Any] = set()


def _kill_left_workers() -> None:
    """At exit, kill any worker that an interrupt left running between its start and
    its pool's close: it ignores the SIGTERM with which multiprocessing's own exit
    handler would stop it, and that handler would then wait for it forever."""
    for proc in list(_STARTED):
        with contextlib.suppress(Exception):
            proc.kill()
            proc.join()
    _STARTED.clear()


def _daemonic() -> bool:
    """Whether this process is a daemonic multiprocessing one. A process that has not
    imported multiprocessing is none: a worker started by multiprocessing has it."""
    module = sys.modules.get("multiprocessing")
    return module is not None and bool(module.current_process().daemon)


@cache
def _multiprocessing() -> ModuleType:
    """multiprocessing, imported when the first workers start: with its pipes ~9 ms of
    start-up, which a run in one process (English text, --jobs 1) never needs. Then
    _kill_left_workers is registered to run at exit before multiprocessing's own handler
    (exit handlers run last-registered first, and importing it registers that one)."""
    import multiprocessing.connection

    atexit.register(_kill_left_workers)
    return multiprocessing


def _widen(conn: Connection, size: int = SEND_BUFFER) -> None:
    """Ask for a send buffer that holds a whole batch (the kernel caps it, at
    net.core.wmem_max on Linux), so that handing a worker its next batch does not block
    the parent while the worker is still busy with the one before."""
    import socket  # multiprocessing's pipes have imported it

    with contextlib.suppress(OSError, ValueError):
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
        finally:
            sock.close()


def _died() -> WorkerError:
    return WorkerError(
        "a fingerprinting worker process died (killed, or out of memory?); "
        "--jobs 1 fingerprints without workers"
    )


def _work(docs: Sequence[Document]) -> Work:
    return [doc.text if doc.features is None else doc.features for doc in docs]


def _as_tuple(batch: Sequence[Document], result: Result) -> tuple[Any, ...]:
    return (batch, *result) if isinstance(result, tuple) else (batch, result)


# ---------------------------------------------------------------- the worker side


def _interrupted(workers: _Workers) -> None:
    """Raise the Ctrl-C that came while the answer just handed on was read (receive)."""
    if workers.interrupted:
        workers.interrupted = False
        raise KeyboardInterrupt


#: The signals that stop a run (cli._signals_as_ctrl_c), which workers ignore.
_STOPPING = {signal.SIGINT, signal.SIGTERM} | ({signal.SIGHUP} if hasattr(signal, "SIGHUP") else set())


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP blocked (POSIX): a worker forked meanwhile starts with
    them blocked and ignores them before it unblocks them, so that one as it starts
    cannot raise in it (a traceback on stderr); this process gets it when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _worker_main(conn: Connection, setup: Callable[[], Callable[[Any], Any]], parent: int) -> None:
    """Do the task that setup() returns to each message that arrives and answer (True,
    what it returns), or (False, the traceback) on a bug, or (False, MemoryError) when out
    of memory; stop at an empty message or when the parent is gone."""
    # Ctrl-C reaches the whole process group, and so may SIGTERM and a terminal's SIGHUP:
    # the parent stops the workers.
    for signum in _STOPPING:
        signal.signal(signum, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # forked with them blocked (_ctrl_c_held)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
    _die_with_parent(parent)
    task = setup()
    # Answers go out from a thread of their own, so that this one always reads on: a
    # parent that is sending this worker more (and blocks until it is read) while
    # answers it has not read yet fill the pipe back would otherwise wait forever.
    answers: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    sender = threading.Thread(target=_send_all, args=(conn, answers), daemon=True)
    sender.start()
    try:
        while True:
            try:
                message = conn.recv_bytes()
            except (EOFError, OSError):
                return
            if not message:
                return
            try:
                answer: tuple[bool, object] = (True, task(pickle.loads(message)))
            except MemoryError:  # the machine's limit, not a bug: no traceback to make
                answer = (False, MemoryError)
            except Exception:
                answer = (False, traceback.format_exc())
            answers.put(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    finally:
        answers.put(None)
        sender.join()


def _send_all(conn: Connection, answers: queue.SimpleQueue[bytes | None]) -> None:
    while (answer := answers.get()) is not None:
        try:
            conn.send_bytes(answer)
        except OSError:  # the parent is gone
            return


def _die_with_parent(parent: int) -> None:
    """Linux: ask the kernel for SIGKILL when the parent dies, however it dies (even
    SIGKILL), so no worker outlives a killed run (a worker ignores SIGTERM)."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
