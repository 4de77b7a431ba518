"""Worker adapters: one module per CLI, all producing the normalized events of ``base``."""
