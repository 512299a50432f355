"""Benchmarks: each prints its figures (and ratios side by side) from one run; none is a test."""
