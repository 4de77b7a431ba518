"""bosun: hand bounded coding tasks to cheap worker agents and keep authority over what lands."""

__version__ = "0.1.0"
