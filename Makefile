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

.PHONY: run test clean-venv

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	# torch first and pinned: the CPU build on disk (anything newer pulls a multi-GB CUDA build)
	$(VENV)/bin/python -m pip install --quiet "torch==2.13.0"
	$(VENV)/bin/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/icml24 verify --scale quick

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; rc=0; fi; exit $$rc

clean-venv:
	rm -rf $(VENV)
