# Two commands from a fresh clone: `make train` and `make test` (each sets up first).
.PHONY: setup train test test-fast lint bench
VENV := .venv/bin

setup:
	bash scripts/setup.sh

train: setup
	$(VENV)/python -m trainer +experiment=lstm_ppo $(ARGS)

# Two pytest-xdist workers: most tests wait on Node start-ups and sockets, so two share the
# two cores of a small box well (~1.6x faster than one); TEST_JOBS=0 runs them in-process.
TEST_JOBS ?= 2
test: setup lint
	$(VENV)/python -m pytest -n $(TEST_JOBS) --dist loadgroup $(ARGS)

# The edit-test loop: unit tests only (no simulator, server or subprocess), under a minute.
test-fast: setup
	$(VENV)/python -m pytest -m unit -q $(ARGS)

# Style and architecture: ruff lint + format, import-linter contracts (pyproject.toml).
lint: setup
	$(VENV)/ruff check .
	$(VENV)/ruff format --check .
	$(VENV)/lint-imports

bench: setup
	$(VENV)/python scripts/bench/bench_env.py $(ARGS)
