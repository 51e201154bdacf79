"""benchmarks/RESULTS.md, its plots (docs/*.svg) and benchmarks/history/README.md, written from the
committed measurements in benchmarks/results/*.json — nothing is measured here. Standard library
only, deterministic (the same JSON gives byte-identical files), so `--check` can compare the
committed files with a fresh regeneration.

Each results file is either what a harness wrote (`ggufs.json` from benchmarks/run.sh in a full
run: schema 2; `agent-replay-*.json` from benchmarks/agent_replay.py --json) or numbers copied from
a dated diary in benchmarks/history/, with a "source" field naming the file and table. A plot
whose file is missing is left out and listed under "Not plotted".
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from . import svgplot
from .common import engine_tags

BENCH = Path(__file__).resolve().parent.parent   # benchmarks/
REPO = BENCH.parent
RESULTS = BENCH / "results"
HISTORY = BENCH / "history"
DOCS = REPO / "docs"
PAGE = BENCH / "RESULTS.md"
HEADLINE = DOCS / "speed-vs-llama-cpp.svg"   # the README embeds this one: keep its name

C = svgplot.COLOURS


def _load(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _x(v: float | None, digits: int = 2) -> str:
    return "—" if v is None else f"{v:.{digits}f}×"


def _f(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{v:,.{digits}f}"


def _source(d: dict) -> str:
    return f"*Source: {d['source']}.*" if d.get("source") else ""


def _table(head: list[str], rows: list[list[str]], right_from: int = 1) -> list[str]:
    align = ["---" if i < right_from else "---:" for i in range(len(head))]
    return ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"] + ["| " + " | ".join(r) + " |" for r in rows]


# ----------------------------------------------------------------------------- GGUF types
def gguf_rows(d: dict) -> tuple[dict, list[dict]]:
    """(run facts, one row per engine per model file) from either form of ggufs.json: a harness
    run (schema 2, benchmarks/run.sh) or the copied tables (kind "ggufs")."""
    if d.get("schema") == 2:
        facts = {"date": d.get("date_utc", ""), "commit": (d.get("git") or {}).get("commit", "")[:12],
                 "cpu": (d.get("machine") or {}).get("cpu", ""), "threads": (d.get("settings") or {}).get("threads")}
        rows = []
        for mo in d.get("models", []):
            for r in mo.get("summary", []):
                if not r.get("ok_runs"):
                    continue
                # Hearth rows carry the kernel level Hearth reported (files written before it was
                # recorded have none, and show only the activation bits).
                rows.append({"model": mo["name"], "engine": r["engine"] + engine_tags(r), "file": r["file"],
                             "level": r.get("kernel_level"), "variant": f"a{r['variant']}" if r.get("variant") else None,
                             "pp": (r.get("pp") or {}).get("tokens_per_second"),
                             "tg": (r.get("tg") or {}).get("tokens_per_second"),
                             "pp_ratio": r.get("pp_ratio"), "tg_ratio": r.get("tg_ratio")})
        return facts, rows
    facts = {k: d.get(k) for k in ("date", "commit", "cpu", "threads")}
    variant = lambda engine: (re.search(r"\((a\w+)\)", engine) or [None, None])[1]
    rows = [{"model": mo["name"], "engine": r["engine"], "file": r["file"], "pp": r["pp512_tps"], "tg": r["tg128_tps"],
             "level": None, "variant": variant(r["engine"]),
             "pp_ratio": None if r["engine"] == "llama.cpp" else r["pp_ratio"],
             "tg_ratio": None if r["engine"] == "llama.cpp" else r["tg_ratio"]}
            for mo in d["models"] for r in mo["rows"]]
    return facts, rows


def section_ggufs(d: dict) -> tuple[list[str], dict[Path, str]]:
    facts, rows = gguf_rows(d)
    run_line = ", ".join(str(p) for p in (facts.get("date"), facts.get("cpu"),
                                           facts.get("threads") and f"{facts['threads']} threads") if p)
    # The chart: Hearth on the GGUF itself (both engines read the same file), one bar pair per file;
    # a model with several Hearth rows gets one group per row, labelled with what tells them apart
    # (kernel level, activation bits).
    hearth = [r for r in rows if r["engine"].startswith("hearth") and r["file"].endswith(".gguf") and r["pp_ratio"]]
    groups = []
    for r in hearth:
        mine = [x for x in hearth if x["model"] == r["model"]]
        tags = [r[k] for k in ("level", "variant") if r[k] and len(mine) > 1 and len({x[k] for x in mine}) > 1]
        groups.append((r["model"] + (f" ({', '.join(tags)})" if tags else ""), [r["pp_ratio"], r["tg_ratio"]]))
    svg = svgplot.bars("Hearth ÷ llama.cpp, same GGUF, same threads (> 1 = Hearth faster)",
                       f"{run_line} — benchmarks/results/ggufs.json", groups,
                       [("prompt (pp512)", C["prompt"]), ("decode (tg128)", C["decode"])])
    md = ["## Speed per GGUF type", "",
          f"![Hearth ÷ llama.cpp per GGUF type](../{_rel(HEADLINE)})", "",
          f"Both engines read the same GGUF file, same threads, in one run ({run_line}; commit "
          f"`{facts.get('commit')}`): llama-bench's pp512 (a 512-token prompt) and tg128 (128 decoded tokens), "
          "tokens/s. Ratios > 1: Hearth faster. Per-model detail (bits/weight, peak RSS, load time, share of "
          "memory bandwidth) in the run's own report (link below).", ""]
    table = []
    for r in rows:
        table.append([r["model"], r["engine"], f"`{Path(r['file']).name}`", _f(r["pp"], 2), _f(r["tg"], 2),
                      _x(r["pp_ratio"]) if r["pp_ratio"] else "1", _x(r["tg_ratio"]) if r["tg_ratio"] else "1"])
    md += _table(["model / type", "engine", "file", "pp512 t/s", "tg128 t/s", "pp ×llama.cpp", "tg ×llama.cpp"], table, 3)
    if d.get("schema") == 2:
        md += ["", "*Source: benchmarks/results/ggufs.json, written by benchmarks/run.sh (a full run). Per-model "
               "detail: [results/ggufs.md](results/ggufs.md).*"]
    else:
        detail = d["source"].split(":")[0].removeprefix("benchmarks/")
        md += ["", f"{_source(d)} Per-model detail: [{detail}]({detail})."]
    return md, {HEADLINE: svg}


# ----------------------------------------------------------------------------- long context
def section_long_context(d: dict) -> tuple[list[str], dict[Path, str]]:
    out = DOCS / "bench-long-context.svg"
    pp = [r for r in d["rows"] if r["model"] == "Gemma" and r["test"].startswith("pp")]
    labels = [r["test"][2:] for r in pp]
    svg = svgplot.lines("Prompt speed against prompt length, Gemma 3 270M Q4_K_M",
                        f"{d['date']}, {d['host']} — benchmarks/results/long-context.json", [{
                            "title": "prompt processing (one prompt from an empty cache)",
                            "x_labels": labels, "x_title": "prompt tokens", "y_label": "tokens/s", "log_y": False,
                            "series": [("Hearth", C["hearth"], "", [r["hearth_tps"] for r in pp]),
                                       ("llama.cpp, flash attention off", C["llama"], "", [r["llama_fa0_tps"] for r in pp]),
                                       ("llama.cpp, flash attention on", C["llama-alt"], "6 4", [r["llama_fa1_tps"] for r in pp])]}])
    md = ["## Long prompts", "", f"![prompt speed against prompt length](../{_rel(out)})", "",
          f"{d['method']}.", ""]
    md += _table(["model", "test", "Hearth t/s", "llama.cpp fa off", "llama.cpp fa on", "÷ llama.cpp's better",
                  "Hearth peak RSS", "llama.cpp peak RSS fa off / on"],
                 [[r["model"], r["test"], _f(r["hearth_tps"], 2), _f(r["llama_fa0_tps"], 2), _f(r["llama_fa1_tps"], 2),
                   _x(r["ratio_to_better"]), r["hearth_peak_rss"], r["llama_peak_rss_fa0_fa1"]] for r in d["rows"]], 2)
    return md + ["", _source(d)], {out: svg}


# ----------------------------------------------------------------------------- batched decoding
def batched_from_run(d: dict) -> dict:
    """A batched.py --json file as one of batched.json's runs: each level's mean over its runs."""
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    return {"model": d["model"], "command": f"benchmarks/batched.py -p {d['prompt']} -n {d['gen']} --threads {d['threads']}",
            "rows": [{"sequences": lv["sequences"], "hearth_pp_tps": mean(lv["hearth"]["pp"]), "llama_pp_tps": mean(lv["llama.cpp"]["pp"]),
                      "hearth_tg_aggregate_tps": mean(lv["hearth"]["tg"]), "llama_tg_aggregate_tps": mean(lv["llama.cpp"]["tg"])}
                     for lv in d["levels"]]}


def batched_runs(d: dict | None) -> tuple[list[dict], list[str]]:
    """batched.json's runs, each replaced by a batched-*.json file (batched.py --json) of the same model
    file where there is one; and the sources."""
    runs = {Path(r["model"]).name: r for r in (d or {}).get("runs", [])}
    sources = [d["source"]] if d and d.get("source") else []
    for path in sorted(RESULTS.glob("batched-*.json")):
        native = json.loads(path.read_text(encoding="utf-8"))
        runs[Path(native["model"]).name] = batched_from_run(native)
        sources.append(f"benchmarks/results/{path.name}, as benchmarks/batched.py --json wrote it")
    return list(runs.values()), sources


def section_batched(d: dict) -> tuple[list[str], dict[Path, str]]:
    out = DOCS / "bench-batched.svg"
    panels, md_rows = [], []
    all_runs, sources = batched_runs(d)
    for run in sorted(all_runs, key=lambda r: "phi" in r["model"]):
        name = Path(run["model"]).name
        rows = run["rows"]
        panels.append({"title": name, "x_labels": [str(r["sequences"]) for r in rows], "x_title": "sequences decoded together",
                       "y_label": "aggregate decode tokens/s", "log_y": False,
                       "series": [("Hearth", C["hearth"], "", [r["hearth_tg_aggregate_tps"] for r in rows]),
                                  ("llama.cpp", C["llama"], "", [r["llama_tg_aggregate_tps"] for r in rows])]})
        for r in rows:
            md_rows.append([f"`{name}`", str(r["sequences"]), _f(r["hearth_tg_aggregate_tps"]), _f(r["llama_tg_aggregate_tps"]),
                            _f(r["hearth_pp_tps"]), _f(r["llama_pp_tps"])])
    # the copied file's date and host only while no harness file replaced one of its runs
    facts = ", ".join(x for x in (d.get("date"), d.get("host")) if x) if len(sources) == 1 else ""
    svg = svgplot.lines("Aggregate decode speed against sequences",
                        f"{facts} — benchmarks/results/batched*.json".lstrip(" —"), panels)
    md = ["## Many sequences at once", "", f"![aggregate decode against sequences](../{_rel(out)})", "",
          "`benchmarks/batched.py`: n sequences, each with its own prompt, processed together, then decoded "
          "together one token of every sequence per step; decode t/s = all sequences' tokens over the time.", ""]
    md += _table(["model", "sequences", "Hearth decode t/s (all sequences)", "llama.cpp decode t/s", "Hearth prompt t/s",
                  "llama.cpp prompt t/s"], md_rows, 1)
    return md + [""] + [f"*Source: {x}.*" for x in sources], {out: svg}


# ----------------------------------------------------------------------------- serving
SERVER_NAMES = {"hearth": "Hearth", "llama-fa-off": "llama-server, fa off", "llama-fa-on": "llama-server, fa on"}


def serving_from_runs(lines: list[dict]) -> dict:
    """serve.sh --out's JSON lines (one per server, clients and round) as serving.json's rows:
    the median over rounds of each figure, as serve.sh's own summary takes it."""
    import statistics
    groups: dict[tuple[int, str], list[dict]] = {}
    for r in lines:
        groups.setdefault((r["clients"], r["label"]), []).append(r)
    def med(rs: list[dict], k: str) -> float | None:
        v = [r[k] for r in rs if r.get(k) is not None]
        return statistics.median(v) if v else None
    rows = [{"clients": c, "server": SERVER_NAMES.get(label, label), "tokens_per_s": med(rs, "tokens_per_s"),
             "ttft_p50_ms": med(rs, "ttft_p50_ms"), "ttft_p99_ms": med(rs, "ttft_p99_ms"),
             "inter_token_p99_ms": med(rs, "itl_p99_ms")}
            for (c, label), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "hearth", kv[0][1]))]
    rounds = len({r.get("round") for r in lines})
    return {"file": "benchmarks/results/serving-run.jsonl",
            "source": f"benchmarks/results/serving-run.jsonl, as benchmarks/serve.sh --out wrote it (median of {rounds} "
                      f"round{'s' if rounds != 1 else ''})", "date": "", "host": f"{lines[0].get('threads', '?')} threads per server",
            "method": "C closed-loop clients streaming POST /v1/completions (benchmarks/serve_load.py)", "rows": rows}


def section_serving(d: dict) -> tuple[list[str], dict[Path, str]]:
    out = DOCS / "bench-serving.svg"
    clients = sorted({r["clients"] for r in d["rows"]})
    servers = list(dict.fromkeys(r["server"] for r in d["rows"]))
    colour = {s: (C["hearth"] if s.startswith("Hearth") else C["llama"] if "off" in s else C["llama-alt"]) for s in servers}
    val = lambda s, c, k: next((r[k] for r in d["rows"] if r["server"] == s and r["clients"] == c), None)
    labels = [str(c) for c in clients]
    ttft = []
    for s in servers:
        ttft.append((s, colour[s], "", [val(s, c, "ttft_p50_ms") for c in clients]))
        ttft.append((f"{s} p99", colour[s], "5 4", [val(s, c, "ttft_p99_ms") for c in clients]))
    svg = svgplot.lines("Serving: throughput and time to first token against clients",
                        (", ".join(x for x in (d["date"], d["host"]) if x)
                         + f" — {d.get('file', 'benchmarks/results/serving.json')}").lstrip(" —"), [
                            {"title": "throughput", "x_labels": labels, "x_title": "concurrent clients",
                             "y_label": "completion tokens/s", "log_y": False,
                             "series": [(s, colour[s], "", [val(s, c, "tokens_per_s") for c in clients]) for s in servers]},
                            {"title": "time to first token: p50 (solid), p99 (dashed)", "x_labels": labels,
                             "x_title": "concurrent clients", "y_label": "TTFT, ms (log)", "log_y": True, "series": ttft}])
    md = ["## Serving", "", f"![serving throughput and TTFT against clients](../{_rel(out)})", "",
          f"`benchmarks/serve.sh`: {d['method']}.", ""]
    md += _table(["clients", "server", "tokens/s", "TTFT p50 ms", "TTFT p99 ms", "inter-token p99 ms"],
                 [[str(r["clients"]), r["server"], _f(r["tokens_per_s"]), _f(r["ttft_p50_ms"]), _f(r["ttft_p99_ms"]),
                   _f(r["inter_token_p99_ms"])] for r in d["rows"]], 2)
    return md + ["", _source(d)], {out: svg}


# ----------------------------------------------------------------------------- speculative decoding
def section_speculative(d: dict) -> tuple[list[str], dict[Path, str]]:
    out = DOCS / "bench-speculative.svg"
    look = next(c for c in d["configurations"] if "lookup" in c["configuration"])
    groups = [("all prompts (aggregate)", [look["vs_plain_aggregate"], look["vs_llama_best_ngram"]])]
    groups += [(f"{k['kind']} (median)", [k["lookup_vs_off_median"], k["lookup_vs_llama_best_median"]]) for k in d["per_kind"]]
    svg = svgplot.bars("Speculative decoding: Hearth's prompt lookup, per prompt kind",
                       f"{d['date']}, {d['host']} — benchmarks/results/speculative.json", groups,
                       [("lookup ÷ Hearth without speculation", C["hearth"]),
                        ("lookup ÷ llama.cpp's best n-gram type", C["llama"])])
    md = ["## Speculative decoding", "", f"![speculative gain per prompt kind](../{_rel(out)})", "",
          f"`benchmarks/speculative.py`: {d['method']}. Per kind: the median over that kind's prompts "
          "(the table this run kept has no per-prompt figures).", ""]
    md += _table(["configuration", "decode t/s (all prompts)", "÷ plain: aggregate", "median prompt", "worst prompt",
                  "÷ llama.cpp's best n-gram type"],
                 [[c["configuration"], _f(c["decode_tps"]), _x(c["vs_plain_aggregate"]), _x(c["vs_plain_median_prompt"]),
                   _x(c["vs_plain_worst_prompt"]), _x(c["vs_llama_best_ngram"])] for c in d["configurations"]], 1)
    return md + ["", _source(d)], {out: svg}


def _rate(rows: list[dict]) -> float | None:
    """Decode tokens/s over some of speculative.py's streamed replies, as it computes it: tokens
    after the first over the time from the first streamed token to the last."""
    tokens = sum(max(0, r["tokens"] - 1) for r in rows)
    seconds = sum(r["decode_seconds"] for r in rows)
    return tokens / seconds if seconds else None


def speculative_per_prompt(d: dict) -> list[dict]:
    """One entry per prompt of a speculative.py --json file: Hearth lookup ÷ Hearth off, and
    Hearth lookup ÷ the best llama.cpp speculative type on that prompt (as speculative.py's own
    summary divides them)."""
    runs = d["runs"]
    def by_prompt(key: str) -> dict[int, float]:
        out: dict[int, list[dict]] = {}
        for r in runs.get(key, []):
            out.setdefault(r["prompt"], []).append(r)
        return {k: v for k, v in ((k, _rate(rs)) for k, rs in out.items()) if v}
    kinds = {r["prompt"]: r.get("kind", "") for rs in runs.values() for r in rs}
    off, look = by_prompt("hearth off"), by_prompt("hearth lookup")
    llama = [by_prompt(k) for k in sorted(runs) if k.startswith("llama ") and k != "llama none"]
    out = []
    for prompt in sorted(look):
        best = max((m[prompt] for m in llama if prompt in m), default=None)
        out.append({"prompt": prompt, "kind": kinds.get(prompt, ""),
                    "vs_off": look[prompt] / off[prompt] if prompt in off else None,
                    "vs_llama_best": look[prompt] / best if best else None})
    return out


def section_speculative_run(d: dict) -> tuple[list[str], dict[Path, str]]:
    """speculative.py --json as it wrote it: the gain of every prompt."""
    out = DOCS / "bench-speculative.svg"
    rows = speculative_per_prompt(d)
    series = [("lookup ÷ Hearth without speculation", C["hearth"], "", [r["vs_off"] for r in rows])]
    if any(r["vs_llama_best"] for r in rows):
        series.append(("lookup ÷ llama.cpp's best n-gram type on the prompt", C["llama"], "", [r["vs_llama_best"] for r in rows]))
    svg = svgplot.lines("Speculative decoding: Hearth's prompt lookup, prompt by prompt",
                        f"{d.get('date', '')} — benchmarks/results/speculative-run.json".lstrip(" —"), [{
                            "title": "decode speed ratio per prompt (> 1 = lookup faster)",
                            "x_labels": [str(r["prompt"] + 1) for r in rows], "x_title": "prompt", "y_label": "ratio",
                            "log_y": False, "points_only": True, "reference": 1.0, "series": series}])
    md = ["## Speculative decoding", "", f"![speculative gain per prompt](../{_rel(out)})", "",
          "`benchmarks/speculative.py --json`: each prompt's decode tokens/s with Hearth's prompt lookup over the "
          "same prompt without speculation, and over llama.cpp's best n-gram type on that prompt.", ""]
    summary = d.get("summary", {})
    md += _table(["configuration", "decode t/s (all prompts)", "median prompt ÷ plain", "worst prompt ÷ plain"],
                 [[k, _f(v.get("tokens_per_second")), _x(v.get("median_speedup_vs_plain")),
                   _x(v.get("min_speedup_vs_plain"))] for k, v in summary.items()], 1)
    md += [""] + _table(["prompt", "kind", "lookup ÷ off", "lookup ÷ llama.cpp's best"],
                        [[str(r["prompt"] + 1), r["kind"], _x(r["vs_off"]), _x(r["vs_llama_best"])] for r in rows], 2)
    return md + ["", _source(d) or "*Source: benchmarks/results/speculative-run.json, as benchmarks/speculative.py wrote it.*"], {out: svg}


# ----------------------------------------------------------------------------- agent replay
def section_agent_replay(hearth: dict, llama: dict | None) -> tuple[list[str], dict[Path, str]]:
    out = DOCS / "bench-agent-replay.svg"
    runs: list[tuple[str, str, str, dict]] = []
    for name, colour, dash in (("hearth", C["hearth"], ""), ("hearth-off", C["hearth-alt"], "5 4")):
        if name in hearth.get("runs", {}):
            runs.append((name, colour, dash, hearth["runs"][name]))
    # llama-server's rows come from the second file when there is one (the first file's were run
    # with a template llama-server misread; its history section says so).
    source_llama = llama if llama else {}
    for name, colour, dash in (("llama-fa-off", C["llama"], ""), ("llama-fa-on", C["llama-alt"], "5 4")):
        if name in source_llama.get("runs", {}):
            runs.append((name, colour, dash, source_llama["runs"][name]))
    turns = sorted({r["turn"] for _, _, _, run in runs for r in run["rows"] if r["conv"] == "main"})
    series = []
    for name, colour, dash, run in runs:
        by_turn = {r["turn"]: r["ttft"] for r in run["rows"] if r["conv"] == "main"}
        series.append((name, colour, dash, [round(by_turn[t], 3) if t in by_turn else None for t in turns]))
    a = hearth.get("args", {})
    svg = svgplot.lines("Agent replay: time to first token of each main turn", f"{Path(hearth.get('model', '')).name}, "
                        f"--parallel {a.get('parallel')}, {a.get('threads')} threads, {hearth.get('host', '')} — "
                        "benchmarks/results/agent-replay-*.json", [{
                            "title": "main conversation (sub-agents after turns 5, 10, 15, 20, 25)",
                            "x_labels": [str(t) for t in turns], "x_title": "main turn", "y_label": "TTFT, s (log)",
                            "log_y": True, "series": series}])
    md = ["## Agent replay", "", f"![agent-replay TTFT per turn](../{_rel(out)})", "",
          "`benchmarks/agent_replay.py`: one recorded coding-agent session (30 main turns growing to 13k tokens, two "
          "sub-agents at once after every fifth turn) against two slots, so the main conversation's next turn finds its "
          "prefix only in a prompt cache; streaming chat completions, temperature 0, 24 tokens per reply. "
          "`hearth-off`: Hearth with its prompt cache off.", ""]
    rows = []
    for name, _, _, run in runs:
        s = run["summary"]
        rows.append([name, f"{s['ttft_sum']:.2f} s", f"{s['ttft_sum_main']:.2f} s", f"{s['main_min_share_from_turn2']:.3f}",
                     f"{run['wall']:.1f} s", f"{run['peak_rss_mb']:.0f} MB"])
    md += _table(["run", "summed TTFT", "main conversation", "min cached share (turn ≥ 2)", "wall", "peak RSS"], rows, 1)
    src = [f"*Source: {hearth['source']}*"] + ([f"*and {llama['source']}.*"] if llama and llama.get("source") else [])
    return md + [""] + src, {out: svg}


# ----------------------------------------------------------------------------- history
def history_entries() -> list[tuple[str, str]]:
    """(file name, title) of every diary in benchmarks/history/, newest date first."""
    entries = []
    for path in sorted(HISTORY.glob("*.md"), key=lambda p: (p.name[:10], p.name), reverse=True):
        if path.name == "README.md":
            continue
        text = path.read_text(encoding="utf-8")
        h1 = re.search(r"^# (.+)$", text, re.M)
        date = re.search(r"^- Date: (.+)$", text, re.M)
        if h1 and date:   # a whole harness report: its title and the run's date
            title = f"{h1.group(1)}, the run of {date.group(1)}"
        else:
            title = next((line.lstrip("#").strip() for line in text.splitlines() if line.startswith("## ")), path.stem)
        entries.append((path.name, title))
    return entries


def history_index(entries: list[tuple[str, str]]) -> str:
    lines = ["<!-- generated by benchmarks/run.sh --report-only from the files in this folder -->",
             "# Benchmark history", "",
             "Dated runs and investigations, as they were written at the time (they were the body of "
             "benchmarks/RESULTS.md until 2026-11-29; moved here unchanged apart from two relative links). "
             "The current figures are in [../RESULTS.md](../RESULTS.md). Newest first.", ""]
    lines += [f"- {name[:10]}: [{title}]({name})" for name, title in entries]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the page
def render() -> dict[Path, str]:
    """Every generated file and its content."""
    files: dict[Path, str] = {}
    sections: list[list[str]] = []
    missing: list[str] = []
    plan = [("ggufs.json", section_ggufs, "speed ratio per GGUF type"),
            ("long-context.json", section_long_context, "prompt speed against context length"),
            ("batched.json", section_batched, "aggregate decode against sequences"),
            ("serving.json", section_serving, "serving throughput and TTFT against clients"),
            ("speculative.json", section_speculative, "speculative gain per prompt")]
    per_prompt = _load("speculative-run.json")   # speculative.py --json: every prompt; preferred
    serve_run = RESULTS / "serving-run.jsonl"       # serve.sh --out: preferred
    for name, fn, what in plan:
        if name == "speculative.json" and per_prompt is not None:
            name, fn = "speculative-run.json", section_speculative_run
        d = _load(name)
        if name == "serving.json" and serve_run.is_file():
            d = serving_from_runs([json.loads(x) for x in serve_run.read_text(encoding="utf-8").splitlines() if x.strip()])
        if name == "batched.json" and d is None and any(RESULTS.glob("batched-*.json")):
            d = {}
        if d is None:
            missing.append(f"{what}: no benchmarks/results/{name}")
            continue
        md, svgs = fn(d)
        sections.append(md)
        files.update(svgs)
    replay = _load("agent-replay-gemma.json")
    if replay is None:
        missing.append("agent-replay TTFT per turn: no benchmarks/results/agent-replay-gemma.json")
    else:
        md, svgs = section_agent_replay(replay, _load("agent-replay-gemma-llama.json"))
        sections.append(md)
        files.update(svgs)
    if per_prompt is None:
        missing.append("speculative gain per single prompt: the committed run kept only per-kind medians and the "
                       "aggregate / median / worst prompt (plotted per kind above); `benchmarks/speculative.py --json "
                       "benchmarks/results/speculative-run.json` records every prompt, and the page then plots each")
    entries = history_entries()
    page = ["<!-- generated by `benchmarks/run.sh --report-only` (benchmarks/hearthbench/page.py) from "
            "benchmarks/results/*.json: change those files or the generator, not this page -->",
            "# Benchmarks: Hearth against llama.cpp on the CPU", "",
            "The current figures, each from the newest committed measurement of its kind in "
            "[results/](results/) (JSON a harness wrote, or numbers copied from a dated run with a `source` "
            "naming it). Every figure compares the two engines on the same GGUF file and the same threads. "
            "How each harness works: [README.md](README.md). Dated runs and investigations, with the reasoning "
            "behind each number: [history/](history/README.md).", "",
            "`benchmarks/run.sh --report-only` rewrites this page and its plots from the committed JSON "
            "(no benchmark runs); `benchmarks/run.sh --check` fails if they differ from a fresh rewrite.", ""]
    toc = [re.sub(r"^## ", "", s[0]) for s in sections]
    page += [f"- [{t}](#{re.sub(r'[^a-z0-9 -]', '', t.lower()).replace(' ', '-')})" for t in toc] + [""]
    for s in sections:
        page += s + [""]
    page += ["## Not plotted", ""] + [f"- {m}" for m in missing] + [""]
    page += ["## History", "", "Newest first; [the index](history/README.md).", ""]
    page += [f"- {name[:10]}: [{title}](history/{name})" for name, title in entries]
    files[PAGE] = "\n".join(page) + "\n"
    files[HISTORY / "README.md"] = history_index(entries)
    return files


def main(argv: list[str] | None = None) -> int:
    import argparse
    import time
    ap = argparse.ArgumentParser(description="Rewrite benchmarks/RESULTS.md and its plots from benchmarks/results/*.json.")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a committed file differs from a fresh regeneration")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    files = render()
    stale = [p for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if a.check:
        for p in stale:
            print(f"stale: {_rel(p)} (run benchmarks/run.sh --report-only)")
        print(f"checked {len(files)} files in {time.monotonic() - t0:.2f} s: " + ("ok" if not stale else f"{len(stale)} stale"))
        return 1 if stale else 0
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(files[p], encoding="utf-8")
    print(f"wrote {len(stale)} of {len(files)} files ({', '.join(_rel(p) for p in stale) or 'all up to date'}) "
          f"in {time.monotonic() - t0:.2f} s")
    return 0
