#!/usr/bin/env python3
"""How consistent is llama.cpp with itself on a GGUF model, and where does Hearth sit? (issue 4)

Run by hand, not in CI (needs llama-cpp-python; benchmarks/run.sh --setup-only makes the venv):

    benchmarks/.venv/bin/python scripts/llama_cpp_consistency.py [--model models/gemma-3-270m-q4_k_m.gguf]

Evaluates the first 513 tokens of scripts/data/declaration-of-independence.txt teacher-forced
(the same text and positions as scripts/compare_llama_cpp.py) with llama.cpp in three of its
own configurations — prompt batch 512 (what compare_llama_cpp.py uses), one token at a time
(the decode path greedy generation takes), and flash attention on — and with Hearth's release
binary, then prints the pairwise argmax agreement and mean |Δ logprob of the next token|, plus
llama-perplexity-style perplexity (ctx 512) of each llama.cpp configuration.
"""
import argparse, json, math, os, subprocess, tempfile
import numpy as np
from llama_cpp import Llama
import llama_cpp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(ROOT, "scripts/data/declaration-of-independence.txt")
CONFIGS = [("llama.cpp batch 512", dict(n_batch=512, n_ubatch=512, flash_attn=False)),
           ("llama.cpp batch 1", dict(n_batch=1, n_ubatch=1, flash_attn=False)),
           ("llama.cpp flash-attn", dict(n_batch=512, n_ubatch=512, flash_attn=True))]


def log_softmax(rows):
    m = rows.max(1, keepdims=True)
    return rows - (m + np.log(np.exp(rows - m).sum(1, keepdims=True)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hearth", default=os.path.join(ROOT, ".build/release/hearth"))
    args = ap.parse_args()
    text = open(TEXT, encoding="utf-8").read()
    runs, perplexities = {}, {}
    ids = None
    for name, kw in CONFIGS:
        llm = Llama(model_path=args.model, n_ctx=1024, n_threads=args.threads, n_threads_batch=args.threads,
                    logits_all=True, verbose=False, **kw)
        ids = llm.tokenize(text.encode(), add_bos=True, special=False)[:513]
        llm.reset()
        llm.eval(ids)
        lsm = log_softmax(np.array(llm.scores[:512], dtype=np.float64))
        runs[name] = (lsm.argmax(1), np.array([lsm[i, ids[i + 1]] for i in range(512)]))
        # llama-perplexity's method: chunks of 512, the second half of each scored.
        all_ids = llm.tokenize(text.encode(), add_bos=True, special=False)
        nll, count = 0.0, 0
        for c in range(len(all_ids) // 512):
            chunk = list(all_ids[c * 512:(c + 1) * 512])
            chunk[0] = llm.token_bos()
            llm.reset()
            llm.eval(chunk)
            for j in range(256, 511):
                row = np.asarray(llm.scores[j], dtype=np.float64)
                m = row.max()
                nll += m + math.log(np.exp(row - m).sum()) - row[chunk[j + 1]]
                count += 1
        perplexities[name] = math.exp(nll / count)
        del llm
    per_token = tempfile.mktemp(suffix=".jsonl")
    subprocess.run([args.hearth, "perplexity", "--model", args.model, "--file", TEXT, "--ctx", "513", "--first", "0",
                    "--chunks", "1", "--per-token", per_token, "--json", "-t", str(args.threads)],
                   check=True, capture_output=True)
    rows = [json.loads(l) for l in open(per_token)]
    runs["hearth"] = (np.array([r["argmax"] for r in rows]), np.array([r["logprob"] for r in rows]))
    hearth_ppl = json.loads(subprocess.run(
        [args.hearth, "perplexity", "--model", args.model, "--file", TEXT, "--ctx", "512", "--json", "-t",
         str(args.threads)], check=True, capture_output=True, text=True).stdout)["perplexity"]
    perplexities["hearth"] = hearth_ppl

    names = list(runs)
    print(f"### Consistency on {os.path.basename(args.model)} (llama-cpp-python {llama_cpp.__version__}, "
          f"{args.threads} threads; 512 teacher-forced positions)\n")
    print("| pair | argmax agreement | mean abs Δ logprob |\n|---|---|---|")
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            agree = float(np.mean(runs[a][0] == runs[b][0]))
            delta = float(np.abs(runs[a][1] - runs[b][1]).mean())
            print(f"| {a} vs {b} | {agree:.2%} | {delta:.4f} |")
    print("\n| configuration | perplexity (ctx 512) |\n|---|---|")
    for name, ppl in perplexities.items():
        print(f"| {name} | {ppl:.4f} |")


if __name__ == "__main__":
    main()
