"""Benchmarks of code_mode against raw mini-racer, measured in the same run.

Run ``python -m bench.run`` (``--quick`` for tiny sizes); see ``docs/performance.md``.
Nothing here is imported by the library; matplotlib is only needed for the plots.
"""
