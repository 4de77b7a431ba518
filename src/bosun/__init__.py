"""bosun: hand bounded coding tasks to cheap worker agents and keep authority over what lands."""

from bosun.core.lean_imports import skip_pydantic_plugins
from bosun.core.version import VERSION

__version__ = VERSION

# The layers, highest first, each made of folders under bosun/ (and the three top-level entry and
# process modules): a module imports its own layer or one below it, never one above, and no import
# closes a cycle. tests/project/test_layering.py reads this and fails on an arrow back up.
LAYERS = (
    ("entry", ("__main__", "launch", "cli")),
    ("apps", ("apps", "mcp", "web", "skills", "replay")),
    ("plans", ("plans",)),
    ("engine", ("engine", "parents")),
    ("workers", ("workers", "remote")),
    ("store/isolation", ("store", "isolation")),
    ("proc", ("proc",)),
    ("base", ("core", "gates", "sandbox", "__init__")),
)

skip_pydantic_plugins()
