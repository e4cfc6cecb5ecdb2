"""The `simdedup` command, and `python -m simdedup`: the process set up, then the CLI.

simdedup does no linear algebra, so numpy's OpenBLAS gets one thread. Its pool of a
thread per core, started when numpy loads, cost every run 0.1 s of CPU, and `--version`
0.3 s of wall time instead of 0.2, on 2 cores. It must be set before numpy loads; a
value already in the environment is kept.
"""

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    from .cli import main  # noqa: E402  (after the environment is set)
except KeyboardInterrupt:  # Ctrl-C while the modules load: no traceback, the status of an interrupt
    sys.exit(130)

if __name__ == "__main__":
    main(prog_name="simdedup")
