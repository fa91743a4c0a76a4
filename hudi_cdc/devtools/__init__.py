"""Helpers for the demo, tests and benchmarks: never used on the data path."""
