#!/usr/bin/env python3
"""Rewrites benchmarks/RESULTS.md, its plots (docs/speed-vs-llama-cpp.svg — the README's picture —
and docs/bench-*.svg) and benchmarks/history/README.md from the committed measurements in
benchmarks/results/*.json. Runs no benchmark; standard library only; the same JSON gives
byte-identical files. `benchmarks/run.sh --report-only` and `--check` call it; the code is
benchmarks/hearthbench/page.py (page) and svgplot.py (plain SVG written by hand).

    benchmarks/plot_summary.py           # rewrite what differs
    benchmarks/plot_summary.py --check   # write nothing; exit 1 if a committed file is stale
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hearthbench.page import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
