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


# The kernel levels Hearth has (KernelLevel in Sources/HearthKernels), lowest first: the values
# `--also-level` takes, run with HEARTH_CPU=LEVEL.
KERNEL_LEVELS = ("portable", "avx2", "avx512", "avx512-vnni", "amx")


def engine_tags(row: dict) -> str:
    """What tells a Hearth row from the others of its file in every table: the kernel level Hearth
    reported it ran at (`kernel_level`, absent in results written before it was recorded) and its
    `--activation-bits` (`variant`), e.g. " (avx512-vnni, aoutliers)"; "" when it has neither. A row
    run with HEARTH_CPU (`hearth_cpu`) at another level than it asked for says so:
    " (HEARTH_CPU=amx ran avx512-vnni, aoutliers)"."""
    level, asked = row.get("kernel_level"), row.get("hearth_cpu")
    if asked and level and asked != level:
        level = f"HEARTH_CPU={asked} ran {level}"
    tags = [t for t in (level, f"a{row['variant']}" if row.get("variant") else None) if t]
    return f" ({', '.join(tags)})" if tags else ""


def extra_levels(also_level: str, default_level: str | None) -> tuple[list[str], str]:
    """The kernel levels Hearth runs at once more (HEARTH_CPU), and why, for `--also-level`'s value
    and the level a default Hearth run uses here (None: unknown). "auto": avx512-vnni when the
    default is amx, so a results page from an AMX host has both paths; "none": nothing; else the
    listed levels other than the default. Raises ValueError on a name that is not a level."""
    values = [x.strip() for x in also_level.split(",") if x.strip()]
    if values == ["auto"]:
        return (["avx512-vnni"], "--also-level auto: a default run uses amx on this CPU") if default_level == "amx" else ([], "")
    if values == ["none"] or not values:
        return [], ""
    unknown = [x for x in values if x not in KERNEL_LEVELS]
    if unknown:
        raise ValueError(f"--also-level {also_level}: {', '.join(unknown)} is not auto, none or a kernel level "
                         f"({', '.join(KERNEL_LEVELS)})")
    return [x for x in dict.fromkeys(values) if x != default_level], f"--also-level {also_level}"
