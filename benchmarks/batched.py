#!/usr/bin/env python3
"""Batched decoding, Hearth against llama.cpp, in one run on the same files and threads.

llama-batched-bench semantics on both sides: at each level N, N sequences each get their own
prompt of -p random tokens (processed together in batches of --batch tokens), then -n decode
steps each feed one token of every sequence in a single decode call. Reported: prompt tokens/s
(all N prompts) and aggregate decode tokens/s (N × n / time), mean of --reps runs after one
warm-up, engines alternating level by level.

llama.cpp runs through llama-cpp-python's low-level batch API (llama_batch_init /
llama_decode), in a child process per measurement; Hearth through `hearth bench --parallel N
--json`. Needs benchmarks/.venv (benchmarks/run.sh --setup-only makes it).

    benchmarks/.venv/bin/python benchmarks/batched.py --model models/gemma-3-270m-q4_k_m.gguf \
        --levels 1,2,4,8 [-p 128] [-n 64] [--threads 2] [--reps 2] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def llama_child(a: argparse.Namespace, level: int) -> dict:
    """One level in this process: returns {"pp": [...], "tg": [...]} tokens/s samples."""
    import llama_cpp as L

    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = L.llama_model_load_from_file(a.model.encode(), mp)
    if not model:
        raise SystemExit("failed to load model")
    cp = L.llama_context_default_params()
    cp.n_ctx = level * (a.prompt + a.gen)
    cp.n_batch = a.batch
    cp.n_ubatch = a.batch
    cp.n_seq_max = level
    cp.n_threads = a.threads
    cp.n_threads_batch = a.threads
    cp.kv_unified = True  # one cache shared by the sequences, as llama-batched-bench's default
    cp.no_perf = True
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        raise SystemExit("failed to create context")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    mem = L.llama_get_memory(ctx)
    rng = random.Random(1234)
    batch = L.llama_batch_init(max(a.batch, level), 0, level)

    def fill(items: list[tuple[int, int, int, bool]]) -> None:
        for i, (seq, pos, tok, logits) in enumerate(items):
            batch.token[i] = tok
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = logits
        batch.n_tokens = len(items)
        rc = L.llama_decode(ctx, batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    def measure() -> tuple[float, float]:
        L.llama_memory_clear(mem, False)
        items = [(s, i, rng.randrange(n_vocab), i == a.prompt - 1) for s in range(level) for i in range(a.prompt)]
        t0 = time.perf_counter()
        for k in range(0, len(items), a.batch):
            fill(items[k:k + a.batch])
        L.llama_synchronize(ctx)
        pp = len(items) / (time.perf_counter() - t0)
        toks = [rng.randrange(n_vocab) for _ in range(level)]
        t0 = time.perf_counter()
        for step in range(a.gen):
            fill([(s, a.prompt + step, (toks[s] + step) % n_vocab, True) for s in range(level)])
            L.llama_synchronize(ctx)
        tg = level * a.gen / (time.perf_counter() - t0)
        return pp, tg

    measure()
    runs = [measure() for _ in range(a.reps)]
    L.llama_batch_free(batch)
    return {"pp": [r[0] for r in runs], "tg": [r[1] for r in runs]}


def run_llama(a: argparse.Namespace, level: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child-level", str(level), "--model", a.model, "-p", str(a.prompt),
         "-n", str(a.gen), "--threads", str(a.threads), "--reps", str(a.reps), "--batch", str(a.batch)],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_hearth(a: argparse.Namespace, level: int) -> dict:
    out = subprocess.run(
        [a.hearth, "bench", "--model", a.model, "-p", str(a.prompt), "-n", str(a.gen), "-r", str(a.reps),
         "-t", str(a.threads), "-b", str(a.batch), "--parallel", str(level), "--json"]
        + (["--activation-bits", a.activation_bits] if a.activation_bits else []),
        check=True, capture_output=True, text=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    level_report = report["parallel"][0]
    return {"pp": level_report["pp"]["samples"], "tg": level_report["tg"]["samples"]}


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="GGUF file both engines read")
    p.add_argument("--levels", default="1,2,4,8", help="comma-separated sequence counts")
    p.add_argument("-p", "--prompt", type=int, default=128, help="prompt tokens per sequence")
    p.add_argument("-n", "--gen", type=int, default=64, help="decode steps")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=2, help="measured runs per level (after one warm-up)")
    p.add_argument("--batch", type=int, default=512, help="tokens per decode call during the prompts")
    p.add_argument("--hearth", default=str(REPO / ".build/release/hearth"), help="the hearth binary")
    p.add_argument("--activation-bits", default=None, help="pass --activation-bits to hearth")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--child-level", type=int, default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child_level is not None:
        print(json.dumps(llama_child(a, a.child_level)))
        return 0
    levels = [int(x) for x in a.levels.split(",")]
    rows = []
    for level in levels:
        # Alternate which engine goes first, level by level.
        order = [("hearth", run_hearth), ("llama.cpp", run_llama)]
        if level % 2 == 0:
            order.reverse()
        got = {name: fn(a, level) for name, fn in order}
        rows.append({"sequences": level, **got})
        print(f"level {level}: hearth tg {mean(got['hearth']['tg']):.1f}, llama.cpp tg {mean(got['llama.cpp']['tg']):.1f}",
              file=sys.stderr)
    single = mean(rows[0]["hearth"]["tg"]) if rows and rows[0]["sequences"] == 1 else None
    print(f"{Path(a.model).name}, {a.threads} threads, p{a.prompt} n{a.gen} per sequence, {a.reps} runs\n")
    print("| sequences | Hearth pp | llama.cpp pp | ratio | Hearth tg (aggregate) | llama.cpp tg | ratio | Hearth vs its 1-sequence tg |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        h, l = r["hearth"], r["llama.cpp"]
        scale = f"{mean(h['tg']) / single:.2f}×" if single else "–"
        print(f"| {r['sequences']} | {mean(h['pp']):.1f} | {mean(l['pp']):.1f} | {mean(h['pp']) / mean(l['pp']):.2f} "
              f"| {mean(h['tg']):.1f} | {mean(l['tg']):.1f} | {mean(h['tg']) / mean(l['tg']):.2f} | {scale} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"model": a.model, "threads": a.threads, "prompt": a.prompt,
                                            "gen": a.gen, "levels": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
