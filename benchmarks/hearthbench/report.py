"""Summaries of a run and its tables (benchmarks/results/ggufs.md; the results page itself is page.py's)."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

from .common import GGUF_REPORT_MD, GGUF_RUN, HERE, PARTIAL_REPORT_MD, REPO, engine_tags
from .llama_child import mean_sd


# ---------------------------------------------------------------------------
# Summaries and RESULTS.md
# ---------------------------------------------------------------------------

def _variant(r: dict) -> str:
    """A Hearth row's kernel level and activation bits as shown in the tables (common.engine_tags)."""
    return engine_tags(r)


def summarize(model: dict, runs: list[dict], stats: dict) -> list[dict]:
    rows = []
    keys = []
    # One row per engine, file, activation bits and forced kernel level (HEARTH_CPU, --also-level).
    key = lambda r: (r["engine"], r["file"], r.get("variant"), r.get("hearth_cpu"))
    for r in runs:
        if key(r) not in keys:
            keys.append(key(r))
    for engine, file, variant, hearth_cpu in keys:
        mine = [r for r in runs if key(r) == (engine, file, variant, hearth_cpu)]
        ok = [r for r in mine if r["ok"]]
        row: dict = {"model": model["name"], "engine": engine, "file": file, "runs": len(mine), "ok_runs": len(ok)}
        if variant:
            row["variant"] = variant
        if hearth_cpu:
            row["hearth_cpu"] = hearth_cpu
        # The level Hearth itself reported for these runs (hearth bench --json's kernel_level).
        levels = sorted({(r.get("result") or {}).get("kernel_level") for r in ok} - {None})
        if levels:
            row["kernel_level"] = ",".join(levels)
        fpath = REPO / file
        row["file_bytes"] = fpath.stat().st_size if fpath.is_file() else None
        row["bits_per_weight"] = row["file_bytes"] * 8 / stats["params"] if row["file_bytes"] else None
        if not ok:
            row["error"] = mine[-1].get("error") if mine else "not run"
            rows.append(row)
            continue
        for test in ("pp", "tg"):
            samples = [s for r in ok for s in ((r["result"].get(test) or {}).get("samples") or [])]
            if samples:
                m, sd = mean_sd(samples)
                row[test] = {"tokens_per_second": m, "stddev": sd, "n": len(samples),
                             "round_means": [(r["result"].get(test) or {}).get("tokens_per_second") for r in ok]}
        row["peak_rss_bytes"] = max(r["maxrss_bytes"] for r in ok)
        row["harness_maxrss_bytes"] = max((r.get("harness_maxrss_bytes") or 0) for r in ok) or None
        row["max_foreign_load_cores"] = max(r.get("foreign_load_cores", 0.0) for r in ok)
        row["discarded_attempts"] = sum(len(r.get("discarded_attempts") or []) for r in mine)
        row["engine_peak_rss_bytes"] = max((r["result"].get("peak_rss_bytes") or 0) for r in ok) or None
        row["load_seconds"] = statistics.fmean(r["result"].get("load_seconds") or 0.0 for r in ok)
        if engine == "hearth":
            outcomes = sorted({r["result"].get("repack_cache") or "?" for r in ok})
            row["repack_cache"] = ",".join(outcomes)
        res0 = ok[0]["result"]
        g = stats["gguf"].get(file)
        if g:
            # Both engines, same file: every tensor is streamed once per token, except an untied
            # embedding table, of which one row is gathered (gguf_stats).
            row["weight_bytes_per_token"] = g["weight_bytes_per_token"]
            row["weight_bytes_source"] = ("GGUF tensor bytes (token_embd tied to the output, counted)"
                                          if g["tied_embeddings"] else "GGUF tensor bytes minus token_embd")
        if engine == "llama.cpp":
            row["rss_after_import_bytes"] = res0.get("rss_after_import_bytes")
            row["buffers_mib"] = res0.get("buffers_mib")
        else:
            wb = res0.get("weight_bytes_per_token")
            row["hearth_weight_bytes_per_token"] = wb if wb else res0.get("model_bytes")
            if not g:   # Hearth's own file (.hqf): its own account
                row["weight_bytes_per_token"] = row["hearth_weight_bytes_per_token"]
                row["weight_bytes_source"] = "hearth weight_bytes_per_token" if wb else "hearth model_bytes"
            for k in ("kernel", "cpu_best_level", "weight_types", "prefill_path", "kv_cache_bytes", "parameters"):
                if k in res0:
                    row[k] = res0[k]
        if "tg" in row and row.get("weight_bytes_per_token"):
            row["decode_gb_s"] = row["weight_bytes_per_token"] * row["tg"]["tokens_per_second"] / 1e9
        rows.append(row)
    base = next((r for r in rows if r["engine"] == "llama.cpp" and r.get("ok_runs")), None)
    for r in rows:
        if base is None or r is base:
            continue
        for test in ("pp", "tg"):
            if test in r and test in base:
                r[f"{test}_ratio"] = r[test]["tokens_per_second"] / base[test]["tokens_per_second"]
        if r.get("load_seconds") and base.get("load_seconds"):
            r["load_ratio"] = r["load_seconds"] / base["load_seconds"]
        if r.get("peak_rss_bytes") and base.get("peak_rss_bytes"):
            r["rss_ratio"] = r["peak_rss_bytes"] / base["peak_rss_bytes"]
    return rows


def fmt_ts(d: dict | None) -> str:
    return f"{d['tokens_per_second']:.2f} ± {d['stddev']:.2f}" if d else "—"


def fmt_gib(b) -> str:
    return f"{b / 2**30:.2f} GiB" if b else "—"


def membw_ref_gb_s(run: dict) -> float | None:
    """The figure decode bandwidth is divided by: membw's best pass at the
    run's thread count (2 by default), over both huge-page settings, measured
    in the same run."""
    t = run["settings"]["threads"]
    vals = [d["best_gb_s"] for d in run.get("membw") or [] if d["threads"] == t]
    return max(vals) if vals else None


def add_bandwidth_shares(run: dict) -> None:
    """Each tg row's decode bandwidth (weights read per token × tg t/s) as a
    share of membw_ref_gb_s."""
    ref = membw_ref_gb_s(run)
    run["settings"]["membw_ref_gb_s"] = ref
    for mo in run["models"]:
        for r in mo["summary"]:
            r.pop("membw_share", None)
            if r.get("decode_gb_s") and ref:
                r["membw_share"] = r["decode_gb_s"] / ref


def _ratio(r: dict, k: str) -> str:
    if r.get(k) is not None:
        return f"{r[k]:.2f}×"
    return "1" if r["engine"] == "llama.cpp" and r.get("ok_runs") else "—"


def _seconds(x) -> str:
    return f"{x:.2f} s" if isinstance(x, (int, float)) else "—"


def _first_load(model: dict) -> str:
    f = model.get("hearth_first_load")
    if not f:
        return "—"
    if not f.get("ok"):
        return "failed"
    return f"{_seconds(f.get('load_seconds'))} ({f.get('repack_cache') or '?'})"


def _share(r: dict) -> str:
    return f"{100 * r['membw_share']:.0f}%" if r.get("membw_share") else "—"


def _types(g: dict) -> str:
    counts = g.get("tensor_count_by_type") or {}
    return ", ".join(f"{k} ×{counts[k]} {v / 1e9:.2f} GB" if k in counts else f"{k} {v / 1e9:.2f} GB"
                     for k, v in sorted(g["tensor_bytes_by_type"].items()))


def _hearth_types(wt) -> str:
    if isinstance(wt, dict):
        return ", ".join(f"{k} {v / 1e9:.2f} GB" if isinstance(v, (int, float)) else f"{k} {v}"
                         for k, v in sorted(wt.items()))
    return str(wt)


def is_full_run(run: dict) -> bool:
    """Every model, both engines: the run the committed results and the page show."""
    s = run["settings"]
    return not s.get("models_filter") and {"llama.cpp", "hearth"} <= set(s.get("order", []))


def report_path(run: dict) -> Path:
    """Where a run's tables go: the committed report for a full run, work/ for any other."""
    return GGUF_REPORT_MD if is_full_run(run) else PARTIAL_REPORT_MD


def write_committed_run(run: dict) -> None:
    """A full run's JSON as benchmarks/results/ggufs.json, the checkout's path prefix removed."""
    if not is_full_run(run):
        return
    GGUF_RUN.parent.mkdir(parents=True, exist_ok=True)
    GGUF_RUN.write_text(json.dumps(run, ensure_ascii=False, indent=2).replace(f"{REPO}/", "") + "\n", encoding="utf-8")


def write_results_md(run: dict) -> str:
    """The run's tables (report_path(run)), then benchmarks/RESULTS.md and its plots from the
    committed results (plot_summary.py)."""
    m = run["machine"]
    s = run["settings"]
    git = run["git"]
    ref = s.get("membw_ref_gb_s") or membw_ref_gb_s(run)
    pp, tg = f"pp{s['prompt']}", f"tg{s['gen']}"
    L = []
    L.append("# Benchmarks: Hearth vs llama.cpp (CPU)")
    L.append("")
    L.append("Written by `benchmarks/run.sh` (see [README.md](../README.md)); every full run rewrites this file "
             "and `benchmarks/results/ggufs.json` (a `--models` run writes `benchmarks/work/last-run.md` instead), "
             "and keeps its raw numbers in `benchmarks/work/last-run.json`. One table "
             "per model file (model × quant type), both engines reading the same GGUF; the entries are `MODELS` in "
             "`benchmarks/bench.py`.")
    L.append("")
    L.append("## Run")
    L.append("")
    L.append(f"- Date: {run['date_utc']}")
    L.append(f"- Repo commit: `{(git['commit'] or 'unknown')[:12]}`{' (work tree had uncommitted changes)' if git['dirty'] else ''}")
    L.append(f"- CPU: {m.get('cpu')} (family {m.get('cpu_cpu_family')}, model {m.get('cpu_model')}), "
             f"{m.get('cores')} cores; L2 {m.get('l2_cache', '?')}, L3 {m.get('l3_cache', '?')}; "
             f"{', '.join(m.get('flags', []))}"
             + (f"; hypervisor {m['hypervisor_vendor']}" if m.get("hypervisor_vendor") else ""))
    L.append(f"- RAM: {m.get('ram_bytes', 0) / 2**30:.1f} GiB; kernel {m.get('kernel')}; transparent huge pages: "
             f"{m.get('thp_enabled', '?')} (defrag {m.get('thp_defrag', '?')})")
    lc = run["llama_cpp"]
    L.append(f"- llama.cpp: llama-cpp-python {lc.get('version')} built from its sdist with default CMake flags "
             f"(native CPU); `{lc.get('system_info') or ''}`")
    h = run["hearth"]
    L.append(f"- Hearth: {'`' + h['binary'] + '`' if h.get('binary') else 'not found'}"
             + (f" — {h['note']}" if h.get("note") else ""))
    L.append(f"- Models: {', '.join(s.get('models') or [mo['name'] for mo in run['models']])}"
             + (f" (`--models {s['models_filter']}`)" if s.get("models_filter") else " (all)"))
    L.append(f"- Method: llama-bench semantics. {pp} = {s['prompt']} random token ids decoded from an empty "
             f"KV cache in batches of {s['batch']} (n_ubatch {s['batch']}); {tg} = {s['gen']} sequential "
             f"single-token decodes from an empty cache. Warm-up (full prompt for pp, one token for tg), then "
             f"{s['reps']} repetitions; tokens/s mean ± sample sd over all repetitions of {s['rounds']} rounds. "
             f"Threads = {s['threads']}. Model by model, engines alternate round by round "
             f"({' → '.join(s['order'])}; Hearth reads its .hqf, where there is one, then the GGUF), each bench in "
             f"a fresh process; each model's files were read once beforehand so both start from a warm page cache. "
             f"Peak RSS = the bench process's ru_maxrss (max over rounds)."
             + (f" Hearth rows are marked with their `--activation-bits` (aoutliers: the default since 2026-11-27, "
                f"8-bit activations for the prompt's layer products where the CPU has AVX-512 VNNI with each token's "
                f"8 largest activations per product in f32; abalanced: the same without the f32 picks, q/k/v at 16 "
                f"bits; amixed: no picks, q/k/v at 8; a16: 16-bit activations everywhere, the exact path; a8: 8-bit "
                f"everywhere, as llama.cpp; docs/ACCURACY.md for what each costs)."
                if s.get("hearth_activation_bits") else "")
             + (" Each Hearth row also names the kernel level Hearth reported it ran at (`kernel_level` of "
                "`hearth bench --json`: the best this CPU runs unless `HEARTH_CPU` forces one)"
                + (f"; after its default rows, each file ran once more per round with "
                   f"{' and '.join(f'`HEARTH_CPU={x}`' for x in s['also_levels'])} and the first `--activation-bits` "
                   f"value, a second Hearth engine with its own ratios to llama.cpp ({s.get('also_level_reason')})"
                   if s.get("also_levels") else "") + "."
                if "also_levels" in s else ""))
    L.append(f"- Decode bandwidth share (*of membw*): weights read per token × {tg} t/s ÷ "
             + (f"{ref:.1f} GB/s, " if ref else "")
             + f"the best {s['threads']}-thread streaming-read figure measured by membw in this run (below). "
             "Weights read per token = the GGUF's tensor bytes, without `token_embd` when the model has a separate "
             "`output.weight` (one row of the embedding table is gathered per token) and with it when the two are "
             "tied (it is then the output matrix, read whole); the same figure for both engines reading that "
             "GGUF. For Hearth's `.hqf` it is the `weight_bytes_per_token` Hearth reports.")
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append(f"Hearth ÷ llama.cpp on the same weights (> 1 = Hearth faster; for RSS, > 1 = Hearth uses more), and "
             f"each engine's decode bandwidth as a share of membw's {s['threads']}-thread figure.")
    L.append("")
    L.append(f"| model / type | Hearth file | {pp} ×llama.cpp | {tg} ×llama.cpp | peak RSS ×llama.cpp | "
             f"load ×llama.cpp | load Hearth / llama.cpp | Hearth first load | Hearth of membw | llama.cpp of membw |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for model in run["models"]:
        base = next((r for r in model["summary"] if r["engine"] == "llama.cpp"), None)
        hrows = [r for r in model["summary"] if r["engine"] == "hearth"]
        base_load = _seconds(base.get("load_seconds")) if base else "—"
        if not hrows:
            L.append(f"| {model['name']} | — | — | — | — | — | — / {base_load} | — | — | {_share(base) if base else '—'} |")
        for r in hrows:
            first = _first_load(model) if r["file"] == model.get("gguf") and not r.get("hearth_cpu") else "—"
            if r.get("ok_runs", 0) == 0:
                L.append(f"| {model['name']} | `{Path(r['file']).name}`{_variant(r)} | not run | not run | — | — | "
                         f"— / {base_load} | {first} | — | {_share(base) if base else '—'} |")
                continue
            L.append(f"| {model['name']} | `{Path(r['file']).name}`{_variant(r)} | {_ratio(r, 'pp_ratio')} | "
                     f"{_ratio(r, 'tg_ratio')} | {_ratio(r, 'rss_ratio')} | {_ratio(r, 'load_ratio')} | "
                     f"{_seconds(r.get('load_seconds'))} / {base_load} | {first} | {_share(r)} | "
                     f"{_share(base) if base else '—'} |")
    L.append("")
    L.append("*load*: seconds from the start of the model load to a model ready to run (Hearth: `load_seconds` of "
             "`hearth bench`, its repack cache warm; llama.cpp: `llama_model_load_from_file` + "
             "`llama_init_from_model`, mmap), mean over the rounds. *Hearth first load*: the same file loaded once "
             "more before the rounds with Hearth's repack cache emptied (it rearranges the weights and writes "
             "the cache the rounds then map; docs/REPACK-CACHE.md), and what the cache did.")
    L.append("")
    L.append("## Results")
    L.append("")
    for model in run["models"]:
        st = model["stats"]
        L.append(f"### {model['name']}: {model.get('title', model['name'])}")
        L.append("")
        hdr = (f"| engine | file | bits/weight | {pp} t/s | {tg} t/s | pp ×llama.cpp | tg ×llama.cpp | peak RSS | "
               f"RSS ×llama.cpp | load | weights read/token | decode bandwidth | of membw |")
        L.append(hdr)
        L.append("|" + "---|" * (hdr.count("|") - 1))
        if not model["summary"]:
            L.append("| — | `" + model.get("gguf", "") + "` |" + " not run |" * 11)
        for r in model["summary"]:
            bpw = f"{r['bits_per_weight']:.2f}" if r.get("bits_per_weight") else "—"
            if r.get("ok_runs", 0) == 0:
                what = "failed" if r.get("runs") else "not run"
                L.append(f"| {r['engine']}{_variant(r)} | `{r['file']}` | {bpw} | {what} | {what} |" + " — |" * 8)
                continue
            wb = r.get("weight_bytes_per_token")
            dec = r.get("decode_gb_s")
            load = f"{r['load_seconds']:.2f} s" if r.get("load_seconds") is not None else "—"
            if r.get("repack_cache"):
                load += f" (cache: {r['repack_cache']})"
            L.append(f"| {r['engine']}{_variant(r)} | `{r['file']}` | {bpw} | {fmt_ts(r.get('pp'))} | "
                     f"{fmt_ts(r.get('tg'))} | {_ratio(r, 'pp_ratio')} | {_ratio(r, 'tg_ratio')} | "
                     f"{fmt_gib(r.get('peak_rss_bytes'))} | {_ratio(r, 'rss_ratio')} | {load} | "
                     f"{f'{wb / 1e9:.3f} GB' if wb else '—'} | {f'{dec:.1f} GB/s' if dec else '—'} | {_share(r)} |")
        L.append("")
        notes = []
        params = st.get("params")
        notes.append(f"- {model['description']}"
                     + (f"; {params / 1e9:.3f} B parameters (bits/weight = file bytes × 8 / this count)" if params
                        else "") + ".")
        for f, g in st["gguf"].items():
            made = (f"made by llama.cpp's convert_hf_to_gguf.py (F16) from `{model.get('checkpoint')}` + "
                    f"llama_model_quantize ({model.get('llama_ftype')}, default params)"
                    if model.get("made_here") else "the published file, as fetched")
            notes.append(f"- `{f}`: {g['file_bytes'] / 1e9:.3f} GB file, {g['tensor_bytes'] / 1e9:.3f} GB tensor "
                         f"data in {g.get('n_tensors', '?')} tensors, per type {_types(g)}; "
                         f"`token_embd` {g['token_embd_bytes'] / 1e9:.3f} GB, "
                         f"{'tied to the output (read whole every token)' if g.get('tied_embeddings') else 'untied (one row read per token)'}"
                         f"; {made}.")
        for r in model["summary"]:
            if r.get("discarded_attempts"):
                notes.append(f"- {r['engine']}{_variant(r)} `{r['file']}`: {r['discarded_attempts']} attempt(s) disturbed by other "
                             f"processes were discarded and run again.")
            if r.get("max_foreign_load_cores", 0.0) > 0.1:
                notes.append(f"- ⚠ {r['engine']}{_variant(r)} `{r['file']}`: other processes used up to "
                             f"{r['max_foreign_load_cores']:.2f} cores during its runs; its numbers are disturbed.")
            if r.get("harness_maxrss_bytes") and r.get("peak_rss_bytes") and \
                    r["peak_rss_bytes"] <= r["harness_maxrss_bytes"] * 1.02:
                notes.append(f"- ⚠ {r['engine']}{_variant(r)} `{r['file']}`: its peak RSS does not exceed the harness's own "
                             f"({r['harness_maxrss_bytes'] / 2**20:.0f} MiB), which a child inherits as the floor "
                             f"of its ru_maxrss; its true peak may be lower.")
            if r.get("ok_runs", 0) == 0 and r.get("error"):
                err = " / ".join(x.strip() for x in r["error"].splitlines() if x.strip())
                notes.append(f"- {r['engine']}{_variant(r)} `{r['file']}` {'failed' if r.get('runs') else 'not run'}: {err[:600]}")
            elif r["engine"] == "llama.cpp" and r.get("rss_after_import_bytes"):
                bufs = r.get("buffers_mib") or {}
                btxt = ", ".join(f"{k} {v:.0f} MiB" for k, v in bufs.items())
                notes.append(f"- llama.cpp peak RSS includes the Python interpreter + llama_cpp import "
                             f"({r['rss_after_import_bytes'] / 2**20:.0f} MiB before the model was loaded)"
                             + (f"; its buffers: {btxt}" if btxt else "")
                             + (" (the mapped GGUF pages read while repacking stay resident next to the repacked "
                                "copy)" if any("REPACK" in k for k in bufs) else "") + ".")
            elif r["engine"] == "hearth" and r.get("ok_runs"):
                if r.get("hearth_cpu") and r.get("kernel_level") != r["hearth_cpu"]:
                    notes.append(f"- ⚠ hearth{_variant(r)} `{r['file']}`: run with HEARTH_CPU={r['hearth_cpu']}, but "
                                 f"Hearth reports kernel level {r.get('kernel_level') or 'unknown'} (this CPU cannot run "
                                 f"{r['hearth_cpu']}: Hearth used its best level instead).")
                hw = r.get("hearth_weight_bytes_per_token")
                notes.append(f"- hearth{_variant(r)} `{r['file']}`: kernel {r.get('kernel')}, prefill path {r.get('prefill_path')}"
                             + (f", weight types {_hearth_types(r['weight_types'])}" if r.get("weight_types") else "")
                             + (f"; reports {hw / 1e9:.3f} GB of weights per token" if hw else "")
                             + f" (the table uses {r.get('weight_bytes_source')}).")
        for skipped in model.get("skipped", []):
            notes.append(f"- {skipped}")
        L.extend(notes)
        L.append("")
    L.append("## Streaming-read bandwidth (`benchmarks/membw.c`)")
    L.append("")
    if run["membw"]:
        mb = run["membw"][0]["bytes"] / 2**30
        d0 = run["membw"][0]
        L.append(f"Sum of a {mb:.0f} GiB buffer written first, `cc -O3 -march=native`; {d0.get('sweeps', 1)} sweeps "
                 f"over the configurations, interleaved, {d0['runs']} timed passes each; best pass overall, mean of "
                 f"all passes, and the best of each sweep (1 GB = 1e9 bytes). This VM's bandwidth varies with its "
                 f"host's load: compare the sweeps."
                 + (f" The *of membw* columns divide by {ref:.1f} GB/s, the best {s['threads']}-thread pass." if ref
                    else ""))
        L.append("")
        L.append("| threads | madvise | huge pages in buffer | best GB/s | mean GB/s | best per sweep |")
        L.append("|---|---|---|---|---|---|")
        for d in run["membw"]:
            per = ", ".join(f"{x:.1f}" for x in d.get("sweep_best_gb_s", [d["best_gb_s"]]))
            L.append(f"| {d['threads']} | {'MADV_HUGEPAGE' if d['hugepage'] else 'MADV_NOHUGEPAGE'} | "
                     f"{d['anon_huge_kib'] / 1024:.0f} MiB | {d['best_gb_s']:.1f} | {d['mean_gb_s']:.1f} | {per} |")
    else:
        L.append("Not measured (membw.c did not build or was skipped), so there is no *of membw* share.")
    L.append("")
    L.append("## Timings")
    L.append("")
    L.append(", ".join(f"{k.replace('_s', '')} {v:.0f} s" for k, v in run["timings"].items()) + ".")
    L.append("")
    text = "\n".join(L)
    path = report_path(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    # The results page and the README's picture follow the committed results.
    subprocess.run([sys.executable, str(HERE / "plot_summary.py")], check=False)
    return text
