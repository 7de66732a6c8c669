"""Benchmark runner: code_mode against raw mini-racer, measured in the same run.

    python -m bench.run                 # full sizes (about 5 minutes on 2 cores)
    python -m bench.run --quick         # tiny sizes, a smoke run
    python -m bench.run --out DIR       # where results.json, results.md and PNGs go
    python -m bench.run --no-plots      # no matplotlib needed
    python -m bench.run --only B1,B4    # a subset
    python -m bench.run --isolation thread   # one EngineConfig.isolation mode only
    python -m bench.run --also-with max_journal_chars=0   # each mode also with a field changed

Every target is a ratio against a baseline measured in the same run with mini-racer
used directly (see ``bench/raw.py``), except where the issue sets an absolute bound
(B5 against ``trio.sleep``, B6 against fixed budgets). Each side (our side once per
isolation mode, ``process`` and ``thread``, and the baseline) runs in a fresh process
of its own with its own V8 flags (``bench/side.py``), in rounds whose order alternates
so that drift of the machine hits every side. A ratio compares with the baseline's
best figure (B1: paced or back to back, whichever is faster; B4: until V8 confirmed
the stop). The results record the machine: CPU model and its ``pku`` flag, kernel,
load average before and after each benchmark.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as ``python bench/run.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import ours
from bench.results import DEFAULT_OUT, write_results
from bench.sizes import FULL, QUICK
from bench.suite import ALL, run_all
from bench.tables import describe_run, format_table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="code_mode benchmarks vs raw mini-racer")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    size.add_argument("--full", action="store_true", help="full sizes (the default)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNGs (no matplotlib)")
    parser.add_argument("--copy-plots-to", type=Path, help="also copy the PNGs here")
    parser.add_argument("--only", default=",".join(ALL), help="comma-separated, e.g. B1,B4")
    parser.add_argument(
        "--isolation",
        default="all",
        help="RuntimeConfig.isolation mode(s) to measure, comma-separated, or 'all'",
    )
    parser.add_argument(
        "--also-with",
        action="append",
        default=[],
        metavar="FIELD=JSON",
        help="also measure each mode with this RuntimeConfig field changed, as a side"
        " of its own in the same rounds (e.g. max_journal_chars=0); repeatable",
    )
    args = parser.parse_args(argv)
    only = [item.strip().upper() for item in args.only.split(",") if item.strip()]
    unknown = sorted(set(only) - set(ALL))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    available = ours.isolation_modes()
    if args.isolation == "all":
        modes = available
    else:
        modes = [mode.strip() for mode in args.isolation.split(",") if mode.strip()]
        bad = sorted(set(modes) - set(available))
        if bad:
            parser.error(f"unknown isolation mode(s) {bad}; available: {available}")
    try:
        modes += [ours.variant_side(mode, setting) for setting in args.also_with for mode in modes]
    except ValueError as error:
        parser.error(str(error))
    sizes = QUICK if args.quick else FULL

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    results = run_all(sizes, only, progress, modes)
    print(describe_run(results) + "\n")
    print(format_table(results))
    written = write_results(
        results, args.out, plots=not args.no_plots, copy_plots_to=args.copy_plots_to
    )
    print(f"\nwrote {', '.join(str(path) for path in written)}")
    print(f"total {results['meta']['duration_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
