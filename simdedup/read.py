"""Stage 1: read documents as a stream from files, JSONL records, directories or stdin.

Yields Documents in input order and reports every input problem to a callback as a
Problem (never printing, never raising for one bad input): the run goes on with the rest.
Nothing is read whole: line files stream line by line, directories file by file.
read_chunks cuts files and stdin into Chunks of whole lines instead, which read_chunk
turns into the same Documents and Problems in any process.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fnmatch
import gzip
import importlib
import io
import json
import math
import os
import re
import select
import stat
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import chain, repeat
from typing import IO, Any, NamedTuple, overload

import numpy as np

from . import signals

try:
    from ._textcore import line_ends as _c_line_ends
except ImportError:  # installed without a C compiler: numpy does it
    _c_line_ends = None

#: Larger documents are fingerprinted on the text of their first MAX_DOC_SIZE bytes of UTF-8.
MAX_DOC_SIZE = 16 * 1024 * 1024
_SNIFF = 8192  # bytes looked at for a NUL to call a file binary

STDIN = "-"


class Document(NamedTuple):
    """One document: its id, its text (or given features), and its input form.

    `raw` is what --unique writes back: the line or JSONL record unchanged (bytes, so
    invalid UTF-8 survives), or the path of a directory member. A NamedTuple: one is
    made per document read, and a frozen dataclass took more than twice as long to make.
    """

    id: str
    text: str
    raw: bytes
    features: dict[str, float] | None = None


# kind -> (severity, whether the document or file is left out of the results)
PROBLEM_KINDS: dict[str, tuple[str, bool]] = {
    "missing": ("error", True),
    "unreadable": ("error", True),
    "empty-file": ("error", False),
    "empty-dir": ("error", False),
    "bad-json": ("error", True),
    "bad-record": ("error", True),
    "invalid-utf8": ("error", False),
    "too-large": ("error", False),
    "symlink-loop": ("error", True),
    "ancestor": ("warning", True),
    "binary": ("warning", True),
    "revisited": ("warning", True),
    "not-a-file": ("warning", True),
    "no-id": ("warning", False),
    "jsonl-member": ("warning", False),
    "utf16": ("error", True),
    "utf32": ("error", True),
    "binary-lines": ("error", True),
    "gzip": ("error", True),
    "compressed": ("error", True),
    "output": ("warning", True),
    "shrank": ("warning", False),
    "no-match": ("warning", False),
    "looks-jsonl": ("warning", False),
}


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with one input: `where` is PATH or PATH:LINE."""

    where: str
    kind: str
    message: str

    @property
    def severity(self) -> str:
        return PROBLEM_KINDS[self.kind][0]

    @property
    def skipped(self) -> bool:
        return PROBLEM_KINDS[self.kind][1]

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


OnProblem = Callable[[Problem], None]


@dataclass(frozen=True)
class ReadOptions:
    """How inputs are interpreted; shared by every command."""

    jsonl: bool = False
    text_field: str = "text"
    id_field: str = "id"
    #: --id-field was given: a file whose first record lacks it is warned about (a
    #: misspelt field would otherwise name every record PATH:LINE without a word).
    id_named: bool = False
    features_field: str | None = None
    glob: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_doc_size: int = MAX_DOC_SIZE
    #: The files the run writes, as (st_dev, st_ino): a directory's member that is one of
    #: them (reached through a link the walk follows) is skipped, never read back.
    written: frozenset[tuple[int, int]] = frozenset()

    def __post_init__(self) -> None:
        # A str given for a tuple was read a character a pattern: glob="*.md" took '*'
        # and matched every file (a trial).
        for name in ("glob", "exclude"):
            patterns = getattr(self, name)
            if isinstance(patterns, (str, bytes)) or not all(isinstance(p, str) for p in patterns):
                raise TypeError(f"{name} is a tuple of patterns (str), not {patterns!r}: ({patterns!r},)")
            object.__setattr__(self, name, tuple(patterns))
        size = self.max_doc_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"max_doc_size is a number of bytes, 1 or more, not {size!r}")

    def is_jsonl(self, path: str) -> bool:
        return self.jsonl or plain_name(path).lower().endswith((".jsonl", ".ndjson"))


class Lines:
    """The lines of a byte stream (stdin), read through a buffer of this object's own so
    that `waiting()` can tell when the next line is not here yet: a pipe whose writer
    is quiet. The CLI then decides what it has (dedup.batches' `flush`) instead of
    holding it until a batch fills, so a trickle is answered as it comes and a bulk
    pipe still goes a full batch at a time.

    A stream without a file descriptor (a test's BytesIO) is read as it is, and is
    never waiting."""

    #: Bytes asked for per read: a pipe gives what it holds, up to this.
    CHUNK = 1 << 20

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        try:
            self.fd: int | None = stream.fileno() if os.name == "posix" else None
        except (AttributeError, OSError, io.UnsupportedOperation):
            self.fd = None
        self._lines: deque[bytes] = deque()
        self._reading = False
        #: Set by read_chunks while the Chunk it just cut was cut for the writer's pace
        #: (_chunks): what it holds is all there is for now, so waiting() says so.
        self.paced = False

    def __iter__(self) -> Iterator[bytes]:
        if self.fd is None:
            yield from self.stream
            return
        tail: list[bytes] = []  # the start of a line whose end has not come yet
        for data in self.blocks():
            if b"\n" not in data:
                tail.append(data)
                continue
            lines = data.split(b"\n")
            if tail:
                lines[0] = b"".join([*tail, lines[0]])
            last = lines.pop()  # b"" where the data ends with a newline
            tail = [last] if last else []
            self._lines.extend(lines)
            while self._lines:
                yield self._lines.popleft()
        if tail:
            yield b"".join(tail)

    def blocks(self) -> Iterator[bytes]:
        """The stream's bytes as they come (its lines are cut from them, read_chunks'
        chunks too); waiting() says, between two blocks, whether the next one would have
        to wait for the writer."""
        if self.fd is None:
            while data := self.stream.read(self.CHUNK):
                yield data
            return
        self._reading = True
        try:
            while True:
                # Waits here, where an interrupt loses nothing; past select's FD_SETSIZE
                # (1,024 descriptors open), in the read, as before.
                with contextlib.suppress(ValueError):
                    select.select([self.fd], [], [])
                # Held: raised as os.read returned, it lost the bytes read (7,280 lines
                # in 1 of 120 runs of `filter -j2` under strace, stopped by SIGTERM). The
                # read does not wait: select said it has something (unless another
                # reader of the pipe took it first).
                data, cut = signals.done_whole(partial(os.read, self.fd, self.CHUNK))
                if data:
                    try:
                        yield data
                    except GeneratorExit:  # closed after the yield: the interrupt still goes on
                        if cut is not None:
                            raise cut from None
                        raise
                if cut is not None:
                    raise cut
                if not data:
                    return
        finally:
            self._reading = False

    def waiting(self) -> bool:
        """Whether the next line would have to wait for the stream's writer: none is
        buffered and the stream has nothing to read right now (not even its end); or
        read_chunks cut its last Chunk for the writer's pace (paced)."""
        if self.paced:
            return True
        if not self._reading or self._lines:
            return False
        return self.quiet(0)

    def quiet(self, seconds: float) -> bool:
        """Whether the stream gives nothing to read (not even its end) for `seconds`."""
        if self.fd is None:
            return False
        try:
            return not select.select([self.fd], [], [], seconds)[0]
        except ValueError:  # past select's FD_SETSIZE: never known to wait (a review)
            return False


def is_stream(path: str) -> bool:
    """Whether `path` is read as a stream, as stdin is: "-", or a named pipe or a
    character device given by name (`<(cmd)`, a FIFO, /dev/stdin)."""
    if path == STDIN:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


class Streams:
    """The inputs read as streams, each through a Lines of its own: stdin, and the
    named pipes and devices given by name, each opened when its turn comes. waiting()
    is the one being read's, so that a trickle through `<(cmd)` is answered as it
    comes, as one on stdin is, and an interrupt decides every line read."""

    def __init__(self, stdin: IO[bytes] | Lines | None = None) -> None:
        self.stdin = stdin if stdin is None or isinstance(stdin, Lines) else Lines(stdin)
        self._current: Lines | None = None
        self._stdin_read = False

    def lines(self, path: str) -> Lines:
        """The stream at `path` ("-": stdin), now the one being read; OSError if a
        named one cannot be opened."""
        if path == STDIN:
            if self.stdin is None:
                raise ValueError("'-' needs a stdin stream")
            self._current = self.stdin
        else:
            self._current = Lines(open(path, "rb", buffering=0))  # noqa: SIM115 (closed by close())
        return self._current

    def close(self, lines: Lines) -> None:
        if lines is not self.stdin:
            lines.stream.close()

    def read_before(self, path: str, files: set[tuple[int, int]]) -> bool:
        """_read_before for the stream at `path`: stdin once read (at its end, read again
        it would give nothing), or any stream by its (st_dev, st_ino), found without
        opening it: stdin's (a file's, given as `< a.txt`), a named pipe's. A file given
        by name and as stdin was read twice, each line its own duplicate, and a named
        pipe given twice waited on a second writer, then was read again (a review)."""
        if path == STDIN:
            if self._stdin_read:
                return True
            self._stdin_read = True
        if (key := self.identity(path)) is None:
            return False
        if key in files:
            return True
        files.add(key)
        return False

    def identity(self, path: str) -> tuple[int, int] | None:
        """The (st_dev, st_ino) of the stream at `path`, found without opening it:
        stdin's (a file's, given as `< a.txt`), a named pipe's; None where it has none."""
        try:
            if path != STDIN:
                return file_identity(os.stat(path))
            if self.stdin is not None:
                fd = self.stdin.stream.fileno()
                # partway into its file (`{ read l; simdedup - o; } < o/a.txt`), it is not
                # that file: its first lines were read nowhere (a review)
                if stat.S_ISREG(os.fstat(fd).st_mode) and os.lseek(fd, 0, os.SEEK_CUR) > 0:
                    return None
                return file_identity(os.fstat(fd))
        except (OSError, AttributeError, ValueError):  # no descriptor: a test's bytes
            pass
        return None

    def waiting(self) -> bool:
        return self._current is not None and self._current.waiting()


def _streams(stdin: IO[bytes] | Lines | Streams | None) -> Streams:
    return stdin if isinstance(stdin, Streams) else Streams(stdin)


def read_documents(
    paths: Sequence[str | os.PathLike[str]],
    options: ReadOptions,
    on_problem: OnProblem,
    stdin: IO[bytes] | Lines | Streams | None = None,
) -> Iterator[Document]:
    """Every document of every path, in order: directories walked, files by line, "-" =
    stdin, named pipes and devices read as it is (Streams). A directory given twice (or
    inside another given) is read once. Paths are str or os.PathLike; one path alone
    (not in a collection) is refused, here rather than when the documents are read."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        raise TypeError("read_documents takes a collection of paths, not one path: wrap it in a list")
    names = [os.fspath(path) for path in paths]
    if not all(isinstance(name, str) for name in names):
        raise TypeError("paths are str or os.PathLike of str, not bytes")
    return _documents(names, options, on_problem, stdin)


def _documents(
    paths: list[str], options: ReadOptions, on_problem: OnProblem, stdin: IO[bytes] | Lines | Streams | None
) -> Iterator[Document]:
    streams = _streams(stdin)
    seen = Entered()  # the directories read
    files: set[tuple[int, int]] = set()  # the files named
    # A file given by name and also in a folder given is read once, where it comes first;
    # so is stdin's (`scan - g < g/top.txt` listed g/top.txt as a duplicate of -:1, and
    # deleting the duplicates listed deleted the only copy: a trial).
    named: frozenset[tuple[int, int]] = frozenset()
    if any(os.path.isdir(path) for path in paths):
        given = (streams.identity(path) for path in paths if is_stream(path))
        named = _named_files(paths) | {key for key in given if key is not None}
    # The folders given, each as its members' ids will name it (_one_slash).
    folders = tuple(dict.fromkeys(_one_slash(p) for p in paths if not is_stream(p) and os.path.isdir(p)))
    aliased = _Aliased(folders)
    said = False  # that a directory's JSONL files are documents, not records: once a run
    for path in paths:
        if is_stream(path) and streams.read_before(path, files):
            on_problem(_revisited(path))
        elif is_stream(path):
            try:
                lines = streams.lines(path)
            except OSError as e:
                on_problem(Problem(path, "unreadable", e.strerror or str(e)))
                continue
            try:
                read = partial(_read_stream, lines, path, options)
                yield from _read_once(read, on_problem, files, streams.identity(path))
            finally:
                streams.close(lines)
        elif os.path.isdir(path):
            for doc in _read_tree(_one_slash(path), options, on_problem, seen, (named, files), aliased):
                if not said and options.is_jsonl(doc.id):
                    said = True
                    on_problem(_jsonl_member(doc.id))
                yield doc
        elif (problem := _unopenable(path)) is not None:
            on_problem(problem)
        elif _read_before(path, files):
            on_problem(_revisited(path))
        else:
            read = partial(_read_file, path, options)
            yield from _read_once(read, on_problem, files, _file_key(path), _by_its_name(path))
    for problem in _unused_exclusions(seen.excluding, folders, options):
        on_problem(problem)


#: Problems of a file refused for how it was read, not for what it holds: UTF-16 or
#: UTF-32 text, or compressed data, read as lines. Read by another name (in a folder, as
#: its member), it can be a document.
_REFUSED_AS_READ = frozenset({"utf16", "utf32", "gzip", "compressed"})


def _read_once(
    docs: Callable[[OnProblem], Iterator[Document]],
    on_problem: OnProblem,
    files: set[tuple[int, int]],
    key: tuple[int, int] | None,
    by_name: bool = False,
) -> Iterator[Document]:
    """docs(on_problem)'s documents, of a file that _read_before (or Streams.read_before)
    counted read as `key`: one refused for how it was read (_REFUSED_AS_READ; `by_name`:
    a read error of a file whose name says it is compressed, such as a hard link named
    .gz that is not gzip data; not its records' errors, a review) is not counted, so that
    another name of it, such as a folder given that holds it, reads it. It was said to
    be "already read" there, and read nowhere (a trial; stdin and a file in a folder
    given: a review)."""
    refused = False

    def noted(problem: Problem) -> None:
        nonlocal refused
        refused = refused or problem.kind in _REFUSED_AS_READ or (by_name and problem.kind == "unreadable")
        on_problem(problem)

    read = False
    for doc in docs(noted):
        read = True
        yield doc
    if not read and refused and key is not None:
        files.discard(key)


def _by_its_name(path: str) -> bool:
    """Whether a file is read by what its name says it is (compressed: .gz, .zst, ...)."""
    return codec_for(path) is not None and os.access(path, os.R_OK)


def _one_slash(directory: str) -> str:
    """A directory's path with each run of slashes after its first character one slash:
    its members' ids then do not depend on how it was typed. `cr/` in nightly.sh's
    "$crawl/$day" named a night's pages `cr//2024-01-01/a.txt`, those of nights run as
    `cr` `cr/2024-01-01/a.txt` (a trial). A leading `//`, which POSIX leaves to the
    system, stays."""
    return re.sub(r"(?<=[^/])/{2,}", "/", directory) if os.sep == "/" else directory


def _unopenable(path: str) -> Problem | None:
    """Why a path given by name (not a folder, not a stream) is read as no file, said as
    a folder's members are: missing, a link to nothing or a loop of links, out of reach,
    or a socket. A file in a folder that the user may not search was "no such file or
    directory", a socket "No such device or address" (a review)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        missing = "broken symbolic link" if os.path.islink(path) else "no such file or directory"
        return Problem(path, "missing", missing)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return Problem(path, "symlink-loop", "symbolic link loop; not followed")
        return Problem(path, "unreadable", e.strerror or str(e))
    if stat.S_ISSOCK(st.st_mode):
        return Problem(path, "not-a-file", "not a regular file; skipped")
    return None


def _read_before(
    path: str, files: set[tuple[int, int]], among: frozenset[tuple[int, int]] | None = None
) -> bool:
    """Whether the file at `path` was given before under this name or another (a link,
    `./a.txt`, a folder's member): read twice, each of its lines was its own duplicate.
    Adds it to `files`. With `among`, only a file among those counts (a folder's member
    that is also named on its own; the others are not looked up)."""
    key = _file_key(path)
    if key is None or (among is not None and key not in among):
        return False
    if key in files:
        return True
    files.add(key)
    return False


def _file_key(path: str) -> tuple[int, int] | None:
    try:
        return file_identity(os.stat(path))
    except OSError:
        return None  # unreadable: reading it says so


def _named_files(paths: list[str]) -> frozenset[tuple[int, int]]:
    """The files among `paths` given by name (not folders, not streams), by (st_dev, st_ino)."""
    keys = (_file_key(path) for path in paths if not is_stream(path) and os.path.isfile(path))
    return frozenset(key for key in keys if key is not None)


def _revisited(path: str) -> Problem:
    return Problem(path, "revisited", "already read (given twice, or through a link); skipped")


@dataclass(frozen=True)
class Codec:
    """A compressed format, read and written by a file's name: `suffix` (".gz"), its
    name, the command that decompresses it into a pipe, its first bytes, and its module
    (with open(file, mode), as gzip.open), imported when first used."""

    suffix: str
    kind: str
    cat: str
    magic: re.Pattern[bytes]
    module: str

    def open(self, file: str | IO[bytes], mode: str) -> IO[bytes]:
        """The file (a path, or a binary file object it does not close) decompressed
        ("rb") or compressed ("wb") at the format's default level: its command's, where
        Python's differs (gzip's 6, where Python's is 9: 40 MB of generated English took
        4.7 s for a file 0.5% smaller than in 3.0 s at 6; a trial)."""
        if self.module == "gzip" and "w" in mode and not isinstance(file, str):
            # No time and no name in the header: the same output, the same bytes.
            return gzip.GzipFile(filename="", mode=mode, fileobj=file, mtime=0, compresslevel=GZIP_LEVEL)
        module = _zstd() if self.module == "zstd" else importlib.import_module(self.module)
        _reading_errors_of(module)
        return module.open(file, mode)  # type: ignore[no-any-return]


#: gzip's own default level (`gzip` without -1 to -9).
GZIP_LEVEL = 6


def _zstd() -> Any:
    """The zstd module: the standard library's from Python 3.14, else backports.zstd."""
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        from backports import zstd  # type: ignore[no-redef]
    return zstd


CODECS = (
    Codec(".gz", "gzip", "zcat", re.compile(rb"\x1f\x8b"), "gzip"),
    Codec(".xz", "xz", "xzcat", re.compile(rb"\xfd7zXZ\x00"), "lzma"),
    Codec(".zst", "zstd", "zstdcat", re.compile(rb"\x28\xb5\x2f\xfd"), "zstd"),
    # bzip2: "BZh", the block size, then a block's magic (pi) or the end's (sqrt(pi))
    Codec(".bz2", "bzip2", "bzcat", re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)"), "bz2"),
)


def codec_for(path: str) -> Codec | None:
    """The compressed format a file's name ends with, in either case ("A.GZ"), or None."""
    name = path.lower()
    if not name.endswith(_SUFFIXES):  # most names: one test, not one a format
        return None
    return next((codec for codec in CODECS if name.endswith(codec.suffix)), None)


_SUFFIXES = tuple(codec.suffix for codec in CODECS)


def plain_name(path: str) -> str:
    """A file's name without the ending of its compressed format: "a.jsonl.zst" -> "a.jsonl"."""
    codec = codec_for(path)
    return path[: -len(codec.suffix)] if codec else path


#: What reading a file can raise for a problem of that file: OSError (gzip's and bz2's
#: damaged streams too), EOFError (a stream cut short), ImportError (a Python built
#: without lzma), zlib.error, and the damaged-stream error of each compressed format
#: whose module is loaded (lzma.LZMAError, ZstdError). A format's error can only come
#: once its module is, so Codec.open adds it then (_reading_errors_of): no run imports
#: lzma and zstd for them (~4 ms of start-up). A name, not a call, in `except`: an
#: interrupt during a call that imported them escaped the handlers beside it, and the
#: lines read before a read error were lost (a review).
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, ImportError, zlib.error)


def _reading_errors_of(module: Any) -> None:
    """Add the damaged-stream error of a compressed format's `module` to READ_ERRORS."""
    global READ_ERRORS
    for name in ("LZMAError", "ZstdError"):
        error = getattr(module, name, None)
        if error is not None and error not in READ_ERRORS:
            READ_ERRORS = (*READ_ERRORS, error)


def read_error(e: BaseException, path: str) -> str:
    """What a read error says, in our words where Python's are its own (`Not a gzipped
    file (b'no')`, `Compressed file ended before the end-of-stream marker was reached`)."""
    codec = codec_for(path)
    kind = codec.kind if codec else "compressed"
    if isinstance(e, ImportError):
        return f"cannot read {kind} data: {e}"
    if isinstance(e, EOFError):
        return f"the {kind} stream is cut short"
    if isinstance(e, OSError) and (e.strerror or codec is None):
        return e.strerror or str(e)
    return f"not {kind} data, or damaged {kind} data"  # bz2's is an OSError without errno


def open_input(path: str) -> IO[bytes]:
    """A file to read, decompressed if its name ends with a compressed format's suffix."""
    codec = codec_for(path)
    return codec.open(path, "rb") if codec else open(path, "rb")  # noqa: SIM115


def record_lines(path: str, stdin: IO[bytes], on_problem: OnProblem) -> Iterator[tuple[str, str]]:
    """The lines of a JSONL file of records of a command's own (calibrate's pairs), or of
    stdin ("-"), read as a JSONL file is read: .gz decompressed, a byte-order mark
    before a line passed over, bytes that are not UTF-8 read as Windows-1252 and reported, gzip or
    UTF-16 data where text was expected refused. (PATH:LINE, text) a line; blank ones too."""
    try:
        stream = stdin if path == STDIN else open_input(path)  # a named pipe by its name
    except OSError as e:
        on_problem(Problem(path, "unreadable", e.strerror or str(e)))
        return
    shown, lineno = printable(path), 0
    try:
        for lineno, line in enumerate(stream, 1):  # noqa: B007 (lineno is used after the loop)
            raw = line.rstrip(b"\n").rstrip(b"\r")
            if lineno == 1 and (problem := _not_text(raw, shown)) is not None:
                on_problem(problem)
                return
            where = f"{shown}:{lineno}"
            raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                yield where, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield where, _replaced(raw, e, where, on_problem)
    except READ_ERRORS as e:
        where = f"{shown}:{lineno + 1}" if lineno else shown
        on_problem(Problem(where, "unreadable", f"cannot read further: {read_error(e, path)}"))
    finally:
        if stream is not stdin:
            stream.close()


def _read_file(path: str, options: ReadOptions, on_problem: OnProblem) -> Iterator[Document]:
    try:
        stream = open_input(path)
    except OSError as e:
        on_problem(Problem(path, "unreadable", e.strerror or str(e)))
        return
    with stream:
        opened = _size_opened(stream)
        yield from _read_stream(stream, path, options, on_problem)
        if (problem := _shrank(stream, opened, path)) is not None:
            on_problem(problem)


def _size_opened(stream: IO[bytes]) -> int | None:
    """The size of a plain file as it is opened (None for a compressed stream)."""
    return os.fstat(stream.fileno()).st_size if isinstance(stream, io.BufferedReader) else None


def _shrank(stream: IO[bytes], opened: int | None, path: str) -> Problem | None:
    """A file cut shorter while it was read (a log rotated by truncation, a crawl rewritten):
    its last line read may be a piece of one, taken as a whole document."""
    if opened is None or stream.tell() >= opened or os.fstat(stream.fileno()).st_size >= opened:
        return None
    read = f"{stream.tell():,} of {opened:,} bytes"
    return Problem(
        path, "shrank", f"the file shrank while it was read ({read}): its last line may be cut short"
    )


def _read_stream(
    stream: Iterable[bytes], name: str, options: ReadOptions, on_problem: OnProblem, first: int = 1
) -> Iterator[Document]:
    """One document per line (or JSONL record) of a binary stream whose first line is
    line `first` of `name` (1: the whole of it)."""
    jsonl = options.is_jsonl(name)
    shown = printable(name)
    lineno = first - 1
    # None: not checked here (not the file's start, or no --id-field given)
    unnamed_checked: bool | None = False if first == 1 and options.id_named else None
    try:
        for lineno, line in enumerate(stream, first):  # noqa: B007 (lineno is used after the loop)
            # raw: the line as it came, a CR before its newline included (--unique and
            # filter write it back so); the text leaves the CR out.
            raw = line.rstrip(b"\n")
            if lineno == 1 and (problem := _not_text(raw, shown)) is not None:
                on_problem(problem)
                return
            marked = lineno == 1 and raw.startswith(codecs.BOM_UTF8)
            if marked:
                raw = raw[len(codecs.BOM_UTF8) :]
            body = raw.rstrip(b"\r") if raw.endswith(b"\r") else raw
            where = f"{shown}:{lineno}"
            if lineno == 1 and not jsonl and _json_object(body):
                on_problem(_looks_jsonl(where))
            if not jsonl and len(body) > options.max_doc_size:
                yield _long_line(body, raw, where, options.max_doc_size, on_problem)
                continue
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError as e:  # the byte said counts a mark before it (a review)
                text = _replaced(body, e, where, on_problem, skipped=len(codecs.BOM_UTF8) * marked)
            if jsonl:
                doc = _parse_record(text, raw, where, options, on_problem)
                if doc is None:
                    continue
                if unnamed_checked is False:
                    unnamed_checked = True
                    if doc.id == where:
                        on_problem(_unnamed(where, options.id_field))
            else:
                doc = Document(where, text, raw)
            if len(raw) > options.max_doc_size:
                doc = _truncated(doc, where, options.max_doc_size, on_problem)
            yield doc
    except READ_ERRORS as e:
        where = f"{shown}:{lineno + 1}" if lineno else shown
        on_problem(Problem(where, "unreadable", f"cannot read further: {read_error(e, name)}"))
        return
    if lineno == 0 and not is_stream(name):  # an empty pipe is a quiet day, not a broken file
        on_problem(_empty(name))


def _json_object(line: bytes) -> bool:
    """Whether a line is a JSON object with a string in it: a JSONL record."""
    line = line.strip()
    if not (line.startswith(b"{") and line.endswith(b"}")):
        return False
    try:
        record = load_json(line.decode("utf-8", "replace"))
    except ValueError:
        return False
    return isinstance(record, dict) and any(isinstance(value, str) for value in record.values())


def _looks_jsonl(where: str) -> Problem:
    """`zcat crawl.jsonl.gz | simdedup filter`, --jsonl forgotten: each record was read
    whole as a line of text, id and url in it, and copies went through (a trial)."""
    message = "this line is a JSON object, read as a line of text: give --jsonl to read JSONL records"
    return Problem(where, "looks-jsonl", message)


def _jsonl_member(where: str) -> Problem:
    message = (
        "a file in a directory is one document, not JSONL records: give JSONL files by name to read them"
    )
    return Problem(where, "jsonl-member", message)


def _unnamed(where: str, field: str) -> Problem:
    """The first record has no id: said of a null one too ("no 'id' field" was, of a
    field that is there; a review), and of a path into a field, which is not read."""
    message = (
        f"no {field!r} field, or a null or empty one (--id-field); records without one are named PATH:LINE"
    )
    if "." in field:  # meta.id
        message += "; --id-field names a top-level field"
    return Problem(where, "no-id", message)


def _empty(name: str) -> Problem:
    return Problem(name, "empty-file", "empty file: no documents in it")


class Chunk(NamedTuple):
    """Whole lines of a file, from line `first` on: a piece of work that any process
    can turn into Documents (read_chunk) without the rest of the file."""

    name: str
    first: int
    data: bytes


#: Bytes of a file per Chunk (~1,600 documents of ~640 bytes), and of each of its first
#: FIRST_CHUNKS: smaller, so that the work done on them before workers start is short
#: (parallel.ordered_map times that many with --jobs 0). 20,000 Chinese lines, `scan
#: -j0`: 1.25-1.28 s (fastest, median) with two first chunks of 64 KiB, 1.30-1.35 s with
#: one (then 256 KiB).
CHUNK_BYTES = 1 << 20
FIRST_CHUNK_BYTES = 64 << 10
FIRST_CHUNKS = 2
#: Bytes of a Stretch that `fingerprint`'s workers read and number themselves
#: (read_chunks' stretch_size): a quarter of CHUNK_BYTES' messages to and from them.
#: `fingerprint -j2` of 4M lines took 2.94-3.18 s against 3.10-3.41 s (6 rounds each,
#: alternating); in one process 2% slower, so it keeps CHUNK_BYTES (benchmarks/README.md,
#: "Stop 45").
STRETCH_BYTES = 4 << 20
#: A file smaller than this many of them is cut into narrower Stretches (down to
#: CHUNK_BYTES), so that they share out evenly among the workers: 34 MB of Chinese
#: lines, 9 Stretches of 4 MiB for two workers, took 2.25-2.51 s against 2.13-2.20 s in
#: 1 MiB ones; so cut, 1.92-1.95 s against 1.94-1.99 s.
STRETCHES_A_FILE = 32


def read_chunks(
    paths: Sequence[str],
    options: ReadOptions,
    stdin: Lines | Streams | None = None,
    size: int | None = None,
    stretches: bool = False,
    stretch_size: int | None = None,
) -> Iterator[Chunk | Span | Stretch | Barrier | Problem]:
    """Every file of `paths` as Chunks of whole lines, in order, with each Problem in
    its place among them: read_documents without the parsing, which read_chunk does, so
    that worker processes can do it. Not for directories. A plain file comes as Spans,
    which those processes read themselves (SpanReader); with `stretches`, all but its
    first as Stretches, cut without reading it, for a caller that numbers their lines
    itself (a plain file that is not JSONL), each run of them followed by BARRIER. "-"
    is `stdin`, and a named pipe or device is read as it is (Streams): their whole lines
    so far also make a Chunk whenever the writer goes quiet (Lines.waiting). Chunks hold
    `size` bytes or so (CHUNK_BYTES), a file's first FIRST_CHUNK_BYTES; Stretches
    `stretch_size` (`size`)."""
    size = size or CHUNK_BYTES
    streams = _streams(stdin)
    files: set[tuple[int, int]] = set()  # the files read
    for path in paths:
        if is_stream(path) and streams.read_before(path, files):
            yield _revisited(path)
            continue
        if is_stream(path):
            try:
                lines = streams.lines(path)
            except OSError as e:
                yield Problem(path, "unreadable", e.strerror or str(e))
                continue
            try:
                yield from _chunks(lines.blocks(), path, size, lines)
            finally:
                streams.close(lines)
            continue
        if os.path.isdir(path):
            raise ValueError(f"{path!r}: a directory is read a document at a time")
        if (problem := _unopenable(path)) is not None:
            yield problem
            continue
        if _read_before(path, files):
            yield _revisited(path)
            continue
        try:
            stream = open_input(path)
        except OSError as e:
            yield Problem(path, "unreadable", e.strerror or str(e))
            continue
        with stream:
            opened = _size_opened(stream)
            if (where := _reopenable(stream, path)) is not None:
                stretched = stretches and not options.is_jsonl(path)
                yield from _spans(stream, path, *where, size, stretched, stretch_size or size)
            else:
                yield from _chunks(_blocks(stream, size), path, size)
            if (problem := _shrank(stream, opened, path)) is not None:
                yield problem


def _chunk_sizes(size: int) -> Iterator[int]:
    """The bytes wanted of a file's chunks, in turn: FIRST_CHUNKS of FIRST_CHUNK_BYTES, then `size`."""
    return chain(repeat(FIRST_CHUNK_BYTES, FIRST_CHUNKS), repeat(size))


def _blocks(stream: IO[bytes], size: int) -> Iterator[bytes]:
    # read1: what one read of the file gives, so that a gzip member cut short still
    # gives every line before the cut, as reading line by line does.
    for wanted in _chunk_sizes(size):
        if not (data := stream.read1(wanted)):  # type: ignore[attr-defined]
            return
        yield data


#: Lines of a stream per Chunk, at most: each document costs its batch a 256-byte sketch
#: and more, so a chunk of a MiB of blank lines, cut by its bytes alone, held a million
#: documents (1.1 GB resident for 2M blank lines on stdin, 0.36 GB by name; a trial).
CHUNK_LINES = 16384


def _cut(lines: bytes, size: int, most: int | None = None) -> list[bytes]:
    """Whole lines as pieces of at most `size` bytes (a longer line alone) and `most`
    (CHUNK_LINES) lines: a stream's read of a MiB is one piece of ~1,600 English lines,
    or many."""
    most = CHUNK_LINES if most is None else most
    if len(lines) <= size and (len(lines) <= most or _newlines(lines) <= most):
        return [lines]
    ends = np.flatnonzero(np.frombuffer(lines, np.uint8) == 10) + 1  # each line's end
    pieces, start, line = [], 0, 0
    while line < len(ends):
        last = max(line, min(int(np.searchsorted(ends, start + size, "right")) - 1, line + most - 1))
        pieces.append(lines[start : ends[last]])
        start, line = int(ends[last]), last + 1
    if start < len(lines):  # a last line without its newline, at the input's end
        pieces.append(lines[start:])
    return pieces


#: A stream's lines that come less than TRICKLE_GAP seconds apart make one Chunk, cut at
#: the latest TRICKLE_WAIT seconds after its first bytes came (_chunks): a Chunk a line,
#: which a pipe that empties after each line gave, cost ~1 ms of CPU a line through the
#: stages after (2,000 lines written 1 ms apart: 2.2 s of CPU), a core for `tail -f` of
#: 1,000 lines a second (a trial).
TRICKLE_GAP = 0.002
TRICKLE_WAIT = 0.05


def _chunks(
    blocks: Iterator[bytes], name: str, size: int, stream: Lines | None = None
) -> Iterator[Chunk | Problem]:
    """The Chunks of `blocks`, `size` bytes or so each (the first ones _chunk_sizes). Of
    a `stream`, the lines so far also make a Chunk once its writer pauses for
    TRICKLE_GAP, or TRICKLE_WAIT after they began to come, its `paced` set while the
    stages after take it in (so that they hand it on at once too), as it is for a
    Chunk that filled TRICKLE_WAIT / 2 or more after its first bytes came; on an interrupt,
    the whole lines read are cut before it goes on, so that they are decided too."""
    sizes = _chunk_sizes(size)
    first, wanted = 1, next(sizes)
    pending = _Pending()
    first_line = _FirstLine(name)
    began: float | None = None  # when the bytes pending began to come (at the latest)

    def cut(lines: bytes) -> Iterator[Chunk]:
        nonlocal first
        for piece in _cut(lines, size):
            yield Chunk(name, first, piece)
            first += _newlines(piece)

    try:
        for data in blocks:
            if not first_line.whole and (problem := first_line.judge(data, 0, len(data))) is not None:
                yield problem
                return
            if began is None:
                began = time.monotonic()
            pending.add(data)
            full, paced = len(pending) >= wanted, False
            if stream is not None:
                waited = time.monotonic() - began
                # A full chunk that was long in coming is handed on at once too: one of a
                # pipe of a few MB a second was held for the next, 100-580 ms (a review).
                paced = (
                    waited >= TRICKLE_WAIT / 2
                    if full
                    else waited >= TRICKLE_WAIT or stream.quiet(TRICKLE_GAP)
                )
            if (paced or full) and (lines := pending.whole_lines()):
                cut_at = time.monotonic()
                if stream is not None:
                    stream.paced = paced
                yield from cut(lines)
                wanted, began = next(sizes), None
                if stream is not None:
                    stream.paced = False
                    # What came while the stages after took the chunk in has waited since
                    # it was cut, at the most: timed from the next read, it waited up to
                    # TRICKLE_WAIT more (a review).
                    if pending or not stream.quiet(0):
                        began = cut_at
    except KeyboardInterrupt:
        if lines := pending.whole_lines():
            yield from cut(lines)
        raise
    except READ_ERRORS as e:
        if lines := pending.whole_lines():
            yield from cut(lines)
        where = f"{name}:{first}" if first > 1 else name
        yield Problem(where, "unreadable", f"cannot read further: {read_error(e, name)}")
        return
    if pending:
        yield from cut(pending.take())
    elif first == 1 and not is_stream(name):  # an empty pipe is a quiet day, not a broken file
        yield _empty(name)


class Span(NamedTuple):
    """Whole lines of a plain file, from line `first` on: the `size` bytes at byte `at`
    of `name`, `lines` of them, which any process turns into their Chunk by reading them
    (SpanReader) from `path`, the file's real path, while it is still `file` (st_dev,
    st_ino). The process that cuts a file into Spans hands its workers none of its bytes."""

    name: str
    first: int
    lines: int
    path: str
    file: tuple[int, int]
    at: int
    size: int


class Stretch(NamedTuple):
    """The lines of a plain file that start in the `size` bytes at byte `at` (after a
    line's end: never at the file's start), cut without reading the file: whoever reads
    them (SpanReader.stretch) finds where they begin and end, and counts them. `first`,
    where the process that cut it knew it (the file's first Stretch), is the number of
    their first line; else 0: the line after the last of the Stretch before. Reading a
    file to number its Spans' lines was a quarter of `fingerprint -j2`'s main process
    (0.10 s of CPU per 1M lines of 622 MiB, as much as the copy from the page cache)."""

    name: str
    first: int
    path: str
    file: tuple[int, int]
    at: int
    size: int
    #: The file's size when it was cut: its end is no sooner, or it shrank since.
    ends: int


class Barrier:
    """An item of read_chunks' that is no work: whoever hands its items to other
    processes (parallel.ordered_map) has every item before it done before it takes the
    next. _stretches asks a file's size again after one, once what was cut is read."""


BARRIER = Barrier()
#: A file modified this recently when its Stretches are cut may be growing: its size is
#: asked again after a BARRIER. Others are asked at once: a BARRIER empties the workers'
#: queue, and one a file made `fingerprint -j2` of 770 files of 80 KiB 15% slower.
GROWING_SECONDS = 10.0


def _stretches(
    stream: IO[bytes], name: str, path: str, file: tuple[int, int], at: int, first: int, size: int
) -> Iterator[Stretch | Barrier]:
    """Stretches of `size` bytes from byte `at` (line `first`) of a plain file to its end,
    its size asked again once they are read (BARRIER), for what was written since; the
    stream is left there, for _shrank. Asked as soon as they were cut, it missed the
    lines appended while workers read them: `fingerprint` of a growing file stopped at
    its size when it started (a review), where one process reads to its new end. Only
    of a file modified in the last GROWING_SECONDS: a file not written to lately is
    asked again at once."""
    while at < (end := (st := os.fstat(stream.fileno())).st_size):
        while at < end:
            cut = min(size, end - at)  # the last one to the file's end: what is written since comes next
            yield Stretch(name, first, path, file, at, cut, end)
            first, at = 0, at + cut
        if time.time() - st.st_mtime < GROWING_SECONDS:
            yield BARRIER
    stream.seek(at)


def _reopenable(stream: IO[bytes], name: str) -> tuple[str, tuple[int, int]] | None:
    """(real path, (st_dev, st_ino)) of a plain file that another process can open again
    by that path and find the same: not a compressed one (its Spans would be of the
    decompressed bytes), nor one of /proc's (size 0, and /proc/self is each process's
    own), nor one renamed or deleted since it was opened; and one of more than
    FIRST_CHUNK_BYTES. A smaller file is one chunk, which costs less to send than to
    open again: 20,000 files of 400 bytes took `fingerprint -j2` 5% longer as Spans."""
    if not isinstance(stream, io.BufferedReader):
        return None
    opened = os.fstat(stream.fileno())
    if not stat.S_ISREG(opened.st_mode) or opened.st_size <= FIRST_CHUNK_BYTES:
        return None
    path = os.path.realpath(name)
    try:
        found = os.stat(path)
    except OSError:
        return None
    same = (found.st_dev, found.st_ino) == (opened.st_dev, opened.st_ino)
    return (path, (opened.st_dev, opened.st_ino)) if same else None


def _spans(
    stream: IO[bytes],
    name: str,
    path: str,
    file: tuple[int, int],
    size: int,
    stretches: bool = False,
    stretch_size: int | None = None,
) -> Iterator[Span | Stretch | Barrier | Problem]:
    """_chunks for a plain file, as Spans: cut at the last newline once a buffer of
    _chunk_sizes' bytes is full (a line longer than it grows it), each
    read into one buffer that the next reuses, and only its newlines counted. With
    `stretches`, the first Span and then Stretches of the rest, which is not read here:
    of `stretch_size` bytes (`size`), or fewer, down to `size`, where that would not
    make STRETCHES_A_FILE of them."""
    sizes = _chunk_sizes(size)
    buf, held, at, first = bytearray(next(sizes)), 0, 0, 1
    # Where the newlines are, in an array kept for the next Span: a new one each time
    # and the reads of the Spans took turns at fresh pages (300,000 page faults and
    # ~0.5 s of CPU more, in one process reading 621 MiB).
    marks = np.empty(0, bool)

    def span(cut: int) -> Span:
        nonlocal marks
        if len(marks) < cut:
            marks = np.empty(len(buf), bool)
        lines = _newlines(memoryview(buf)[:cut], marks) + (buf[cut - 1] != 0x0A)  # a last line without one
        return Span(name, first, lines, path, file, at, cut)

    first_line = _FirstLine(name)
    try:
        while n := stream.readinto(memoryview(buf)[held:]):  # type: ignore[attr-defined]
            if not first_line.whole and (problem := first_line.judge(buf, held, held + n)) is not None:
                yield problem
                return
            held += n
            if held < len(buf):  # a plain file fills it but at its end
                continue
            if not (cut := buf.rfind(b"\n", 0, held) + 1):  # a line longer than it
                buf.extend(bytes(len(buf)))
                continue
            yield (whole := span(cut))
            first, at, held = first + whole.lines, at + cut, held - cut
            if stretches:
                wide = min(stretch_size or size, os.fstat(stream.fileno()).st_size // STRETCHES_A_FILE)
                yield from _stretches(stream, name, path, file, at, first, max(size, wide))
                return
            buf[:held] = buf[cut : cut + held]
            if len(buf) < (wanted := next(sizes)):
                buf.extend(bytes(wanted - len(buf)))
            elif held < wanted < len(buf):  # grown for a long line that is out now
                del buf[wanted:]  # with room left: a full buffer reads nothing more
    except READ_ERRORS as e:
        if cut := buf.rfind(b"\n", 0, held) + 1:
            yield (whole := span(cut))
            first += whole.lines
        where = f"{name}:{first}" if first > 1 else name
        yield Problem(where, "unreadable", f"cannot read further: {read_error(e, name)}")
        return
    if held:
        yield span(held)
    elif at == 0:
        yield _empty(name)


class SpanReader:
    """Spans' Chunks, each read from its file, which stays open for the next Span of
    it; or the Problem that leaves a Span's lines unread: its file replaced, cut
    shorter or unreadable since it was cut into Spans."""

    def __init__(self) -> None:
        self._file: io.FileIO | None = None
        self._key: tuple[str, tuple[int, int]] | None = None

    def __call__(self, span: Span) -> Chunk | Problem:
        where = f"{span.name}:{span.first}" if span.first > 1 else span.name
        lost = f"lines {span.first:,} to {span.first + span.lines - 1:,} are not read"
        try:
            if (fd := self._open(span.path, span.file)) is None:
                return Problem(where, "unreadable", f"the file was replaced while it was read: {lost}")
            data = _pread(fd, span.size, span.at)
        except OSError as e:
            return Problem(where, "unreadable", f"cannot read further: {read_error(e, span.name)}: {lost}")
        if len(data) < span.size:
            return Problem(where, "unreadable", f"the file shrank while it was read: {lost}")
        # Its lines as they were counted: a file rewritten in place since (truncated and
        # written again, the same inode) gave two documents one id (a session's review).
        # By memchr: 5 µs a 256 KiB chunk, where bytes.count took 76.
        if len(line_ends(data)) + (not data.endswith(b"\n")) != span.lines:
            return Problem(where, "unreadable", f"the file changed while it was read: {lost}")
        return Chunk(span.name, span.first, data)

    def stretch(self, stretch: Stretch) -> bytes | Problem:
        """The bytes of a Stretch's lines, each with its newline (a last line of the file
        without one); or a Problem without a line number (the caller knows it), as
        __call__ gives for a Span: the file replaced, cut shorter or unreadable."""
        shrank = Problem(stretch.name, "unreadable", "the file shrank while it was read")
        try:
            fd = self._open(stretch.path, stretch.file)
            if fd is None:
                return Problem(stretch.name, "unreadable", "the file was replaced while it was read")
            last = stretch.at + stretch.size - 1  # its last byte
            if os.fstat(fd).st_size <= last:
                return shrank
            # A line of it starts after each newline from the byte before it to the one
            # before its last; none: within a line from before.
            if (newline := _next_newline(fd, stretch.at - 1, last)) is None:
                return b""
            begin = newline + 1
            # Its last line ends at the first newline from its last byte on, or where the
            # file does (no newline after it; before `ends`: it was cut short).
            if (newline := _next_newline(fd, last)) is not None:
                end = newline + 1
            elif (end := os.fstat(fd).st_size) < stretch.ends:
                return shrank
            # Read once, with nothing either side to cut off.
            if len(data := _pread(fd, end - begin, begin)) < end - begin:
                return shrank
        except OSError as e:
            return Problem(stretch.name, "unreadable", f"cannot read further: {read_error(e, stretch.name)}")
        return data

    def _open(self, path: str, file: tuple[int, int]) -> int | None:
        """The descriptor of `path` while it is still `file`, kept open for the next
        Span or Stretch of it; None where it is another file now."""
        if self._key != (path, file):
            self.close()
            opened = open(path, "rb", buffering=0)  # noqa: SIM115 (kept open for the next Span)
            info = os.fstat(opened.fileno())
            if (info.st_dev, info.st_ino) != file:
                opened.close()
                return None
            self._file, self._key = opened, (path, file)
        return self._file.fileno()  # type: ignore[union-attr]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._key = None, None

    def __del__(self) -> None:  # the task that holds it is dropped with the run
        self.close()


def _next_newline(fd: int, at: int, stop: int | None = None) -> int | None:
    """Where the first newline of fd is from byte `at` on, before byte `stop` (None: the
    file's end); None where there is none. Read 4 KiB at a time, then twice as much each
    time (a long line)."""
    size = 4096
    while stop is None or at < stop:
        piece = os.pread(fd, size if stop is None else min(size, stop - at), at)
        if (i := piece.find(b"\n")) >= 0:
            return at + i
        if not piece:
            return None
        at, size = at + len(piece), min(2 * size, 1 << 20)
    return None


def _pread(fd: int, size: int, at: int) -> bytes:
    """`size` bytes of fd from byte `at` on, or fewer where the file ends."""
    data = os.pread(fd, size, at)
    if len(data) in (0, size):
        return data
    parts = [data]
    while size > (got := sum(map(len, parts))) and (more := os.pread(fd, size - got, at + got)):
        parts.append(more)
    return b"".join(parts)


def _newlines(data: bytes | memoryview, marks: np.ndarray | None = None) -> int:
    """data.count(b"\\n"), vectorized: a chunk's count was a third of the main process's
    work while workers parse (0.23 s of CPU per 650 MB; numpy: 0.05 s). `marks`: a bool
    array of at least len(data) to hold the comparison, kept by a caller that counts
    chunk after chunk (_spans)."""
    found = np.frombuffer(data, np.uint8)
    found = found == 10 if marks is None else np.equal(found, 10, out=marks[: len(found)])
    return int(np.count_nonzero(found))


class _Pending:
    """Bytes read and not yet in a Chunk, kept as the pieces they came in: a line of
    many pieces is joined once, when its end comes."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0
        self.last = -1  # the last piece with a newline in it

    def __len__(self) -> int:
        return self.size

    def add(self, data: bytes) -> None:
        self.pieces.append(data)
        self.size += len(data)
        if b"\n" in data:
            self.last = len(self.pieces) - 1

    def whole_lines(self) -> bytes:
        """Take every whole line held (b"" if none): up to the last newline."""
        if self.last < 0:
            return b""
        last = self.pieces[self.last]
        cut = last.rfind(b"\n") + 1
        if self.last == 0 and cut == len(last):
            lines = last  # a read that ends with a line: no copy
        else:  # one copy: the slice is a view
            lines = b"".join([*self.pieces[: self.last], memoryview(last)[:cut]])
        rest = last[cut:]
        self.pieces = ([rest] if rest else []) + self.pieces[self.last + 1 :]
        self.size -= len(lines)
        self.last = -1
        return lines

    def take(self) -> bytes:
        data = b"".join(self.pieces)
        self.pieces, self.size, self.last = [], 0, -1
        return data


def read_chunk(chunk: Chunk, options: ReadOptions, on_problem: OnProblem) -> Iterator[Document]:
    """The Documents of a Chunk, with the ids and Problems that reading its whole file
    by read_documents gives them."""
    lines = chunk.data.split(b"\n")
    if not lines[-1]:
        lines.pop()  # after the last newline
    return _read_stream(lines, chunk.name, options, on_problem, chunk.first)


class AsciiLines(Sequence[str]):
    """The texts of a Chunk's lines of plain ASCII, left in its bytes: the compiled core
    reads them there (fingerprint.compiled_core); to anything else, a sequence of str,
    each decoded when it is asked for. Slices are AsciiLines too."""

    __slots__ = ("data", "starts", "ends")

    def __init__(self, data: bytes, starts: np.ndarray, ends: np.ndarray) -> None:
        self.data, self.starts, self.ends = data, starts, ends  # line i: data[starts[i]:ends[i]]

    def __len__(self) -> int:
        return len(self.starts)

    def __iter__(self) -> Iterator[str]:
        data = self.data
        return (data[a:b].decode("ascii") for a, b in zip(self.starts.tolist(), self.ends.tolist()))

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> AsciiLines: ...
    def __getitem__(self, i: int | slice) -> str | AsciiLines:
        if isinstance(i, slice):
            return AsciiLines(self.data, self.starts[i], self.ends[i])
        return self.data[self.starts[i] : self.ends[i]].decode("ascii")


def plain_documents(
    chunk: Chunk, options: ReadOptions, raw: bool
) -> tuple[list[Document], Sequence[str]] | None:
    """read_chunk's Documents of a Chunk without their texts (and with raw=False without
    their input form), and the texts, where its lines are plain (plain_lines). None for
    any other Chunk, which read_chunk reads."""
    lines = plain_lines(chunk, options)
    if lines is None:
        return None
    shown, first = printable(chunk.name), chunk.first
    numbers = range(first, first + len(lines))
    if raw:
        docs = [Document(f"{shown}:{n}", "", line) for n, line in zip(numbers, chunk.data.split(b"\n"))]
    else:
        docs = [Document(f"{shown}:{n}", "", b"") for n in numbers]
    return docs, lines


def plain_lines(chunk: Chunk, options: ReadOptions) -> AsciiLines | list[str] | None:
    """A Chunk's lines where they are plain: UTF-8, not JSONL, no CR, none over
    max_doc_size, and not a file's first lines (the first is checked for other formats
    and a byte-order mark), so that reading them has nothing to report; their ids are the
    file's printable name and their line numbers (plain_documents). AsciiLines where they
    are ASCII, else the chunk decoded at once, a str a line (read_chunk decodes line by
    line: 2.5 µs a line more). Else None."""
    data = chunk.data
    if chunk.first == 1 or not data or b"\r" in data or options.is_jsonl(chunk.name):
        return None
    ends = line_ends(data)
    if not data.endswith(b"\n"):
        ends = np.append(ends, len(data))
    starts = np.zeros(len(ends), np.int64)
    starts[1:] = ends[:-1] + 1
    if int((ends - starts).max()) > options.max_doc_size:
        return None
    if data.isascii():
        return AsciiLines(data, starts, ends)
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:  # read_chunk says where, and reads the bytes as Windows-1252
        return None
    return lines[:-1] if data.endswith(b"\n") else lines


def line_ends(data: bytes) -> np.ndarray:
    """Where data's newlines are: int64 offsets, in order. By memchr where the compiled
    text core was built (_textcore.line_ends: 22 µs a MiB against numpy's 159)."""
    if _c_line_ends is not None:
        return np.frombuffer(_c_line_ends(data), np.int64)
    return np.flatnonzero(np.frombuffer(data, np.uint8) == 10)


def _as_windows_1252(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler LEGACY names: the bytes that are not UTF-8 read as
    Windows-1252, as browsers read text labelled Latin-1 (WHATWG Encoding); its five
    unassigned bytes as the C1 controls of the same values, as they do too."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    bad = error.object[error.start : error.end]
    return "".join(bytes([b]).decode("cp1252", "ignore") or chr(b) for b in bad), error.end


#: How the bytes of a line or a file that are not UTF-8 are read. Replaced by U+FFFD,
#: which is no word character, text in a legacy 8-bit encoding kept its ASCII alone:
#: eight different cp1251 headlines that began with one date were one document seven
#: times over, and filter dropped seven (a trial). Read as Windows-1252, each word of such
#: text mostly stays a word of its own (mojibake, but another word for another word; a
#: few letters become symbols, cp1251's ч as ÷, KOI8-R's в as ×, and split words), and
#: Western European text in cp1252 or Latin-1 reads as it was written.
LEGACY = "simdedup-windows-1252"
codecs.register_error(LEGACY, _as_windows_1252)


def _replaced(
    raw: bytes,
    error: UnicodeDecodeError,
    where: str,
    on_problem: OnProblem,
    encoding: str = "utf-8",
    final: bool = True,
    skipped: int = 0,
) -> str:
    """A line that is not UTF-8, reported and decoded with its bytes that are not UTF-8
    read as Windows-1252 (LEGACY); a file that is not UTF-16, with replacement
    characters. Not `final`: raw was cut short, and a character cut at its end goes
    quietly. `skipped`: the bytes before raw (a byte-order mark), counted in the byte
    said."""
    name = encoding.upper()
    utf8 = encoding == "utf-8"
    how = "its bytes that are not UTF-8 read as Windows-1252" if utf8 else "decoded with replacement"
    message = f"invalid {name} at byte {skipped + error.start + 1}, {how}"
    on_problem(Problem(where, "invalid-utf8", message))
    return codecs.getincrementaldecoder(encoding)(LEGACY if utf8 else "replace").decode(raw, final)


def _decoded(
    data: bytes, encoding: str, final: bool, where: str, on_problem: OnProblem, skipped: int = 0
) -> str:
    try:
        return codecs.getincrementaldecoder(encoding)().decode(data, final)
    except UnicodeDecodeError as e:
        return _replaced(data, e, where, on_problem, encoding, final, skipped)


#: Byte-order marks of UTF-32 and UTF-16 text (UTF-32's first: its little-endian mark
#: starts as UTF-16's does). A file read line by line cannot be such text (its newlines
#: are two or four bytes): it is refused, not read as lines of garbage.
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _wide_encoding(data: bytes) -> str | None:
    """The encoding, "utf-32" or "utf-16", of text that starts with its byte-order mark."""
    if not data.startswith(_WIDE_FIRSTS):  # most text: one test, not one a mark
        return None
    return next((encoding for bom, encoding in _WIDE_BOMS if data.startswith(bom)), None)


_WIDE_FIRSTS = tuple({bom[:1] for bom, _ in _WIDE_BOMS})


def _unmarked_utf16(start: bytes) -> str | None:
    """The encoding, UTF-16LE or UTF-16BE, where a first line is such text without a byte-order
    mark, as Windows tools write it: every other byte NUL (Latin text), the others not."""
    sample = start[:256]
    if len(sample) < 4:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if odd * 2 >= len(sample) // 2 and not even:
        return "UTF-16LE"
    if even * 2 >= len(sample) - len(sample) // 2 and not odd:
        return "UTF-16BE"
    return None


class _FirstLine:
    """A stream's first line, judged (_not_text) as its pieces are read: the first piece
    up to the line's end, the next ones for NUL bytes only, until the end has come.
    - Up to its end: the first read whole, 64 KiB, let ASCII lines after a first line of
      UTF-16 thin out its NULs; the first chunk was refused and the rest of the file read
      (a session's review).
    - Past the first read: judged on it alone, a first line longer than it passed; the
      chunk reader then refused that line and dropped the rest of its chunk without a
      word, and read the chunks after it (a review: 858 good records lost)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.started = self.whole = False

    def judge(self, data: bytes | bytearray, start: int, end: int) -> Problem | None:
        """Why the stream is refused, given its bytes data[start:end] that follow those
        judged before; or None."""
        stop = data.find(b"\n", start, end)
        self.whole = stop >= 0
        stop = stop if self.whole else end
        if not self.started:
            self.started = True
            return _not_text(bytes(data[start:stop]), self.name)
        return _binary_lines(self.name) if data.find(b"\0", start, stop) >= 0 else None


def _not_text(start: bytes, name: str) -> Problem | None:
    """Why a stream read line by line that starts with `start` is refused, or None:
    compressed data there (on stdin, or in a file not named for its format) would be read
    as lines of binary, and `filter` would write back a damaged stream; UTF-16 or UTF-32
    text as lines of NUL-split garbage (their newlines are two or four bytes); any other
    first line with a NUL byte, binary data (a program, an archive, an image), as lines
    of invalid UTF-8, which `filter` would copy through. A
    format's magic number is looked for first: the first line of gzip data whose header
    holds a newline byte (its mtime) is a few bytes that look like UTF-16 to the guess."""
    for codec in CODECS:
        if codec.magic.match(start):
            how = f"{codec.cat} it into simdedup"
            if not is_stream(name):
                how = f"name it FILE{codec.suffix}, or {how}"
            kind = "gzip" if codec.kind == "gzip" else "compressed"
            return Problem(name, kind, f"{codec.kind} data is not read as text: {how}")
    if (encoding := _wide_encoding(start)) is not None:
        upper = encoding.upper()
        message = f"{upper} text is not read line by line: convert it to UTF-8 (iconv -f {upper} -t UTF-8)"
        return Problem(name, encoding.replace("-", ""), message)
    if (unmarked := _unmarked_utf16(start)) is not None:
        message = (
            f"this looks like {unmarked} text without a byte-order mark, which is not read line by "
            f"line: convert it to UTF-8 (iconv -f {unmarked} -t UTF-8)"
        )
        return Problem(name, "utf16", message)
    if start == INDEX_MAGIC[:-1]:  # its first line (no NUL: it was read as lines), less its newline
        message = "a stored index is not read as text: `simdedup index info` and `index query` read it"
        return Problem(name, "binary-lines", message)
    if b"\0" in start:
        return _binary_lines(name)
    return None


def _binary_lines(name: str) -> Problem:
    message = "its first line holds NUL bytes: binary data is not read as lines of text"
    return Problem(name, "binary-lines", message)


#: How a stored index (store.MAGIC) begins: its first line.
INDEX_MAGIC = b"\x89SDX\r\n"


def _long_line(body: bytes, raw: bytes, where: str, limit: int, on_problem: OnProblem) -> Document:
    """A line (not a JSONL record) over `limit` bytes, fingerprinted on the text of its
    first `limit` bytes as a directory's file is, without decoding the rest: a 200 MB
    line held 200 MB more as text."""
    text = _decoded(body[:limit], "utf-8", False, where, on_problem)
    on_problem(_too_large(where, len(body), limit))
    return Document(where, text, raw)


def _too_large(where: str, size: int, limit: int) -> Problem:
    message = f"document is {size_text(size)}; fingerprinted its first {size_text(limit)} (--max-doc-size)"
    return Problem(where, "too-large", message)


def _truncated(doc: Document, where: str, limit: int, on_problem: OnProblem) -> Document:
    """A document whose input line is over `limit` bytes, cut to the text of its first
    `limit` bytes of UTF-8 (as a directory's file is), if its text is longer than that:
    a JSONL line's escapes and other fields do not count, and a line of Chinese is cut at
    the same place as the same text in a file (it was cut at `limit` characters)."""
    if doc.text.isascii():
        size, cut = len(doc.text), doc.text[:limit]
    else:
        encoded = doc.text.encode("utf-8", "surrogatepass")
        size, cut = len(encoded), encoded[:limit].decode("utf-8", "ignore")
    if size <= limit:
        return doc
    on_problem(_too_large(where, size, limit))
    return Document(doc.id, cut, doc.raw, doc.features)


def size_text(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n:,} byte{'s' if n != 1 else ''}"


def _parse_record(
    text: str, raw: bytes, where: str, options: ReadOptions, on_problem: OnProblem
) -> Document | None:
    # Byte-order marks where files were joined (cat a.jsonl b.jsonl) are no reason to drop
    # a record, and a line of one is blank (it was `not JSON` but on the first line).
    marks = len(text) - len(text := text.lstrip("\ufeff"))
    if not text.strip(JSON_SPACE):
        return None  # blank lines between records are not records (a no-break space is no blank)
    try:
        record = load_json(text)
    except json.JSONDecodeError as e:
        at = "" if e.msg.endswith(" at") else " at"  # "Unterminated string starting at"
        on_problem(Problem(where, "bad-json", f"not JSON: {e.msg}{at} column {e.colno + marks}"))
        return None
    except JsonRefused as e:
        on_problem(Problem(where, "bad-json", str(e)))
        return None
    if not isinstance(record, dict):
        on_problem(Problem(where, "bad-record", f"a JSON {json_type(record)}, not an object"))
        return None
    ident = record.get(options.id_field)
    if type(ident) is float or ident == 0 and type(ident) is int:  # 1e2, 1.10, -0: as written
        ident = load_json(text, numbers_as_written=True)[options.id_field]
    # An empty id names nothing (as a duplicate_of, CSV and TSV write it as they write
    # null; a review): the record is named PATH:LINE, as one without an id.
    if isinstance(ident, (list, dict)):  # as written: its numbers, its spacing, its letters
        doc_id = _written_value(text, options.id_field)
    else:
        doc_id = where if ident is None or ident == "" else ident if type(ident) is str else _id_text(ident)
    if options.features_field is not None:
        if options.features_field not in record:
            on_problem(Problem(where, "bad-record", f"no {options.features_field!r} field"))
            return None
        features = _features(record[options.features_field])
        if isinstance(features, str):
            on_problem(Problem(where, "bad-record", f"{options.features_field!r}: {features}"))
            return None
        return Document(
            _unpaired(doc_id, where, on_problem, "the id"),
            "",
            raw,
            _unpaired_names(features, where, on_problem),
        )
    body = record.get(options.text_field)
    if type(body) is not str:
        if options.text_field not in record:  # a misspelt --text-field: the fields it may mean
            named = [_short(repr(name)) for name, value in record.items() if type(value) is str]
            more = ", ..." if len(named) > _NAMED_FIELDS else ""
            shown = f" (its string fields: {', '.join(named[:_NAMED_FIELDS])}{more})" if named else ""
            outer = options.text_field.split(".")[0]
            if "." in options.text_field and isinstance(record.get(outer), dict):  # content.body
                shown += f"; a field inside {outer!r} is not read: --text-field names a top-level field"
            on_problem(Problem(where, "bad-record", f"no {options.text_field!r} field{shown}"))
            return None
        if body is None:
            what = "a null"
        else:
            what = f"a non-string ({'int' if isinstance(body, _NumberText) else type(body).__name__})"
        on_problem(Problem(where, "bad-record", f"{what} {options.text_field!r} field"))
        return None
    return Document(
        _unpaired(doc_id, where, on_problem, "the id"),
        _unpaired(body, where, on_problem, repr(options.text_field)),
        raw,
    )


#: A record without the text field names this many of its string fields at most.
_NAMED_FIELDS = 6


def _short(name: str, most: int = 40) -> str:
    return name if len(name) <= most else name[: most - 3] + "..."


#: JSON's whitespace (RFC 8259): what may stand around a record, where str.strip()
#: also takes no-break spaces, U+3000, form feeds and other Unicode spaces.
JSON_SPACE = " \t\n\r"


def json_type(value: object) -> str:
    """What JSON calls a value that load_json gave, other than an object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, _NumberText)):
        return "number"
    return "string" if isinstance(value, str) else "list"


class _NumberText(str):
    """A JSON number kept as it is written: an integer longer than Python converts
    (sys.get_int_max_str_digits), so that a record holding one elsewhere than in its
    text is still read; and an id (load_json's numbers_as_written), which reads as it
    was written (1e2 and 1E+2 would both be 100.0)."""


def _long_int(digits: str) -> int | str:
    try:
        return int(digits)
    except ValueError:
        return _NumberText(digits)


def _id_text(ident: object) -> str:
    """A JSONL id that is a number or a boolean, as JSON writes it (1, true)."""
    return str.__str__(ident) if isinstance(ident, _NumberText) else json.dumps(ident)


def _written_value(text: str, field: str) -> str:
    """The text of the value of a JSON object's last `field` (the one json.loads keeps),
    as it stands in `text`, which holds that object alone. An id that is an array or an
    object: written again by json.dumps, its letters came out as \\u escapes (a Chinese
    id could not be found with grep) and its numbers as Python reads them (1.10 as 1.1,
    1e2 as 100.0; a trial)."""
    value = json.JSONDecoder(parse_int=_long_int, parse_constant=_constant).raw_decode
    at, found = text.index("{") + 1, ""
    while (at := _past_space(text, at)) < len(text) and text[at] == '"':
        key, at = json.decoder.scanstring(text, at + 1)
        start = _past_space(text, _past_space(text, at) + 1)  # past the colon
        at = value(text, start)[1]
        if key == field:
            found = text[start:at]
        at = _past_space(text, at) + 1  # past the comma
    # a tab, newline or CR between items, a new kind of character in ids, is a space (a review)
    cuts = [0, *(i for m in _JSON_STRING.finditer(found) for i in m.span()), len(found)]
    return "".join(
        _LINE_SPACE.sub(" ", found[a:b]) if n % 2 == 0 else found[a:b]
        for n, (a, b) in enumerate(zip(cuts, cuts[1:]))
    )


_LINE_SPACE = re.compile("[ \t\n\r]*[\t\n\r][ \t\n\r]*")


def _past_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in JSON_SPACE:
        at += 1
    return at


def load_json(text: str, numbers_as_written: bool = False) -> Any:
    """json.loads, but an integer of more digits than int() converts stays its digits
    (_NumberText) instead of failing the record; only records holding one pay for it.
    `numbers_as_written`: every number is a _NumberText. Raises json.JSONDecodeError,
    or JsonRefused for what Python's reader takes but JSON is not (NaN, Infinity), and
    for arrays or objects nested more than MAX_JSON_DEPTH deep."""
    try:
        if numbers_as_written:
            numbers = {"parse_int": _NumberText, "parse_float": _NumberText}
            record = json.loads(text, **numbers, parse_constant=_constant)
        else:
            try:
                record = _DECODER.decode(text)
            except (json.JSONDecodeError, JsonRefused):
                raise
            except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
                record = json.loads(text, parse_int=_long_int, parse_constant=_constant)
    except RecursionError:
        raise JsonRefused(_TOO_DEEP) from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(text) > MAX_JSON_DEPTH:
        raise JsonRefused(_TOO_DEEP)
    return record


class JsonRefused(ValueError):
    """A line that is not JSON, or too deep, that Python's reader would take or fail on
    its own way; its message is what is said of the record."""


#: How deep arrays and objects may nest in a record. Python's reader fails at its own
#: recursion limit, less the frames above it: about 976 levels in the main process, 966
#: in a worker, so such a record was kept by `-j1` and left out by `-j2` (a review).
MAX_JSON_DEPTH = 800
_TOO_DEEP = f"JSON nested too deeply to read (more than {MAX_JSON_DEPTH:,} levels)"


def _constant(name: str) -> Any:
    """NaN, Infinity, -Infinity: Python's reader takes them, JSON has none (and jq and
    strict readers downstream fail on a record that `filter` passed on: a review)."""
    raise JsonRefused(f"not JSON: {name} is no JSON value")


_DECODER = json.JSONDecoder(parse_constant=_constant)
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _depth(text: str) -> int:
    """How deep the arrays and objects of valid JSON `text` nest (its brackets outside
    its strings)."""
    depth = deepest = 0
    for bracket in re.findall(r"[\[\]{}]", _JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


_SURROGATE = re.compile("[\ud800-\udfff]")


def _unpaired(text: str, where: str, on_problem: OnProblem, field: str) -> str:
    """A JSON string with an unpaired surrogate escape ("\\udcff") made valid text:
    replaced by U+FFFD (it is no byte, to be read as invalid UTF-8 is), and reported,
    naming the `field` it is in (the id's and the text's were said alike). No UTF-8 can
    encode it."""
    if text.isascii():
        return text
    found = _SURROGATE.search(text)
    if found is None:
        return text
    at = found.start() + 1
    on_problem(
        Problem(
            where,
            "invalid-utf8",
            f"unpaired surrogate \\u{ord(found[0]):04x} in {field} at character {at}, replaced",
        )
    )
    return _SURROGATE.sub("\ufffd", text)


def _unpaired_names(features: dict[str, float], where: str, on_problem: OnProblem) -> dict[str, float]:
    """Features whose names hold unpaired surrogate escapes, named as _unpaired makes
    text (reported once); names that become one are one feature, their weights summed."""
    bad = next((name for name in features if not name.isascii() and _SURROGATE.search(name)), None)
    if bad is None:
        return features
    _unpaired(bad, where, on_problem, "a feature's name")
    named: dict[str, float] = {}
    for name, weight in features.items():
        name = _SURROGATE.sub("\ufffd", name)
        named[name] = named.get(name, 0.0) + weight
    return named


def _features(value: object) -> dict[str, float] | str:
    """A record's features, or what is wrong with them. Weights are finite numbers whose
    magnitudes sum to a finite number, so that no column sum can overflow (NaN, which
    JSON readers accept, would give every such record the same fingerprint)."""
    if not isinstance(value, dict):
        return "not an object of feature -> number"
    features = {}
    for key, weight in value.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            return "not an object of feature -> number"
        try:
            features[key] = float(weight)
        except OverflowError:  # an int too large for a float
            return f"weight of {key!r} is too large"
    if not math.isfinite(sum(abs(w) for w in features.values())):
        bad = next((k for k, w in features.items() if not math.isfinite(w)), None)
        return f"weight of {bad!r} is not a finite number" if bad is not None else "weights too large to sum"
    return features


@dataclass
class _Aliased:
    """A run's folders (`tops`), and the files read so far that other names may reach:
    those with hard links, and those read through a symbolic link, by (st_dev, st_ino)."""

    tops: tuple[str, ...]
    read: set[tuple[int, int]] = field(default_factory=set)

    def forget(self, st: os.stat_result) -> None:
        """A file counted read by again() that was not, after all."""
        self.read.discard((st.st_dev, st.st_ino))

    def link_to_read(self, path: str, options: ReadOptions) -> str | None:
        """Where the symbolic link `path` points, if the run reads that file under its
        own name (in one of its folders, as --glob and --exclude leave them): read
        through the link too, it was its own duplicate, and deleting the duplicates
        that `scan` listed deleted the file, where the link came first (a trial)."""
        target = os.path.realpath(path)
        # Not where its folder cannot be listed (searched, mode 711): the walk cannot read
        # it there, and skipped here, it was read nowhere (a trial).
        if not os.access(os.path.dirname(target), os.R_OK | os.X_OK):
            return None
        return target if any(walk_reads(top, target, options) for top in self.tops) else None

    def again(self, st: os.stat_result, linked: bool) -> bool:
        """Whether a member opened with this stat was read before under another name
        (each name of a file with hard links, or a link, is a document only once)."""
        if not linked and st.st_nlink < 2 and not self.read:
            return False
        key = (st.st_dev, st.st_ino)
        if key in self.read:
            return True
        if linked or st.st_nlink > 1:
            self.read.add(key)
        return False


def _read_tree(
    top: str,
    options: ReadOptions,
    on_problem: OnProblem,
    seen: Entered | None = None,
    named: tuple[frozenset[tuple[int, int]], set[tuple[int, int]]] | None = None,
    aliased: _Aliased | None = None,
) -> Iterator[Document]:
    """Each regular file below `top` is one document, in sorted path order. `named`:
    the files given by name in the run, and those read so far (_read_before): a member
    that is one of them is read once, where it comes first. A file that other names in
    the run's folders reach (`aliased`) is one document too: a symbolic link to a file
    read under its own name is skipped, wherever it sorts, and a file with hard links,
    or reached by links from elsewhere, is read where it comes first."""
    aliased = _Aliased((top,)) if aliased is None else aliased
    forget = partial(_not_read, aliased, named)
    for path in _walk(top, options, on_problem, seen):
        linked, beneath = isinstance(path, _Linked), isinstance(path, _Beneath)
        path = str(path)  # a plain str for the Document's id
        if linked and (target := aliased.link_to_read(path, options)) is not None:
            if named and _file_key(path) in named[1]:  # read already, by its name
                on_problem(_revisited(path))
            else:  # not counted as read: the file is, in a folder of the run
                shown = target if os.path.isabs(path) else os.path.relpath(target)
                said = f"a link to {printable(shown)}, which this run reads in its folder; skipped"
                on_problem(Problem(path, "revisited", said))
            continue
        if named and named[0] and _read_before(path, named[1], among=named[0]):
            on_problem(_revisited(path))
            continue
        again = partial(aliased.again, linked=linked or beneath)
        doc = _read_member(path, options, on_problem, again, forget)
        if doc is not None:
            yield doc


def _not_read(
    aliased: _Aliased,
    named: tuple[frozenset[tuple[int, int]], set[tuple[int, int]]] | None,
    st: os.stat_result,
) -> None:
    """A member refused (a read error, binary) is not counted read: its other names, a
    hard link, a name given, stdin, may read it, as lines or by another format. A file
    with a NUL after its first line, binary to a folder, was then "already read" when
    named, and read nowhere (a review)."""
    aliased.forget(st)
    if named is not None and (key := file_identity(st)) in named[0]:
        named[1].discard(key)


def walk_reads(top: str, path: str, options: ReadOptions) -> bool:
    """Whether reading the directory `top` would read a file at `path`, made yet or not:
    whether it is below `top` and passes --glob and --exclude (as _walk applies them)."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(top))
    parts = rel.split(os.sep)
    if rel == os.curdir or parts[0] == os.pardir:
        return False
    for i, name in enumerate(parts):
        if _excluded(os.sep.join(parts[: i + 1]), name, options.exclude):
            return False
    return not options.glob or _excluded(rel, parts[-1], options.glob)


def _excluded(rel: str, name: str, patterns: Sequence[str]) -> bool:
    return any((found := pattern_regex(pattern)).match(rel) or found.match(name) for pattern in patterns)


@lru_cache(maxsize=256)
def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A --glob or --exclude pattern as fnmatch.fnmatchcase matches it, but that a `**/`
    which starts it or follows a '/' stands for any folders or none, as .gitignore has
    it (`**/*.txt` matches the top level's files, which fnmatch's `*/*.txt` does not: a
    trial). One regex, whatever their number (a form of the pattern with and without
    each of n took 2 ** n matches: a review)."""
    pieces, start = [], 0
    for at in _folder_stars(pattern):
        pieces.append(pattern[start:at])
        start = at + 3
    pieces.append(pattern[start:])
    translated = [fnmatch.translate(piece) for piece in pieces]  # each '(?s:...)\\Z'
    return re.compile("(?s:.*/)?".join(t.removesuffix(r"\Z") for t in translated) + r"\Z")


def _folder_stars(pattern: str) -> list[int]:
    """Where a `**/` starts a pattern or follows a '/'."""
    return [
        i for i in range(len(pattern)) if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/")
    ]


#: What a directory's visit gives _walk: a file's path, or a folder to visit next
#: (its path, its path relative to the top, the directories above it, whether it is
#: inside one entered again, whether it is reached through a link to a folder).
_Step = str | tuple[str, str, frozenset[tuple[int, int]], bool, bool]


_NONE_PASSED: frozenset[str] = frozenset()


@dataclass
class Entered:
    """The directories entered so far in a run (by st_dev, st_ino): each with the names
    --glob and --exclude passed over in it, and those with names passed over in them or
    below, which, entered again under another path, may have more to read."""

    passed: dict[tuple[int, int], set[str] | frozenset[str]] = field(default_factory=dict)
    incomplete: set[tuple[int, int]] = field(default_factory=set)
    #: The --exclude patterns that left something out.
    excluding: set[str] = field(default_factory=set)


def _folders_above(top: str) -> frozenset[tuple[int, int]]:
    """The (st_dev, st_ino) of each folder that holds `top`, up to /: by its real path and
    by the path given (a link given, x/lb -> ../real/b, holding a link back to x: a review)."""
    keys = set()
    for path in {os.path.realpath(top), os.path.abspath(top)}:
        while (parent := os.path.dirname(path)) != path:
            with contextlib.suppress(OSError):
                keys.add(file_identity(os.stat(parent)))
            path = parent
    return frozenset(keys)


def _walk(
    top: str, options: ReadOptions, on_problem: OnProblem, seen: Entered | None = None
) -> Iterator[str]:
    """The files below `top`, in name order, depth first. `seen`: the directories
    entered so far in this run (a folder given twice, or reached again through a link,
    is read once). Directories are visited from a stack of listings, not by recursion: a tree
    1,000 levels deep overflowed Python's."""
    seen = Entered() if seen is None else seen
    incomplete = seen.incomplete

    def visit(
        directory: str,
        rel_prefix: str,
        ancestors: frozenset[tuple[int, int]],
        again: bool = False,
        through_link: bool = False,
    ) -> Iterator[_Step]:
        """The files in `directory` (whose path relative to `top` is rel_prefix: empty
        for top itself, else ending in a separator) as paths, and each folder in it as
        the (directory, rel_prefix, ancestors, again, through_link) to visit next, in
        name order. `again`: a folder inside one entered again; `through_link`: one
        reached through a symbolic link to a folder, whose files are _Beneath it."""
        nonlocal passed_over, matched, entries_seen, found, excluded
        try:
            st = os.stat(directory)
            entries, errors = _listing(directory)
        except OSError as e:
            on_problem(Problem(directory, "unreadable", e.strerror or str(e)))
            return
        key = (st.st_dev, st.st_ino)
        if key in ancestors:  # a link back up: what it leads to is being read (not exit 3)
            said = "a link to a folder above it, which is being read; not followed"
            on_problem(Problem(directory, "ancestor", said))
            return
        if key in above:  # `up -> ..` in top: it read top again and all beside it (a trial)
            said = "a link to a folder above the folder given, which holds it; not followed"
            on_problem(Problem(directory, "ancestor", said))
            return
        # Entered before (given twice, or through a link): only what --glob and --exclude
        # passed over then, under the path it had then, is read now, under this one, and
        # the folders in it, for theirs. A folder whose link sorted first was all passed
        # over by `--glob 'real/*'`, then skipped under its own name as read, its
        # documents read nowhere (a review).
        earlier = seen.passed.get(key)
        if earlier is not None and key not in incomplete:
            if not again:  # a folder of one entered again is said of that one only
                on_problem(_revisited(directory))
            return
        entered_again = earlier is not None
        if entered_again:  # what was passed over, and the folders, for theirs
            entries = [entry for entry in entries if entry[:-2] in earlier or entry[-1] in _FOLDERS]
        passed: set[str] = set()
        seen.passed[key] = passed  # the names passed over, as the entries are
        incomplete.discard(key)  # until something is passed over here or below, this time
        ancestors = ancestors | {key}
        prefix = os.path.join(directory, "")  # + name: os.path.join(directory, name)
        entries_seen = max(entries_seen, 0) + entered_again  # read before: not empty
        found_before = found
        for entry in entries:
            name, kind = entry[:-2], entry[-1]
            path, rel = prefix + name, rel_prefix + name  # rel: os.path.relpath(path, top)
            if _excluded(rel, name, options.exclude):  # left out by a user who knew of it:
                entries_seen += 1  # not an empty directory, even if it is a folder
                excluded += 1
                if len(seen.excluding) < len(options.exclude):  # which one: until each has been
                    seen.excluding.update(p for p in options.exclude if _excluded(rel, name, (p,)))
                passed.add(name)
                incomplete.update(ancestors)
                continue
            entries_seen += kind not in _FOLDERS
            if kind == _ERROR:
                on_problem(Problem(path, "unreadable", errors[name]))
                continue
            if kind in _FOLDERS:
                linked = through_link or kind == _FOLDER_LINK
                yield (path, rel + os.sep, ancestors, again or entered_again, linked)
                continue
            if options.glob and not _excluded(rel, name, options.glob):
                passed_over += kind in _FILES and not entered_again  # said of a first visit
                passed.add(name)
                incomplete.update(ancestors)
                continue
            matched += 1
            if kind in _FILES:
                found += 1
                yield _Linked(path) if kind == _FILE_LINK else _Beneath(path) if through_link else path
            elif kind == _BROKEN_LINK:
                on_problem(Problem(path, "unreadable", "broken symbolic link"))
            elif kind == _LOOP:
                on_problem(Problem(path, "unreadable", "symbolic link loop; not followed"))
            else:
                on_problem(Problem(path, "not-a-file", "not a regular file; skipped"))
        if not passed:  # nothing to read here another time: no set held (a tree of 50,201
            seen.passed[key] = _NONE_PASSED  # folders held 13 MB of empty ones, a review)
        if entered_again and not again and found == found_before:
            on_problem(_revisited(directory))  # nothing more to read after all

    passed_over = matched = found = excluded = 0  # files --glob left out, entries it did
    # not (but folders), files read, entries --exclude left out
    entries_seen = -1  # entries but folders, once top is listed (a folder read twice is not)
    above = _folders_above(top)
    stack = [visit(top, "", frozenset())]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif isinstance(item, tuple):
            stack.append(visit(*item))
        else:
            yield item
    if entries_seen == 0:  # a night whose crawl made nothing passed as 0 documents, exit 0
        on_problem(Problem(top, "empty-dir", "empty directory: no files in it or below it"))
    if passed_over and not matched:  # `--glob 'corpus/*'`, with the directory's own name
        patterns = " ".join(f"--glob {p!r}" for p in options.glob)
        on_problem(
            Problem(
                top,
                "no-match",
                f"{patterns} matched none of its {passed_over:,} file{'s' if passed_over > 1 else ''}"
                " (patterns match a path below the directory given, without its name)",
            )
        )
    elif excluded and not found and not passed_over:  # `--exclude '*'`: 0 documents, exit 0
        patterns = " ".join(f"--exclude {p!r}" for p in options.exclude)
        on_problem(Problem(top, "no-match", f"{patterns} left out everything in it: no file is read"))


def _unused_exclusions(
    excluding: set[str], folders: Sequence[str], options: ReadOptions
) -> Iterator[Problem]:
    """A warning for each --exclude pattern that left nothing out (`excluding` holds
    those that did) of the run's folders: one that names them (`--exclude crawl/drafts`
    for `crawl/`, or an absolute path) let a trial's drafts be read, without a word."""
    if not folders:
        return
    others = len(folders) - 1
    below = "below it" + (
        f", nor below the {others:,} other folder{'s' if others > 1 else ''} given" if others else ""
    )
    for pattern in options.exclude:
        if pattern not in excluding:
            yield Problem(
                folders[0],
                "no-match",
                f"--exclude {pattern!r} left nothing out {below}"
                " (patterns match a name, or a path below the directory given, without its name)",
            )


#: A directory entry's kind, found while the directory is listed (from the type the file
#: system gives with the name, else a stat), kept as one character after the name.
#: A link that cannot be followed (a broken one, or links that point at each other) is
#: passed over as a file is where --glob leaves it out; an entry whose kind could not be
#: found is said, whatever its name (it may be a folder).
_DIRECTORY, _FOLDER_LINK, _FILE, _FILE_LINK, _BROKEN_LINK, _LOOP, _OTHER, _ERROR = "dDflbLox"
_FOLDERS = (_DIRECTORY, _FOLDER_LINK)
_FILES = (_FILE, _FILE_LINK)


class _Linked(str):
    """The path of a member that is a symbolic link to a file, as _walk yields it: the
    listing knew (an lstat a file cost 1.9 us here)."""

    __slots__ = ()


class _Beneath(str):
    """The path of a file that _walk reached through a symbolic link to a folder: a
    link to the file met later is the same document (a trial's `a_dir -> ../ext` then
    `b_link -> ../ext/e.txt` listed the file as its own duplicate)."""

    __slots__ = ()


def _listing(directory: str) -> tuple[list[str], dict[str, str]]:
    """A directory's entries in name order, each as NAME + "\\0" + its kind, and the
    message of each entry whose kind could not be found (kind _ERROR), by name.

    One short string an entry, about 80 bytes, where the os.DirEntry objects took ~220:
    a flat directory of 1M files is listed in ~80 MB. NUL sorts below every character
    a file name can hold, so the strings sort as their names do: by their bytes, as
    `LC_ALL=C ls` does, also where a name is not UTF-8 (os.fsdecode's surrogates would
    sort it by code point, after U+D7FF's characters and before U+E000's)."""
    entries: list[str] = []
    errors: dict[str, str] = {}
    with os.scandir(directory) as it:
        for entry in it:
            try:
                if entry.is_dir():
                    kind = _FOLDER_LINK if entry.is_symlink() else _DIRECTORY
                elif entry.is_file():
                    kind = _FILE_LINK if entry.is_symlink() else _FILE
                else:  # a link to a pipe or a device is not broken
                    kind = _BROKEN_LINK if entry.is_symlink() and not os.path.exists(entry.path) else _OTHER
            except OSError as e:
                if e.errno == errno.ELOOP:  # links that point at each other
                    kind = _LOOP
                else:
                    kind = _ERROR
                    errors[entry.name] = e.strerror or str(e)
            entries.append(f"{entry.name}\0{kind}")
    entries.sort(key=None if all(map(str.isascii, entries)) else os.fsencode)
    return entries, errors


#: The first read of a file in a directory: most documents fit in it.
_FIRST_READ = 1 << 16


def _read_up_to(f: IO[bytes], size: int, enough: Callable[[bytes], bool] | None = None) -> bytes:
    """At most `size` bytes of f. A read of `size` allocates that much first (up to
    --max-doc-size, 16 MiB, for a file of 600 bytes: ~27 µs a file against ~8 µs), so a
    file is read in a first piece of _FIRST_READ bytes and the rest only if there is more
    (and `enough` says no of the first piece)."""
    data = _read_fully(f, min(size, _FIRST_READ))
    if len(data) == _FIRST_READ < size and not (enough is not None and enough(data)):
        data += _read_fully(f, size - len(data))
    return data


def _read_fully(f: IO[bytes], size: int) -> bytes:
    """`size` bytes of f, or fewer at its end. A raw (unbuffered) file's read may give
    fewer before its end (a file system's short read); a buffered one's reads until then,
    and is not read again (a terminal's stdin would wait for a second Ctrl-D)."""
    data = f.read(size)
    if isinstance(f, io.FileIO):
        while 0 < len(data) < size and (more := f.read(size - len(data))):
            data += more
    return data


def _read_member(
    path: str,
    options: ReadOptions,
    on_problem: OnProblem,
    again: Callable[[os.stat_result], bool] | None = None,
    forget: Callable[[os.stat_result], None] | None = None,
) -> Document | None:
    """A directory's member as a Document, or None, said, where it is not one; `again`:
    whether the file opened (by its stat) was read before under another name; `forget`:
    that it was not, after all, where it is refused here (a hard link named .gz that is
    no gzip data left its other name, notes.txt, "already read", and its text read
    nowhere: a trial)."""
    limit = options.max_doc_size
    opened: os.stat_result | None = None
    try:
        with _open_member(path) as (f, st):
            if options.written and file_identity(st) in options.written:
                on_problem(
                    Problem(path, "output", "a file this run writes (reached through a link); skipped")
                )
                return None
            if again is not None and again(st):
                on_problem(_revisited(path))
                return None
            opened = st
            data, whole = first_bytes(f, limit, binary_stops=True)
    except _NotAFile:
        on_problem(Problem(path, "not-a-file", "not a regular file; skipped"))
        return None
    except READ_ERRORS as e:  # the document is left out: what was read of it too (a review)
        on_problem(Problem(path, "unreadable", f"{read_error(e, path)}; skipped"))
        if forget is not None and opened is not None:
            forget(opened)
        return None
    if looks_binary(data):
        on_problem(Problem(path, "binary", "binary file; skipped"))
        if forget is not None and opened is not None:
            forget(opened)
        return None
    raw = os.fsencode(path)
    text, truncated = limited_text(data, whole, limit, path, on_problem)
    if truncated:  # a compressed file's text: not the size `ls` shows (a trial)
        what = "its text is" if codec_for(path) else "file is"
        said = f"{what} over {size_text(limit)}; fingerprinted its first part"
        on_problem(Problem(path, "too-large", said))
    return Document(printable(path), text, raw)


def first_bytes(f: IO[bytes], limit: int, binary_stops: bool = False) -> tuple[bytes, bool]:
    """(data, whole): the first bytes of a file that hold its first `limit` bytes of
    text (UTF-16 or UTF-32 after a byte-order mark: as many code units), and whether
    they are all of it. The rest is never read: /dev/zero or an endless pipe is a
    document cut short, not a process that grows until it is killed. `binary_stops`:
    a first piece that looks_binary is all that is read (a directory's videos were read
    16 MiB each to be skipped: 503 MB from disk for 20 of them, a trial)."""
    data = _read_up_to(f, limit + _MARK_BYTES, looks_binary if binary_stops else None)
    if (wide := _wide_encoding(data)) is not None and len(data) == limit + _MARK_BYTES:
        data += _read_fully(f, _wide_bytes(wide, limit) - len(data))  # as many UTF-8 bytes
    return data, len(data) < (limit + _MARK_BYTES if wide is None else _wide_bytes(wide, limit))


#: Room for a byte-order mark, read beyond a file's --max-doc-size bytes.
_MARK_BYTES = 4


def _wide_bytes(encoding: str, limit: int) -> int:
    """The bytes of UTF-16 or UTF-32 text that hold at least `limit` bytes of its UTF-8
    (each code unit is one or more), its mark included."""
    return (2 if encoding == "utf-16" else 4) * limit + _MARK_BYTES


def limited_text(data: bytes, whole: bool, limit: int, where: str, on_problem: OnProblem) -> tuple[str, bool]:
    """A file's text (whole_text) from its first bytes `data` (`whole`: all of it), cut
    to its first `limit` bytes of UTF-8, as a line's text is (_truncated); and whether it
    was cut. Counted in the file's bytes, a UTF-16 copy got half as much text and a
    byte-order mark took three bytes of it: the same text over the limit had another
    fingerprint (a review)."""
    if _wide_encoding(data) is None:
        body = data.removeprefix(codecs.BOM_UTF8)
        cut = not whole or len(body) > limit
        return _decoded(body[:limit], "utf-8", not cut, where, on_problem, len(data) - len(body)), cut
    text = whole_text(data, whole, where, on_problem)
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) > limit:
        text = codecs.getincrementaldecoder("utf-8")().decode(encoded[:limit])  # a character cut: left out
    return text, not whole or len(encoded) > limit


class _NotAFile(Exception):
    """A directory's member that is no longer a regular file when it is opened."""


@contextlib.contextmanager
def _open_member(path: str) -> Iterator[tuple[IO[bytes], os.stat_result]]:
    """A directory's member opened to read (decompressed by its name), and its stat.
    Opened without waiting: a file replaced by a named pipe after the directory was
    listed held the run in open() for good (a review), waiting for a writer; it is
    _NotAFile, as a pipe that was there when it was listed is. An empty compressed file
    is cut short (EOFError), as gzip -d says; read, it gave an empty document."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    # Unbuffered: _read_up_to reads in pieces of its own, and a buffered reader cost an
    # isatty, an fstat and its buffer for each file (~2 us of a directory's ~21 us a file).
    with open(fd, "rb", buffering=0) as raw:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _NotAFile(path)
        os.set_blocking(fd, True)
        codec = codec_for(path)
        if codec is None:
            yield raw, st
            return
        if st.st_size == 0:
            raise EOFError(path)
        with codec.open(raw, "rb") as f:
            yield f, st


def looks_binary(data: bytes) -> bool:
    """Whether a whole file that starts with `data` is binary, not text: a NUL in its
    first _SNIFF bytes, or more than one in 20 of them control bytes that text does not
    hold (_BINARY_BYTES: 8% of compressed or random bytes; git's objects, zlib streams without
    a NUL, were read as text of replacement characters, each an error; a review), where
    it is no UTF-16 or UTF-32 text (read as such)."""
    if _wide_encoding(data) is not None:
        return False
    sniffed = data[:_SNIFF]
    if b"\0" in sniffed:
        return True
    controls = len(sniffed) - len(sniffed.translate(None, _BINARY_BYTES))
    return controls >= 4 and controls * 20 > len(sniffed)


#: Control bytes that text does not hold: all but tab, newline, vertical tab, form feed,
#: CR, ESC (terminal colours in a log), backspace (a formatted man page's overstrike:
#: 8-12% of its bytes), SO and SI (ISO-2022 text), SYN (vim's ^V in a macro) and BEL.
#: Random or compressed bytes are 8% of them.
_BINARY_BYTES = bytes(set(range(0x20)) - set(b"\a\b\t\n\v\f\r\x0e\x0f\x16\x1b") | {0x7F})


def whole_text(data: bytes, final: bool, where: str, on_problem: OnProblem) -> str:
    """A whole file's text, as a directory's file is read: UTF-16 or UTF-32 after its
    byte-order mark, else UTF-8 without its mark; bytes that are not text are replaced
    and reported. `final`: data is the whole file (else a cut-off character at its end
    goes quietly)."""
    encoding = _wide_encoding(data) or "utf-8"
    if encoding == "utf-8":
        data = data.removeprefix(codecs.BOM_UTF8)
    return _decoded(data, encoding, final, where, on_problem)


def argument_text(text: str, where: str, on_problem: OnProblem) -> str:
    """A text given on the command line, read as a file's: bytes that are not UTF-8
    (which Python keeps as lone surrogates) read as Windows-1252 and reported. They went quietly,
    where the same bytes in a file were said (a review)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _decoded(text.encode("utf-8", "surrogateescape"), "utf-8", True, where, on_problem)


def file_identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def printable(name: str) -> str:
    """A path as text that every output can hold: a byte of a file name that is not
    UTF-8 (which os.fsdecode keeps as a lone surrogate) becomes a \\xNN escape (`ls -b`
    escapes in octal). Ids, and the places named on stderr, are written so."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        try:
            return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate that no byte became
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
