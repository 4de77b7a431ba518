"""bosun's command line (see main.py); the package first imports argparse and pathlib lean."""

from bosun.cli.lean_imports import import_lean

import_lean()
