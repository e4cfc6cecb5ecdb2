"""Exit statuses and the exceptions that carry them.

Every way simdedup can end is named here once; the CLI maps exceptions to these codes.
The core raises these exceptions and never exits or prints.
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """The process exit codes, as documented in the README."""

    OK = 0
    #: duplicates were found and --fail-on-duplicates was given; for compare: not near.
    FOUND = 1
    #: bad usage, or a fatal error before or during the run.
    USAGE = 2
    #: the run finished, but some input could not be read as it is (each named on stderr).
    INPUT_ERRORS = 3
    #: interrupted (Ctrl-C), after flushing what was written.
    INTERRUPTED = 130
    #: stopped by SIGTERM (timeout, a service manager, kill), handled as Ctrl-C is.
    TERMINATED = 143
    #: stopped by SIGHUP (its terminal closed, an ssh session dropped), handled as Ctrl-C is.
    HUNG_UP = 129
    #: the reader of stdout went away (`simdedup ... | head`).
    BROKEN_PIPE = 141


class SimdedupError(Exception):
    """A fatal error: the run cannot go on. Carries its exit status."""

    exit_status: ExitStatus = ExitStatus.USAGE


class SettingsError(SimdedupError, ValueError):
    """Settings that do not fit together (for example --shingle with --tokenizer chars)."""


class IndexFileError(SimdedupError):
    """A stored index (--index) that cannot be used: missing directory, not an index,
    a newer format, a corrupt file, or a write that failed. Raised before any work
    where it can be."""


class IndexLockedError(IndexFileError):
    """Another run holds the lock of the stored index, and --wait ran out."""


class IndexSettingsError(IndexFileError):
    """The stored index was made with other fingerprint settings than this run's."""


class IndexCorruptError(IndexFileError):
    """The stored index is truncated or altered (its checksum does not match)."""


class WorkerError(SimdedupError):
    """A --jobs worker process died (killed, or out of memory): its batch is lost."""


def unmapped_library(e: ImportError) -> str | None:
    """The one-line error for a library the system would not map (dlopen's "failed to
    map segment from shared object"), or None for another ImportError. Under `ulimit -v`
    that was a traceback and exit 1, which --fail-on-duplicates means "duplicates"; a
    file system mounted noexec says the same, so the message names both."""
    if "failed to map segment" not in str(e):
        return None
    why = str(e).strip().splitlines()[-1] if str(e).strip() else "failed to map segment"
    return (
        f"cannot load a library: {why}: the system gives simdedup no more memory (ulimit -v), or"
        " the library's file system is mounted noexec"
    )
