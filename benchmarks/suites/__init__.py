"""Benchmarks a developer re-runs when the code or the machine changes: the bench's peers
comparison, the speed goals and the measurements they build on."""
