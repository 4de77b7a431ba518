"""The commented example task contract `bosun template` prints.

A leaf module: `bosun template` prints it without loading the contract's models (pydantic), and a
test parses it with them, so the example always validates.
"""

TEMPLATE = """\
# A bosun task contract. Validate it with `bosun check task.yaml` (nothing runs); `bosun delegate
# task.yaml --dry-run` also prints the worker's command; `bosun schema` describes every field.
title: Fix the off-by-one in paginate()
# What the worker must do. Be specific: name files, functions, the behaviour wanted.
prompt: |
  tests/test_pages.py::test_last_page fails: paginate() drops the last item.
  Fix src/pages.py so every item appears on exactly one page. Do not change the tests.
mode: code            # code | explore | review | test
acceptance:           # criteria a reviewer (or self-review) checks
  - test_last_page passes
  - no other behaviour changes
verify:               # bosun runs these itself in the worktree; the worker's claims are never used
  - python -m pytest -q tests/test_pages.py
  # - run: ["npm", "test"]
  #   timeout_s: 300
  # - run: "ruff check . && mypy src"
  #   shell: true       # only with shell: true does a command go through /bin/sh
scope:                # globs the worker may change (empty: everything)
  - src/**
locked:               # globs it may never change (added to the always-locked defaults)
  - tests/**
# tests: extend       # keep | extend (may add and edit; the original tests must still pass) | rewrite
# proof: required     # required: lands on its own only if verify failed before the change and passes
#                     # after it; not-required: refactors, docs (no verify commands still needs review)
# permit: [tox.ini]   # always-locked paths this task may change (a reason for review, never bosun.toml)
# review:             # cross-review: another profile reads the verified change (replaces bosun.toml's [review])
#   profile: reviewer #   not the worker's profile
#   rounds: 2         #   0..3 readings; the worker fixes P0/P1 findings between them (0: no review)
#   block_on: P1      #   open findings this severe refuse the change (unset: they need a person)
difficulty: low       # low | medium | high (derived when absent)
risk: low             # low | medium | high
domain: python
# profile: cheap      # a profile from bosun.toml; --profile overrides
timeout_s: 600
# max_usd: 0.50       # stop the worker once it has spent this much (see [budget] in docs/configuration.md)
base: HEAD            # the ref the worktree starts from
limits:
  max_files: 10
  max_deleted_lines: 300
  max_diff_bytes: 200000
"""
