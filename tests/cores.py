"""Whether simdedup's compiled cores were built: pip installs it without them where it
finds no C compiler (README, Quick start), and the tests of the cores themselves skip."""

from __future__ import annotations

import importlib.util

import pytest

INDEX_CORE = importlib.util.find_spec("simdedup._indexcore") is not None
TEXT_CORE = importlib.util.find_spec("simdedup._textcore") is not None
WITHOUT = "simdedup was installed without its compiled core (no C compiler at install)"

needs_index_core = pytest.mark.skipif(not INDEX_CORE, reason=WITHOUT)
needs_text_core = pytest.mark.skipif(not TEXT_CORE, reason=WITHOUT)
