"""bosun's version, declared once: the package root re-exports it as ``bosun.__version__``, and the
modules under ``core`` read it here so that no folder imports the package root back."""

VERSION = "0.1.0"
