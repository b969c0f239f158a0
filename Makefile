# Quick start: `make perf` runs the perf suite, `make test` runs the plugin's tests (fastest first),
# `make test-unit` only tests/unit (seconds), `make test-fast` all but the end-to-end runs (no Ray).
# Both set up .venv first (Python packages, and the BytePS server built from source).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bpsperf-setup

.PHONY: setup perf test test-unit test-fast docs clean-venv

$(STAMP): pyproject.toml scripts/install-byteps-server.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,mxnet,torch]'
	PYTHON=$(PY) scripts/install-byteps-server.sh
	touch $(STAMP)

setup: $(STAMP)

perf: setup
	$(PY) -m pytest -m perf $(ARGS)

# tests/unit and tests/pytester on every core (pytest-xdist: no Ray, no training); then tests/e2e one test
# at a time, as a user's perf session runs: its runs train for real and take the measurement lock.
test: setup
	$(PY) -m pytest -n auto tests/unit tests/pytester $(ARGS)
	$(PY) -m pytest tests/e2e $(ARGS)

test-unit: setup
	$(PY) -m pytest tests/unit $(ARGS)

test-fast: setup
	$(PY) -m pytest -n auto -m "not e2e" tests $(ARGS)

# The docs site into site/ (MkDocs, warnings as errors), its reference pages written first.
docs: setup
	test -x .ci/tools/bin/mkdocs || ($(PYTHON) -m venv .ci/tools && .ci/tools/bin/python -m pip install -q \
		--disable-pip-version-check -r docs/requirements.txt)
	$(PY) scripts/reference_pages.py --write
	NO_MKDOCS_2_WARNING=1 .ci/tools/bin/mkdocs build --strict

clean-venv:
	rm -rf $(VENV)
