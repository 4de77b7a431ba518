"""Remote workers over NATS JetStream.

A coordinator (``bosun delegate --remote``) ships a task and the base it starts from to a pool of
agents (``bosun agent serve``); the agent holding the task's lease runs the worker step and returns
the change. The coordinator applies it to its own worktree and verifies it locally: nothing an agent
says is trusted. Every module here imports ``nats`` lazily, inside functions, so the CLI starts fast
without the optional dependency. See docs/remote.md.
"""
