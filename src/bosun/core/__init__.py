"""The base layer: errors, paths, config, the task contract, states and the other modules every
layer above may import; it imports nothing of bosun's above it."""
