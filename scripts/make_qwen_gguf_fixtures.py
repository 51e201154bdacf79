#!/usr/bin/env python3
"""GGUF conversions of the Qwen fixtures and llama.cpp's results on them → Tests/Fixtures/qwen-gguf/.

Run BY HAND, never in CI; the outputs are committed. Two Pythons take part:

    /opt/hearth-ref/bin/python scripts/make_qwen_gguf_fixtures.py \\
        --llama-cpp-python benchmarks/.venv/bin/python \\
        --llama-cpp-source /path/to/llama-cpp-python-0.3.36/vendor/llama.cpp

The reference venv (torch, transformers, scripts/requirements-reference.txt) runs llama.cpp's own
converter, convert_hf_to_gguf.py from the llama.cpp vendored in the llama-cpp-python 0.3.36 sdist
(with that tree's gguf-py), on Tests/Fixtures/qwen2-tiny and qwen3-tiny (scripts/make_family_fixtures.py),
exactly as users convert Qwen checkpoints, except for one thing: the converter recognises a BPE
pre-tokenizer by hashing the ids of a test text, and these tiny trained vocabularies have no
registered hash, so get_vocab_base_pre is replaced by one that answers "qwen2" (what it answers
for the real Qwen2/2.5/3 tokenizers). Outputs:

    qwen3-tiny-f16.gguf     --outtype f16 (the BF16 weights rounded to F16; norms stay F32)
    qwen3-tiny-q8_0.gguf    --outtype q8_0 (the converter's Q8_0, as llama-quantize makes it)
    qwen3-tiny-q4_k_m.gguf  llama.cpp's llama_model_quantize(Q4_K_M) of the F16 file; rows of 64 or
                            96 are not multiples of Q4_K's 256, so llama.cpp falls back per tensor
                            (q5_0 for Q4_K, q8_0 for Q6_K) — the file is what llama.cpp makes of it
    qwen2-tiny-q8_0.gguf    Qwen2 with its q/k/v biases (kept F32 by the converter), separate output

The llama-cpp-python venv then loads each file with llama.cpp (n_ctx 128, 2 threads, logits for
every position) and writes llama-cpp.json: for every prompt of the fixture's reference.json, the
greedy continuation (argmax, 16 tokens, evaluated one token at a
time with the KV cache) with its per-step top-1 minus top-2 margins, the largest |Δlogit| between
llama.cpp's and transformers' float32 logits at every prompt position (reference.json: the exact
math), per prompt and per file; and for each file,
llama.cpp's tokenize(add_bos=False, special=True) of TEXTS.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "Fixtures"
OUT = FIXTURES / "qwen-gguf"
SCRIPT_NAME = "scripts/make_qwen_gguf_fixtures.py"
FILES = [  # (file, fixture, how)
    ("qwen3-tiny-f16.gguf", "qwen3-tiny", "f16"),
    ("qwen3-tiny-q8_0.gguf", "qwen3-tiny", "q8_0"),
    ("qwen3-tiny-q4_k_m.gguf", "qwen3-tiny", "Q4_K_M"),
    ("qwen2-tiny-q8_0.gguf", "qwen2-tiny", "q8_0"),
]
TEXTS = [
    "Hello world! I'm sure you're right.",
    "我们一边喝茶一边聊天，奶奶写了一个字。",
    "def f(x):\n    return x * 2\n",
    "Mixed: Hello 你好 Привет 12345 👩‍💻!",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "café\u0301 naïve",
]
MAX_NEW_TOKENS = 16


def convert(source: Path):
    """llama.cpp's converter, in this process, with the pre-tokenizer name fixed to qwen2."""
    sys.path.insert(0, str(source))
    sys.path.insert(1, str(source / "gguf-py"))
    import convert_hf_to_gguf  # noqa: E402  (the vendored converter)
    from conversion import base

    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"
    OUT.mkdir(parents=True, exist_ok=True)
    for name, fixture, how in FILES:
        if how not in ("f16", "q8_0"):
            continue
        sys.argv = ["convert_hf_to_gguf.py", str(FIXTURES / fixture), "--outtype", how, "--outfile", str(OUT / name)]
        convert_hf_to_gguf.main()
        print(f"wrote {(OUT / name).relative_to(REPO_ROOT)}")


def quantize():
    import llama_cpp

    for name, fixture, how in FILES:
        if how != "Q4_K_M":
            continue
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
        params.nthread = 2
        source = OUT / f"{fixture}-f16.gguf"
        rc = llama_cpp.llama_model_quantize(str(source).encode(), str(OUT / name).encode(), params)
        assert rc == 0, rc
        print(f"wrote {(OUT / name).relative_to(REPO_ROOT)}")


def llama_results():
    import numpy as np
    import llama_cpp

    doc = {"generator": f"{SCRIPT_NAME} (llama-cpp-python {llama_cpp.__version__}; n_ctx 128, 2 threads, "
                        "logits_all; greedy = argmax one token at a time with the KV cache)", "files": {}}
    for name, fixture, _ in FILES:
        ref = json.loads((FIXTURES / fixture / "reference.json").read_text(encoding="utf-8"))
        llm = llama_cpp.Llama(model_path=str(OUT / name), n_ctx=128, n_threads=2, n_batch=128, logits_all=True,
                              verbose=False)
        prompts, worst = [], 0.0
        for p in ref["prompts"]:
            ids = p["input_ids"]
            llm.reset()
            llm.eval(ids)
            logits = np.array(llm.scores[: len(ids)], dtype=np.float32)
            exact = np.array(p["logits"], dtype=np.float32)
            worst = max(worst, float(np.abs(logits - exact).max()))
            greedy, margins = [], []
            row = logits[-1]
            for _ in range(MAX_NEW_TOKENS):
                order = np.argsort(-row, kind="stable")
                greedy.append(int(order[0]))
                margins.append(round(float(row[order[0]] - row[order[1]]), 6))
                llm.eval([greedy[-1]])
                row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            prompts.append({"name": p["name"], "input_ids": ids, "greedy": greedy, "margins": margins,
                            "max_abs_diff_vs_transformers": round(float(np.abs(logits - exact).max()), 6)})
        tokens = [{"text": t, "ids": llm.tokenize(t.encode(), add_bos=False, special=True)} for t in TEXTS]
        doc["files"][name] = {"fixture": fixture, "max_abs_diff_vs_transformers": round(worst, 6),
                              "prompts": prompts, "tokenize": tokens}
        print(f"{name}: llama.cpp max |Δlogit| vs transformers f32 {worst:.4g}; greedy margins min "
              f"{min(min(p['margins']) for p in prompts):.4f}")
        del llm
    write(doc)


def write(doc):
    """One prompt per line."""
    lines = ["{", f' "generator": {json.dumps(doc["generator"])},', ' "files": {']
    names = list(doc["files"])
    for n, name in enumerate(names):
        f = doc["files"][name]
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "fixture": {json.dumps(f["fixture"])},')
        lines.append(f'   "max_abs_diff_vs_transformers": {f["max_abs_diff_vs_transformers"]},')
        lines.append('   "prompts": [')
        for i, p in enumerate(f["prompts"]):
            lines.append("    " + json.dumps(p) + ("," if i + 1 < len(f["prompts"]) else ""))
        lines.append("   ],")
        lines.append('   "tokenize": [')
        for i, t in enumerate(f["tokenize"]):
            lines.append("    " + json.dumps(t, ensure_ascii=False) + ("," if i + 1 < len(f["tokenize"]) else ""))
        lines.append("   ]")
        lines.append("  }" + ("," if n + 1 < len(names) else ""))
    lines += [" }", "}"]
    text = "\n".join(lines) + "\n"
    json.loads(text)
    (OUT / "llama-cpp.json").write_text(text, encoding="utf-8")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp-python", help="a Python with llama-cpp-python 0.3.36 installed")
    ap.add_argument("--llama-cpp-source", type=Path, help="llama.cpp's tree with convert_hf_to_gguf.py and gguf-py")
    ap.add_argument("--stage", choices=["llama"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage == "llama":
        quantize()
        llama_results()
        return
    convert(args.llama_cpp_source)
    subprocess.run([args.llama_cpp_python, __file__, "--stage", "llama"], check=True)


if __name__ == "__main__":
    main()
