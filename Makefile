# Two commands on a fresh machine: `make run` (the embedded default, offline) and `make test`; `make lint` checks
# style, types (mypy) and the layer contract ([tool.importlinter] in pyproject.toml).
# Each sets up what is missing first and are fast when everything is already there. Every program codesign
# runs is declared in codesign/programs.py (`python -m codesign.install --list`).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup setup-test run test lint bench
setup: $(STAMP)
	@$(PY) -m codesign.install run

setup-test: $(STAMP)
	@$(PY) -m codesign.install test

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,agents]'
	@touch $(STAMP)

run: setup
	$(PY) -m codesign

# Four workers on 2 cores: many tests wait (on leases, caps, servers, Playwright's failing expects). With two
# workers the cores were 81 % busy, with three ~90-95 %, with four 99-100 % in every minute of a fresh-machine
# run (first phase 785-824 s against 814-869 s with three). Then what must have the machine to itself. A test
# that needs the Docker Engine runs on one worker (tests/conftest.py).
test: setup-test
	$(PY) -m pytest -q -n 4 --dist loadgroup -m "not alone" --durations=15
	$(PY) -m pytest -q -m alone --durations=15

# Style, types and layers: what `.ci/run` checks before the tests (only the venv is needed, no programs).
lint: $(STAMP)
	$(VENV)/bin/ruff check codesign tests benchmarks
	$(VENV)/bin/ruff format --check codesign tests benchmarks
	$(VENV)/bin/mypy -p codesign
	$(VENV)/bin/lint-imports

bench: setup
	$(PY) benchmarks/evidence.py
