# Two entry points a newcomer needs: `make demo` (set up, then score the demo set)
# and `make test` (the whole suite). Everything installs into ./.venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup tools demo test lint clean

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

# Debian's prometheus brings promtool and a server the dashboard test scrapes with;
# checked on every setup (not only with the stamp), so an existing .venv gets it too.
tools:
	@if ! command -v promtool >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	fi

setup: $(STAMP) tools

demo: $(STAMP)
	$(BIN)/arbiter score --rubric rubrics/library/python-codegen.yaml eval_sets/codegen-demo.jsonl -o demo-rewards.jsonl

test: $(STAMP) tools
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) demo-rewards.jsonl
