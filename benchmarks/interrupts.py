"""Lines lost or written twice when a signal stops `simdedup filter` reading a pipe.

Each trial writes unique lines into `simdedup filter -q` (GAP seconds apart; 0: as fast
as the pipe takes them) through a pipe whose read end this script keeps open too, sends
SIGTERM after AFTER seconds, and once the command has ended reads what it left in the
pipe. Lines consumed (whole lines the command took from the pipe) against lines
answered (all are unique, so `filter` writes each) gives the lines lost; lines written
twice are counted too. `--short` writes lines of one short word (`w1x2a`), so that a read
holds thousands of them. `--strace` runs the command as stop 51 measured it: through
this script (`--traced`), which starts it under strace (Linux; its writes, forks and
kills traced to files, removed after) and passes the SIGTERM on to it; the command
runs slower, and the instants where a signal loses or doubles lines are hit far more
often. Extra arguments go to `simdedup filter` (e.g. `-j2`). SIMDEDUP names another
command to run, for a comparison. See benchmarks/README.md, "Stop 50" and "Stop 51".

Run: .venv/bin/python benchmarks/interrupts.py --short 0 0.6 8 -j2   (about 10 s)
     .venv/bin/python benchmarks/interrupts.py --short --strace 0 0.9 40 -j2   (about a minute)
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def trial(command: list[str], gap: float, after: float, tag: int, short: bool) -> str:
    rng = random.Random(tag)
    read_end, write_end = os.pipe()
    flags = fcntl.fcntl(write_end, fcntl.F_GETFL)
    fcntl.fcntl(write_end, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    proc = subprocess.Popen(command, stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    written, count, signalled = bytearray(), 0, False
    start = time.perf_counter()
    while proc.poll() is None and time.perf_counter() - start < after + 15:
        if not signalled and time.perf_counter() - start >= after:
            proc.send_signal(signal.SIGTERM)
            signalled = True
        words = f"w{tag}x{count:x}" if short else " ".join(f"w{rng.randrange(50_000)}" for _ in range(30))
        line = f"{words} n{tag}x{count}\n".encode() if not short else f"{words}\n".encode()
        try:
            sent = os.write(write_end, line)
        except BlockingIOError:
            time.sleep(0.0005)
            continue
        if sent < len(line):  # the rest of the line, waiting for room
            fcntl.fcntl(write_end, fcntl.F_SETFL, flags)
            os.write(write_end, line[sent:])
            fcntl.fcntl(write_end, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        written += line
        count += 1
        if gap:
            time.sleep(gap)
    proc.wait()
    reader.join()
    os.close(write_end)
    fcntl.fcntl(read_end, fcntl.F_SETFL, fcntl.fcntl(read_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    left = b""
    try:
        while data := os.read(read_end, 1 << 20):
            left += data
    except BlockingIOError:
        pass
    os.close(read_end)
    consumed = bytes(written[: len(written) - len(left)]).split(b"\n")[:-1]  # whole lines
    answers = out[0].split(b"\n")[:-1]
    twice = sum(n - 1 for n in collections.Counter(answers).values())
    lost = len(set(consumed) - set(answers))
    return (
        f"SIGTERM at {after} s: exit {proc.returncode}, lines written {count:,}, consumed {len(consumed):,},"
        f" answered {len(answers):,}, lost {lost:,}, written twice {twice:,}"
    )


def traced(command: list[str]) -> int:
    """Run `command` under strace, passing a SIGTERM on to it (strace itself would
    not), and return its exit status."""
    with tempfile.TemporaryDirectory() as traces:
        options = ["-ff", "-s", "24", "-e", "trace=write,clone,clone3,exit_group,kill", "-o", f"{traces}/t"]
        proc = subprocess.Popen(["strace", *options, *command])

        def pass_on(signum: int, frame: object) -> None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                child = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0]
                os.kill(int(child), signum)

        signal.signal(signal.SIGTERM, pass_on)
        return proc.wait()


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--traced"]:
        sys.exit(traced(args[1:]))
    short, through_strace = "--short" in args, "--strace" in args
    args = [a for a in args if a not in ("--short", "--strace")]
    gap, after, trials = float(args[0]), float(args[1]), int(args[2])
    simdedup = os.environ.get("SIMDEDUP", str(Path(sys.executable).with_name("simdedup")))
    for tag in range(trials):
        wrapper = [sys.executable, __file__, "--traced"] if through_strace else []
        print(trial([*wrapper, simdedup, "filter", "-q", *args[3:]], gap, after, tag, short), flush=True)


if __name__ == "__main__":
    main()
