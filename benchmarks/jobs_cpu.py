"""Where `fingerprint --jobs 2`'s time goes: the main process's CPU, the workers', wall.

Issue 5 asks `--jobs 2` for 1.8x one job's throughput on 2 cores. This runs
`simdedup fingerprint -j1` and `-j2` on the same file, alternating, and prints for each
run its wall time, the main process's CPU (user + system) and its workers' (the children
it waited for), then the ratio of each round's walls. What bounds the ratio: the main
process's serial start (Python; before stop 32 also numba, loaded before the workers
fork, so that they inherit it), its reading of the input (since stop 31 only to count a plain file's
lines: the workers read their chunks' bytes themselves), and two workers each running
slower beside each other than one alone (their CPU summed against `-j1`'s).

Run: .venv/bin/python benchmarks/jobs_cpu.py --docs 1000000 --rounds 3   (about a
minute; the file, 652 MB, is scaling.py's generator, seed 0, written once to
benchmarks/.data). --copies 4 reads four copies of it in one file (2.6 GB), where the
start-up that no job count shares weighs a quarter as much.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scaling import write_english_file  # noqa: E402

#: Runs the CLI, as the `simdedup` command does (simdedup/__main__.py: one OpenBLAS
#: thread), in a process that, at its exit, prints its own
#: CPU and its children's. Before stop 31 it called cli.main, without that setup: the
#: main process's CPU read ~0.3 s high.
MEASURED = """
import atexit, resource, sys, time
start = time.perf_counter()
def said():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{time.perf_counter() - start} {own.ru_utime + own.ru_stime} {kids.ru_utime + kids.ru_stime}",
          file=sys.stderr)
atexit.register(said)
import runpy
runpy.run_module("simdedup", run_name="__main__")  # as the command starts: __main__'s setup
"""


def measure(path: Path, jobs: int) -> tuple[float, float, float]:
    """Wall seconds, the main process's CPU seconds, its workers' (from its start)."""
    command = [sys.executable, "-c", MEASURED, "fingerprint", f"-j{jobs}", str(path)]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    wall, own, kids = map(float, done.stderr.split()[-3:])
    return wall, own, kids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copies", type=int, default=1, help="read this many copies of the file, in one")
    args = parser.parse_args()
    data = Path(__file__).resolve().parent / ".data"
    data.mkdir(exist_ok=True)
    path = data / f"english-{args.docs}.txt"
    if not path.exists():
        write_english_file(path, args.docs, seed=0)
    if args.copies > 1:  # a larger input, where start-up weighs less, without generating it
        copies = data / f"english-{args.docs}-x{args.copies}.txt"
        if not copies.exists():
            with copies.open("wb") as out:
                for _ in range(args.copies):
                    out.write(path.read_bytes())
        path = copies
    documents = args.docs * args.copies
    size = path.stat().st_size / 2**20
    print(f"fingerprint of {documents:,} generated English documents ({size:,.0f} MiB)")
    print(f"{'round':>5}  {'jobs':>4}  {'wall':>7}  {'main CPU':>8}  {'workers':>7}  {'-j1/-j2 wall':>12}")
    ratios = []
    for n in range(1, args.rounds + 1):
        one = measure(path, 1)
        two = measure(path, 2)
        ratios.append(one[0] / two[0])
        for jobs, (wall, own, kids) in ((1, one), (2, two)):
            ratio = f"{ratios[-1]:.2f}x" if jobs == 2 else ""
            print(f"{n:>5}  {jobs:>4}  {wall:6.2f}s  {own:7.2f}s  {kids:6.2f}s  {ratio:>12}")
    print(f"-j2 / -j1 throughput (wall): {min(ratios):.2f}x-{max(ratios):.2f}x; target >= 1.8x")


if __name__ == "__main__":
    main()
