#!/usr/bin/env python3
"""Proof against llama.cpp on a GGUF model (issue 4). Run by hand, not in CI:

    benchmarks/run.sh --setup-only          # or any venv with llama-cpp-python
    benchmarks/.venv/bin/python scripts/compare_llama_cpp.py [--model models/gemma-3-270m-q4_k_m.gguf]

Compares Hearth's release binary with llama-cpp-python on the same file and threads:
 (a) token ids of a multilingual text (English, Chinese, Russian, code, emoji);
 (b) greedy continuations of five prompts (first 32 tokens);
 (c) teacher-forced next-token agreement (argmax vs argmax) over 512 positions;
 (d) perplexity with llama-perplexity's method (chunks of 512, second half scored)
     on scripts/data/declaration-of-independence.txt.
Writes benchmarks/work/llama-cpp-compare.json and prints a markdown summary, which
`--append` adds to benchmarks/RESULTS.md (replacing an earlier block for the same model).
It also records the greedy ids as tests' expectations with `--write-expectations`.
"""
import argparse, json, math, os, subprocess, sys, tempfile
import numpy as np
from llama_cpp import Llama
import llama_cpp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MULTILINGUAL = ("Hello, world! The quick brown fox jumps over the lazy dog.\n"
                "你好，世界！今天天气很好，我们去公园散步吧。\n"
                "Привет, мир! Съешь же ещё этих мягких французских булок.\n"
                "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
                "Emoji: 🙂🚀🇫🇷 👩‍💻  tabs\tand  double  spaces.")
PROMPTS = ["The capital of France is", "Once upon a time, in a small village,",
           "def add(a, b):\n    return", "The three primary colors are",
           "Water boils at a temperature of"]


def hearth_bin():
    out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "HEARTH_CPU": os.environ.get("HEARTH_CPU", "native")})
    return os.path.join(out.stdout.strip(), "hearth")


def run(args):
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def llama_greedy(llm, prompt, n):
    llm.reset()
    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=False)
    llm.eval(tokens)
    out = []
    for _ in range(n):
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(tok)
        if tok in (llm.token_eos(),):
            break
        llm.eval([tok])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--append", action="store_true", help="append the summary to benchmarks/RESULTS.md")
    ap.add_argument("--write-expectations", action="store_true",
                    help="write llama.cpp's greedy ids to Tests/Fixtures/gemma3-270m-llamacpp.json")
    args = ap.parse_args()
    hearth = hearth_bin()
    text = open(os.path.join(ROOT, "scripts/data/declaration-of-independence.txt"), encoding="utf-8").read()
    llm = Llama(model_path=args.model, n_ctx=1024, n_batch=512, n_threads=args.threads,
                n_threads_batch=args.threads, logits_all=True, verbose=False)
    result = {"model": os.path.basename(args.model), "llama_cpp_python": llama_cpp.__version__, "threads": args.threads}

    # (a) token ids
    ref_ids = llm.tokenize(MULTILINGUAL.encode(), add_bos=True, special=False)
    ours = json.loads(run([hearth, "tokenize", "--model", args.model, "--text", MULTILINGUAL]))
    result["tokens"] = {"count": len(ref_ids), "identical": ours == ref_ids,
                        "first_difference": next((i for i, (a, b) in enumerate(zip(ours, ref_ids)) if a != b), None)}

    # (b) greedy continuations
    greedy = []
    for prompt in PROMPTS:
        ref = llama_greedy(llm, prompt, 32)
        lines = run([hearth, "generate", "--model", args.model, "--prompt", prompt, "--raw", "--temperature", "0",
                     "--json", "--max-tokens", "32", "-t", str(args.threads)]).splitlines()
        mine = [json.loads(l)["id"] for l in lines if '"done"' not in l]
        same = next((i for i, (a, b) in enumerate(zip(mine, ref)) if a != b), min(len(mine), len(ref)))
        greedy.append({"prompt": prompt, "llama_cpp": ref, "hearth": mine, "matching_prefix": same})
    result["greedy"] = greedy

    # (c) teacher-forced agreement over 512 positions
    ids = llm.tokenize(text.encode(), add_bos=True, special=False)[:513]
    llm.reset()
    llm.eval(ids)
    ref_argmax = [int(np.argmax(llm.scores[i])) for i in range(512)]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    per_token = tempfile.mktemp(suffix=".jsonl")
    run([hearth, "perplexity", "--model", args.model, "--file", f.name, "--ctx", "513", "--first", "0",
         "--chunks", "1", "--per-token", per_token, "--json", "-t", str(args.threads)])
    mine_argmax = [json.loads(l)["argmax"] for l in open(per_token)]
    agree = sum(1 for a, b in zip(ref_argmax, mine_argmax) if a == b)
    result["teacher_forced"] = {"positions": len(mine_argmax), "agreement": agree / max(1, len(mine_argmax))}

    # (d) perplexity, llama-perplexity's method
    n_ctx = 512
    all_ids = llm.tokenize(text.encode(), add_bos=True, special=False)
    nll, count = 0.0, 0
    for c in range(len(all_ids) // n_ctx):
        chunk = list(all_ids[c * n_ctx:(c + 1) * n_ctx])
        chunk[0] = llm.token_bos()
        llm.reset()
        llm.eval(chunk)
        for j in range(n_ctx // 2, n_ctx - 1):
            row = np.asarray(llm.scores[j], dtype=np.float64)
            m = row.max()
            lse = m + math.log(np.exp(row - m).sum())
            nll += lse - row[chunk[j + 1]]
            count += 1
    ref_ppl = math.exp(nll / count)
    ours_ppl = json.loads(run([hearth, "perplexity", "--model", args.model, "--file", f.name, "--ctx", "512",
                               "--json", "-t", str(args.threads)]))["perplexity"]
    result["perplexity"] = {"llama_cpp": ref_ppl, "hearth": ours_ppl, "relative_difference": ours_ppl / ref_ppl - 1}

    os.makedirs(os.path.join(ROOT, "benchmarks/work"), exist_ok=True)
    json.dump(result, open(os.path.join(ROOT, "benchmarks/work/llama-cpp-compare.json"), "w"), indent=1)
    matching = [g["matching_prefix"] for g in greedy]
    summary = [f"### Agreement with llama.cpp: {result['model']} ({args.threads} threads, llama-cpp-python {llama_cpp.__version__})", "",
               "| check | result |", "|---|---|",
               f"| token ids, multilingual text ({len(ref_ids)} tokens) | {'identical' if result['tokens']['identical'] else 'differ at ' + str(result['tokens']['first_difference'])} |",
               f"| greedy continuations, matching prefix of 32 tokens | {matching} ({sum(m >= 32 for m in matching)}/5 fully identical) |",
               f"| teacher-forced argmax agreement | {result['teacher_forced']['agreement']:.2%} over {result['teacher_forced']['positions']} positions |",
               f"| perplexity (ctx 512, {count} scored) | hearth {ours_ppl:.4f} vs llama.cpp {ref_ppl:.4f} ({result['perplexity']['relative_difference']:+.2%}) |", ""]
    print("\n".join(summary))
    if args.append:
        path = os.path.join(ROOT, "benchmarks/RESULTS.md")
        old = open(path).read() if os.path.exists(path) else ""
        marker = f"<!-- compare:{result['model']} -->"
        block = marker + "\n" + "\n".join(summary) + marker + "\n"
        if marker in old:
            start = old.index(marker); end = old.index(marker, start + 1) + len(marker) + 1
            old = old[:start] + block + old[end:]
        else:
            old = old.rstrip() + "\n\n" + block
        open(path, "w").write(old)
    if args.write_expectations:
        exp = {"generator": f"scripts/compare_llama_cpp.py with llama-cpp-python {llama_cpp.__version__}",
               "model": result["model"], "prompts": [{"prompt": g["prompt"], "greedy": g["llama_cpp"]} for g in greedy]}
        json.dump(exp, open(os.path.join(ROOT, "Tests/Fixtures/gemma3-270m-llamacpp.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
