"""bosun's command line (see main.py); the package first imports argparse and pathlib lean."""

from bosun.core.lean_imports import import_argparse_and_pathlib

import_argparse_and_pathlib()
