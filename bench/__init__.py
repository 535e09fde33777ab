"""Benchmarks: each prints the baseline and ours, measured in the same run, and the ratio last."""
