# The two newcomer commands: `make repro` (run the DAG on the embedded sample) and `make test`.
SHELL := /bin/bash
export PATH := $(CURDIR)/.venv/bin:$(PATH)
export HF_HUB_OFFLINE := 1
export DVC_NO_ANALYTICS := 1

.PHONY: install install-tests repro test
install:
	bash scripts/bootstrap.sh

install-tests:
	bash scripts/bootstrap.sh --tests

repro: install
	dvc repro

test: install-tests
	ruff check .
	ruff format --check .
	mypy
	lint-imports
	pytest
