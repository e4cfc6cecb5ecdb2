"""The README's examples are real: its console blocks and its Python run as shown."""

from __future__ import annotations

import doctest
import importlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def console_examples() -> list[tuple[str, str]]:
    """(command, expected stdout) for each `$ command` in a console block."""
    examples = []
    for block in BLOCK.findall(README.read_text(encoding="utf-8")):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            examples.append((command, output))
    return examples


@pytest.mark.parametrize("command, expected", console_examples(), ids=lambda x: x[:50])
def test_readme_console_example(command: str, expected: str, tmp_path: Path) -> None:
    # TMPDIR: the examples' `mktemp -d` folders go where pytest cleans up (each run left
    # them in /tmp, 186 folders over a few days).
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "TMPDIR": str(tmp_path)}
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.stdout == expected
    assert "Traceback" not in result.stderr


def test_readme_python_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its tempfile.mkdtemp(), as above
    failures, tried = doctest.testfile(str(README), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
    assert list(tmp_path.iterdir())


def test_modules_docstring_examples() -> None:
    # importlib, because the package's `dedup` function shadows the module of that name.
    for name in ("simdedup.dedup", "simdedup.settings"):
        module = importlib.import_module(name)
        failures, tried = doctest.testmod(module)
        assert tried > 0 and failures == 0
