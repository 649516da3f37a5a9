# The project's task runner. CI calls `make test` verbatim (see .ci/run).
.PHONY: help venv serve test lint typecheck unit bench-locomo bench-load bench-cold-start format

help:
	@echo "make serve         run MetaCortex on the embedded default (SQLite + local model)"
	@echo "make test          lint, type-check and run every test (Firestore emulator included)"
	@echo "make format        apply ruff formatting and safe fixes"
	@echo "make bench-locomo  LoCoMo retrieval benchmark (docs/benchmarks.md)"
	@echo "make bench-load    16-client load test against a local server (docs/benchmarks.md)"
	@echo "make bench-cold-start  Cloud Functions entry cold start (docs/benchmarks.md)"

# Tests run in one process per core (pytest-xdist; a test file stays in one process):
# `make unit TEST_WORKERS=0` runs them in this process, e.g. with ARGS=tests/x.py -x.
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 1)

# The development venv: the package with the test tools and cloud libraries (extras).
venv:
	@scripts/bootstrap

# The server needs the package alone; `make test` adds the extras to the same venv.
serve:
	@scripts/bootstrap --core
	.venv/bin/metacortex serve $(ARGS)

lint: venv
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

typecheck: venv
	.venv/bin/mypy

unit: venv
	.venv/bin/pytest -n $(TEST_WORKERS) --dist loadfile $(ARGS)

test: lint typecheck unit

format: venv
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

bench-locomo: venv
	.venv/bin/python bench/locomo.py $(ARGS)

bench-load: venv
	.venv/bin/python bench/load.py $(ARGS)

bench-cold-start: venv
	.venv/bin/python bench/cold_start.py $(ARGS)
