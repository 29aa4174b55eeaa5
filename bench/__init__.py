"""Benchmarks, run by hand (see bench/README.md); `workloads` is shared with the tests."""
