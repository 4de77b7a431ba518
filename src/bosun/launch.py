"""The ``bosun`` command's entry point.

A validating command goes to the warm process first (``warm_client``), before argparse and the
command line's modules load: a command the warm process runs costs this process little more than
the interpreter's own start. Everything else, and a command the warm process does not take, goes to
``cli/main.py`` as before.
"""

from __future__ import annotations

import sys


def main() -> int:
    from bosun.core.warm_client import run

    code = run(sys.argv[1:])
    if code is not None:
        return code
    from bosun.cli.main import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
