#!/usr/bin/env python3
"""Side-by-side CPU benchmark, Hearth against llama.cpp: the entry point of the harness in
benchmarks/hearthbench (its documentation is hearthbench/cli.py's, printed by --help). The bench
children run this file too, with an internal subcommand. Run it through benchmarks/run.sh."""
from hearthbench.cli import run

if __name__ == "__main__":
    run()
