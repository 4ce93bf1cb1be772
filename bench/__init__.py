"""Benchmarks: `make bench` (python -m bench). Loopback only; every part is bounded in time."""
