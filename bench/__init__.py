"""Benchmarks: `make bench` (python -m bench) runs every module listed in BENCHMARKS."""
