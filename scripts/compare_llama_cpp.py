#!/usr/bin/env python3
"""Proof against llama.cpp on a GGUF model (issue 4). Run by hand, not in CI:

    benchmarks/run.sh --setup-only          # or any venv with llama-cpp-python
    benchmarks/.venv/bin/python scripts/compare_llama_cpp.py [--model models/gemma-3-270m-q4_k_m.gguf]
        [--hearth .build/release/hearth] [--threads 2] [--append]
        [--hearth-env OPENBLAS_CORETYPE=Haswell --hearth-env OPENBLAS_CORETYPE=SkylakeX] [--only-exact]

Compares Hearth's release binary ($HEARTH_BIN, else .build/release/hearth, else what
`swift build -c release --show-bin-path` names; it never builds) with llama-cpp-python on
the same file and threads:
 (a) token ids of a multilingual text (English, Chinese, Russian, code, emoji);
 (b) greedy continuations of five prompts (first 32 tokens);
 (c) teacher-forced next-token agreement (argmax vs argmax) over 512 positions;
 (d) perplexity with llama-perplexity's method (chunks of 512, second half scored)
     on scripts/data/declaration-of-independence.txt;
 (e) both engines against the exact math, Tests/Fixtures/gemma3-270m-exact.json
     (scripts/make_exact_reference.py: transformers in f32 on the dequantized GGUF).
     Teacher-forced, with the fixture's chunking (the text tokenized once with BOS, cut
     into non-overlapping chunks of 512 whose first token is replaced by BOS, each
     evaluated from scratch, every position 0..510 scored): whether every next token
     equals the fixture's (a tokenization check), argmax agreement with the exact argmax
     over all positions and over those whose exact top-1/top-2 margin is >= 0.1 nats,
     mean and max |Δ log p(next)| (llama.cpp's log-softmax in float64), and perplexity
     over all positions against the exact one. Then greedy decoding of the fixture's
     prompts for as many tokens as the exact greedy has (48): the first step where each
     engine departs from it, and the exact margin there. Each `--hearth-env KEY=VALUE`
     adds a Hearth row run with that variable in the hearth subprocess's environment
     (e.g. another OpenBLAS kernel set); each `--hearth-row 'KEY=VALUE ... --option value'`
     a row with variables and `hearth perplexity` options (e.g. `--prefill-path sgemm`);
     `--only-exact` runs only this section.
Writes benchmarks/work/llama-cpp-compare.json and prints markdown summaries, which
`--append` writes into benchmarks/RESULTS.md between `<!-- compare:MODEL -->` markers
for (a)-(d) and `<!-- exact:MODEL -->` markers for (e) (replacing an earlier block for
the same model, else appending). It also records the greedy ids as tests' expectations
with `--write-expectations`.
"""
import argparse, datetime, json, math, os, platform, signal, subprocess, sys, tempfile
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
EXACT_FIXTURE = "Tests/Fixtures/gemma3-270m-exact.json"
EXACT_STOP_IDS = (1, 106)  # <eos>, <end_of_turn>: where the fixture's greedy stops
CLEAR_MARGIN = 0.1  # nats; positions whose exact top-1/top-2 margin is at least this are "clear"


def hearth_bin(explicit=None):
    """--hearth, else $HEARTH_BIN, else .build/release/hearth, else swift's bin path (never builds)."""
    for path in (explicit, os.environ.get("HEARTH_BIN"), os.path.join(ROOT, ".build/release/hearth")):
        if path and os.path.exists(path):
            return path
    out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "HEARTH_CPU": os.environ.get("HEARTH_CPU", "native")})
    return os.path.join(out.stdout.strip(), "hearth")


def run(args, env=None):
    return subprocess.run(args, capture_output=True, text=True, check=True,
                          env=None if env is None else {**os.environ, **env}).stdout


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
    ap.add_argument("--hearth", help="the hearth binary (default: $HEARTH_BIN, else .build/release/hearth)")
    ap.add_argument("--exact", default=os.path.join(ROOT, EXACT_FIXTURE),
                    help="exact-math fixture for (e) (default: %(default)s)")
    ap.add_argument("--hearth-env", action="append", default=[], metavar="KEY=VALUE",
                    help="(e): also run Hearth with this variable set (repeatable; one extra row each)")
    ap.add_argument("--hearth-row", action="append", default=[], metavar="SPEC",
                    help="(e): one extra Hearth row from a whitespace-separated SPEC of KEY=VALUE variables and "
                         "options for `hearth perplexity`, e.g. 'OPENBLAS_CORETYPE=SkylakeX --prefill-path sgemm' "
                         "(the options apply to the teacher-forced run only; the greedy run gets the variables)")
    ap.add_argument("--only-exact", action="store_true", help="run only (e), against the exact math")
    args = ap.parse_args()
    for kv in args.hearth_env:
        if "=" not in kv or kv.startswith("-"):
            ap.error(f"--hearth-env {kv!r}: expected KEY=VALUE")
    hearth = hearth_bin(args.hearth)
    text = open(os.path.join(ROOT, "scripts/data/declaration-of-independence.txt"), encoding="utf-8").read()
    llm = Llama(model_path=args.model, n_ctx=1024, n_batch=512, n_threads=args.threads,
                n_threads_batch=args.threads, logits_all=True, verbose=False)
    result = {"model": os.path.basename(args.model), "llama_cpp_python": llama_cpp.__version__, "threads": args.threads}
    summaries = []
    if not args.only_exact:
        summaries.append(("compare", llama_comparison(args, llm, hearth, text, result)))
    if os.path.exists(args.exact):
        summaries.append(("exact", exact_comparison(args, llm, hearth, result)))
    else:
        print(f"(e) skipped: {os.path.relpath(args.exact, ROOT)} does not exist (scripts/make_exact_reference.py)",
              file=sys.stderr)

    os.makedirs(os.path.join(ROOT, "benchmarks/work"), exist_ok=True)
    json.dump(result, open(os.path.join(ROOT, "benchmarks/work/llama-cpp-compare.json"), "w"), indent=1)
    for kind, summary in summaries:
        print("\n".join(summary))
        if args.append:
            write_block(os.path.join(ROOT, "benchmarks/history/2026-11-21-gemma-3-270m-gguf-q4km.md"), f"<!-- {kind}:{result['model']} -->", summary)
    if args.write_expectations and "greedy" in result:
        exp = {"generator": f"scripts/compare_llama_cpp.py with llama-cpp-python {llama_cpp.__version__}",
               "model": result["model"], "prompts": [{"prompt": g["prompt"], "greedy": g["llama_cpp"]}
                                                     for g in result["greedy"]]}
        json.dump(exp, open(os.path.join(ROOT, "Tests/Fixtures/gemma3-270m-llamacpp.json"), "w"), indent=1)


def write_block(path, marker, summary):
    """Replaces the block between two copies of `marker` in `path`, else appends it."""
    old = open(path).read() if os.path.exists(path) else ""
    block = marker + "\n" + "\n".join(summary) + marker + "\n"
    if marker in old:
        start = old.index(marker); end = old.index(marker, start + 1) + len(marker) + 1
        old = old[:start] + block + old[end:]
    else:
        old = old.rstrip() + "\n\n" + block
    open(path, "w").write(old)


def llama_comparison(args, llm, hearth, text, result):
    """(a)-(d): Hearth against llama.cpp. Returns the markdown summary's lines."""
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

    matching = [g["matching_prefix"] for g in greedy]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    summary = [f"### Agreement with llama.cpp: {result['model']} ({args.threads} threads, llama-cpp-python {llama_cpp.__version__})", "",
               f"{when}; {machine_description()}; hearth `{os.path.relpath(hearth, ROOT)}` at {git_state()}, "
               f"kernels: {hearth_kernels(hearth, args.model)}.", "",
               "| check | result |", "|---|---|",
               f"| token ids, multilingual text ({len(ref_ids)} tokens) | {'identical' if result['tokens']['identical'] else 'differ at ' + str(result['tokens']['first_difference'])} |",
               f"| greedy continuations, matching prefix of 32 tokens | {matching} ({sum(m >= 32 for m in matching)}/5 fully identical) |",
               f"| teacher-forced argmax agreement | {result['teacher_forced']['agreement']:.2%} over {result['teacher_forced']['positions']} positions |",
               f"| perplexity (ctx 512, {count} scored) | hearth {ours_ppl:.4f} vs llama.cpp {ref_ppl:.4f} ({result['perplexity']['relative_difference']:+.2%}) |", ""]
    return summary


# ---------------------------------------------------------------------------
# (e) against the exact math


def first_departure(engine, exact):
    """First step where two greedy sequences differ; None when identical (same length)."""
    for i, (a, b) in enumerate(zip(engine, exact)):
        if a != b:
            return i
    return None if len(engine) == len(exact) else min(len(engine), len(exact))


def llama_score_chunks(llm, ids, ctx, bos):
    """The fixture's chunking: rows of (chunk, position, next, argmax, logprob) from llama.cpp's
    logits, log-softmax in float64."""
    rows = []
    for c in range(len(ids) // ctx):
        chunk = list(ids[c * ctx:(c + 1) * ctx])
        chunk[0] = bos
        llm.reset()
        llm.eval(chunk)
        for start in range(0, ctx - 1, 32):
            block = np.asarray(llm.scores[start:min(start + 32, ctx - 1)], dtype=np.float64)
            m = block.max(axis=1, keepdims=True)
            lse = m[:, 0] + np.log(np.exp(block - m).sum(axis=1))
            for k in range(block.shape[0]):
                p = start + k
                nxt = chunk[p + 1]
                rows.append({"chunk": c, "position": p, "next": nxt, "argmax": int(block[k].argmax()),
                             "logprob": float(block[k, nxt] - lse[k])})
    return rows


def llama_exact_greedy(llm, input_ids, n):
    """Greedy from the fixture's input ids (prompt in one batch, then one token at a time),
    stopping like the fixture at <eos> (1) or <end_of_turn> (106). Returns ids and the
    top-1/top-2 logit margin of each step."""
    llm.reset()
    llm.eval(list(input_ids))
    out, margins = [], []
    for _ in range(n):
        row = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        top = np.argpartition(row, -2)[-2:]
        a, b = (int(top[1]), int(top[0])) if row[top[1]] >= row[top[0]] else (int(top[0]), int(top[1]))
        out.append(a)
        margins.append(float(row[a] - row[b]))
        if a in EXACT_STOP_IDS:
            break
        llm.eval([a])
    return out, margins


def hearth_exact_run(args, hearth, fixture, env, extra=()):
    """Hearth's per-token rows (the fixture's chunking; `extra` options added to `hearth perplexity`)
    and greedy continuations, with the variables `env` set."""
    text = fixture["text"]
    per_token = tempfile.mktemp(suffix=".jsonl")
    try:
        run([hearth, "perplexity", "--model", args.model, "--file", os.path.join(ROOT, text["file"]),
             "--ctx", str(text["ctx"]), "--first", str(text["first"]), "--per-token", per_token, "--json",
             "-t", str(args.threads), *extra], env=env)
        rows = [json.loads(l) for l in open(per_token)]
    finally:
        if os.path.exists(per_token):
            os.remove(per_token)
    rows.sort(key=lambda r: (r["chunk"], r["position"]))
    greedy = []
    for g in fixture["greedy"]:
        lines = run([hearth, "generate", "--model", args.model, "--prompt", g["prompt"], "--raw", "--temperature", "0",
                     "--json", "--max-tokens", str(len(g["ids"])), "--top-logprobs", "2", "-t", str(args.threads)],
                    env=env).splitlines()
        steps = [json.loads(l) for l in lines if l.strip()]
        done = next((s for s in steps if s.get("done")), {})
        steps = [s for s in steps if not s.get("done")]
        margins = [s["top_logprobs"][0]["logprob"] - s["top_logprobs"][1]["logprob"]
                   if len(s.get("top_logprobs", [])) >= 2 else None for s in steps]
        greedy.append({"ids": [s["id"] for s in steps], "margins": margins,
                       "prompt_tokens": done.get("prompt_tokens")})
    return rows, greedy


def score_against_exact(rows, greedy, fixture):
    """The figures of (e) for one engine."""
    text = fixture["text"]
    ex_next, ex_arg, ex_lp, ex_margin = text["next"], text["argmax"], text["logprob"], text["margin"]
    n = len(ex_next)
    nxt = [r["next"] for r in rows]
    mismatch = next((i for i, (a, b) in enumerate(zip(nxt, ex_next)) if a != b), None)
    if mismatch is None and len(nxt) != n:
        mismatch = min(len(nxt), n)
    m = min(len(rows), n)
    agree = [rows[i]["argmax"] == ex_arg[i] for i in range(m)]
    clear = [i for i in range(m) if ex_margin[i] >= CLEAR_MARGIN]
    delta = np.abs(np.array([rows[i]["logprob"] for i in range(m)], dtype=np.float64) - np.array(ex_lp[:m]))
    ppl = math.exp(-sum(r["logprob"] for r in rows) / len(rows))
    out = {
        "positions": len(rows),
        "next_identical_to_exact": mismatch is None,
        "first_next_difference": None if mismatch is None else
            {"index": mismatch, "chunk": rows[mismatch]["chunk"] if mismatch < len(rows) else None,
             "position": rows[mismatch]["position"] if mismatch < len(rows) else None},
        "argmax_agreement_all": sum(agree) / m,
        "argmax_agreement_clear": sum(agree[i] for i in clear) / len(clear),
        "clear_positions": len(clear),
        "mean_abs_delta_logprob": float(delta.mean()),
        "max_abs_delta_logprob": float(delta.max()),
        "max_abs_delta_at": {"chunk": rows[int(delta.argmax())]["chunk"],
                             "position": rows[int(delta.argmax())]["position"]},
        "perplexity_all": ppl,
        "exact_perplexity_all": text["perplexity_all"],
        "perplexity_relative_difference": ppl / text["perplexity_all"] - 1,
        "greedy": [],
    }
    for g, e in zip(greedy, fixture["greedy"]):
        d = first_departure(g["ids"], e["ids"])
        out["greedy"].append({
            "prompt": e["prompt"], "ids": g["ids"], "steps": len(e["ids"]), "first_departure": d,
            "exact_margin_there": e["margins"][d] if d is not None and d < len(e["margins"]) else None,
            "engine_margin_there": g["margins"][d] if d is not None and d < len(g["margins"]) else None,
            "took_exact_runner_up": (d is not None and d < len(g["ids"]) and "second" in e
                                     and d < len(e["second"]) and g["ids"][d] == e["second"][d]),
        })
    return out


def machine_description():
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    cpu = info.get("model name", platform.processor() or platform.machine())
    if "cpu family" in info:
        cpu += f" (family {info['cpu family']}, model {info.get('model', '?')})"
    flags = [f for f in info.get("flags", "").split() if f.startswith("avx") or f in ("fma", "f16c")]
    return f"{cpu}, {os.cpu_count()} cores" + (f" ({', '.join(flags)})" if flags else "") \
        + f", {platform.system()} {platform.release()}"


def llama_system_info():
    try:
        info = llama_cpp.llama_print_system_info()
        return (info.decode() if isinstance(info, bytes) else str(info)).strip()
    except Exception:  # an older binding without it
        return "system info unavailable"


def hearth_kernels(hearth, model):
    """The kernel level `hearth inspect` reports (None if it does not)."""
    try:
        for line in run([hearth, "inspect", "--model", model]).splitlines():
            if line.strip().startswith("kernels:"):
                return line.split(":", 1)[1].strip()
    except (subprocess.CalledProcessError, OSError):
        pass
    return None


def openblas_core(env):
    """The OpenBLAS kernel set a process with `env` would get (None if it cannot be asked)."""
    code = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); l.openblas_get_corename.restype = ctypes.c_char_p;"
            " print(l.openblas_get_corename().decode())")
    try:
        return run([sys.executable, "-c", code], env=env).strip() or None
    except (subprocess.CalledProcessError, OSError):
        return None


def git_state():
    try:
        head = run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"]).strip()
        dirty = run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).strip()
        return head + (" (work tree had uncommitted changes)" if dirty else "")
    except (subprocess.CalledProcessError, OSError):
        return "unknown"


def exact_comparison(args, llm, hearth, result):
    """(e): Hearth (once per environment) and llama.cpp against the exact-math fixture.
    Returns the markdown summary's lines."""
    fixture = json.load(open(args.exact))
    text = fixture["text"]
    if fixture.get("model") and fixture["model"] != os.path.basename(args.model):
        print(f"warning: {os.path.relpath(args.exact, ROOT)} is for {fixture['model']}, not "
              f"{os.path.basename(args.model)}", file=sys.stderr)
    ctx, bos = text["ctx"], llm.token_bos()
    assert text["first"] == 0 and ctx <= llm.n_ctx(), (text["first"], ctx)
    body = open(os.path.join(ROOT, text["file"]), encoding="utf-8").read()
    ids = llm.tokenize(body.encode(), add_bos=True, special=False)

    engines = {}
    # llama.cpp
    rows = llama_score_chunks(llm, ids, ctx, bos)
    greedy = []
    prompt_ids_ok = True
    for g in fixture["greedy"]:
        if llm.tokenize(g["prompt"].encode(), add_bos=True, special=False) != g["input_ids"]:
            prompt_ids_ok = False
        out, margins = llama_exact_greedy(llm, g["input_ids"], len(g["ids"]))
        greedy.append({"ids": out, "margins": margins})
    engines["llama.cpp"] = score_against_exact(rows, greedy, fixture)
    engines["llama.cpp"].update({"token_count": len(ids), "prompt_ids_identical_to_fixture": prompt_ids_ok})

    # Hearth, default environment and each --hearth-env
    variants = [("Hearth", {}, [])] + [(f"Hearth, {kv}", dict([kv.split("=", 1)]), []) for kv in args.hearth_env]
    for spec in args.hearth_row:
        words = spec.split()
        env = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
        extra = [w for w in words if not ("=" in w and not w.startswith("-"))]
        variants.append((f"Hearth, {' '.join(words)}", env, extra))
    for label, env, extra in variants:
        try:
            rows, greedy = hearth_exact_run(args, hearth, fixture, env, extra)
        except subprocess.CalledProcessError as e:
            # e.g. OPENBLAS_CORETYPE naming a kernel set this CPU cannot run (SIGILL)
            why = f"signal {signal.Signals(-e.returncode).name}" if e.returncode < 0 else f"exit status {e.returncode}"
            err = (e.stderr or "").strip().splitlines() if isinstance(e.stderr, str) else []
            tail = [l.strip(" *") for l in err if "crashed:" in l][:1] or err[-1:]
            engines[label] = {"failed": f"`hearth {e.cmd[1]}` ended with {why}" + (f": {tail[0]}" if tail else ""),
                              "env": env, "perplexity_options": extra, "openblas_core": openblas_core(env)}
            print(f"{label}: {engines[label]['failed']}", file=sys.stderr)
            continue
        scored = score_against_exact(rows, greedy, fixture)
        scored["env"] = env
        scored["perplexity_options"] = extra
        scored["openblas_core"] = openblas_core(env)
        scored["prompt_tokens_match_fixture"] = all(
            h["prompt_tokens"] in (None, len(g["input_ids"])) for h, g in zip(greedy, fixture["greedy"]))
        engines[label] = scored

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    meta = {"date": when, "machine": machine_description(), "threads": args.threads,
            "llama_cpp_python": llama_cpp.__version__, "hearth": os.path.relpath(hearth, ROOT),
            "hearth_built": datetime.datetime.fromtimestamp(os.path.getmtime(hearth), datetime.timezone.utc)
                            .strftime("%Y-%m-%d %H:%M UTC"),
            "hearth_commit": git_state(), "hearth_kernels": hearth_kernels(hearth, args.model),
            "fixture": os.path.relpath(args.exact, ROOT),
            "fixture_generator": fixture.get("generator"), "llama_cpp_system_info": llama_system_info()}
    result["exact"] = {"meta": meta, "engines": engines}

    order = [label for label, _, _ in variants] + ["llama.cpp"]
    n = len(text["next"])
    clear = engines["llama.cpp"]["clear_positions"]
    steps = len(fixture["greedy"][0]["ids"]) if fixture["greedy"] else 0
    lines = [f"### Against the exact math: {result['model']} ({text['chunks']} chunks of {ctx}, every position scored)", "",
             f"{meta['date']}; {meta['machine']}; {args.threads} threads; llama-cpp-python {meta['llama_cpp_python']} "
             f"(`{meta['llama_cpp_system_info']}`); "
             f"hearth `{meta['hearth']}` (built {meta['hearth_built']}; repository at {meta['hearth_commit']}; "
             f"kernels: {meta['hearth_kernels']}). Reference: `{meta['fixture']}` "
             f"({meta['fixture_generator']}), exact perplexity {text['perplexity_all']:.4f} over all {n} positions.",
             "",
             f"| engine | argmax = exact, all {n} positions | argmax = exact, {clear} clear positions (exact margin ≥ {CLEAR_MARGIN}) "
             f"| mean \\|Δ log p(next)\\| (max) | perplexity vs exact | greedy ({steps} tokens): first departure from exact (exact margin there) |",
             "|---|---|---|---|---|---|"]
    for label in order:
        e = engines[label]
        name = label
        if e.get("openblas_core"):
            name += f" (OpenBLAS {e['openblas_core']})"
        if "failed" in e:
            lines.append(f"| {name} | failed: {e['failed']} | | | | |")
            continue
        deps = ", ".join("none" if g["first_departure"] is None else
                         f"{g['first_departure']} ({g['exact_margin_there']:.3f})" if g["exact_margin_there"] is not None
                         else str(g["first_departure"]) for g in e["greedy"])
        lines.append(f"| {name} | {e['argmax_agreement_all']:.2%} | {e['argmax_agreement_clear']:.2%} "
                     f"| {e['mean_abs_delta_logprob']:.4f} ({e['max_abs_delta_logprob']:.3f}) "
                     f"| {e['perplexity_all']:.4f} ({e['perplexity_relative_difference']:+.2%}) | {deps} |")
    lines.append("")
    checks = []
    for label in order:
        e = engines[label]
        if "failed" in e:
            continue
        if e["next_identical_to_exact"]:
            checks.append(f"{label}: identical")
        else:
            d = e["first_next_difference"]
            checks.append(f"{label}: differ at index {d['index']} (chunk {d['chunk']}, position {d['position']})")
    lines.append(f"Tokenization check (every scored next token equal to the fixture's): {'; '.join(checks)}."
                 + ("" if engines["llama.cpp"]["prompt_ids_identical_to_fixture"] else
                    " llama.cpp's tokenization of a greedy prompt differs from the fixture's input_ids (the fixture's were used)."))
    lines.append(f"Greedy prompts, in order: {', '.join(repr(g['prompt']) for g in fixture['greedy'])}; "
                 "departure = first step whose id differs from the exact greedy, \"none\" = all identical. "
                 "llama.cpp evaluates the prompt in one batch and then one token at a time; Hearth runs "
                 "`hearth generate --raw --temperature 0` (its defaults otherwise; options in a row's label "
                 "apply to `hearth perplexity` only, its greedy run gets just the variables).")
    lines.append("")
    return lines


if __name__ == "__main__":
    main()
