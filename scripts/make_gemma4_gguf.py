#!/usr/bin/env python3
"""GGUF conversions of Tests/Fixtures/gemma4-tiny by llama.cpp's own tools, and llama.cpp's
results on them → Tests/Fixtures/gemma4-gguf/.

Run BY HAND, never in CI; the outputs are committed. Two Pythons take part:

    /work/h4-ref/bin/python scripts/make_gemma4_gguf.py \\
        --llama-cpp-python benchmarks/.venv/bin/python \\
        --llama-cpp-source /path/to/llama-cpp-python-0.3.36/vendor/llama.cpp

The reference venv (torch, transformers 5.23) runs llama.cpp's converter, convert_hf_to_gguf.py
of the llama.cpp vendored in the llama-cpp-python 0.3.36 sdist (with that tree's gguf-py), on the
weights of gemma4-tiny (scripts/make_gemma4_fixtures.py), as users convert Gemma 4 checkpoints.

The tokenizer. Gemma 4's converter reads only a tokenizer.json (gguf.LlamaHfVocab: a BPE model
with byte fallback and a Sequence decoder) and writes tokenizer.ggml.model = "gemma4" with the
merges. gemma4-tiny carries phi3-mha's 1,000-piece SentencePiece BPE model (tokenizer.model) plus
11 added tokens, and the real Gemma 4 tokenizer.json is not reachable offline, so this script
builds a Gemma-4-form tokenizer.json from it: the pieces and their ids unchanged, merges from
transformers' SentencePieceExtractor (BPE), put into transformers' GemmaTokenizer (the class
Gemma 4 checkpoints name: BPE with byte fallback and fuse_unk, Replace(" ", "▁") normalizer, the
Split(" ", merged_with_previous) pre-tokenizer, Replace/ByteFallback/Fuse decoder), with
gemma4-tiny's added tokens at their ids -- six placeholders renamed to Gemma 4's visible tokens
(<|channel>, <channel|>, <|tool_call>, <tool_call|>, <|tool_response>, <tool_response|>) and <|"|>
at id 1011, which the converter marks USER_DEFINED -- and <unused0..11> filling ids 1012-1023 so the
vocabulary covers the model's 1,024 rows (the converter trims token_embd to the tokenizer's size).
With <|tool_response> present, llama.cpp keeps the vocabulary's "</s>" a normal piece, as in the
real Gemma 4 vocabulary (without it, llama.cpp would turn "</s>" into an end-of-generation
control token). It is committed as gemma4-gguf/tokenizer/
(tokenizer.json + tokenizer_config.json); the model weights are gemma4-tiny's, unchanged.

Outputs:
    gemma4-tiny-f16.gguf     --outtype f16 (BF16 weights rounded to F16; norms, scalars F32)
    gemma4-tiny-q8_0.gguf    --outtype q8_0 (the converter's Q8_0)
    gemma4-tiny-q4_k_m.gguf  llama.cpp's llama_model_quantize(Q4_K_M) of the F16 file (rows of 64,
                             128, 256 or 512 that are not multiples of 256 fall back per tensor, as
                             llama.cpp decides)

The llama-cpp-python venv then loads each file with llama.cpp (n_ctx 128, 2 threads, logits of
every position) and writes llama-cpp.json: for every prompt of gemma4-tiny's reference.json, the
greedy continuation (argmax, 16 tokens, one token at a time with the KV cache) with its per-step
top-1 minus top-2 margins, and the largest |Δlogit| between llama.cpp's and transformers' float32
logits over the prompt positions (reference.json: the exact math); per file that largest and the
mean |Δlogit|, and at how many of the prompt positions whose exact top-1 minus top-2 margin is at
least 4 x that mean ("clear" positions) llama.cpp's top-1 is transformers'; and llama.cpp's
tokenize(add_bos=False, special=True) of the multilingual texts of Tests/Fixtures/tokenizers/
cases.json (the qwen2-bpe entry's 84 texts, the committed multilingual cases), with the same for
add_bos=True on the first text.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "Fixtures"
SOURCE = FIXTURES / "gemma4-tiny"
OUT = FIXTURES / "gemma4-gguf"
SCRIPT_NAME = "scripts/make_gemma4_gguf.py"
FILES = [("gemma4-tiny-f16.gguf", "f16"), ("gemma4-tiny-q8_0.gguf", "q8_0"), ("gemma4-tiny-q4_k_m.gguf", "Q4_K_M")]
RENAMED = {1002: "<|channel>", 1003: "<channel|>", 1004: "<|tool_call>", 1005: "<tool_call|>", 1008: "<|tool_response>",
           1009: "<tool_response|>"}
VISIBLE_EXTRA = '<|"|>'  # Gemma 4's string delimiter in tool calls, at the first id after the added tokens
MODEL_VOCAB = 1024
MAX_NEW_TOKENS = 16


def texts():
    cases = json.loads((FIXTURES / "tokenizers" / "cases.json").read_text(encoding="utf-8"))
    return [c["text"] for c in cases["tokenizers"]["qwen2-bpe"]["cases"]]


def build_tokenizer(directory: Path):
    """gemma4-tiny's SentencePiece pieces as a Gemma-4-form tokenizer.json (see the docstring)."""
    from tokenizers import AddedToken
    from transformers.convert_slow_tokenizer import SentencePieceExtractor
    from transformers.models.gemma.tokenization_gemma import GemmaTokenizer
    from tokenizers.models import BPE

    extracted = SentencePieceExtractor(str(SOURCE / "tokenizer.model")).extract(BPE)
    vocab, merges = extracted["vocab"], extracted["merges"]
    added = json.loads((SOURCE / "added_tokens.json").read_text())
    added = {RENAMED.get(i, t): i for t, i in added.items()}
    added[VISIBLE_EXTRA] = len(vocab) + len(added)
    first_unused = len(vocab) + len(added)
    for i in range(first_unused, MODEL_VOCAB):
        added[f"<unused{i - first_unused}>"] = i
    assert sorted(added.values()) == list(range(len(vocab), MODEL_VOCAB)), added
    tok = GemmaTokenizer(vocab=vocab, merges=merges, unk_token="<unk>", bos_token="<s>", eos_token="<|endoftext|>",
                         pad_token="<|endoftext|>", mask_token="<unk>")
    for text, i in sorted(added.items(), key=lambda kv: kv[1]):
        special = not (text in RENAMED.values() or text == VISIBLE_EXTRA)
        n = tok.add_tokens([AddedToken(text, special=special, normalized=False)], special_tokens=special)
        assert n in (0, 1) and tok.convert_tokens_to_ids(text) == i, (text, i, tok.convert_tokens_to_ids(text))
    assert len(tok) == MODEL_VOCAB, len(tok)
    directory.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(directory))
    # Only what the converter and a reader need: tokenizer.json and tokenizer_config.json.
    for extra in directory.iterdir():
        if extra.name not in ("tokenizer.json", "tokenizer_config.json"):
            extra.unlink()
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config["add_bos_token"] = True
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {directory.relative_to(REPO_ROOT)} ({len(tok)} tokens, {len(merges)} merges)")


def convert(source: Path):
    """llama.cpp's converter, in this process, on gemma4-tiny's weights with the built tokenizer."""
    sys.path.insert(0, str(source))
    sys.path.insert(1, str(source / "gguf-py"))
    import convert_hf_to_gguf  # noqa: E402  (the vendored converter)

    OUT.mkdir(parents=True, exist_ok=True)
    build_tokenizer(OUT / "tokenizer")
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp)
        for name in ("config.json", "generation_config.json", "model.safetensors"):
            os.symlink(SOURCE / name, model_dir / name)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(OUT / "tokenizer" / name, model_dir / name)
        for name, how in FILES:
            if how not in ("f16", "q8_0"):
                continue
            sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outtype", how, "--outfile", str(OUT / name),
                        "--model-name", "gemma4-tiny"]
            convert_hf_to_gguf.main()
            print(f"wrote {(OUT / name).relative_to(REPO_ROOT)}")


def quantize():
    import llama_cpp

    for name, how in FILES:
        if how != "Q4_K_M":
            continue
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
        params.nthread = 2
        rc = llama_cpp.llama_model_quantize(str(OUT / "gemma4-tiny-f16.gguf").encode(), str(OUT / name).encode(),
                                            params)
        assert rc == 0, rc
        print(f"wrote {(OUT / name).relative_to(REPO_ROOT)}")


def llama_results():
    import numpy as np
    import llama_cpp

    ref = json.loads((SOURCE / "reference.json").read_text(encoding="utf-8"))
    doc = {"generator": f"{SCRIPT_NAME} (llama-cpp-python {llama_cpp.__version__}; n_ctx 128, 2 threads, "
                        "logits_all; greedy = argmax one token at a time with the KV cache)", "files": {}}
    sample = texts()
    for name, _ in FILES:
        llm = llama_cpp.Llama(model_path=str(OUT / name), n_ctx=128, n_threads=2, n_batch=128, logits_all=True,
                              verbose=False)
        prompts, worst, total, count = [], 0.0, 0.0, 0
        tops = []  # per prompt position: (transformers' top-1 minus top-2 margin, top-1 equal)
        for p in ref["prompts"]:
            ids = p["input_ids"]
            llm.reset()
            llm.eval(ids)
            logits = np.array(llm.scores[: len(ids)], dtype=np.float32)
            exact = np.array(p["logits"], dtype=np.float32)
            assert logits.shape == exact.shape, (logits.shape, exact.shape)
            diff = float(np.abs(logits - exact).max())
            worst = max(worst, diff)
            total += float(np.abs(logits - exact).sum())
            count += exact.size
            ranked = np.sort(exact, axis=1)
            tops += zip((ranked[:, -1] - ranked[:, -2]).tolist(), (logits.argmax(1) == exact.argmax(1)).tolist())
            greedy, margins = [], []
            row = logits[-1]
            for _ in range(MAX_NEW_TOKENS):
                order = np.argsort(-row, kind="stable")
                greedy.append(int(order[0]))
                margins.append(round(float(row[order[0]] - row[order[1]]), 6))
                llm.eval([greedy[-1]])
                row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            prompts.append({"name": p["name"], "input_ids": ids, "greedy": greedy, "margins": margins,
                            "max_abs_diff_vs_transformers": round(diff, 6)})
        tokens = [{"text": t, "ids": llm.tokenize(t.encode(), add_bos=False, special=True)} for t in sample]
        with_bos = {"text": sample[0], "ids": llm.tokenize(sample[0].encode(), add_bos=True, special=True)}
        clear = [same for margin, same in tops if margin >= 4 * total / count]
        doc["files"][name] = {"fixture": "gemma4-tiny", "max_abs_diff_vs_transformers": round(worst, 6),
                              "mean_abs_diff_vs_transformers": round(total / count, 7),
                              "clear_positions": len(clear), "clear_top1_equal": int(sum(clear)),
                              "prompts": prompts, "tokenize": tokens, "tokenize_with_bos": with_bos}
        print(f"{name}: llama.cpp max |Δlogit| vs transformers f32 {worst:.4g}, mean {total / count:.4g}; top-1 as "
              f"transformers' at {sum(clear)} of {len(clear)} positions whose margin >= 4 x that mean; greedy margins min "
              f"{min(min(p['margins']) for p in prompts):.4f}")
        del llm
    write(doc)


def write(doc):
    """One prompt (or tokenized text) per line."""
    lines = ["{", f' "generator": {json.dumps(doc["generator"])},', ' "files": {']
    names = list(doc["files"])
    for n, name in enumerate(names):
        f = doc["files"][name]
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "fixture": {json.dumps(f["fixture"])},')
        for key in ("max_abs_diff_vs_transformers", "mean_abs_diff_vs_transformers", "clear_positions",
                    "clear_top1_equal"):
            lines.append(f'   "{key}": {f[key]},')
        lines.append(f'   "tokenize_with_bos": {json.dumps(f["tokenize_with_bos"], ensure_ascii=False)},')
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
