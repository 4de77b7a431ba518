"""``python -m bosun.replay [serve] --script S.yaml ...``: the replay server without the bosun CLI."""

import sys

from bosun.replay.serve import main_serve

args = sys.argv[1:]
raise SystemExit(main_serve(args[1:] if args[:1] == ["serve"] else args))
