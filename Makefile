# Two entry points on a fresh machine: `make demo` and `make test`. Both bootstrap .venv idempotently.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all test-fast lint bench clean-venv

# pip --quiet shows nothing for the half minute it takes: one line says what is happening, on stderr.
$(STAMP): pyproject.toml
	@if test -x $(BIN)/python; then echo "updating $(VENV) (pyproject.toml changed)..." >&2; \
	 else echo "setting up $(VENV) (first time only, about 40 s)..." >&2; fi
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/bosun demo

# Lint, types, every test that needs no worker CLI (the whole loop, plans, gates, the native worker
# against the replay server) and one real worker CLI per wire API: Chat Completions (Pi), Responses
# (Codex), Anthropic Messages (Claude Code), Gemini (Gemini CLI). With BOSUN_TEST_ALL=1 (CI sets it):
# every end-to-end test through every real worker CLI. Not -q: with -n, pytest-xdist then prints
# "bringing up nodes..." twice when stdout is not a terminal (tests/project/test_make_targets.py).
test: $(STAMP)
	@export BOSUN_CLI_BIN="$$(scripts/install-worker-clis.sh | tail -n 1)"; \
	 $(BIN)/ruff check src tests bench && $(BIN)/mypy src && \
	 $(BIN)/pytest -n 2 --no-header $(if $(BOSUN_TEST_ALL),,-m "not slow or smoke") $(PYTEST_ARGS)

# The whole suite, as CI runs it.
test-all:
	@$(MAKE) --no-print-directory test BOSUN_TEST_ALL=1

# Unit tests only (no worker CLIs needed).
test-fast: $(STAMP)
	@$(BIN)/pytest -n 2 --no-header -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP)
	@$(BIN)/ruff check src tests bench && $(BIN)/mypy src

bench: $(STAMP)
	@$(BIN)/python bench/overhead.py

clean-venv:
	rm -rf $(VENV)
