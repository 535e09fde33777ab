# Two entry points a newcomer needs: `make demo` (set up, then score the demo set)
# and `make test` (the whole suite). Everything installs into ./.venv, except the
# trainers' environment (./.venv-trainers), where tests/trainers run the adapters
# from the wheel's client-only install.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TRAINERS := .venv-trainers
TRAINERS_STAMP := $(TRAINERS)/.installed
WHEEL_DIR := build/dist
# The exact CPU build the machines hold; the published requirements only bound torch below.
TORCH := torch==2.13.0

.PHONY: setup tools bytecode wheel demo test lint docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,trainers]' '$(TORCH)'
	@# verl and OpenRLHF pin GPU stacks their reward paths never import: no deps here,
	@# the 'trainers' extra above brings what those paths need.
	$(BIN)/pip install --quiet --no-deps 'verl==0.9.1' 'openrlhf==0.11.2' '$(TORCH)'
	@# The browser tests drive Debian's chromium; install it where we can (root with apt).
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi
	touch $(STAMP)

# Debian's prometheus brings promtool and a server the dashboard test scrapes with;
# checked on every setup (not only with the stamp), so an existing .venv gets it too.
# The compilers and runtimes of the languages beyond Python, and the libraries
# HumanEvalPack's tests use (testify; the rand, regex and md5 crates), all from
# Debian's packages: a language whose toolchain is missing fails its tasks typed
# (toolchain_missing), and the strict suite fails.
NODE_LIBRARIES := /usr/local/lib/arbiter/node
TOOLCHAIN_PACKAGES := g++ default-jdk-headless golang-go rustc cargo nodejs libboost-dev \
	golang-github-stretchr-testify-dev librust-rand-dev librust-regex-dev librust-md5-dev
tools:
	@if ! command -v promtool >/dev/null && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	fi
	@if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
		! dpkg-query -W -f='$${Status}\n' $(TOOLCHAIN_PACKAGES) 2>/dev/null | grep -qv '^install ok installed$$' && \
		[ "$$(dpkg-query -W -f='$${Status}\n' $(TOOLCHAIN_PACKAGES) 2>/dev/null | wc -l)" = "$(words $(TOOLCHAIN_PACKAGES))" ]; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(TOOLCHAIN_PACKAGES) >/dev/null; \
	fi

	@# The npm packages HumanEvalPack's JavaScript solutions require (JavaScript/162's own
	@# solution loads js-md5), where the JavaScript language puts Node's NODE_PATH
	@# (graders/languages/javascript.py, NODE_LIBRARIES); the npm registry is reachable.
	@if command -v npm >/dev/null && [ "$$(id -u)" = 0 ] && [ ! -d $(NODE_LIBRARIES)/node_modules/js-md5 ]; then \
		npm install --silent --no-audit --no-fund --no-update-notifier --prefix $(NODE_LIBRARIES) js-md5@0.8.3 >/dev/null; \
	fi

# The wheel a user installs, built from this checkout (pip builds it in isolation).
wheel:
	rm -rf $(WHEEL_DIR)
	$(BIN)/pip wheel --quiet --no-deps -w $(WHEEL_DIR) .

# The trainers' environment: the wheel's base install (client and adapters, nothing of
# the server) beside the trainers' own pinned dependencies, as in a training job.
$(TRAINERS_STAMP): pyproject.toml $(STAMP)
	$(MAKE) wheel
	rm -rf $(TRAINERS)
	$(PYTHON) -m venv $(TRAINERS)
	$(TRAINERS)/bin/pip install --quiet --upgrade pip
	$(TRAINERS)/bin/pip install --quiet "$$(ls $(WHEEL_DIR)/arbiter_rewards-*.whl)[trainers]" '$(TORCH)' 'pytest>=8'
	$(TRAINERS)/bin/pip install --quiet --no-deps 'verl==0.9.1' 'openrlhf==0.11.2' '$(TORCH)'
	@# Both wheels ship their own test suites as a top-level `tests` package, which would
	@# hide this repository's `tests` from pytest; neither imports it.
	rm -rf $(TRAINERS)/lib/python*/site-packages/tests
	touch $(TRAINERS_STAMP)

# This checkout's modules compiled ahead (an editable install writes no bytecode where
# PYTHONDONTWRITEBYTECODE is set, and every command would compile them again: a fifth
# of the first reward of `arbiter score`). compileall skips the links in arbiter/, so
# the packages are named; files already compiled are skipped.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 arbiter api graders monitoring reward_models rubrics store >/dev/null

setup: $(STAMP) $(TRAINERS_STAMP) tools bytecode

demo: setup
	$(BIN)/arbiter score --rubric rubrics/library/python-codegen.yaml eval_sets/codegen-demo.jsonl -o demo-rewards.jsonl
	$(BIN)/arbiter score --rubric rubrics/library/cpp-competitive.yaml eval_sets/cpp-stdio-demo.jsonl -o demo-cpp-rewards.jsonl

# First, alone on a quiet machine, the tests that need it to themselves (marked
# exclusive: they measure CPU shares, load every core on purpose, or run a Ray cluster);
# then the rest on TEST_WORKERS processes, a test file per worker at a time (a module's
# servers start once; a module may split by a parameter, see tests/conftest.py), the
# slowest first; then tests/trainers in the trainers' environment on a wheel of this
# very checkout (-P and append mode: the installed arbiter, never the source tree).
# Each part lists its slowest tests (--durations), so every run says where the time went.
TEST_WORKERS ?= 3
test: $(STAMP) $(TRAINERS_STAMP) tools bytecode
	@status=0; \
	$(BIN)/python -m pytest -q --durations=15 -m exclusive || status=$$?; \
	$(BIN)/python -m pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not exclusive" || status=$$?; \
	$(MAKE) --no-print-directory wheel && \
	$(TRAINERS)/bin/pip install --quiet --no-deps --force-reinstall $(WHEEL_DIR)/arbiter_rewards-*.whl && \
	$(TRAINERS)/bin/python -P -m pytest -q --import-mode=append tests/trainers || status=$$?; \
	exit $$status

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The documentation site (mkdocs.yml), strictly: a broken link or anchor, or a page left out of
# the navigation, fails the build. The reference pages are generated from the code as it builds
# (docs/hooks.py). Open build/site/index.html (search needs it served:
# python -m http.server -d build/site); the site fetches nothing from the network.
SITE := build/site
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(SITE)
	@echo "built $$(find $(SITE) -name '*.html' ! -name 404.html | wc -l) pages into $(SITE) (open $(SITE)/index.html)"

clean:
	rm -rf $(VENV) $(TRAINERS) $(WHEEL_DIR) $(SITE) demo-rewards.jsonl demo-cpp-rewards.jsonl
