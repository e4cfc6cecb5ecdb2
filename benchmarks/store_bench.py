"""Save and load time, file size and resident memory of a stored index (simdedup/store.py).

For each size N it writes an index of N random 64-bit fingerprints with 35-byte ids
(`crawl/2024-11-22/page-00000001.html`) kept by 365 runs, then measures, each step in a
fresh process so that memory figures are that step's alone:

- save: `write_index` (header, arrays, xxh3 checksum, fsync, rename, directory fsync);
- file size on disk;
- load, warm: `read_index` with the file in the page cache (checksum verified);
- load, cold: the same after posix_fadvise(DONTNEED) dropped the file's cached pages;
- memory: resident set growth of the loading process, per stored fingerprint, ids included,
  and its peak;
- with --preload: also `Deduplicator.extend` of the loaded rows (what `scan --index` does
  next), its time and the resident memory of the whole Deduplicator per fingerprint.

    .venv/bin/python benchmarks/store_bench.py                   # 1M and 10M
    .venv/bin/python benchmarks/store_bench.py --sizes 1000000 --preload

Timings are reported, never asserted. Prints a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simdedup.settings import Settings  # noqa: E402
from simdedup.store import StoredIndex, fingerprint_record, read_index, write_index  # noqa: E402

PREFIX = b"crawl/2024-11-22/page-"
SUFFIX = b".html"
DIGITS = 8
ID_BYTES = len(PREFIX) + DIGITS + len(SUFFIX)
RUNS = 365


def rss_bytes() -> int:
    """The resident set size of this process now (Linux), else its peak so far."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return peak_rss_bytes()


def peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def synthetic_index(n: int, seed: int = 0) -> StoredIndex:
    """n random fingerprints; ids PREFIX + 8 digits + SUFFIX, built as arrays (fast)."""
    rng = np.random.default_rng(seed)
    rows = np.arange(n, dtype=np.int64)
    ids = np.empty((n, ID_BYTES), np.uint8)
    ids[:, : len(PREFIX)] = np.frombuffer(PREFIX, np.uint8)
    for k in range(DIGITS):
        ids[:, len(PREFIX) + DIGITS - 1 - k] = 48 + (rows // 10**k) % 10
    ids[:, len(PREFIX) + DIGITS :] = np.frombuffer(SUFFIX, np.uint8)
    now = "2024-11-22T02:30:00Z"
    return StoredIndex(
        fingerprint=fingerprint_record(Settings()),
        fingerprints=rng.integers(0, 2**64, n, dtype=np.uint64),
        id_bytes=ids.reshape(-1),
        id_ends=(rows.astype(np.uint64) + 1) * np.uint64(ID_BYTES),
        run_rows=(rows * RUNS // max(n, 1)).astype(np.uint32),
        runs=[{"name": f"night {r}", "started": now, "finished": now, "added": 0} for r in range(RUNS)],
        created=now,
        updated=now,
    )


# ---------------------------------------------------------------- the steps, each in its own process


def step_save(path: str, n: int) -> dict[str, float]:
    index = synthetic_index(n)
    start = time.perf_counter()
    write_index(path, index)
    return {"save_s": time.perf_counter() - start, "file_bytes": os.path.getsize(path)}


def drop_cache(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def step_load(path: str, n: int, cold: bool, preload: bool) -> dict[str, float]:
    if cold:
        drop_cache(path)
    before = rss_bytes()
    start = time.perf_counter()
    index = read_index(path)
    seconds = time.perf_counter() - start
    assert len(index) == n
    out = {
        "load_s": seconds,
        "rss_per_fp": (rss_bytes() - before) / max(n, 1),
        "peak_per_fp": (peak_rss_bytes() - before) / max(n, 1),
    }
    if preload:
        from simdedup.dedup import Deduplicator

        start = time.perf_counter()
        dd = Deduplicator(Settings())
        dd.extend(index.fingerprints, index.ids())
        out["extend_s"] = time.perf_counter() - start
        run_rows = index.run_rows  # what IndexSession keeps besides the Deduplicator
        del index
        out["dd_rss_per_fp"] = (rss_bytes() - before) / max(n, 1)
        out["dd_peak_per_fp"] = (peak_rss_bytes() - before) / max(n, 1)
        assert len(dd.ids) == n == len(run_rows)
    return out


def child(args: list[str]) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"step {args} failed:\n{result.stderr}")
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--dir", help="where to write the index files (default: a temporary directory)")
    parser.add_argument("--preload", action="store_true", help="also time Deduplicator.extend")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        step, path, n = args.child[0], args.child[1], int(args.child[2])
        flags = set(args.child[3:])
        if step == "save":
            print(json.dumps(step_save(path, n)))
        else:
            print(json.dumps(step_load(path, n, cold="cold" in flags, preload="preload" in flags)))
        return

    print(f"# store_bench: {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs")
    print(f"# ids: {ID_BYTES} bytes each; {RUNS} runs; 64-bit fingerprints")
    columns = ["fingerprints", "save s", "file MB", "B/fp file", "load warm s", "load cold s"]
    columns += ["RSS B/fp", "peak B/fp"]
    if args.preload:
        columns += ["extend s", "dedup RSS B/fp", "dedup peak B/fp"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---:|" * len(columns))
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in args.sizes:
            path = os.path.join(tmp, f"bench-{n}.sdx")
            saved = child(["save", path, str(n)])
            warm = child(["load", path, str(n), *(["preload"] if args.preload else [])])
            cold = child(["load", path, str(n), "cold"])
            cells = [
                f"{n:,}",
                f"{saved['save_s']:.2f}",
                f"{saved['file_bytes'] / 1e6:,.0f}",
                f"{saved['file_bytes'] / n:.1f}",
                f"{warm['load_s']:.2f}",
                f"{cold['load_s']:.2f}",
                f"{warm['rss_per_fp']:.1f}",
                f"{warm['peak_per_fp']:.1f}",
            ]
            if args.preload:
                cells += [
                    f"{warm['extend_s']:.2f}",
                    f"{warm['dd_rss_per_fp']:.1f}",
                    f"{warm['dd_peak_per_fp']:.1f}",
                ]
            print("| " + " | ".join(cells) + " |", flush=True)
            os.unlink(path)


if __name__ == "__main__":
    main()
