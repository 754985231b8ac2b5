# The few commands everyone runs. `make demo` and `make test` each set up
# .venv first, so both work on a fresh clone.
PY ?= python3
# pytest caches its rewritten test modules as bytecode; an environment that turns
# bytecode off makes every run rewrite and compile all ~450 test modules again
# (about 7 s of `make test-fast`'s collection).
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast test-serial lint typecheck unit bench docs clean wheel-check

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The demo needs only the runtime dependencies (no test or type-check tools).
$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

demo: $(VENV)/.runtime
	$(BIN)/interlock demo

# Build the wheel, install it alone into a fresh venv and run the demo from it:
# catches files missing from the wheel and dependencies missing from pyproject.
WHEEL_DIR := build/wheel-check
wheel-check: $(VENV)/.installed
	rm -rf $(WHEEL_DIR)
	$(BIN)/python -m build --no-isolation --wheel --outdir $(WHEEL_DIR)/dist .
	$(PY) -m venv $(WHEEL_DIR)/venv
	$(WHEEL_DIR)/venv/bin/python -m pip install --quiet $(WHEEL_DIR)/dist/*.whl
	cd $(WHEEL_DIR) && venv/bin/interlock --version \
	    && venv/bin/python -c 'import tree_sitter_bash' && venv/bin/interlock demo \
	    && venv/bin/interlock init --examples . && test -f interlock-examples/project/.interlock/config.toml

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests bench

typecheck: $(VENV)/.installed
	$(BIN)/mypy

# Every test (unit, slow and end to end; CI runs this through `make test`).
unit: $(VENV)/.installed
	$(BIN)/pytest

test: lint typecheck unit

# The unit tests only: no `slow` or `e2e` marks, and the folders and modules that are
# end to end or slow throughout are not even imported (tests/conftest.py says what
# gets which mark), on every core (pytest-xdist).
test-fast: $(VENV)/.installed
	$(BIN)/pytest -n auto -m "not slow and not e2e and not realclients" \
	    --ignore=tests/adversarial --ignore=tests/console --ignore=tests/realclients \
	    --ignore=tests/adapters/frameworks

# Each benchmark prints its figures and ends with one JSON line.
BENCHES := dispatch command_hooks agent_loop audit bridge serve guard console cli fleet
# The benchmarks get a venv of their own: the bench extra brings Hermes Agent (the
# dispatch anchor), whose pinned openai 2.x conflicts with the OpenAI Agents SDK
# that the test venv holds for its adapter.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	$(PY) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[server,bench]'
	touch $@

bench: $(BENCH_VENV)/.installed
	set -e; for b in $(BENCHES); do echo "== bench/$$b.py"; $(BENCH_VENV)/bin/python bench/$$b.py; done

docs: $(VENV)/.installed
	$(BIN)/interlock events --markdown > docs/events.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build
