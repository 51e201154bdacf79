#!/usr/bin/env python3
"""Speculative decoding, side by side: Hearth (`hearth serve --speculative lookup` and `off`)
and llama.cpp (`llama-server --spec-type none` and its n-gram prompt-lookup types), on the
input-grounded prompts of benchmarks/data/grounded-prompts.jsonl, at temperature 0.

Each configuration is one server process started here on loopback (same model file, same
threads, same context), alternating configurations in rounds. Every prompt goes through
POST /v1/completions as raw text (the task, the passage, then "Answer:"; no chat template, so
both engines see the same prompt tokens — llama-server falls back to a ChatML template for a
GGUF without one), streamed, temperature 0, `max_tokens` fixed and `ignore_eos` (both engines
generate the same number of tokens); decode speed is timed on arrival of the SSE frames:
(completion_tokens - 1) / (time of the last text frame - time of the first).
Tokens come from usage.completion_tokens (stream_options.include_usage). Per configuration it
reports the total over all prompts (sum of tokens / sum of decode seconds) and the median of
the per-prompt ratios to the engine's own plain configuration.

With --draft-model D: a draft model instead of prompt lookup — Hearth `--speculative draft
--draft-model D` against llama.cpp's `--spec-type draft-simple -md D` at each `--spec-draft-n-max`
of --llama-draft-max (its default is 3; compare with its best), beside both plain configurations.

Usage: benchmarks/speculative.py [--model models/gemma-3-270m-q4_k_m.gguf] [--threads 2]
       [--max-tokens 256] [--rounds 1] [--hearth .build/release/hearth]
       [--llama-server /work/llama-build/build/bin/llama-server] [--only hearth|llama]
       [--draft-model D [--llama-draft-max 3,8,16]] [--json OUT]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc, seconds=120):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.3)
    raise RuntimeError("server did not become ready")


def model_id(url):
    with urllib.request.urlopen(url + "/v1/models", timeout=10) as r:
        return json.load(r)["data"][0]["id"]


def stream_completion(url, prompt, max_tokens, model="m"):
    """One streamed POST /v1/completions of a raw-text prompt (no chat template, so both engines
    see the same prompt tokens), temperature 0, `ignore_eos` so both generate `max_tokens`."""
    body = json.dumps({
        "model": model, "prompt": prompt, "temperature": 0, "max_tokens": max_tokens, "ignore_eos": True,
        "stream": True, "stream_options": {"include_usage": True},
    }).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    first = last = None
    tokens = None
    frames = 0
    text = []
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            event = json.loads(data)
            if event.get("usage"):
                tokens = event["usage"].get("completion_tokens", tokens)
            for choice in event.get("choices", []):
                piece = choice.get("text")
                if piece:
                    now = time.perf_counter()
                    first = first or now
                    last = now
                    frames += 1
                    text.append(piece)
    tokens = tokens if tokens is not None else frames
    seconds = (last - first) if first and last else 0.0
    return {"tokens": tokens, "decode_seconds": seconds, "text": "".join(text)}


def as_completion(item):
    """A grounded prompt as raw text a base model continues: the task, then an answer cue."""
    return item["prompt"] + "\n\nAnswer:\n"


def start(config, args, port):
    if config["engine"] == "hearth":
        cmd = [args.hearth, "serve", "--model", args.model, "--port", str(port), "--host", "127.0.0.1",
               "-t", str(args.threads), "--ctx", str(args.ctx), "--speculative", config["mode"]]
    else:
        cmd = [args.llama_server, "-m", args.model, "--port", str(port), "--host", "127.0.0.1",
               "-t", str(args.threads), "-c", str(args.ctx), "-np", "1", "--spec-type", config["type"]]
    cmd += config.get("extra", [])
    log = open(os.path.join(args.logs, f"{config['engine']}-{config['mode']}.log"), "a")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--prompts", default=os.path.join(ROOT, "benchmarks/data/grounded-prompts.jsonl"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--hearth", default=os.path.join(ROOT, ".build/release/hearth"))
    ap.add_argument("--llama-server", default="/work/llama-build/build/bin/llama-server")
    ap.add_argument("--llama-types", default="ngram-simple,ngram-map-k,ngram-mod",
                    help="llama.cpp speculative types to measure besides none")
    ap.add_argument("--only", choices=["hearth", "llama"])
    ap.add_argument("--draft-model", help="measure a draft model instead of prompt lookup")
    ap.add_argument("--llama-draft-max", default="3,8,16",
                    help="with --draft-model: llama.cpp's --spec-draft-n-max values to measure")
    ap.add_argument("--json")
    ap.add_argument("--logs", default=os.path.join(ROOT, "benchmarks/work/speculative-logs"))
    args = ap.parse_args()
    os.makedirs(args.logs, exist_ok=True)
    prompts = [json.loads(l) for l in open(args.prompts) if l.strip()]

    configs = []
    if args.only != "llama":
        configs += [{"engine": "hearth", "mode": "off"}]
        if args.draft_model:
            configs += [{"engine": "hearth", "mode": "draft", "extra": ["--draft-model", args.draft_model]}]
        else:
            configs += [{"engine": "hearth", "mode": "lookup"}]
    if args.only != "hearth":
        configs += [{"engine": "llama", "mode": "none", "type": "none"}]
        if args.draft_model:
            configs += [{"engine": "llama", "mode": f"draft-simple-{n}", "type": "draft-simple",
                         "extra": ["-md", args.draft_model, "-td", str(args.threads), "--spec-draft-n-max", n]}
                        for n in args.llama_draft_max.split(",") if n]
        else:
            configs += [{"engine": "llama", "mode": t, "type": t} for t in args.llama_types.split(",") if t]
    results = {(c["engine"], c["mode"]): [] for c in configs}
    for round_ in range(args.rounds):
        for config in configs:
            port = free_port()
            proc = start(config, args, port)
            url = f"http://127.0.0.1:{port}"
            try:
                wait_ready(url, proc)
                model = model_id(url)
                stream_completion(url, "Hello,", 8, model)  # warm-up
                for i, item in enumerate(prompts):
                    r = stream_completion(url, as_completion(item), args.max_tokens, model)
                    r.update(prompt=i, kind=item["kind"], round=round_)
                    results[(config["engine"], config["mode"])].append(r)
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            rs = results[(config["engine"], config["mode"])]
            tok = sum(max(0, r["tokens"] - 1) for r in rs)
            sec = sum(r["decode_seconds"] for r in rs)
            print(f"round {round_} {config['engine']} {config['mode']}: {tok / sec if sec else 0:.1f} tokens/s "
                  f"({tok} tokens)", file=sys.stderr, flush=True)

    def rate(rs):
        tok = sum(max(0, r["tokens"] - 1) for r in rs)
        sec = sum(r["decode_seconds"] for r in rs)
        return tok / sec if sec else 0.0

    def per_prompt(rs):
        out = {}
        for r in rs:
            out.setdefault(r["prompt"], []).append(r)
        return {k: rate(v) for k, v in out.items()}

    summary = {}
    plain = {"hearth": "off", "llama": "none"}
    for (engine, mode), rs in results.items():
        base = per_prompt(results.get((engine, plain[engine]), []))
        mine = per_prompt(rs)
        ratios = [mine[k] / base[k] for k in mine if base.get(k)]
        summary[f"{engine} {mode}"] = {
            "tokens_per_second": round(rate(rs), 2),
            "tokens": sum(r["tokens"] for r in rs),
            "median_speedup_vs_plain": round(statistics.median(ratios), 3) if ratios else None,
            "min_speedup_vs_plain": round(min(ratios), 3) if ratios else None,
        }
    print(json.dumps(summary, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "runs": {f"{e} {m}": rs for (e, m), rs in results.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
