"""bosun: hand bounded coding tasks to cheap worker agents and keep authority over what lands."""

from bosun.lean_imports import skip_pydantic_plugins

__version__ = "0.1.0"

skip_pydantic_plugins()
