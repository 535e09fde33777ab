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
	$(BIN)/pip install --quiet -e '.[dev]'
	@# The browser tests drive Debian's chromium; install it where we can (root with apt).
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/arbiter score --rubric rubrics/library/efficiency.yaml eval_sets/demo.jsonl -o demo-rewards.jsonl

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) demo-rewards.jsonl
