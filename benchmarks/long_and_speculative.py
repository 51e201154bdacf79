#!/usr/bin/env python3
"""Issue 27's goals in one run: quantized KV cache accuracy, long prompts and decode at depth,
speculative decoding — Hearth and llama.cpp measured side by side, one after the other, on
this machine, 2 threads. Prints one table per part and the goals with their verdicts, and
writes everything measured to --json.

Parts (each can be left out with --skip):
  kv    KL divergence of each KV type against the same engine's f16 cache (default model,
        scripts/data/gpl-3.0-apache-2.0.txt, --ctx 4096, 2 chunks): `hearth perplexity
        --kv-type T --kl-divergence-base` and `llama-perplexity -fa on -ctk T -ctv T
        --kl-divergence`. Goal: Hearth's mean KLD <= llama.cpp's at q8_0 and at q4_0.
  long  per model of --long-models: pp4096, pp8192, pp16384 from an empty cache and tg64 at
        depth 8192 (`hearth bench -p P -n 0` / `-p 0 -n 64 -d 8192`; `llama-bench` the same
        with -fa 0 and -fa 1), each process under /usr/bin/time -v for its peak RSS. Goals:
        pp8192 >= 1.5x and tg64@d8192 >= 1.2x llama.cpp's better flash-attention setting; peak
        RSS <= llama.cpp's lower one, in every test. The Phi-3.5-mini-shaped model runs only
        pp8192 and tg64@d8192 by default (--phi35-tests: its pp16384 alone takes ~40 minutes
        of llama.cpp on 2 cores), each without the warm-up run (--no-warmup for both engines:
        one run takes minutes, and a warm-up pass would double it).
  spec  benchmarks/speculative.py on the 24 input-grounded prompts (default model, temperature
        0, 256 tokens each, through each engine's server). Goals: Hearth lookup >= 2x Hearth
        plain (all prompts' tokens / all prompts' decode seconds) and faster than llama.cpp's
        best n-gram type.
  free  the same on benchmarks/data/free-prompts.jsonl (10 open questions, nothing to copy),
        Hearth only. Goal: no prompt slower with lookup than without it below 0.97x.

Model files: the default model (models/gemma-3-270m-q4_k_m.gguf) and, for `phi35`, the
Phi-3.5-mini-shaped random-weight Q4_K_M GGUF that `benchmarks/run.sh --prepare-only --models
phi35-q4_k_m` makes with llama.cpp's converter and quantizer. llama.cpp's binaries:
`benchmarks/build-llama-server.sh` (llama-server, llama-bench, llama-perplexity).

Usage: benchmarks/long_and_speculative.py [--hearth .build/release/hearth]
       [--llama-bin /work/llama-build/build/bin] [--long-models gemma,phi35] [--skip kv,long,spec,free]
       [--json benchmarks/work/long-and-speculative.json]
Run it alone on the machine (nothing else building or benchmarking): a full run takes about
an hour and a half on 2 cores, most of it the Phi-shaped long prompts.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODEL = "models/gemma-3-270m-q4_k_m.gguf"
LONG_MODELS = {
    "gemma": DEFAULT_MODEL,
    "phi35": "benchmarks/work/phi35-mini-q4_k_m.gguf",
}
KV_TEXT = "scripts/data/gpl-3.0-apache-2.0.txt"
LONG_TESTS = [("pp4096", 4096, 0, 0), ("pp8192", 8192, 0, 0), ("pp16384", 16384, 0, 0),
              ("tg64@d8192", 0, 64, 8192)]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def timed(cmd, timeout=7200):
    """Runs cmd under /usr/bin/time -v; returns (stdout, stderr, peak RSS bytes, seconds)."""
    log("$ " + " ".join(cmd))
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t0 = time.time()
        p = subprocess.run(["/usr/bin/time", "-v", "-o", tf.name] + cmd, capture_output=True, text=True,
                           timeout=timeout, cwd=ROOT)
        seconds = time.time() - t0
        if p.returncode != 0:
            raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", tf.read())
        return p.stdout, p.stderr, (int(m.group(1)) * 1024 if m else None), seconds


def kv_part(a):
    hearth, llama_ppl = a.hearth, os.path.join(a.llama_bin, "llama-perplexity")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--model", DEFAULT_MODEL, "--file", KV_TEXT, "--ctx", "4096", "-t", str(a.threads),
                  "--chunks", "2", "--json"]
        timed([hearth, "perplexity", *common, "--save-logits", f"{tmp}/h.hlog"])
        lcommon = ["-m", DEFAULT_MODEL, "-c", "4096", "-t", str(a.threads), "-fa", "on", "--chunks", "2"]
        timed([llama_ppl, *lcommon, "-f", KV_TEXT, "--kl-divergence-base", f"{tmp}/l.kld"])
        for kv in ("q8_0", "q4_0"):
            stdout, _, _, _ = timed([hearth, "perplexity", *common, "--kv-type", kv,
                                     "--kl-divergence-base", f"{tmp}/h.hlog"])
            h = json.loads(stdout.strip().splitlines()[-1])["kl_divergence"]
            stdout, stderr, _, _ = timed([llama_ppl, *lcommon, "-ctk", kv, "-ctv", kv,
                                          "--kl-divergence-base", f"{tmp}/l.kld", "--kl-divergence"])
            text = stdout + stderr
            m = re.search(r"Mean\s+KLD:\s+([0-9.]+)\s+±\s+([0-9.]+)", text)
            s = re.search(r"Same top p:\s+([0-9.]+)\s+±", text)
            if not m:
                raise SystemExit(f"no 'Mean KLD' in llama-perplexity's output:\n{text[-2000:]}")
            out[kv] = {"hearth_mean_kld": h["mean_kld"], "hearth_same_top": h["same_top"],
                       "hearth_positions": h["positions"],
                       "llama_mean_kld": float(m.group(1)), "llama_mean_kld_pm": float(m.group(2)),
                       "llama_same_top": float(s.group(1)) / 100 if s else None}
            log(f"kv {kv}: Hearth {h['mean_kld']:.5f}, llama.cpp {float(m.group(1)):.5f}")
    return out


def long_part(a, name, model, tests, warmup):
    if not os.path.isfile(os.path.join(ROOT, model)):
        raise SystemExit(f"{model} is missing" + (" (benchmarks/run.sh --prepare-only --models phi35-q4_k_m makes it)"
                                                  if name == "phi35" else ""))
    llama_bench = os.path.join(a.llama_bin, "llama-bench")
    out = {}
    for label, p, n, d in [t for t in LONG_TESTS if t[0] in tests]:
        row = {}
        cold = [] if warmup else ["--no-warmup"]
        cmd = [a.hearth, "bench", "--model", model, "-p", str(p), "-n", str(n), "-r", "1", "-t", str(a.threads),
               "--json"] + (["-d", str(d)] if d else []) + cold
        stdout, _, rss, secs = timed(cmd)
        j = json.loads(stdout.strip().splitlines()[-1])
        row["hearth"] = {"tokens_per_second": j["pp" if p else "tg"]["tokens_per_second"], "peak_rss": rss,
                         "kv_cache_bytes": j.get("kv_cache_bytes"), "seconds": round(secs, 1)}
        for fa in (0, 1):
            cmd = [llama_bench, "-m", model, "-p", str(p), "-n", str(n), "-fa", str(fa), "-t", str(a.threads),
                   "-r", "1", "-o", "json"] + (["-d", str(d)] if d else []) + cold
            stdout, _, rss, secs = timed(cmd)
            rows = json.loads(stdout)
            row[f"llama_fa{fa}"] = {"tokens_per_second": rows[0]["avg_ts"], "peak_rss": rss, "seconds": round(secs, 1)}
        best = max(row["llama_fa0"]["tokens_per_second"], row["llama_fa1"]["tokens_per_second"])
        row["ratio"] = row["hearth"]["tokens_per_second"] / best
        row["rss_ratio"] = row["hearth"]["peak_rss"] / min(row["llama_fa0"]["peak_rss"], row["llama_fa1"]["peak_rss"])
        log(f"{name} {label}: Hearth {row['hearth']['tokens_per_second']:.2f}, llama.cpp fa0 "
            f"{row['llama_fa0']['tokens_per_second']:.2f} fa1 {row['llama_fa1']['tokens_per_second']:.2f} "
            f"-> {row['ratio']:.2f}x, RSS {row['rss_ratio']:.2f}x")
        out[label] = row
    return out


def spec_part(a):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as tf:
        cmd = [sys.executable, "benchmarks/speculative.py", "--hearth", a.hearth, "--threads", str(a.threads),
               "--llama-server", os.path.join(a.llama_bin, "llama-server"), "--json", tf.name]
        log("$ " + " ".join(cmd))
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        s = json.load(tf)["summary"]
    llama_types = {k: v for k, v in s.items() if k.startswith("llama ") and k != "llama none"}
    best_type = max(llama_types, key=lambda k: llama_types[k]["tokens_per_second"])
    out = {"summary": s, "hearth_lookup_vs_off": s["hearth lookup"]["tokens_per_second"]
           / s["hearth off"]["tokens_per_second"],
           "llama_best_type": best_type,
           "hearth_lookup_vs_llama_best": s["hearth lookup"]["tokens_per_second"]
           / llama_types[best_type]["tokens_per_second"]}
    return out


def free_part(a):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as tf:
        cmd = [sys.executable, "benchmarks/speculative.py", "--hearth", a.hearth, "--threads", str(a.threads),
               "--only", "hearth", "--prompts", "benchmarks/data/free-prompts.jsonl", "--json", tf.name]
        log("$ " + " ".join(cmd))
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        s = json.load(tf)["summary"]
    return {"summary": s, "hearth_lookup_vs_off": s["hearth lookup"]["tokens_per_second"]
            / s["hearth off"]["tokens_per_second"],
            "worst_prompt": s["hearth lookup"]["min_speedup_vs_plain"]}


def mib(b):
    return f"{b / 2**20:.0f} MiB" if b else "—"


def speculative_table(title, summary):
    print(f"\n## {title}\n")
    print("| configuration | decode tokens/s | median prompt ÷ plain | worst prompt ÷ plain |")
    print("|---|---|---|---|")
    for k, v in summary.items():
        print(f"| {k} | {v['tokens_per_second']:.1f} | {v['median_speedup_vs_plain']} | {v['min_speedup_vs_plain']} |")


def report(res):
    goals = []
    if "kv" in res:
        print("\n## KV cache types: mean KL divergence against each engine's own f16 cache\n")
        print("| KV type | Hearth mean KLD | llama.cpp mean KLD | Hearth same top | llama.cpp same top |")
        print("|---|---|---|---|---|")
        for kv, r in res["kv"].items():
            lt = f"{r['llama_same_top']:.2%}" if r["llama_same_top"] is not None else "—"
            print(f"| {kv} | {r['hearth_mean_kld']:.5f} | {r['llama_mean_kld']:.5f} ± {r['llama_mean_kld_pm']:.5f} "
                  f"| {r['hearth_same_top']:.2%} | {lt} |")
            goals.append((f"KV {kv}: Hearth KLD <= llama.cpp's", r["hearth_mean_kld"] <= r["llama_mean_kld"],
                          f"{r['hearth_mean_kld']:.5f} vs {r['llama_mean_kld']:.5f}"))
    for name, rows in res.get("long", {}).items():
        print(f"\n## Long context: {LONG_MODELS[name]}\n")
        print("| test | Hearth t/s | llama.cpp fa 0 | llama.cpp fa 1 | ratio to the better | Hearth peak RSS "
              "| llama.cpp peak RSS fa 0 / fa 1 | RSS ratio to the lower |")
        print("|---|---|---|---|---|---|---|---|")
        for label, r in rows.items():
            print(f"| {label} | {r['hearth']['tokens_per_second']:.2f} | {r['llama_fa0']['tokens_per_second']:.2f} "
                  f"| {r['llama_fa1']['tokens_per_second']:.2f} | **{r['ratio']:.2f}×** | {mib(r['hearth']['peak_rss'])} "
                  f"| {mib(r['llama_fa0']['peak_rss'])} / {mib(r['llama_fa1']['peak_rss'])} | {r['rss_ratio']:.2f}× |")
        if "pp8192" in rows:
            goals.append((f"{name} pp8192 >= 1.5x", rows["pp8192"]["ratio"] >= 1.5, f"{rows['pp8192']['ratio']:.2f}x"))
        if "tg64@d8192" in rows:
            goals.append((f"{name} tg64@d8192 >= 1.2x", rows["tg64@d8192"]["ratio"] >= 1.2,
                          f"{rows['tg64@d8192']['ratio']:.2f}x"))
        worst = max(rows.values(), key=lambda r: r["rss_ratio"])
        goals.append((f"{name} peak RSS <= llama.cpp's in every test", worst["rss_ratio"] <= 1.0,
                      f"highest {worst['rss_ratio']:.2f}x"))
    if "spec" in res:
        s = res["spec"]
        speculative_table("Speculative decoding: 24 input-grounded prompts, default model, temperature 0", s["summary"])
        goals.append(("lookup >= 2x plain decoding", s["hearth_lookup_vs_off"] >= 2.0, f"{s['hearth_lookup_vs_off']:.2f}x"))
        goals.append((f"lookup ahead of llama.cpp's best n-gram type ({s['llama_best_type']})",
                       s["hearth_lookup_vs_llama_best"] > 1.0, f"{s['hearth_lookup_vs_llama_best']:.2f}x"))
    if "free" in res:
        f = res["free"]
        speculative_table("Speculative decoding on free prompts (nothing to copy), Hearth only", f["summary"])
        goals.append(("free prompts: no prompt below 0.97x plain with lookup", f["worst_prompt"] >= 0.97,
                      f"worst {f['worst_prompt']:.2f}x, all {f['hearth_lookup_vs_off']:.2f}x"))
    print("\n## Goals\n")
    print("| goal | measured | held |")
    print("|---|---|---|")
    for g, ok, what in goals:
        print(f"| {g} | {what} | {'yes' if ok else '**no**'} |")
    return all(ok for _, ok, _ in goals)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hearth", default=".build/release/hearth", help="the hearth binary (release build)")
    ap.add_argument("--llama-bin", default="/work/llama-build/build/bin",
                    help="directory of llama-bench, llama-perplexity and llama-server")
    ap.add_argument("--threads", type=int, default=2, help="threads for every engine")
    ap.add_argument("--long-models", default="gemma,phi35", help="models for the long-context part: gemma, phi35")
    ap.add_argument("--phi35-tests", default="pp8192,tg64@d8192",
                    help="tests for phi35: any of " + ",".join(t[0] for t in LONG_TESTS) + " (run without warm-up)")
    ap.add_argument("--skip", default="", help="parts to leave out: kv, long, spec, free (comma-separated)")
    ap.add_argument("--json", default="benchmarks/work/long-and-speculative.json", help="where to write the figures")
    ap.add_argument("--report", help="only print the tables of an earlier --json file")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            return 0 if report(json.load(f)["results"]) else 1
    skip = {s for s in a.skip.split(",") if s}
    res = {}
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    def save():
        os.makedirs(os.path.dirname(os.path.join(ROOT, a.json)), exist_ok=True)
        with open(os.path.join(ROOT, a.json), "w") as f:
            json.dump({"started": started, "hearth": a.hearth, "threads": a.threads, "results": res}, f, indent=1)

    if "kv" not in skip:
        res["kv"] = kv_part(a)
        save()
    if "long" not in skip:
        res["long"] = {}
        for name in [m for m in a.long_models.split(",") if m]:
            if name not in LONG_MODELS:
                raise SystemExit(f"--long-models: unknown {name}; choose from {', '.join(LONG_MODELS)}")
            if name == "phi35":
                tests = [t for t in a.phi35_tests.split(",") if t]
                bad = [t for t in tests if t not in {x[0] for x in LONG_TESTS}]
                if bad:
                    raise SystemExit(f"--phi35-tests: unknown {', '.join(bad)}")
                res["long"][name] = long_part(a, name, LONG_MODELS[name], tests, warmup=False)
            else:
                res["long"][name] = long_part(a, name, LONG_MODELS[name], [t[0] for t in LONG_TESTS], warmup=True)
            save()
    if "spec" not in skip:
        res["spec"] = spec_part(a)
        save()
    if "free" not in skip:
        res["free"] = free_part(a)
        save()
    log(f"started {started}, ended {time.strftime('%H:%M:%S UTC', time.gmtime())}; figures in {a.json}")
    return 0 if report(res) else 1


if __name__ == "__main__":
    sys.exit(main())
