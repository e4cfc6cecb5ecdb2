"""BlockIndex.search of this checkout against another's (an earlier commit), in one run.

Each checkout builds the same index in a process of its own: the first --rows
fingerprints, added 4,096 at a time as `scan` adds its kept ones (so the index has the
runs a scan's has), then searches batches of 4,096 later fingerprints, unordered, as
verification asks. The two alternate, --rounds times; the medians and their ratio are
printed, and both must find the same pairs (counted).

    git worktree add /tmp/before c89ce06
    (cd /tmp/before && /work/main/.venv/bin/python setup.py build_ext --inplace)  # its C loops
    .venv/bin/python benchmarks/search_versus.py /tmp/before --rows 1000000 fps.hex
    .venv/bin/python benchmarks/search_versus.py /tmp/before --rows 1000000   # random ones

fps.hex: hex fingerprints, one a line, as large_index.py reads them (`simdedup
fingerprint corpus.txt | cut -f1`), or a .npy of them as uint64 (np.save), faster to
load. Without it, uniform random fingerprints, the same in both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

BATCH = 4096
HERE = Path(__file__).resolve().parents[1]


def child(checkout: str, path: str | None, rows: int, batches: int, repeat: int) -> None:
    sys.path.insert(0, checkout)
    import numpy as np

    from simdedup.index import BlockIndex

    assert Path(sys.modules["simdedup"].__file__).is_relative_to(checkout)  # type: ignore[arg-type]
    count = rows + batches * BATCH
    if path and path.endswith(".npy"):
        fps = np.load(path)[:count]
    elif path:  # hex, one a line, as large_index.py reads them
        from large_index import load

        fps = load(path, count)
    else:
        fps = np.random.default_rng(2).integers(0, 2**64, size=count, dtype=np.uint64)
    index = BlockIndex(64, 4)
    for lo in range(0, rows, BATCH):
        index.add_many(fps[lo : min(lo + BATCH, rows)])
    queries = fps[rows:]
    index.search(queries[:BATCH], ordered=False)  # the compiled loops loaded
    times, pairs = [], 0
    for _ in range(repeat):
        pairs = 0
        for lo in range(0, len(queries), BATCH):
            start = time.perf_counter()
            q, _, _ = index.search(queries[lo : lo + BATCH], ordered=False)
            times.append(time.perf_counter() - start)
            pairs += len(q)
    print(
        json.dumps({"us": statistics.median(times) / BATCH * 1e6, "pairs": pairs, "runs": len(index._runs)})
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="the other checkout (its C loops built, or numba's cache warmed)")
    parser.add_argument("fingerprints", nargs="?", help="hex, one a line, or a .npy (default: random)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # run in `before`
    args = parser.parse_args()
    if args.child:
        child(args.before, args.fingerprints, args.rows, args.batches, 3)
        return
    found: dict[str, list[dict[str, float]]] = {"before": [], "now": []}
    fingerprints = [str(Path(args.fingerprints).resolve())] if args.fingerprints else []
    for _ in range(args.rounds):
        for name, checkout in (("before", str(Path(args.before).resolve())), ("now", str(HERE))):
            command = [sys.executable, __file__, checkout, *fingerprints, "--rows", str(args.rows)]
            command += ["--batches", str(args.batches), "--child"]
            result = subprocess.run(command, cwd=checkout, capture_output=True, text=True, check=True)
            found[name].append(json.loads(result.stdout))
    pairs = {run["pairs"] for runs in found.values() for run in runs}
    assert len(pairs) == 1, f"the checkouts found different pairs: {pairs}"
    kind = Path(args.fingerprints).name if args.fingerprints else "random fingerprints"
    print(f"{args.rows:,} of {kind}, {found['now'][0]['runs']} runs; search of {BATCH:,} queries, µs a query")
    for name in found:
        print(f"  {name:<7} " + "  ".join(f"{run['us']:.2f}" for run in found[name]))
    ratio = statistics.median(r["us"] for r in found["before"]) / statistics.median(
        r["us"] for r in found["now"]
    )
    print(f"  before / now: {ratio:.2f}x (medians); {pairs.pop():,} pairs a pass, the same in both")


if __name__ == "__main__":
    main()
