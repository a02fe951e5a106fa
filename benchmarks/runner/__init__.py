"""The pieces of benchmarks/bench.py: scenario files (scenario), the bench
command a run becomes (command), data sets (datasets), and splicing a
rendered section into BENCHMARKS.md (markers)."""
