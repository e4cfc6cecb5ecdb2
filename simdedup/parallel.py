"""Fingerprint (and sketch) batches of documents in worker processes, in input order.

A pure mapping from batches of Documents to their fingerprints, and their verification
sketches when asked: the same results, in the same order, for any number of jobs (a
fingerprint or a sketch never depends on its batch or process). Workers get the
Settings once, build their own FeatureHasher, ignore Ctrl-C (the parent decides what an
interrupt means) and die with the parent. Never prints.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from .fingerprint import FeatureHasher, HashFunc, fingerprint_work
from .read import Document
from .settings import Settings
from .sketch import fingerprints_and_sketches
from .status import WorkerError

#: Batches a worker may have waiting beside the one it works on: enough to keep every
#: worker busy while the parent reads and decides, few enough that memory stays flat.
QUEUED_PER_JOB = 2
#: Bytes a worker's connection may hold unread: a batch of 1,024 ~640-byte documents
#: pickles to ~700 KB.
SEND_BUFFER = 4 << 20
#: After Ctrl-C, how long the batches already handed to workers may take to come back.
DRAIN_SECONDS = 10.0

#: What a worker needs of a document: its text, or the features it came with.
Work = list[str | dict[str, float]]
#: What a worker makes of a batch: fingerprints, and with sketches=True the (n, bytes)
#: uint8 sketches of the texts too (zeros for documents given as features).
Result = list[int | None] | tuple[list[int | None], np.ndarray]


def default_jobs() -> int:
    """The CPUs this process may run on (os.process_cpu_count on Python 3.13+)."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def batch_fingerprints(
    docs: Sequence[Document], settings: Settings, hashfunc: HashFunc | None = None
) -> list[int | None]:
    """Fingerprints of one batch of documents (None for empty ones), in one process."""
    return fingerprint_work(_work(docs), settings, hashfunc or FeatureHasher(settings.bits, settings.seed))


def batch_results(work: Work, settings: Settings, hasher: HashFunc, sketches: bool) -> Result:
    """A batch's fingerprints, and with `sketches` their texts' verification sketches
    (from the same pass over the texts)."""
    if sketches:
        return fingerprints_and_sketches(work, settings, hasher)
    return fingerprint_work(work, settings, hasher)


def fingerprint_batches(
    batches: Iterable[Sequence[Document]], settings: Settings, jobs: int = 1, sketches: bool = False
) -> Iterator[tuple[Any, ...]]:
    """(batch, its fingerprints) for every batch, in input order, with `jobs` processes;
    with sketches=True, (batch, fingerprints, sketches) (see Result).

    jobs=1 works in this process. Otherwise the first batch is done here and a process
    pool starts with the second (a single batch is not worth one); at most
    jobs * QUEUED_PER_JOB batches are out at once, and finished batches are handed back
    as soon as they are next in order, so a slow input stream is not held back. On
    KeyboardInterrupt the batches already out are collected (for up to DRAIN_SECONDS)
    and handed back before the interrupt is raised again, so that every document read
    so far can still be decided. Close the iterator (contextlib.closing) to stop the
    workers early; they also stop when it is garbage.
    """
    hasher = FeatureHasher(settings.bits, settings.seed)
    it = iter(batches)

    def here(batch: Sequence[Document]) -> tuple[Any, ...]:
        return _as_tuple(batch, batch_results(_work(batch), settings, hasher, sketches))

    if jobs <= 1:
        for batch in it:
            yield here(batch)
        return
    first = next(it, None)
    if first is None:
        return
    # The first batch here: a one-batch input needs no pool, and forked workers inherit
    # what it loaded (jieba's dictionary takes a second to load in every process).
    yield here(first)
    second = next(it, None)
    if second is None:
        return
    workers = _Workers(settings, jobs, sketches)
    pending: deque[tuple[Sequence[Document], Connection]] = deque()
    try:
        try:
            for n, batch in enumerate(chain((second,), it)):
                conn = workers.conns[n % jobs]  # round robin: each worker answers in order
                workers.send(conn, _work(batch))
                pending.append((batch, conn))
                while pending and (len(pending) >= jobs * QUEUED_PER_JOB or pending[0][1].poll()):
                    done, conn = pending.popleft()
                    yield _as_tuple(done, workers.receive(conn))
        except KeyboardInterrupt:
            # Workers ignore the interrupt; hand back what they finish in time, then stop.
            workers.clean = False
            deadline = time.monotonic() + DRAIN_SECONDS
            while pending and pending[0][1].poll(max(0.0, deadline - time.monotonic())):
                done, conn = pending.popleft()
                yield _as_tuple(done, workers.receive(conn))
            raise
        while pending:
            done, conn = pending.popleft()
            yield _as_tuple(done, workers.receive(conn))
    except BaseException:
        workers.clean = False
        raise
    finally:
        workers.close()


class _Workers:
    """`jobs` forked processes, each fed whole batches over a pipe of its own. No
    threads in the parent (a process pool's feeder and manager threads cost it about
    twice the CPU per batch): the parent writes a batch, and reads each worker's answers
    in the order it sent them."""

    def __init__(self, settings: Settings, jobs: int, sketches: bool = False) -> None:
        # fork: workers start at once, with the parent's modules (and jieba's
        # dictionary, once loaded) already in memory; elsewhere the platform's default.
        context = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
        self.conns: list[Connection] = []
        self.procs: list[Any] = []
        #: every message sent whole and every answer read: workers can be told to stop
        self.clean = True
        for _ in range(jobs):
            mine, theirs = context.Pipe()
            _widen(mine)
            proc = context.Process(
                target=_worker_main, args=(theirs, settings, sketches, os.getpid()), daemon=True
            )
            proc.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(proc)

    def send(self, conn: Connection, work: Work) -> None:
        try:
            conn.send_bytes(pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as e:  # BrokenPipeError, ConnectionResetError: the worker is gone
            raise _died() from e

    def receive(self, conn: Connection) -> Result:
        try:
            ok, answer = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError) as e:
            raise _died() from e
        if not ok:
            raise RuntimeError(f"a fingerprinting worker failed:\n{answer}")
        return answer  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop every worker: an empty message when the pipes are in step, else SIGTERM."""
        if self.clean:
            for conn in self.conns:
                with contextlib.suppress(OSError):
                    conn.send_bytes(b"")
        for proc in self.procs:
            if self.clean:
                proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
            proc.join()
        for conn in self.conns:
            conn.close()


def _widen(conn: Connection, size: int = SEND_BUFFER) -> None:
    """Ask for a send buffer that holds a whole batch (the kernel caps it, at
    net.core.wmem_max on Linux), so that handing a worker its next batch does not block
    the parent while the worker is still busy with the one before."""
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


def _worker_main(conn: Connection, settings: Settings, sketches: bool, parent: int) -> None:
    """Fingerprint (and sketch) each batch that arrives and answer (True, its Result),
    or (False, the traceback) on a bug; stop at an empty message or when the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group
    _die_with_parent(parent)
    hasher = FeatureHasher(settings.bits, settings.seed)
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if not message:
            return
        try:
            answer: tuple[bool, object] = (
                True,
                batch_results(pickle.loads(message), settings, hasher, sketches),
            )
        except Exception:
            answer = (False, traceback.format_exc())
        conn.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


def _die_with_parent(parent: int) -> None:
    """Linux: ask the kernel for SIGTERM when the parent dies, however it dies (even
    SIGKILL), so no worker outlives a killed run."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
