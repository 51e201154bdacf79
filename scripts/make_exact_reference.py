#!/usr/bin/env python3
"""Exact-math reference for the default model (Gemma 3 270M, GGUF Q4_K_M) →
Tests/Fixtures/gemma3-270m-exact.json.

HF transformers loads models/gemma-3-270m-q4_k_m.gguf dequantized to float32 and runs it
with eager attention; log-softmax is taken in float64 from the f32 logits. Two parts:

 (a) Teacher-forced scoring of scripts/data/declaration-of-independence.txt with the
     chunking of `hearth perplexity --ctx 512 --first 0` (llama-perplexity's): the whole
     text is tokenized once with BOS, cut into len(tokens)//512 non-overlapping chunks of
     512 tokens whose first token is replaced by BOS, each evaluated from scratch; every
     position p in 0..510 is scored (the logits at p predict chunk[p+1]). Stored columnar,
     chunk-major: the next id, the exact argmax, log p(next) and the top-1/top-2 margin
     (nats), plus the perplexity over all positions and over p >= 256 (llama-perplexity's
     scored half).
 (b) Greedy decoding (48 new tokens, full recompute at each step, stopping only at ids 1
     or 106) of the five prompts of Tests/Fixtures/gemma3-270m-greedy.json (their
     llama.cpp input_ids, BOS included): each step's id, its margin over the runner-up and
     the runner-up's id.

The token ids of transformers' GGUF tokenizer are checked against `hearth tokenize` (the
release binary, if built) and against the fixture's input_ids; any difference stops the
script. Run by hand from the repository root with the reference venv:

    /opt/hearth-ref/bin/python scripts/make_exact_reference.py [--hearth .build/release/hearth]

Pinned versions (scripts/requirements-reference.txt): torch 2.15.0, transformers 5.23.0,
gguf 0.19.0, accelerate 1.15.0, numpy 2.4.6. Takes a few minutes on 2 cores.
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import warnings
from importlib.metadata import version

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_DIR = os.path.join(ROOT, "models")
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
TEXT = "scripts/data/declaration-of-independence.txt"
PROMPTS = "Tests/Fixtures/gemma3-270m-greedy.json"
OUT = "Tests/Fixtures/gemma3-270m-exact.json"
CTX = 512
BOS = 2
STOP_IDS = (1, 106)  # <eos>, <end_of_turn>
NEW_TOKENS = 48


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def check_ids(label, ours, theirs, theirs_name):
    """Stops with the first differing position when two tokenizations disagree."""
    i = first_difference(ours, theirs)
    if i is not None:
        sys.exit(f"{label}: transformers and {theirs_name} token ids differ at index {i} "
                 f"(lengths {len(ours)} / {len(theirs)}): transformers {ours[max(0, i - 3):i + 4]} vs "
                 f"{theirs_name} {theirs[max(0, i - 3):i + 4]}")


def hearth_tokenize(hearth, text):
    out = subprocess.run([hearth, "tokenize", "--model", os.path.join(MODEL_DIR, GGUF_NAME), "--text", text],
                         capture_output=True, text=True, check=True)
    return [int(t) for t in json.loads(out.stdout)]


def top2(logprobs):
    """(argmax, runner-up id, top-1 minus top-2) of a float64 vector."""
    v, i = torch.topk(logprobs, 2)
    return int(i[0]), int(i[1]), float(v[0] - v[1])


@torch.no_grad()
def score_chunks(model, tokens):
    nxt, argmax, logprob, margin, positions = [], [], [], [], []
    for c in range(len(tokens) // CTX):
        chunk = list(tokens[c * CTX:(c + 1) * CTX])
        chunk[0] = BOS
        logits = model(input_ids=torch.tensor([chunk]), use_cache=False).logits[0]
        assert logits.dtype == torch.float32
        lp = torch.log_softmax(logits.double(), dim=-1)
        for p in range(CTX - 1):
            a, _, m = top2(lp[p])
            nxt.append(chunk[p + 1])
            argmax.append(a)
            logprob.append(float(lp[p, chunk[p + 1]]))
            margin.append(m)
            positions.append(p)
        print(f"  chunk {c}: scored {CTX - 1} positions", flush=True)
    return nxt, argmax, logprob, margin, positions


@torch.no_grad()
def greedy(model, ids):
    seq = list(ids)
    out, margins, second, stopped = [], [], [], False
    for _ in range(NEW_TOKENS):
        logits = model(input_ids=torch.tensor([seq]), use_cache=False, logits_to_keep=1).logits[0, -1]
        a, b, m = top2(torch.log_softmax(logits.double(), dim=-1))
        out.append(a)
        margins.append(m)
        second.append(b)
        seq.append(a)
        if a in STOP_IDS:
            stopped = True
            break
    return out, margins, second, stopped


def r6(values):
    return [round(v, 6) for v in values]


def dumps(obj, level=0):
    """JSON indented by one space, with lists (and the dicts inside them) on one line."""
    pad = " " * (level + 1)
    if isinstance(obj, dict) and level < 2:
        items = [f"{pad}{json.dumps(k)}: {dumps(v, level + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * level + "}"
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        return "[\n" + ",\n".join(pad + json.dumps(o, ensure_ascii=False, separators=(",", ":")) for o in obj) \
            + "\n" + " " * level + "]"
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hearth", default=os.path.join(ROOT, ".build/release/hearth"),
                    help="release binary used to check token ids (skipped with a warning if absent)")
    ap.add_argument("--out", default=os.path.join(ROOT, OUT))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.chdir(ROOT)

    model_path = os.path.join(MODEL_DIR, GGUF_NAME)
    digest = sha256(model_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = AutoTokenizer.from_pretrained(MODEL_DIR, gguf_file=GGUF_NAME)
        model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, gguf_file=GGUF_NAME, dtype=torch.float32,
                                                     attn_implementation="eager")
    model.eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert tok.bos_token_id == BOS, tok.bos_token_id

    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    tokens = [BOS] + tok(text, add_special_tokens=False).input_ids
    check_ids("text", tokens, tok(text).input_ids, "transformers with add_special_tokens")
    fixture = json.load(open(PROMPTS))
    for p in fixture["prompts"]:
        check_ids(repr(p["prompt"]), [BOS] + tok(p["prompt"], add_special_tokens=False).input_ids,
                  p["input_ids"], "llama.cpp (fixture)")
    if os.path.exists(args.hearth):
        check_ids("text", tokens, hearth_tokenize(args.hearth, text), "hearth")
        for p in fixture["prompts"]:
            check_ids(repr(p["prompt"]), p["input_ids"], hearth_tokenize(args.hearth, p["prompt"]), "hearth")
        print(f"token ids: transformers == hearth tokenize on the text ({len(tokens)} ids) and the 5 prompts")
    else:
        print(f"warning: {args.hearth} not built; token ids not checked against hearth", file=sys.stderr)
    print("token ids: transformers == the fixture's llama.cpp input_ids on the 5 prompts")

    chunks = len(tokens) // CTX
    print(f"scoring {chunks} chunks of {CTX} ({len(tokens)} tokens)")
    nxt, argmax, logprob, margin, positions = score_chunks(model, tokens)
    nll = [-x for x in logprob]
    ppl_all = math.exp(sum(nll) / len(nll))
    half = [x for x, p in zip(nll, positions) if p >= CTX // 2]
    ppl_half = math.exp(sum(half) / len(half))

    greedy_out = []
    for p in fixture["prompts"]:
        ids, margins, second, stopped = greedy(model, p["input_ids"])
        greedy_out.append({"prompt": p["prompt"], "input_ids": p["input_ids"], "ids": ids,
                           "margins": r6(margins), "second": second, "stopped_on_eos": stopped})
        print(f"  greedy {p['prompt']!r}: {len(ids)} tokens", flush=True)

    result = {
        "generator": (f"scripts/make_exact_reference.py (transformers {transformers.__version__}, "
                      f"torch {torch.__version__}, gguf {version('gguf')}; "
                      "float32, eager attention, the GGUF dequantized; log-softmax in float64)"),
        "model": GGUF_NAME,
        "model_sha256": digest,
        "text": {"file": TEXT, "ctx": CTX, "first": 0, "chunks": chunks, "token_count": len(tokens),
                 "next": nxt, "argmax": argmax, "logprob": r6(logprob), "margin": r6(margin),
                 "perplexity_all": round(ppl_all, 6), "perplexity_second_half": round(ppl_half, 6)},
        "greedy": greedy_out,
    }
    with open(args.out, "w") as f:
        f.write(dumps(result) + "\n")

    low = sum(m < 0.1 for m in margin)
    print(f"\nwrote {os.path.relpath(args.out, ROOT)}")
    print(f"text: {len(nxt)} scored positions, {low} with margin < 0.1; argmax == next at "
          f"{sum(a == n for a, n in zip(argmax, nxt))}; perplexity all {ppl_all:.6f}, second half {ppl_half:.6f}")
    for g in greedy_out:
        first_low = next((i for i, m in enumerate(g["margins"]) if m < 0.1), None)
        print(f"greedy {g['prompt']!r}: {len(g['ids'])} tokens, stopped {g['stopped_on_eos']}, "
              f"min margin {min(g['margins']):.6f}, first step with margin < 0.1: {first_low}")


if __name__ == "__main__":
    main()
