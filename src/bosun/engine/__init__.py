"""The run engine: the state machine, per-run locks, and the loop that advances a run."""
