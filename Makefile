# tether — the two set-up commands are `make demo` and `make test`; both install what they need.
PY ?= python3
UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := $(PY) -m uv
endif
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: demo-tryton install demo serve test lint typecheck unit bench services chromium tryton tryton-serve clean eval eval-baseline

$(BIN)/tether: pyproject.toml uv.lock
	@$(PY) -m uv --version >/dev/null 2>&1 || command -v uv >/dev/null 2>&1 || $(PY) -m pip install -q uv
	$(UV) sync --frozen
	@touch $@

install: $(BIN)/tether

demo: install
	$(BIN)/tether demo --host $(HOST) --port $(PORT)

# the ERP assistant on Tryton (docs/erp.md "Tryton"): trytond, tether serve against it, each role's questions
demo-tryton: tryton
	$(BIN)/tether tryton demo --host $(HOST) --port $(PORT)

serve: install
	$(BIN)/tether serve --host $(HOST) --port $(PORT)

services:
	@bash scripts/services.sh

# The chat page's browser tests drive Debian's Chromium through Playwright (never `playwright install`).
CHROMIUM := /usr/bin/chromium
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium fonts-wqy-microhei fonts-noto-color-emoji; \
	  else echo "!!! $(CHROMIUM) is missing: as root, apt-get update && apt-get install -y chromium"; fi; \
	fi

lint: install
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

typecheck: install
	$(BIN)/mypy

# the Tryton tests (tests/tryton) run a real trytond: its dependency group comes with `make test`
tryton: install
	$(UV) sync --frozen --inexact --group tryton

# the local Tryton (docs/erp.md "Tryton"): prepared on first use, then trytond in the foreground
tryton-serve: tryton
	$(BIN)/tether tryton serve

unit: install services chromium tryton
	$(BIN)/pytest -q

test: lint typecheck unit

bench: install
	$(UV) sync --frozen --group bench
	$(BIN)/python bench/w1.py
	$(BIN)/python bench/w2.py
	$(BIN)/python bench/sqlguard.py
	$(BIN)/python bench/finance.py
	$(BIN)/python bench/analysis_scale.py
	$(BIN)/python bench/erp.py
	$(BIN)/python bench/scale.py

# tether eval (docs/evals.md): every suite with the planner; the baseline `make test` holds the fast subset to
eval: install
	$(BIN)/tether eval run --suite all --model planner --json var/eval/planner.json --report var/eval/planner.html

eval-baseline: install
	$(BIN)/tether eval run --fast --model planner --record-baseline evals/baseline.json

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
