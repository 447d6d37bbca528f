"""Benchmark suite: ways to score a LightGBM ensemble in Spark, treescore, and the physical limit.

Run `python -m bench` (full), `python -m bench --quick` (the full run's ratios on fewer rows: section A takes under 4 minutes) or
`python -m bench --smoke` (tiny sizes, for the smoke test). See bench/README.md.
Nothing here is a pass/fail test: it measures and reports.
"""
