"""The local web dashboard (``bosun dash``): a thin edge over the store, the run records and the engine."""
