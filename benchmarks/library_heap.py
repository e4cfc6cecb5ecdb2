"""simdedup as a library in a fresh process, with glibc's default heap settings and with
the ones the CLI sets (cli._keep_freed_memory), given as GLIBC_TUNABLES: the same
fingerprint_texts calls, alternating, in one run.

    .venv/bin/python benchmarks/library_heap.py corpus.txt --docs 100000 --rounds 2

A batch's temporary numpy arrays are a few MB; by default glibc hands freed heap back
to the kernel, and the next batch faults every page in again. Each run is a process of
its own that reads the first --docs lines, then fingerprints them in batches of
--batch and reports its time, CPU (user, system) and minor page faults over the
fingerprinting alone. Linux with glibc only. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

#: What the CLI sets with mallopt (cli._MMAP_THRESHOLD, cli._TRIM_THRESHOLD), as tunables.
TUNABLES = "glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432"

CHILD = """
import json, resource, sys, time
import simdedup
path, docs, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, encoding="utf-8") as f:
    texts = [line.rstrip("\\n") for line, _ in zip(f, range(docs))]
before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
for i in range(0, len(texts), batch):
    simdedup.fingerprint_texts(texts[i : i + batch])
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({
    "docs": len(texts),
    "wall": time.perf_counter() - started,
    "user": after.ru_utime - before.ru_utime,
    "system": after.ru_stime - before.ru_stime,
    "faults": after.ru_minflt - before.ru_minflt,
}))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus", help="a text file, one document a line")
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    print(f"fingerprint_texts, batches of {args.batch:,}, a fresh process each run")
    print(f"{'heap':<14} {'docs':>8} {'wall s':>7} {'user s':>7} {'system s':>9} {'minor faults':>13}")
    for _ in range(args.rounds):
        for label, extra in (("glibc default", {}), ("CLI's", {"GLIBC_TUNABLES": TUNABLES})):
            env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"} | extra
            command = [sys.executable, "-c", CHILD, args.corpus, str(args.docs), str(args.batch)]
            r = json.loads(
                subprocess.run(command, env=env, capture_output=True, check=True, text=True).stdout
            )
            print(
                f"{label:<14} {r['docs']:>8,} {r['wall']:>7.2f} {r['user']:>7.2f} "
                f"{r['system']:>9.2f} {r['faults']:>13,}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
