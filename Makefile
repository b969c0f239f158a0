# Quick start: `make perf` runs the perf suite, `make test` runs the plugin's tests.
# Both set up .venv first (Python packages, and the BytePS server built from source).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bpsperf-setup

.PHONY: setup perf test clean-venv

$(STAMP): pyproject.toml scripts/install-byteps-server.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,mxnet]'
	PYTHON=$(PY) scripts/install-byteps-server.sh
	touch $(STAMP)

setup: $(STAMP)

perf: setup
	$(PY) -m pytest -m perf $(ARGS)

test: setup
	$(PY) -m pytest tests $(ARGS)

clean-venv:
	rm -rf $(VENV)
