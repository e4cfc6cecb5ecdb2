# The verbs people type. Everything installs into .venv; nothing outside it is touched.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint bench bench-full clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m pip install --quiet --upgrade --target $(VENV)/baselines/simhash-pybind simhash-pybind==0.0.3
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@echo '$$ simdedup scan examples/docs examples/lines.txt examples/records.jsonl --format table' >&2
	@$(BIN)/simdedup scan examples/docs examples/lines.txt examples/records.jsonl --format table

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check simdedup tests benchmarks
	$(BIN)/ruff format --check simdedup tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

bench-full: $(STAMP)
	$(BIN)/python benchmarks/bench.py --full

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
