# Quick start: `make perf` runs the perf suite, `make test` runs the plugin's tests (fastest first),
# `make test-unit` only tests/unit (seconds), `make test-fast` all but the end-to-end runs (no Ray).
# Both set up .venv first (Python packages, and the BytePS server built from source).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bpsperf-setup
# BytePS's source distribution, kept by scripts/install-byteps-server.sh: the server is built from it,
# and the tests read the BytePS source they cite out of it (tests/helpers/byteps_source.py).
BYTEPS_SDIST := .deps/byteps-0.2.5.post15.tar.gz

.PHONY: setup perf test test-unit test-fast docs clean-venv

$(STAMP): pyproject.toml scripts/install-byteps-server.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,mxnet,torch]'
	PYTHON=$(PY) scripts/install-byteps-server.sh
	touch $(STAMP)

# Set up earlier, the sdist since removed: fetch it again (the script then finds the server installed).
$(BYTEPS_SDIST): | $(STAMP)
	PYTHON=$(PY) scripts/install-byteps-server.sh

setup: $(STAMP) $(BYTEPS_SDIST)

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
