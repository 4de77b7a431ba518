"""Isolation: keeping workers away from the user's repository.

``git`` runs bosun's own git plumbing, ``snapshot`` carries the user's uncommitted work into a worker's
start commit without touching their index, stash, refs or files, ``worktree`` creates the worker's
worktree, reads its change back as a patch and lands that patch, and ``guard`` builds the git shim
and hooks that stop a worker from rewriting history, moving refs or pushing.
"""
