#!/usr/bin/env python3
"""llama.cpp's KL divergence against a Hearth base, the same statistics `hearth perplexity
--kl-divergence-base` prints for Hearth's own variants — so the two engines' costs against one
base (e.g. Hearth's f32-activation path) are comparable number for number.

    benchmarks/.venv/bin/python scripts/llama_cpp_kld.py BASE.hlog [--model GGUF] [--threads 2]

BASE is a file written by `hearth perplexity --save-logits` (any --logits-top-k). llama.cpp
(llama-cpp-python, as benchmarks/.venv builds it) scores exactly the base's tokens, chunk by
chunk (each chunk one batch of `ctx` tokens from an empty cache, its first token replaced by BOS,
as the base), and every scored
position's full distribution is compared with the base's top K and rest mass:

    KL = sum_{i in topK(P)} p_i (log p_i - log q_i) + p_rest (log p_rest - log q_rest)

(scripts/kld_numpy.py, docs/ACCURACY.md). Prints one JSON object.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kld_numpy import read  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="a file written by hearth perplexity --save-logits")
    ap.add_argument("--model", default=os.path.join(ROOT, "models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    from llama_cpp import Llama

    header, tokens, base = read(args.base)
    ctx, first, chunks = header["ctx"], header["first"], header["chunks"]
    llm = Llama(model_path=args.model, n_ctx=ctx, n_batch=ctx, n_ubatch=ctx, n_threads=args.threads,
                logits_all=True, verbose=False)
    if llm.n_vocab() != header["vocab_size"]:
        raise SystemExit(f"vocabulary sizes differ: llama.cpp {llm.n_vocab()}, base {header['vocab_size']}")

    k = header["top_k"]
    kls, same, clear, nexts = [], [], [], []
    pos = 0
    for c in range(chunks):
        chunk = [int(t) for t in tokens[c * ctx:(c + 1) * ctx]]
        chunk[0] = llm.token_bos()  # as `hearth perplexity` (and llama-perplexity) score a chunk
        llm.reset()
        llm.eval(chunk)
        scores = np.asarray(llm.scores[:ctx], dtype=np.float64)
        for p in range(first, ctx - 1):
            row = scores[p]
            m = row.max()
            lq_all = row - (m + np.log(np.exp(row - m).sum()))
            rec = base[pos]
            ids = rec["entries"]["id"].astype(np.int64)
            lp = rec["entries"]["lp"].astype(np.float64)
            lq = lq_all[ids]
            kl = float((np.exp(lp) * (lp - lq)).sum())
            p_rest = float(rec["rest"])
            q_rest = float(np.float32(max(1 - np.exp(lq).sum(), 1e-30)))
            if p_rest > 0:
                kl += p_rest * (np.log(p_rest) - np.log(q_rest))
            kls.append(kl)
            same.append(int(ids[lp.argmax()]) == int(lq_all.argmax()))
            two = np.sort(rec["entries"]["lp"])[::-1][:2]
            clear.append(k >= 2 and (two[0] - two[1]) >= np.float32(0.1))
            nexts.append((lq_all[chunk[p + 1]], float(rec["next"])))
            pos += 1
    kls, same, clear = np.array(kls), np.array(same), np.array(clear)
    cur_next = np.array([a for a, _ in nexts])
    base_next = np.array([b for _, b in nexts])
    ppl, base_ppl = float(np.exp(-cur_next.mean())), float(np.exp(-base_next.mean()))
    print(json.dumps({
        "engine": "llama.cpp", "model": os.path.relpath(args.model, ROOT), "positions": int(len(kls)),
        "mean_kld": float(kls.mean()), "median_kld": float(np.median(kls)),
        "p99_kld": float(np.percentile(kls, 99)), "max_kld": float(kls.max()),
        "same_top": float(same.mean()),
        "same_top_clear": float(same[clear].mean()) if clear.any() else 0.0, "clear_positions": int(clear.sum()),
        "base_perplexity": base_ppl, "perplexity": ppl, "delta_perplexity": ppl / base_ppl - 1,
        "mean_abs_delta_logprob": float(np.abs(cur_next - base_next).mean()),
    }, sort_keys=True))


if __name__ == "__main__":
    main()
