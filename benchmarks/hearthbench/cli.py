"""Side-by-side CPU benchmark: Hearth against llama.cpp (llama-cpp-python).

Run through benchmarks/run.sh, which creates benchmarks/.venv first. This
script does the real work:

  1. makes a random-weight Phi-3-mini-shaped checkpoint (HF layout, F16
     safetensors shards, SentencePiece tokenizer) in benchmarks/work/, once;
  2. converts it with llama.cpp's own convert_hf_to_gguf.py to one F16 GGUF
     and quantizes that with llama.cpp's quantizer (llama_model_quantize) to
     Q4_0, Q4_K_M, Q5_K_M, Q6_K and Q8_0, each once, checking every file's
     tensor types; Gemma 3 270M Q4_K_M comes as is from models/;
  3. quantizes the checkpoint with `hearth quantize` to a q4_0 .hqf file, once;
  4. measures streaming-read bandwidth with membw.c;
  5. model file by model file, alternates llama.cpp and Hearth benches on the
     same GGUF (pp512 / tg128, llama-bench semantics), each bench in its own
     process so its peak RSS is its own; each Hearth run records the kernel
     level Hearth reports, and on an AMX host (or with --also-level) Hearth
     runs once more per file with HEARTH_CPU=avx512-vnni, a second engine;
  6. writes its tables (one per model file, with each tg row's decode
     bandwidth as a share of membw's figure) and benchmarks/work/last-run.json;
     a full run also benchmarks/results/ggufs.json and .md, from which
     benchmarks/RESULTS.md and its plots are rewritten (page.py).

--models restricts all of this to some entries of MODELS.
Internal subcommands (run in child processes): `_llama-bench`, `_quantize`,
`_gguf-stats`.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time
from pathlib import Path

from .common import KERNEL_LEVELS, LAST_RUN, LOGS, REPACK_CACHE, REPO, RESULTS_MD, SCHEMA, WORK, extra_levels, log
from .models import MODELS, select_models
from .checkpoints import ensure_checkpoint, parameter_count, write_json
from .ggufs import check_gguf, child_quantize, ensure_ggufs, gguf_stats, gguf_stats_here
from .llama_child import child_llama_bench
from .harness import (IDLE_WAIT, bench_hearth, bench_llama, clear_repack_cache, ensure_hqf, find_hearth, git_info,
                      hearth_has, hearth_kernel_level, machine_info, measured, run_membw)
from .report import add_bandwidth_shares, report_path, summarize, write_committed_run, write_results_md


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def warm_page_cache(paths: list[Path]) -> None:
    for p in paths:
        if p and p.is_file():
            with open(p, "rb", buffering=0) as f:
                while f.read(1 << 24):
                    pass


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", "-t", type=int, default=2, help="threads for both engines (default 2)")
    ap.add_argument("--reps", "-r", type=int, default=5, help="repetitions per test (default 5)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds per engine (default 2)")
    ap.add_argument("--prompt", "-p", type=int, default=512, help="pp test tokens (default 512)")
    ap.add_argument("--gen", "-n", type=int, default=128, help="tg test tokens (default 128)")
    ap.add_argument("--batch", "-b", type=int, default=512, help="n_batch = n_ubatch for llama.cpp (default 512)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds before one bench process is killed")
    ap.add_argument("--max-wait-idle", type=float, default=900,
                    help="before each bench, wait up to this many seconds for other processes to leave the CPU")
    ap.add_argument("--max-foreign-load", type=float, default=0.1,
                    help="a bench during which other processes used more cores than this is run again")
    ap.add_argument("--retries", type=int, default=3, help="how often a disturbed bench is run again")
    ap.add_argument("--skip-hearth", action="store_true", help="only llama.cpp")
    ap.add_argument("--hearth-activation-bits", default="outliers,16", metavar="LIST",
                    help="Hearth's --activation-bits values to bench, each its own row (default outliers,16: the "
                         "default path, 8-bit prompt products with outlier channels in f32, and the exact path)")
    ap.add_argument("--also-level", default="auto", metavar="LIST",
                    help="kernel levels (" + ", ".join(KERNEL_LEVELS) + ") at which Hearth runs once more per file "
                         "and round, with HEARTH_CPU=LEVEL and the first --hearth-activation-bits value: a second "
                         "Hearth engine, its own rows and ratios. auto (default): avx512-vnni when a default Hearth "
                         "run uses amx here (`hearth --version`), so both paths are measured; else none. none: never")
    ap.add_argument("--skip-llama", action="store_true", help="only Hearth")
    ap.add_argument("--skip-membw", action="store_true", help="skip the bandwidth probe")
    ap.add_argument("--membw-mib", type=int, default=1024, help="bandwidth probe buffer (MiB, default 1024)")
    ap.add_argument("--membw-runs", type=int, default=7, help="timed passes per configuration and sweep")
    ap.add_argument("--membw-sweeps", type=int, default=3, help="interleaved sweeps over the configurations")
    ap.add_argument("--models", metavar="LIST",
                    help="comma-separated entries to run, by name or family: "
                         + ", ".join(m["name"] for m in MODELS) + "; families "
                         + ", ".join(sorted({m["family"] for m in MODELS}))
                         + " (e.g. --models gemma,phi3-q4_k_m; default: all). Only their files are made and "
                         "benched, and their tables go to work/last-run.md and work/last-run.json "
                         "(benchmarks/results/ and RESULTS.md keep the committed full run)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="only make and check the selected files (checkpoint, GGUFs, .hqf), print their tensor "
                         "types and sizes, and stop: no bandwidth probe, no benches, RESULTS.md untouched")
    ap.add_argument("--keep-f16", action="store_true",
                    help="keep the intermediate F16 GGUF (7.6 GB) after quantizing (default: delete it once "
                         "every missing Phi-3 GGUF of the run is made from it; it is made again if a later run "
                         "needs another)")
    ap.add_argument("--hearth-bin", default=os.environ.get("HEARTH_BIN"), help="hearth binary (default: $HEARTH_BIN, "
                    "else .build/release/hearth, else `swift build -c release --show-bin-path`/hearth)")
    ap.add_argument("--report-only", action="store_true",
                    help="only rewrite the run's tables from benchmarks/work/last-run.json (after a format change; "
                         "a full run's also to benchmarks/results/), then RESULTS.md and its plots. "
                         "benchmarks/run.sh --report-only does only the last step, from the committed JSON")
    a = ap.parse_args(argv)
    try:
        extra_levels(a.also_level, None)
    except ValueError as e:
        ap.error(str(e))

    if a.report_only:
        run = json.loads(LAST_RUN.read_text())
        if run.get("schema") != SCHEMA:
            raise SystemExit(f"{LAST_RUN} has schema {run.get('schema')}, this bench.py writes {SCHEMA}: "
                             "run the benchmark again")
        by_name = {m["name"]: m for m in MODELS}
        for mo in run["models"]:
            if mo["name"] in by_name:
                # Rows that never ran (no Hearth binary) are not in the runs: keep them as they are.
                keep = [r for r in mo["summary"] if r.get("ok_runs", 0) == 0 and r["engine"] == "hearth"
                        and not any(x["engine"] == "hearth" for x in mo["runs"])]
                mo["summary"] = summarize(by_name[mo["name"]], mo["runs"], mo["stats"]) + keep
        add_bandwidth_shares(run)
        write_committed_run(run)
        write_results_md(run)
        print(report_path(run).read_text())
        return 0

    t_start = time.time()
    WORK.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}

    import llama_cpp

    llama_info = {"version": llama_cpp.__version__}
    try:
        llama_info["system_info"] = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
    except Exception:  # noqa: BLE001
        pass

    # Hearth binary and capabilities.
    hearth: dict = {"binary": None, "bench": False, "note": ""}
    hbin = None
    if a.skip_hearth:
        hearth["note"] = "skipped (--skip-hearth)"
    else:
        hbin, why = find_hearth(a.hearth_bin)
        os.environ.setdefault("HEARTH_REPACK_CACHE_DIR", str(REPACK_CACHE))
        if hbin is None:
            hearth["note"] = f"not run: {why}"
        else:
            hearth["binary"] = str(hbin.relative_to(REPO)) if hbin.is_relative_to(REPO) else str(hbin)
            hearth["bench"] = hearth_has(hbin, "bench")
            if not hearth["bench"]:
                hearth["note"] = "not run: this binary has no `bench` subcommand"
    if hearth["note"]:
        log(f"Hearth {hearth['note']}")

    # Hearth's kernel level on a default run, and the levels it runs at once more (--also-level).
    also_levels: list[str] = []
    also_reason = ""
    if hbin is not None and hearth["bench"]:
        hearth["kernel_level"] = hearth_kernel_level(hbin)
        also_levels, also_reason = extra_levels(a.also_level, hearth["kernel_level"])
        log(f"Hearth's kernel level on a default run: {hearth['kernel_level'] or 'unknown'}"
            + (f"; each file also runs with {', '.join(f'HEARTH_CPU={x}' for x in also_levels)}" if also_levels else ""))

    # Files: each selected entry's GGUF (made once from its checkpoint, or given), checked; Hearth's .hqf.
    models = select_models(a.models)
    log(f"models: {', '.join(m['name'] for m in models)}")
    t0 = time.time()
    ensure_ggufs(models, a.keep_f16, timings)
    prepared = []
    for model in models:
        gguf = REPO / model["gguf"]
        stats: dict = {"gguf": {}}
        skipped: list[str] = []
        missing = ""
        if gguf.is_file():
            st = gguf_stats(gguf)
            problem = check_gguf(model, st)
            if problem:
                raise SystemExit(f"{gguf}: {problem}; delete it and run again to remake it")
            stats["gguf"][model["gguf"]] = st
            stats["params"] = parameter_count(model["source"]["shape"]) if "source" in model else st["tensor_elements"]
            counts = ", ".join(f"{k} {v}" for k, v in sorted(st["tensor_count_by_type"].items()))
            log(f"GGUF ready: {model['gguf']} ({st['file_bytes'] / 1e9:.2f} GB; tensors per type: {counts})")
        else:
            missing = (f"`{model['gguf']}` is missing"
                       + (" (scripts/fetch-default-model.sh fetches it)" if "source" not in model else ""))
            stats["params"] = parameter_count(model["source"]["shape"]) if "source" in model else None
            skipped.append(f"not run: {missing}")
            log(f"[{model['name']}] {missing}; its rows are not run")
        hqf = None
        if model.get("hqf") and hbin is not None and hearth["bench"]:
            hqf, why = WORK / model["hqf"], ""
            if not hqf.is_file():
                hqf, why = ensure_hqf(hbin, model, ensure_checkpoint(model["source"]), timings)
            if hqf is None:
                skipped.append(f"hearth `.hqf` rows not run: {why}")
                log(skipped[-1])
        prepared.append({"model": model, "gguf": gguf if gguf.is_file() else None, "hqf": hqf, "stats": stats,
                         "skipped": skipped})
    timings["files_s"] = time.time() - t0
    if a.prepare_only:
        log(f"--prepare-only: files ready in {timings['files_s']:.0f} s")
        for p in prepared:
            for f, st in p["stats"]["gguf"].items():
                counts = ", ".join(f"{k} {v}" for k, v in sorted(st["tensor_count_by_type"].items()))
                print(f"{p['model']['name']}: {f} {st['file_bytes'] / 1e9:.3f} GB, {st['n_tensors']} tensors "
                      f"({counts}), {st['weight_bytes_per_token'] / 1e9:.3f} GB read per token")
            if p["hqf"]:
                print(f"{p['model']['name']}: {p['hqf'].relative_to(REPO)} {p['hqf'].stat().st_size / 1e9:.3f} GB")
            for sk in p["skipped"]:
                print(f"{p['model']['name']}: {sk}")
        return 0

    # Bandwidth probe (before the benches; nothing else of ours is running).
    membw = []
    if not a.skip_membw:
        t0 = time.time()
        membw = run_membw(sorted({1, 2, a.threads}), a.membw_mib, a.membw_runs, a.max_wait_idle,
                          a.max_foreign_load, a.retries, a.membw_sweeps)
        timings["membw_s"] = time.time() - t0

    # Alternating benches: per entry, round by round llama.cpp → Hearth .hqf (if any) → Hearth GGUF.
    t0 = time.time()
    order = []
    if not a.skip_llama:
        order.append("llama.cpp")
    if hbin is not None and hearth["bench"]:
        order.append("hearth")
    models_out = []
    for p in prepared:
        model = p["model"]
        runs: list[dict] = []
        if p["gguf"] is not None or p["hqf"] is not None:
            warm_page_cache([p["gguf"], p["hqf"]])
        hearth_gguf_ok = True
        first_load = None
        if "hearth" in order and p["gguf"] is not None:
            # Hearth's first load of the file: its repack cache emptied first, so the load
            # rearranges the weights and writes the cache the rounds below then map.
            clear_repack_cache()
            log(f"[{model['name']}] hearth first load of {p['gguf'].name} (repack cache emptied)")
            e = measured(lambda: bench_hearth(hbin, p["gguf"], a, f"{model['name']}-first-load", "16", (16, 1, 1)),
                         a, "this bench")
            res = e.get("result") or {}
            first_load = {"ok": e["ok"], "load_seconds": res.get("load_seconds"), "repack_cache": res.get("repack_cache"),
                          "kernel_level": res.get("kernel_level"),
                          "wall_seconds": e["wall_seconds"], "maxrss_bytes": e["maxrss_bytes"], "log": e["log"],
                          "error": e.get("error")}
            if not e["ok"]:
                hearth_gguf_ok = False
        for rnd in range(1, a.rounds + 1):
            if "llama.cpp" in order and p["gguf"] is not None:
                log(f"[{model['name']}] round {rnd}/{a.rounds}: llama.cpp {p['gguf'].name}")
                e = measured(lambda: bench_llama(p["gguf"], a, f"{model['name']}-r{rnd}"), a, "this bench")
                e["round"] = rnd
                runs.append(e)
            if "hearth" in order:
                targets = []
                if p["hqf"] is not None:
                    targets.append(p["hqf"])
                if hearth_gguf_ok and p["gguf"] is not None:
                    targets.append(p["gguf"])
                bits_list = a.hearth_activation_bits.split(",")
                for f in targets:
                    # The default level with every --activation-bits value, then each --also-level
                    # (HEARTH_CPU) with the first: a second Hearth engine on the same file.
                    for level, bits in [(None, b) for b in bits_list] + [(lv, bits_list[0]) for lv in also_levels]:
                        tag = f"{model['name']}-{f.suffix[1:]}-a{bits}{f'-{level}' if level else ''}-r{rnd}"
                        log(f"[{model['name']}] round {rnd}/{a.rounds}: hearth {f.name} --activation-bits {bits}"
                            + (f" (HEARTH_CPU={level})" if level else ""))
                        e = measured(lambda: bench_hearth(hbin, f, a, tag, bits, level=level), a, "this bench")
                        e["round"] = rnd
                        runs.append(e)
                        if f == p["gguf"] and not e["ok"] and level is None:
                            hearth_gguf_ok = False   # cannot read this file: the error is reported, not retried
                            break
        summary = summarize(model, runs, p["stats"])
        if hbin is None or not hearth["bench"]:
            files = []
            if model.get("hqf"):
                files.append(f"benchmarks/work/{model['hqf']}")
            files.append(model["gguf"])
            for f in files:
                summary.append({"model": model["name"], "engine": "hearth", "file": f, "ok_runs": 0,
                                "bits_per_weight": None, "error": hearth["note"]})
        models_out.append({"name": model["name"], "title": model["title"], "description": model["description"],
                           "llama_ftype": model.get("llama_ftype"), "gguf": model["gguf"],
                           "made_here": "source" in model,
                           "checkpoint": f"benchmarks/work/{model['source']['checkpoint']}" if "source" in model else None,
                           "stats": p["stats"], "runs": runs, "summary": summary, "skipped": p["skipped"],
                           "hearth_first_load": first_load})
    timings["bench_s"] = time.time() - t0
    timings["waiting_for_idle_s"] = IDLE_WAIT["seconds"]
    timings["total_s"] = time.time() - t_start

    run = {
        "schema": SCHEMA,
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git": git_info(),
        "machine": machine_info(),
        "llama_cpp": llama_info,
        "hearth": hearth,
        "settings": {"threads": a.threads, "reps": a.reps, "rounds": a.rounds, "prompt": a.prompt, "gen": a.gen,
                     "hearth_activation_bits": a.hearth_activation_bits,
                     "also_levels": also_levels, "also_level_reason": also_reason,
                     "batch": a.batch, "order": order, "models": [m["name"] for m in models],
                     "models_filter": a.models},
        "membw": membw,
        "models": models_out,
        "timings": {k: round(v, 1) for k, v in timings.items()},
    }
    add_bandwidth_shares(run)
    write_json(LAST_RUN, run)
    write_committed_run(run)
    write_results_md(run)
    log(f"wrote {report_path(run).relative_to(REPO)}, {RESULTS_MD.relative_to(REPO)} and "
        f"{LAST_RUN.relative_to(REPO)} in {timings['total_s']:.0f} s")
    print(report_path(run).read_text())
    return 0


def run() -> None:
    """The entry point (benchmarks/bench.py): the internal child subcommands, or a run."""
    if len(sys.argv) > 1 and sys.argv[1] == "_llama-bench":
        cp = argparse.ArgumentParser()
        cp.add_argument("--model", required=True)
        cp.add_argument("-p", dest="prompt", type=int, default=512)
        cp.add_argument("-n", dest="gen", type=int, default=128)
        cp.add_argument("-r", dest="reps", type=int, default=5)
        cp.add_argument("-t", dest="threads", type=int, default=2)
        cp.add_argument("-b", dest="batch", type=int, default=512)
        sys.exit(child_llama_bench(cp.parse_args(sys.argv[2:])))
    if len(sys.argv) > 1 and sys.argv[1] == "_gguf-stats":
        print(json.dumps(gguf_stats_here(Path(sys.argv[2]))))
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "_quantize":
        sys.exit(child_quantize(*sys.argv[2:5]))
    sys.exit(main(sys.argv[1:]))
