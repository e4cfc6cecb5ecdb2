"""The command line: scan, filter, fingerprint, compare, calibrate, and index info, merge
and query.

The only module that imports click, rich and tqdm. Results go to stdout, messages to
stderr; core exceptions become exit codes (see status.ExitStatus).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import errno
import functools
import gc
import io
import json
import math
import os
import re
import select
import signal
import stat
import sys
import threading
import time
import unicodedata
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

import click
import numpy as np
from click.core import ParameterSource

from . import __version__, pipeline, signals
from . import fingerprint as fingerprint_module
from . import index as index_module
from . import read as read_module
from .dedup import Decision, Deduplicator
from .features import extract
from .fingerprint import FeatureHasher, compiled_serves, format_fingerprint
from .fingerprint import distance as hamming
from .index import Layout
from .parallel import (
    AUTO,
    default_jobs,
    ordered_map,
)
from .prefixes import PREFIX_CROWD
from .read import (
    JSON_SPACE,
    MAX_DOC_SIZE,
    STDIN,
    STRETCH_BYTES,
    Document,
    OnProblem,
    Problem,
    ReadOptions,
    Streams,
    argument_text,
    codec_for,
    file_identity,
    first_bytes,
    json_type,
    limited_text,
    load_json,
    looks_binary,
    open_input,
    printable,
    read_chunks,
    read_documents,
    read_error,
    record_lines,
    size_text,
    walk_reads,
)
from .report import (
    GROUP_COLUMNS,
    GROUP_RUN_COLUMNS,
    TABULAR,
    DuplicatesWriter,
    Groups,
    RecordWriter,
    ReportWriter,
    Summary,
    UniqueWriter,
    counted,
    fingerprint_lines,
    format_for,
)
from .settings import (
    CROWD,
    CROWDED_AFTER,
    CROWDED_MEAN,
    HEAD_CROWD,
    HEAD_SPEC,
    HEAD_TOKENS,
    MAX_DISTANCE,
    SUGGESTED_CROWD,
    TOKENIZERS,
    WEIGHTS,
    Settings,
)
from .sketch import SKETCH, SKETCH_SPEC, fingerprints_and_sketches, similarity
from .status import (
    ExitStatus,
    IndexFileError,
    IndexLockedError,
    SettingsError,
    SimdedupError,
    unmapped_library,
)
from .store import (
    IndexSession,
    check_settings,
    foreign_file,
    index_lock,
    keep_owner_and_mode,
    key_buckets,
    lock_path,
    merge_indexes,
    read_header,
    read_index,
    replacing_mode,
    still_locked,
    temporary_beside,
    write_index,
)
from .verify import (
    FEWEST_BINS,
    MIN_JACCARD,
    VerifyingDeduplicator,
    candidate_distance,
    deduplicator,
    too_few_bins,
    verifies,
)

DEFAULTS = Settings()


class CliError(click.ClickException):
    """A ClickException that carries one of our exit statuses."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.USAGE) -> None:
        super().__init__(_one_line(message))  # the paths it names, on one line
        self.exit_code = int(status)

    def show(self, file: IO[Any] | None = None) -> None:
        with _unsaid_dropped():
            super().show(file)


#: glibc's mallopt parameters, and what the CLI sets them to (see _keep_freed_memory).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 32 << 20
_TRIM_THRESHOLD = 256 << 20


def _keep_freed_memory() -> None:
    """Have glibc keep freed memory for the next batch instead of unmapping it.

    Each batch's index search makes temporary arrays of up to tens of MB; by default
    glibc maps each afresh and unmaps it when freed, and the kernel zeroes every page
    again: a 300,000-document scan spent 5.0 s of 29 in the kernel (0.6 s of 23 with
    these settings; at 1M documents, 64 s of 233). Arrays under 32 MB come from the
    heap, and up to 256 MB of freed heap stays mapped. Not glibc (or no mallopt): left
    alone. Forked workers inherit it."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


#: Allocations between young collections, and collections between older ones (CPython's
#: defaults: 700, 10, 10).
_GC_THRESHOLDS = (10_000, 10, 10)


def _fewer_collections() -> None:
    """Collect cycles less often. A run makes and drops a few objects per document
    (Documents, Decisions, their ids), and almost none of them in cycles, but at
    CPython's default thresholds each 700 set off a collection, and every few hundred
    a full one over every live object: a 1M-document `scan -j2`
    spent 1.9 s of its main process's CPU collecting (0.3 s with these), a 300,000-
    document `scan -j1` 0.6 s (0.1 s); benchmarks/gc_time.py. Forked workers inherit it."""
    gc.set_threshold(*_GC_THRESHOLDS)


def _version_message() -> str:
    """--version's line, and a second where pip built simdedup without its compiled cores
    (no C compiler): pip said so only with -v, and nothing else did (a trial)."""
    message = "%(prog)s, version %(version)s"
    if index_module.LOOPS_BUILT and fingerprint_module.ascii_batch is not None:  # as each loaded its core
        return message
    return (
        message + "\nbuilt without its compiled cores (pip found no C compiler): the same results, in"
        " about 3x the time; reinstall where gcc and Python's headers are, to build them"
    )


class SimdedupGroup(click.Group):
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:  # click's own "Aborted!", exit 1, where 1 means duplicates found (a trial)
            raise CliError("interrupted", ExitStatus.INTERRUPTED) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _signals_as_ctrl_c():
                try:
                    if sys.stdin is None:  # closed (<&-): an input of nothing, for a run that asks for '-'
                        sys.stdin = open(os.devnull)  # noqa: SIM115 (for the process's life)
                    if sys.stdout is None:  # closed (>&-): results have nowhere to go
                        raise CliError(
                            "stdout is closed: send it to a file, or to /dev/null to drop the results"
                        )
                    _keep_freed_memory()
                    _fewer_collections()
                    return super().invoke(ctx)
                except KeyboardInterrupt:  # where no command handles it: starting, loading an index
                    raise CliError("interrupted", _interrupted()) from None
        except SimdedupError as e:
            raise CliError(str(e), e.exit_status) from e
        except BrokenPipeError:  # `simdedup ... | head`: stop quietly
            _to_devnull(sys.stdout)
            sys.exit(ExitStatus.BROKEN_PIPE)
        except OSError as e:  # an output that takes no more (a full disk), an I/O error
            raise _stopped_by_io_error(e) from e
        except MemoryError:  # a trial's 150 MB line under `ulimit -v`: a traceback and exit 1
            raise _out_of_memory() from None
        except RuntimeError as e:
            if "can't start new thread" not in str(e):
                raise
            # The decide thread's stack, under `ulimit -v` with an --index loaded: a
            # traceback and exit 1, which --fail-on-duplicates means "duplicates" (a trial).
            raise _out_of_memory() from None
        except ImportError as e:  # rjieba, loaded at the first Chinese text (a review)
            if (unmapped := unmapped_library(e)) is None:
                raise
            raise CliError(unmapped) from None

    def main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().main(*args, **kwargs)
        except OSError as e:  # before invoke(): `simdedup --help` or `--version` to a full disk
            error = _stopped_by_io_error(e)
            error.show()
            sys.exit(error.exit_code)


def _out_of_memory() -> CliError:
    # (the message blamed a long line alone, also where the index had grown: a trial)
    return CliError(
        "out of memory: the system gives this run no more. It holds the documents kept (in"
        " the index, and an --index loaded) and each line whole while it is read, however"
        " long (--max-doc-size caps only what is fingerprinted). What was written stays; an"
        " --index is left as it was"
    )


def _stopped_by_io_error(e: OSError) -> CliError:
    """The error that ends a run whose output took no more: what stdout holds is
    flushed, when stdout is not what failed, or stdout goes to /dev/null, so that the
    interpreter's last flush cannot fail again."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        _to_devnull(sys.stdout)
    if isinstance(e, OutputFailed):
        return CliError(f"stopped: {e}")
    where = f": {printable(str(e.filename))}" if e.filename else ""
    return CliError(f"stopped by an I/O error{where}: {e.strerror or e}")


#: The signal other than SIGINT that stopped this run, if one did (_signals_as_ctrl_c).
_stopped_by: int | None = None

#: What the signals that _signals_as_ctrl_c routes make the exit status.
_SIGNAL_STATUS = {signal.SIGTERM: ExitStatus.TERMINATED}
if hasattr(signal, "SIGHUP"):
    _SIGNAL_STATUS[signal.SIGHUP] = ExitStatus.HUNG_UP


@contextlib.contextmanager
def _signals_as_ctrl_c() -> Iterator[None]:
    """SIGTERM (timeout, a service manager, kill) and SIGHUP (the terminal closed, an ssh
    session dropped) stop a run as Ctrl-C does: what was read is decided and written,
    --index is saved, and the exit status is 143 or 129. They go to SIGINT's handler, so
    that they take effect where a Ctrl-C would (never in the middle of a message to a
    worker, nor of a document's outputs), also where SIGINT is ignored, as a script's
    background jobs have it. A signal already ignored (`nohup`) stays so. The handlers
    before are restored after."""
    global _stopped_by
    _stopped_by = None  # a run's own (tests run several in one process)
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, frame: Any) -> None:
        global _stopped_by
        _stopped_by = signum
        if signum != signal.SIGTERM:
            _hung_up_terminals_to_devnull()
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # SIGINT ignored (a script's background job): not these
            handler = _WRITING
        elif handler is not _WRITING:
            # Held until a message to or from a worker, or a read, is whole (signals.held),
            # which then raises by itself where SIGINT is ignored, unseen by _WRITING:
            # `fingerprint -j 2 &` wrote on until the workers' chunks were drained (a
            # trial), where in the foreground it stopped at the next batch (pending).
            _WRITING.raised = True
        handler(signum, frame)

    previous = {
        signum: signal.signal(signum, on_signal)
        for signum in _SIGNAL_STATUS
        if signal.getsignal(signum) is not signal.SIG_IGN  # as Python does for Ctrl-C
    }
    try:
        yield
    finally:
        # The command has ended: a Ctrl-C as they are put back leaves its status as it
        # is. Raised here, outside the command's own handling, it was click's "Aborted!"
        # and exit 1, which says duplicates were found (a review).
        with contextlib.suppress(KeyboardInterrupt), signals.held():
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _hung_up_terminals_to_devnull() -> None:
    """stdout and stderr on a terminal that hung up fail every write (EIO): they are
    sent to /dev/null, as `nohup` would have sent them elsewhere, so that the run ends as
    after SIGTERM, its other outputs and --index whole, instead of on an I/O error."""
    for stream in (sys.stdout, sys.stderr):
        try:
            os.write(stream.fileno(), b"")
        except OSError as e:
            if e.errno == errno.EIO:
                _to_devnull(stream)
        except (AttributeError, ValueError):  # closed, or not a file (CliRunner)
            pass


class _Writing:
    """SIGINT's handler during a run: KeyboardInterrupt at once, as Python's own, but
    while a document's decision is written to the outputs, once it is written whole
    (a second signal meanwhile raises at once). Raised halfway, it left that document
    out of the outputs that had not written it yet, though the index kept it: the next
    run took it for seen, and it was lost."""

    def __init__(self) -> None:
        self.now = False
        self.caught = False
        #: Whether a KeyboardInterrupt was raised since installed(): a second signal
        #: that comes while a __del__ runs is still raised there, and Python drops it.
        self.raised = False
        #: Signals handled since installed().
        self.signals = 0
        #: Whether a second signal came while the first was held (a write blocked on a
        #: reader that takes nothing): raised there, it cut that document off from the
        #: outputs after it, and the run went on to save an --index holding it (a review).
        self.again = False

    def __call__(self, signum: int, frame: Any) -> None:
        self.signals += 1
        # Raised in a __del__ (a worker's pipe collected as workers start), Python prints
        # "Exception ignored" and drops it, and the run went on to exit 0: held instead,
        # until the next document is written (done) or the command checks `caught`.
        if (self.now or _in_del(frame)) and not self.caught:
            self.caught = True
            return
        self.again = self.again or self.caught
        self.raised = True
        raise KeyboardInterrupt

    def done(self) -> None:
        """The end of a document's writing: raise what came meanwhile."""
        self.now = False
        if self.caught:
            self.caught = False
            self.raised = True
            raise KeyboardInterrupt

    def pending(self) -> None:
        """Raise a signal held (while a document was written, or in a __del__) or raised
        and dropped by Python since installed()."""
        if self.caught or self.raised:
            self.caught = False
            self.raised = True
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Writing]:
        """This as SIGINT's handler, where Python's own is (not where SIGINT is ignored)."""
        self.raised = self.again = False
        self.signals = 0
        main = threading.current_thread() is threading.main_thread()
        if not main or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield self
            return
        signal.signal(signal.SIGINT, self)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self.now = self.caught = False


_WRITING = _Writing()


def _in_del(frame: Any) -> bool:
    """Whether `frame`, or one of the few it was called from, runs a __del__."""
    for _ in range(8):
        if frame is None:
            return False
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def _finishing() -> Iterator[_Writing]:
    """The end of a deciding run, once every document read is decided: the group
    listing, --summary-json and the --index save. A Ctrl-C or SIGTERM then waits for
    them (its `caught` is set), so that the index saved holds what the outputs hold; a
    second one stops at once."""
    with _WRITING.installed() as writing:
        writing.now = True  # (one caught since _run's documents were all written stays so)
        try:
            yield writing
        finally:
            writing.now = writing.caught = False


#: A second Ctrl-C or SIGTERM, before every document decided was written.
_STOPPED_AT_ONCE = (
    "interrupted again: stopped at once; the outputs hold what was written, and an --index "
    "or --summary-json is left as it was"
)


def _interrupted() -> ExitStatus:
    return _SIGNAL_STATUS.get(_stopped_by, ExitStatus.INTERRUPTED)  # type: ignore[arg-type]


# ---------------------------------------------------------------- terminal helpers


#: Control characters (C0, DEL, C1) as `ls -b` writes them: a file name's newline would
#: split a line, its ESC sequences would drive the terminal (clear it, set its title).
#: Also the line and paragraph separators, and the marks and overrides that reorder
#: the text after them (a name with U+202E shows its end reversed).
_REORDERING = (0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROL_ESCAPES = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))},
    **{ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"},
    **{c: f"\\u{c:04x}" for c in _REORDERING},
}


def _color() -> bool | None:
    """Whether stderr's messages are styled: never with NO_COLOR, always with FORCE_COLOR
    (as rich has them for the table), else where click finds a terminal (None)."""
    if os.environ.get("NO_COLOR"):
        return False
    return True if os.environ.get("FORCE_COLOR") else None


def _echo(text: str) -> None:
    """Results on stdout, and a newline. Not click.echo: it says nothing when stdout's
    reader is gone (`index info | head` exited 0, not 141)."""
    _write_out(f"{text}\n".encode())


def _write_out(data: bytes, inert: bool = True) -> None:
    """`data` on stdout (on a terminal, with `inert`, escaped as _Inert does), 64 KiB at
    a time: one large write to a pipe whose reader goes (`| head`) is cut short without
    an error, and the rest dropped."""
    stream = _stdout_bytes()
    if inert and _isatty(sys.stdout):  # escaped whole: a piece could end inside a character
        data = _Inert.escaped(data)
    for at in range(0, len(data), 1 << 16):
        stream.write(data[at : at + (1 << 16)])
        stream.flush()


def _stdout(inert: bool = True) -> IO[bytes]:
    """The byte stream under stdout; on a terminal, with `inert`, one that escapes the
    control characters it is given (_Inert): results that hold names and ids."""
    stream = _stdout_bytes()
    return _Inert(stream) if inert and _isatty(sys.stdout) else stream  # type: ignore[return-value]


def _stdout_bytes() -> IO[bytes]:
    """The byte stream under stdout, whose every write is whole (_WholeWrites)."""
    stream = _binary(sys.stdout)
    if not isinstance(stream, io.RawIOBase):
        return stream
    whole = _WholeWrites.of.get(stream)
    if whole is None:
        whole = _WholeWrites.of[stream] = _WholeWrites(stream)
        atexit.register(whole.last_flush)
    return whole  # type: ignore[return-value]


class _WholeWrites:
    """stdout's raw file, as Python gives it unbuffered (`python -u`, PYTHONUNBUFFERED,
    which container images often set), buffered and written whole.

    Whole: a raw write() writes what one system call takes, and a signal that lands
    while a full pipe holds it back cuts that short, so the rest of a chunk was dropped
    and the output ended inside a line (Ctrl-C during `fingerprint -j2` into a slow
    reader). Buffered as a buffered stdout is, up to BUFFER bytes and at each flush()
    (the commands flush a batch at a time): a system call for each record was 33,534
    calls for `scan` of 200,000 lines, ~6% of its CPU into a file. One a stream (`of`),
    so that what it holds keeps its place among later writes; what is left at the end
    is written by the exit functions, as the interpreter flushes a buffered stdout.

    Held in an io.BufferedWriter, which counts what each system call wrote in C: counted
    here, a signal's KeyboardInterrupt raised as raw.write() returned (Python runs a
    handler once a call is back) lost the count, and those bytes were written again
    (a batch of `filter`'s lines twice in 8 of 120 traced runs stopped by SIGTERM,
    benchmarks/interrupts.py)."""

    BUFFER = 1 << 16
    of: weakref.WeakKeyDictionary[io.RawIOBase, _WholeWrites] = weakref.WeakKeyDictionary()

    def __init__(self, raw: io.RawIOBase) -> None:
        self.raw = raw
        self.held = _Held(raw, self.BUFFER)

    def write(self, data: bytes) -> int:
        """Hold `data`: taken whole, or not at all where a signal is raised while what
        is held goes out to make room (the commands hold one while they write a record,
        _Writing). One larger than BUFFER gets a buffer as large, until the next flush."""
        if len(data) > self.held.size:
            self.flush()
            self.held = _Held(self.raw, len(data))
        try:
            self.held.write(data)
        except BlockingIOError as e:  # non-blocking, and full: it took the first part
            self._rest(data, e.characters_written)
        return len(data)

    def flush(self) -> None:
        while True:
            try:
                self.held.flush()
                break
            except BlockingIOError:  # non-blocking, and full: wait until it takes more
                select.select([], [self.raw], [])
        if self.held.size > self.BUFFER:
            self.held = _Held(self.raw, self.BUFFER)

    def last_flush(self) -> None:
        """flush(), at exit: a stdout that takes no more was said by the command."""
        with contextlib.suppress(OSError, ValueError):
            self.flush()

    def fileno(self) -> int:
        return self.raw.fileno()

    def _rest(self, data: bytes, taken: int) -> None:
        """Hold `data` from byte `taken` on, once a non-blocking stdout takes more."""
        with memoryview(data) as view:
            while taken < len(view):
                select.select([], [self.raw], [])
                try:
                    self.held.write(view[taken:])
                    return
                except BlockingIOError as e:
                    taken += e.characters_written


class _Held(io.BufferedWriter):
    """_WholeWrites' buffer of `size` bytes, which never closes the raw file under it:
    stdout's, which also the text layer over it writes to."""

    def __init__(self, raw: io.RawIOBase, size: int) -> None:
        super().__init__(raw, size)
        self.size = size

    def close(self) -> None:  # as it is collected: _WholeWrites.last_flush wrote what it held
        pass


class _Inert:
    """stdout on a terminal, where results are read, not kept: the control characters
    and reordering marks that names and ids hold are escaped as on stderr (`\\x1b`,
    `\\u202e`; a crawled id drove the terminal, a trial), tabs and newlines kept, as the
    rows are laid out with them. Redirected, stdout gets every byte as it is."""

    #: DEL and the C1 controls as \u escapes, which JSON reads too (JSON writes the other
    #: controls so itself): a JSONL record shown here stays JSON (`\x7f` is none, a trial).
    _ESCAPES = {
        **{c: e for c, e in _CONTROL_ESCAPES.items() if c not in (ord("\t"), ord("\n"))},
        **{c: f"\\u{c:04x}" for c in range(0x7F, 0xA0)},
    }
    #: What report.RecordWriter escapes in a CSV field written here: tabs and newlines too,
    #: and backslashes, so that an id holding a newline and one holding `\n` differ (a trial).
    field_escapes = {**_CONTROL_ESCAPES, **_ESCAPES, ord("\\"): "\\\\"}

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    @classmethod
    def escaped(cls, data: bytes) -> bytes:
        text = data.decode("utf-8", "surrogateescape")
        return text.translate(cls._ESCAPES).encode("utf-8", "surrogateescape")

    def write(self, data: bytes) -> int:
        return self.stream.write(self.escaped(data))

    def flush(self) -> None:
        self.stream.flush()


def _binary(stream: IO[str]) -> IO[bytes]:
    """The byte stream under stdin or stdout (also under click's CliRunner)."""
    return stream.buffer  # type: ignore[attr-defined,no-any-return]


def _isatty(stream: IO[Any]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def _unsaid_dropped() -> Iterator[None]:
    """A message that stderr cannot take is dropped, and stderr goes to /dev/null: the
    run goes on and its exit status says how it ended, where an I/O error there ended a
    run that went well with exit 1, its outputs short (`2>/dev/full`, a log on a full
    disk). A terminal that hung up (EIO) goes with stdout too
    (_hung_up_terminals_to_devnull), as under `nohup`, and the run ends as its SIGHUP
    says, also where that signal comes after the write (the shell passes it on) or
    never (SIGHUP ignored). (tqdm's bars drop EIO themselves.) A reader of stderr that
    went away (`2>&1 | head`) stops the run quietly, as one of stdout does."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        if e.errno == errno.EIO:
            _hung_up_terminals_to_devnull()
        else:
            _to_devnull(sys.stderr)


#: Lines of one file named with the same problem, at most (Messages._repeated).
SAME_LINES_SAID = 10
#: Said once a run, after its first line that is not UTF-8. Chinese in GBK, read so, is
#: mostly symbols, and different lines were one document: 准备: %s and 打开"%s" were both
#: the word `s` (a trial). No encoding is guessed: 8-bit text decodes as GBK too.
_OTHER_ENCODINGS = (
    "simdedup reads UTF-8, and bytes that are not UTF-8 as Windows-1252; text in another"
    " encoding is read as other words, and Chinese, Japanese or Korean (GBK, GB18030, Big5,"
    " Shift_JIS, EUC-KR) mostly as symbols, so that different lines can be one document:"
    " convert such input to UTF-8 first (iconv -f GB18030 -t UTF-8, or the encoding's name)"
)
_DIGITS = re.compile(r"[0-9][0-9,.]*")


class Messages:
    """Everything said on stderr: input problems, the summary, --verbose details. What
    they hold of file names and ids is made inert (_one_line); only our styles remain."""

    def __init__(self, quiet: bool = False, verbose: bool = False) -> None:
        if quiet and verbose:
            raise click.UsageError("-q (say nothing but errors) and -v (say more) ask for opposite things")
        self.quiet, self.verbose = quiet, verbose
        self.progress_active = False
        #: (file, message) -> how many lines of that file had it said (_repeated)
        self._lines_said: dict[tuple[str, str], int] = {}
        self._encodings_said = False

    def _say(self, text: str) -> None:
        with _unsaid_dropped():
            if self.progress_active:
                from tqdm import tqdm

                # Only on a terminal (see _progress), so styles stay unless NO_COLOR says no.
                tqdm.write(click.unstyle(text) if _color() is False else text, file=sys.stderr)
            else:
                click.echo(text, err=True, color=_color())

    def problem(self, p: Problem) -> None:
        message = self._repeated(p)
        if message is None:
            return
        if p.severity == "error":
            self._say(
                f"{_one_line(p.where)}: {click.style('error', fg='red', bold=True)}: {_one_line(message)}"
            )
        else:
            self.warn(p.where, message)
        # Not of UTF-16's, nor of a JSON string's lone surrogate: their bytes were UTF-8 (a review).
        if p.message.startswith("invalid UTF-8 at") and not self._encodings_said and not self.quiet:
            self._encodings_said = True
            self._say(f"{click.style('note', fg='cyan')}: {_OTHER_ENCODINGS}")

    def _repeated(self, p: Problem) -> str | None:
        """The message to say of a line's problem, or None once SAME_LINES_SAID lines of
        its file had it (its numbers aside): a misspelt --text-field said so of each of
        2,520 records (of a 10M-line crawl, 10M times; a trial). Every one still counts
        in the summary."""
        path, _, line = p.where.rpartition(":")
        if not path or not line.isdigit():
            return p.message
        # numbers aside: "invalid UTF-8 at byte 41" is one problem however many lines say it
        key = (path, _DIGITS.sub("N", p.message))
        said = self._lines_said[key] = self._lines_said.get(key, 0) + 1
        if said < SAME_LINES_SAID:
            return p.message
        if said == SAME_LINES_SAID:
            return f"{p.message} (and so on: later lines of this file with this problem are not named)"
        return None

    def warn(self, where: str, message: str) -> None:
        if not self.quiet:
            self._say(f"{_one_line(where)}: {click.style('warning', fg='yellow')}: {_one_line(message)}")

    def info(self, text: str) -> None:
        if not self.quiet:
            self._say(_one_line(text))

    def detail(self, text: str) -> None:
        if self.verbose and not self.quiet:
            self._say(_one_line(text))


def _shown_path(path: bytes) -> bytes:
    return _one_line(os.fsdecode(path)).encode("utf-8")


def _one_line(text: str) -> str:
    """A file name or id as shown on stderr or in the table, on one line and inert: a
    byte that is not UTF-8 and a control character are escaped (\\xNN, \\n)."""
    return printable(text).translate(_CONTROL_ESCAPES)


def _progress(items: Iterator[Decision], messages: Messages, streamed: bool = False) -> Iterator[Decision]:
    """A tqdm counter on stderr, only when stderr is a terminal and not -q; and not where
    records or documents are `streamed` to stdout while it runs and stdout is a terminal
    too (`tail -f log | simdedup filter`): the counter would be drawn into the lines."""
    if messages.quiet or not _isatty(sys.stderr) or (streamed and _isatty(sys.stdout)):
        yield from items
        return
    from tqdm import tqdm

    messages.progress_active = True
    try:
        with tqdm(items, unit=" docs", file=sys.stderr, dynamic_ncols=True, leave=False) as bar:
            yield from bar
    finally:
        messages.progress_active = False


# ---------------------------------------------------------------- shared options


class Number(click.FloatRange):
    """click's FloatRange without NaN, which every comparison of its range lets through
    (`--verify nan` reached the library's check: a traceback, exit 1)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


class Size(click.ParamType):
    """A byte count with an optional K, M or G suffix (powers of 1024)."""

    name = "SIZE"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("B").removesuffix("I")
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        try:
            n = int(float(text[:-1] if scale > 1 else text) * scale)
        except (ValueError, OverflowError):  # OverflowError: inf, 1e400
            self.fail(f"{value!r} is not a size like 16M", param, ctx)
        if n < 1:
            self.fail("must be at least 1 byte", param, ctx)
        return n


def fingerprint_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options that decide a fingerprint, spelled the same in every command."""
    options = [
        click.option(
            "--tokenizer",
            type=click.Choice(TOKENIZERS),
            default=DEFAULTS.tokenizer,
            show_default=True,
            help="auto: jieba's words for runs of Chinese characters, Unicode words elsewhere"
            " (jieba: the same, another name for it); words: Unicode words only; chars:"
            " character n-grams (--ngram).",
        ),
        click.option(
            "--ngram",
            type=click.IntRange(1),
            default=DEFAULTS.ngram,
            show_default=True,
            help="Character n-gram length for --tokenizer chars.",
        ),
        click.option(
            "--shingle",
            type=click.IntRange(1),
            default=DEFAULTS.shingle,
            show_default=True,
            help="Join N consecutive word tokens into one feature.",
        ),
        click.option(
            "--weights",
            type=click.Choice(WEIGHTS),
            default=DEFAULTS.weights,
            show_default=True,
            help="Feature weight: term frequency, TF x IDF (jieba's IDF table: Chinese words"
            " only; every other feature gets its median, so English is weighed as by tf), or 1.",
        ),
        click.option(
            "--top-k",
            type=click.IntRange(0),
            default=DEFAULTS.top_k,
            show_default=True,
            help="Keep only the N heaviest features (0: all; not with --weights binary).",
        ),
        click.option(
            "--fold/--no-fold",
            default=DEFAULTS.fold,
            show_default=True,
            help="Fold traditional Chinese to simplified (with Taiwan phrasing) before making features.",
        ),
        click.option(
            "--bits",
            type=click.Choice(["64", "128"]),
            default=str(DEFAULTS.bits),
            show_default=True,
            help="Fingerprint width.",
        ),
        click.option(
            "-k",
            "--distance",
            type=click.IntRange(0, MAX_DISTANCE),
            default=DEFAULTS.distance,
            show_default=True,
            help="Candidates differ in at most this many bits (and reach --verify's Jaccard to be"
            " near-duplicates; with verification, short documents and head fingerprints find"
            " candidates too).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _named(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise click.BadParameter("an empty or blank name (leave the option out for the start time)")
    if value is not None and printable(value) != value:  # bytes that are not UTF-8 in argv
        raise click.BadParameter(f"'{printable(value)}' is not UTF-8 text, which the index stores")
    return value


def _index_file(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if isinstance(value, tuple):  # index merge's INPUTS
        return tuple(_index_file(ctx, param, v) for v in value)  # type: ignore[return-value]
    if value == "":
        raise click.BadParameter(_EMPTY_PATH)
    if value == "-":
        raise click.BadParameter("an index is a file, not stdin or stdout: name it (./- for a file named -)")
    if value is not None and value.endswith(("/", os.sep)):
        raise click.BadParameter(f"an index is a file, not a directory: {printable(value)}")
    return value


#: An option's path given as "": a cron job's unset variable. Taken as the current
#: directory, `--index ""` said "cannot use index .", and `--summary-json ""` wrote a
#: temporary file into the directory above it and failed (a trial).
_EMPTY_PATH = "an empty path (an unset variable?): name a file"


def _once(value: tuple[str, ...], why: str) -> str | None:
    """The one path of an option taken with multiple=True, so that a second one is seen
    (click took it in the first's place, without a word): the same one twice is one."""
    if "" in value:
        raise click.BadParameter(_EMPTY_PATH)
    if len(set(value)) > 1:
        raise click.BadParameter(f"given {len(value)} times ({', '.join(map(printable, value))}): {why}")
    return value[-1] if value else None


def _one_index(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str | None:
    """The one --index of scan and filter. Given twice, only the last was checked against
    and saved (a trial)."""
    why = "a run checks against one index, and saves it; `simdedup index merge` makes one of several"
    return _index_file(ctx, param, _once(value, why))


def _one_output(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str | None:
    """An output file option. Given twice, the first file was never written (a trial)."""
    return _once(value, "it names one file")


def output_option(name: str, help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An output file option of scan and filter, taken once (_one_output)."""
    return click.option(name, metavar="FILE", multiple=True, callback=_one_output, help=help)


#: An input path: one that cannot be read is the reader's error for that input (the
#: others are read, exit 3), not a usage error that stops the run before it starts.
_INPUT = click.Path(readable=False)


def input_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """How inputs are read, spelled the same in every command."""
    options = [
        click.option(
            "--jsonl",
            is_flag=True,
            help="Read files and stdin as JSONL (automatic for *.jsonl and *.ndjson).",
        ),
        click.option("--text-field", default="text", show_default=True, help="JSONL field with the text."),
        click.option(
            "--id-field",
            help="JSONL field with the id.  [default: id; PATH:LINE for a record without it]",
        ),
        click.option(
            "--features-field",
            metavar="FIELD",
            help="JSONL field with a {feature: weight} object to fingerprint as is, instead of text."
            " Such records have no text to verify: they are decided on their fingerprints alone.",
        ),
        click.option(
            "--glob",
            multiple=True,
            metavar="PATTERN",
            callback=_matchable,
            help="In directories, read only the files whose name, or path below the directory"
            " given, matches (fnmatch: '*.txt', 'en/*'; '**/' is any folders or none).",
        ),
        click.option(
            "--exclude",
            multiple=True,
            metavar="PATTERN",
            callback=_matchable,
            help="In directories, skip the files and folders whose name, or path below the"
            " directory given, matches ('drafts', 'zh/*', '*_copy.txt', '**/build').",
        ),
        click.option(
            "--max-doc-size",
            type=Size(),
            default="16M",
            show_default=True,
            help="Fingerprint only the first SIZE of larger documents (with an error).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def verify_option(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "--no-verify",
        is_flag=True,
        help=f"Decide on fingerprints alone: less memory (no {SKETCH.nbytes}-byte sketch per kept"
        " document) and a little faster, but near-misses of the threshold become duplicates.",
    )(f)
    return click.option(
        "--verify",
        type=Number(0, 1, min_open=True),
        default=MIN_JACCARD,
        show_default=True,
        metavar="JACCARD",
        help="A candidate is a duplicate only if the texts' word 3-shingles (Chinese: character"
        " 3-grams) have an estimated Jaccard similarity >= JACCARD (exact for short documents).",
    )(f)


def _verify(kw: dict[str, Any]) -> float | None:
    """The minimum Jaccard of --verify, or None with --no-verify (not both)."""
    verify, off = kw.pop("verify"), kw.pop("no_verify")
    given = click.get_current_context().get_parameter_source("verify") is ParameterSource.COMMANDLINE
    if off and given:
        raise click.UsageError("--verify and --no-verify contradict each other: give one")
    if off and kw.get("crowd"):
        raise click.UsageError(
            "--crowd bounds the kept documents that verification compares, and --no-verify compares"
            " none (it keeps no crowd: a near document is a duplicate): give one"
        )
    return None if off else verify


def crowd_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--crowd",
        type=click.IntRange(0),
        default=CROWD,
        show_default=True,
        metavar="N",
        help="Leave a document out of the index if it is kept while N kept documents within the"
        " distance are in it: later documents then find it only as an exact copy. Bounds the work"
        " on text of few distinct words (rows of numbers, one template's log lines), which"
        f" otherwise grows with the square of the input; {SUGGESTED_CROWD} suits such input."
        " 0: every kept document is indexed.",
    )(f)


def _deduplicator(settings: Settings, kw: dict[str, Any]) -> Deduplicator:
    """The Deduplicator of --verify/--no-verify and --crowd."""
    verify = _verify(kw)
    return deduplicator(settings, verify, kw.pop("crowd"))


def _reworded(**helps: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The help of shared options (by parameter name) as one command reads them: below
    @main.command(), above the options."""

    def reword(f: Callable[..., Any]) -> Callable[..., Any]:
        for param in getattr(f, "__click_params__", []):
            if param.name in helps:
                param.help = helps[param.name]
        return f

    return reword


def message_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option(
        "-v", "--verbose", is_flag=True, help="Also report settings, index layout and verification."
    )(f)
    return click.option("-q", "--quiet", is_flag=True, help="Say nothing on stderr but errors.")(f)


_JOBS_HELP = (
    "Read and fingerprint in N processes (0: one per CPU where fingerprinting is the slow"
    " part, as with Chinese text, timed on the first documents; else this one, as for"
    " English text). Deciding stays in this process, so where it is the slow part more"
    " processes gain nothing (English: -j2 ~0.9x of -j1). The results are the same for every N."
)


#: Worker processes a CPU at most: each keeps a core busy, so more only cost memory and
#: switching, and `-j 1000000` (a slip of the keyboard) forked until the system refused.
JOBS_A_CPU = 4


def _jobs_within_reason(ctx: click.Context, param: click.Parameter, value: int) -> int:
    cpus = default_jobs()
    if value > JOBS_A_CPU * cpus:
        raise click.BadParameter(
            f"{value} processes on {cpus} CPU{'s' if cpus > 1 else ''}: at most {JOBS_A_CPU * cpus} "
            f"({JOBS_A_CPU} a CPU; each keeps one busy, so more would only slow the run down)"
        )
    return value


def _matchable(ctx: click.Context, param: click.Parameter, patterns: tuple[str, ...]) -> tuple[str, ...]:
    """--glob and --exclude patterns, refused where they can match nothing: a name or a
    path below the directory given never ends with '/' nor starts with './' or '/'
    (`--exclude 'en/'`, as rsync and .gitignore have it, left every file in)."""
    for pattern in patterns:
        if pattern.startswith("/"):  # an absolute path, or the folder's own, let a trial's drafts be read
            raise click.BadParameter(
                f"{pattern!r} can match nothing: a name, or a path below the directory given, has no "
                "leading / (for DIR/drafts, give 'drafts')"
            )
        fixed = pattern.rstrip("/").removeprefix("./")
        if fixed != pattern:
            raise click.BadParameter(
                f"{pattern!r} can match nothing: a name, or a path below the directory given, "
                f"has no {'trailing /' if pattern.endswith('/') else 'leading ./'} ({fixed!r} may be meant)"
            )
    return patterns


def jobs_option(f: Callable[..., Any], help: str = _JOBS_HELP) -> Callable[..., Any]:
    return click.option(
        "-j",
        "--jobs",
        type=click.IntRange(0),
        default=AUTO,
        show_default=True,
        callback=_jobs_within_reason,
        help=f"{help} At most {JOBS_A_CPU} a CPU.",
    )(f)


def index_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The stored index options of scan and filter, spelled the same in both."""
    options = [
        click.option(
            "--index",
            "index_path",
            metavar="PATH",
            multiple=True,  # to refuse a second one, which click would take in the first's place
            callback=_one_index,
            help="Also check against the documents kept in PATH by earlier runs; add this run's "
            "kept ones and save PATH at the end (created if missing).",
        ),
        click.option(
            "--wait",
            type=Number(0),
            default=0,
            metavar="SECONDS",
            help="If another run is using --index, wait up to SECONDS for it (default: fail at once).",
        ),
        click.option(
            "--run-name",
            metavar="NAME",
            callback=_named,
            help="Name this run in --index, as duplicates of its documents will show it "
            "(default: its start time, UTC; to the microsecond where a run of that second is in it).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _index_session(
    kw: dict[str, Any], settings: Settings, messages: Messages
) -> IndexSession | contextlib.nullcontext[None]:
    """The --index session (locked and loaded on entry), or nothing without --index."""
    path, wait, run_name = kw.pop("index_path"), kw.pop("wait"), kw.pop("run_name")
    if path is None and (run_name is not None or wait):
        # A cron line that lost its --index would check nothing against earlier nights.
        given = "--run-name" if run_name is not None else "--wait"
        raise click.UsageError(f"{given} is for a run with --index PATH, and none is given")
    if path is None:
        return contextlib.nullcontext()
    return IndexSession(path, settings, wait=wait, run_name=run_name, on_wait=messages.info)


def _settings(kw: dict[str, Any]) -> Settings:
    if kw["tokenizer"] != "chars" and _given("ngram"):
        raise click.UsageError(
            f"--ngram is the length of --tokenizer chars's features; with --tokenizer {kw['tokenizer']} "
            "it would do nothing"
        )
    if kw.get("features_field") is not None and (text := [n for n in _TEXT_SETTINGS if _given(n)]):
        # Taken and ignored, they were recorded in --index, which then refused a run
        # without them whose fingerprints were the same (a review).
        option = "--fold/--no-fold" if text[0] == "fold" else f"--{text[0].replace('_', '-')}"
        raise click.UsageError(
            f"{option} is how a text becomes weighted features, and --features-field records "
            "give theirs: it would do nothing"
        )
    if kw["top_k"] and kw["weights"] == "binary":  # refused here: indexes made so before stay readable
        raise click.UsageError(
            "--top-k keeps the heaviest features, and with --weights binary every feature weighs"
            " the same: it would keep the alphabetically first ones"
        )
    if kw.get("features_field") is not None and _given("text_field"):  # taken and ignored (a trial)
        raise click.UsageError(
            "--text-field names the field that records hold their text in, and --features-field"
            " records are read for their features: it would do nothing"
        )
    if kw.get("features_field") is not None and _given("verify"):
        raise click.UsageError(
            "--verify compares the texts' shingles, and --features-field records have no text:"
            " it would do nothing"
        )
    try:
        return Settings(
            tokenizer=kw.pop("tokenizer"),
            ngram=kw.pop("ngram"),
            shingle=kw.pop("shingle"),
            weights=kw.pop("weights"),
            top_k=kw.pop("top_k"),
            fold=kw.pop("fold"),
            bits=int(kw.pop("bits")),
            distance=kw.pop("distance"),
        )
    except SettingsError as e:  # options that do not fit together: a usage error, as the others
        raise click.UsageError(str(e)) from None


#: The settings that make a text's features and weights (nothing of a record's given ones).
_TEXT_SETTINGS = ("tokenizer", "ngram", "shingle", "weights", "top_k", "fold")


def _read_options(kw: dict[str, Any], sources: list[str]) -> ReadOptions:
    id_field = kw.pop("id_field")  # None: not given; '' is a field name, as for --text-field
    options = ReadOptions(
        jsonl=kw.pop("jsonl"),
        text_field=kw.pop("text_field"),
        id_field="id" if id_field is None else id_field,
        id_named=id_field is not None,
        features_field=kw.pop("features_field"),
        glob=kw.pop("glob"),
        exclude=kw.pop("exclude"),
        max_doc_size=kw.pop("max_doc_size"),
    )
    _check_fields(sources, options)
    walked = ("glob", "exclude")
    if (given := next((n for n in walked if _given(n)), None)) and not any(map(os.path.isdir, sources)):
        raise click.UsageError(
            f"--{given} chooses among the files of a directory, and no directory is given: "
            "it would do nothing"
        )
    return options


def _given(name: str) -> bool:
    """Whether the option of parameter `name` was given on the command line."""
    return click.get_current_context().get_parameter_source(name) == ParameterSource.COMMANDLINE


#: The options that only JSONL records have a use for.
_RECORD_FIELDS = ("text_field", "id_field", "features_field")


def _check_fields(sources: list[str], options: ReadOptions) -> None:
    """A field option given where no input is read as JSONL records would do nothing:
    each JSON line would be fingerprinted whole, its markup and id too (a trial)."""
    given = [name for name in _RECORD_FIELDS if _given(name)]
    if given and not any(options.is_jsonl(s) and not os.path.isdir(s) for s in sources):
        option = "--" + given[0].replace("_", "-")
        if options.jsonl:  # only directories, whose files are documents, never records
            raise click.UsageError(
                f"{option} names a field of JSONL records, and each file in a directory is one"
                " document, never records: name the JSONL files instead (DIR/*.jsonl)"
            )
        raise click.UsageError(
            f"{option} names a field of JSONL records, and no input is read as JSONL:"
            " give --jsonl (stdin, and files not named *.jsonl or *.ndjson are read as lines)"
        )


def _sources(paths: tuple[str, ...], called: str = "PATH") -> list[str]:
    """The inputs given, or stdin where none is: `called`, the arguments' name in --help."""
    if paths:
        return list(paths)
    if _isatty(sys.stdin):
        raise CliError(f"no input: give a {called}, or pipe documents to stdin (see --help)")
    return [STDIN]


# ---------------------------------------------------------------- output files


#: The outputs that write documents back as they came, not records about them.
_DOCUMENTS = ("--unique", "filter output")
#: The outputs written whole at the end, into a temporary file renamed over the old one.
_REPLACED = ("--summary-json",)


class Outputs(contextlib.ExitStack):
    """Output files, opened before any work (so a bad path fails at once) and always
    closed; "-" is stdout, which then belongs to that output alone. A file is one
    output's: one that is an input, inside an input directory (where reading it would
    read it), the --index or its lock file, or another output is refused. Every output
    `planned` is checked, and opened without being emptied, before any is opened,
    which empties it: a clash or a path that cannot be written, found at the third
    output, must not have emptied the first two."""

    def __init__(
        self,
        sources: list[str],
        index: str | None = None,
        options: ReadOptions | None = None,
        planned: Iterable[tuple[str | None, str]] = (),
    ) -> None:
        super().__init__()
        self.sources = [s for s in sources if s != STDIN]
        self.stdin = _stdin_file(sources)
        self.options = options or ReadOptions()
        # the index's lock file too: written over or renamed over, it no longer locks
        self.taken: list[tuple[str, str]] = (
            [(index, "--index"), (lock_path(os.path.realpath(index)), "--index's lock file")] if index else []
        )
        self.stdout_owner: str | None = None
        self._files: list[tuple[IO[bytes], IO[bytes]]] = []  # (stream, its file) of each document output
        for path, what in planned:
            self._claim(path, what)
        _refuse_stdout_clash(self.sources, self.taken, self.options)
        self._try_opening(planned)

    def _try_opening(self, planned: Iterable[tuple[str | None, str]]) -> None:
        """Open each planned output file as open() will, but without emptying it: a file
        for writing, a replacing output's temporary file beside it. A file made here is
        removed again if a later one fails. A pipe or a device is left alone (opening and
        closing a named pipe would end its reader's input)."""
        made: list[str] = []
        try:
            for path, what in planned:
                path = _stdout_named(path)
                if path is None or path == "-" or (os.path.exists(path) and not os.path.isfile(path)):
                    continue
                target = os.path.realpath(path)
                try:
                    if what in _REPLACED and self._replaceable(path):
                        fd, written = temporary_beside(target)
                        os.close(fd)
                        os.unlink(written)
                    else:
                        new = not os.path.lexists(path)
                        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o666))
                        if new:
                            made.append(path)
                except OSError as e:
                    raise CliError(f"{path}: cannot write {what}: {e.strerror or e}") from e
        except CliError:
            for path in made:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise

    def _claim(self, path: str | None, what: str) -> None:
        # /dev/null drops all: outputs (and stdout) share it, where two were refused as one file
        if path not in (None, "-") and _same_file(path, os.devnull):
            return
        path = _stdout_named(path)
        if path is None or (path, what) in self.taken or (path == "-" and self.stdout_owner == what):
            return
        if path != "-" and _stderr_file_named(path):
            raise CliError(f"{what} {path} is the file stderr writes to; the messages would write over it")
        if path == "-":
            if self.stdout_owner:
                raise CliError(f"{what} and {self.stdout_owner} cannot both write to stdout")
            self.stdout_owner = what
            return
        if _names(path, self.stdin):
            raise CliError(f"{what} {path} is the file stdin reads; it would be overwritten")
        for source in self.sources:
            with contextlib.suppress(OSError):
                if os.path.samefile(source, path):
                    raise CliError(f"{what} {path} is also an input; it would be overwritten")
            if os.path.isdir(source) and walk_reads(source, path, self.options):
                raise CliError(f"{what} {path} is inside the input directory {source}, which would read it")
        for other, owner in self.taken:
            if _same_file(other, path):
                raise CliError(f"{what} and {owner} are the same file, {path}")
        self.taken.append((path, what))

    def open(self, path: str | None, what: str) -> IO[bytes] | None:
        """The output's stream. For the outputs _REPLACED, a temporary file beside it that
        is renamed over it once the command ends without an error, and removed otherwise:
        the file keeps what it held (yesterday's summary) unless the run ends well."""
        if path is None:
            return None
        self._claim(path, what)
        if _stdout_named(path) == "-":  # records shown inert on a terminal; documents as they are
            return _stdout(inert=what not in _DOCUMENTS)
        target = os.path.realpath(path)
        replace = what in _REPLACED and self._replaceable(path)
        try:
            if replace:
                file = _MadeOnWrite(target)
                self.push(file.put_in_place)  # after it is closed
            else:
                file = open(path, "wb", buffering=0)  # noqa: SIM115 (closed by the stack)
            raw = self.enter_context(io.BufferedWriter(_NamedFile(file, path, what)))
            codec = codec_for(path)
            stream = codec.open(raw, "wb") if codec else raw
        except (OSError, ImportError) as e:
            raise CliError(f"{path}: cannot write {what}: {getattr(e, 'strerror', None) or e}") from e
        if what not in _REPLACED:  # --summary-json: written by _finish, before the save
            self._files.append((stream, raw))
        return self.enter_context(stream)

    def end(self) -> None:
        """Every output file's last bytes written: each compressed stream ended (a
        compressor holds its last block, and gzip's, xz's, bzip2's and zstd's end marks,
        until then) and each file flushed. Done before the --index is saved, so that a
        full disk stops the run with the index as it was (a review: an xz --unique on
        /dev/full exited 2 with the index saved, and a kill after the save left every
        compressed output cut short). Closing them later writes nothing more."""
        for stream, raw in self._files:
            if stream is not raw:
                stream.close()  # into raw, which it does not close
            raw.flush()

    def unread(self, options: ReadOptions) -> ReadOptions:
        """`options` with the files this run writes, once they are open (ReadOptions.written):
        the outputs, the --index and its lock file, stdout and stderr (a replacing
        output's temporary file is made once the reading is done). Refused above by path, they can
        still be reached through a link that a walk follows out of an input directory."""
        written: set[tuple[int, int] | None] = set(_written_streams())
        for path, _ in self.taken:
            with contextlib.suppress(OSError):
                written.add(file_identity(os.stat(path)))
        return dataclasses.replace(options, written=frozenset(written - {None}))

    def _replaceable(self, path: str) -> bool:
        """Whether `path` can be written as a temporary file renamed over the file it
        names (os.path.realpath). Not a device or a pipe (/dev/stderr, /dev/full): the
        file would take its place. Asked of the path, links followed, not of its real
        path: a pipe's /dev/fd/N resolves to pipe:[N], which names no file, so bash's
        `--summary-json >(jq .)` was refused (a trial). Not where an input directory
        would read the temporary file as a document (--exclude left out the output's
        name, not the temporary one's)."""
        if os.path.exists(path) and not os.path.isfile(path):
            return False
        target = os.path.realpath(path)
        temporary = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.XXXXXXXX.tmp")
        return not any(os.path.isdir(s) and walk_reads(s, temporary, self.options) for s in self.sources)


class OutputFailed(OSError):
    """A write to an output file that failed, with the output named: a full disk, or a
    pipe whose reader quit. Not a BrokenPipeError, which ends a run quietly (exit 141)
    only where stdout's reader quit: a trial's `--duplicates >(head -c 10)` ended the
    run with no message and exit 141, its other outputs cut short."""

    def __init__(self, what: str, path: str, error: OSError) -> None:
        super().__init__(error.errno, error.strerror)
        self.what, self.path = what, path

    def __str__(self) -> str:
        why = "its reader quit (broken pipe)" if self.errno == errno.EPIPE else self.strerror
        return f"{self.what} {printable(self.path)}: cannot write more: {why}"


class _NamedFile(io.RawIOBase):
    """An output file's writes, whose errors name the output (OutputFailed). Under a
    BufferedWriter, as open() gives one, so it is called a buffer at a time."""

    def __init__(self, file: io.FileIO, path: str, what: str) -> None:
        super().__init__()
        self.file, self.path, self.what = file, path, what

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int | None:
        try:
            return self.file.write(b)
        except OSError as e:
            raise OutputFailed(self.what, self.path, e) from e

    def fileno(self) -> int:
        return self.file.fileno()

    def isatty(self) -> bool:
        return self.file.isatty()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.file.close()


class _MadeOnWrite(io.RawIOBase):
    """A replacing output's file: a temporary file beside its target (store.temporary_beside),
    made by the first write, and renamed over the target once the command ends without
    an error (put_in_place), or removed. Made as the run started, it was left behind by
    every kill before the end: 13 kills, 13 empty .sum.json.XXXXXXXX.tmp (a trial); now
    only by one from the write, just before the --index is saved, to the rename just
    after the save (0.13-0.2 s for an index of 300,000 rows, a review)."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target, self.written, self.fd = target, "", -1

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        if self.fd < 0:
            self.fd, self.written = temporary_beside(self.target)
            keep_owner_and_mode(self.written, self.target, replacing_mode(self.target))
        return os.write(self.fd, b)

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        if self.fd >= 0 and not self.closed:
            os.close(self.fd)
        super().close()

    def put_in_place(self, kind: Any, error: Any, tb: Any) -> None:
        if not self.written:
            return
        if kind is None:
            os.replace(self.written, self.target)
        else:
            with contextlib.suppress(OSError):
                os.unlink(self.written)


def _outputs_planned(kw: dict[str, Any], *first: tuple[str | None, str]) -> list[tuple[str | None, str]]:
    """A deciding command's outputs, as Outputs checks them before opening any."""
    named = [
        (kw["duplicates"], "--duplicates"),
        (kw["report"], "--report"),
        (kw["summary_json"], "--summary-json"),
    ]
    return [*first, *named]


def _index_files(*paths: str, called: str = "the index") -> list[tuple[str, str]]:
    """Each index named and its lock file, with how messages name them."""
    return [
        pair
        for path in paths
        for pair in (
            (path, f"{called} {path}"),
            (lock_path(os.path.realpath(path)), f"{called} {path}'s lock file"),
        )
    ]


def _refuse_stderr_into(files: Iterable[tuple[str, str]]) -> None:
    """Refuse a stderr that is an index or its lock file (`2>> crawl.sdx`): the run's
    messages would be written into it and break it (a settings error did, and a merge's
    warning into an input). The refusal is said nowhere, for the same reason: exit 2
    says it."""
    err = _regular(_stat_of(sys.stderr))
    for path, what in files:
        if err is not None and _names(path, err):
            _to_devnull(sys.stderr)
            raise CliError(f"stderr is {what}: its messages would be written into it")


def _refuse_index_in_inputs(sources: Sequence[str], index: str | None, options: ReadOptions) -> None:
    """Refuse an --index that is read as input, before the lock is taken: named as an
    input or its lock file named (`scan crawl/* --index crawl/seen.sdx`), stdin's file,
    or inside an input directory whose walk would read it or its lock file (made before
    the walk: it was read as an empty document). Its bytes would be added to it as
    documents, for good."""
    if not index:
        return
    files = _index_files(index, called="--index")
    _refuse_stderr_into(files)
    stdin = _stdin_file(sources)
    for source in sources:
        for path, what in files:
            if _names(path, stdin if source == STDIN else _stat_path(source)):
                read = "stdin's file" if source == STDIN else f"the input {source}"
                raise CliError(f"{what} is {read}: its bytes would be added to it as documents")
        if os.path.isdir(source) and any(walk_reads(source, p, options) for p, _ in files):
            raise CliError(
                f"--index {index} is inside the input directory {source}, which would read it or "
                "its lock file: keep it outside, or leave it out with --exclude"
            )


def _written_streams() -> frozenset[tuple[int, int]]:
    """The files that stdout and stderr write to, where they are regular files: reached
    through a link in a directory read, they are no documents (a log of the run's own
    messages, `2>> out/err.txt` beside a link to out/, was read as one: a trial)."""
    return frozenset(key for key in (_regular_file_of(sys.stdout), _regular_file_of(sys.stderr)) if key)


def _regular_file_of(stream: Any) -> tuple[int, int] | None:
    st = _stat_of(stream)
    return file_identity(st) if st is not None and stat.S_ISREG(st.st_mode) else None


def _stat_of(stream: Any) -> os.stat_result | None:
    try:
        return os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):  # not a file descriptor (a test's capture)
        return None


def _stat_path(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _stdin_file(sources: Sequence[str]) -> os.stat_result | None:
    """The regular file that stdin reads, where `sources` read stdin."""
    return _regular(_stat_of(sys.stdin)) if STDIN in sources else None


def _regular(st: os.stat_result | None) -> os.stat_result | None:
    """`st` where it is a regular file's: a pipe or a terminal is no file to clash with."""
    return st if st is not None and stat.S_ISREG(st.st_mode) else None


def _names(path: str, st: os.stat_result | None) -> bool:
    try:
        return st is not None and os.path.samestat(os.stat(path), st)
    except OSError:
        return False


def _stdout_named(path: str | None) -> str | None:
    """An output's path, or "-" where it names stdout (/dev/stdout, /dev/fd/1,
    /proc/self/fd/1): opened as a file of its own, it wrote over stdout's file from its
    start, or mixed its records into a pipe's stream that another output owned. (A
    file's own path that stdout is redirected to is refused instead: `--report r > r`.)"""
    if path is None or not path.startswith(("/dev/", "/proc/")):
        return path
    return "-" if _names(path, _stat_of(sys.stdout)) else path


def _stderr_file_named(path: str) -> bool:
    """Whether `path` is the regular file stderr writes to (`--report /dev/stderr 2> e.txt`):
    the messages would write over it. A terminal or a pipe takes both."""
    err = _stat_of(sys.stderr)
    return err is not None and stat.S_ISREG(err.st_mode) and _names(path, err)


def _refuse_stdout_clash(
    sources: Sequence[str], outputs: Iterable[tuple[str, str]] = (), options: ReadOptions | None = None
) -> None:
    """Refuse a stdout or stderr redirected to a file the run reads, as `cat` refuses
    `cat f >> f`: an input (which the run would read back as it grows: each bad line's
    message a new bad line, for ever), a file inside an input directory, or stdin
    itself; and a stdout that is another output (the two would write over each other).
    Checked by the file's identity, before any work."""
    stdin = _stat_of(sys.stdin) if not sources or STDIN in sources else None
    for name, stream, reads in (
        ("stdout", sys.stdout, "what it writes"),
        ("stderr", sys.stderr, "its own messages"),
    ):
        out = _regular(_stat_of(stream))
        if out is not None and (clash := _read_back(name, stream, out, reads, stdin, sources, options)):
            if stream is sys.stderr:  # said, it is written into the input (`2>> bad.jsonl`)
                _to_devnull(sys.stderr)  # the refusal is said nowhere: exit 2 says it
            raise CliError(clash)
    _refuse_stdout_into(outputs)


def _read_back(
    name: str,
    stream: IO[Any],
    out: os.stat_result,
    reads: str,
    stdin: os.stat_result | None,
    sources: Sequence[str],
    options: ReadOptions | None,
) -> str | None:
    """How stdout or stderr (`name`, the regular file `out`) is a file the run reads, or None."""
    if stdin is not None and os.path.samestat(stdin, out):
        return f"{name} is the file stdin reads; it would read {reads}"
    path = None
    with contextlib.suppress(OSError):
        path = os.readlink(f"/proc/self/fd/{stream.fileno()}")  # Linux: the file's path
    for source in sources:
        if source == STDIN:
            continue
        if _names(source, out):
            return f"{name} is the input {source}; it would read {reads}"
        if path and os.path.isdir(source) and walk_reads(source, path, options or ReadOptions()):
            return f"{name} is {path}, inside the input directory {source}, which would read it"
    return None


def _refuse_stdout_into(files: Iterable[tuple[str, str]]) -> None:
    """Refuse a stdout redirected to one of `files` (path, how messages name it): an
    output of the run, or an index (`index info crawl.sdx >> crawl.sdx` broke it)."""
    out = _regular(_stat_of(sys.stdout))
    for path, what in files:
        if out is not None and path != "-" and _names(path, out):
            raise CliError(f"stdout and {what} are the same file, {path}")


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file, made yet or not."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _largest_served(bits: int, distance: int) -> int:
    """The largest distance under `distance` whose index searches by its tables rather
    than comparing every row (Layout.brute_force); -1 for none."""
    return max((k for k in range(distance) if not Layout.for_(bits, k).brute_force), default=-1)


def _warn_if_wide(settings: Settings, messages: Messages) -> None:
    """A distance whose index compares every row (Layout.brute_force) is warned about."""
    if not Layout.for_(settings.bits, settings.distance).brute_force:
        return
    served = _largest_served(settings.bits, settings.distance)
    tables = (
        f" (the index's tables serve -k {served} and below at {settings.bits} bits)" if served >= 0 else ""
    )
    messages.warn(
        f"-k {settings.distance}",
        f"every document is compared with every kept one, so time grows with the square of the input{tables}",
    )


@dataclass
class _Crowding:
    """Warns once, as a run goes, where its documents meet kept ones by the thousand
    that verification then rejects: text whose work grows with the square of the input
    (settings.CROWDED_MEAN)."""

    dd: Deduplicator
    messages: Messages
    warned: bool = False

    def check(self) -> None:
        dd = self.dd
        if self.warned or not isinstance(dd, VerifyingDeduplicator) or dd.crowd:
            return
        if dd.searched >= CROWDED_AFTER and dd.met >= CROWDED_MEAN * dd.searched:
            self.warned = True
            self.messages.warn(
                "verification",
                f"each document met {dd.met // dd.searched:,} kept ones within -k {dd.settings.distance},"
                " on average, whose texts differ (text of few distinct words, such as rows of numbers or"
                " one template's log lines): the time grows with the square of the input. --crowd"
                f" {SUGGESTED_CROWD} bounds it (a document kept among that many is then found only as an"
                " exact copy); --shingle 3 fingerprints the shingles that verification compares",
            )


def _warn_if_name_taken(session: IndexSession, messages: Messages) -> None:
    if session.name_taken:
        messages.warn(
            str(session.path),
            f"a run named {session.run_name!r} is in it already; duplicate_of_run cannot tell them apart",
        )


def _record_writers(
    outputs: Outputs, kw: dict[str, Any], dd: Deduplicator, session: IndexSession | None = None
) -> list[Any]:
    """The --duplicates and --report writers, in the format each file name asks for;
    with --index, both name the run that kept a duplicate's original."""
    bits, writers = dd.settings.bits, []
    run_of = session.run_of if session is not None else None
    if (f := outputs.open(kw["duplicates"], "--duplicates")) is not None:
        fmt = _record_format(kw["duplicates"], kw)
        writers.append(DuplicatesWriter(f, fmt, bits, dd.index.fingerprints, run_of))
    if (f := outputs.open(kw["report"], "--report")) is not None:
        writers.append(ReportWriter(f, _record_format(kw["report"], kw), bits, run_of))
    return writers


def _record_format(path: str, kw: dict[str, Any]) -> str:
    """The format of a file of records: as its name asks (report.format_for); on stdout,
    whose name asks nothing, as `scan --format` asks, where that is a record format
    (`--duplicates - --format csv`: the group listing it formats is not printed)."""
    if _stdout_named(path) == "-" and kw.get("fmt") in (*TABULAR, "jsonl"):
        return str(kw["fmt"])
    return format_for(path)


def _unique_writer(stream: IO[bytes], name: str, kw: dict[str, Any]) -> UniqueWriter:
    """The writer of unique documents to `stream`, named `name`: on a terminal, a
    directory member's path (its input form) escaped as names are on stderr."""
    on_terminal = _stdout_named(name) == "-" and _isatty(sys.stdout)
    return UniqueWriter(stream, keep_empty=not kw["drop_empty"], names=_shown_path if on_terminal else None)


def _warn_if_format_unused(kw: dict[str, Any], outputs: Outputs, messages: Messages) -> None:
    """`scan --format` given while another output writes to stdout, where it does not
    make that output's records: nothing it asks for is written."""
    owner, fmt = outputs.stdout_owner, kw["fmt"]
    if fmt and owner in ("--unique", "--summary-json"):  # no records: the documents, one JSON object
        messages.warn(
            f"--format {fmt}", f"it formats the group listing, which is not printed: {owner} writes to stdout"
        )
    elif fmt == "table" and owner:  # csv, tsv and jsonl make those records
        messages.warn(
            f"--format {fmt}",
            f"a table is for the group listing, which is not printed: {owner} writes its records to stdout"
            " as JSONL (--format csv or tsv for those)",
        )


# ---------------------------------------------------------------- the dedup run


class _GroupCount:
    """The groups' sizes without their members: a count of duplicates per kept row (4
    bytes a row), so that `filter` holds nothing per duplicate while it streams."""

    def __init__(self) -> None:
        self._counts = np.zeros(0, np.uint32)
        self._count = 0

    def add(self, decision: Decision) -> None:
        if decision.status == "duplicate" and decision.row is not None:
            row = decision.row
            if row >= len(self._counts):
                grown = np.zeros(max(row + 1, len(self._counts) * 3 // 2, 4096), np.uint32)
                grown[: len(self._counts)] = self._counts
                self._counts = grown
            self._count += not self._counts[row]
            self._counts[row] += 1

    def __len__(self) -> int:
        return self._count

    def sizes(self) -> dict[int, int]:
        """Group size (the kept document and its duplicates) -> how many groups have it."""
        duplicates = self._counts[self._counts > 0]
        sizes, counts = np.unique(duplicates + 1, return_counts=True)
        return dict(zip(sizes.tolist(), counts.tolist()))


class _Problems:
    """Counts the input errors a command reports as they are read."""

    def __init__(self, messages: Messages) -> None:
        self.messages, self.errors = messages, 0

    def __call__(self, p: Problem) -> None:
        self.errors += p.severity == "error"
        self.messages.problem(p)


def _fingerprinted(
    paths: tuple[str, ...], settings: Settings, kw: dict[str, Any], messages: Messages, sketches: bool = False
) -> tuple[Iterator[tuple[Any, ...]], _Problems]:
    """read -> batches -> fingerprints (and sketches) in kw["jobs"] processes, for the
    commands that decide nothing; close the iterator to stop the workers."""
    problems = _Problems(messages)
    sources = _sources(paths)
    stdin = Streams(_binary(sys.stdin))
    options = _read_options(kw, sources)
    if written := _written_streams():  # a folder's link to them: not read back (index query, a review)
        options = dataclasses.replace(options, written=written)
    return pipeline.fingerprinted(sources, stdin, options, settings, kw["jobs"], sketches, problems), problems


def _run(
    sources: list[str],
    settings: Settings,
    read_options: ReadOptions,
    messages: Messages,
    writers: list[Any],
    dd: Deduplicator,
    jobs: int = 1,
    keep_groups: bool = True,
    streamed: bool = False,
) -> tuple[Summary, Groups, bool]:
    """Read, fingerprint (in `jobs` processes), decide and write (`streamed`: one of the
    writers to stdout); returns the summary, the groups (only counted, without
    keep_groups), and whether the run was interrupted."""
    summary = Summary()
    groups: Any = Groups() if keep_groups else _GroupCount()

    def on_problem(p: Problem) -> None:
        if p.severity == "error":
            summary.errors += 1
        else:
            summary.warnings += 1
        summary.skipped += p.skipped
        summary.invalid_utf8 += p.kind == "invalid-utf8"
        messages.problem(p)

    def flush() -> None:  # once a batch is written: what a trickle brought goes out now
        for writer in writers:
            writer.flush()

    # A verifying Deduplicator gets the batch's sketches too, made by the workers.
    stdin = Streams(_binary(sys.stdin))
    verifying = isinstance(dd, VerifyingDeduplicator)
    # Only writing the unique documents back needs their input form from the workers.
    raw = any(isinstance(writer, UniqueWriter) for writer in writers)
    made = pipeline.fingerprinted(sources, stdin, read_options, dd.settings, jobs, verifying, on_problem, raw)

    out = pipeline.HandedOut()
    started = 0  # decisions whose writing began
    crowding = _Crowding(dd, messages)

    def record(decision: Decision) -> None:
        # A Ctrl-C or SIGTERM meanwhile takes effect once all of it is written (_Writing).
        nonlocal started
        _WRITING.now = True
        started += 1
        if verifying and not started % 1024:
            crowding.check()
        try:
            summary.count(decision)
            groups.add(decision)
            for writer in writers:
                writer.write(decision)
        except BaseException:
            _WRITING.now = _WRITING.caught = False
            raise
        _WRITING.done()

    start = time.perf_counter()
    interrupted = False
    decided = pipeline.decisions(made, dd, pipeline.idle_of(sources, stdin), flush, out, _WRITING)
    # named: dropped when the loop ends, it would close `decided`
    shown = _progress(decided, messages, streamed)
    try:
        with _WRITING.installed() as handler:
            try:
                for decision in shown:
                    record(decision)
                handler.pending()  # held or dropped after the last one (_in_del)
            except KeyboardInterrupt:
                interrupted = True
                if handler.again:  # stop at once: nor wait on stdout's reader (the run hung)
                    _to_devnull(sys.stdout)
                    raise CliError(_STOPPED_AT_ONCE, _interrupted()) from None
                # Ctrl-C while writing: the batches already read are still decided, so
                # they are written too, and the outputs (and an --index saved after) hold
                # the same documents: the one handed out but not yet written first.
                with contextlib.suppress(KeyboardInterrupt, StopIteration):
                    if started < out.count and out.last is not None:
                        record(out.last)
                    record(decided.throw(KeyboardInterrupt()))
                    for decision in decided:
                        record(decision)
                if handler.signals > 1:
                    # A second one may have cut that short, here or in pipeline.decisions, which
                    # hands on the batches read when the first comes while it waits: the
                    # deduplicator may hold decisions no output got, so nothing is saved
                    # from it (two trials found --index holding documents that the
                    # outputs never had; counted from here, a second signal in there
                    # passed for the first).
                    raise CliError(_STOPPED_AT_ONCE, _interrupted()) from None
            # Every document read is decided and written: a Ctrl-C or SIGTERM from here
            # on waits for the listing, --summary-json and the --index save (_finishing,
            # which the caller's own _WRITING.installed() reaches with no gap). Raised
            # here, or while the groups were counted (many groups: long), it skipped
            # them all, and the index lacked every document the outputs held (a review).
            handler.now = True
    finally:
        # Closed here, in this thread, also when a write failed: left to the cycle
        # collector, they could be closed in the decide thread, which cannot join itself.
        shown.close()
        decided.close()
    summary.seconds = time.perf_counter() - start
    summary.set_groups(groups.sizes())
    return summary, groups, interrupted


#: scan's default listing on a terminal is a table of up to this many rows: rich lays
#: one out at ~0.3 ms a row (150,000 rows: 51 s and 0.8 GB, against 6 s in TSV; a trial).
TABLE_ROWS = 2000


def _listing_format(groups: Groups) -> tuple[str, str | None]:
    """scan's group listing when --format is not given: a table on a terminal, unless
    its rows are too many to lay out (then TSV, and a note to say after it: said before,
    it scrolled away above thousands of rows, a trial), else TSV."""
    if not _isatty(sys.stdout):
        return "tsv", None
    rows = sum(size * count for size, count in groups.sizes().items())
    if rows <= TABLE_ROWS:
        return "table", None
    return (
        "tsv",
        f"{rows:,} rows: listed as TSV, not as a table (--format table lays them out, at ~0.3 ms a row)",
    )


def _write_groups(groups: Groups, dd: Deduplicator, fmt: str, runs: IndexSession | None) -> None:
    """The group listing on stdout; with --index (`runs`), the run of each row too: ids
    repeat from night to night (`-:1` on stdin)."""
    kept_ids, kept_fps, bits = dd.ids, dd.index.fingerprints, dd.settings.bits
    columns = GROUP_COLUMNS if runs is None else GROUP_RUN_COLUMNS
    if fmt == "table":
        if not groups:
            return  # the summary on stderr says "0 groups"; an empty table says nothing more
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        plain = bool(os.environ.get("NO_COLOR"))  # no styles at all, as on stderr
        bold = None if plain else "bold"
        table = Table(box=None, header_style=bold)
        # Long ids and run names wrap on a narrow terminal; the other columns never do, and
        # none is cut short: a terminal too narrow for them all gets lines wider than it.
        widths = {"status": len("duplicate"), "fingerprint": (bits + 3) // 4, "id": 12, "run": 12}
        for column in columns:
            wraps = column in ("id", "run")
            width = max(len(column), widths.get(column, 0))
            table.add_column(column, overflow="fold", no_wrap=not wraps, min_width=width)
        for row in groups.rows(kept_ids, kept_fps, bits, runs):
            style = bold if row["status"] == "kept" else None
            # Text: an id is shown as it is, never read as rich's markup ("[/x]" raised) or
            # emoji; its backslashes doubled, as TSV has them: a name holding a newline and
            # one holding a backslash and an n were both shown as `a\\nb` (a trial).
            table.add_row(*(Text(_one_line(str(row[c]).replace("\\", "\\\\"))) for c in columns), style=style)
        console = Console(no_color=plain or None)
        console.width = max(console.width, sum(c.min_width or 0 for c in table.columns) + 2 * len(columns))
        if not _isatty(sys.stdout) and "COLUMNS" not in os.environ:  # a file has no width to
            console.width = 1 << 16  # fold ids into (`make demo > f`), unless one is asked for
        with console.capture() as captured:  # rendered for this terminal, colours and width
            console.print(table)
        shown = captured.get()
        if not _isatty(sys.stdout):  # a file's lines end where their text does: diffs show no padding
            shown = "\n".join(line.rstrip(" ") for line in shown.split("\n"))
        # Not by rich: its one large write. Its colours kept: the ids are inert (_one_line).
        _write_out(shown.encode("utf-8"), inert=False)
        return
    stream = _stdout()
    if fmt == "jsonl":
        out = RecordWriter(stream, "jsonl", ())
        for record in groups.records(kept_ids, kept_fps, bits, runs):
            out.write(record)
    else:
        out = RecordWriter(stream, fmt, columns)
        if fmt == "tsv":
            for block in groups.tsv_blocks(kept_ids, kept_fps, bits, runs):
                stream.write(block)
        else:
            for row in groups.rows(kept_ids, kept_fps, bits, runs):
                out.write(row)
    stream.flush()


def _details(messages: Messages, dd: Deduplicator) -> None:
    """--verbose: the settings, the index's layout and size, and verification."""
    stats = dd.index.stats()
    messages.detail(f"settings: {dd.settings}")
    messages.detail(
        f"index: {counted(stats.fingerprints, 'fingerprint')}; {stats.layout}; "
        f"{counted(stats.runs, 'sorted run')} "
        f"and {stats.buffered:,} recent rows compared one by one; largest bucket {stats.largest_bucket:,}; "
        f"{stats.nbytes / max(1, stats.fingerprints):.0f} bytes each (spare room included)"
    )
    if isinstance(dd, VerifyingDeduplicator):
        messages.detail(
            f"verification: estimated Jaccard >= {dd.min_jaccard:g} from {SKETCH.nbytes}-byte sketches "
            f"({SKETCH_SPEC}); candidates also from {len(dd.head_index):,} head fingerprints ("
            f"{HEAD_SPEC}); {dd.sketch_bytes():,} bytes held; a document met "
            f"{dd.met / max(1, dd.searched):,.1f} indexed ones within the distance, kept before its batch,"
            " on average"
        )
    else:
        messages.detail("verification: off (--no-verify): matches are decided on the fingerprint alone")
    if stats.unindexed or getattr(dd, "crowd", 0):
        messages.detail(
            f"crowds (--crowd {getattr(dd, 'crowd', 0)}): {stats.unindexed:,} kept documents are unindexed,"
            " found only as exact copies"
        )


def _finish(
    summary: Summary,
    dd: Deduplicator,
    messages: Messages,
    interrupted: bool,
    fail_on_duplicates: bool,
    summary_json: IO[bytes] | None,
    session: IndexSession | None = None,
    stdout_closed: bool = False,
    held: _Writing | None = None,
) -> ExitStatus:
    """The end of a deciding run: its exit status, the --summary-json record, then the
    --index saved, then the summary on stderr. Every output is written before the save,
    so an output that fails (a full disk) leaves the index as it was, and a rerun of the
    day writes the same documents again. `held`: a Ctrl-C or SIGTERM that came once
    every document was decided (_finishing) makes the status an interrupted one."""

    def signalled() -> bool:  # since every document was decided
        return held is not None and held.caught

    def exit_status() -> ExitStatus:
        if stdout_closed:
            return ExitStatus.BROKEN_PIPE
        if interrupted or signalled():
            return _interrupted()
        if summary.errors:
            return ExitStatus.INPUT_ERRORS
        if fail_on_duplicates and summary.duplicates:
            return ExitStatus.FOUND
        return ExitStatus.OK

    status = exit_status()
    # Inputs that all failed (a missing file from cron), or a run stopped before its
    # first document, record no run: a rerun of the day under its name made two runs of
    # that name (a trial, a review).
    unread = _nothing_read(summary, interrupted)
    if summary_json is not None:  # before the save: a summary that cannot be written stops it
        record = {
            **summary.as_dict(),
            "exit_status": int(status),
            "settings": vars(dd.settings),
            "verify": getattr(dd, "min_jaccard", None),
            "crowd": getattr(dd, "crowd", None),
            "unindexed": dd.index.unindexed,
        }
        if session is not None:
            record["index"] = {
                # \xNN for a byte of the name that is not UTF-8, as in ids (a lone surrogate was
                # written, which JSON readers turn into U+FFFD; a review)
                "path": printable(str(session.path)),
                "run": session.run_name,  # UTF-8: --run-name refuses other bytes
                "loaded": session.loaded,
                "saved": len(dd.index),
                "recorded": not unread,
            }
        summary_json.write((json.dumps(record, indent=2) + "\n").encode("utf-8"))
        summary_json.flush()
    if session is not None and not unread:
        try:
            session.save(dd)
        except KeyboardInterrupt as e:
            # Once the new file had its name (store.write_index), the save is done: the run
            # ends as the first interrupt has it, its outputs kept. It said "left as it
            # was", and a rerun of the day found its documents duplicates of themselves.
            if not getattr(e, "index_saved", False):
                raise CliError(
                    f"interrupted again while saving {session.path}: it is left as it was before this "
                    "run, so it lacks the documents this run wrote to its outputs",
                    _interrupted(),
                ) from None
    status = exit_status()  # a signal may have come since --summary-json was written
    try:
        _said_at_the_end(summary, dd, messages, interrupted, signalled(), session)
    except BrokenPipeError:  # stderr's reader left once every output was written and the index saved
        _to_devnull(sys.stderr)
        return ExitStatus.BROKEN_PIPE  # the outputs stand, --summary-json with the run's own status
    return status


def _nothing_read(summary: Summary, interrupted: bool) -> bool:
    """Whether a run read no document because its inputs all failed (errors) or it was
    interrupted first."""
    return summary.documents == 0 and (summary.errors > 0 or interrupted)


def _said_at_the_end(
    summary: Summary,
    dd: Deduplicator,
    messages: Messages,
    interrupted: bool,
    signalled: bool,
    session: IndexSession | None,
) -> None:
    """_finish's messages on stderr, once the outputs are written and the index saved."""
    if interrupted:
        messages.info("interrupted: the outputs hold every document decided so far")
    elif signalled:
        messages.info("interrupted once every document was decided: the outputs hold all of them")
    if session is not None and session.dropped_sketches:
        messages.info(
            f"index {session.path}: {session.dropped_sketches:,} stored verification sketches were made "
            "by an older simdedup (other shingles) and are not used: those rows match on their "
            "fingerprints alone, as --no-verify would"
        )
    if session is not None and session.alike_sketches:
        messages.info(
            f"index {session.path}: {session.alike_sketches:,} stored verification sketches were made "
            "by an older simdedup, which cut text with Chinese in it by its share of Han characters: "
            "they are used, but a copy of a mixed Chinese and English text may verify lower against them"
        )
    if session is not None and session.unicode_before is not None:
        messages.info(
            f"index {session.path}: last written under Unicode {session.unicode_before}, this Python's "
            f"is {unicodedata.unidata_version}: a text with characters the two treat differently may "
            "fingerprint otherwise, and its stored copies be missed"
        )
    if session is not None and session.dropped_heads:
        messages.info(
            f"index {session.path}: {session.dropped_heads:,} stored head fingerprints were made "
            "by an older simdedup (the first 32 tokens) and are not used: those rows still "
            "match on their fingerprints and sketches, not on heads"
        )
    if session is not None and _nothing_read(summary, interrupted):
        was = f"left as it was ({counted(session.loaded, 'fingerprint')})" if session.existed else "not made"
        messages.info(
            f"index {session.path}: {was}: no document was read, so run {session.run_name!r} is not recorded"
        )
    elif session is not None:
        messages.info(
            f"index {session.path}: {counted(session.loaded, 'fingerprint')} from earlier runs, "
            f"{session.saved - session.loaded:,} added by run {session.run_name!r}"
        )
    messages.info(summary.line())  # last, so that `tail -n 1` of stderr is the summary
    messages.detail(
        f"groups: largest {summary.largest_group:,} documents; by size: "
        + (", ".join(f"{size:,}: {n:,}" for size, n in summary.group_sizes.items()) or "none")
    )
    _details(messages, dd)


def _to_devnull(stream: IO[Any]) -> None:
    """Point `stream` at /dev/null (stdout after a broken pipe, a terminal that hung up),
    so that no later write to it, the interpreter's final flush included, can fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


# ---------------------------------------------------------------- commands


@click.group(cls=SimdedupGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="simdedup", message=_version_message())
def main() -> None:
    """Find near-duplicate text with 64-bit SimHash fingerprints and a block index.

    \b
      simdedup scan corpus/                      # what duplicates what, in a directory
      zcat crawl.jsonl.gz | simdedup filter --jsonl > clean.jsonl
      simdedup compare a.txt b.txt               # why two documents are (not) near

    Run `simdedup COMMAND --help` for each command's options.
    """


@main.command()
@click.argument("paths", nargs=-1, type=_INPUT)
@input_options
@fingerprint_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "tsv", "jsonl", "csv"]),
    help=f"Duplicate groups on stdout: a table on a terminal (up to {TABLE_ROWS:,} rows), tsv otherwise."
    " Also the records of --report - and --duplicates - (csv, tsv, jsonl; default jsonl).",
)
@output_option("--unique", "Write unique documents in their input form ('-': stdout).")
@output_option("--duplicates", "Write one record per duplicate: JSONL, or CSV/TSV by name ('-': stdout).")
@output_option(
    "--report", "Write one record per document, in input order: JSONL, or CSV/TSV by name ('-': stdout)."
)
@output_option("--summary-json", "Write the run's counts as JSON, for cron ('-': stdout).")
@click.option("--fail-on-duplicates", is_flag=True, help="Exit 1 when any duplicate is found.")
@click.option("--drop-empty", is_flag=True, help="Leave empty documents out of --unique.")
@index_options
@verify_option
@crowd_option
@jobs_option
@message_options
def scan(paths: tuple[str, ...], **kw: Any) -> None:
    """Find near-duplicates in files, directories or stdin and list what duplicates what.

    PATH is a directory (each file below it is a document), a file (one document per
    line; JSONL records for *.jsonl or --jsonl), or - for stdin. Files ending in .gz,
    .xz, .bz2 or .zst are decompressed.

    \b
    Examples:
      simdedup scan corpus/
      simdedup scan pages.jsonl --unique kept.jsonl --duplicates dups.csv
      simdedup scan notes.txt --format jsonl -k 5
      simdedup scan crawl/2024-11-22 --index crawl.sdx --duplicates dups.tsv
    """
    sources = _sources(paths)
    settings, read_options = _settings(kw), _read_options(kw, sources)
    if kw["drop_empty"] and kw["unique"] is None:
        raise click.UsageError("--drop-empty leaves empty documents out of --unique, and none is given")
    messages = Messages(kw["quiet"], kw["verbose"])
    dd = _deduplicator(settings, kw)
    _warn_if_wide(settings, messages)
    index_path = kw["index_path"]
    _refuse_index_in_inputs(sources, index_path, read_options)
    planned = _outputs_planned(kw, (kw["unique"], "--unique"))
    with (
        _index_session(kw, settings, messages) as session,
        Outputs(sources, index_path, read_options, planned) as outputs,
    ):
        if session is not None:
            session.preload(dd)
            _warn_if_name_taken(session, messages)
        writers: list[Any] = []
        if (f := outputs.open(kw["unique"], "--unique")) is not None:
            writers.append(_unique_writer(f, kw["unique"], kw))
        writers += _record_writers(outputs, kw, dd, session)
        _warn_if_format_unused(kw, outputs, messages)
        summary_json = outputs.open(kw["summary_json"], "--summary-json")
        read_options = outputs.unread(read_options)
        streamed = outputs.stdout_owner is not None
        with _WRITING.installed():  # one handler from the run to its end (_run)
            summary, groups, interrupted = _run(
                sources, settings, read_options, messages, writers, dd, jobs=kw["jobs"], streamed=streamed
            )
            with _finishing() as held:
                closed = False
                if outputs.stdout_owner is None:
                    fmt, note = (kw["fmt"], None) if kw["fmt"] else _listing_format(groups)
                    try:
                        _write_groups(groups, dd, fmt, session)
                    except BrokenPipeError:  # `scan ... | head`: every document was decided already
                        _to_devnull(sys.stdout)
                        closed = True
                    if note is not None:
                        messages.info(note)
                fail = kw["fail_on_duplicates"]
                outputs.end()
                status = _finish(
                    summary, dd, messages, interrupted, fail, summary_json, session, closed, held
                )
                outputs.close()  # --summary-json renamed into place
    sys.exit(status)


@main.command(name="filter")
@click.argument("source", required=False, type=_INPUT)
@input_options
@fingerprint_options
@output_option("--duplicates", "Also write one record per duplicate (JSONL, CSV, TSV).")
@output_option("--report", "Write one record per document, in input order: JSONL, or CSV/TSV by name.")
@output_option("--summary-json", "Write the run's counts as JSON.")
@click.option("--fail-on-duplicates", is_flag=True, help="Exit 1 when any duplicate is found.")
@click.option("--drop-empty", is_flag=True, help="Leave empty documents out.")
@index_options
@verify_option
@crowd_option
@jobs_option
@message_options
def filter_(source: str | None, **kw: Any) -> None:
    """Copy stdin (or SOURCE) to stdout without its near-duplicates: a pipeline stage.

    Lines (or JSONL records, with --jsonl) come out unchanged, in input order; the
    first of each group of near-duplicates stays. Nothing else is written to stdout.
    A pipe is read thousands of lines at a time while it is full, and line by line
    while its writer is slow (tail -f).

    \b
    Examples:
      zcat crawl.jsonl.gz | simdedup filter --jsonl --duplicates dups.jsonl > clean.jsonl
      zcat today.jsonl.gz | simdedup filter --jsonl --index seen.sdx > new.jsonl
      tail -f app.log | simdedup filter
    """
    # `filter ''` (an unset $FILE) is a file not found, as it is to scan: it read stdin
    sources = _sources((source,) if source is not None else (), "SOURCE")
    settings, read_options = _settings(kw), _read_options(kw, sources)
    messages = Messages(kw["quiet"], kw["verbose"])
    dd = _deduplicator(settings, kw)
    _warn_if_wide(settings, messages)
    index_path = kw["index_path"]
    _refuse_index_in_inputs(sources, index_path, read_options)
    planned = _outputs_planned(kw, ("-", "filter output"))
    with (
        _index_session(kw, settings, messages) as session,
        Outputs(sources, index_path, read_options, planned) as outputs,
    ):
        if session is not None:
            session.preload(dd)
            _warn_if_name_taken(session, messages)
        stdout = outputs.open("-", "filter output")
        assert stdout is not None
        writers: list[Any] = [_unique_writer(stdout, "-", kw)]
        writers += _record_writers(outputs, kw, dd, session)
        summary_json = outputs.open(kw["summary_json"], "--summary-json")
        with _WRITING.installed():  # one handler from the run to its end (_run)
            summary, _, interrupted = _run(
                sources,
                settings,
                outputs.unread(read_options),
                messages,
                writers,
                dd,
                jobs=kw["jobs"],
                keep_groups=False,
                streamed=True,
            )
            with _finishing() as held:
                stdout.flush()
                outputs.end()
                status = _finish(
                    summary,
                    dd,
                    messages,
                    interrupted,
                    kw["fail_on_duplicates"],
                    summary_json,
                    session,
                    held=held,
                )
                outputs.close()  # --summary-json renamed into place
    sys.exit(status)


@main.command()
@_reworded(
    distance="Not used here (a fingerprint does not depend on it); taken so that every command"
    " accepts the same fingerprint options.",
    verbose="Also report the settings.",
)
@click.argument("paths", nargs=-1, type=_INPUT)
@input_options
@fingerprint_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["tsv", "jsonl"]),
    default="tsv",
    show_default=True,
    help="A line per document: its fingerprint and id, tab-separated, or a JSONL record of the two.",
)
@functools.partial(
    jobs_option,
    help="Read, fingerprint and format in N processes (0: one per CPU for stdin and for"
    " files of 2 MiB or more; for a directory, only if fingerprinting is the slow part, as"
    " with Chinese text). The results are the same for every N.",
)
@message_options
def fingerprint(paths: tuple[str, ...], fmt: str, **kw: Any) -> None:
    """Print each document's fingerprint: FINGERPRINT<TAB>ID, in input order.

    An empty document (no features) has no fingerprint: "-" in TSV, null in JSONL.

    \b
    Example:
      simdedup fingerprint corpus/ | sort > fingerprints.tsv
    """
    settings = _settings(kw)
    messages = Messages(kw["quiet"], kw["verbose"])
    stream = _stdout()
    problems = _Problems(messages)
    printed = _printed_chunks(paths, settings, kw, fmt, problems)
    try:
        with contextlib.closing(printed), _WRITING.installed() as handler:
            for text, found in printed:
                for problem in found:
                    problems(problem)
                # A Ctrl-C or SIGTERM meanwhile takes effect once all of it is written:
                # raised inside a write that a slow reader held, it left a line cut short
                # (1 run in 3 of a test, with the machine busy).
                handler.now = True
                stream.write(text)
                stream.flush()  # a batch at a time: what a trickle brought goes out now
                handler.done()
                handler.pending()  # held, or dropped by Python (_in_del)
            handler.pending()
    except KeyboardInterrupt:
        if _WRITING.again:  # a second one while a write was held: at once, not on the reader
            _to_devnull(sys.stdout)
        else:
            stream.flush()
        sys.exit(_interrupted())
    stream.flush()
    messages.detail(f"settings: {settings}")
    sys.exit(ExitStatus.INPUT_ERRORS if problems.errors else ExitStatus.OK)


def _printed_chunks(
    paths: tuple[str, ...], settings: Settings, kw: dict[str, Any], fmt: str, problems: _Problems
) -> Iterator[tuple[bytes, list[Problem]]]:
    """What `fingerprint` prints, a piece at a time, with the input problems to report
    before it. Files and stdin are read in chunks of lines that worker processes parse,
    fingerprint and format (read.read_chunks; the main process only copies bytes, and
    of a plain file none: it numbers the lines the workers counted, pipeline.numbered);
    directories a document at a time, fingerprinted in batches."""
    sources = _sources(paths)
    read_options = _read_options(kw, sources)
    _refuse_stdout_clash(sources, (), read_options)
    if written := _written_streams():  # a directory's link to them: not read back
        read_options = dataclasses.replace(read_options, written=written)
    stdin = Streams(_binary(sys.stdin))
    jobs = pipeline.chunk_jobs(sources, kw["jobs"])
    if jobs is not None:
        setup = functools.partial(pipeline.chunk_printer, settings, read_options, fmt)
        # Plain files as Stretches, which the workers count the lines of, where the
        # compiled core prints (pipeline.numbered): their lines are never read here.
        # Wider Stretches for workers: fewer messages (in one process they ran 2% slower).
        stretch = STRETCH_BYTES if jobs != 1 else None
        chunks = read_chunks(
            sources, read_options, stdin, stretches=compiled_serves(settings), stretch_size=stretch
        )
        return pipeline.numbered(ordered_map(setup, chunks, jobs, pipeline.idle_of(sources, stdin)), fmt)
    docs = read_documents(sources, read_options, problems, stdin)
    made = pipeline.batched(docs, settings, kw["jobs"], False, pipeline.idle_of(sources, stdin))
    return (
        (fingerprint_lines([doc.id for doc in batch], fps, settings.bits, fmt), []) for batch, fps in made
    )


def _read_whole(path: str, on_problem: OnProblem) -> Document:
    if path != STDIN and ReadOptions().is_jsonl(path):
        on_problem(Problem(path, "jsonl-member", _WHOLE_JSONL))
    # As scan reads a directory's file: fingerprinted on its first --max-doc-size bytes
    # (16 MiB), UTF-16 or UTF-32 after its byte-order mark, else UTF-8 without one, and
    # nothing past them read (`yes | simdedup compare - a.txt` read stdin until memory ran
    # out, a review); a binary file, which scan skips, is no document.
    try:
        if path == STDIN:
            data, whole = first_bytes(_binary(sys.stdin), MAX_DOC_SIZE)
        else:
            with open_input(path) as f:
                data, whole = first_bytes(f, MAX_DOC_SIZE)
    except read_module.READ_ERRORS as e:
        raise CliError(f"{path}: {read_error(e, path)}") from e
    if looks_binary(data):
        raise CliError(f"{path}: a binary file, which scan skips: nothing to compare")
    text, cut = limited_text(data, whole, MAX_DOC_SIZE, path, on_problem)
    if cut:
        said = f"file is over {size_text(MAX_DOC_SIZE)}; compared on its first part, as scan fingerprints it"
        on_problem(Problem(path, "too-large", said))
    return Document(printable(path), text, os.fsencode(path))


_WHOLE_JSONL = "compared as one whole document, its JSON markup too, not record by record"

#: --no-verify's help where a command decides documents against kept ones as scan
#: would (compare, index query).
_AS_SCAN_WITHOUT_VERIFY = (
    "Decide as scan --no-verify does: on the whole fingerprints alone, without heads or Jaccard."
)


@main.command()
@_reworded(no_verify=_AS_SCAN_WITHOUT_VERIFY)
@click.argument("files", nargs=-1, type=click.Path())
@click.option(
    "--text",
    "texts",
    multiple=True,
    help="A document given inline (twice, or once after a FILE, which is a).",
)
@fingerprint_options
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as one JSON object.")
@click.option(
    "--features",
    "shown",
    type=click.IntRange(0),
    default=8,
    show_default=True,
    help="How many of each side's unshared features to show.",
)
@verify_option
def compare(files: tuple[str, ...], texts: tuple[str, ...], as_json: bool, shown: int, **kw: Any) -> None:
    """Compare two documents: fingerprints, distance, agreeing blocks, estimated
    Jaccard similarity, unshared features.

    Each FILE is one whole document. Exits 0 when the two are near-duplicates as scan
    decides (within the distance, or their heads within it: 32 tokens from the smallest
    token hash, or both short, of at most 61 distinct shingles; and with --verify's
    Jaccard), 1 when they are not, 2 on a usage error, 3 when a FILE could not be read
    as it is (invalid UTF-8; the verdict is still printed).

    \b
    Examples:
      simdedup compare a.txt b.txt
      simdedup compare --text "the cat sat on the mat" --text "the cat sat on a mat"
    (not near-duplicates, exit 1: of 6 words, 1 changed leaves 2 of 6 shingles shared;
    a word changed in 30 leaves about 0.8)
    """
    settings, verify = _settings(kw), _verify(kw)
    if len(files) + len(texts) != 2:
        raise CliError("compare takes exactly two documents: two FILEs, --text twice, or a FILE and a --text")
    if files.count(STDIN) > 1:
        raise CliError("stdin (-) is given twice, and it can be read once: give one of the two another way")
    # What reading a file replaced or cut short: an error there exits 3, as other commands
    # do (it exited 0 or 1 after "error: invalid UTF-8", a review).
    problems = _Problems(Messages(quiet=False, verbose=False))
    docs = [_read_whole(f, problems) for f in files] + [
        Document(f"--text {i + 1}", argument_text(t, f"--text {i + 1}", problems), b"")
        for i, t in enumerate(texts)
    ]
    read_badly = ExitStatus.INPUT_ERRORS if problems.errors else None
    hasher = FeatureHasher(settings.bits, settings.seed)
    (fa, fb), sketches, (ha, hb) = fingerprints_and_sketches([doc.text for doc in docs], settings, hasher)
    names = [d.id for d in docs]
    # On a terminal, a name's newline or tab escaped too (_Inert keeps them): a file name
    # holding one split its line there (a review). Redirected, every byte as it is.
    shown_names = [_one_line(name) if _isatty(sys.stdout) else name for name in names]
    if fa is None or fb is None:  # an empty document is near nothing: exit 1, said as such
        empty = [name for name, fp in zip(names, (fa, fb)) if fp is None]
        named = " and ".join(shown for shown, fp in zip(shown_names, (fa, fb)) if fp is None)
        why = f"{named}: no features (empty, or only whitespace, punctuation and symbols)"
        if as_json:
            sides = {
                side: {
                    "id": name,
                    "fingerprint": None if fp is None else format_fingerprint(fp, settings.bits),
                }
                for side, name, fp in zip("ab", names, (fa, fb))
            }
            _echo(json.dumps({**sides, "near": False, "empty": empty}, ensure_ascii=False))
        else:
            _echo(f"verdict     not near-duplicates ({why})")
        sys.exit(read_badly or ExitStatus.FOUND)
    features = [extract(d.text, settings) for d in docs]  # for the lists of unshared ones
    d = hamming(fa, fb)
    jaccard = float(similarity(sketches[:1], sketches[1:])[0])
    few = bool(too_few_bins(SKETCH, sketches[:1], sketches[1:], np.array([d]))[0])  # verify.too_few_bins
    exactly = bool(SKETCH.exact_rows(sketches).all())  # both held whole (sketch.OnePermutation)
    # Heads are a candidate source of verification only (verify.VerifyingDeduplicator).
    head_d = hamming(ha, hb) if ha is not None and hb is not None and verify is not None else None
    # Two short documents are candidates by their shingles' prefixes (prefixes.py), where
    # they reach the Jaccard; scan files the first PREFIX_CROWD kept documents a value.
    by_prefix = exactly and verify is not None
    at = candidate_distance(d, head_d, exactly, verify)  # int: neither side is empty here
    candidate = at is not None and at <= settings.distance
    near = candidate and verifies(jaccard, few, verify)
    # The index's blocks: two documents are candidates when they agree on a whole key.
    # From k = 7 none: every query is compared with every stored row (--json said 8).
    layout = Layout.for_(settings.bits, settings.distance)
    brute_force = layout.brute_force
    index_blocks, per_key = ([], 0) if brute_force else (layout.blocks, len(layout.keys[0]))
    agree = [i + 1 for i, (start, w) in enumerate(index_blocks) if ((fa ^ fb) >> start) & ((1 << w) - 1) == 0]

    def only(mine: dict[str, float], theirs: dict[str, float]) -> list[tuple[str, float]]:
        return sorted(((t, w) for t, w in mine.items() if t not in theirs), key=lambda tw: (-tw[1], tw[0]))[
            :shown
        ]

    only_a, only_b = only(features[0], features[1]), only(features[1], features[0])
    result = {
        "a": {
            "id": names[0],
            "fingerprint": format_fingerprint(fa, settings.bits),
            "features": len(features[0]),
        },
        "b": {
            "id": names[1],
            "fingerprint": format_fingerprint(fb, settings.bits),
            "features": len(features[1]),
        },
        "distance": d,
        "head_distance": head_d,
        "bits": settings.bits,
        "k": settings.distance,
        "similarity": round(1 - d / settings.bits, 6),
        "jaccard": round(jaccard, 6),
        "jaccard_exact": exactly,
        "by_prefix": by_prefix,
        "too_few_bins": few,
        "verify": verify,
        "near": near,
        "blocks_agreeing": agree,
        "blocks": len(index_blocks),
        "blocks_per_key": per_key,
        "only_in_a": [{"feature": t, "weight": w} for t, w in only_a],
        "only_in_b": [{"feature": t, "weight": w} for t, w in only_b],
    }
    if as_json:
        _echo(json.dumps(result, ensure_ascii=False))
    else:

        def feats(items: list[tuple[str, float]]) -> str:
            return ", ".join(f"{t!r} ({w:g})" for t, w in items) or (
                "-" if shown else "not shown (--features 0)"
            )

        verdict = "near-duplicates" if near else "not near-duplicates"
        checked = "not checked (--no-verify)" if verify is None else f"at least {verify:g} to verify"
        if by_prefix and d > settings.distance:
            checked += (
                "; short documents are candidates by their shingles whatever the distance (in scan,"
                f" among the first {PREFIX_CROWD} kept documents that start with a shingle they share)"
            )
        if few and verify is not None and jaccard >= verify:  # what kept it from verifying
            checked += (  # two exact sketches are too few only where each holds one shingle
                "; of one shingle each, whose 32 bits kept may be another's by chance, which verify only"
                " with equal fingerprints"
                if exactly
                else f"; from fewer than {FEWEST_BINS} shingle bins between them, which verify only with"
                " equal fingerprints"
            )
        # "6 of the index's 6 agree" read as all six where block 6 alone did (a review)
        blocks = (
            f"only {agree[0]} agrees" if len(agree) == 1 else f"{', '.join(map(str, agree)) or 'none'} agree"
        )
        if verify is None:
            heads = "not used: --no-verify"
        elif head_d is None:
            heads = f"none: a document has {HEAD_TOKENS} tokens or fewer"
        else:
            reach = "within k" if head_d <= settings.distance else "beyond k"
            heads = f"{head_d} of {settings.bits} bits: {reach}"
            if head_d <= settings.distance < d:  # the pair rests on the heads
                heads += (
                    f"; scan compares a head with the first {HEAD_CROWD} kept ones near it only (boilerplate)"
                )
        sides = [
            f"{side}           {result[side]['fingerprint']}  {name} ({counted(len(found), 'feature')})"
            for side, name, found in zip("ab", shown_names, features)
        ]
        lines = [
            *sides,
            f"distance    {d} of {settings.bits} bits (k = {settings.distance}): "
            + ("within k" if d <= settings.distance else "beyond k"),
            f"heads       {heads} (fingerprints of {HEAD_SPEC})",
            f"similarity  {result['similarity']:.4f}",
            f"jaccard     {jaccard:.4f} of shingles, {'exact' if exactly else 'estimated'}; {checked}",
            "blocks      "
            + (
                f"none used: at k = {settings.distance} every kept document is compared"
                if brute_force
                else f"{blocks} (of the index's {len(index_blocks)}; its tables key on {layout.keyed_on})"
            ),
            f"only in a   {feats(only_a)}",
            f"only in b   {feats(only_b)}",
            f"verdict     {verdict}",
        ]
        _echo("\n".join(lines))
    sys.exit(read_badly or (ExitStatus.OK if near else ExitStatus.FOUND))


@main.command(name="calibrate")
@_reworded(
    distance="Not used here (every distance from 0 to --max-distance is scored); taken so that every"
    " command accepts the same fingerprint options.",
    no_verify="Score the options given without verification as the main preset, and with it as the"
    " other (see above).",
)
@click.argument("pairs_path", metavar="PAIRS", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@fingerprint_options
@click.option("--a-field", default="a", show_default=True, help="JSONL field with the first text.")
@click.option("--b-field", default="b", show_default=True, help="JSONL field with the second text.")
@click.option(
    "--label-field", default="duplicate", show_default=True, help="JSONL field: true for a duplicate pair."
)
@click.option(
    "--max-distance",
    type=click.IntRange(0, MAX_DISTANCE),
    default=10,
    show_default=True,
    help="Score distances 0 to this.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON record per preset and distance.")
@verify_option
def calibrate_command(
    pairs_path: str, a_field: str, b_field: str, label_field: str, max_distance: int, as_json: bool, **kw: Any
) -> None:
    """Score labelled pairs: precision, recall and F1 for each distance and preset.

    PAIRS is JSONL ('-': stdin), one labelled pair a line, such as
    {"a": "first text", "b": "second text", "duplicate": true}. The presets are the
    fingerprint and --verify options given (or the defaults), the same without
    verification (or with it, given --no-verify), and a few variations of them. '*'
    marks each preset's best distance by F1.

    \b
    Examples:
      simdedup calibrate pairs.jsonl
      simdedup calibrate pairs.jsonl --max-distance 8 --json
    """
    from .calibrate import LabelledPair, best, calibrate, presets  # here: ~3 ms of other commands' start-up

    settings = _settings(kw)
    pairs: list[LabelledPair] = []
    problems = _Problems(Messages())
    for where, line in record_lines(pairs_path, _binary(sys.stdin), problems):
        if not line.strip(JSON_SPACE):
            continue
        try:
            record = load_json(line.lstrip("\ufeff"))
            if not isinstance(record, dict):
                raise ValueError(f"a JSON {json_type(record)}, not an object")
            a, b, label = record[a_field], record[b_field], record[label_field]
            if not isinstance(a, str) or not isinstance(b, str) or label not in (True, False, 0, 1):
                raise ValueError(
                    f"{a_field!r}, {b_field!r} must be text, {label_field!r} true or false (or 1, 0)"
                )
        except (ValueError, KeyError, TypeError) as e:  # JsonRefused's message is whole
            what = (
                f"missing field {e}"
                if isinstance(e, KeyError)
                else f"not JSON: {e}"
                if isinstance(e, json.JSONDecodeError)
                else str(e)
            )
            problems(Problem(where, "bad-record", what))
            continue
        pairs.append(LabelledPair(a, b, bool(label)))
    status = ExitStatus.INPUT_ERRORS if problems.errors else ExitStatus.OK
    if not pairs:
        raise CliError(f"{pairs_path}: no labelled pairs in it", ExitStatus.INPUT_ERRORS)
    if len({p.duplicate for p in pairs}) < 2:
        which = "a duplicate" if pairs[0].duplicate else "not a duplicate"
        Messages().warn(
            pairs_path,
            f"every pair is labelled {which}: precision, recall and F1 need pairs of both kinds"
            " to mean anything",
        )
    scores = calibrate(pairs, presets(settings, _verify(kw)), range(max_distance + 1))
    top = best(scores)
    if as_json:
        for s in scores:
            record = {"preset": s.preset, "distance": s.distance, "tp": s.tp, "fp": s.fp, "fn": s.fn}
            shown = {"precision": s.shown_precision, "recall": s.shown_recall, "f1": s.shown_f1}
            record.update({k: None if v is None else round(v, 6) for k, v in shown.items()})
            _echo(json.dumps({**record, "best": top.get(s.preset) == s}))
    else:
        positives = sum(p.duplicate for p in pairs)
        _echo(f"{counted(len(pairs), 'pair')}, {positives:,} labelled duplicate")
        width = max(len(s.preset) for s in scores)
        _echo(f"{'preset':<{width}}  k  precision  recall     f1     tp     fp     fn")
        for s in scores:
            mark = "*" if top.get(s.preset) == s else " "
            _echo(
                f"{s.preset:<{width}} {s.distance:2d}{mark}   {_score(s.shown_precision)}   "
                f"{_score(s.shown_recall)}  {_score(s.shown_f1)}"
                f"  {s.tp:5d}  {s.fp:5d}  {s.fn:5d}"
            )
    # A best k that scan serves only by comparing every pair is said so: with verification
    # precision stays 1.000, so the largest k tried won, unsaid (a new user's trial).
    wide = sorted({s.distance for s in top.values() if Layout.for_(settings.bits, s.distance).brute_force})
    if wide:
        serves = _largest_served(settings.bits, max(wide))
        messages = Messages()
        messages.warn(
            f"k = {', '.join(map(str, wide))}",
            "scan compares every document with every kept one there, so its time grows with the square"
            f" of the input; its index serves k <= {serves} at {settings.bits} bits",
        )
    sys.exit(status)


def _score(value: float | None) -> str:
    """A score as calibrate's table shows it; undefined (0 / 0: nothing predicted a
    duplicate, for precision) as "-", where it showed 1.000 (a review)."""
    return f"{'-':>5}" if value is None else f"{value:.3f}"


# ---------------------------------------------------------------- the stored index


@main.group(name="index")
def index_group() -> None:
    """Inspect, merge and query a stored index: the file that --index keeps.

    \b
    Examples:
      simdedup index info crawl.sdx
      simdedup index merge crawl.sdx shard-1.sdx shard-2.sdx
      simdedup index query crawl.sdx today.jsonl
    """


def _hex(value: int, width: int) -> str:
    return f"{value:0{(width + 3) // 4}x}"


@index_group.command(name="info")
@click.argument("path", type=click.Path(), callback=_index_file)
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON object.")
@click.option(
    "--top", type=click.IntRange(1), default=3, show_default=True, help="Largest buckets to show per table."
)
def index_info(path: str, as_json: bool, top: int) -> None:
    """Describe a stored index: its size, settings, runs and largest key buckets.

    The first line is `fingerprints: N`. The whole file is read and its checksum
    verified, so this also checks that the file is whole.

    \b
    Example:
      simdedup index info crawl.sdx --json
    """
    _refuse_stderr_into(_index_files(path))
    _refuse_stdout_into(_index_files(path))
    header, size = read_header(path)
    stored = read_index(path)
    record = stored.fingerprint
    settings = stored.settings
    distance = int(settings.get("distance", 3))
    buckets = key_buckets(stored.fingerprints, stored.bits, distance, top)
    layout = Layout.for_(stored.bits, distance)
    info = {
        "fingerprints": len(stored),
        "settings": settings,
        "fingerprint": {k: v for k, v in record.items() if k != "settings"},
        "size_bytes": size,
        "id_bytes": len(stored.id_bytes),
        "created": stored.created,
        "updated": stored.updated,
        "format_version": header["format_version"],
        "written_by": header.get("written_by"),
        "sketched": 0 if stored.sketched is None else int(stored.sketched.sum()),
        "sketches_not_read": stored.dropped_sketches,
        "sketches_of_an_alike_kind": stored.alike_sketches,
        "sketch": stored.sketch,
        "headed": 0 if stored.headed is None else int(stored.headed.sum()),
        "unindexed": 0 if stored.unindexed is None else int(stored.unindexed.sum()),
        "runs": stored.runs,
        "layout": layout.describe(),
        "tables": [
            {
                "bits": [[start, start + width - 1] for start, width in b.blocks],
                "distinct_keys": b.distinct,
                "largest": [{"key": _hex(v, b.width), "rows": n} for v, n in b.largest],
            }
            for b in buckets
        ],
    }
    if as_json:
        _echo(json.dumps(info, ensure_ascii=False))
        return
    extra = info["fingerprint"]
    lines = [
        f"fingerprints: {len(stored)}",  # as --help says: `fingerprints: N`, for scripts
        "settings: " + " ".join(f"{k}={v}" for k, v in settings.items()),
        f"fingerprint: {extra.get('hash')}, spec version {extra.get('spec_version')}, "
        f"rjieba {extra.get('rjieba_version')}, jieba IDF table {extra.get('jieba_idf_xxh3')}, "
        f"OpenCC {extra.get('opencc_version')}; last written under Unicode "
        f"{stored.unicode or 'not recorded'}",
        f"size: {size:,} bytes ({len(stored.id_bytes):,} of them ids); format version "
        f"{header['format_version']}, written by {header.get('written_by')}",
        f"verification sketches: {info['sketched']:,} of {len(stored):,} rows"
        + (f" ({stored.sketch})" if stored.sketch else "")
        + (
            f"; {stored.dropped_sketches:,} of an older kind not read ({stored.dropped_sketch})"
            if stored.dropped_sketches
            else ""
        )
        + (
            f"; {stored.alike_sketches:,} of an older kind read as this one ({stored.alike_sketch})"
            if stored.alike_sketches
            else ""
        )
        + f"; head fingerprints: {info['headed']:,}"
        + (
            f"; unindexed (--crowd, found only as exact copies): {info['unindexed']:,}"
            if info["unindexed"]
            else ""
        ),
        f"created: {stored.created}",
        f"updated: {stored.updated}",
    ]
    if stored.runs:
        # The newest: after `index merge`, the last in the file is the last merged.
        last = max(reversed(stored.runs), key=lambda run: str(run.get("finished", "")))
        lines.append(
            f"runs: {len(stored.runs):,}; last: {last.get('name')!r}, finished {last.get('finished')}, "
            f"added {last.get('added', 0):,}"
        )
    else:
        lines.append("runs: 0")
    if layout.brute_force:
        unused = f"not used: {layout.describe()}"
        lines.append(f"largest key buckets of the tables this distance would have ({unused}):")
    else:
        lines.append(
            f"largest key buckets, per table ({layout.describe()}; rows sharing a key: "
            "a lookup compares every row of the buckets it meets):"
        )
    for b in buckets:
        largest = ", ".join(f"{n:,} (key {_hex(v, b.width)})" for v, n in b.largest) or "-"
        blocks = " + ".join(f"{start}-{start + width - 1}" for start, width in b.blocks)
        lines.append(f"  bits {blocks}: {b.distinct:,} distinct keys; largest {largest}")
    _echo("\n".join(lines))


@index_group.command(name="merge")
@click.argument("out", type=click.Path(), callback=_index_file)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(), callback=_index_file)
@click.option(
    "--wait",
    type=Number(0),
    default=0,
    metavar="SECONDS",
    help="If another run is using OUT or an IN, wait up to SECONDS for it (default: fail at once).",
)
@click.option("-q", "--quiet", is_flag=True, help="Say nothing on stderr but errors.")
def index_merge(out: str, inputs: tuple[str, ...], wait: float, quiet: bool) -> None:
    """Merge stored indexes INPUTS... into OUT, for crawls deduplicated in shards.

    OUT, if it exists, comes first and keeps its rows; then each input's rows and runs in
    the order given. Nothing is dropped, and nothing is added twice: the rows of a run
    merged already (known by the random id each run gets when it is saved) are left
    out, with a warning, so a merge can be retried. All must have the same fingerprint
    settings.
    OUT is replaced atomically, under its lock, like a run's --index; each input is read
    under its own lock, so a run still writing it is waited for (--wait).

    \b
    Example:
      simdedup index merge crawl.sdx shard-1.sdx shard-2.sdx
    """
    _refuse_stderr_into(_index_files(out, *inputs))
    for path in inputs:  # before OUT's lock is made beside a new OUT
        if foreign_file(path):
            raise CliError(f"{path}: not a simdedup index file")
    messages = Messages(quiet)
    with index_lock(out, wait, messages.info) as out_locked, contextlib.ExitStack() as held:
        parts: list[tuple[str, Any]] = []
        merged_runs: list[dict[str, Any]] = []
        for path in ([out] if os.path.exists(out) else []) + list(inputs):
            if any(_same_file(path, seen) for seen, _ in parts):
                if _same_file(path, out):  # OUT among the inputs: its rows are kept anyway
                    messages.warn(path, f"is {out}, the merge's output: its rows are in it already")
                else:
                    messages.warn(path, "given twice; read once")
                continue
            if os.path.exists(path) and not _same_file(path, out):  # a run may be writing it
                try:
                    held.enter_context(index_lock(path, wait, messages.info, replaces=False))
                except IndexLockedError:
                    raise
                except IndexFileError:  # no lock can be made there (read-only): no run writes it
                    pass
            stored = read_index(path)
            new = stored.without_runs(merged_runs)
            if len(new.runs) < len(stored.runs):
                again = ", ".join(repr(r.get("name")) for r in stored.runs if r not in new.runs)
                messages.warn(path, f"run(s) {again} are merged already; their rows are not added again")
            names = {run.get("name") for run in merged_runs}
            for name in dict.fromkeys(run.get("name") for run in new.runs if run.get("name") in names):
                said = f"a run named {name!r} is in {out} already; duplicate_of_run cannot tell them apart"
                messages.warn(path, said)
            merged_runs += new.runs
            parts.append((path, new))
        merged = merge_indexes(parts)
        still_locked(out, out_locked)
        write_index(out, merged)
    for path, new in parts:
        if not _same_file(path, out):
            messages.info(
                f"{path}: {counted(len(new), 'fingerprint')} added ({counted(len(new.runs), 'run')})"
            )
    added = [new for path, new in parts if not _same_file(path, out)]
    messages.info(  # OUT's own rows were counted as an index merged (a review)
        f"{out}: {len(merged):,} fingerprints, {sum(map(len, added)):,} of them added from "
        + counted(len(added), "input")
    )


QUERY_COLUMNS = ("id", "status", "fingerprint", "duplicate_of", "distance", "duplicate_of_run")


@index_group.command(name="query")
@_reworded(no_verify=_AS_SCAN_WITHOUT_VERIFY)
@click.argument("path", type=click.Path(), callback=_index_file)
@click.argument("sources", nargs=-1, type=_INPUT)
@input_options
@fingerprint_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["tsv", "jsonl", "csv"]),
    default="tsv",
    show_default=True,
    help=f"A row per document: {', '.join(QUERY_COLUMNS)}.",
)
@click.option("--fail-on-duplicates", is_flag=True, help="Exit 1 when any document is a duplicate.")
@verify_option
@jobs_option
@message_options
def index_query(path: str, sources: tuple[str, ...], fmt: str, **kw: Any) -> None:
    """Check documents against a stored index, without adding them to it.

    One row per document, in input order: status `new` (no stored candidate that
    verifies, as scan finds candidates), `duplicate` (of the stored document scan would pick,
    with the run that kept it) or `empty`. Documents are checked against the index only, not each other.
    The fingerprint settings must be the index's.

    \b
    Example:
      simdedup index query crawl.sdx today.jsonl --format jsonl
    """
    settings, verify = _settings(kw), _verify(kw)
    messages = Messages(kw["quiet"], kw["verbose"])
    inputs = _sources(sources, "SOURCE")
    _refuse_stderr_into(_index_files(path))
    _refuse_stdout_clash(inputs, ((path, "the index"),), _read_options(dict(kw), inputs))
    stored = read_index(path)
    check_settings(path, stored.fingerprint, settings)
    dd = deduplicator(settings, verify)
    _warn_if_wide(settings, messages)
    stored.load_into(dd)
    counts = {"new": 0, "duplicate": 0, "empty": 0}
    stream = _stdout()
    out = RecordWriter(stream, fmt, () if fmt == "jsonl" else QUERY_COLUMNS)
    fingerprinted, problems = _fingerprinted(sources, settings, kw, messages, sketches=verify is not None)
    try:
        with contextlib.closing(fingerprinted):
            for batch, fps, *sketches in fingerprinted:
                rows, distances = dd.match_many(batch, fps, *sketches)
                for doc, fp, row, d in zip(batch, fps, rows.tolist(), distances.tolist()):
                    status = "empty" if fp is None else "duplicate" if row >= 0 else "new"
                    counts[status] += 1
                    near = row >= 0
                    out.write(
                        {
                            "id": doc.id,
                            "status": status,
                            "fingerprint": None if fp is None else format_fingerprint(fp, settings.bits),
                            "duplicate_of": stored.id(row) if near else None,
                            "distance": d if near else None,
                            "duplicate_of_run": stored.run_name(row) if near else None,
                        }
                    )
                out.flush()  # a batch at a time: what a trickle brought goes out now
    except KeyboardInterrupt:
        stream.flush()
        sys.exit(_interrupted())
    stream.flush()
    total = sum(counts.values())
    messages.info(
        f"{counted(total, 'document')}: {counts['new']:,} new, {counted(counts['duplicate'], 'duplicate')} "
        f"of documents in {path} ({counted(len(stored), 'fingerprint')}), {counts['empty']:,} empty, "
        f"{counted(problems.errors, 'error')}"
    )
    _details(messages, dd)
    if problems.errors:
        sys.exit(ExitStatus.INPUT_ERRORS)
    sys.exit(ExitStatus.FOUND if kw["fail_on_duplicates"] and counts["duplicate"] else ExitStatus.OK)
