#!/usr/bin/env python3
"""Writes the GGUF reader and block-dequantizer fixtures under Tests/Fixtures/gguf/.

Run by hand, once, with the reference virtualenv (gguf and numpy, see
scripts/requirements-reference.txt):

    /opt/hearth-ref/bin/python scripts/make_gguf_fixtures.py

Outputs (committed):

  types.gguf      one tensor per tensor type Hearth reads (F32, F16, BF16, Q4_0, Q4_1,
                  Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), a 1-D and a 3-D F32
                  tensor, and metadata of every GGUF value type including nested arrays
                  and tokenizer-style arrays. Default alignment (32).
  types.json      for every tensor: ggml type id, numpy shape (outermost first), GGUF dims
                  (innermost first) and the values gguf.quants.dequantize gives for the
                  tensor's bytes as read back by gguf.GGUFReader, flattened row-major.
                  Values are float32 numbers written as exact decimals.
  aligned64.gguf  two small tensors with general.alignment = 64.
  tokenizers/*.gguf  vocabulary-only files (no tensors, as llama.cpp's own models/ggml-vocab-*.gguf)
                  with GPT-2-style byte-level BPE vocabularies (tokenizer.ggml.model "gpt2"), made
                  from the tokenizer.json fixtures of scripts/make_tokenizer_fixtures.py the way
                  llama.cpp's convert_hf_to_gguf.py lays them out: tokens by id ("[PADn]" for gaps),
                  token types (1 normal, 3 control for special added tokens, 4 user-defined for the
                  others, 5 unused), merges as "a b" strings, tokenizer.ggml.pre as named below.
  tokenizers/cases.json  for every such file and every text of make_tokenizer_fixtures.CASES: the ids of
                  HF tokenizers (add_special_tokens=False) and, with --llama-cpp-python PYTHON (a Python
                  with llama-cpp-python installed, e.g. benchmarks/.venv/bin/python), llama.cpp's
                  `tokenize(add_bos=False, special=True/False)` on the GGUF file: the real reference.

Types the gguf package can quantize (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) are
quantized from the F32 tensor's values by gguf.quants.quantize; the K-quants, which it
can only dequantize, get random block bytes whose f16 scales (d, dmin) are overwritten
with finite values of sane magnitude.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T
from gguf import GGUFValueType as V

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Tests", "Fixtures", "gguf")
SEED = 20240604

QUANTIZABLE = [T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]
# K-quant block byte offsets of the f16 fields (d, and dmin where present), from the
# block layouts in ggml-common.h.
K_QUANT_HALVES = {
    T.Q2_K: [80, 82],
    T.Q3_K: [108],
    T.Q4_K: [0, 2],
    T.Q5_K: [0, 2],
    T.Q6_K: [208],
}


def random_k_blocks(rng: np.random.Generator, qtype: T, rows: int, cols: int) -> np.ndarray:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = rows * cols // block_size
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for offset in K_QUANT_HALVES[qtype]:
        magnitude = rng.uniform(1e-4, 0.1, size=n_blocks)
        sign = np.where(rng.random(n_blocks) < 0.2, -1.0, 1.0) if offset == K_QUANT_HALVES[qtype][0] else 1.0
        halves = (magnitude * sign).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
        blocks[:, offset:offset + 2] = halves
    return blocks.reshape(rows, cols // block_size * type_size)


def add_metadata(w: gguf.GGUFWriter) -> None:
    w.add_name("hearth-gguf-fixture")
    w.add_key_value("test.uint8", 200, V.UINT8)
    w.add_key_value("test.int8", -100, V.INT8)
    w.add_key_value("test.uint16", 60000, V.UINT16)
    w.add_key_value("test.int16", -30000, V.INT16)
    w.add_key_value("test.uint32", 4_000_000_000, V.UINT32)
    w.add_key_value("test.int32", -2_000_000_000, V.INT32)
    w.add_key_value("test.float32", 0.1, V.FLOAT32)
    w.add_key_value("test.bool", True, V.BOOL)
    w.add_key_value("test.string", "h\u00e9llo, \u4e16\u754c \U0001f30d", V.STRING)
    w.add_key_value("test.uint64", 2**63 + 5, V.UINT64)
    w.add_key_value("test.int64", -(2**62), V.INT64)
    w.add_key_value("test.float64", 2.718281828459045, V.FLOAT64)
    w.add_key_value("test.array.uint8", [1, 2, 255], V.ARRAY, V.UINT8)
    w.add_key_value("test.array.int16", [-1, 300], V.ARRAY, V.INT16)
    w.add_key_value("test.array.uint64", [0, 2**64 - 1], V.ARRAY, V.UINT64)
    w.add_key_value("test.array.float64", [0.5, -1.25], V.ARRAY, V.FLOAT64)
    w.add_key_value("test.array.bool", [True, False, True], V.ARRAY, V.BOOL)
    w.add_key_value("test.array.string", ["a", "", "\u00fc\u00f1\u00ee"], V.ARRAY, V.STRING)
    w.add_key_value("test.array.nested", [[1, 2], [3]], V.ARRAY, V.ARRAY)  # inner INT32
    w.add_key_value("test.array.nested_strings", [["x", "y"], ["z"]], V.ARRAY, V.ARRAY)
    w.add_key_value("test.array.nested_twice", [[[7]], [[8, 9]]], V.ARRAY, V.ARRAY)
    # Tokenizer-shaped arrays, as llama.cpp's converters write them.
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>", "\u2581hello", "<0x0A>"])
    w.add_token_scores([0.0, 0.0, 0.0, -1.5, -2.25])
    w.add_token_types([2, 3, 3, 1, 6])
    w.add_token_merges(["\u2581 h", "e l"])


def write_types(rng: np.random.Generator) -> dict:
    path = os.path.join(OUT, "types.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    add_metadata(w)

    # The F32 source matrix the quantizable types are made from (2 rows × 256).
    source = (rng.standard_normal((2, 256)) * 0.05).astype(np.float32)
    w.add_tensor("f32", source)
    for qtype in QUANTIZABLE:
        data = gguf.quants.quantize(source, qtype)
        w.add_tensor(qtype.name.lower(), data, raw_dtype=qtype)
    for qtype in K_QUANT_HALVES:
        blocks = random_k_blocks(rng, qtype, 4, 256)
        w.add_tensor(qtype.name.lower(), blocks, raw_dtype=qtype)
    w.add_tensor("norm.1d", rng.standard_normal(64).astype(np.float32))
    w.add_tensor("shape.3d", rng.standard_normal((2, 3, 32)).astype(np.float32))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return describe(path)


def write_aligned64(rng: np.random.Generator) -> None:
    path = os.path.join(OUT, "aligned64.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_custom_alignment(64)
    w.add_tensor("a", rng.standard_normal(3).astype(np.float32))
    source = rng.standard_normal((1, 32)).astype(np.float32)
    w.add_tensor("b", gguf.quants.quantize(source, T.Q8_0), raw_dtype=T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def describe(path: str) -> dict:
    """Reads the file back with the reference reader and dequantizes every tensor."""
    reader = gguf.GGUFReader(path)
    tensors = {}
    for t in reader.tensors:
        dims = [int(d) for d in t.shape]  # GGUF order: innermost first
        values = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32).ravel()
        assert np.all(np.isfinite(values)), t.name
        tensors[t.name] = {
            "ggml_type": int(t.tensor_type),
            "type_name": t.tensor_type.name,
            "dims": dims,
            "shape": list(reversed(dims)),
            "offset": int(t.data_offset),
            "values": [float(v) for v in values],
        }
    return {
        "generator": f"scripts/make_gguf_fixtures.py with gguf {gguf_version()} and numpy {np.__version__}",
        "alignment": reader.alignment,
        "tensors": tensors,
    }


def to_json_lines(reference: dict) -> str:
    """JSON with one tensor per line, so diffs of a regenerated fixture stay readable."""
    compact = {"separators": (",", ":"), "sort_keys": True}
    lines = ["{"]
    lines.append(f' "generator": {json.dumps(reference["generator"])},')
    lines.append(f' "alignment": {reference["alignment"]},')
    lines.append(' "tensors": {')
    names = sorted(reference["tensors"])
    for i, name in enumerate(names):
        comma = "," if i + 1 < len(names) else ""
        lines.append(f"  {json.dumps(name)}: {json.dumps(reference['tensors'][name], **compact)}{comma}")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def gguf_version() -> str:
    try:
        from importlib.metadata import version

        return version("gguf")
    except Exception:  # pragma: no cover
        return "unknown"


# (file, tokenizer fixture, general.architecture, tokenizer.ggml.pre)
GPT2_VOCABULARIES = [
    ("phi2-gpt2.gguf", "gpt2-bpe", "phi2", "phi-2"),
    ("phi2-default.gguf", "gpt2-bpe", "phi2", "default"),
    ("phi4-mini-o200k.gguf", "o200k-bpe", "phi3", "gpt-4o"),
    ("llama3-bpe.gguf", "llama3-bpe", "llama", "llama-bpe"),
]
TOKENIZER_FIXTURES = os.path.join(ROOT, "Tests", "Fixtures", "tokenizers")


def write_gpt2_vocabulary(path: str, tokenizer_dir: str, arch: str, pre: str) -> dict:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json"))
    with open(os.path.join(tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        doc = json.load(f)
    with open(os.path.join(tokenizer_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    count = tok.get_vocab_size(with_added_tokens=True)
    added = tok.get_added_tokens_decoder()
    tokens, types = [], []
    for i in range(count):
        text = tok.id_to_token(i)
        if text is None:
            tokens.append(f"[PAD{i}]")
            types.append(5)
        elif i in added:
            tokens.append(text)
            types.append(3 if added[i].special else 4)
        else:
            tokens.append(text)
            types.append(1)
    merges = [m if isinstance(m, str) else " ".join(m) for m in doc["model"]["merges"]]

    w = gguf.GGUFWriter(path, arch=arch)
    w.add_name(f"hearth-vocab-{os.path.basename(tokenizer_dir)}")
    # Hyperparameters llama.cpp reads even for a vocabulary-only load.
    w.add_context_length(128)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_eps(1e-5)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    ids = {}
    for key in ["bos_token", "eos_token"]:
        if config.get(key):
            ids[key] = tok.token_to_id(config[key])
    if "bos_token" in ids:
        w.add_bos_token_id(ids["bos_token"])
    if "eos_token" in ids:
        w.add_eos_token_id(ids["eos_token"])
    if config.get("chat_template"):
        w.add_chat_template(config["chat_template"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {"tokenizer": os.path.basename(tokenizer_dir), "architecture": arch, "pre": pre,
            "tokens": count, "merges": len(merges), "bos": ids.get("bos_token"), "eos": ids.get("eos_token")}


LLAMA_CPP_PROGRAM = """
import json, sys
import llama_cpp
request = json.load(sys.stdin)
out = {}
for path in request["files"]:
    llm = llama_cpp.Llama(path, vocab_only=True, verbose=False)
    out[path] = [{"special": llm.tokenize(t.encode("utf-8"), add_bos=False, special=True),
                  "plain": llm.tokenize(t.encode("utf-8"), add_bos=False, special=False)} for t in request["texts"]]
json.dump({"version": llama_cpp.__version__, "ids": out}, sys.stdout)
"""


def write_gpt2_vocabularies(llama_cpp_python: str | None) -> None:
    import subprocess

    import tokenizers
    from tokenizers import Tokenizer

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_tokenizer_fixtures import CASES

    out_dir = os.path.join(OUT, "tokenizers")
    os.makedirs(out_dir, exist_ok=True)
    files = {}
    for name, fixture, arch, pre in GPT2_VOCABULARIES:
        tokenizer_dir = os.path.join(TOKENIZER_FIXTURES, fixture)
        files[name] = write_gpt2_vocabulary(os.path.join(out_dir, name), tokenizer_dir, arch, pre)
        tok = Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json"))
        files[name]["cases"] = [{"text": t, "hf": tok.encode(t, add_special_tokens=False).ids} for t in CASES]
    llama_version = None
    if llama_cpp_python:
        paths = [os.path.join(out_dir, name) for name in files]
        request = json.dumps({"files": paths, "texts": CASES})
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        result = subprocess.run([llama_cpp_python, "-c", LLAMA_CPP_PROGRAM], input=request, capture_output=True,
                                text=True, check=True, env=env)
        answer = json.loads(result.stdout)
        llama_version = answer["version"]
        for name, path in zip(files, paths):
            for case, ids in zip(files[name]["cases"], answer["ids"][path]):
                case["llama_cpp_special"] = ids["special"]
                case["llama_cpp_plain"] = ids["plain"]
    generator = (f"scripts/make_gguf_fixtures.py with gguf {gguf_version()}, tokenizers {tokenizers.__version__}"
                 + (f", llama-cpp-python {llama_version}" if llama_version else " (no llama.cpp reference)"))
    lines = ["{", f' "generator": {json.dumps(generator)},', ' "files": {']
    for n, (name, entry) in enumerate(files.items()):
        header = {k: v for k, v in entry.items() if k != "cases"}
        lines.append(f"  {json.dumps(name)}: {{")
        for key, value in header.items():
            lines.append(f"   {json.dumps(key)}: {json.dumps(value)},")
        lines.append('   "cases": [')
        for i, case in enumerate(entry["cases"]):
            comma = "," if i + 1 < len(entry["cases"]) else ""
            lines.append("    " + json.dumps(case, ensure_ascii=False) + comma)
        lines.append("   ]")
        lines.append("  }" + ("," if n + 1 < len(files) else ""))
    lines.append(" }")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    json.loads(text)
    with open(os.path.join(out_dir, "cases.json"), "w", encoding="utf-8") as f:
        f.write(text)
    for name, entry in files.items():
        same = sum(c["hf"] == c.get("llama_cpp_special", c["hf"]) for c in entry["cases"])
        print(f"tokenizers/{name}: {os.path.getsize(os.path.join(out_dir, name))} bytes, pre {entry['pre']}; "
              f"HF == llama.cpp on {same}/{len(entry['cases'])} texts")


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp-python", metavar="PYTHON",
                    help="a Python with llama-cpp-python, for llama.cpp's ids of the gpt2 vocabularies")
    ap.add_argument("--only-tokenizers", action="store_true", help="only (re)write tokenizers/")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if not args.only_tokenizers:
        rng = np.random.default_rng(SEED)
        reference = write_types(rng)
        write_aligned64(rng)
        with open(os.path.join(OUT, "types.json"), "w") as f:
            f.write(to_json_lines(reference))
        for name in sorted(os.listdir(OUT)):
            if name.endswith(".gguf") or name.endswith(".json"):
                print(f"{name}: {os.path.getsize(os.path.join(OUT, name))} bytes")
    write_gpt2_vocabularies(args.llama_cpp_python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
