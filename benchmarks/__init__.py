"""The benchmarks, each a module run from the repository's root: `python -m benchmarks.bench_browser`
(Python then finds `tests.support` from the current folder). See docs/benchmarks.md.
"""
