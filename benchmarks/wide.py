"""Wide distances: `scan -k K` with the index's tables against comparing every row.

From k = 7 on (64 bits) the index keys each table on one block of 8 bits or fewer, so a
query meets a large share of the rows in its buckets (Layout.key_share: 3% at k = 7,
130% at k = 16), each at several times the cost of a plain comparison, and the numpy
search held every candidate of a slice of queries at once (9,000 lines at k = 16: 30 s
and 6 GB). A Layout whose key_share reaches index.BRUTE_FORCE_SHARE compares every
query with every row instead. This runs `simdedup scan -j1 -q --format tsv` of the
same generated English file at each k, once with the tables forced and once with every
row compared forced (index.BRUTE_FORCE_SHARE patched in the child), alternating, and
prints each one's wall time and peak resident memory, the ratio of brute force to the
tables (the baseline, in the same run), and whether their outputs are byte-identical.

    .venv/bin/python benchmarks/wide.py --docs 9000 --distances 4,6,7,8,10,16
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scaling import write_english_file

CHILD = "import sys, simdedup.index as i; i.BRUTE_FORCE_SHARE = float(sys.argv.pop(1)); " + (
    "from simdedup.__main__ import main; main()"
)


def run(path: Path, k: int, share: float, out: Path) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB) and the output's digest of one scan."""
    command = [sys.executable, "-c", CHILD, str(share), "scan", str(path), "-j1", "-q", "--format", "tsv"]
    start = time.perf_counter()
    with open(out, "wb") as sink:
        proc = subprocess.Popen([*command, "-k", str(k)], stdout=sink)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"scan -k {k} failed: {status}")
    return seconds, usage.ru_maxrss, hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=9000)
    parser.add_argument("--distances", default="4,6,7,8,10,16", help="comma-separated k")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--skip-tables-from", type=int, default=99, help="k from which tables are not run")
    args = parser.parse_args()
    from simdedup.index import Layout

    with tempfile.TemporaryDirectory() as tmp:
        corpus, out = Path(tmp) / "corpus.txt", Path(tmp) / "out.tsv"
        write_english_file(str(corpus), args.docs, 0)
        print(f"scan -j1 of {args.docs:,} generated English documents; best of {args.rounds} round(s)")
        print(f"  {'k':>3}  {'key share':>9}  {'tables':>17}  {'every row':>17}  time ratio  same output")
        for k in (int(x) for x in args.distances.split(",")):
            share = Layout.for_(64, k).key_share
            tables, brute = [], []
            for _ in range(args.rounds):
                if k < args.skip_tables_from:
                    tables.append(run(corpus, k, float("inf"), out))
                brute.append(run(corpus, k, 0.0, out))
            b = min(brute)
            if tables:
                t = min(tables)
                same = "yes" if t[2] == b[2] else "NO"
                cells = f"{t[0]:7.2f} s {t[1] / 1024:5.0f} MiB  {b[0]:7.2f} s {b[1] / 1024:5.0f} MiB"
                print(f"  {k:>3}  {share:>9.2%}  {cells}  {b[0] / t[0]:10.2f}  {same}")
            else:
                print(f"  {k:>3}  {share:>9.2%}  {'(not run)':>17}  {b[0]:7.2f} s {b[1] / 1024:5.0f} MiB")


if __name__ == "__main__":
    main()
