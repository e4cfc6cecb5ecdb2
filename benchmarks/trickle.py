"""A trickle into `simdedup filter`: each line's answer delay, and the command's CPU.

Writes N unique 30-word lines GAP seconds apart into `simdedup filter -q` (after a
warm-up line, so that start-up is not counted), times when each line's answer comes out,
and prints the delays' p50, p99 and largest, and the CPU the command used
(RUSAGE_CHILDREN). SIMDEDUP names another command to run (e.g. a script that runs an
older checkout with PYTHONPATH), for a comparison in the same run. See
benchmarks/README.md, "Stop 50".

Run: .venv/bin/python benchmarks/trickle.py 2000 0.001   (about 3 s)
"""

from __future__ import annotations

import os
import random
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

WARM_UP = b"warm up line one two three n-1\n"


def main() -> None:
    count, gap = int(sys.argv[1]), float(sys.argv[2])
    rng = random.Random(0)
    words = [f"w{i}" for i in range(50_000)]
    lines = [(" ".join(rng.choice(words) for _ in range(30)) + f" n{i}\n").encode() for i in range(count)]
    command = os.environ.get("SIMDEDUP", str(Path(sys.executable).with_name("simdedup")))
    proc = subprocess.Popen(
        [command, "filter", "-q", *sys.argv[3:]], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    answered: list[tuple[float, int]] = []  # (when, line number); -1: the warm-up line

    def read(stdout: IO[bytes]) -> None:
        for line in stdout:
            answered.append((time.perf_counter(), int(line.rsplit(b" n", 1)[1])))

    reader = threading.Thread(target=read, args=(proc.stdout,))
    reader.start()
    proc.stdin.write(WARM_UP)
    proc.stdin.flush()
    while not answered:
        time.sleep(0.001)
    time.sleep(0.5)
    sent = [0.0] * count
    start = time.perf_counter()
    for i, line in enumerate(lines):
        while (wait := start + i * gap - time.perf_counter()) > 0:
            time.sleep(wait)
        sent[i] = time.perf_counter()
        proc.stdin.write(line)
        proc.stdin.flush()
    proc.stdin.close()
    proc.wait()
    reader.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    delays = sorted((when - sent[i]) * 1000 for when, i in answered if i >= 0)
    at = lambda share: delays[min(len(delays) - 1, int(share * len(delays)))]  # noqa: E731
    print(
        f"gap {gap * 1000:g} ms: {len(delays)}/{count} answered; delay ms p50 {at(0.5):.1f}"
        f" p99 {at(0.99):.1f} max {delays[-1]:.1f}; CPU {usage.ru_utime + usage.ru_stime:.2f} s"
    )


if __name__ == "__main__":
    main()
