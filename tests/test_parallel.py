"""--jobs: the same fingerprints and outputs, in the same order, for any number of
processes; workers ignore Ctrl-C and never outlive the run."""

from __future__ import annotations

import contextlib
import dis
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdedup import Document, Settings, parallel, pipeline, signals
from simdedup import read as read_module
from simdedup.cli import main
from simdedup.dedup import batches, fingerprint_documents
from simdedup.fingerprint import FeatureHasher
from simdedup.parallel import (
    AUTO,
    batch_results,
    chunk_batches,
    chunk_chars,
    default_jobs,
    fingerprint_batches,
    ordered_map,
)
from simdedup.pipeline import chunk_jobs
from simdedup.read import BARRIER, CHUNK_BYTES, Chunk, Problem
from simdedup.sketch import text_sketches

linux_only = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")

short_texts = st.text(alphabet=st.sampled_from("ab cd Ça 中文 北京 .,\n"), max_size=40)
# Longer than settings.HEAD_TOKENS words: these have head fingerprints.
long_texts = st.lists(st.sampled_from(["ab", "cd", "Ça", "中文", "北京", "x"]), min_size=30, max_size=60).map(
    " ".join
)
texts = short_texts | long_texts
features = st.dictionaries(st.sampled_from(["ab", "cd", "北京"]), st.integers(1, 3).map(float), max_size=3)


def simdedup(*args: str) -> list[str]:
    return [sys.executable, "-m", "simdedup", *args]


@settings(max_examples=10, deadline=None)
@given(docs=st.lists(texts, max_size=40), size=st.integers(1, 9))
def test_two_jobs_give_one_jobs_fingerprints_in_order(docs: list[str], size: int) -> None:
    documents = [Document(str(i), t, b"") for i, t in enumerate(docs)]

    def run(jobs: int) -> list[tuple[list[str], list[int | None]]]:
        out = fingerprint_batches(batches(documents, size), Settings(), jobs)
        return [([d.id for d in batch], fps) for batch, fps in out]

    assert run(2) == run(1)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_batch_that_is_an_iterator_is_handed_back_as_a_list(jobs: int) -> None:
    # With one job it came back used up beside its fingerprints; with two it failed (a trial).
    documents = [Document(str(i), f"text {i} here", b"") for i in range(10)]
    expected = fingerprint_documents(documents, Settings())
    [(batch, fps)] = fingerprint_batches([iter(documents)], Settings(), jobs)
    assert batch == documents and fps == expected
    assert fingerprint_documents(iter(documents), Settings()) == expected  # it gave []
    assert fingerprint_documents(iter(documents), Settings(), compiled=True) == expected


@settings(max_examples=30, deadline=None)
@given(
    docs=st.lists(texts, max_size=40),
    cuts=st.lists(st.integers(0, 12), max_size=8),
    size=st.integers(1, 9),
    sketches=st.booleans(),
)
def test_chunks_answers_join_into_the_batches_documents_make(
    docs: list[str], cuts: list[int], size: int, sketches: bool
) -> None:
    # Chunks of any number of documents (none, too) come out as dedup.batches cuts the
    # same documents, with each document's fingerprint, sketch and head.
    documents = [Document(str(i), t, b"") for i, t in enumerate(docs)]
    settings_, hasher = Settings(), FeatureHasher(64, 0)
    answers, start = [], 0
    for n in [*cuts, len(documents)]:
        piece = documents[start : start + n]
        start += len(piece)
        result = batch_results([d.text for d in piece], settings_, hasher, sketches) if piece else None
        answers.append(([Problem(f"p{start}", "bad-json", "x")], piece, result))
    reported: list[Problem] = []

    def rows(made: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        out = []
        for batch, fps, *rest in made:
            out.append((batch, fps, *((rest[0].tobytes(), rest[1]) if rest else ())))
        return out

    expected = rows(fingerprint_batches(batches(documents, size), settings_, 1, sketches=sketches))
    assert rows(chunk_batches(answers, size, reported.append)) == expected
    assert reported == [problems[0] for problems, _, _ in answers]


def test_a_batch_ends_once_its_documents_input_forms_fill_the_bytes_given() -> None:
    # `filter` holds each batch's input forms to write them back: 4,096 records of 200 KB
    # held 800 MB (a trial). Cut by bytes too, as soon as a chunk fills them, every
    # document and its fingerprint still in order.
    def chunk(first: int, n: int, size: int) -> tuple[list[Problem], list[Document], list[int | None]]:
        docs = [Document(str(i), "", b"x" * size) for i in range(first, first + n)]
        return [], docs, list(range(first, first + n))

    answers = [chunk(0, 3, 100), chunk(3, 3, 100), chunk(6, 2, 10), chunk(8, 4, 120), chunk(12, 1, 1)]
    made = list(chunk_batches(iter(answers), 1000, lambda p: None, raw_bytes=500))
    assert [[int(d.id) for d in batch] for batch, _ in made] == [list(range(6)), list(range(6, 12)), [12]]
    assert [fps for _, fps in made] == [list(range(6)), list(range(6, 12)), [12]]
    # By count still, the bytes counted again for what is left.
    made = list(chunk_batches(iter(answers), 4, lambda p: None, raw_bytes=500))
    assert [len(batch) for batch, _ in made] == [4, 4, 4, 1]


@pytest.mark.parametrize("at", ["thrown in", "while a chunk's problems are reported"])
def test_on_ctrl_c_the_documents_taken_are_handed_on_with_every_problem_of_theirs(at: str) -> None:
    # Those short of a batch were dropped, though their problems were reported (a trial:
    # 12,288 documents decided, 14,878 errors); one chunk's reports cut short, its
    # documents were dropped after some of its problems were counted.
    def chunk(first: int, n: int) -> tuple[list[Problem], list[Document], list[int | None]]:
        docs = [Document(str(i), "", b"") for i in range(first, first + n)]
        return [Problem(d.id, "invalid-utf8", "x") for d in docs], docs, list(range(first, first + n))

    reported: list[Problem] = []

    def on_problem(problem: Problem) -> None:
        reported.append(problem)
        if at != "thrown in" and problem.where == "7":
            raise KeyboardInterrupt

    made = chunk_batches(iter([chunk(0, 3), chunk(3, 3), chunk(6, 3), chunk(9, 3)]), 4, on_problem)
    handed = [next(made)]
    if at == "thrown in":
        handed.append(made.throw(KeyboardInterrupt()))
    else:
        handed.append(next(made))
    with pytest.raises(KeyboardInterrupt):
        next(made)
    ids = [d.id for batch, _ in handed for d in batch]
    assert ids == [str(i) for i in range(len(ids))] and [fp for _, fps in handed for fp in fps] == list(
        range(len(ids))
    )
    assert [p.where for p in reported] == ids


def _signal_points(code: Any) -> set[int]:
    """The offsets in `code` where Python may run a signal's handler: before a call (at
    the start of the function called) and after it, after a function starts or goes on
    from a yield, before a `with` (its __enter__) and before each step of a loop. Not
    between two stores, nor between a store and a yield."""
    calls = ("CALL", "BEFORE_WITH", "FOR_ITER")
    steps = list(dis.get_instructions(code))
    before = {step.offset for step in steps if step.opname.startswith(calls)}
    after = {step.offset for step, was in zip(steps[1:], steps) if was.opname.startswith(("CALL", "RESUME"))}
    return before | after


def _taken_as_decisions_does(made: Callable[[], Iterator[Any]], into: list[Any]) -> None:
    """Everything made() makes, into `into`; on Ctrl-C, what it hands on once it is
    thrown in, as pipeline.decisions takes it."""
    it = made()
    try:
        for item in it:
            into.append(item)
    except KeyboardInterrupt:
        with contextlib.suppress(KeyboardInterrupt, StopIteration):
            into.append(it.throw(KeyboardInterrupt()))


def _interrupted_at(count: int, run: Callable[[], None], code: set[Any]) -> bool:
    """run() with a SIGINT sent to this process at the count-th point of `code` where
    Python may run its handler (_signal_points): raised there, or once the
    signals.held() block it came in is done, as a real Ctrl-C. Whether that point came."""
    points = {each: _signal_points(each) for each in code}
    seen = [0]

    def local(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode" and frame.f_lasti in points[frame.f_code]:
            seen[0] += 1
            if seen[0] == count:
                signal.raise_signal(signal.SIGINT)
        return local

    sys.settrace(lambda frame, event, arg: local if frame.f_code in points else None)
    try:
        run()
    finally:
        sys.settrace(None)
    return seen[0] >= count


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is not signal.default_int_handler, reason="Ctrl-C raises")
@pytest.mark.parametrize("idle_every", [0, 3])
@pytest.mark.parametrize("out_with_workers", [False, True])
def test_a_ctrl_c_at_any_moment_of_joining_chunks_hands_on_each_document_with_its_own_fingerprint(
    idle_every: int, out_with_workers: bool
) -> None:
    # One that came between taking a chunk's documents and its fingerprints handed on a
    # batch of 72,062 documents and 64,065 fingerprints, and `scan --jobs 2` failed (CI).
    # Interrupted at each point in turn where Python may raise it, every document taken
    # is handed on, in order, beside its own fingerprint, and every one whose problems
    # were reported; with the chunks still out with workers when ordered_map drains them.
    def chunk(first: int, n: int) -> tuple[list[Problem], list[Document], list[int | None] | None]:
        docs = [Document(str(i), "", b"x") for i in range(first, first + n)]
        return (
            [Problem(d.id, "invalid-utf8", "x") for d in docs],
            docs,
            list(range(first, first + n)) if n else None,
        )

    def answering() -> Iterator[Any]:  # as ordered_map: on Ctrl-C, the chunks out still come
        chunks = [chunk(0, 3), chunk(3, 0), chunk(3, 6), chunk(9, 2), chunk(11, 5), chunk(16, 1)]
        try:
            while chunks:
                yield chunks.pop(0)
        except KeyboardInterrupt:
            yield from chunks[:2] if out_with_workers else ()
            raise

    code = {
        f.__code__
        for f in (chunk_batches, parallel.held_back, parallel._take, parallel._cut, parallel._joined)
    }
    count = 0
    while True:
        count += 1
        reported: list[Problem] = []
        handed: list[tuple[Any, ...]] = []
        calls = iter(range(1_000_000))
        idle = partial(lambda calls: next(calls) % idle_every == 0, calls) if idle_every else None
        made = partial(chunk_batches, answering(), 4, reported.append, idle=idle)
        if not _interrupted_at(count, partial(_taken_as_decisions_does, made, handed), code):
            break
        for batch, fps in handed:
            assert [int(doc.id) for doc in batch] == fps, count
        ids = [doc.id for batch, _ in handed for doc in batch]
        assert ids == [str(i) for i in range(len(ids))], count
        assert [p.where for p in reported] == ids, count
    assert count > 100  # moments enough were tried


def _times_ten(calls: list[int], cut_at: list[int]) -> Callable[[], Callable[[int], int]]:
    """A setup whose task multiplies by ten; the call numbered in `cut_at` is stopped by
    a Ctrl-C half way."""

    def task(item: int) -> int:
        calls.append(item)
        if len(calls) in cut_at:
            raise KeyboardInterrupt
        return item * 10

    return lambda: task


def _answered_until_ctrl_c(answers: Iterator[int]) -> list[int]:
    got: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        for answer in answers:
            got.append(answer)
    return got


def test_on_ctrl_c_while_an_item_is_done_here_its_answer_is_still_handed_back() -> None:
    # Raised at once, it lost the chunk being done: the lines read into it were neither
    # written nor decided. Now it is done again, whole, and handed back first.
    calls: list[int] = []
    got = _answered_until_ctrl_c(ordered_map(_times_ten(calls, [2]), iter([1, 2, 3]), 1))
    assert got == [10, 20] and calls == [1, 2, 2]  # 3: not taken


def test_on_ctrl_c_as_the_workers_start_the_item_taken_for_them_is_done_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The chunk taken for the first worker was lost (1 of 120 traced runs of `filter
    # -j2` stopped by SIGTERM, benchmarks/interrupts.py).
    def workers(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(parallel, "_Workers", workers)
    got = _answered_until_ctrl_c(ordered_map(_times_ten([], []), iter([1, 2, 3]), 2))
    assert got == [10, 20]


@linux_only
def test_on_ctrl_c_as_an_item_goes_to_a_worker_its_answer_is_still_handed_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Ctrl-C during the message took effect once it was whole, before the item was
    # counted as out: no one waited for its answer (8,192 lines lost in 15 of 120 traced
    # runs of `filter -j2` stopped by SIGTERM, benchmarks/interrupts.py).
    parent, sent = os.getpid(), []
    send_bytes = Connection.send_bytes

    def sent_then_ctrl_c(self: Connection, data: Any, *args: Any) -> None:
        send_bytes(self, data, *args)
        if os.getpid() == parent:
            sent.append(data)
            if len(sent) == 2:  # the second item sent to a worker
                signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(Connection, "send_bytes", sent_then_ctrl_c)
    got = _answered_until_ctrl_c(ordered_map(_times_ten([], []), iter(range(1, 9)), 2))
    assert got == [10, 20, 30]  # 1 done here, 2 and 3 by the workers


@linux_only
def test_on_ctrl_c_as_an_answer_is_about_to_be_read_it_is_still_handed_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its worker was taken off those owed before the answer was read: one raised in
    # between left that answer unread, and the ones after it were still handed back.
    receive, calls = parallel._Workers.receive, []

    def cut_first(self: Any, conn: Connection, then: Callable[[], None] | None = None) -> Any:
        calls.append(conn)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return receive(self, conn, then)

    monkeypatch.setattr(parallel._Workers, "receive", cut_first)
    got = _answered_until_ctrl_c(ordered_map(_times_ten([], []), iter(range(1, 9)), 2))
    assert len(got) >= 2 and got == [10 * i for i in range(1, len(got) + 1)], got


@linux_only
def test_on_ctrl_c_while_an_answer_is_unpickled_it_is_still_handed_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Unpickled after the message was whole, a Ctrl-C meanwhile lost the answer (8,192
    # lines in 3 of 48 traced runs of `filter -j2` stopped by SIGTERM).
    parent, loads, calls = os.getpid(), parallel.pickle.loads, []

    def loads_then_ctrl_c(data: Any) -> Any:
        loaded = loads(data)
        if os.getpid() == parent:
            calls.append(data)
            if len(calls) == 2:
                signal.raise_signal(signal.SIGINT)
        return loaded

    monkeypatch.setattr(parallel.pickle, "loads", loads_then_ctrl_c)
    got = _answered_until_ctrl_c(ordered_map(_times_ten([], []), iter(range(1, 9)), 2))
    assert len(got) >= 3 and got == [10 * i for i in range(1, len(got) + 1)], got


def _slow_chunks() -> Callable[[int], tuple[list[Problem], list[Document], list[int | None]]]:
    """chunk_task's answer for two documents, numbered from `first`, in 20 ms."""

    def task(first: int) -> tuple[list[Problem], list[Document], list[int | None]]:
        time.sleep(0.02)
        return [], [Document(str(i), "", b"") for i in (first, first + 1)], [first, first + 1]

    return task


@linux_only
def test_on_ctrl_c_thrown_in_the_chunks_out_with_workers_are_still_handed_on() -> None:
    # An interrupt raised in a later stage (while a decision was written) closed
    # ordered_map with its workers' chunks unread: 8,192 lines lost in 9 of 120 traced
    # runs of `filter -j2` stopped by SIGTERM (benchmarks/interrupts.py).
    made = chunk_batches(ordered_map(_slow_chunks, iter(range(0, 40, 2)), 2), 2, lambda p: None)
    handed = [next(made), next(made)]  # the first chunk's, done here, and the first worker's
    with pytest.raises(KeyboardInterrupt):
        handed.append(made.throw(KeyboardInterrupt()))
        while True:
            handed.append(next(made))
    ids = [int(doc.id) for batch, _ in handed for doc in batch]
    assert len(ids) > 4 and ids == list(range(len(ids))), ids


@settings(max_examples=10, deadline=None)
@given(docs=st.lists(texts, max_size=40), size=st.integers(1, 9))
def test_two_jobs_give_one_jobs_sketches_in_order(docs: list[str], size: int) -> None:
    documents = [Document(str(i), t, b"") for i, t in enumerate(docs)]

    def run(jobs: int) -> list[tuple[list[str], list[int | None], bytes, list[int | None]]]:
        out = fingerprint_batches(batches(documents, size), Settings(), jobs, sketches=True)
        return [([d.id for d in batch], fps, sk.tobytes(), heads) for batch, fps, sk, heads in out]

    one = run(1)
    assert run(2) == one
    assert b"".join(sk for _, _, sk, _ in one) == text_sketches(docs).tobytes()


@settings(max_examples=10, deadline=None)
@given(docs=st.lists(texts | features, max_size=30), size=st.integers(1, 9))
def test_sketches_of_batches_with_features_are_the_texts_sketches_for_any_jobs(
    docs: list[str | dict[str, float]], size: int
) -> None:
    documents = [
        Document(str(i), d, b"") if isinstance(d, str) else Document(str(i), "", b"", d)
        for i, d in enumerate(docs)
    ]

    def run(jobs: int) -> tuple[list[int | None], bytes]:
        out = list(fingerprint_batches(batches(documents, size), Settings(), jobs, sketches=True))
        return [fp for _, fps, _, _ in out for fp in fps], b"".join(sk.tobytes() for _, _, sk, _ in out)

    alone = [fp for _, fps in fingerprint_batches(batches(documents, size), Settings(), 1) for fp in fps]
    one = run(1)
    assert run(2) == one
    assert one == (alone, text_sketches([d if isinstance(d, str) else "" for d in docs]).tobytes())


@settings(max_examples=15, deadline=None)
@given(docs=st.lists(texts, max_size=40), size=st.integers(1, 12), piece=st.integers(1, 5))
def test_batches_cut_in_pieces_come_back_whole_and_in_order(docs: list[str], size: int, piece: int) -> None:
    documents = [Document(str(i), t, b"") for i, t in enumerate(docs)]

    def run(jobs: int) -> list[tuple[list[str], list[int | None], bytes, list[int | None]]]:
        out = fingerprint_batches(batches(documents, size), Settings(), jobs, sketches=True, piece=piece)
        return [([d.id for d in batch], fps, sk.tobytes(), heads) for batch, fps, sk, heads in out]

    one = run(1)
    assert run(2) == one
    assert [i for ids, _, _, _ in one for i in ids] == [str(i) for i in range(len(docs))]


def test_while_the_input_waits_every_batch_out_comes_back_before_the_next_is_read() -> None:
    # A batch from a stdin that has gone quiet must be decided before reading on waits
    # for its writer: the first batch too, whose pieces are at the workers (the old
    # driver held it back until the next batch came).
    events: list[str] = []

    def read() -> Iterator[list[Document]]:
        for k in range(4):
            events.append(f"read {k}")
            yield [Document(f"{k}.{i}", f"text {k} {i}", b"") for i in range(30)]

    for batch, fps in fingerprint_batches(read(), Settings(), 2, piece=10, idle=lambda: True):
        events.append(f"back {batch[0].id.split('.')[0]}")
        assert len(fps) == len(batch) == 30
    assert events == [event for k in range(4) for event in (f"read {k}", f"back {k}")]


def test_given_features_and_texts_mix_in_one_batch() -> None:
    docs = [Document("a", "one two", b""), Document("b", "", b"", {"x": 2.0}), Document("c", "北京", b"")]
    [(_, one)] = fingerprint_batches([docs], Settings(), 1)
    got = [fp for _, fps in fingerprint_batches([docs[:1], docs[1:2], docs[2:]], Settings(), 2) for fp in fps]
    assert got == one and None not in one


def test_default_jobs_is_the_cpus_this_process_may_use() -> None:
    assert 1 <= default_jobs() <= (os.cpu_count() or 1)


@pytest.mark.parametrize("command", ["scan", "filter", "fingerprint"])
def test_more_than_four_jobs_a_cpu_is_refused_before_any_is_started(command: str) -> None:
    # -j 1000000 (a slip) forked until the system refused, and each worker that failed
    # to start its thread printed a traceback.
    most = 4 * default_jobs()
    result = CliRunner().invoke(main, [command, "-", "-j", str(most + 1)], input="a line\n")
    assert result.exit_code == 2 and f"at most {most} (4 a CPU" in result.stderr
    assert result.stdout == ""


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Several batches of English, Chinese, mixed, empty and repeated lines."""
    f = tmp_path / "corpus.jsonl"
    rows = []
    for i in range(1500):
        text = [
            f"document {i % 400} about the harbour, {i % 7} boats and {i % 13} gulls",
            f"第{i % 300}号文件：今天早上菜市场里人很多 {i % 5}",
            f"mixed {i % 200} 中文 and English, café {i % 3}",
            "",
        ][i % 4]
        rows.append({"id": f"d{i}", "text": text})
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return f


@pytest.mark.parametrize(
    "command",
    [
        ["scan", "--format", "jsonl"],
        ["filter"],
        ["fingerprint"],
    ],
)
def test_jobs_1_and_2_write_the_same_bytes(corpus: Path, tmp_path: Path, command: list[str]) -> None:
    outputs = {}
    for jobs in (1, 2):
        args = [*command, str(corpus), "--jobs", str(jobs)]
        if command[0] != "fingerprint":
            args += ["--report", str(tmp_path / f"report{jobs}.jsonl")]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        report = tmp_path / f"report{jobs}.jsonl"
        outputs[jobs] = (result.stdout_bytes, report.read_bytes() if report.exists() else b"")
    assert outputs[1] == outputs[2]
    assert outputs[1][0]


def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for_workers(proc: subprocess.Popen[bytes], count: int) -> set[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        workers = children(proc.pid)
        if len(workers) >= count:
            return workers
        time.sleep(0.05)
    raise AssertionError("no workers started")


@contextlib.contextmanager
def fingerprinting_from_a_pipe(
    data: bytes, stderr: int
) -> Iterator[tuple[subprocess.Popen[bytes], set[int]]]:
    """`fingerprint - --jobs 2` given `data` on a pipe held open, once its two workers
    are there: the run is still going, however fast they are."""
    with subprocess.Popen(
        simdedup("fingerprint", "-", "--jobs", "2"),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    ) as proc:
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.flush()
        yield proc, wait_for_workers(proc, 2)


def fingerprinting_in_a_session(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`fingerprint - --jobs 2`, every stream a pipe, in a session of its own (a
    process group for Ctrl-C to reach)."""
    return subprocess.Popen(
        simdedup("fingerprint", "-", "--jobs", "2"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )


@pytest.fixture
def big(tmp_path: Path) -> Path:
    f = tmp_path / "big.txt"
    f.write_text("".join(f"line {i} with words {i % 977} and {i % 89}\n" for i in range(200_000)))
    return f


@linux_only
def test_a_closed_pipe_ends_quietly_and_takes_the_workers_along(big: Path) -> None:
    # Workers start once the first batch (1,024 lines) is written: with short ids it fits
    # in the pipe's buffer, which nobody reads until they have started.
    proc = subprocess.Popen(
        simdedup("fingerprint", big.name, "--jobs", "2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=big.parent,
    )
    assert proc.stdout is not None and proc.stderr is not None
    workers = wait_for_workers(proc, 2)
    proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=30) == 141
    assert stderr == ""
    assert not any(alive(w) for w in workers)


@linux_only
def test_ctrl_c_to_the_process_group_exits_130_without_worker_tracebacks(big: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.jsonl"
    proc = subprocess.Popen(
        simdedup("scan", str(big), "--jobs", "2", "--report", str(report)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a shell job would be
    )
    workers = wait_for_workers(proc, 2)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    decided = report.read_text().splitlines()
    assert decided and all(json.loads(line)["id"] for line in decided)  # whole records only
    time.sleep(0.2)
    assert not any(alive(w) for w in workers)


@linux_only
def test_ctrl_c_during_fingerprint_exits_130_with_whole_lines_and_no_workers_left(big: Path) -> None:
    # From a pipe the test holds open: the run is still going at Ctrl-C however fast the
    # workers are (a file of 200,000 lines took 0.35 s in all and could end first).
    with fingerprinting_in_a_session() as proc:
        assert proc.stdin is not None
        out: list[bytes] = []
        reader = threading.Thread(target=lambda: out.extend(proc.stdout))  # type: ignore[arg-type]
        reader.start()
        proc.stdin.write(big.read_bytes())
        proc.stdin.flush()
        workers = wait_for_workers(proc, 2)
        deadline = time.monotonic() + 30
        while not out:  # some lines printed, then Ctrl-C
            assert time.monotonic() < deadline, "nothing printed"
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        reader.join()
        assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    printed = b"".join(out).decode().splitlines()
    bad = [(n, line) for n, line in enumerate(printed, 1) if not line.endswith(f"\t-:{n}")]
    assert printed and not bad, (len(printed), bad[:3])
    time.sleep(0.2)
    assert not any(alive(w) for w in workers)


def _fed(stdin: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError):  # the run stops reading at Ctrl-C
        stdin.write(data)


@linux_only
@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_ctrl_c_while_fingerprint_waits_on_a_full_pipe_still_ends_on_a_whole_line(
    big: Path, unbuffered: str
) -> None:
    # Ctrl-C while a slow reader held a write back left a line cut short ('822b26a52367'
    # after 199,842 whole lines; the test above, with the machine busy): unbuffered
    # (PYTHONUNBUFFERED), stdout's raw write took what one system call did and the
    # rest was dropped; buffered, the interrupt was raised inside the write.
    with fingerprinting_in_a_session({**os.environ, "PYTHONUNBUFFERED": unbuffered}) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        feeding = threading.Thread(target=_fed, args=(proc.stdin, big.read_bytes()))
        feeding.start()
        wait_for_workers(proc, 2)
        time.sleep(1.5)  # stdout's pipe full: the main process blocked in a write
        os.killpg(proc.pid, signal.SIGINT)
        printed = proc.stdout.read().decode().splitlines()
        assert proc.wait(timeout=60) == 130
        feeding.join()
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    bad = [(n, line) for n, line in enumerate(printed, 1) if not line.endswith(f"\t-:{n}")]
    assert len(printed) > 1000 and not bad, (len(printed), bad[:3])


@linux_only
@pytest.mark.parametrize("command", ["scan", "fingerprint"])
def test_ctrl_c_as_the_workers_start_leaves_no_traceback(big: Path, command: str) -> None:
    # Ctrl-C reaches the whole process group, workers included, from the moment they are
    # forked: before they ignored it from the start, 7 runs in 20 printed a
    # KeyboardInterrupt traceback or exited 0, and a `scan` could hang. Each run here is
    # interrupted as soon as a worker exists.
    for _ in range(10):
        with subprocess.Popen(
            simdedup(command, str(big), "--jobs", "2", "-q"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        ) as proc:
            deadline = time.monotonic() + 30
            while not children(proc.pid):
                assert time.monotonic() < deadline, "no workers started"
                time.sleep(0.0005)
            os.killpg(proc.pid, signal.SIGINT)
            try:
                _, stderr = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:  # it hung: a worker died half-started
                os.killpg(proc.pid, signal.SIGKILL)
                raise AssertionError("the run hung after Ctrl-C") from None
        assert proc.returncode == 130, stderr
        assert b"Traceback" not in stderr and b"Exception ignored" not in stderr, stderr


@linux_only
def test_ctrl_c_at_any_moment_of_a_scan_with_workers_ends_it(big: Path, tmp_path: Path) -> None:
    # A Ctrl-C that landed while a message to or from a worker was half through left the
    # pipe in mid-message, and the run hung (2 runs in 10 of a default 300,000-document
    # scan). Interrupted at moments spread over the run, each must end, exiting 130.
    # The moments count from the workers' start: before it, Python may still be
    # importing (slowly, without bytecode caches), where a Ctrl-C is Python's to report.
    bigger = tmp_path / "bigger.txt"
    bigger.write_bytes(big.read_bytes() * 2)
    for delay in (0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.05, 1.2, 1.35):
        with subprocess.Popen(
            simdedup("scan", str(bigger), "--jobs", "2", "-q"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        ) as proc:
            wait_for_workers(proc, 2)
            time.sleep(delay)
            os.killpg(proc.pid, signal.SIGINT)
            try:
                _, stderr = proc.communicate(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                raise AssertionError(f"the run hung after Ctrl-C at {delay} s") from None
        assert proc.returncode in (0, 130), stderr  # 0: it had finished
        assert b"Traceback" not in stderr, stderr


@linux_only
def test_workers_die_when_the_parent_is_killed(big: Path) -> None:
    # From a pipe the test holds open, so that the workers are still there to be seen:
    # reading a named file of 200,000 lines, a run could end between two looks for them
    # (1 run in 3, once the main process no longer read the file).
    with fingerprinting_from_a_pipe(big.read_bytes(), subprocess.DEVNULL) as (proc, workers):
        assert proc.stdin is not None
        proc.kill()
        proc.wait()
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(w) for w in workers)


@linux_only
def test_a_worker_that_dies_is_an_error_not_a_traceback_or_a_hang(big: Path) -> None:
    # The input comes from a pipe the test holds open, so that the run is still going when
    # a worker is killed, however fast the workers are (a file of 200,000 lines took 0.35 s
    # in all and could end first).
    # communicate() ends the input: it flushes and closes stdin, ignoring a broken pipe
    # (a stdin closed here made it fail, "flush of closed file", whenever the write went
    # through before the run noticed the death).
    data = big.read_bytes()
    with fingerprinting_from_a_pipe(data, subprocess.PIPE) as (proc, workers):
        assert proc.stdin is not None
        os.kill(min(workers), signal.SIGKILL)
        with contextlib.suppress(BrokenPipeError):  # it may stop reading at once
            proc.stdin.write(data)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert b"worker process died" in stderr and b"Traceback" not in stderr


def test_auto_jobs_keep_cheap_english_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text = "plain english words of a line long enough to be typical, number {} and more of them " * 3
    docs = [Document(str(i), text.format(i, i, i), b"") for i in range(700)]
    one = [(b, fps) for b, fps in fingerprint_batches(batches(docs, 300), Settings(), 1)]

    def no_workers(*args: object, **kwargs: object) -> None:
        raise AssertionError("worker processes started for cheap text")

    monkeypatch.setattr(parallel, "_Workers", no_workers)
    assert list(fingerprint_batches(batches(docs, 300), Settings(), AUTO, piece=100)) == one
    # The CLI's default is AUTO too: a multi-batch English scan starts no workers.
    f = tmp_path / "cheap-english.txt"
    f.write_text("".join(d.text + "\n" for d in docs) * 3)  # over 2 batches of 1,024
    assert CliRunner().invoke(main, ["scan", str(f), "-q"], catch_exceptions=False).exit_code == 0


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The jobs of each pool of workers started, in order (default_jobs(): 2)."""
    pools: list[int] = []
    real = parallel._Workers

    def counted(setup: Callable[[], object], jobs: int) -> object:
        pools.append(jobs)
        return real(setup, jobs)

    monkeypatch.setattr(parallel, "_Workers", counted)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
    return pools


def test_auto_jobs_start_workers_where_fingerprinting_is_slow(
    monkeypatch: pytest.MonkeyPatch, started: list[int]
) -> None:
    docs = [Document(str(i), f"今天 北京 文档 {i} 中文", b"") for i in range(60)]
    one = list(fingerprint_batches(batches(docs, 25), Settings(), 1, sketches=True))
    monkeypatch.setattr(parallel, "WORKERS_PAY_OFF", 0.0)  # everything counts as slow
    auto = list(fingerprint_batches(batches(docs, 25), Settings(), AUTO, sketches=True, piece=10))
    assert started == [2]
    assert [(b, f, s.tobytes(), h) for b, f, s, h in auto] == [(b, f, s.tobytes(), h) for b, f, s, h in one]


def _numbered_by(tag: str) -> Callable[[int], tuple[str, int, int]]:
    """ordered_map's setup for the tests: a task that tells which process did an item."""
    pid = os.getpid()
    return lambda item: (tag, item, pid)


@settings(max_examples=10, deadline=None)
@given(count=st.integers(0, 40), jobs=st.integers(1, 3))
def test_ordered_map_gives_every_items_answer_in_order(count: int, jobs: int) -> None:
    answers = list(ordered_map(partial(_numbered_by, "t"), range(count), jobs))
    assert [(tag, item) for tag, item, _ in answers] == [("t", i) for i in range(count)]
    here = [pid == os.getpid() for _, _, pid in answers]
    # The first item is done here (workers inherit what it loaded); with jobs > 1 and
    # more than one item, the rest in workers.
    assert here == [True] * min(count, 1) + [jobs == 1] * max(count - 1, 0)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_barrier_has_every_item_before_it_handed_back_before_the_next_is_taken(jobs: int) -> None:
    # read._stretches asks a file's size again after one: once what was cut is read.
    handed: list[int] = []
    taken_after: list[int] = []

    def items() -> Iterator[Any]:
        yield BARRIER  # before anything: nothing to wait for
        yield from range(7)
        yield BARRIER
        taken_after.append(len(handed))
        yield from range(7, 9)
        yield BARRIER

    for _, item, _ in ordered_map(partial(_numbered_by, "t"), items(), jobs):
        handed.append(item)
    assert handed == list(range(9)) and taken_after == [7]


_PILED_ANSWERS = """
import sys, time
from simdedup.parallel import ordered_map

def answer_big():
    def task(item):
        number, _ = item
        if number == 1:
            time.sleep(1.0)  # the oldest item out: the parent waits for its worker
        return b"a" * 300_000  # over a socket's default send buffer (208 KiB)
    return task

items = ((i, b"x" * (6 << 20)) for i in range(12))  # over the parent's send buffer (4 MiB at most)
print(sum(1 for _ in ordered_map(answer_big, items, 2)))
"""


def test_workers_read_on_while_their_answers_wait() -> None:
    # One worker is slow with the oldest item; the other's big answers pile up unread
    # while the parent sends it items larger than the pipe holds. A worker that sent its
    # answers itself would stop reading, and the parent would wait on it forever.
    done = subprocess.run([sys.executable, "-c", _PILED_ANSWERS], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"12\n"


@pytest.mark.parametrize(
    "command",
    [
        ["fingerprint"],
        ["fingerprint", "--format", "jsonl"],
        ["scan", "--format", "jsonl"],
        ["scan", "--no-verify", "--format", "tsv"],
        ["filter", "--duplicates", "{tmp}/dups.jsonl"],
    ],
)
def test_files_read_in_chunks_give_what_reading_documents_gives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str]
) -> None:
    # Near-duplicates within and across chunks and files, bad input, a missing and an
    # empty file, gzip: every command prints the same, reports the same and exits the
    # same whether the workers read chunks or the main process reads documents.
    first = tmp_path / "first.txt"
    first.write_bytes(
        b"".join(f"line {i % 40} about the boats in the harbour {i % 7}\n".encode() for i in range(300))
        + b"bad \xff byte\n"
    )
    (tmp_path / "empty.txt").write_bytes(b"")
    last = tmp_path / "last.txt.gz"
    last.write_bytes(gzip.compress("".join(f"第{i % 30}号 文件 今天 {i % 5}\n" for i in range(200)).encode()))
    inputs = [str(first), str(tmp_path / "missing.txt"), str(tmp_path / "empty.txt"), str(last)]
    if command[0] == "filter":  # one input: stdin
        inputs = []
    args = [part.format(tmp=tmp_path) for part in command] + inputs
    stdin = first.read_bytes() if command[0] == "filter" else None

    def run(jobs: str) -> tuple[int, bytes, str, bytes]:
        result = CliRunner().invoke(main, [*args, "--jobs", jobs], input=stdin, catch_exceptions=False)
        dups = tmp_path / "dups.jsonl"
        messages = re.sub(r"; [\d.]+ s \([\d,]+ docs/s\)", "", result.stderr)  # the run's time
        return (
            result.exit_code,
            result.stdout_bytes,
            messages,
            dups.read_bytes() if dups.exists() else b"",
        )

    monkeypatch.setattr(read_module, "FIRST_CHUNK_BYTES", 100)
    monkeypatch.setattr(read_module, "CHUNK_BYTES", 1000)  # dozens of chunks a file
    monkeypatch.setattr(pipeline, "DECIDED_CHUNK_BYTES", 1000)
    chunked = {jobs: run(jobs) for jobs in ("1", "2")}
    with monkeypatch.context() as documents:  # no chunks: read a document at a time
        documents.setattr(pipeline, "chunk_jobs", lambda sources, jobs, timed=False: None)
        by_document = {jobs: run(jobs) for jobs in ("1", "2")}
    assert chunked["1"] == chunked["2"] == by_document["1"] == by_document["2"]
    status, out, err, _ = chunked["1"]
    assert status == 3 and "invalid UTF-8" in err  # the input errors
    if command[0] != "filter":
        assert "no such file" in err and "empty file" in err
    if command[0] == "fingerprint":
        assert len(out.splitlines()) == 501
    else:
        assert b"duplicate" in out + chunked["1"][3]


def test_fingerprint_jobs_0_starts_workers_for_files_of_two_chunks_or_more(tmp_path: Path) -> None:
    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    small.write_bytes(b"x\n" * 10)
    big.write_bytes(b"x" * (2 * CHUNK_BYTES))
    assert chunk_jobs([str(small), str(tmp_path / "missing")], AUTO) == 1
    assert chunk_jobs([str(small), str(big)], AUTO) == default_jobs()
    assert chunk_jobs([str(small)], 3) == 3
    assert chunk_jobs([str(small), "-"], 3) == 3
    assert chunk_jobs([str(small), "-"], AUTO) == default_jobs()  # a pipe's length is unknown
    assert chunk_jobs([str(small), str(tmp_path)], 3) is None  # a directory: a document at a time
    # The other commands time the first chunk where fingerprint would start workers.
    assert chunk_jobs([str(small), str(big)], AUTO, timed=True) == AUTO
    assert chunk_jobs([str(small), "-"], AUTO, timed=True) == AUTO
    assert chunk_jobs([str(small)], AUTO, timed=True) == 1
    assert chunk_jobs([str(small), str(big)], 2, timed=True) == 2


def test_chunk_chars_counts_characters_not_bytes() -> None:
    assert chunk_chars(Chunk("f", 1, "ab 中文 é\n".encode())) == 8
    assert chunk_chars(Chunk("f", 1, b"")) == 0
    assert chunk_chars(Problem("f", "missing", "no such file")) == 0


def test_ordered_map_auto_times_the_first_items_with_text(
    monkeypatch: pytest.MonkeyPatch, started: list[int]
) -> None:
    items = [0, 0, 5, 5, 5, 5]  # the characters of each; the first two have none

    def run() -> list[tuple[str, int, int]]:
        return list(ordered_map(partial(_numbered_by, "t"), items, AUTO, chars=lambda item: item))

    monkeypatch.setattr(parallel, "WORKERS_PAY_OFF", 1e9)  # nothing is slow
    cheap = run()
    assert started == [] and {pid for _, _, pid in cheap} == {os.getpid()}
    monkeypatch.setattr(parallel, "WORKERS_PAY_OFF", 0.0)  # everything is
    slow = run()
    assert started == [2]
    # Done here up to the second item with characters, which decided; the rest in workers.
    assert [pid == os.getpid() for _, _, pid in slow] == [True, True, True, True, False, False]
    assert [item for _, item, _ in slow] == [item for _, item, _ in cheap] == items
    with pytest.raises(ValueError, match="chars"):
        next(ordered_map(partial(_numbered_by, "t"), items, AUTO))


def test_default_jobs_time_the_first_chunks_but_for_fingerprint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, started: list[int]
) -> None:
    # English text in workers made scan slower (a 1M-line scan 15% slower than --jobs
    # 1), so scan, filter and index query time the first chunks and start workers only
    # where fingerprinting is slow (Chinese). fingerprint, which only moves bytes in this
    # process, starts them for any large file. Every way gives the same bytes.
    monkeypatch.setattr(pipeline, "CHUNK_WORKERS_FROM", 150_000)  # for a short test
    monkeypatch.setattr(pipeline, "DECIDED_CHUNK_BYTES", 32 << 10)
    big = tmp_path / "big.txt"
    words = "of plain english words in a line as long as a paragraph of a crawled page is"
    big.write_text("".join(f"line {i % 90} {words * 6} {i % 13}\n" for i in range(400)))
    assert big.stat().st_size >= pipeline.CHUNK_WORKERS_FROM

    def run(*args: str) -> bytes:
        result = CliRunner().invoke(main, [*args, str(big), "-q"], catch_exceptions=False)
        assert result.exit_code == 0
        return result.stdout_bytes

    commands = [["scan"], ["filter"], ["fingerprint"]]
    one = {command[0]: run(*command, "--jobs", "1") for command in commands}
    assert started == []
    for slow, pools in ((False, [2]), (True, [2, 2, 2, 2])):
        monkeypatch.setattr(parallel, "WORKERS_PAY_OFF", 0.0 if slow else 1e9)
        for command in commands:
            assert run(*command, "--jobs", "0") == one[command[0]]
        assert started == pools  # fingerprint's, and with slow text scan's and filter's


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")
def test_every_ctrl_c_during_a_workers_message_is_handed_on_once_it_is_whole() -> None:
    # Only the first was handed on: two Ctrl-Cs during one message counted as one, and
    # the CLI took the run for interrupted once and saved an --index (cli._Writing).
    seen: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        with pytest.raises(KeyboardInterrupt), signals.held():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # both handled by now, and held
            assert seen == []
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIGINT, signal.SIGINT]
