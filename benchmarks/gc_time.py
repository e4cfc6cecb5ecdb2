"""Time a CLI run spends collecting cycles: at the thresholds the CLI sets
(cli._GC_THRESHOLDS) against CPython's defaults (700, 10, 10), alternating, in one run.

    .venv/bin/python benchmarks/gc_time.py --rounds 2 -- scan corpus.txt -j2 -q --format tsv

Each run is a process of its own that counts the collections of each generation and
the time they take (gc.callbacks), and its own CPU time (the main process; workers
inherit the thresholds but are not counted). Both runs' outputs must be the same bytes.
Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

DEFAULTS = (700, 10, 10)


def child(thresholds: str, report: str, argv: list[str]) -> None:
    """Run `simdedup argv` here with the given thresholds, then write what collecting took."""
    import gc

    import simdedup.cli as cli

    if thresholds == "defaults":
        cli._GC_THRESHOLDS = DEFAULTS
    counts, seconds, started = [0, 0, 0], [0.0, 0.0, 0.0], [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            counts[info["generation"]] += 1
            seconds[info["generation"]] += time.perf_counter() - started[0]

    gc.callbacks.append(timed)
    wall = time.perf_counter()
    with contextlib.suppress(SystemExit):  # the CLI always exits
        cli.main(argv, prog_name="simdedup")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    record = {
        "wall": time.perf_counter() - wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "counts": counts,
        "seconds": seconds,
        "thresholds": list(gc.get_threshold()),
    }
    with open(report, "w") as f:
        json.dump(record, f)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--child", choices=["cli", "defaults"], help=argparse.SUPPRESS)
    p.add_argument("--report", help=argparse.SUPPRESS)
    p.add_argument("argv", nargs=argparse.REMAINDER, help="-- then simdedup's arguments")
    args = p.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if args.child:
        child(args.child, args.report, argv)
        return 0
    print(f"simdedup {' '.join(argv)}: {args.rounds} alternating rounds")
    header = ("thresholds", "wall s", "main CPU s", "collections (gen 0/1/2)", "collecting s")
    print(f"{header[0]:<16} {header[1]:>7} {header[2]:>10} {header[3]:>24} {header[4]:>13}")
    with tempfile.TemporaryDirectory(prefix="simdedup-gc-") as tmp:
        for _ in range(args.rounds):
            for arm in ("defaults", "cli"):
                report, out = os.path.join(tmp, f"{arm}.json"), os.path.join(tmp, f"{arm}.out")
                with open(out, "wb") as f:
                    command = [sys.executable, __file__, "--child", arm, "--report", report, "--", *argv]
                    subprocess.run(command, stdout=f, check=True)
                with open(report) as f:
                    r = json.load(f)
                counts = "/".join(map(str, r["counts"]))
                shown = ", ".join(map(str, r["thresholds"]))
                print(
                    f"{shown:<16} {r['wall']:>7.2f} {r['cpu']:>10.2f} {counts:>24} {sum(r['seconds']):>13.2f}"
                )
            same = filecmp.cmp(os.path.join(tmp, "defaults.out"), os.path.join(tmp, "cli.out"), shallow=False)
            if not same:
                print("the two runs wrote different output")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
