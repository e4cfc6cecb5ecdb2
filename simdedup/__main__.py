"""The `simdedup` command, and `python -m simdedup`: the process set up, the CLI, and
the process ended without the interpreter's teardown.

simdedup does no linear algebra, so numpy's OpenBLAS gets one thread. Its pool of a
thread per core, started when numpy loads, cost every run 0.1 s of CPU, and `--version`
0.3 s of wall time instead of 0.2, on 2 cores. It must be set before numpy loads; a
value already in the environment is kept.
"""

import atexit
import contextlib
import os
import sys
import threading

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    from .cli import main as cli_main  # noqa: E402  (after the environment is set)
except KeyboardInterrupt:  # Ctrl-C while the modules load: no traceback, the status of an interrupt
    sys.exit(130)
except MemoryError:  # under `ulimit -v`: a traceback and exit 1, which means "duplicates" (a trial)
    sys.stderr.write("Error: out of memory: the system gives simdedup too little to start\n")
    sys.exit(2)
except ImportError as e:  # a library not mapped: out of memory, or a noexec file system
    from .status import unmapped_library

    if (unmapped := unmapped_library(e)) is None:
        raise
    sys.stderr.write(f"Error: {unmapped}\n")
    sys.exit(2)


def main(prog_name: str | None = None) -> None:
    """Run the command, then end the process (_exit)."""
    try:
        cli_main(prog_name=prog_name)
    except SystemExit as e:
        _exit(e.code)
    _exit(0)


def _exit(code: object) -> None:
    """End the process as the interpreter would, less its teardown.

    After a run, the interpreter frees every module and object one by one before the
    process ends: 20 ms after `--version`, 33-46 ms after `fingerprint -j2` of 200,000
    to 1M lines, 67-88 ms after `scan` of them, for nothing that anyone reads. This
    does what of it has an effect outside the process, in its order (Py_FinalizeEx):
    join the threads that are not daemons (after concurrent.futures' exit hooks),
    run the atexit functions (parallel.py's, multiprocessing's), flush stdout and
    stderr; then it ends the process with os._exit. Every file simdedup writes is
    closed by its command before this, so nothing else waits on a flush.

    Left to the interpreter, as before: a status that is not a number (SystemExit
    prints it), a flush that fails (it reports that and exits 120), an interpreter
    without these steps."""
    shutdown = getattr(threading, "_shutdown", None)
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if not (code is None or isinstance(code, int)) or shutdown is None or run_exit_functions is None:
        sys.exit(code)
    with contextlib.suppress(KeyboardInterrupt):  # the interpreter's own join goes on after one too
        shutdown()
    run_exit_functions()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:  # noqa: BLE001 (the interpreter's last flush says what failed)
        sys.exit(code)
    os._exit((code or 0) & 0xFF)


if __name__ == "__main__":
    main(prog_name="simdedup")
