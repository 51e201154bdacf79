"""Paths, constants and logging every part of the harness shares."""
from __future__ import annotations

import sys
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent.parent   # benchmarks/
BENCH_PY = HERE / "bench.py"   # the entry point; children run it with an internal subcommand
REPO = HERE.parent
WORK = HERE / "work"
LOGS = WORK / "logs"
# Hearth's repack cache during a run (HEARTH_REPACK_CACHE_DIR for every Hearth process): the
# harness's own, emptied before each file's first Hearth load so that load is measured cold.
REPACK_CACHE = WORK / "repack-cache"
RESULTS_MD = HERE / "RESULTS.md"   # the results page, written by page.py from RESULTS_DIR
LAST_RUN = WORK / "last-run.json"
# Committed measurements: a full run (every model) is copied to GGUF_RUN and its tables written to
# GGUF_REPORT_MD; a --models run's tables go to PARTIAL_REPORT_MD (gitignored) and leave both alone.
RESULTS_DIR = HERE / "results"
GGUF_RUN = RESULTS_DIR / "ggufs.json"
GGUF_REPORT_MD = RESULTS_DIR / "ggufs.md"
PARTIAL_REPORT_MD = WORK / "last-run.md"
SCHEMA = 2   # 2: one entry per GGUF (model × quant type), --models


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
