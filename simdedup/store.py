"""The stored index (--index): the kept fingerprints of earlier runs, their ids, and the
run that kept each, in one file that nightly runs load, extend and save.

A file is only ever replaced whole (written beside it, fsynced, renamed) and only under
its lock, and only ever loaded whole (checksum verified before anything is returned),
so a run killed at any moment leaves the previous file as it was. Never prints, never
exits: every failure is an IndexFileError that carries its exit status.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import importlib.util
import json
import math
import os
import re
import stat
import struct
import sys
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import xxhash

from .dedup import Deduplicator, Ids
from .features import SCRIPT_FOLD
from .fingerprint import FeatureHasher
from .index import Layout
from .read import INDEX_MAGIC, file_identity
from .settings import FINGERPRINT_SPEC_VERSION, HEAD_SPEC, Settings
from .sketch import ALIKE_SKETCH_SPECS, EARLIER_SKETCH_SPECS, SKETCH, SKETCH_SPEC
from .status import (
    IndexCorruptError,
    IndexFileError,
    IndexLockedError,
    IndexSettingsError,
    SettingsError,
)
from .verify import VerifyingDeduplicator

# ---------------------------------------------------------------- the file format
#
#   offset      size  what
#   0           8     MAGIC
#   8           4     format version, uint32 little-endian
#   12          4     header length H, uint32 little-endian (a multiple of 8)
#   16          H     header: UTF-8 JSON (settings, runs, times, array shapes), space-padded
#   16 + H      ...   the arrays of ARRAYS, in that order, raw little-endian, each
#                     zero-padded to a multiple of 8 bytes (so np.memmap could map them)
#   end - 8     8     xxh3-64 of every byte before it, uint64 little-endian
#
# The header gives every array's shape, so the file's exact size is known before any
# array is read: a truncated file is caught by its size, an altered one by the checksum.

#: The first 8 bytes. The high byte and the CR LF catch a file mangled as text (as PNG's do).
MAGIC = INDEX_MAGIC + b"\x1a\n"
#: Bumped when a reader of the previous version could not read the file correctly.
#: 2 added the verification sketches, 3 the head fingerprints, 4 the unindexed rows (a
#: crowd's: verify.py); files of versions 1 to 3 are still read (rows without them), and
#: a file without unindexed rows is written as version 3, which earlier simdedups read.
FORMAT_VERSION = 4
_PREAMBLE = struct.Struct("<8sII")
_TRAILER = struct.Struct("<Q")
_ALIGN = 8
#: name -> dtype of each array, in file order. Row i of the index is fingerprints[i],
#: the id whose UTF-8 bytes end at id_ends[i] in id_bytes, kept by run run_rows[i];
#: with --verify, its sketch is sketches[i] when sketched[i] is 1 (both empty when no
#: row has one), and its head fingerprint heads[i] when headed[i] is 1 (shaped as
#: fingerprints; both empty when no row has one); it is stored unindexed (in no table of
#: the BlockIndex: found only as an exact copy) when unindexed[i] is 1 (empty when no row
#: is). Version 1 files hold the first four, version 2 the first six, version 3 eight.
ARRAYS = (
    ("fingerprints", np.dtype("<u8")),
    ("id_ends", np.dtype("<u8")),
    ("run_rows", np.dtype("<u4")),
    ("id_bytes", np.dtype("u1")),
    ("sketches", np.dtype("u1")),
    ("sketched", np.dtype("u1")),
    ("heads", np.dtype("<u8")),
    ("headed", np.dtype("u1")),
    ("unindexed", np.dtype("u1")),
)
_ARRAYS_IN_VERSION = {1: 4, 2: 6, 3: 8, 4: 9}
#: Reads and writes go in pieces: one read(2) or write(2) moves at most ~2 GiB on Linux.
_CHUNK = 1 << 26


def _now(at: dt.datetime | None = None, precise: bool = False) -> str:
    at = at or dt.datetime.now(dt.timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if precise else "%Y-%m-%dT%H:%M:%SZ")


def _padding(n: int) -> bytes:
    return b"\0" * (-n % _ALIGN)


# ---------------------------------------------------------------- what fingerprints depend on


def _file_xxh3(path: Path) -> str | None:
    try:
        return xxhash.xxh3_64_hexdigest(path.read_bytes())
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def jieba_record() -> dict[str, str | None]:
    """What cuts and weighs Chinese words: rjieba's version (its dictionary and HMM are
    built into it) and the xxh3-64 of jieba's IDF table. A new segmenter can cut the
    same Chinese text into other words, and so give other fingerprints."""
    spec = importlib.util.find_spec("jieba")
    root = Path(spec.origin).parent if spec is not None and spec.origin is not None else None
    return {
        "rjieba_version": _package_version("rjieba"),
        "jieba_idf_xxh3": _file_xxh3(root / "analyse" / "idf.txt") if root else None,
    }


def _package_version(name: str) -> str | None:
    import importlib.metadata  # here: 12 ms of every command's start-up, for an index's header

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def fingerprint_record(settings: Settings) -> dict[str, Any]:
    """Everything a fingerprint depends on, as stored in an index file: every field of
    Settings (found with dataclasses.fields, so a field added later is covered without
    touching this), the feature hash, the Chinese segmenter's version and IDF table checksum, OpenCC's
    version, and the fingerprint spec version. Two runs whose records differ make
    incomparable fingerprints."""
    return {
        "settings": {f.name: _jsonable(getattr(settings, f.name)) for f in dataclasses.fields(settings)},
        # The hash fingerprint.FeatureHasher uses for `bits`; its seed is settings.seed.
        "hash": f"xxh3_{settings.bits}",
        "spec_version": FINGERPRINT_SPEC_VERSION,
        **jieba_record(),
        # Settings.fold converts traditional Chinese with OpenCC's tables, which ship with it.
        "opencc_version": _package_version("opencc"),
        "opencc_config": SCRIPT_FOLD,
    }


_RECORD_NAMES = {
    "hash": "the feature hash",
    "spec_version": "the fingerprint spec version",
    "rjieba_version": "the rjieba version (Chinese words)",
    # Spec versions 1 and 2 recorded jieba itself, which cut the Chinese words then.
    "jieba_version": "the jieba version",
    "jieba_dict_xxh3": "jieba's dictionary (checksum)",
    "jieba_idf_xxh3": "jieba's IDF table (checksum)",
    "opencc_version": "the OpenCC version",
    "opencc_config": "the OpenCC configuration that folds scripts",
}


#: Settings a run may change against a stored index: they shape no fingerprint, and the
#: in-memory index is built from the stored fingerprints at every load.
FREE_SETTINGS = frozenset({"distance"})


def record_differences(stored: dict[str, Any], current: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, stored value, current value) for each way two fingerprint records differ.

    A Settings field missing from the stored record (the file is older than the field)
    counts as that field's default, which by the spec-version rule gives the old
    fingerprints. FREE_SETTINGS never differ, nor does `ngram` unless a side makes
    character n-grams, nor tokenizer "jieba" from "auto" (the same tokens, Settings)."""
    defaults = {
        f.name: _jsonable(f.default)
        for f in dataclasses.fields(Settings)
        if f.default is not dataclasses.MISSING
    }
    out = []
    stored_settings, current_settings = stored.get("settings", {}), current.get("settings", {})
    # --ngram makes the character n-grams of --tokenizer chars, and nothing otherwise.
    chars = "chars" in (
        stored_settings.get("tokenizer", defaults.get("tokenizer")),
        current_settings.get("tokenizer"),
    )
    for name in [*current_settings, *(n for n in stored_settings if n not in current_settings)]:
        if name in FREE_SETTINGS or (name == "ngram" and not chars):
            continue
        old = stored_settings.get(name, defaults.get(name))
        new = current_settings.get(name)
        if name == "tokenizer" and old == "jieba":  # files before Settings took it as "auto"
            old = "auto"
        if old != new:
            out.append((name, old, new))
    for key in [k for k in current if k != "settings"] + [k for k in stored if k not in current]:
        if stored.get(key) != current.get(key):
            out.append((_RECORD_NAMES.get(key, key), stored.get(key), current.get(key)))
    return out


def check_feature_hash(dd: Deduplicator) -> None:
    """Refuse a Deduplicator whose feature hash (hashfunc=) is not the one an index file
    records (fingerprint_record); a FeatureHasher of other bits or seed than its settings'
    it refused already (fingerprint.check_hasher)."""
    if type(dd.hashfunc) is not FeatureHasher:
        raise IndexSettingsError(
            f"an index holds fingerprints of xxh3_{dd.settings.bits} feature hashes (seed "
            f"{dd.settings.seed}); this Deduplicator's hashfunc is {dd.hashfunc!r}"
        )


def check_settings(path: str | os.PathLike[str], stored: dict[str, Any], settings: Settings) -> None:
    """Refuse to compare this run's fingerprints with a file's made differently."""
    current = fingerprint_record(settings)
    if stored.get("spec_version") != current["spec_version"]:
        raise IndexSettingsError(
            f"{path} holds fingerprints of spec version {stored.get('spec_version')!r}; this "
            f"simdedup makes spec version {current['spec_version']} (the README's fingerprint "
            "section says what changed), and no setting makes the old ones: build a new index "
            "from the documents"
        )
    diffs = record_differences(stored, current)
    if diffs:
        what = "; ".join(f"{name} is {old!r} there, {new!r} in this run" for name, old, new in diffs)
        seed = (
            " (the seed only through the library's Settings(seed=...): the command line uses 0)"
            if any(name == "seed" for name, _, _ in diffs)
            else ""
        )
        raise IndexSettingsError(
            f"{path} was made with other fingerprint settings: {what}. Fingerprints made "
            "differently cannot be compared: run with the index's settings "
            f"(simdedup index info shows them){seed} or use a new index"
        )


# ---------------------------------------------------------------- the stored index


@dataclass
class StoredIndex:
    """What an index file holds: row i is fingerprints[i] (uint64, shape (n,) for 64
    bits, (n, 2) high word first for 128, as BlockIndex.fingerprint_array gives them),
    the id whose UTF-8 bytes end at id_ends[i] in id_bytes, kept by runs[run_rows[i]].

    `fingerprint` is the fingerprint_record the rows were made with; each run is a dict
    with at least "name", "started", "finished" and "added" (rows it kept), and "id"
    (random) since runs have ids."""

    fingerprint: dict[str, Any]
    fingerprints: np.ndarray
    id_bytes: np.ndarray
    id_ends: np.ndarray
    run_rows: np.ndarray
    runs: list[dict[str, Any]]
    created: str
    updated: str
    #: (n, bytes) uint8 verification sketches and (n,) uint8 1 where a row has one;
    #: None when no row has one. `sketch` names their kind (sketch.SKETCH.spec).
    sketches: np.ndarray | None = None
    sketched: np.ndarray | None = None
    sketch: str | None = None
    #: (n,) or (n, 2) uint64 head fingerprints (verify.VerifyingDeduplicator) and (n,)
    #: uint8 1 where a row has one; None when no row has one.
    heads: np.ndarray | None = None
    headed: np.ndarray | None = None
    #: (n,) uint8 1 where a row is stored unindexed (BlockIndex.add_many); None when none is.
    unindexed: np.ndarray | None = None
    #: Rows whose stored heads were of another kind (settings.HEAD_SPEC) and not read.
    dropped_heads: int = 0
    #: Rows whose stored sketches were of another kind (dropped_sketch) and not read.
    dropped_sketches: int = 0
    dropped_sketch: str | None = None
    #: Rows whose stored sketches were of a kind read as this one (sketch.ALIKE_SKETCH_SPECS).
    alike_sketches: int = 0
    alike_sketch: str | None = None
    #: The version of Python's Unicode database (which NFKC, case folding and \w follow)
    #: of the run that wrote the file last; None before files held it. Outside the
    #: fingerprint record: another one is said, not refused (a Python upgrade changes
    #: only texts with the characters it added, where refusing would make every stored
    #: index useless), and earlier simdedups, which refuse any record they do not know,
    #: still read the file (a review).
    unicode: str | None = None

    def __len__(self) -> int:
        return len(self.fingerprints)

    @property
    def bits(self) -> int:
        return 64 * (1 if self.fingerprints.ndim == 1 else self.fingerprints.shape[1])

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.fingerprint.get("settings", {}))

    def ids(self) -> Ids:
        return Ids.from_arrays(self.id_bytes, self.id_ends)

    def id(self, row: int) -> str:
        start = int(self.id_ends[row - 1]) if row else 0
        return bytes(self.id_bytes[start : int(self.id_ends[row])]).decode("utf-8", "surrogateescape")

    def run_name(self, row: int) -> str:
        return str(self.runs[int(self.run_rows[row])]["name"])

    def without_runs(self, runs: Iterable[dict[str, Any]]) -> StoredIndex:
        """This index without the rows (and runs) of the runs also in `runs`: those with
        the same id, name, start, finish and count (run_key), as a merge made before
        copied them. A retried `index merge` then adds nothing twice."""
        known = {run_key(run) for run in runs}
        keep = np.array([run_key(run) not in known for run in self.runs], bool)
        if keep.all():
            return self
        rows = keep[self.run_rows]
        starts = np.concatenate([np.zeros(1, np.uint64), self.id_ends[:-1]]).astype(np.int64)
        lengths = self.id_ends.astype(np.int64) - starts
        renumbered = np.cumsum(keep) - 1  # a kept run's place among the kept

        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[rows]

        return dataclasses.replace(
            self,
            fingerprints=self.fingerprints[rows],
            id_bytes=self.id_bytes[np.repeat(rows, lengths)],
            id_ends=np.cumsum(lengths[rows]).astype(self.id_ends.dtype),
            run_rows=renumbered[self.run_rows[rows]].astype(self.run_rows.dtype),
            runs=[run for run, k in zip(self.runs, keep.tolist()) if k],
            sketches=pick(self.sketches),
            sketched=pick(self.sketched),
            heads=pick(self.heads),
            headed=pick(self.headed),
            unindexed=pick(self.unindexed),
        )

    def load_into(self, dd: Deduplicator) -> None:
        """Give an empty Deduplicator these rows; a VerifyingDeduplicator gets their
        sketches too. Refused (IndexSettingsError) when its settings or feature hash made
        other fingerprints. Into one that holds rows, loading again added every row a
        second time (a review): merge stored indexes first (merge_indexes)."""
        if not isinstance(dd, Deduplicator):  # it failed on a missing attribute (a trial)
            raise TypeError(f"load_into fills a Deduplicator, not {type(dd).__name__}")
        if len(dd.ids):
            raise ValueError(
                f"load_into needs an empty Deduplicator; this one holds {len(dd.ids):,} rows "
                "(to load several stored indexes, merge them first: merge_indexes)"
            )
        check_settings("the stored index", self.fingerprint, dd.settings)
        check_feature_hash(dd)
        indexed = None if self.unindexed is None else self.unindexed == 0
        if isinstance(dd, VerifyingDeduplicator) and self.sketches is not None:
            headed = None if self.headed is None else self.headed.astype(bool)
            dd.extend(
                self.fingerprints,
                self.ids(),
                self.sketches,
                self.sketched.astype(bool),  # type: ignore[union-attr]
                self.heads,
                headed,
                indexed,
            )
        else:
            dd.extend(self.fingerprints, self.ids(), indexed)

    def _check(self) -> None:
        """Raise ValueError unless the arrays fit together (the checksum cannot tell a
        file written wrong from one written right)."""
        n = len(self.fingerprints)
        if self.fingerprints.dtype != np.uint64 or self.fingerprints.ndim not in (1, 2):
            raise ValueError("fingerprints are not uint64 rows")
        if len(self.id_ends) != n or len(self.run_rows) != n:
            raise ValueError(
                f"{n} fingerprints but {len(self.id_ends)} ids and {len(self.run_rows)} run rows"
            )
        if n and (
            int(self.id_ends[-1]) != len(self.id_bytes) or np.any(self.id_ends[1:] < self.id_ends[:-1])
        ):
            raise ValueError("id offsets do not match the id bytes")
        if not n and len(self.id_bytes):
            raise ValueError("id bytes without ids")
        if n and int(self.run_rows.max()) >= len(self.runs):
            raise ValueError("a row names a run that is not in the file")
        if (self.sketches is None) != (self.sketched is None):
            raise ValueError("sketches without their flags, or flags without sketches")
        if self.sketches is not None and self.sketched is not None:
            if self.sketches.ndim != 2 or len(self.sketches) != n or self.sketched.shape != (n,):
                raise ValueError(f"{n} fingerprints but sketches of shape {self.sketches.shape}")
            if self.sketch is None:
                raise ValueError("sketches of no named kind")
            if self.sketch == SKETCH_SPEC and self.sketches.shape[1] != SKETCH.nbytes:
                raise ValueError(
                    f"sketches of {self.sketches.shape[1]} bytes, where {SKETCH_SPEC}'s are {SKETCH.nbytes}"
                )
        if (self.heads is None) != (self.headed is None):
            raise ValueError("heads without their flags, or flags without heads")
        if self.heads is not None and self.headed is not None:
            if self.sketches is None:
                raise ValueError("heads without sketches")
            if self.heads.shape != self.fingerprints.shape or self.headed.shape != (n,):
                raise ValueError(f"{n} fingerprints but heads of shape {self.heads.shape}")
        if self.unindexed is not None and self.unindexed.shape != (n,):
            raise ValueError(f"{n} fingerprints but {self.unindexed.shape} unindexed flags")
        self._check_records()

    def _check_records(self) -> None:
        """Raise ValueError unless the header's records are what the commands read: the
        settings make a Settings of the fingerprints' width, and each run is a record
        with a name (and a count of rows added, where it says)."""
        if not isinstance(self.fingerprint, dict) or not isinstance(
            self.fingerprint.get("settings", {}), dict
        ):
            raise ValueError("the fingerprint record is not an object")
        known = {f.name for f in dataclasses.fields(Settings)}
        try:
            settings = Settings(**{k: v for k, v in self.settings.items() if k in known})
        except (SettingsError, TypeError) as e:
            raise ValueError(f"its settings: {e}") from e
        if settings.bits != self.bits:
            raise ValueError(f"its settings say {settings.bits} bits, its fingerprints are {self.bits}")
        for run in self.runs:
            if not isinstance(run, dict) or not isinstance(run.get("name"), str):
                raise ValueError(f"a run that is not a record with a name: {str(run)[:60]}")
            added = run.get("added", 0)
            if isinstance(added, bool) or not isinstance(added, int) or added < 0:
                raise ValueError(f"run {run['name']!r} added {str(added)[:30]} rows")


def empty_index(settings: Settings) -> StoredIndex:
    words = settings.bits // 64
    shape: tuple[int, ...] = (0,) if words == 1 else (0, words)
    now = _now()
    return StoredIndex(
        fingerprint_record(settings),
        np.empty(shape, np.uint64),
        np.empty(0, np.uint8),
        np.empty(0, np.uint64),
        np.empty(0, np.uint32),
        [],
        now,
        now,
        unicode=unicodedata.unidata_version,
    )


def _arrays(index: StoredIndex) -> list[np.ndarray]:
    empty = {
        "sketches": np.zeros((0, 0), np.uint8),
        "sketched": np.zeros(0, np.uint8),
        "heads": np.zeros(0, np.uint64),
        "headed": np.zeros(0, np.uint8),
        "unindexed": np.zeros(0, np.uint8),
    }
    out = []
    for name, dtype in ARRAYS:
        a = getattr(index, name)
        a = empty[name] if a is None else a
        out.append(np.ascontiguousarray(a, dtype=dtype).reshape(a.shape))
    return out


# ---------------------------------------------------------------- writing


def _bytes_of(data: np.ndarray | bytes) -> memoryview:
    """A flat byte view (no copy) of a contiguous array or a bytes object."""
    if isinstance(data, np.ndarray):
        return memoryview(data.reshape(-1).view(np.uint8))
    return memoryview(data)


def _write_all(f: BinaryIO, data: np.ndarray | bytes, digest: Any) -> None:
    view = _bytes_of(data)
    digest.update(view)
    for start in range(0, len(view), _CHUNK):
        piece = view[start : start + _CHUNK]
        while piece:
            written = f.write(piece)
            piece = piece[written:]


def keep_owner_and_mode(written: str | os.PathLike[str], target: str | os.PathLike[str], mode: int) -> None:
    """Give the file `written`, about to be renamed over `target`, `mode` and, where it
    exists, the target's owner and group, as far as this process may (root may give a
    file away; another user only to a group of theirs): an index or a summary run by
    root's cron for a user stays that user's. A change of owner refused (or a file
    system without owners) is no error."""
    give_owner(written, target)
    os.chmod(written, mode)


def give_owner(written: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Give `written` the owner and group of `target`, where it exists, as far as this
    process may (see keep_owner_and_mode)."""
    with suppress(FileNotFoundError):
        st = os.stat(target)
        try:
            os.chown(written, st.st_uid, st.st_gid)
        except OSError:
            with suppress(OSError):
                os.chown(written, -1, st.st_gid)


def replacing_mode(target: str | os.PathLike[str]) -> int:
    """The mode of a file written to replace `target`: target's, or a new file's (as
    open() makes one, under the umask)."""
    with suppress(FileNotFoundError):
        return os.stat(target).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_index(path: str | os.PathLike[str], index: StoredIndex) -> None:
    """Replace the file at `path` with `index`, atomically: the bytes go to a temporary
    file in the same directory, which is fsynced, renamed over `path`, and the directory
    fsynced. A crash at any point leaves either the old file or the new one, whole.

    Call it holding index_lock(path): two writers would each rename their own file,
    and the later one would silently drop the rows only the earlier one added. A
    symbolic link is written through: its target is replaced, not the link."""
    if not isinstance(index, StoredIndex):  # it failed on a missing attribute (a trial)
        raise TypeError(f"write_index writes a StoredIndex, not {type(index).__name__}")
    index._check()
    path = Path(os.path.realpath(path))
    directory = path.parent
    # The oldest version that holds it all (earlier simdedups read it).
    version = FORMAT_VERSION if index.unindexed is not None else min(FORMAT_VERSION, 3)
    arrays = _arrays(index)[: _ARRAYS_IN_VERSION[version]]
    header = {
        "format": "simdedup index",
        "written_by": f"simdedup {_simdedup_version()}",
        "created": index.created,
        "updated": index.updated,
        "count": len(index),
        "fingerprint": index.fingerprint,
        "unicode": index.unicode,
        "sketch": index.sketch if index.sketches is not None else None,
        # What a row's head fingerprint covers (settings.HEAD_SPEC), when rows have one.
        "heads": HEAD_SPEC if index.heads is not None else None,
        "runs": index.runs,
        "arrays": [
            {"name": name, "dtype": dtype.str, "shape": list(a.shape)}
            for (name, dtype), a in zip(ARRAYS, arrays)
        ],
    }
    header_bytes = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % _ALIGN)
    mode = replacing_mode(path)
    try:
        fd, tmp = temporary_beside(path)
    except OSError as e:
        raise IndexFileError(f"cannot save index {path}: {e.strerror or e}") from e
    try:
        with open(fd, "wb", buffering=0) as f:
            digest = xxhash.xxh3_64()
            _write_all(f, _PREAMBLE.pack(MAGIC, version, len(header_bytes)), digest)
            _write_all(f, header_bytes, digest)
            for a in arrays:
                _write_all(f, a, digest)
                _write_all(f, _padding(a.nbytes), digest)
            f.write(_TRAILER.pack(digest.intdigest()))
            os.fsync(f.fileno())
        keep_owner_and_mode(tmp, path, mode)
        os.replace(tmp, path)
    except BaseException as e:
        with suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise IndexFileError(
                f"cannot save index {path}: {e.strerror or e}; the previous index is unchanged"
            ) from e
        raise
    # Saved: the new file has the name. What comes now is only the directory's fsync, and
    # neither an interrupt nor an error then means the previous index is still there.
    try:
        _fsync_directory(directory)
    except KeyboardInterrupt as e:
        e.index_saved = True  # type: ignore[attr-defined]  (the CLI says which it was)
        raise
    except OSError as e:
        raise IndexFileError(
            f"saved index {path}, but could not sync its directory: {e.strerror or e}"
        ) from e


def _simdedup_version() -> str:
    from . import __version__  # here: the package imports this module's neighbours first

    return __version__


# ---------------------------------------------------------------- reading


def _read_exact(f: BinaryIO, size: int) -> bytes:
    data = f.read(size)
    return data if data is not None else b""


def _readinto_all(f: BinaryIO, array: np.ndarray, digest: Any) -> bool:
    view = _bytes_of(array)
    pos = 0
    while pos < len(view):
        got = f.readinto(view[pos : pos + _CHUNK])  # type: ignore[attr-defined]
        if not got:
            return False
        pos += got
    digest.update(view)
    return True


def _array_specs(header: Any, version: int) -> list[tuple[str, np.dtype, tuple[int, ...]]]:
    """The (name, dtype, shape) of each array, or ValueError when the header does not
    describe the arrays that format version holds."""
    specs = header["arrays"]
    if not isinstance(specs, list) or len(specs) != _ARRAYS_IN_VERSION[version]:
        raise ValueError("wrong array list")
    out = []
    for spec, (name, dtype) in zip(specs, ARRAYS):
        shape = tuple(spec["shape"])
        if spec["name"] != name or np.dtype(spec["dtype"]) != dtype:
            raise ValueError(f"unexpected array {spec['name']!r}")
        if not all(isinstance(s, int) and 0 <= s < 1 << 48 for s in shape) or len(shape) not in (1, 2):
            raise ValueError(f"bad shape for {name}")
        out.append((name, dtype, shape))
    return out


def read_header(path: str | os.PathLike[str]) -> tuple[dict[str, Any], int]:
    """The header of an index file and the file's size, checked as far as they can be
    without reading the arrays (magic, version, size); read_index checks the rest."""
    with _open_for_reading(path) as f:
        header, size, _ = _read_header(path, f)
        return header, size


@contextmanager
def _open_for_reading(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """The index file at `path`, opened; never waiting on a named pipe's writer (opened
    without blocking, then refused, as a device is: an index is a regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as e:
        raise IndexFileError(f"{path}: no such index file") from e
    except OSError as e:
        raise IndexFileError(f"{path}: cannot read index: {e.strerror or e}") from e
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "is a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise IndexFileError(f"{path}: {kind}, not an index file")
    os.set_blocking(fd, True)
    with open(fd, "rb") as f:
        yield f


def _corrupt(path: str | os.PathLike[str], why: str) -> IndexCorruptError:
    return IndexCorruptError(
        f"{path}: index file is corrupt ({why}); it was not loaded. Restore it from a "
        "backup, or move it away to start a new index"
    )


def _read_header(path: str | os.PathLike[str], f: BinaryIO) -> tuple[dict[str, Any], int, bytes]:
    """(header, file size, the bytes read: preamble and header); the header's
    "format_version" is the file's."""
    size = os.fstat(f.fileno()).st_size
    preamble = _read_exact(f, _PREAMBLE.size)
    index = str(path).removesuffix(".lock")
    if not preamble and index != str(path) and os.path.isfile(index):
        # the advice below would have had its lock removed, and two runs lock two files (a trial)
        raise IndexFileError(f"{path} is the lock file of the index {index}, not an index")
    if not preamble:  # `: > seen.sdx`, `touch`, `mktemp`, or a file cut to nothing (a trial)
        raise IndexFileError(
            f"{path}: an empty file, not a simdedup index; it was not loaded. Remove it to start a"
            " new index (a missing file is a new one), or restore it from a backup"
        )
    if not preamble.startswith(MAGIC[: len(preamble)]):
        raise IndexFileError(f"{path}: not a simdedup index file")
    if len(preamble) < _PREAMBLE.size:
        raise _corrupt(path, f"truncated: {size:,} bytes")
    _, version, header_len = _PREAMBLE.unpack(preamble)
    if version > FORMAT_VERSION:
        if not _checksum_holds(f, size):
            # One bit flipped in the version asked for an upgrade, not a backup (a trial).
            raise _corrupt(path, f"checksum mismatch; its header says format version {version}")
        raise IndexFileError(
            f"{path}: index format version {version} is newer than this simdedup reads "
            f"(up to {FORMAT_VERSION}); upgrade simdedup to use it"
        )
    if version < 1:
        raise _corrupt(path, f"format version {version}")
    if _PREAMBLE.size + header_len + _TRAILER.size > size:
        raise _corrupt(path, f"truncated: {size:,} bytes")
    header_bytes = _read_exact(f, header_len)
    try:
        header = json.loads(header_bytes.decode("utf-8"))
        header["format_version"] = version
        specs = _array_specs(header, version)
    # SyntaxError: numpy's reading of a dtype such as ",u8" (one bit flipped in "<u8")
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, SyntaxError) as e:
        raise _corrupt(path, f"unreadable header: {e}") from e
    expected = _PREAMBLE.size + header_len + _TRAILER.size
    for _, dtype, shape in specs:
        nbytes = math.prod(shape) * dtype.itemsize  # Python's ints: int64's wrapped to 0 (a review)
        expected += nbytes + len(_padding(nbytes))
    if size != expected:
        why = "truncated" if size < expected else "extra bytes at the end"
        raise _corrupt(path, f"{why}: {size:,} bytes, the header says {expected:,}")
    return header, size, preamble + header_bytes


def _checksum_holds(f: BinaryIO, size: int) -> bool:
    """Whether the trailer's checksum is that of every byte before it, as every format
    version has written it, whatever the layout between: read from the start."""
    if size < _PREAMBLE.size + _TRAILER.size:
        return False
    f.seek(0)
    digest, left = xxhash.xxh3_64(), size - _TRAILER.size
    while left:
        piece = f.read(min(left, 1 << 20))
        if not piece:
            return False
        digest.update(piece)
        left -= len(piece)
    return _TRAILER.unpack(_read_exact(f, _TRAILER.size))[0] == digest.intdigest()


def read_index(path: str | os.PathLike[str]) -> StoredIndex:
    """Load a whole index file, or raise: IndexFileError when it is missing, not an index,
    or of a newer format; IndexCorruptError when it is truncated or altered. Nothing is
    returned before the checksum of every byte has been verified."""
    with _open_for_reading(path) as f:
        header, _, head = _read_header(path, f)
        digest = xxhash.xxh3_64(head)
        arrays = {}
        for name, dtype, shape in _array_specs(header, header["format_version"]):
            array = np.empty(shape, dtype)
            pad = _padding(array.nbytes)
            if not _readinto_all(f, array, digest) or _read_exact(f, len(pad)) != pad:
                raise _corrupt(path, "truncated while reading")
            digest.update(pad)
            arrays[name] = array
        trailer = _read_exact(f, _TRAILER.size)
        if len(trailer) != _TRAILER.size or _TRAILER.unpack(trailer)[0] != digest.intdigest():
            raise _corrupt(path, "checksum mismatch")
    try:
        index = StoredIndex(
            fingerprint=header["fingerprint"],
            fingerprints=arrays["fingerprints"].astype(np.uint64, copy=False),
            id_bytes=arrays["id_bytes"],
            id_ends=arrays["id_ends"].astype(np.uint64, copy=False),
            run_rows=arrays["run_rows"].astype(np.uint32, copy=False),
            runs=list(header["runs"]),
            created=str(header["created"]),
            updated=str(header["updated"]),
            unicode=header.get("unicode"),
        )
        # Sketches of another kind (shingles defined otherwise, as before units kept the
        # words of mixed text) would not compare with this version's: their rows are read
        # as rows without a sketch, matched on the fingerprint alone. Earlier ones (before
        # exact sketches) are read as they are: this version compares them as before.
        sketch = header.get("sketch")
        if sketch == SKETCH_SPEC or sketch in ALIKE_SKETCH_SPECS or sketch in EARLIER_SKETCH_SPECS:
            index.sketches, index.sketched = arrays["sketches"], arrays["sketched"]
            index.sketch = SKETCH_SPEC
            if sketch in ALIKE_SKETCH_SPECS:
                index.alike_sketches = int(np.count_nonzero(arrays["sketched"]))
                index.alike_sketch = str(header["sketch"])
        elif header.get("sketch") is not None:
            index.dropped_sketches = int(np.count_nonzero(arrays["sketched"]))
            index.dropped_sketch = str(header["sketch"])
        # Heads of another kind (the first 32 tokens, before the anchored window) would
        # not match this version's: their rows are read as rows without a head.
        # (A head candidate is a duplicate only once its sketch verifies: with the
        # sketches, the heads go too.)
        if header.get("heads") == HEAD_SPEC and not index.dropped_sketches:
            index.heads, index.headed = arrays["heads"].astype(np.uint64, copy=False), arrays["headed"]
        elif header.get("heads") and not index.dropped_sketches:
            index.dropped_heads = int(np.count_nonzero(arrays["headed"]))
        if "unindexed" in arrays and len(arrays["unindexed"]):
            index.unindexed = arrays["unindexed"]
        index._check()
    except (ValueError, KeyError, TypeError) as e:
        raise _corrupt(path, str(e)) from e
    return index


# ---------------------------------------------------------------- locking


def lock_path(path: str | os.PathLike[str]) -> str:
    return f"{os.fspath(path)}.lock"


def _seconds(seconds: float) -> str:
    """A --wait as said: "3,600 s", "0.5 s" (1e9 was said as "1e+09 s", a trial)."""
    return f"{seconds:,.0f} s" if float(seconds).is_integer() else f"{seconds:,g} s"


def foreign_file(path: str) -> bool:
    """Whether `path` is a regular file that begins as no index does. An empty or
    unreadable file, and what is not a regular file (a named pipe, which opening would
    wait on), are left to the load, which says what each is."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            start = f.read(len(MAGIC))
    except OSError:
        return False
    return bool(start) and not MAGIC.startswith(start)


@contextmanager
def index_lock(
    path: str | os.PathLike[str],
    wait: float = 0.0,
    on_wait: Callable[[str], None] | None = None,
    *,
    replaces: bool = True,
) -> Iterator[Callable[[], bool]]:
    """Hold the lock of the index at `path` (the file PATH.lock, locked with flock(2), so
    the kernel releases it when its holder dies, even by kill -9). Waits up to `wait`
    seconds for another holder, telling on_wait so first (a cron run's log said nothing
    of a wait that took most of its time); raises IndexLockedError when it does not let go, and
    IndexFileError when the directory does not exist or cannot be written (checked by
    creating a file there, so it is caught before any work). A symbolic link is
    locked as its target is (next to the target), so a run through the link and one
    on the target exclude each other. `replaces`: the holder will replace the file,
    which must then be writable (a read-only one is refused, not replaced). Gives a
    function that says whether PATH.lock is still the file locked: removed while held
    (a "stale lock" cleaned up by hand), it no longer keeps another run out, and of two
    runs the one that saved last dropped the other's rows (a trial; still_locked)."""
    from filelock import FileLock, Timeout

    shown, path = path, os.path.realpath(path)
    directory = Path(shown).parent  # as named, in messages
    if not Path(path).parent.is_dir():
        if os.path.islink(shown):  # a dangling link: its target's folder, not the link's, is missing
            target = os.readlink(shown)
            missing = Path(target).parent
            raise IndexFileError(
                f"cannot use index {shown}: a link to {target}, whose directory {missing} does not exist"
            )
        raise IndexFileError(f"cannot use index {shown}: no such directory {directory}")
    if os.path.exists(path) and not os.path.isfile(path):  # /dev/null, a directory: no lock beside it
        raise IndexFileError(f"cannot use index {shown}: not a regular file")
    if foreign_file(path):  # nor beside a user's file given by mistake (a trial found notes.txt.lock)
        raise IndexFileError(f"{shown}: not a simdedup index file")
    try:  # filelock would take a lock file it cannot make for one that another run holds
        made = not os.path.lexists(lock_path(path))
        os.close(os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o666))  # under the umask
        if made:  # root's cron run for a user: the index stays the user's, so must its lock,
            give_owner(lock_path(path), path)  # which the user's own runs open to write
        # and those who may write the index may open its lock to write: made 0644, a
        # group's shared index (0664) refused its other members (a trial). Widened where
        # it is narrower (one made so before), by its owner.
        with suppress(OSError):
            mode = os.stat(lock_path(path)).st_mode & 0o666
            if (wider := mode | os.stat(path).st_mode & 0o666) != mode:
                os.chmod(lock_path(path), wider)
    except OSError as e:
        # a lock path there already (a directory, a dangling link) is what fails, else the directory
        where = lock_path(shown) if os.path.lexists(lock_path(path)) else directory
        raise IndexFileError(f"cannot write index {shown}: {where}: {e.strerror or e}") from e
    lock = FileLock(lock_path(path), timeout=wait)
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if wait <= 0:
                raise
            if on_wait is not None:
                on_wait(
                    f"{shown} is in use by another simdedup run: waiting for it, "
                    + ("for as long as it takes" if wait >= 1e9 else f"up to {_seconds(wait)}")
                )
            lock.acquire()
    except Timeout as e:
        waited, how = (
            (f" after waiting {_seconds(wait)}", "a longer --wait") if wait > 0 else ("", "--wait SECONDS")
        )
        raise IndexLockedError(
            f"{shown} is in use by another simdedup run (lock {lock_path(path)} held){waited}; "
            f"try again later, or wait for it with {how}"
        ) from e
    except OSError as e:
        raise IndexFileError(f"cannot write index {shown}: {directory}: {e.strerror or e}") from e
    try:
        locked = _locked_file(lock)
        _probe_writable(path)
        if replaces and os.path.isfile(path) and (why := _not_replaceable(path)) is not None:
            # An immutable one (chattr +i) failed only at the save, after the night's
            # outputs were written; a read-only one was replaced (a trial, a review).
            raise IndexFileError(f"cannot write index {shown}: {why}; make it writable, or give a copy of it")
        # Removed, it keeps no other run out, whether one has made it again yet or not.
        yield lambda: _identity(lock_path(path)) == locked
    finally:
        lock.release()


def still_locked(path: str | os.PathLike[str], held: Callable[[], bool]) -> None:
    """Before a save of the index at `path`, under index_lock: IndexFileError where `held`
    (what index_lock gave) says its lock file is no longer the one locked."""
    if not held():
        raise IndexFileError(
            f"cannot save index {path}: its lock file {lock_path(os.path.realpath(path))} was removed"
            " while this run held it, so that another run may have used the index meanwhile, and this"
            " save could drop its rows: the index is left as it is, without this run's documents"
            " (leave the lock file in place; it is no stale lock)"
        )


def _locked_file(lock: Any) -> tuple[int, int] | None:
    """The device and inode of the file a held FileLock locked: of its descriptor, not
    of its path, which may name another file by then."""
    fd = getattr(getattr(lock, "_context", None), "lock_file_fd", None)
    return file_identity(os.fstat(fd)) if isinstance(fd, int) else _identity(lock.lock_file)


def _identity(path: str) -> tuple[int, int] | None:
    """The device and inode of the file at `path` (read.file_identity), or None where
    there is none."""
    try:
        return file_identity(os.stat(path))
    except FileNotFoundError:
        return None


#: ioctl(2) FS_IOC_GETFLAGS (Linux, 64-bit), and the flags of chattr's +i and +a.
_GETFLAGS, _IMMUTABLE, _APPEND_ONLY = 0x80086601, 0x10, 0x20


def _not_replaceable(path: str) -> str | None:
    """Why a save could not put a new file in place of the index at `path` (a rename
    over it), or None: said before the run's work, not after its outputs are written."""
    st, folder = os.stat(path), os.stat(os.path.dirname(path) or ".")
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):  # root too, for mode 444
        return "the file is read-only (its mode, or an immutable attribute: chattr +i)"
    if sys.platform == "linux":
        import fcntl

        with suppress(OSError), open(path, "rb") as f:  # not every file system keeps such flags
            flags = struct.unpack("i", fcntl.ioctl(f.fileno(), _GETFLAGS, b"\0" * 4))[0]
            if flags & (_IMMUTABLE | _APPEND_ONLY):
                return "the file is immutable or append-only (chattr +i, +a)"
    euid = os.geteuid()
    if folder.st_mode & stat.S_ISVTX and euid not in (0, st.st_uid, folder.st_uid):
        return (
            "the file is another user's, in a sticky directory (as /tmp is), where only its owner replaces it"
        )
    return None


def temporary_beside(target: str | os.PathLike[str]) -> tuple[int, str]:
    """A new file beside `target` for what will replace it (its descriptor and path),
    named .NAME.XXXXXXXX.tmp, as the CLI's outputs and _probe_writable know a killed
    run's leftovers."""
    import tempfile  # here: with shutil and random ~5 ms, which a run writing no file never needs

    target = os.fspath(target)
    return tempfile.mkstemp(
        dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}.", suffix=".tmp"
    )


def _probe_writable(path: str | os.PathLike[str]) -> None:
    """Create and remove a file where the index will be saved, and remove what killed
    runs left there (safe: no one else writes while we hold the lock)."""
    path = Path(path)
    try:
        fd, tmp = temporary_beside(path)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise IndexFileError(f"cannot write index {path}: {path.parent}: {e.strerror or e}") from e
    # Only this index's own: mkstemp's 8 characters between its name and ".tmp". Any name
    # that began so was taken, and a run that held another index (crawl.sdx.1 beside
    # crawl.sdx) or wrote a --summary-json beside it lost the file it was writing.
    own = re.compile(re.escape(f".{path.name}.") + r"[a-z0-9_]{8}\.tmp")
    for name in os.listdir(path.parent):
        if own.fullmatch(name):
            with suppress(OSError):
                (path.parent / name).unlink()


# ---------------------------------------------------------------- a run against a stored index


class IndexSession:
    """One run against the index at `path`: lock it, load it, preload a Deduplicator with
    it, and save the Deduplicator's kept rows back, tagged with this run.

    The lock is held from __enter__ (before anything is read) to __exit__; everything that
    can fail before the run's work (lock, directory, format, checksum, settings) fails in
    __enter__. A missing file is a new, empty index.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        settings: Settings,
        *,
        wait: float = 0.0,
        run_name: str | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.settings = settings
        self.wait = wait
        self.on_wait = on_wait
        self._start = dt.datetime.now(dt.timezone.utc)
        self.started = _now(self._start)
        self._named = run_name is not None
        self.run_name = run_name or self.started
        self.loaded = 0
        #: Whether the file was there when the run began (a missing one is a new index).
        self.existed = False
        self.saved = 0
        #: Stored rows whose heads or sketches were of an older kind, not read
        #: (StoredIndex.dropped_heads, dropped_sketches).
        self.dropped_heads = 0
        self.dropped_sketches = 0
        #: Stored rows whose sketches are of a kind read as this one (StoredIndex.alike_sketches).
        self.alike_sketches = 0
        #: The Unicode database of the stored fingerprints, where this Python's is another.
        self.unicode_before: str | None = None
        self._stored: StoredIndex | None = None
        self._run_rows = np.empty(0, np.uint32)
        self._runs: list[dict[str, Any]] = []
        self._created: str | None = None
        self._lock: Any = None
        self._still_locked: Callable[[], bool] = lambda: False
        #: A digest of the ids preload() gave (None: not preloaded), which save() checks.
        self._preloaded: str | None = None
        # The stored sketches while no VerifyingDeduplicator holds them (--no-verify runs
        # keep them for later runs that verify).
        self._sketches: np.ndarray | None = None
        self._sketched: np.ndarray | None = None
        self._heads: np.ndarray | None = None
        self._headed: np.ndarray | None = None

    def __enter__(self) -> IndexSession:
        self._lock = index_lock(self.path, self.wait, self.on_wait)
        self._still_locked = self._lock.__enter__()
        try:
            self.existed = self.path.exists()
            if self.existed:
                stored = read_index(self.path)
                check_settings(self.path, stored.fingerprint, self.settings)
                if stored.sketches is not None and stored.sketch != SKETCH_SPEC:
                    raise IndexSettingsError(
                        f"{self.path} holds verification sketches of another kind ({stored.sketch}; "
                        f"this simdedup makes {SKETCH_SPEC}): use a new index"
                    )
                self._stored = stored
                self._run_rows, self._runs, self._created = stored.run_rows, stored.runs, stored.created
                if self.name_taken and not self._named:  # runs of one second: a loop, --wait's queue
                    self.run_name = _now(self._start, precise=True)
                self.loaded = len(stored)
                self.dropped_heads = stored.dropped_heads
                self.dropped_sketches = stored.dropped_sketches
                self.alike_sketches = stored.alike_sketches
                if stored.unicode not in (None, unicodedata.unidata_version):  # None: before files held it
                    self.unicode_before = stored.unicode
        except BaseException:
            self._lock.__exit__(None, None, None)
            self._lock = None
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)
        self._lock = None

    def _inside(self, what: str) -> None:
        """Refuse `what` outside the with block. Without it, preload gave nothing and save
        wrote the run's rows over every stored one (a trial), and a save after the block
        wrote while another run held the lock, one of the two runs' rows lost."""
        if self._lock is None:
            raise RuntimeError(
                f"IndexSession.{what}() runs inside `with IndexSession(...) as session:`, which holds"
                " the index's lock and has read it"
            )

    def preload(self, dd: Deduplicator) -> None:
        """Give an empty Deduplicator the stored rows, as rows 0..loaded-1."""
        self._inside("preload")
        if len(dd.ids):
            raise ValueError("preload needs an empty Deduplicator")
        check_feature_hash(dd)
        if self._stored is not None:
            self._stored.load_into(dd)
            if not isinstance(dd, VerifyingDeduplicator):
                self._sketches, self._sketched = self._stored.sketches, self._stored.sketched
                self._heads, self._headed = self._stored.heads, self._stored.headed
            self._stored = None  # the Deduplicator holds the rows now; keep one copy
        self._preloaded = dd.ids.digest(self.loaded)

    @property
    def name_taken(self) -> bool:
        """Whether a stored run has this run's name already (duplicate_of_run would then
        not tell the two apart)."""
        return any(run.get("name") == self.run_name for run in self._runs)

    def run_of(self, row: int) -> str:
        """The name of the run that kept `row`: a stored run, or this one."""
        if row < self.loaded:
            return str(self._runs[int(self._run_rows[row])]["name"])
        return self.run_name

    def save(self, dd: Deduplicator) -> StoredIndex:
        """Write the Deduplicator's rows (stored ones first, then this run's) back."""
        self._inside("save")
        if self._preloaded is None:
            raise ValueError("save a Deduplicator that preload() filled")
        if len(dd.ids) < self.loaded or dd.ids.digest(self.loaded) != self._preloaded:
            # Another one's rows would have replaced every stored one (a trial).
            raise ValueError("save the Deduplicator that preload() filled (or a copy of it), not another")
        blob, ends = dd.ids.to_arrays()
        added = len(ends) - self.loaded
        now = _now()
        run = {
            "name": self.run_name,
            "started": self.started,
            "finished": now,
            "added": added,
            "id": _run_id(),
        }
        sketches, sketched = self._sketches, self._sketched
        heads, headed = self._heads, self._headed
        if isinstance(dd, VerifyingDeduplicator):
            sketches, has = dd.sketch_array()
            sketched = has.astype(np.uint8) if has.any() else None
            sketches = sketches if has.any() else None
            heads, with_head = dd.head_array()
            headed = with_head.astype(np.uint8) if with_head.any() else None
            heads = heads if with_head.any() else None
        else:  # this run's rows have neither
            if sketches is not None and sketched is not None:
                sketches = np.concatenate([sketches, np.zeros((added, sketches.shape[1]), np.uint8)])
                sketched = np.concatenate([sketched, np.zeros(added, np.uint8)])
            if heads is not None and headed is not None:
                heads = np.concatenate([heads, np.zeros((added, *heads.shape[1:]), np.uint64)])
                headed = np.concatenate([headed, np.zeros(added, np.uint8)])
        index = StoredIndex(
            fingerprint=fingerprint_record(self.settings),
            unicode=unicodedata.unidata_version,
            fingerprints=dd.index.fingerprint_array(),
            id_bytes=blob,
            id_ends=ends,
            run_rows=np.concatenate([self._run_rows, np.full(added, len(self._runs), np.uint32)]),
            runs=[*self._runs, run],
            created=self._created or self.started,
            updated=now,
            sketches=sketches,
            sketched=sketched,
            sketch=SKETCH_SPEC if sketches is not None else None,
            heads=heads,
            headed=headed,
            unindexed=dd.index.unindexed_array().astype(np.uint8) if dd.index.unindexed else None,
        )
        still_locked(self.path, self._still_locked)
        write_index(self.path, index)
        self.saved = len(index)
        return index


# ---------------------------------------------------------------- merge and inspect


def run_key(run: dict[str, Any]) -> tuple[Any, ...]:
    """What tells one run from another: its id, random and given when it is saved, and
    its name, start, finish and rows added. Runs saved before runs had ids tell apart by
    the rest alone, to the second: two shards named alike that started and finished in
    the same seconds with as many rows each were taken for one, and a merge dropped one."""
    return (run.get("id"), run.get("name"), run.get("started"), run.get("finished"), run.get("added"))


def _run_id() -> str:
    return uuid.uuid4().hex


def merge_indexes(indexes: Sequence[tuple[str, StoredIndex]]) -> StoredIndex:
    """One index holding every row of each (name, index), in order: nothing is dropped,
    so a later document near any of them is still found, and nothing is added twice: the
    rows of a run that an earlier index holds already (StoredIndex.without_runs) are left
    out, as `index merge` leaves them (merging an index with itself doubled its rows: a
    review). All must share one fingerprint record; IndexSettingsError names the first
    that does not."""
    if not indexes:
        raise ValueError("nothing to merge")
    for item in indexes:  # a StoredIndex alone said "cannot unpack non-iterable StoredIndex" (a trial)
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], StoredIndex)):
            said = type(item).__name__
            raise TypeError(
                f"merge_indexes takes (name, StoredIndex) pairs, the name for its messages, not {said}"
            )
    known: list[dict[str, Any]] = []
    fresh = []
    for name, index in indexes:
        index = index.without_runs(known)
        known += index.runs
        fresh.append((name, index))
    indexes = fresh
    first_name, first = indexes[0]
    for name, index in indexes[1:]:
        diffs = record_differences(first.fingerprint, index.fingerprint)
        if diffs:
            what = "; ".join(f"{d} is {old!r} in {first_name}, {new!r} there" for d, old, new in diffs)
            raise IndexSettingsError(f"{name} was made with other fingerprint settings: {what}")
    parts = [index for _, index in indexes]
    kinds = {p.sketch for p in parts if p.sketches is not None}
    if len(kinds) > 1:
        raise IndexSettingsError(
            f"the indexes hold verification sketches of different kinds: {sorted(kinds)}"
        )
    width = next((p.sketches.shape[1] for p in parts if p.sketches is not None), 0)
    byte_offsets = np.cumsum([0] + [len(p.id_bytes) for p in parts[:-1]], dtype=np.uint64)
    run_offsets = np.cumsum([0] + [len(p.runs) for p in parts[:-1]])
    merged = StoredIndex(
        fingerprint=first.fingerprint,
        fingerprints=np.concatenate([p.fingerprints for p in parts]),
        id_bytes=np.concatenate([p.id_bytes for p in parts]),
        id_ends=np.concatenate([p.id_ends + off for p, off in zip(parts, byte_offsets)]),
        run_rows=np.concatenate([p.run_rows + np.uint32(off) for p, off in zip(parts, run_offsets)]),
        runs=[run for p in parts for run in p.runs],
        created=min(p.created for p in parts),
        updated=_now(),
        unicode=first.unicode,
    )
    if kinds:
        merged.sketch = kinds.pop()
        merged.sketches = np.concatenate(
            [p.sketches if p.sketches is not None else np.zeros((len(p), width), np.uint8) for p in parts]
        )
        merged.sketched = np.concatenate(
            [p.sketched if p.sketched is not None else np.zeros(len(p), np.uint8) for p in parts]
        )
    if any(p.unindexed is not None for p in parts):
        merged.unindexed = np.concatenate(
            [p.unindexed if p.unindexed is not None else np.zeros(len(p), np.uint8) for p in parts]
        )
    if any(p.heads is not None for p in parts):
        merged.heads = np.concatenate(
            [p.heads if p.heads is not None else np.zeros(p.fingerprints.shape, np.uint64) for p in parts]
        )
        merged.headed = np.concatenate(
            [p.headed if p.headed is not None else np.zeros(len(p), np.uint8) for p in parts]
        )
    merged._check()
    return merged


@dataclass(frozen=True)
class KeyBuckets:
    """One table of the index layout: the blocks its key joins, (start, width) each, how
    many distinct keys the stored fingerprints make there, and the largest buckets as
    (key, rows). A key is its blocks' values joined, the first block's highest."""

    blocks: tuple[tuple[int, int], ...]
    distinct: int
    largest: list[tuple[int, int]]

    @property
    def width(self) -> int:
        return sum(width for _, width in self.blocks)


def _bits_of(word: np.ndarray, start: int, width: int) -> np.ndarray:
    mask = np.uint64((1 << width) - 1)
    return (word >> np.uint64(start)) & mask


def block_values(fps: np.ndarray, start: int, width: int) -> np.ndarray:
    """Bits start..start+width-1 of each fingerprint (width <= 64), as uint64. For 128-bit
    rows (high word first), bit i < 64 is in the low word, column 1."""
    if fps.ndim == 1:
        return _bits_of(fps, start, width)
    low, high = fps[:, -1], fps[:, -2]
    if start + width <= 64:
        return _bits_of(low, start, width)
    if start >= 64:
        return _bits_of(high, start - 64, width)
    low_width = 64 - start
    return _bits_of(low, start, low_width) | (_bits_of(high, 0, width - low_width) << np.uint64(low_width))


def key_buckets(fps: np.ndarray, bits: int, distance: int, top: int = 3) -> list[KeyBuckets]:
    """The largest buckets of each table of the index layout for (bits, distance),
    computed from the fingerprints alone: a bucket is the rows that share the table's
    key, and a lookup compares every row of the buckets it meets, so large ones are what
    make lookups slow (common words make some keys hot)."""
    layout = Layout.for_(bits, distance)
    out = []
    for key in layout.keys:
        blocks = tuple(layout.blocks[b] for b in key)
        if sum(width for _, width in blocks) <= 64:  # one uint64 key: a sort of n numbers
            joined = np.zeros(len(fps), np.uint64)
            for start, width in blocks:
                joined = (joined << np.uint64(width)) | block_values(fps, start, width)
            keys, counts = np.unique(joined, return_counts=True)
            values = keys.tolist()
        else:  # 128-bit fingerprints at distance 0: two 64-bit blocks
            columns = np.stack([block_values(fps, start, width) for start, width in blocks], axis=1)
            rows, counts = np.unique(columns, axis=0, return_counts=True)
            values = [int(high) << blocks[1][1] | int(low) for high, low in rows.tolist()]
        order = np.argsort(-counts, kind="stable")[:top]
        largest = [(values[i], int(counts[i])) for i in order.tolist()]
        out.append(KeyBuckets(blocks, len(counts), largest))
    return out
