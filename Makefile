# The verbs people type. Everything installs into .venv; nothing outside it is touched.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYBIND := $(VENV)/baselines/.installed

.PHONY: install bytecode demo test lint bench bench-full clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml setup.py simdedup/_textcore.c simdedup/_indexcore.c | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(MAKE) --no-print-directory bytecode
	touch $(STAMP)

# The modules' bytecode, written once: an editable install leaves that to the first
# import, which does not write it where PYTHONDONTWRITEBYTECODE is set (as on this
# workplace's machines). Each command then compiled simdedup's sources at start-up,
# ~0.07 s of its ~0.22 s. A module edited since is compiled again as it is imported.
bytecode:
	$(BIN)/python -m compileall -q simdedup

# The C++ baseline for `make bench` only: it compiles from source (needs g++), and its
# module is also named `simhash`, so it lives in a directory of its own.
$(PYBIND): | $(STAMP)
	$(BIN)/python -m pip install --quiet --upgrade --target $(VENV)/baselines/simhash-pybind simhash-pybind==0.0.3
	touch $(PYBIND)

install: $(STAMP)

demo: $(STAMP)
	@echo '$$ simdedup scan examples/docs examples/lines.txt examples/records.jsonl --format table' >&2
	@$(BIN)/simdedup scan examples/docs examples/lines.txt examples/records.jsonl --format table

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check simdedup tests benchmarks
	$(BIN)/ruff format --check simdedup tests benchmarks

bench: $(STAMP) $(PYBIND) bytecode
	$(BIN)/python benchmarks/bench.py

bench-full: $(STAMP) $(PYBIND) bytecode
	$(BIN)/python benchmarks/bench.py --full

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
