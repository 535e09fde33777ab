# Two entry points a newcomer needs: `make demo` (set up, then score the demo set)
# and `make test` (the whole suite). Everything installs into ./.venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,trainers]' 'torch==2.13.0'
	@# verl and OpenRLHF pin GPU stacks their reward paths never import: no deps here,
	@# the 'trainers' extra above brings what those paths need.
	$(BIN)/pip install --quiet --no-deps 'verl==0.9.1' 'openrlhf==0.11.2' 'torch==2.13.0'
	@# The browser tests drive Debian's chromium; install it where we can (root with apt).
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/arbiter score --rubric rubrics/library/python-codegen.yaml eval_sets/codegen-demo.jsonl -o demo-rewards.jsonl

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) demo-rewards.jsonl
