"""The CLI off the happy path, as a new user's trial met it: file names that are not
UTF-8, a full disk, SIGTERM, outputs that clash, line ends, odd ids and weights."""

from __future__ import annotations

import bz2
import codecs
import contextlib
import csv
import datetime as dt
import fcntl
import gzip
import io
import itertools
import json
import lzma
import os
import pty
import random
import re
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import IO, Any

import click
import pytest
from click.testing import CliRunner, Result

from simdedup import cli as cli_module
from simdedup import report as report_module
from simdedup import verify as verify_module
from simdedup.cli import main
from simdedup.read import codec_for
from simdedup.store import index_lock, read_index

LINE = "the harbour was quiet that morning with fishing boats along the stone wall"
OTHER = "our library card now works at every branch in the county for every member"
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="Linux file names, /dev/full, signals")


def run(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env=env).invoke(main, list(args), input=input, catch_exceptions=False)


def simdedup(*args: str, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "simdedup", *args]
    return subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, timeout=120, check=False)


# ---------------------------------------------------------------- file names


@linux_only
def test_a_file_name_that_is_not_utf8_is_an_escaped_id_and_the_index_is_saved(tmp_path: Path) -> None:
    # The name's byte 0xE9 (Latin-1 é) was a lone surrogate in the id, and every text
    # output failed on it with a traceback; --index was not saved.
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / os.fsdecode(b"caf\xe9.txt")).write_text(LINE)
    (tree / "z.txt").write_text(LINE)
    index = tmp_path / "seen.sdx"
    done = simdedup("scan", str(tree), "--format", "jsonl", "--index", str(index), "-q")
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    [group] = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert group["kept"] == f"{tree}/caf\\xe9.txt"
    assert [d["id"] for d in group["duplicates"]] == [f"{tree}/z.txt"]
    assert index.exists()

    lines = tmp_path / os.fsdecode(b"l\xe9.txt")
    lines.write_text(f"{LINE}\n{OTHER}\n")
    done = simdedup("fingerprint", str(lines))
    assert done.returncode == 0, done.stderr
    assert [row.split("\t")[1] for row in done.stdout.decode("utf-8").splitlines()] == [
        f"{tmp_path}/l\\\\xe9.txt:1",  # TSV escapes the backslash
        f"{tmp_path}/l\\\\xe9.txt:2",
    ]


@linux_only
def test_a_problem_in_a_file_with_such_a_name_is_named_escaped_on_stderr(tmp_path: Path) -> None:
    f = tmp_path / os.fsdecode(b"bad\xff.txt")
    f.write_bytes(b"caf\xe9 au lait\n")
    done = simdedup("scan", str(f), "-q")
    assert done.returncode == 3
    assert f"{tmp_path}/bad\\xff.txt:1: error: invalid UTF-8".encode() in done.stderr


# ---------------------------------------------------------------- a full disk


@linux_only
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    ("args", "saved", "count"),
    [
        (["scan", "{lines}"], False, 3000),  # the groups listed on stdout, before the save
        (["scan", "{lines}", "-q", "--report", "/dev/full"], False, 3000),
        (["filter", "{lines}", "-q"], False, 3000),
        (["fingerprint", "{lines}"], False, 3000),
        # Enough batches that the run's generators, left in a cycle by the error, were
        # collected (and so closed) in the decide thread: "cannot join current thread".
        (["filter", "{lines}", "-q", "-j1"], False, 20_000),
    ],
)
def test_an_output_on_a_full_disk_is_one_error_and_exit_2(
    tmp_path: Path, args: list[str], saved: bool, count: int
) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"{LINE} {i}\n" for i in range(count)))
    index = tmp_path / "seen.sdx"
    with_index = ["--index", str(index)] if args[0] != "fingerprint" else []
    with open("/dev/full", "wb") as full:
        done = simdedup(*(a.format(lines=lines) for a in args), *with_index, stdout=full)
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.decode().strip().splitlines()[-1]
        == "Error: stopped by an I/O error: No space left on device"
    )
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr
    assert index.exists() == saved  # a run that failed before the end saves nothing


@linux_only
@pytest.mark.parametrize("command", ["scan", "filter"])
@pytest.mark.parametrize("option", ["--duplicates", "--report"])
def test_an_output_whose_reader_quit_is_named_in_an_error_not_a_quiet_141(
    tmp_path: Path, command: str, option: str
) -> None:
    # A trial: `--duplicates >(head -c 10)` ended the run with exit 141 and no word, the
    # listing, the summary and the other outputs cut short. Exit 141 is for stdout's reader.
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"{LINE} {i % 500}\n" for i in range(20_000)))
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has quit before the first write
    try:
        done = subprocess.run(
            [sys.executable, "-m", "simdedup", command, str(lines), "-q", option, f"/dev/fd/{write_end}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(write_end,),
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"Error: stopped: {option} /dev/fd/{write_end}: cannot write more: its reader quit (broken pipe)\n"
    )


@pytest.mark.parametrize("option", ["--report", "--summary-json", "--duplicates", "--unique", "--index"])
def test_an_empty_path_is_refused_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    # A cron job's unset variable: `--index ""` said "cannot use index .: not a regular
    # file", and `--summary-json ""` left a temporary file in the directory above (a trial).
    work = tmp_path / "work"
    work.mkdir()
    (work / "lines.txt").write_text(f"{LINE}\n")
    monkeypatch.chdir(work)
    result = run("scan", "lines.txt", option, "")
    assert result.exit_code == 2 and f"Invalid value for '{option}': an empty path" in result.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["lines.txt", "work"]


@linux_only
def test_a_log_of_stderr_reached_through_a_link_in_a_folder_read_is_no_document(tmp_path: Path) -> None:
    # `scan S 2>> out/err.txt` with a link S/lnk -> ../out read the log, the run's own
    # messages among it, as a document (a trial); one inside S itself is refused.
    (tmp_path / "out").mkdir()
    folder = tmp_path / "S"
    folder.mkdir()
    (folder / "a.txt").write_text(f"{LINE}\n")
    (folder / "0broken").symlink_to(tmp_path / "nowhere")  # a message before the log is reached
    (folder / "lnk").symlink_to(tmp_path / "out")
    log = tmp_path / "out" / "err.txt"
    with open(log, "ab") as err:
        done = subprocess.run(
            [sys.executable, "-m", "simdedup", "scan", str(folder), "--report", "-"],
            stdout=subprocess.PIPE,
            stderr=err,
            timeout=120,
        )
    ids = [json.loads(line)["id"] for line in done.stdout.decode().splitlines()]
    assert ids == [f"{folder}/a.txt"] and "a file this run writes (reached through a link)" in log.read_text()
    # index query too, which did not set them aside at all (a review)
    seen = tmp_path / "seen.sdx"
    assert run("scan", str(folder / "a.txt"), "-q", "--index", str(seen)).exit_code == 0
    with open(log, "ab") as err:
        queried = subprocess.run(
            [sys.executable, "-m", "simdedup", "index", "query", str(seen), str(folder)],
            stdout=subprocess.PIPE,
            stderr=err,
            timeout=120,
        )
    assert [line.split("\t")[0] for line in queried.stdout.decode().splitlines()[1:]] == [f"{folder}/a.txt"]


@linux_only
def test_a_run_killed_before_its_end_leaves_no_temporary_summary_file(tmp_path: Path) -> None:
    # --summary-json's temporary file, made as the run started, stayed beside it after
    # every kill -9: 13 kills, 13 files (a trial). Now made by the last write.
    summary = tmp_path / "out" / "sum.json"
    summary.parent.mkdir()
    summary.write_text("{}")  # yesterday's, kept
    command = [sys.executable, "-m", "simdedup", "filter", "-q", "--summary-json", str(summary)]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as running:
        assert running.stdin is not None and running.stdout is not None
        running.stdin.write(f"{LINE}\n".encode())
        running.stdin.flush()
        assert running.stdout.readline() == f"{LINE}\n".encode()  # deciding: its outputs are open
        running.kill()
    assert sorted(p.name for p in summary.parent.iterdir()) == ["sum.json"] and summary.read_text() == "{}"


@linux_only
@pytest.mark.parametrize("option", ["--summary-json", "--report"])
def test_an_output_to_a_pipe_given_as_dev_fd_is_written_to_the_pipe(tmp_path: Path, option: str) -> None:
    # bash's `--summary-json >(jq .)`: the path /dev/fd/N of a pipe, whose real path
    # (pipe:[N]) names no file. --summary-json, written beside and renamed over a file,
    # was refused (exit 2: "No such file or directory"), where --report worked (a trial).
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{LINE}\n{OTHER}\n")
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "simdedup", "scan", str(lines), "-q", option, f"/dev/fd/{write_end}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(write_end,),
            timeout=120,
        )
        os.close(write_end)
        written = os.read(read_end, 1 << 20).decode()
    finally:
        os.close(read_end)
        with contextlib.suppress(OSError):
            os.close(write_end)
    assert (done.returncode, done.stderr) == (0, b"")
    if option == "--summary-json":
        assert json.loads(written)["documents"] == 3
    else:
        assert [json.loads(line)["status"] for line in written.splitlines()] == [
            "unique",
            "duplicate",
            "unique",
        ]


@linux_only
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_under_one_of_several_outputs_is_named(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"{LINE} {i % 500}\n" for i in range(20_000)))
    args = ["--report", str(tmp_path / "r.jsonl"), "--duplicates", "/dev/full", "-q"]
    done = simdedup("filter", str(lines), *args, stdout=subprocess.DEVNULL)
    assert done.returncode == 2
    assert (
        done.stderr.decode()
        == "Error: stopped: --duplicates /dev/full: cannot write more: No space left on device\n"
    )


#: An address-space limit that start-up and a small file fit in (~300 MB on the machine
#: that chose it) and a 40 MB line does not (~600 MB: it is held whole, and split).
_MEMORY_LIMIT = 450 << 20


@linux_only
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_running_out_of_memory_is_one_error_and_exit_2_and_the_index_is_not_saved(
    tmp_path: Path, jobs: str
) -> None:
    # A trial's 150 MB line under `ulimit -v` gave a traceback and exit 1, the status of
    # duplicates found under --fail-on-duplicates.
    import resource

    small, long = tmp_path / "small.txt", tmp_path / "long.txt"
    small.write_text(f"{LINE}\n")
    long.write_text(f"{LINE}\n" + "word " * 8_000_000 + "\n")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT, _MEMORY_LIMIT))

    def scan(path: Path) -> subprocess.CompletedProcess[bytes]:
        index = tmp_path / f"{path.stem}.sdx"
        command = [
            sys.executable,
            "-m",
            "simdedup",
            "scan",
            "-q",
            "-j",
            jobs,
            str(path),
            "--index",
            str(index),
        ]
        return subprocess.run(command, capture_output=True, timeout=120, check=False, preexec_fn=limited)

    assert scan(small).returncode == 0  # the limit leaves room for a run
    done = scan(long)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().startswith("Error: out of memory: the system gives this run no more")
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert not (tmp_path / "long.sdx").exists()


_NO_THREAD = """
import concurrent.futures
def submit(*args, **kwargs):
    raise RuntimeError("can't start new thread")
concurrent.futures.ThreadPoolExecutor.submit = submit
"""
_NO_LIBRARY = """
class Finder:
    def find_spec(self, name, path, target=None):
        if name == "simdedup.cli":
            raise ImportError("libopenblas.so: failed to map segment from shared object")
sys.meta_path.insert(0, Finder())
"""


@pytest.mark.parametrize("failing", [_NO_THREAD, _NO_LIBRARY], ids=["thread", "library"])
def test_no_memory_for_a_thread_or_a_library_is_out_of_memory_not_a_traceback(
    tmp_path: Path, failing: str
) -> None:
    # A trial under `ulimit -v`: the decide thread, with an --index loaded, and numpy's
    # library as it loads, failed with tracebacks and exit 1, which --fail-on-duplicates
    # means "duplicates found".
    f = tmp_path / "f.txt"
    f.write_text(f"{LINE}\n")
    code = f"import runpy, sys\n{failing}\nsys.argv = ['simdedup', 'filter', {str(f)!r}]\n"
    code += "runpy.run_module('simdedup', run_name='__main__')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    said = (
        "Error: out of memory: the system gives"
        if failing == _NO_THREAD
        else "Error: cannot load a library: "
    )
    assert done.stderr.decode().startswith(said), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    if failing == _NO_LIBRARY:  # out of memory, or a file system mounted noexec: both said (a review)
        assert "failed to map segment" in done.stderr.decode() and "noexec" in done.stderr.decode()


@linux_only
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["scan", "filter"])
def test_messages_that_stderr_cannot_take_are_dropped_and_the_run_goes_on(
    tmp_path: Path, command: str
) -> None:
    # A log on a full disk: the first warning's I/O error ended the run with exit 1, its
    # --report empty; a run that went well exited 1 at its summary (a trial).
    lines = tmp_path / "lines.txt"
    lines.write_bytes(f"{LINE}\ncaf\xe9 {OTHER}\n{LINE}\n".encode("latin-1"))  # line 2: not UTF-8
    report, index = tmp_path / "r.jsonl", tmp_path / "seen.sdx"
    args = [
        sys.executable,
        "-m",
        "simdedup",
        command,
        str(lines),
        "--report",
        str(report),
        "--index",
        str(index),
    ]
    with open("/dev/full", "wb") as full:
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=full, timeout=120, check=False)
        again = subprocess.run(args, stdout=subprocess.PIPE, stderr=full, timeout=120, check=False)
    assert done.returncode == 3  # an input line was not UTF-8: said where nothing is said
    assert len(report.read_text().splitlines()) == 3
    assert again.returncode == 3 and index.exists()


def test_a_reader_of_stderr_that_went_away_stops_the_run_as_one_of_stdout_does(tmp_path: Path) -> None:
    # `simdedup scan ... 2>&1 | head -1`: the warnings' broken pipe is not a message to
    # drop, or scan would read the whole input before it found the pipe gone.
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"".join(b"caf\xe9 %d\n" % i for i in range(20_000)))  # a warning a line
    proc = subprocess.Popen(
        [sys.executable, "-m", "simdedup", "scan", str(lines), "-j1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    proc.stderr.readline()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141


@linux_only
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["scan", "--help"]])
def test_help_and_version_to_a_full_disk_are_an_error_not_a_traceback(args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = simdedup(*args, stdout=full)
    assert done.returncode == 2
    assert done.stderr.decode() == "Error: stopped by an I/O error: No space left on device\n"


def test_calibrate_names_a_missing_file_without_a_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["calibrate", str(tmp_path / "nosuch.jsonl")])
    assert result.exit_code == 2 and "does not exist" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# ---------------------------------------------------------------- SIGTERM


def test_ctrl_c_while_the_modules_load_exits_130_without_a_traceback() -> None:
    # The first 0.05-0.25 s of a run printed numpy's or re's import frames (a trial). The
    # interrupt is raised here where the command's modules load, as Ctrl-C would be.
    code = (
        "import sys, runpy\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'simdedup.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "sys.argv = ['simdedup', '--version']\n"
        "runpy.run_module('simdedup', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


def test_the_process_ends_as_the_interpreter_ends_it_less_the_teardown(tmp_path: Path) -> None:
    # The command ends with os._exit (__main__._exit): what the interpreter's ending does
    # outside the process must still happen, in its order: a thread that is not a daemon
    # is waited for, then the atexit functions run, then stdout is flushed; the status is
    # the command's. The interpreter's teardown would have run the __del__ below.
    late = tmp_path / "late"
    code = (
        "import atexit, sys, runpy, threading, time\n"
        "class Teardown:\n"
        "    def __del__(self): print('torn down', file=sys.stderr)\n"
        "kept = Teardown()\n"
        "def slow():\n"
        "    time.sleep(0.3)\n"
        f"    open({str(late)!r}, 'w').write('written')\n"
        "threading.Thread(target=slow).start()\n"
        f"atexit.register(lambda: sys.stdout.write('atexit ' + open({str(late)!r}).read()))\n"
        "sys.stdout.write('unflushed ')\n"
        "sys.argv = sys.argv[1:]\n"
        "runpy.run_module('simdedup', run_name='__main__')\n"
    )
    missing = str(tmp_path / "missing.txt")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout kept to the end
    command = [sys.executable, "-c", code, "simdedup", "fingerprint", missing]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert (done.returncode, done.stdout) == (3, "unflushed atexit written")
    assert done.stderr.endswith("no such file or directory\n"), done.stderr  # no "torn down"


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a script's background job (`cmd &`) has it


@linux_only
@pytest.mark.parametrize(("jobs", "ignored"), [("1", False), ("2", False), ("1", True), ("2", True)])
def test_sigterm_to_the_process_group_stops_filter_as_ctrl_c_does(
    tmp_path: Path, jobs: str, ignored: bool
) -> None:
    # `timeout` and service managers send SIGTERM to the whole group: filter used to die
    # with lines written to stdout but --index not saved, so the next night's run wrote
    # them again. Now it ends as after Ctrl-C: what was written is in the index. It was
    # passed on as SIGINT, which a background job of a script ignores: SIGTERM was too.
    index, out = tmp_path / "seen.sdx", tmp_path / "out.txt"
    with (
        out.open("wb") as stdout,
        subprocess.Popen(
            [sys.executable, "-m", "simdedup", "filter", "-q", "-j", jobs, "--index", str(index)],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_sigint_ignored if ignored else None,
        ) as proc,
    ):
        assert proc.stdin is not None
        proc.stdin.write("".join(f"{i} {LINE} {i * 7}\n" for i in range(2000)).encode())
        proc.stdin.flush()  # and the pipe stays open: the run waits for more
        deadline = time.monotonic() + 60
        while not out.stat().st_size:
            assert time.monotonic() < deadline, "nothing written"
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert b"Traceback" not in stderr
    written = len(out.read_bytes().splitlines())
    info = simdedup("index", "info", str(index), "--json")
    assert json.loads(info.stdout)["fingerprints"] == written > 0


def _chinese_lines(count: int) -> str:
    """`count` lines of 3-6 sentences of examples/docs/zh each (~580 bytes a line)."""
    folder = Path(__file__).parents[1] / "examples" / "docs" / "zh"
    text = "".join(path.read_text(encoding="utf-8") for path in sorted(folder.iterdir()))
    sentences = [s for s in text.replace("\n", "").split("。") if s.strip()]
    rng = random.Random(5)
    return "".join("，".join(rng.choices(sentences, k=rng.randint(3, 6))) + "。\n" for _ in range(count))


@linux_only
@pytest.mark.parametrize("ignored", [False, True])
def test_sigterm_stops_fingerprint_with_workers_at_the_next_chunk(tmp_path: Path, ignored: bool) -> None:
    # In a script's background job (SIGINT ignored) `fingerprint -j 2` wrote on until
    # the chunks its workers held were back, 16 of them (a trial), where in the
    # foreground it stopped once the next one was written. A chunk is ~1,800 lines here.
    source, out = tmp_path / "zh.txt", tmp_path / "out.tsv"
    total = 60_000
    source.write_text(_chinese_lines(total), encoding="utf-8")
    with (
        out.open("wb") as stdout,
        subprocess.Popen(
            [sys.executable, "-m", "simdedup", "fingerprint", "-j", "2", str(source)],
            stdout=stdout,
            stderr=subprocess.PIPE,
            preexec_fn=_sigint_ignored if ignored else None,
        ) as proc,
    ):
        deadline = time.monotonic() + 60
        while (before := out.read_bytes().count(b"\n")) < 4_000:
            assert time.monotonic() < deadline and proc.poll() is None, "not 4,000 lines written"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    after = out.read_bytes().count(b"\n")
    assert out.read_bytes().endswith(b"\n")  # whole lines
    assert after - before < 4 * 1_800 and after < total, (before, after)


def _on_its_terminal() -> None:
    fcntl.ioctl(2, termios.TIOCSCTTY, 0)  # stderr's pty, as a login shell's jobs have theirs


def _on_its_terminal_ignoring_hang_ups() -> None:
    _on_its_terminal()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # `trap '' HUP`, or a shell's disowned job


def _write_quietly(stream: IO[bytes], data: bytes) -> None:
    """data to a process's stdin, which may end before it has read it all."""
    with contextlib.suppress(BrokenPipeError):
        stream.write(data)
        stream.flush()


@linux_only
@pytest.mark.parametrize(
    ("jobs", "stdout_too", "ignored"),
    [("1", False, False), ("2", False, False), ("1", True, False), ("1", False, True)],
)
def test_a_terminal_that_hangs_up_stops_filter_as_ctrl_c_does(
    tmp_path: Path, jobs: str, stdout_too: bool, ignored: bool
) -> None:
    # A closed terminal or a dropped ssh session (SIGHUP) killed the run: exit 129, no
    # summary, --index not saved, so the next night wrote the same lines again. It now
    # ends as after SIGTERM, though writes to its terminal fail (EIO) from then on.
    index, out, report = tmp_path / "seen.sdx", tmp_path / "out.txt", tmp_path / "report.jsonl"
    main_fd, terminal = pty.openpty()
    args = ["filter", "-j", jobs, "--index", str(index), "--report", str(report)]
    with (
        out.open("wb") as stdout,
        subprocess.Popen(
            [sys.executable, "-m", "simdedup", *args],
            stdin=subprocess.PIPE,
            stdout=terminal if stdout_too else stdout,
            stderr=terminal,
            start_new_session=True,
            preexec_fn=_on_its_terminal_ignoring_hang_ups if ignored else _on_its_terminal,
        ) as proc,
    ):
        os.close(terminal)
        os.set_blocking(main_fd, False)
        assert proc.stdin is not None
        # Written beside the reading of the terminal: with stdout on the terminal, the run
        # stops reading its input while the terminal is full, and a write of all of it
        # here, before reading the terminal, waited on the run forever (once in 4 runs
        # under load). The pipe stays open: the run waits for more.
        lines = "".join(f"{i} {LINE} {i * 7}\n" for i in range(3000)).encode()
        writer = threading.Thread(target=_write_quietly, args=(proc.stdin, lines))
        writer.start()
        deadline, shown = time.monotonic() + 60, b""
        while not (out.stat().st_size or LINE.encode() in shown):
            assert time.monotonic() < deadline, "nothing written"
            with contextlib.suppress(OSError):
                shown += os.read(main_fd, 1 << 16)  # the progress counter, or the lines
            time.sleep(0.05)
        time.sleep(0.5)
        os.close(main_fd)  # the terminal hangs up: SIGHUP to its session's leader
        writer.join(timeout=60)
        if ignored:  # the run goes on to the end of its input, its messages dropped, not
            time.sleep(0.5)  # an I/O error at the summary (exit 1 where the run went well)
            more = "".join(f"{i} {OTHER} {i * 7}\n" for i in range(3000)).encode()
            proc.stdin.write(b"not \xff UTF-8\n" + more)  # an error said over the progress counter
            proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == (3 if ignored else 129)
    written = len(out.read_bytes().splitlines())
    if stdout_too:  # written to the terminal, which is gone
        written = sum(r["status"] == "unique" for r in map(json.loads, report.read_text().splitlines()))
    records = [json.loads(line) for line in report.read_text().splitlines()]
    unique = sum(r["status"] == "unique" for r in records)
    info = simdedup("index", "info", str(index), "--json")
    assert json.loads(info.stdout)["fingerprints"] == written == unique > 0


@linux_only
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_document_is_written_leaves_it_in_every_output(
    tmp_path: Path, signum: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Raised in the middle of writing a document, the interrupt left it out of the
    # outputs that had not written it yet, though the index kept it: the next run took
    # it for seen, and it was lost. It now takes effect once the document is written.
    lines, report, seen = tmp_path / "lines.txt", tmp_path / "report.jsonl", tmp_path / "seen.sdx"
    lines.write_text("".join(f"{i} {LINE} {i * 7}\n" for i in range(3000)))
    write = report_module.ReportWriter.write

    def interrupted_write(self: report_module.ReportWriter, decision: Any) -> None:
        if decision.doc.id.endswith(":1500"):
            os.kill(os.getpid(), signum)  # its handler runs before the next line
        write(self, decision)

    monkeypatch.setattr(report_module.ReportWriter, "write", interrupted_write)
    result = run("filter", str(lines), "-j1", "--index", str(seen), "--report", str(report))
    assert result.exit_code == (143 if signum == signal.SIGTERM else 130)
    written = result.stdout.splitlines()  # the unique documents
    records = [json.loads(line) for line in report.read_text().splitlines()]  # every one
    stored = json.loads(run("index", "info", str(seen), "--json").stdout)["fingerprints"]
    assert len(written) == sum(r["status"] == "unique" for r in records) == stored
    assert [r["id"] for r in records] == [f"{lines}:{i + 1}" for i in range(len(records))]
    assert len(records) > 1500


@linux_only
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_while_the_read_batches_are_written_saves_nothing(
    tmp_path: Path, signum: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The batches read when the first signal came are decided and written; a second one
    # cut that short, and --index was saved with documents no output had (trial).
    lines, seen = tmp_path / "lines.txt", tmp_path / "seen.sdx"
    lines.write_text("".join(f"{i} {LINE} {i * 7}\n" for i in range(3000)))
    assert run("filter", "-q", "--index", str(seen), input=f"{OTHER}\n").exit_code == 0
    stored = seen.read_bytes()
    write = report_module.ReportWriter.write

    def interrupted_write(self: report_module.ReportWriter, decision: Any) -> None:
        if decision.doc.id.endswith((":1500", ":1600")):
            os.kill(os.getpid(), signum)  # its handler runs before the next line
        write(self, decision)

    monkeypatch.setattr(report_module.ReportWriter, "write", interrupted_write)
    report = tmp_path / "report.jsonl"
    result = run("filter", str(lines), "-j1", "--index", str(seen), "--report", str(report))
    assert result.exit_code == (143 if signum == signal.SIGTERM else 130)
    assert "interrupted again: stopped at once" in result.stderr
    assert seen.read_bytes() == stored
    assert len(report.read_text().splitlines()) == 1600  # every record whole, up to the second


@linux_only
def test_two_signals_while_a_batch_is_awaited_save_no_index_without_its_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both came while the run waited for a batch's decisions, the second while the batches
    # read were handed on after the first: the run took them for one, and saved an --index
    # holding a batch or two that no output had, which the next night dropped (a trial:
    # 15 runs in 20 of a double Ctrl-C).
    lines, seen = tmp_path / "lines.txt", tmp_path / "seen.sdx"
    lines.write_text("".join(f"{i} {LINE} {i * 7}\n" for i in range(3 * 4096 + 100)))
    decide_many = verify_module.VerifyingDeduplicator.decide_many
    calls = itertools.count(1)

    def slow_second_batch(self: Any, *args: Any) -> Any:
        if next(calls) == 2:
            time.sleep(0.5)  # the main thread waits for this batch by then
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
        return decide_many(self, *args)

    monkeypatch.setattr(verify_module.VerifyingDeduplicator, "decide_many", slow_second_batch)
    report = tmp_path / "report.jsonl"
    result = run("filter", str(lines), "-j1", "--index", str(seen), "--report", str(report))
    assert result.exit_code == 130
    assert "interrupted again: stopped at once" in result.stderr
    assert not seen.exists()
    assert len(report.read_text().splitlines()) == 4096  # the first batch, whole


# ---------------------------------------------------------------- outputs


# stdout as Python makes it under PYTHONUNBUFFERED: a raw file and a text layer writing
# through, here a raw file that counts its writes into the file COUNTS_FD.
COUNTED_RAW_STDOUT = """
import io, os, runpy, sys
class Counted(io.FileIO):
    def write(self, data):
        os.write(int(os.environ["COUNTS_FD"]), b"w")
        return super().write(data)
sys.stdout = io.TextIOWrapper(Counted(1, "w", closefd=False), write_through=True)
sys.argv = sys.argv[1:]
runpy.run_module("simdedup", run_name="__main__")
"""


@pytest.mark.parametrize(
    "args",
    [("scan",), ("scan", "--format", "jsonl"), ("filter",), ("fingerprint",), ("fingerprint", "-j", "2")],
)
def test_unbuffered_stdout_gives_the_same_output_and_writes_it_in_chunks(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # Under PYTHONUNBUFFERED (container images often set it) stdout is a raw file, and
    # each record was one system call: 33,534 for `scan` of 200,000 lines, ~6% of its
    # CPU into a file. Now held and written in chunks, as a buffered stdout is: nothing lost at the
    # end, nothing out of order.
    lines = tmp_path / "lines.txt"
    rng = random.Random(5)
    words = LINE.split() + OTHER.split()
    text = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(3000)]
    lines.write_text("\n".join(text + text[:500]) + "\n")
    read, write = os.pipe()
    with os.fdopen(read, "rb") as counts:
        raw = subprocess.run(
            [sys.executable, "-c", COUNTED_RAW_STDOUT, "simdedup", *args, str(lines), "-q"],
            capture_output=True,
            pass_fds=(write,),
            env={**os.environ, "COUNTS_FD": str(write)},
            timeout=120,
        )
        os.close(write)
        writes = len(counts.read())
    assert raw.returncode == 0, raw.stderr
    buffered = simdedup(*args, str(lines), "-q")
    assert raw.stdout == buffered.stdout and len(raw.stdout) > 20_000
    assert 0 < writes <= len(raw.stdout) // 8192 + 4, writes


class _Stopped(Exception):
    pass


def _stop(signum: int, frame: Any) -> None:
    raise _Stopped


@linux_only
@pytest.mark.parametrize("case", ["a batch's lines", "a record larger than the buffer"])
def test_a_signal_that_cuts_a_write_to_stdout_short_writes_each_byte_once(case: str) -> None:
    # Under PYTHONUNBUFFERED, stdout's bytes go out through _WholeWrites, flushed once a
    # batch is written. A signal that stopped that write to a full pipe part way raised
    # its KeyboardInterrupt as the write returned, and the count of bytes it wrote was
    # lost: they went out again (a batch of `filter`'s lines twice after SIGTERM, in 8
    # of 120 traced runs of benchmarks/interrupts.py). A record larger than the buffer
    # goes out whole too (a review found one cut in two by a first fix, given to the
    # buffer in pieces). Here the pipe is partly full, a write blocks with part of what
    # it writes taken, and a signal lands.
    read, write = os.pipe()
    room = fcntl.fcntl(write, 1032)  # F_GETPIPE_SZ
    if case == "a batch's lines":
        before, data = b"-" * (room // 2), b"".join(b"%07d\n" % n for n in range(3 * room // 32))
    else:
        before, data = b"-" * (room - 8192), b"b" * (cli_module._WholeWrites.BUFFER + 30_000) + b"\n"
    os.write(write, before)
    got: list[bytes] = []

    def reader() -> None:  # once a write waits with part of it taken: the signal, then read all
        full, deadline = room.to_bytes(4, sys.byteorder), time.monotonic() + 30
        while fcntl.ioctl(read, termios.FIONREAD, b"\0\0\0\0") != full and time.monotonic() < deadline:
            time.sleep(0.001)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)
        while chunk := os.read(read, 1 << 16):
            got.append(chunk)

    previous = signal.signal(signal.SIGUSR1, _stop)
    thread = threading.Thread(target=reader)
    try:
        with io.FileIO(write, "wb", closefd=True) as raw:
            whole = cli_module._WholeWrites(raw)
            thread.start()
            with pytest.raises(_Stopped):
                whole.write(data)
                whole.flush()
            whole.write(b"after\n")
            whole.flush()
    finally:
        signal.signal(signal.SIGUSR1, previous)
        thread.join(timeout=30)
        os.close(read)
    assert b"".join(got) == before + data + b"after\n"


def test_an_output_that_is_the_index_or_another_output_is_refused(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    seen = tmp_path / "seen.sdx"
    run("scan", str(lines), "-q", "--index", str(seen))
    stored = seen.read_bytes()
    result = CliRunner().invoke(main, ["scan", str(lines), "--index", str(seen), "--unique", str(seen)])
    assert result.exit_code == 2 and "--unique and --index are the same file" in result.output
    assert seen.read_bytes() == stored
    both = tmp_path / "both.jsonl"
    result = CliRunner().invoke(main, ["scan", str(lines), "--duplicates", str(both), "--report", str(both)])
    assert result.exit_code == 2 and "--report and --duplicates are the same file" in result.output


@pytest.mark.parametrize("output", ["--unique", "--duplicates", "--report", "--summary-json"])
def test_an_output_that_is_the_index_lock_file_is_refused(tmp_path: Path, output: str) -> None:
    # Written over or renamed over (--summary-json), the lock file no longer locks the index.
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    seen, link = tmp_path / "seen.sdx", tmp_path / "link.sdx"
    link.symlink_to(seen.name)  # locked beside its target: seen.sdx.lock
    for index in (seen, link):
        result = CliRunner().invoke(main, ["scan", str(lines), "--index", str(index), output, f"{seen}.lock"])
        assert result.exit_code == 2, result.output
        assert f"{output} and --index's lock file are the same file" in result.output
    assert not seen.exists()


@linux_only
def test_an_output_named_by_stdout_or_stderr_is_stdout_or_refused(tmp_path: Path) -> None:
    # A trial: --unique /dev/stdout into a pipe mixed the kept lines into the group
    # listing (exit 0), where into a file it was refused; --report /dev/stderr 2> e.txt
    # had the messages write over the report.
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{LINE}\n{OTHER}\n")
    piped = simdedup("scan", "-q", str(lines), "--unique", "/dev/stdout")
    assert (piped.returncode, piped.stdout) == (0, f"{LINE}\n{OTHER}\n".encode()), piped.stderr
    with open(tmp_path / "out.txt", "wb") as stdout:
        into_file = simdedup("scan", "-q", str(lines), "--unique", "/dev/stdout", stdout=stdout)
    assert into_file.returncode == 0 and (tmp_path / "out.txt").read_text() == f"{LINE}\n{OTHER}\n"
    refused = simdedup("filter", "-q", str(lines), "--duplicates", "/dev/fd/1")
    assert (
        refused.returncode == 2
        and b"--duplicates and filter output cannot both write to stdout" in refused.stderr
    )
    with open(tmp_path / "e.txt", "wb") as stderr:
        command = [sys.executable, "-m", "simdedup", "filter", str(lines), "--report", "/dev/stderr"]
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=stderr, timeout=120, check=False)
    said = (tmp_path / "e.txt").read_text()
    assert result.returncode == 2 and "--report /dev/stderr is the file stderr writes to" in said
    piped = simdedup("filter", str(lines), "--report", "/dev/stderr")  # a pipe takes both
    assert piped.returncode == 0 and piped.stderr.count(b'"status"') == 3


@pytest.mark.parametrize("command", ["scan", "filter"])
def test_outputs_that_clash_are_refused_before_any_output_is_emptied(tmp_path: Path, command: str) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    first, second = tmp_path / "first.tsv", tmp_path / "second.jsonl"
    first.write_text("kept from yesterday\n")
    second.write_text("kept too\n")
    args = [
        command,
        str(lines),
        "--duplicates",
        str(first),
        "--report",
        str(second),
        "--summary-json",
        str(second),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "--summary-json and --report are the same file" in result.output
    assert first.read_text() == "kept from yesterday\n" and second.read_text() == "kept too\n"


@pytest.mark.parametrize("command", ["scan", "filter"])
@pytest.mark.parametrize("last", ["--report", "--summary-json"])
def test_an_output_that_cannot_be_written_is_refused_before_any_output_is_emptied(
    tmp_path: Path, command: str, last: str
) -> None:
    # A typo in one cron path emptied the outputs opened before it (a trial).
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    kept, made = tmp_path / "kept.tsv", tmp_path / "made.tsv"
    kept.write_text("kept from yesterday\n")
    args = [command, str(lines), "--duplicates", str(kept), last, str(tmp_path / "no" / "such.json")]
    if command == "scan":
        args += ["--unique", str(made)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and f"cannot write {last}: No such file or directory" in result.output
    assert kept.read_text() == "kept from yesterday\n"
    assert not made.exists()  # not left behind, empty


def test_an_output_inside_an_input_directory_is_refused_unless_the_walk_leaves_it_out(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "en").mkdir(parents=True)
    (corpus / "en" / "a.txt").write_text(f"{LINE}\n")
    (corpus / "en" / "b.txt").write_text(f"{OTHER}\n")
    for output in (corpus / "en" / "b.txt", corpus / "report.jsonl"):  # a document, and a new file
        for option in ("--report", "--unique", "--duplicates", "--summary-json"):
            result = CliRunner().invoke(main, ["scan", str(corpus), option, str(output)])
            assert result.exit_code == 2
            assert f"Error: {option} {output} is inside the input directory {corpus}" in result.output
    assert (corpus / "en" / "b.txt").read_text() == f"{OTHER}\n" and not (corpus / "report.jsonl").exists()
    # --glob and --exclude leave it out of the walk: allowed, and not read as a document
    for leave_out in (["--glob", "*.txt"], ["--exclude", "*.jsonl"]):
        result = run("scan", str(corpus), "--report", str(corpus / "report.jsonl"), *leave_out)
        assert result.exit_code == 0 and "2 documents" in result.stderr
    result = CliRunner().invoke(
        main, ["scan", str(corpus), "--report", str(corpus / "en" / "r.tsv"), "--exclude", "en"]
    )
    assert result.exit_code == 0


@linux_only
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_outputs_reached_through_a_link_in_an_input_directory_are_not_read_back(
    tmp_path: Path, jobs: str
) -> None:
    # A trial: with corpus/link -> ../out, each output was read as a document of its own
    # run (--unique listed itself, filter's stdout file came out in it, the lock file was
    # an empty document): refused by path, the walk still reached them through the link.
    outputs = ["--report", "r.jsonl", "--unique", "u.txt", "--summary-json", "s.json", "--index", "i.sdx"]
    for command in ("scan", "filter", "fingerprint"):
        corpus, out = tmp_path / command / "corpus", tmp_path / command / "out"
        corpus.mkdir(parents=True)
        out.mkdir()
        (corpus / "a.txt").write_text(f"{LINE}\n")
        (corpus / "link").symlink_to("../out")
        args = [a if a.startswith("-") else str(out / a) for a in outputs] if command == "scan" else []
        with open(out / "stdout.txt", "wb") as stdout:
            result = simdedup(command, str(corpus), "-j", jobs, *args, stdout=stdout)
        assert result.returncode == 0, result.stderr
        assert b"1 document: 1 unique" in result.stderr or command == "fingerprint"
        read = "".join(
            f.read_text() for f in (out / "stdout.txt", out / "r.jsonl", out / "u.txt") if f.exists()
        )
        assert "link" not in read and "a.txt" in read
        assert b"link/stdout.txt: warning: a file this run writes" in result.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_crlf_lines_come_out_of_filter_and_unique_as_they_came(tmp_path: Path, jobs: str) -> None:
    data = f"{LINE}\r\n{OTHER}\r\n{LINE}\r\nlast line without an end".encode()
    f = tmp_path / "crlf.txt"
    f.write_bytes(data)
    kept = f"{LINE}\r\n{OTHER}\r\nlast line without an end\n".encode()
    assert simdedup("filter", str(f), "-q", "-j", jobs).stdout == kept
    unique = tmp_path / "unique.txt"
    result = run("scan", str(f), "-q", "-j", jobs, "--unique", str(unique))
    assert unique.read_bytes() == kept
    assert result.stdout.splitlines()[2].split("\t")[2] == f"{f}:3"  # ids and texts have no CR


def test_csv_quotes_a_field_with_a_lone_carriage_return(tmp_path: Path) -> None:
    f = tmp_path / "ids.jsonl"
    ids = ["cr\rret", "nl\nnew", 'q"uote', "tab\there"]
    f.write_text("".join(json.dumps({"id": i, "text": LINE}) + "\n" for i in ids))
    result = run("scan", str(f), "--format", "csv", "-q")
    rows = list(csv.reader(io.StringIO(result.stdout, newline="")))
    assert [r[2] for r in rows[1:]] == ids


def test_fingerprint_tsv_escapes_ids_as_scan_does(tmp_path: Path) -> None:
    f = tmp_path / "ids.jsonl"
    ids = ["tab\there", "nl\nnew", "back\\slash"]
    f.write_text("".join(json.dumps({"id": i, "text": f"{LINE} {n}"}) + "\n" for n, i in enumerate(ids)))
    lines = run("fingerprint", str(f)).stdout.split("\n")[:-1]
    assert [line.split("\t")[1] for line in lines] == ["tab\\there", "nl\\nnew", "back\\\\slash"]


def test_a_narrow_terminal_table_wraps_long_ids_instead_of_cutting_them(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder-with-a-rather-long-name"
    folder.mkdir()
    for name in ("harbour-walk-in-the-morning.txt", "harbour-walk-in-the-morning-copy.txt"):
        (folder / name).write_text(LINE)
    result = run("scan", str(folder), "--format", "table", "-q", env={"COLUMNS": "60"})
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 60
    assert "harbour-walk-in-the-morning-copy.txt" in "".join(result.stdout.split())


@linux_only
def test_ids_and_names_are_shown_as_they_are_and_cannot_drive_the_terminal(tmp_path: Path) -> None:
    # A trial: "[/x]" in an id raised rich's MarkupError (a traceback, exit 1, no index
    # saved); "[red]", ":smile:", CR and ESC sequences were rendered, not shown.
    folder = tmp_path / "crawl"
    folder.mkdir()
    # Another: a newline and a backslash and an n were shown alike, and U+202E reversed
    # what came after it.
    names = [
        "[red]z.txt",
        "d[/x].txt",
        ":smile:.txt",
        "c\x1b[2Jr\rx.txt",
        "a\nb.txt",
        "a\\nb.txt",
        "e\u202ef.txt",
        "g\u061ch.txt",  # the Arabic letter mark (a review)
    ]
    (folder / "d[").mkdir()
    for name in names:
        (folder / name).write_text(LINE)
    (folder / "x\x1b]0;title\x07.bin").write_bytes(b"\0" * 50)
    seen = tmp_path / "seen.sdx"
    result = run("scan", str(folder), "--format", "table", "--index", str(seen), env={"COLUMNS": "200"})
    assert result.exit_code == 0 and seen.exists()
    shown = [line.split()[2] for line in result.stdout.splitlines()[1:]]
    shown_as = (
        "[red]z.txt",
        "d[/x].txt",
        ":smile:.txt",
        "c\\x1b[2Jr\\rx.txt",
        "a\\nb.txt",
        "a\\\\nb.txt",
        "e\\u202ef.txt",
        "g\\u061ch.txt",
    )
    assert sorted(shown) == sorted(f"{folder}/{n}" for n in shown_as)
    assert "\x1b" not in result.stdout + result.stderr and "\x07" not in result.stderr
    assert "x\\x1b]0;title\\x07.bin: warning: binary file" in result.stderr
    # The errors name paths so too: a newline in a name does not split the message.
    missing = run("scan", str(folder), "--report", "/nonexistent\n/r.jsonl")
    assert missing.exit_code == 2
    assert "Error: /nonexistent\\n/r.jsonl: cannot write --report" in missing.stderr


def test_results_on_a_terminal_show_ids_inert_and_redirected_keep_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fingerprint's TSV, index query's and compare's lines sent an id's ESC sequences to
    # the terminal (a trial); only the table escaped them.
    records = tmp_path / "e.jsonl"
    ids = ["x\x1b[2Jowned", "y\u202eevil"]
    records.write_text("".join(json.dumps({"id": i, "text": LINE}) + "\n" for i in ids))
    named = tmp_path / "a\x1b[31mred.txt"
    named.write_text(LINE)
    seen = tmp_path / "seen.sdx"
    assert run("scan", str(records), "--index", str(seen), "-q").exit_code == 0
    commands = [
        ["fingerprint", str(records)],
        ["scan", str(records), "--format", "tsv", "-q"],
        ["scan", str(records), "--format", "csv", "-q"],
        ["index", "query", str(seen), str(records)],
        ["compare", str(named), "--text", LINE],
    ]
    for terminal in (True, False):
        monkeypatch.setattr(cli_module, "_isatty", lambda stream, terminal=terminal: terminal)
        for command in commands:
            out = run(*command).stdout
            assert ("\x1b" in out or "\u202e" in out) is not terminal, (command, out)
            assert ("x\\x1b[2Jowned" in out or "a\\x1b[31mred" in out) is terminal, (command, out)
        # Documents written back are the input's bytes, on a terminal too.
        lines = tmp_path / "lines.txt"
        lines.write_text(f"{LINE} \x1b[31m\n{OTHER}\n")
        assert run("filter", str(lines), "-q").stdout == lines.read_text()
        assert run("scan", str(lines), "-q", "--unique", "-").stdout == lines.read_text()
        # A directory member's input form is its path: a name, escaped on a terminal as
        # names are (its ESC drove the terminal, a review); redirected, its bytes.
        folder = tmp_path / "crawl"
        folder.mkdir(exist_ok=True)
        (folder / "c\x1b[2Jr.txt").write_text(LINE)
        (folder / "n\nl.txt").write_text(OTHER)
        (folder / os.fsdecode(b"x\xff.txt")).write_text(f"{LINE} {OTHER}")  # near neither (Jaccard 0.5)
        shown = (
            ["c\\x1b[2Jr.txt", "n\\nl.txt", "x\\xff.txt"]
            if terminal
            else ["c\x1b[2Jr.txt", "n\nl.txt", "x\udcff.txt"]
        )
        expected = b"".join(os.fsencode(f"{folder}/{name}\n") for name in shown)
        assert run("filter", str(folder), "-q").stdout_bytes == expected
        assert run("scan", str(folder), "-q", "--unique", "-").stdout_bytes == expected


def test_a_newline_or_tab_in_a_name_splits_no_csv_row_on_a_terminal_nor_a_compare_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a terminal, CSV's quoted fields and compare's names showed them raw, and a row
    # or a line split there; a CR was escaped, but the field quoted as if it were not
    # (a session's review).
    # A backslash was shown as it is, so `b\\nnew` and b, newline, new looked alike (a trial).
    records = tmp_path / "e.jsonl"
    # DEL was \x7f in CSV where the rest of stdout writes \u007f (a review).
    ids = ["b\nnew", "c\ttab", "cr\rhere", "b\\nnew", "del\x7fx"]
    records.write_text("".join(json.dumps({"id": i, "text": LINE}) + "\n" for i in ids))
    odd = tmp_path / "b\nnewline.txt"
    odd.write_text(LINE)
    monkeypatch.setattr(cli_module, "_isatty", lambda stream: True)
    listing = run("scan", str(records), "--format", "csv", "-q").stdout.splitlines()
    assert listing[1:] == [
        f"1,kept,b\\nnew,0,{listing[1].split(',')[-1]}",
        f"1,duplicate,c\\ttab,0,{listing[1].split(',')[-1]}",
        f"1,duplicate,cr\\rhere,0,{listing[1].split(',')[-1]}",
        f"1,duplicate,b\\\\nnew,0,{listing[1].split(',')[-1]}",
        f"1,duplicate,del\\u007fx,0,{listing[1].split(',')[-1]}",
    ]
    compared = run("compare", str(odd), "--text", LINE).stdout.splitlines()
    assert f"  {tmp_path}/b\\nnewline.txt (" in compared[0]
    assert compared[1].startswith("b ") and compared[2].startswith("distance ")
    monkeypatch.setattr(cli_module, "_isatty", lambda stream: False)
    redirected = run("scan", str(records), "--format", "csv", "-q").stdout
    assert [row[2] for row in csv.reader(io.StringIO(redirected))][1:] == ids  # every byte, quoted


def test_a_run_that_reads_invalid_utf8_says_once_to_convert_other_encodings() -> None:
    # Chinese in GBK, read as UTF-8, is mostly symbols: these two messages were one
    # document, the word `s`, and the run said only "invalid UTF-8" of each line (a trial).
    gbk = "准备: %s\n打开“%s”\n无法序列化消息：\n".encode("gbk")
    result = run("scan", "-", input=gbk)
    said = result.stderr.splitlines()
    kinds = ["note" if line.startswith("note: ") else line.split(": ")[1] for line in said[:4]]
    assert result.exit_code == 3 and kinds == ["error", "note", "error", "error"]
    assert said[1].startswith("note: simdedup reads UTF-8, and bytes")
    assert "iconv -f GB18030 -t UTF-8" in said[1]
    assert sum(line.startswith("note: ") for line in said) == 1
    assert "note:" not in run("scan", "-", "-q", input=gbk).stderr  # errors only
    # Not of a JSON string's lone surrogate, whose bytes were UTF-8 (a review).
    lone = run("scan", "--jsonl", input='{"id": "a", "text": "caf\\udcff au lait"}\n')
    assert lone.exit_code == 3 and "note:" not in lone.stderr


def test_jsonl_results_on_a_terminal_stay_json_with_their_controls_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DEL and the C1 controls were shown as \x7f, \x85, which JSON does not read: a
    # record copied from the terminal into jq failed (a trial).
    records = tmp_path / "e.jsonl"
    ids = ["del\x7fx", "nel\x85y", "csi\x9b2J", "esc\x1b[2J", "rlo\u202eevil"]
    records.write_text(
        "".join(json.dumps({"id": i, "text": f"{LINE} {n}"}) + "\n" for n, i in enumerate(ids))
    )
    monkeypatch.setattr(cli_module, "_isatty", lambda stream: True)
    for command in (
        ["scan", "--report", "-"],
        ["fingerprint", "--format", "jsonl"],
        ["scan", "--format", "jsonl"],
    ):
        shown = run(*command, str(records), "-q").stdout
        assert not any(0x7F <= ord(c) < 0xA0 or c in "\x1b\u202e" for c in shown), (command, shown)
        records_shown = [json.loads(line) for line in shown.splitlines()]
        if command == ["scan", "--format", "jsonl"]:  # one group: the first kept, the rest its copies
            [group] = records_shown
            records_shown = [{"id": group["kept"]}, *group["duplicates"]]
        assert [r["id"] for r in records_shown] == ids, command


# ---------------------------------------------------------------- given weights


@pytest.mark.parametrize(
    ("option", "named"),
    [
        (["--top-k", "2"], "--top-k"),
        (["--weights", "binary"], "--weights"),
        (["--shingle", "3"], "--shingle"),
        (["--tokenizer", "chars"], "--tokenizer"),
        (["--no-fold"], "--fold/--no-fold"),
    ],
)
def test_text_settings_beside_given_features_are_refused(
    tmp_path: Path, option: list[str], named: str
) -> None:
    # Taken and ignored, --top-k 2 was recorded in --index, which then refused the next
    # run without it, whose fingerprints were the same (a review).
    f = tmp_path / "vectors.jsonl"
    f.write_text('{"id": "a", "features": {"alpha": 3, "beta": 1}}\n')
    index = tmp_path / "seen.sdx"
    for command in ("fingerprint", "scan", "filter"):
        args = [command, str(f), "--features-field", "features", *option]
        result = run(*args, *(["--index", str(index)] if command != "fingerprint" else []))
        assert result.exit_code == 2, (command, result.stderr)
        assert f"Error: {named} is how a text becomes weighted features" in result.stderr
    assert not index.exists()
    assert run("scan", str(f), "--features-field", "features", "--bits", "128", "-q").exit_code == 0


def test_a_text_field_beside_given_features_is_refused(tmp_path: Path) -> None:
    # Taken and ignored, as --no-fold was before it was refused (a trial).
    f = tmp_path / "vectors.jsonl"
    f.write_text('{"id": "a", "features": {"alpha": 3, "beta": 1}}\n')
    for command in ("fingerprint", "scan", "filter"):
        result = run(command, str(f), "--features-field", "features", "--text-field", "body")
        assert result.exit_code == 2 and result.stdout == "", (command, result.stderr)
        assert "Error: --text-field names the field that records hold their text in" in result.stderr
        assert run(command, str(f), "--features-field", "features", "-q").exit_code == 0


def test_verify_beside_given_features_is_refused(tmp_path: Path) -> None:
    # Feature records have no text to make sketches of: --verify 0.5 was taken and did
    # nothing (a review).
    f = tmp_path / "vectors.jsonl"
    f.write_text('{"id": "a", "features": {"alpha": 3, "beta": 1}}\n')
    for command in ("scan", "filter"):
        result = run(command, str(f), "--features-field", "features", "--verify", "0.5")
        assert result.exit_code == 2, (command, result.stderr)
        assert "Error: --verify compares the texts' shingles" in result.stderr
        assert run(command, str(f), "--features-field", "features", "--no-verify", "-q").exit_code == 0


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--weights", "binary", "--top-k", "3"], "with --weights binary every feature weighs the same"),
        (["--tokenizer", "chars", "--shingle", "2"], "--shingle joins word tokens"),
    ],
)
def test_settings_that_do_not_fit_together_are_usage_errors(
    tmp_path: Path, options: list[str], said: str
) -> None:
    # --top-k 3 under binary weights kept the alphabetically first 3 features, so two
    # texts sharing them were duplicates at distance 0 (a review).
    f = tmp_path / "a.txt"
    f.write_text("zebra yak xylophone apple banana cherry\napple banana cherry dog elephant fox\n")
    for command in ("scan", "fingerprint"):
        result = run(command, str(f), *options)
        assert result.exit_code == 2, (command, result.stderr)
        assert result.stderr.startswith("Usage: "), result.stderr
        assert said in result.stderr
        assert result.stdout == ""


def test_tokenizer_jieba_is_auto_under_another_name(tmp_path: Path) -> None:
    # The same tokens of every text, yet an index made with one refused the other, and
    # jieba took the slow path (a review).
    f = tmp_path / "mixed.txt"
    f.write_text(f"{LINE}\n市议会周二批准了一项新预算 with an English tail\n{OTHER}\n")
    index = tmp_path / "seen.sdx"
    auto = run("fingerprint", str(f))
    assert run("fingerprint", str(f), "--tokenizer", "jieba").stdout == auto.stdout
    assert run("scan", str(f), "--index", str(index), "-q").exit_code == 0
    again = run("scan", str(f), "--index", str(index), "--tokenizer", "jieba", "-q", "--format", "tsv")
    assert again.exit_code == 0, again.stderr
    assert again.stdout.count("\tduplicate\t") == 3


def test_weights_that_are_not_finite_or_overflow_are_errors_not_a_crash(tmp_path: Path) -> None:
    f = tmp_path / "vectors.jsonl"
    f.write_text(
        '{"id": "huge", "features": {"x": 1e308, "y": 1e308}}\n'
        '{"id": "nan", "features": {"x": NaN}}\n'
        '{"id": "inf", "features": {"x": 1e400}}\n'
        '{"id": "ok", "features": {"x": 1, "y": 2}}\n'
    )
    result = run("fingerprint", str(f), "--features-field", "features")
    assert result.exit_code == 3
    assert [line.split("\t")[1] for line in result.stdout.splitlines()] == ["ok"]
    assert result.stderr.splitlines() == [
        f"{f}:1: error: 'features': weights too large to sum",
        f"{f}:2: error: not JSON: NaN is no JSON value",  # no JSON number is NaN
        f"{f}:3: error: 'features': weight of 'x' is not a finite number",  # valid JSON, past a float
    ]


def test_large_weights_of_several_records_in_one_batch_are_each_records_own(tmp_path: Path) -> None:
    # Two records of 1e308, each fine alone, overflowed the batch's sum: a traceback
    # and exit 1, nothing decided (a session's review).
    f = tmp_path / "vectors.jsonl"
    f.write_text('{"id": "a", "features": {"x": 1e308}}\n{"id": "b", "features": {"y": 1e308}}\n')
    alone = [
        run("fingerprint", "--features-field", "features", "--jsonl", input=line + "\n")
        for line in f.read_text().splitlines()
    ]
    for args in (["fingerprint"], ["filter", "-q"], ["scan", "-q", "--unique", "-"]):
        result = run(*args, str(f), "--features-field", "features")
        assert (result.exit_code, result.stderr) == (0, ""), args
    together = run("fingerprint", str(f), "--features-field", "features", "--format", "tsv")
    assert [line.split("\t")[0] for line in together.stdout.splitlines()] == [
        r.stdout.split("\t")[0] for r in alone
    ]


def test_links_that_point_at_each_other_are_named_a_loop(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(LINE)
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    result = run("scan", str(tmp_path), "-q")
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        f"{tmp_path}/loop{i}: error: symbolic link loop; not followed" for i in (1, 2)
    ]


# ---------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["filter", "--verify", "nan"], "'nan' is not a number"),
        (["compare", "--text", LINE, "--text", OTHER, "--verify", "nan"], "'nan' is not a number"),
        (["filter", "--index", "INDEX", "--wait", "nan"], "'nan' is not a number"),
        (["index", "merge", "INDEX", "INDEX", "--wait", "nan"], "'nan' is not a number"),
        (["scan", "--max-doc-size", "inf"], "'inf' is not a size like 16M"),
        (["scan", "--max-doc-size", "1e400"], "'1e400' is not a size like 16M"),
    ],
)
def test_numbers_that_are_not_numbers_are_usage_errors(tmp_path: Path, args: list[str], said: str) -> None:
    # A trial: NaN passed click's range check (every comparison with it is false) and
    # reached the library's (a traceback, exit 1, which --fail-on-duplicates means
    # "duplicates found"), or a lock file was left; inf was an OverflowError.
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n")
    index = tmp_path / "seen.sdx"
    args = [str(index) if a == "INDEX" else a for a in args]
    result = CliRunner().invoke(main, [*args, *([str(lines)] if args[0] in ("scan", "filter") else [])])
    assert result.exit_code == 2 and said in result.output, result.output
    assert list(tmp_path.iterdir()) == [lines]


def test_verify_and_no_verify_together_are_refused(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n")
    result = CliRunner().invoke(main, ["scan", str(lines), "--verify", "0.9", "--no-verify"])
    assert result.exit_code == 2 and "--verify and --no-verify contradict each other" in result.output
    assert run("scan", str(lines), "--no-verify", "-q").exit_code == 0


def test_verbose_fingerprint_and_index_query_say_their_settings(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    assert "settings: Settings(" in run("fingerprint", str(lines), "-v").stderr
    seen = tmp_path / "seen.sdx"
    run("scan", str(lines), "-q", "--index", str(seen))
    said = run("index", "query", str(seen), str(lines), "-v").stderr
    assert "settings: Settings(" in said and "index: 2 fingerprints; 7 blocks" in said


def test_an_index_whose_lock_cannot_be_made_is_not_called_in_use(tmp_path: Path) -> None:
    # filelock took a lock file it could not create for one another run held.
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n")
    (tmp_path / "seen.sdx.lock").mkdir()
    result = CliRunner().invoke(main, ["scan", str(lines), "-q", "--index", str(tmp_path / "seen.sdx")])
    assert result.exit_code == 2
    assert (
        result.output
        == f"Error: cannot write index {tmp_path}/seen.sdx: {tmp_path}/seen.sdx.lock: Is a directory\n"
    )


@pytest.mark.parametrize(
    "text",
    [" ".join(f"w{i}" for i in range(400)), "".join(f"第{i}个文本和English{i}混在一起。" for i in range(90))],
)
def test_a_file_over_the_size_limit_is_cut_in_utf8_bytes_whatever_its_encoding(
    tmp_path: Path, text: str
) -> None:
    # The limit counted a directory's file in its own bytes: a UTF-16 copy got half as
    # much text, a UTF-32 one a quarter, and a byte-order mark took three bytes of it;
    # the same text then had other fingerprints (a review).
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "utf8.txt").write_bytes(text.encode())
    (folder / "bom.txt").write_bytes(codecs.BOM_UTF8 + text.encode())
    (folder / "utf16.txt").write_bytes(text.encode("utf-16"))
    (folder / "utf16be.txt").write_bytes(codecs.BOM_UTF16_BE + text.encode("utf-16-be"))
    (folder / "utf32.txt").write_bytes(text.encode("utf-32"))
    lines = tmp_path / "lines.txt"
    lines.write_bytes(text.encode() + b"\n")
    for limit in ("1K", "1000", "1001", "1002"):
        result = run("fingerprint", str(folder), str(lines), "--max-doc-size", limit)
        fps = {line.split("\t")[0] for line in result.stdout.splitlines()}
        assert len(fps) == 1 and len(result.stdout.splitlines()) == 6, (limit, result.stdout)
        assert result.stderr.count("fingerprinted its first") == 6


def test_compare_fingerprints_a_file_as_scan_does_past_the_size_limit(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    f = folder / "big.txt"
    words = [f"w{i}" for i in range(3000)]
    f.write_text(" ".join(words[(i * 7919) % 3000] for i in range(3_000_000)))  # about 17 MiB
    assert f.stat().st_size > 16 << 20
    scanned = run("fingerprint", str(folder)).stdout.split("\t")[0]
    result = run("compare", str(f), str(f), "--json")
    assert json.loads(result.stdout)["a"]["fingerprint"] == scanned
    # ... and says so, as scan does (a trial: two files that differ past 16 MiB compared
    # as the same, without a word)
    said = f"{f}: error: file is over 16.0 MiB; compared on its first part, as scan fingerprints it"
    assert said in result.stderr
    assert result.exit_code == 3  # an input error, as other commands exit (it exited 0)
    assert json.loads(result.stdout)["near"] is True


@linux_only
def test_compare_reads_no_further_than_it_compares() -> None:
    # `yes | simdedup compare - a.txt` read stdin whole: memory grew until the process
    # was killed, or a MemoryError traceback exited 1, "not near-duplicates" (a review).
    endless = subprocess.Popen(["yes", LINE], stdout=subprocess.PIPE)
    try:
        assert endless.stdout is not None
        command = [sys.executable, "-m", "simdedup", "compare", "-", "--text", LINE, "--json"]
        result = subprocess.run(
            command,
            stdin=endless.stdout,
            capture_output=True,
            timeout=120,
            check=False,
            preexec_fn=_at_most_3_gb,
        )
    finally:
        endless.kill()
        endless.wait()
        endless.stdout.close()  # type: ignore[union-attr]
    assert result.returncode == 3, result.stderr
    assert b"-: error: file is over 16.0 MiB; compared on its first part" in result.stderr
    assert "near" in json.loads(result.stdout)  # the comparison of its first 16 MiB


def _at_most_3_gb() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _zstd() -> Any:
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        from backports import zstd  # type: ignore[no-redef]
    return zstd


#: (suffix, kind, cat, compress) of each compressed format simdedup reads by its name.
COMPRESSED = [
    (".gz", "gzip", "zcat", gzip.compress),
    (".xz", "xz", "xzcat", lzma.compress),
    (".bz2", "bzip2", "bzcat", bz2.compress),
    (".zst", "zstd", "zstdcat", lambda data: _zstd().compress(data)),
]


@pytest.mark.parametrize(("suffix", "kind", "cat", "compress"), COMPRESSED)
def test_compressed_data_is_refused_on_stdin_and_under_another_name(
    tmp_path: Path, suffix: str, kind: str, cat: str, compress: Any
) -> None:
    # Read as lines of binary, filter wrote back a damaged archive (trial).
    data = compress(f"{LINE}\n{LINE}\n{OTHER}\n".encode())
    named = tmp_path / "lines.data"
    named.write_bytes(data)
    for args, given, message in [
        (["filter"], data, f"-: error: {kind} data is not read as text: {cat} it into simdedup"),
        (
            ["filter", str(named)],
            b"",
            f"{named}: error: {kind} data is not read as text: name it FILE{suffix}",
        ),
    ]:
        refused = run(*args, input=given)
        assert (refused.exit_code, refused.stdout) == (3, ""), refused.stderr
        assert message in refused.stderr
    assert run("filter", input=b"BZh9 is a plain line\n").stdout == "BZh9 is a plain line\n"


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(("suffix", "kind", "cat", "compress"), COMPRESSED)
def test_compressed_files_are_read_and_written_by_their_names(
    tmp_path: Path, jobs: str, suffix: str, kind: str, cat: str, compress: Any
) -> None:
    # Only gzip was read: a crawl.jsonl.zst had to go through zstdcat (trial).
    lines = "".join(f"{LINE} {i % 40}\n" for i in range(400)) + f"{OTHER}\n"
    records = "".join(json.dumps({"id": f"r{i}", "text": f"{OTHER} {i % 3}"}) + "\n" for i in range(9))
    for name, text in [("crawl.txt", lines), ("crawl.jsonl", records)]:
        (tmp_path / name).write_text(text)
        plain = run("filter", str(tmp_path / name), "-j", jobs, "--duplicates", str(tmp_path / "d.tsv"))
        # Suffixes in either case: CRAWL.JSONL.GZ was refused as "not read as text: name
        # it FILE.gz", and DATA.JSONL read as lines (a trial).
        for packed, out in [
            (f"{name}{suffix}", f"d.tsv{suffix}"),
            (f"{name}{suffix}".upper(), f"D.TSV{suffix.upper()}"),
        ]:
            (tmp_path / packed).write_bytes(compress(text.encode()))
            read = run("filter", str(tmp_path / packed), "-j", jobs, "--duplicates", str(tmp_path / out))
            assert (read.exit_code, read.stdout) == (0, plain.stdout), read.stderr
            written = (tmp_path / "d.tsv").read_text().replace(name, packed)
            assert _decompressed(tmp_path / out, suffix) == written.encode()  # JSONL: ids r1, ...
    if suffix == ".gz":  # neither a time nor a name in the header: stable bytes night to night (trial)
        header = (tmp_path / "d.tsv.gz").read_bytes()
        # and gzip's default level, 6 (the XFL byte 0), not Python's 9 (2): 1.5x the time (a trial)
        assert header[3:8] == bytes(5) and header[8] == 0


def _decompressed(path: Path, suffix: str) -> bytes:
    module = {".gz": gzip, ".xz": lzma, ".bz2": bz2, ".zst": _zstd()}[suffix]
    with module.open(path, "rb") as f:
        return f.read()  # type: ignore[no-any-return]


@pytest.mark.parametrize(("suffix", "kind", "cat", "compress"), COMPRESSED)
def test_damaged_and_cut_compressed_files_say_so_in_our_words(
    tmp_path: Path, suffix: str, kind: str, cat: str, compress: Any
) -> None:
    named = tmp_path / f"crawl.txt{suffix}"
    packed = compress("".join(f"line {i} of a crawl\n" for i in range(20000)).encode())
    for data, said in [
        (b"not compressed at all\n", f"not {kind} data, or damaged {kind} data"),
        (packed[: len(packed) // 2], f"the {kind} stream is cut short"),
    ]:
        named.write_bytes(data)
        result = run("filter", str(named))
        errors = [line for line in result.stderr.splitlines() if ": error: " in line]
        assert result.exit_code == 3 and len(errors) == 1 and said in errors[0], result.stderr


def test_record_fields_where_no_input_is_jsonl_are_refused(tmp_path: Path) -> None:
    # Without --jsonl, stdin's records were read as lines: --text-field did nothing, the
    # JSON markup and ids were fingerprinted, duplicates missed, exit 0 (a trial).
    records = "".join(json.dumps({"url": f"u{i}", "body": LINE}) + "\n" for i in range(2))
    (tmp_path / "s.ndjson").write_text(records)
    (tmp_path / "s.json").write_text(records)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "a.jsonl").write_text(records)
    for command in ("scan", "filter", "fingerprint"):
        for given, inputs in [
            (["--text-field", "body"], []),
            (["--text-field", "text"], []),  # the default's value, given
            (["--id-field", "url"], [str(tmp_path / "s.json")]),
            (["--features-field", "f"], [str(tmp_path / "folder")]),
        ]:
            refused = run(command, *inputs, *given, input=records)
            assert refused.exit_code == 2 and refused.stdout == "", refused.stderr
            assert (
                f"Error: {given[0]} names a field of JSONL records, and no input is read as JSONL"
                in refused.stderr
            )
    # --jsonl given, with only a directory: the advice was to give --jsonl (a trial).
    folder = run("scan", str(tmp_path / "folder"), "--jsonl", "--text-field", "body")
    assert folder.exit_code == 2 and "give --jsonl" not in folder.stderr
    assert "each file in a directory is one document, never records" in folder.stderr
    dups = tmp_path / "d.jsonl"
    read = run("filter", "--jsonl", "--text-field", "body", "--duplicates", str(dups), input=records)
    assert read.exit_code == 0 and json.loads(dups.read_text())["id"] == "-:2"
    named = run(
        "scan", str(tmp_path / "s.ndjson"), "--text-field", "body", "--id-field", "url", "--format", "tsv"
    )
    assert named.exit_code == 0 and "duplicate\tu1\t" in named.stdout


def test_jsonl_lines_of_other_than_json_whitespace_are_not_json(tmp_path: Path) -> None:
    # str.strip() took a line of a no-break space, U+3000 or a form feed for a blank line:
    # filter left it out of its output without a word, exit 0 (trial).
    records = tmp_path / "r.jsonl"
    records.write_bytes(b'{"text": "a b c d"}\n \t \r\n\xc2\xa0\n\xe3\x80\x80\n\x0c\n')
    result = run("filter", str(records))
    assert result.exit_code == 3
    assert [line for line in result.stderr.splitlines() if "error" in line][:3] == [
        f"{records}:{n}: error: not JSON: Expecting value at column 1" for n in (3, 4, 5)
    ]


def test_json_records_name_their_json_type_and_keep_numeric_ids_as_written(tmp_path: Path) -> None:
    # A null record was "a JSON NoneType"; ids 1e2 and 1E+2 were both "100.0", 1.10 was
    # "1.1" and -0 was "0"; a missing --features-field was "not an object" (trial).
    records = tmp_path / "r.jsonl"
    lines = ["null", "true", "3.5", '"s"']
    lines += [
        f'{{"id": {n}, "text": "word{i} more words here"}}'
        for i, n in enumerate(["1e2", "1E+2", "1.10", "-0"])
    ]
    lines.append('\ufeff\ufeff{"id": "two marks", "text": "after files joined"}')
    records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("scan", str(records), "--report", "-")
    assert [line.split(": error: ")[1] for line in result.stderr.splitlines()[:4]] == [
        f"a JSON {kind}, not an object" for kind in ("null", "boolean", "number", "string")
    ]
    assert [json.loads(r)["id"] for r in result.stdout.splitlines()] == [
        "1e2",
        "1E+2",
        "1.10",
        "-0",
        "two marks",
    ]
    missing = run("scan", "--jsonl", "--features-field", "f", input='{"id": 1}\n')
    assert "-:1: error: no 'f' field" in missing.stderr


def test_ids_that_are_arrays_or_objects_are_written_as_they_stand_in_the_record(tmp_path: Path) -> None:
    # Written again by json.dumps, 中 came out as \\u4e2d, 1.10 as 1.1 and 1e2 as 100.0,
    # and {"x":"é"} and {"x":"\\u00e9"} were one id (a trial). The last "id" is the one
    # JSON readers keep; a text of its own, then a long integer, precede it.
    records = tmp_path / "r.jsonl"
    ids = ['["中", 1.10, 1e2]', '{"x":"é"}', '{"x":"\\u00e9"}', "[ [3, 4] , {} ]", f"[{'9' * 5000}]"]
    lines = [f'{{"id": {ident}, "text": "words of record {i}"}}' for i, ident in enumerate(ids)]
    lines.append('{ "id" : [0], "text" : "the last id" , "n": 1, "id" :[1, "a"]}')
    # A tab or CR between items is a space, a new kind of character in ids (a review);
    # inside a string, as it is written.
    lines.append('{"id": [1,\r2,\t "a\\tb"], "text": "spaced"}')
    records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("scan", str(records), "-q", "--report", "-")
    assert (result.exit_code, result.stderr) == (0, "")
    expected = [*ids, '[1, "a"]', '[1, 2, "a\\tb"]']
    assert [json.loads(r)["id"] for r in result.stdout.splitlines()] == expected


def test_calibrate_names_a_json_list_and_warns_of_pairs_of_one_kind(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('[1]\n{"a": "x y", "b": "p q", "duplicate": false}\n')
    result = run("calibrate", str(pairs), "--max-distance", "1")
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        f"{pairs}:1: error: a JSON list, not an object",
        f"{pairs}: warning: every pair is labelled not a duplicate: precision, recall and F1 need"
        " pairs of both kinds to mean anything",
    ]


def test_calibrate_marks_no_best_distance_where_no_f1_is_defined(tmp_path: Path) -> None:
    # No pair labelled a duplicate and none found one: every F1 is 0 / 0, and k = 0 was
    # marked best of nothing (a trial).
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"a": "x y", "b": "p q", "duplicate": false}\n')
    table = run("calibrate", str(pairs), "--max-distance", "1")
    assert table.exit_code == 0 and len(table.stdout.splitlines()) == 14 and "*" not in table.stdout
    records = run("calibrate", str(pairs), "--max-distance", "1", "--json").stdout.splitlines()
    assert len(records) == 12 and not any(json.loads(r)["best"] for r in records)


def test_compare_says_an_empty_document_is_near_nothing_in_text_and_json() -> None:
    said = CliRunner().invoke(main, ["compare", "--text", "", "--text", "x y"])
    assert said.exit_code == 1
    why = "--text 1: no features (empty, or only whitespace, punctuation and symbols)"
    assert said.stdout == f"verdict     not near-duplicates ({why})\n"
    result = CliRunner().invoke(main, ["compare", "--json", "--text", "", "--text", "x y"])
    assert result.exit_code == 1
    record = json.loads(result.stdout)
    assert record["near"] is False and record["empty"] == ["--text 1"] and record["a"]["fingerprint"] is None


def test_runs_of_one_second_get_default_names_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A loop over shards, or runs queued by --wait: the second's name was the first's,
    # and duplicate_of_run could not tell them apart (a trial).
    calls = itertools.count(1)

    class Clock(dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> dt.datetime:  # type: ignore[override]
            return dt.datetime(2026, 11, 24, 6, 12, 16, next(calls), tzinfo=dt.timezone.utc)

    monkeypatch.setattr("simdedup.store.dt.datetime", Clock)
    seen = tmp_path / "seen.sdx"
    said = []
    for i, text in enumerate((LINE, OTHER, f"{LINE} {OTHER}")):
        (tmp_path / f"{i}.txt").write_text(f"{text}\n")
        said.append(run("filter", str(tmp_path / f"{i}.txt"), "--index", str(seen)).stderr)
    names = [run["name"] for run in read_index(seen).runs]
    assert names[0] == "2026-11-24T06:12:16Z" and len(set(names)) == 3
    assert all(re.fullmatch(r"2026-11-24T06:12:16\.\d{6}Z", name) for name in names[1:])
    assert not any("warning" in s for s in said)


def test_a_run_name_already_in_the_index_is_warned_about(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    seen = tmp_path / "seen.sdx"
    first = run("filter", str(lines), "--index", str(seen), "--run-name", "monday")
    assert "warning" not in first.stderr
    again = run("filter", str(lines), "--index", str(seen), "--run-name", "monday")
    assert again.exit_code == 0
    assert f"{seen}: warning: a run named 'monday' is in it already" in again.stderr
    assert "warning" not in run("filter", str(lines), "-q", "--index", str(seen), "--run-name", "x").stderr


def test_ngram_is_refused_unless_it_makes_character_ngrams_and_an_index_keeps_it(tmp_path: Path) -> None:
    # --ngram is read by --tokenizer chars only: given with another, it did nothing
    # without a word (a trial).
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    chars = tmp_path / "chars.sdx"
    for command in ("scan", "filter", "fingerprint"):
        ignored = CliRunner().invoke(main, [command, str(lines), "--ngram", "4", "--tokenizer", "words"])
        assert ignored.exit_code == 2 and ignored.stdout == ""
        assert (
            "--ngram is the length of --tokenizer chars's features; with --tokenizer words" in ignored.output
        )
    run("scan", str(lines), "-q", "--index", str(chars), "--tokenizer", "chars")
    refused = CliRunner().invoke(
        main, ["scan", str(lines), "-q", "--index", str(chars), "--tokenizer", "chars", "--ngram", "4"]
    )
    assert refused.exit_code == 2 and "ngram is 3 there, 4 in this run" in refused.output


def test_a_glob_or_exclude_pattern_that_can_match_nothing_is_refused(tmp_path: Path) -> None:
    # `--exclude 'en/'`, as rsync and .gitignore spell a folder, left every file in and
    # said nothing (a session trying the tool as a new user).
    tree = tmp_path / "tree"
    (tree / "en").mkdir(parents=True)
    (tree / "en" / "a.txt").write_text(f"{LINE}\n")
    (tree / "b.txt").write_text(f"{LINE}\n")
    for option, pattern, meant in (("--exclude", "en/", "en"), ("--glob", "./en/*", "en/*")):
        refused = CliRunner().invoke(main, ["scan", str(tree), option, pattern])
        assert refused.exit_code == 2 and refused.stdout == ""
        assert (
            f"{pattern!r} can match nothing" in refused.stderr
            and f"({meant!r} may be meant)" in refused.stderr
        )
        read = run("fingerprint", str(tree), option, meant)
        assert read.exit_code == 0 and len(read.stdout.splitlines()) == 1  # one file of the two
    for option in ("--exclude", "--glob"):  # the folder's own path, as a trial gave it
        refused = CliRunner().invoke(main, ["scan", str(tree), option, str(tree / "en")])
        assert refused.exit_code == 2 and refused.stdout == ""
        said = "can match nothing: a name, or a path below the directory given, has no leading /"
        assert f"{str(tree / 'en')!r} {said}" in refused.stderr


def test_a_pattern_s_leading_double_star_stands_for_any_folders_or_none(tmp_path: Path) -> None:
    # As .gitignore has it: `**/*.txt` missed the top level's files, and `--exclude
    # '**/node_modules'` left the top level's node_modules in (fnmatch's `*/`: a trial).
    tree = tmp_path / "tree"
    for name in ("a.txt", "a.md", "sub/b.txt", "node_modules/c.txt", "sub/node_modules/d.txt", "x/y/z/e.txt"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(f"{name} {LINE}\n")

    def read(*patterns: str) -> list[str]:
        result = run("fingerprint", str(tree), *patterns, "--format", "tsv")
        assert result.exit_code == 0, result.stderr
        return sorted(
            line.split("\t")[1].removeprefix(str(tree) + os.sep) for line in result.stdout.splitlines()
        )

    assert read("--glob", "**/*.txt", "--exclude", "**/node_modules") == ["a.txt", "sub/b.txt", "x/y/z/e.txt"]
    assert read("--glob", "x/**/e.txt") == ["x/y/z/e.txt"]
    assert read("--glob", "sub/**/*.txt") == ["sub/b.txt", "sub/node_modules/d.txt"]  # none between too
    assert read("--exclude", "**/*.txt") == ["a.md"]


def test_glob_or_exclude_without_a_directory_and_quiet_with_verbose_are_refused(tmp_path: Path) -> None:
    # Each did nothing without a word (a trial): `scan *.txt --exclude drafts` read the drafts.
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{LINE}\n")
    for option in ("--glob", "--exclude"):
        for inputs in ([str(lines)], ["-"]):
            refused = CliRunner().invoke(main, ["filter", *inputs, option, "*.txt"], input=f"{LINE}\n")
            assert refused.exit_code == 2 and refused.stdout == ""
            assert (
                f"{option} chooses among the files of a directory, and no directory is given"
                in refused.output
            )
        assert run("scan", str(lines), str(tmp_path), option, "*.txt", "-q").exit_code == 0
    both = CliRunner().invoke(main, ["scan", str(lines), "-q", "-v"])
    assert (
        both.exit_code == 2
        and "-q (say nothing but errors) and -v (say more) ask for opposite" in both.output
    )


def test_index_info_names_the_newest_run_after_a_merge(tmp_path: Path) -> None:
    older, newer, merged = tmp_path / "a.sdx", tmp_path / "b.sdx", tmp_path / "ab.sdx"
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n")
    run("filter", str(lines), "-q", "--index", str(older), "--run-name", "older")
    time.sleep(1.1)  # runs are timed to the second
    lines.write_text(f"{OTHER}\n")
    run("filter", str(lines), "-q", "--index", str(newer), "--run-name", "newer")
    run("index", "merge", str(merged), str(newer), str(older), "-q")  # the older merged last
    assert "; last: 'newer', finished" in run("index", "info", str(merged)).stdout


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_id_field_missing_from_a_first_record_is_warned_about_once(tmp_path: Path, jobs: str) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps({"id": f"d{i}", "text": f"{LINE} {i}"}) + "\n" for i in range(3)))
    misspelt = run("fingerprint", str(records), "--id-field", "ID", "-j", jobs)
    assert misspelt.exit_code == 0
    assert misspelt.stderr.count("warning") == 1
    assert f"{records}:1: warning: no 'ID' field, or a null or empty one (--id-field)" in misspelt.stderr
    ids = [row.split("\t")[1] for row in misspelt.stdout.splitlines()]
    assert ids == [f"{records}:{i}" for i in (1, 2, 3)]
    nested = run("fingerprint", str(records), "--id-field", "meta.id", "-j", jobs)
    assert nested.stderr.splitlines() == [
        f"{records}:1: warning: no 'meta.id' field, or a null or empty one (--id-field); records without "
        "one are named PATH:LINE; --id-field names a top-level field"
    ]
    # The default field may be absent (ids are then PATH:LINE, as documented); a field
    # given and present is quiet too.
    for quiet in (["--id-field", "id"], ["--id-field", "text"], []):
        assert "warning" not in run("fingerprint", str(records), "-j", jobs, *quiet).stderr
    records.write_text(json.dumps({"text": LINE}) + "\n")
    assert "warning" not in run("fingerprint", str(records), "-j", jobs).stderr


def test_an_empty_id_names_the_record_by_its_place(tmp_path: Path) -> None:
    # "duplicate_of" of a record with id "" was empty, which CSV and TSV write for null
    # too (a review); a blank id is an id.
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps({"id": i, "text": LINE}) + "\n" for i in ("", " ", "")))
    report = run("scan", str(records), "--report", "-", "--format", "tsv", "-q").stdout.splitlines()
    assert [row.split("\t")[0] for row in report[1:]] == [f"{records}:1", " ", f"{records}:3"]
    assert [row.split("\t")[3] for row in report[1:]] == ["", f"{records}:1", f"{records}:1"]


def test_a_wide_distance_is_warned_about_and_compares_every_row(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n{LINE} again\n")
    for command in (["scan", str(lines)], ["filter", str(lines)]):
        wide = run(*command, "-k", "12", "-v")
        assert "-k 12: warning: every document is compared with every kept one" in wide.stderr
        assert "(the index's tables serve -k 6 and below at 64 bits)" in wide.stderr
        assert "; every row compared (keys of" in wide.stderr
        assert "warning" not in run(*command, "-k", "6").stderr
        assert "warning" not in run(*command, "-k", "12", "-q").stderr
    seen = tmp_path / "seen.sdx"
    run("scan", str(lines), "-q", "-k", "12", "--index", str(seen))
    assert "-k 12: warning" in run("index", "query", str(seen), str(lines), "-k", "12").stderr
    info = run("index", "info", str(seen))
    assert "buckets of the tables this distance would have (not used: every row" in info.stdout
    layout = json.loads(run("index", "info", str(seen), "--json").stdout)["layout"]
    assert layout.startswith("every row compared")
    blocks = [
        line for line in run("compare", "--text", LINE, "--text", OTHER, "-k", "12").stdout.splitlines()
    ]
    assert (
        "blocks      none used: at k = 12 every kept document is compared" in blocks
    )  # not "key on one each"


def test_compare_reads_as_scan_reads_and_says_what_it_leaves_out(tmp_path: Path) -> None:
    # A trial: two binary files were "near-duplicates" (scan skips them); --features 0
    # listed "-" as if nothing were unshared; --id-field '' meant "id", where
    # --text-field '' is the field named "".
    binary = tmp_path / "b.bin"
    binary.write_bytes(bytes(range(256)) * 2)
    result = run("compare", str(binary), str(binary))
    assert result.exit_code == 2 and f"{binary}: a binary file, which scan skips" in result.stderr
    hidden = run("compare", "--text", LINE, "--text", OTHER, "--features", "0").stdout
    assert "only in a   not shown (--features 0)" in hidden
    named = tmp_path / "named.jsonl"
    named.write_text(json.dumps({"": "by the empty name", "id": "by id", "text": LINE}) + "\n")
    assert run("fingerprint", str(named), "--id-field", "").stdout.split("\t")[1] == "by the empty name\n"


def test_text_in_a_legacy_8_bit_encoding_keeps_its_words(tmp_path: Path) -> None:
    # A trial: read with replacement characters, cp1251 headlines kept their date alone,
    # and filter wrote one of eight different ones, the others "duplicates" of it.
    headlines = [
        "12.05.2023 Правительство утвердило бюджет на следующий год",
        "12.05.2023 Сборная России выиграла товарищеский матч",
        "12.05.2023 В Москве открылась выставка современного искусства",
        "12.05.2023 Синоптики обещают тёплую погоду в выходные",
    ]
    legacy = tmp_path / "news.txt"
    legacy.write_bytes("".join(f"{h}\n" for h in headlines * 2).encode("cp1251"))
    result = run("filter", str(legacy))
    assert result.stdout_bytes == legacy.read_bytes()[: len(legacy.read_bytes()) // 2]  # each once, as it was
    assert result.exit_code == 3 and "its bytes that are not UTF-8 read as Windows-1252" in result.stderr
    # Western European text in Latin-1 reads as written: a copy of the UTF-8 line.
    french = "Le café au lait était servi très chaud dans une grande tasse à déjeuner"
    both = tmp_path / "fr.txt"
    both.write_bytes(f"{french}\n".encode() + f"{french}\n".encode("latin-1"))
    assert run("scan", str(both), "--format", "tsv").stdout.splitlines()[2].split("\t")[1:4] == [
        "duplicate",
        f"{both}:2",
        "0",
    ]


def test_compare_says_what_it_replaced_takes_whole_or_cannot_read_twice(tmp_path: Path) -> None:
    # A trial: invalid UTF-8 was replaced without a word (scan reports it), two JSONL
    # files were compared as JSON text in silence, and `compare - -` read stdin twice.
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9 au lait and more words\n")
    result = run("compare", str(bad), "--text", "cafe au lait and more words")
    assert (
        f"{bad}: error: invalid UTF-8 at byte 4, its bytes that are not UTF-8 read as Windows-1252"
        in result.stderr
    )
    assert result.exit_code == 3  # the verdict is on stdout; the status says the input was bad
    # The same byte in --text (argv keeps it as a lone surrogate) went quietly (a review).
    given = run(
        "compare", "--text", "caf\udce9 au lait and more words", "--text", "cafe au lait and more words"
    )
    assert given.stderr.splitlines()[0] == (
        "--text 1: error: invalid UTF-8 at byte 4, its bytes that are not UTF-8 read as Windows-1252"
    )
    assert len(given.stderr.splitlines()) == 2 and given.stderr.splitlines()[1].startswith("note: ")
    assert given.stdout.splitlines()[0].split()[1] == result.stdout.splitlines()[0].split()[1]
    records = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for path in records:
        path.write_text(json.dumps({"id": path.name, "text": LINE}) + "\n")
    result = run("compare", *map(str, records))
    said = "warning: compared as one whole document, its JSON markup too, not record by record"
    assert result.stderr.splitlines() == [f"{path}: {said}" for path in records]
    twice = run("compare", "-", "-", input=LINE)
    assert twice.exit_code == 2 and "Error: stdin (-) is given twice" in twice.stderr


@linux_only
def test_calibrate_reads_a_named_pipe_by_its_name_not_stdin() -> None:
    # <(cat pairs.jsonl) read stdin instead: "no labelled pairs", or stdin's pairs (trial).
    read, write = os.pipe()
    os.write(write, b'{"a": "x y z", "b": "x y z", "duplicate": true}\n')
    os.close(write)
    try:
        given = '{"a": "p q", "b": "r s", "duplicate": false}\n' * 3
        result = run("calibrate", f"/dev/fd/{read}", "--json", input=given)
    finally:
        os.close(read)
    assert result.exit_code == 0, result.stderr
    assert {json.loads(line)["tp"] for line in result.stdout.splitlines()} == {1}


def test_no_color_leaves_the_terminal_table_without_any_style(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{LINE}\n{OTHER}\n")
    styled = run("scan", str(lines), "--format", "table", env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[1m" in styled.stdout  # a terminal's table: the kept rows in bold
    plain = run("scan", str(lines), "--format", "table", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "kept" in plain.stdout and "\x1b[" not in plain.stdout


def test_a_narrow_terminal_wraps_ids_in_the_table_but_never_a_fingerprint(tmp_path: Path) -> None:
    # At 50 columns the fingerprints wrapped (`d914868b3` over `5c9df7e`); at 40 the id
    # column was dropped and the fingerprints cut short (a trial, then a check of it).
    folder = tmp_path / "a_long_folder_name_for_the_crawl_of_the_day" / "another_long_subfolder"
    folder.mkdir(parents=True)
    for name in ("page_one.txt", "page_two.txt"):
        (folder / name).write_text(f"{LINE}\n")
    fingerprint = run("fingerprint", str(folder / "page_one.txt")).stdout.split("\t")[0]
    for width in ("40", "50", "200"):
        table = run("scan", str(folder), "--format", "table", env={"COLUMNS": width, "NO_COLOR": "1"}).stdout
        header, *rows = table.splitlines()
        assert sum(fingerprint in row for row in rows) == 2, table
        start, end = header.index(" id ") + 1, header.index("distance")
        ids = "".join(row[start:end].strip() for row in rows)  # the id column's pieces, in order
        assert ids == f"{folder / 'page_one.txt'}{folder / 'page_two.txt'}", table


def test_force_color_styles_the_messages_too(tmp_path: Path) -> None:
    # It coloured the table but not stderr's `error:` (a trial): CI logs that keep colour.
    missing = str(tmp_path / "nosuch.txt")
    styled = run("scan", missing, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert f"{missing}: \x1b[31m\x1b[1merror\x1b[0m: no such file" in styled.stderr
    for env in ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, {"FORCE_COLOR": "", "NO_COLOR": ""}):
        plain = run("scan", missing, env=env)
        assert f"{missing}: error: no such file" in plain.stderr and "\x1b[" not in plain.stderr


def test_help_says_what_shared_options_do_in_fingerprint_and_compare() -> None:
    fingerprint = " ".join(run("fingerprint", "--help").stdout.split())
    assert "-k, --distance INTEGER RANGE Not used here (a fingerprint does not depend on it)" in fingerprint
    assert "-v, --verbose Also report the settings." in fingerprint
    assert "scan --no-verify does" in " ".join(run("compare", "--help").stdout.split())
    scan = " ".join(run("scan", "--help").stdout.split())
    assert "-k, --distance INTEGER RANGE Candidates differ" in scan and "index layout" in scan
    calibrate = " ".join(run("calibrate", "--help").stdout.split())  # it said scan's, of memory (trial)
    assert (
        "--no-verify Score the options given without verification" in calibrate and "memory" not in calibrate
    )


@linux_only
def test_an_index_named_through_a_symbolic_link_is_written_and_locked_as_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "etc").mkdir()
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n")
    real, link = tmp_path / "real" / "seen.sdx", tmp_path / "etc" / "seen.sdx"
    link.symlink_to("../real/seen.sdx")  # not made yet: the first save makes the target
    run("filter", str(lines), "-q", "--index", str(link), "--run-name", "mon")
    lines.write_text(f"{OTHER}\n")
    run("filter", str(lines), "-q", "--index", str(link), "--run-name", "tue")
    assert link.is_symlink() and real.is_file()
    info = json.loads(run("index", "info", str(real), "--json").stdout)
    assert info["fingerprints"] == 2 and [r["name"] for r in info["runs"]] == ["mon", "tue"]
    with index_lock(real):  # a run on the target holds it: one through the link waits
        held = CliRunner().invoke(main, ["filter", str(lines), "-q", "--index", str(link)])
    assert held.exit_code == 2 and f"{link} is in use by another simdedup run" in held.output


@linux_only
@pytest.mark.parametrize("command", ["scan", "filter"])
@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2", ".zst"])
def test_a_compressed_output_is_ended_before_the_index_is_saved(
    tmp_path: Path, command: str, suffix: str
) -> None:
    # A compressor holds its last block and the stream's end until it is closed: that
    # came after the save, so a full disk exited 2 with the index saved (a review).
    lines, seen = tmp_path / "lines.txt", tmp_path / "seen.sdx"
    lines.write_text("".join(f"{i} {LINE} {i * 7}\n" for i in range(300)))
    full = tmp_path / f"full{suffix}"
    full.symlink_to("/dev/full")
    done = simdedup(command, str(lines), "-q", "--index", str(seen), "--report", str(full))
    assert done.returncode == 2 and b"No space left on device" in done.stderr
    assert not seen.exists()
    ok = simdedup(command, str(lines), "-q", "--index", str(seen), "--report", str(tmp_path / f"r{suffix}"))
    with codec_for(suffix).open(str(tmp_path / f"r{suffix}"), "rb") as report:  # type: ignore[union-attr]
        assert ok.returncode == 0 and seen.exists() and len(report.read().splitlines()) == 300


@linux_only
@pytest.mark.parametrize("command", ["scan", "filter"])
def test_a_summary_that_cannot_be_written_stops_the_save_and_a_failed_run_keeps_the_old_one(
    tmp_path: Path, command: str
) -> None:
    lines, seen, summary = tmp_path / "lines.txt", tmp_path / "seen.sdx", tmp_path / "summary.json"
    lines.write_text("".join(f"{i} {LINE} {i * 7}\n" for i in range(300)))
    # A full disk for the summary: exit 2, and the index is not saved (it was, before
    # the summary was written), so a rerun of the day gives its documents again.
    done = simdedup(command, str(lines), "-q", "--index", str(seen), "--summary-json", "/dev/full")
    assert done.returncode == 2 and not seen.exists()
    # A run that fails on another output leaves yesterday's summary as it was.
    summary.write_text('{"previous": true}\n')
    failed = simdedup(command, str(lines), "-q", "--report", "/dev/full", "--summary-json", str(summary))
    assert failed.returncode == 2 and summary.read_text() == '{"previous": true}\n'
    assert not list(tmp_path.glob(".summary.json.*"))  # nor a temporary file
    ok = simdedup(command, str(lines), "-q", "--index", str(seen), "--summary-json", str(summary))
    record = json.loads(summary.read_text())
    assert ok.returncode == 0 and record["exit_status"] == 0 and record["documents"] == 300
    assert (
        record["index"]["saved"]
        == json.loads(run("index", "info", str(seen), "--json").stdout)["fingerprints"]
    )


def test_a_json_error_reads_once_and_an_empty_run_name_is_refused(tmp_path: Path) -> None:
    result = run("filter", "--jsonl", input='{"id": "a", "text": "hello world\n')
    assert "-:1: error: not JSON: Unterminated string starting at column 21" in result.stderr
    for name in ("", " \t"):  # a blank one was said to be empty (a trial)
        refused = CliRunner().invoke(
            main, ["filter", "--index", str(tmp_path / "s.sdx"), "--run-name", name], input="x\n"
        )
        assert (
            refused.exit_code == 2
            and "Invalid value for '--run-name': an empty or blank name" in refused.output
        )
    assert not (tmp_path / "s.sdx").exists()


def test_drop_empty_without_unique_is_refused_and_an_upper_case_ending_names_the_format(
    tmp_path: Path,
) -> None:
    lines = tmp_path / "l.txt"
    lines.write_text(f"{LINE}\n{LINE}\n")
    refused = CliRunner().invoke(main, ["scan", str(lines), "--drop-empty"])  # did nothing, silently (trial)
    assert refused.exit_code == 2 and "--drop-empty leaves empty documents out of --unique" in refused.output
    upper = tmp_path / "G.TSV"  # was written as JSONL (trial)
    assert run("scan", "-q", str(lines), "--duplicates", str(upper)).exit_code == 0
    assert upper.read_text().startswith("id\tduplicate_of\t")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # Written after every output, the name crashed the save: a traceback, exit 1 (trial).
        (["--index", "{d}/s.sdx", "--run-name", "night\udcff"], "'night\\xff' is not UTF-8 text"),
        # A cron line that lost its --index ran on without a word (trial).
        (["--run-name", "monday"], "--run-name is for a run with --index PATH, and none is given"),
        (["--wait", "5"], "--wait is for a run with --index PATH, and none is given"),
        # Saved as the file s.sdx (trial).
        (["--index", "{d}/s.sdx/"], "an index is a file, not a directory"),
    ],
)
def test_index_options_that_could_not_work_are_refused_before_any_work(
    tmp_path: Path, args: list[str], said: str
) -> None:
    for command in ("filter", "scan"):
        given = [arg.replace("{d}", str(tmp_path)) for arg in args]
        refused = CliRunner().invoke(main, [command, *given], input="x\n")
        assert refused.exit_code == 2 and said in refused.output and refused.stdout.count("x") == 0
        assert list(tmp_path.iterdir()) == []


def _corrupt_gzip(path: Path) -> None:
    """A gzip file whose deflate stream is damaged (zlib.error), not cut short."""
    import gzip

    data = bytearray(gzip.compress("".join(f"line {i}\n" for i in range(5000)).encode()))
    for i in range(30, 60):
        data[i] ^= 0x55
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_damaged_gzip_is_one_error_and_the_other_inputs_are_read(tmp_path: Path, jobs: str) -> None:
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    (crawl / "a.txt").write_text(f"{LINE}\n")
    (crawl / "c.txt").write_text(f"{OTHER}\n")
    _corrupt_gzip(crawl / "b.txt.gz")
    named = tmp_path / "named.txt.gz"
    _corrupt_gzip(named)
    for args in (["scan", str(crawl)], ["filter", str(named)], ["fingerprint", str(named)]):
        result = run(*args, "-j", jobs)
        assert result.exit_code == 3, result.output
        errors = [line for line in result.stderr.splitlines() if ": error: " in line]
        assert len(errors) == 1 and "damaged gzip data" in errors[0]
    kept = run("scan", str(crawl), "-j", jobs, "--unique", "-").stdout.splitlines()
    assert kept == [str(crawl / "a.txt"), str(crawl / "c.txt")]
    # In our words, not Python's: "Not a gzipped file (b'no')", "Compressed file ended
    # before the end-of-stream marker was reached" (a trial).
    packed = gzip.compress("".join(f"line {i}\n" for i in range(5000)).encode())
    for data, said in [(b"no gzip\n", "not gzip data"), (packed[:-30], "the gzip stream is cut short")]:
        (crawl / "b.txt.gz").write_bytes(data)
        named.write_bytes(data)
        for args in (["scan", str(crawl)], ["filter", str(named)]):
            errors = [line for line in run(*args, "-j", jobs).stderr.splitlines() if ": error: " in line]
            assert len(errors) == 1 and said in errors[0] and "marker" not in errors[0], errors
            # A member is one document, left out whole; a named file keeps the lines before.
            assert errors[0].endswith("; skipped") is (args[0] == "scan"), errors


def test_an_unreadable_input_is_left_to_the_reader_not_refused_as_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # click's Path(readable=True) stopped the run (exit 2) before reading the other
    # inputs; the reader reports an unreadable input and reads on (exit 3). Root reads
    # any file, so click's check (os.access) is what is made to fail here.
    ok, secret = tmp_path / "ok.txt", tmp_path / "secret.txt"
    ok.write_text(f"{LINE}\n")
    secret.write_text(f"{OTHER}\n")
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: os.fspath(p) != str(secret) and real_access(p, mode)
    )
    for args in (["scan", str(ok), str(secret)], ["filter", str(secret)], ["fingerprint", str(secret)]):
        assert run(*args, "-q").exit_code == 0


def test_a_summary_left_out_of_the_walk_by_exclude_leaves_no_temporary_document(tmp_path: Path) -> None:
    # --summary-json goes to a temporary file renamed over it at the end: one that the
    # walk would read (its name is not the one excluded) was read as an empty document.
    day = tmp_path / "day"
    day.mkdir()
    (day / "a.txt").write_text(f"{LINE}\n")
    (day / "b.txt").write_text(f"{OTHER}\n")
    summary = day / "summary.json"
    result = run(
        "scan", str(day), "--summary-json", str(summary), "--exclude", "summary.json", "--unique", "-"
    )
    assert result.exit_code == 0 and result.stdout.splitlines() == [str(day / "a.txt"), str(day / "b.txt")]
    assert json.loads(summary.read_text())["documents"] == 2
    assert sorted(p.name for p in day.iterdir()) == ["a.txt", "b.txt", "summary.json"]


@linux_only
def test_a_closed_stdin_is_empty_and_a_closed_stdout_is_one_error(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.txt").write_text(f"{LINE}\n")
    command = [sys.executable, "-m", "simdedup", "scan", "-q", str(folder)]
    closed_in = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False
    )
    no_stdin = subprocess.run(
        ["sh", "-c", '"$@" <&-', "sh", *command], capture_output=True, timeout=120, check=False
    )
    assert (
        no_stdin.returncode == 0
        and no_stdin.stdout == closed_in.stdout
        and b"Traceback" not in no_stdin.stderr
    )
    no_stdout = subprocess.run(
        ["sh", "-c", '"$@" >&-', "sh", *command], capture_output=True, timeout=120, check=False
    )
    assert no_stdout.returncode == 2 and no_stdout.stderr.decode().startswith("Error: stdout is closed")


def test_a_tree_deeper_than_pythons_recursion_is_walked(tmp_path: Path) -> None:
    folder = tmp_path / "deep"
    made = [str(folder)]
    for _ in range(sys.getrecursionlimit() + 50):  # os.makedirs itself recurses
        made.append(os.path.join(made[-1], "d"))
    leaf = Path(made[-1]) / "leaf.txt"
    try:
        for directory in made:
            os.mkdir(directory)
        leaf.write_text(f"{LINE}\n")
        result = run("scan", str(folder), "--unique", "-")
        assert result.exit_code == 0 and result.stdout == f"{leaf}\n"
    finally:  # by hand: shutil.rmtree, as pytest cleans up, recurses too
        leaf.unlink(missing_ok=True)
        for directory in reversed(made):
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(directory)


def test_a_folder_given_twice_or_inside_another_given_is_read_once(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "en").mkdir(parents=True)
    (corpus / "en" / "a.txt").write_text(f"{LINE}\n")
    (corpus / "b.txt").write_text(f"{OTHER}\n")
    for paths in ([corpus, corpus], [corpus, tmp_path / "corpus" / "." / "en"], [corpus / "en", corpus]):
        result = run("scan", *map(str, paths), "--report", "-")
        records = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(records) == 2 and {r["status"] for r in records} == {"unique"}
        assert ": warning: already read (given twice, or through a link); skipped" in result.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_named_twice_is_read_once(tmp_path: Path, jobs: str) -> None:
    # Read twice, each line was reported as a duplicate of itself (trial).
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    (tmp_path / "link.txt").symlink_to(lines)
    again = [str(tmp_path / "." / "lines.txt"), str(tmp_path / "link.txt")]
    for command in ("scan", "fingerprint"):
        result = run(
            command, str(lines), *again, "-j", jobs, *(["--report", "-"] if command == "scan" else [])
        )
        ids = (
            [json.loads(line)["id"] for line in result.stdout.splitlines()]
            if command == "scan"
            else [line.split("\t")[1] for line in result.stdout.splitlines()]
        )
        assert ids == [f"{lines}:1", f"{lines}:2"], result.stderr
        for path in again:
            assert f"{path}: warning: already read (given twice, or through a link); skipped" in result.stderr


def test_a_file_named_and_in_a_folder_given_is_read_once_where_it_comes_first(tmp_path: Path) -> None:
    # Read twice, a one-line file was reported as a duplicate of itself (Known limits).
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    named = folder / "sub" / "a.txt"
    named.write_text(f"{LINE}\n{OTHER}\n")
    (folder / "b.txt").write_text("words of another file entirely\n")
    (folder / "link.txt").symlink_to(named)
    for paths, ids, again in [
        ([named, folder], [f"{named}:1", f"{named}:2", str(folder / "b.txt")], ["link.txt", "sub/a.txt"]),
        ([folder, named], [str(folder / "b.txt"), str(named)], [named]),
    ]:
        result = run("scan", *map(str, paths), "--report", "-")
        assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ids, result.stderr
        for path in again:
            said = f"{folder / path}: warning: already read (given twice, or through a link); skipped"
            assert said in result.stderr
        if paths[0] == folder:  # the link in it is passed over for the file's own name there
            said = f"{folder / 'link.txt'}: warning: a link to {named}, which this run reads in its folder"
            assert said in result.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_stdin_named_twice_is_read_once_and_said_so(tmp_path: Path, jobs: str) -> None:
    # The second "-" read nothing, without a word, where a file named twice is warned of.
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.txt").write_text(f"{OTHER}\n")
    for command in ("scan", "fingerprint"):
        for paths in (["-", "-"], ["-", str(folder), "-"]):
            result = run(command, *paths, "-j", jobs, input=f"{LINE}\n{LINE} too\n")
            assert result.exit_code == 0, result.stderr
            said = "-: warning: already read (given twice, or through a link); skipped"
            assert result.stderr.count(said) == 1, result.stderr
            if command == "scan":
                assert ", 1 skipped, " in result.stderr, result.stderr


@linux_only
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_given_as_stdin_and_by_name_and_a_named_pipe_given_twice_are_read_once(
    tmp_path: Path, jobs: str
) -> None:
    # `scan f.txt - < f.txt` read the file twice, each line its own duplicate; `scan ff
    # ff` on a named pipe waited for a second writer, then read it again under the same
    # ids (a review). Both are told by (st_dev, st_ino), as named files are.
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{LINE}\n{OTHER}\n")
    said = "warning: already read (given twice, or through a link); skipped"
    for paths, again in [
        ([str(lines), "-"], "-"),
        (["-", str(lines)], str(lines)),
        (["-", "/dev/stdin"], "/dev/stdin"),
    ]:
        with lines.open("rb") as stdin:
            command = [sys.executable, "-m", "simdedup", "fingerprint", *paths, "-j", jobs]
            result = subprocess.run(command, stdin=stdin, capture_output=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        assert len(result.stdout.splitlines()) == 2, (paths, result.stdout)
        assert f"{again}: {said}".encode() in result.stderr
    fifo = tmp_path / "ff"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=(f"{LINE}\n",))
    writer.start()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "simdedup", "scan", str(fifo), str(fifo), "--report", "-", "-j", jobs],
            capture_output=True,
            timeout=60,
            check=False,
        )
    finally:
        writer.join(timeout=60)
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == [f"{fifo}:1"]
    assert f"{fifo}: {said}".encode() in result.stderr


@linux_only
def test_a_link_to_a_pipe_or_a_device_is_not_a_broken_link(tmp_path: Path) -> None:
    folder = tmp_path / "lk"
    folder.mkdir()
    (folder / "doc.txt").write_text(f"{LINE}\n")
    os.mkfifo(folder / "pipe")
    (folder / "pipe_link").symlink_to("pipe")
    (folder / "null_link").symlink_to("/dev/null")
    result = run("scan", str(folder))
    assert result.exit_code == 0 and "broken" not in result.stderr
    assert result.stderr.count("not a regular file; skipped") == 3


@pytest.mark.parametrize("jsonl", [[], ["--jsonl"]])
def test_jsonl_files_in_a_directory_are_warned_about_once(tmp_path: Path, jsonl: list[str]) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    record = json.dumps({"id": "a", "text": LINE})
    (shards / "p1.jsonl").write_text(f"{record}\n{record}\n")
    (shards / "p2.jsonl").write_text(json.dumps({"id": "c", "text": OTHER}) + "\n")
    result = run("scan", str(shards), "--unique", "-", *jsonl)
    assert result.stdout.splitlines() == [str(shards / "p1.jsonl"), str(shards / "p2.jsonl")]
    assert result.stderr.count("warning") == 1
    assert "p1.jsonl: warning: a file in a directory is one document, not JSONL records" in result.stderr
    (shards / "p1.jsonl").rename(shards / "p1.txt")
    (shards / "p2.jsonl").rename(shards / "p2.txt")
    assert ("warning" in run("scan", str(shards), *jsonl).stderr) == bool(jsonl)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-32-be"])
def test_utf16_and_32_are_read_as_a_directory_member_and_refused_line_by_line(
    tmp_path: Path, encoding: str
) -> None:
    # UTF-32 (a trial): its little-endian mark starts as UTF-16's, and a copy was read as
    # UTF-16, every character a feature of its own; big-endian it was a "binary file".
    bom = codecs.BOM_UTF32_BE if encoding == "utf-32-be" else b""
    folder = tmp_path / "wide"
    folder.mkdir()
    (folder / "a.txt").write_text(f"{LINE}\n")
    (folder / "b.txt").write_bytes(bom + f"{LINE}\n".encode(encoding))  # a copy of a.txt, with a BOM
    (folder / "c.txt").write_bytes(bom + f"{OTHER}\n".encode(encoding))
    result = run("scan", str(folder), "--report", "-")
    assert result.exit_code == 0 and "binary" not in result.stderr
    statuses = {Path(r["id"]).name: r["status"] for r in map(json.loads, result.stdout.splitlines())}
    assert statuses == {"a.txt": "unique", "b.txt": "duplicate", "c.txt": "unique"}
    assert run("compare", str(folder / "a.txt"), str(folder / "b.txt")).exit_code == 0  # as scan reads it
    lines = tmp_path / "lines.txt"
    lines.write_bytes(bom + f"{LINE}\n{OTHER}\n".encode(encoding))
    name = encoding[:6].upper()
    for jobs in ("1", "2"):
        refused = run("filter", str(lines), "-j", jobs)
        assert refused.exit_code == 3 and refused.stdout == ""
        assert (
            f"{lines}: error: {name} text is not read line by line (iconv -f {name}"
            in refused.stderr.replace(": convert it to UTF-8", "")
        )


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_refused_line_by_line(tmp_path: Path, encoding: str) -> None:
    # Named as a file (a Windows tool's export), it was read as lines of NUL-split
    # garbage without a word, and `filter` wrote them back (trial).
    lines = tmp_path / "lines.txt"
    lines.write_bytes(f"{LINE}\n{LINE}\nhi\n".encode(encoding))
    name = encoding.replace("-", "").upper().replace("UTF16", "UTF-16")
    hint = f"this looks like {name} text without a byte-order mark, which is not read line by line"
    for refused in (run("filter", str(lines)), run("filter", input=lines.read_bytes())):
        assert refused.exit_code == 3 and refused.stdout == ""
        assert f"error: {hint}: convert it to UTF-8 (iconv -f {name} -t UTF-8)" in refused.stderr
    assert run("filter", input=f"{LINE}\n{OTHER}\n".encode()).exit_code == 0


def test_a_first_line_like_utf16_refuses_the_whole_file_whatever_follows_it(tmp_path: Path) -> None:
    # Its first 64 KiB were judged whole, where 20,000 ASCII lines after it thinned out
    # its NULs: only the first chunk was refused, and filter wrote the 16,298 lines
    # after it, where stdin's reading refused them all (a session's review).
    f = tmp_path / "export.txt"
    f.write_bytes(b"a\x00b\x00\n" + b"".join(b"line %d of text\n" % i for i in range(20_000)))
    for args in (["filter", "-j1", str(f)], ["filter", "-j2", str(f)], ["filter", "--jsonl", "-j1", str(f)]):
        refused = subprocess.run([sys.executable, "-m", "simdedup", *args], capture_output=True)
        assert (refused.returncode, refused.stdout) == (3, b""), args
        assert b"this looks like UTF-16LE text without a byte-order mark" in refused.stderr
    assert run("filter", input=f.read_bytes()).stdout == ""


def test_a_binary_file_named_or_piped_is_refused_not_read_as_lines(tmp_path: Path) -> None:
    # A program or an archive named as a file was read as lines of invalid UTF-8, one
    # error each, and `filter` copied them through (a directory skips such files).
    program = tmp_path / "tool.bin"
    program.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x03\x00>\x00\n\xff\xfe" + b"text line\n" * 50)
    said = "error: its first line holds NUL bytes: binary data is not read as lines of text"
    for jobs in ("1", "2"):
        for args, data in [(["filter", str(program)], b""), (["filter"], program.read_bytes())]:
            refused = run(*args, "-j", jobs, input=data)
            assert (refused.exit_code, refused.stdout) == (3, ""), refused.stderr
            assert said in refused.stderr and "invalid UTF-8" not in refused.stderr
        printed = subprocess.run(
            [sys.executable, "-m", "simdedup", "fingerprint", "-j", jobs, str(program)], capture_output=True
        )
        assert (printed.returncode, printed.stdout) == (3, b"")
        assert f"{program}: {said}".encode() in printed.stderr


def test_gzip_data_on_stdin_or_in_a_file_not_named_gz_is_refused_not_read_as_lines(tmp_path: Path) -> None:
    # Read as lines, it gave thousands of errors, or a `filter` that wrote back a gzip
    # stream with some "duplicate" lines removed: a damaged file (trial).
    packed = gzip.compress(f"{LINE}\n{LINE}\n{OTHER}\n".encode())
    hidden = tmp_path / "lines.data"
    hidden.write_bytes(packed)
    named = tmp_path / "lines.txt.gz"
    named.write_bytes(packed)
    for jobs in ("1", "2"):
        for args, data, message in [
            (["filter"], packed, "-: error: gzip data is not read as text: zcat it into simdedup"),
            (["filter", "--jsonl"], packed, "-: error: gzip data is not read as text"),
            (
                ["filter", str(hidden)],
                b"",
                f"{hidden}: error: gzip data is not read as text: name it FILE.gz",
            ),
        ]:
            refused = run(*args, "-j", jobs, input=data)
            assert (refused.exit_code, refused.stdout) == (3, ""), refused.stderr
            assert (
                refused.stderr.count("error") == 2 and message in refused.stderr
            )  # the line, the summary's count
        assert run("filter", str(named), "-j", jobs).stdout == f"{LINE}\n{OTHER}\n"


@linux_only
def test_a_file_name_with_a_newline_is_named_on_one_line_on_stderr(tmp_path: Path) -> None:
    folder = tmp_path / "names"
    folder.mkdir()
    (folder / "bad\nname.txt").write_bytes(b"\xe9t\xe9 words\n")
    result = run("scan", str(folder), "-q")
    assert (
        result.stderr
        == f"{folder}/bad\\nname.txt: error: invalid UTF-8 at byte 1, its bytes that are not UTF-8 read as "
        "Windows-1252\n"
    )


def test_max_doc_size_cuts_a_line_where_it_cuts_the_same_text_in_a_file(tmp_path: Path) -> None:
    # A line was cut at --max-doc-size characters (a line of Chinese: three times the
    # bytes), a file at bytes; and a JSONL line's escapes counted against its text.
    lines = tmp_path / "lines.txt"
    lines.write_text("一二三四五六七八\n一二三四五六七九\n")
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.txt").write_text("一二三四五六七八")
    as_lines = run("fingerprint", str(lines), "--max-doc-size", "10")
    as_file = run("fingerprint", str(folder), "--max-doc-size", "10")
    expected = run("fingerprint", "-", input="一二三\n").stdout.split("\t")[0]
    assert [row.split("\t")[0] for row in as_lines.stdout.splitlines()] == [expected, expected]
    assert as_file.stdout.split("\t")[0] == expected
    assert "document is 24 bytes; fingerprinted its first 10 bytes" in as_lines.stderr
    record = json.dumps({"id": "x", "text": "一丁 short text"})  # 46 bytes escaped, 20 as text
    escaped = run("fingerprint", "--jsonl", "-", "--max-doc-size", "30", input=record + "\n")
    assert escaped.exit_code == 0 and escaped.stderr == ""


def test_compare_says_when_a_pair_rests_on_heads_that_scan_may_skip() -> None:
    # compare sees two documents; scan compares a head with the first HEAD_CROWD kept
    # heads near it only (a site's boilerplate), which compare cannot know: the heads
    # line says so.
    rng = random.Random(5)
    vocabulary = [f"v{i}" for i in range(400)]
    text = " ".join(rng.choice(vocabulary) for _ in range(200))
    header = " ".join(rng.choice(vocabulary) for _ in range(40))
    result = run("compare", "--text", text, "--text", f"{header} {text}")
    assert "beyond k" in result.stdout and result.exit_code == 0  # near by its heads alone
    assert (
        "within k; scan compares a head with the first 64 kept ones near it only (boilerplate)"
        in result.stdout
    )
    plain = run("compare", "--text", text, "--text", text + " v1")
    assert "scan compares" not in plain.stdout


def test_a_features_record_with_a_surrogate_in_its_id_is_filtered_and_saved(tmp_path: Path) -> None:
    f = tmp_path / "f.jsonl"
    f.write_text('{"id": "ok", "f": {"c": 1}}\n{"id": "x\\ud800", "f": {"a": 1}}\n', encoding="utf-8")
    index = tmp_path / "i.sdx"
    run = subprocess.run(
        [sys.executable, "-m", "simdedup", "filter", str(f), "--features-field", "f", "--index", str(index)],
        capture_output=True,
    )
    assert run.returncode == 3, run.stderr
    assert run.stdout == f.read_bytes()  # both records, as they came
    assert b"unpaired surrogate" in run.stderr and b"Traceback" not in run.stderr
    assert index.exists()


def test_jsonl_read_as_lines_is_warned_about_once_an_input(tmp_path: Path) -> None:
    # `zcat crawl.jsonl.gz | simdedup filter`, --jsonl forgotten: each record was read
    # whole as text, its id and url in it, and copies went through without a word (a trial).
    records = "".join(json.dumps({"id": f"r{i}", "text": LINE}) + "\n" for i in range(3))
    said = "warning: this line is a JSON object, read as a line of text: give --jsonl to read JSONL records"
    named = tmp_path / "crawl.json"
    named.write_text(records)
    for jobs in ("1", "2"):
        for args, data, where in [(["filter"], records, "-:1"), (["filter", str(named)], "", f"{named}:1")]:
            result = run(*args, "-j", jobs, input=data)
            assert result.exit_code == 0 and result.stderr.count(said) == 1, result.stderr
            assert f"{where}: {said}" in result.stderr
        assert said not in run("filter", "--jsonl", "-j", jobs, input=records).stderr
    plain = run("filter", input='{"a": 1}\n{not json} text\n')  # no string in it, or no JSON: text
    assert "JSON object" not in plain.stderr


def test_a_problem_that_every_record_has_is_named_ten_times_a_file_and_counted_whole(tmp_path: Path) -> None:
    # A misspelt --text-field was said of each of 2,520 records: of a 10M-line crawl,
    # 10M lines of stderr (a trial).
    f = tmp_path / "crawl.jsonl"
    f.write_text("".join(json.dumps({"id": str(i), "text": f"{LINE} {i}"}) + "\n" for i in range(40)))
    summary = tmp_path / "summary.json"
    result = run("scan", str(f), "--text-field", "body", "--summary-json", str(summary))
    said = [line for line in result.stderr.splitlines() if "no 'body' field" in line]
    assert [line.split(": error")[0] for line in said] == [f"{f}:{n}" for n in range(1, 11)]
    assert said[-1].endswith("(and so on: later lines of this file with this problem are not named)")
    assert json.loads(summary.read_text())["errors"] == 40 and result.exit_code == 3
    other = tmp_path / "other.jsonl"
    other.write_text(f.read_text())
    both = run("scan", str(f), str(other), "--text-field", "body")  # each file its own ten
    assert both.stderr.count("no 'body' field") == 20
    # numbers aside: a byte at another place on each line is the same problem (a review)
    latin = tmp_path / "latin1.txt"
    latin.write_bytes(b"".join(b"x" * (i % 50) + b"caf\xe9 au lait\n" for i in range(30)))
    said = [line for line in run("filter", str(latin)).stderr.splitlines() if "invalid UTF-8" in line]
    assert len(said) == 10 and "and so on" in said[9]


def test_counts_of_one_are_said_in_the_singular(tmp_path: Path) -> None:
    # "(1 features)", "1 pairs" (a review).
    compared = run("compare", "--text", "hello", "--text", "hello world").stdout.splitlines()
    assert compared[0].endswith("--text 1 (1 feature)") and compared[1].endswith("--text 2 (2 features)")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"a": LINE, "b": LINE, "duplicate": True}) + "\n")
    assert run("calibrate", str(pairs)).stdout.startswith("1 pair, 1 labelled duplicate\n")


def test_a_ctrl_c_while_the_command_line_is_parsed_exits_as_an_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # click's own handler said "Aborted!" and exited 1, which means duplicates found (a
    # trial: 1-2% of Ctrl-Cs 0.12 s after start).
    parse_args = click.Command.parse_args

    def interrupted(self: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(click.Command, "parse_args", interrupted)
    (tmp_path / "a.txt").write_text(f"{LINE}\n")
    result = run("scan", str(tmp_path / "a.txt"))
    assert (result.exit_code, result.stdout, result.stderr) == (130, "", "Error: interrupted\n")
    monkeypatch.setattr(click.Command, "parse_args", parse_args)
    assert run("scan", str(tmp_path / "a.txt")).exit_code == 0


def test_filter_of_an_empty_name_is_a_missing_file_not_stdin(tmp_path: Path) -> None:
    # `filter "$FILE"` with FILE unset read stdin and exited 0; scan '' says no such file.
    result = run("filter", "", input=f"{LINE}\n")
    assert (result.exit_code, result.stdout) == (3, "")
    assert ": error: no such file or directory" in result.stderr


@pytest.mark.parametrize("option", ["--unique", "--duplicates", "--report", "--summary-json"])
def test_an_output_given_twice_is_refused_where_the_first_file_went_unwritten(
    tmp_path: Path, option: str
) -> None:
    lines = tmp_path / "a.txt"
    lines.write_text(f"{LINE}\n{LINE}\n")
    first, second = tmp_path / "one.tsv", tmp_path / "two.tsv"
    result = run("scan", str(lines), option, str(first), option, str(second))
    assert result.exit_code == 2
    assert f"given 2 times ({first}, {second}): it names one file" in result.stderr
    assert not first.exists() and not second.exists()
    assert run("scan", str(lines), option, str(first), option, str(first)).exit_code == 0
    assert first.exists()


def test_a_file_that_is_no_index_gets_no_lock_file_beside_it(tmp_path: Path) -> None:
    # scan --index notes.txt and index merge left notes.txt.lock (and new.sdx.lock) behind.
    notes, lines = tmp_path / "notes.txt", tmp_path / "a.txt"
    notes.write_text("my notes\n")
    lines.write_text(f"{LINE}\n")
    for args in (
        ["scan", str(lines), "--index", str(notes)],
        ["index", "merge", str(tmp_path / "new.sdx"), str(notes)],
    ):
        result = run(*args)
        assert result.exit_code == 2 and f"{notes}: not a simdedup index file" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "notes.txt"]


def test_version_says_when_simdedup_was_built_without_its_compiled_cores() -> None:
    # pip said so only with -v, and nothing else did (a trial).
    from unittest import mock

    from simdedup import cli
    from simdedup import fingerprint as fingerprint_module
    from simdedup import index as index_module

    assert cli._version_message() == "%(prog)s, version %(version)s"
    for core in (
        mock.patch.object(index_module, "LOOPS_BUILT", False),
        mock.patch.object(fingerprint_module, "ascii_batch", None),
    ):
        with core:
            second = cli._version_message().splitlines()[1]
        assert second.startswith("built without its compiled cores (pip found no C compiler)")
