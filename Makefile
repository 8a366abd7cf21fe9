# The two newcomer commands: `make repro` (run the DAG on the embedded sample) and `make test`.
SHELL := /bin/bash
export PATH := $(CURDIR)/.venv/bin:$(PATH)
export HF_HUB_OFFLINE := 1
export DVC_NO_ANALYTICS := 1

.PHONY: install repro test
install:
	bash scripts/bootstrap.sh

repro: install
	dvc repro

test: install
	ruff check .
	ruff format --check .
	mypy
	lint-imports
	pytest
