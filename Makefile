# The few commands everyone runs. `make demo` and `make test` each set up
# .venv first, so both work on a fresh clone.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/interlock demo

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests bench

typecheck: $(VENV)/.installed
	$(BIN)/mypy

unit: $(VENV)/.installed
	$(BIN)/pytest

test: lint typecheck unit

# Each benchmark prints its figures and ends with one JSON line.
BENCHES := dispatch command_hooks agent_loop audit bridge serve guard console
bench: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	set -e; for b in $(BENCHES); do echo "== bench/$$b.py"; $(BIN)/python bench/$$b.py; done

docs: $(VENV)/.installed
	$(BIN)/interlock events --markdown > docs/events.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
