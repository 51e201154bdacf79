#!/usr/bin/env python3
"""Side-by-side CPU benchmark: Hearth against llama.cpp (llama-cpp-python).

Run through benchmarks/run.sh, which creates benchmarks/.venv first. This
script does the real work:

  1. makes a random-weight Phi-3-mini-shaped checkpoint (HF layout, F16
     safetensors shards, SentencePiece tokenizer) in benchmarks/work/, once;
  2. converts it with llama.cpp's own convert_hf_to_gguf.py to one F16 GGUF
     and quantizes that with llama.cpp's quantizer (llama_model_quantize) to
     Q4_0, Q4_K_M, Q5_K_M, Q6_K and Q8_0, each once, checking every file's
     tensor types; Gemma 3 270M Q4_K_M comes as is from models/;
  3. quantizes the checkpoint with `hearth quantize` to a q4_0 .hqf file, once;
  4. measures streaming-read bandwidth with membw.c;
  5. model file by model file, alternates llama.cpp and Hearth benches on the
     same GGUF (pp512 / tg128, llama-bench semantics), each bench in its own
     process so its peak RSS is its own;
  6. writes benchmarks/RESULTS.md (one table per model file, with each tg
     row's decode bandwidth as a share of membw's figure) and
     benchmarks/work/last-run.json.

--models restricts all of this to some entries of MODELS.
Internal subcommands (run in child processes): `_llama-bench`, `_quantize`,
`_gguf-stats`.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import random
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / "work"
LOGS = WORK / "logs"
# Hearth's repack cache during a run (HEARTH_REPACK_CACHE_DIR for every Hearth process): the
# harness's own, emptied before each file's first Hearth load so that load is measured cold.
REPACK_CACHE = WORK / "repack-cache"
RESULTS_MD = HERE / "RESULTS.md"
LAST_RUN = WORK / "last-run.json"
SCHEMA = 2   # 2: one entry per GGUF (model × quant type), --models


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Models. Each entry of MODELS is one GGUF file both engines read, and one
# table in RESULTS.md; add entries (another shape, another quant type) there.
# ---------------------------------------------------------------------------

PHI3_ADDED_TOKENS = [
    ("<|endoftext|>", 32000),
    ("<|assistant|>", 32001),
    ("<|placeholder1|>", 32002),
    ("<|placeholder2|>", 32003),
    ("<|placeholder3|>", 32004),
    ("<|placeholder4|>", 32005),
    ("<|system|>", 32006),
    ("<|end|>", 32007),
    ("<|placeholder5|>", 32008),
    ("<|placeholder6|>", 32009),
    ("<|user|>", 32010),
]

PHI3_MINI_SHAPE = dict(
    hidden_size=3072,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=32,
    intermediate_size=8192,
    vocab_size=32064,
    rope_theta=10000.0,
    max_position_embeddings=4096,
    rms_norm_eps=1e-5,
)

# The random-weight checkpoint every Phi-3 row is made from (once), and the F16
# GGUF llama.cpp's converter makes of it (kept only while quantizing).
PHI3_MINI_RANDOM = {
    "checkpoint": "phi3-mini-random",       # HF directory under work/
    "description": "Phi-3-mini shape (3072 hidden, 32 layers, 32/32 heads, 8192 FFN, 32064 vocab), random F16 weights",
    "shape": PHI3_MINI_SHAPE,
    "seed": 20240423,
    "shard_bytes": 2_000_000_000,
    "gguf_f16": "phi3-mini-f16.gguf",       # intermediate, deleted unless --keep-f16
}


def longrope_factors(top: float, power: float, n: int = 48) -> list[float]:
    """Per-frequency LongRoPE divisors rising smoothly from 1 to `top` (n = head_dim / 2 = 48
    for Phi-3.5-mini's 96-wide heads). The published checkpoints' lists have this form (1 for
    the fastest-turning pairs, growing toward the slowest); these are generated, not copied, and
    speed does not depend on their values."""
    return [round(1.0 + (top - 1.0) * (k / (n - 1)) ** power, 6) for k in range(n)]


# Phi-3.5-mini-instruct's shape: Phi-3-mini's matrices with a 128k context through LongRoPE
# (original context 4096, short factors within it, long factors beyond it). Only for the
# long-context runs (benchmarks/long_context.sh, issue 27); `--models phi35-q4_k_m` selects it.
PHI35_MINI_SHAPE = dict(PHI3_MINI_SHAPE, max_position_embeddings=131072)
PHI35_MINI_RANDOM = {
    "checkpoint": "phi35-mini-random",
    "description": "Phi-3.5-mini shape (3072 hidden, 32 layers, 32/32 heads, 8192 FFN, 32064 vocab, "
                   "LongRoPE: 131072 context from an original 4096), random F16 weights",
    "shape": PHI35_MINI_SHAPE,
    "seed": 20240820,
    "shard_bytes": 2_000_000_000,
    "gguf_f16": "phi35-mini-f16.gguf",
    "config": {
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope",
                         "short_factor": longrope_factors(3.0, 3.0),
                         "long_factor": longrope_factors(64.0, 2.0)},
        # As in Phi-3.5-mini-instruct: larger than the context, so it never binds.
        "sliding_window": 262144,
    },
}

# ggml tensor types llama_model_quantize may give each ftype's tensors (F32 =
# norms), the types the file must contain, and the type that must hold most of
# the bytes. The _M mixes raise some tensors (llama.cpp's llama-quant.cpp): in
# llama-cpp-python 0.3.36's llama.cpp, Q4_K_M and Q5_K_M put the output matrix
# and the attn_qkv and ffn_down matrices of about half the layers at Q6_K
# (other versions have put Phi-3's fused attn_qkv at Q5_K in Q4_K_M); Q4_0
# keeps the output at Q6_K.
GGUF_TYPES = {
    "LLAMA_FTYPE_MOSTLY_Q4_0": ("Q4_0", {"F32", "Q4_0", "Q6_K"}, {"Q4_0"}),
    "LLAMA_FTYPE_MOSTLY_Q4_K_M": ("Q4_K", {"F32", "Q4_K", "Q5_K", "Q6_K"}, {"Q4_K", "Q6_K"}),
    "LLAMA_FTYPE_MOSTLY_Q5_K_M": ("Q5_K", {"F32", "Q5_K", "Q6_K"}, {"Q5_K", "Q6_K"}),
    "LLAMA_FTYPE_MOSTLY_Q6_K": ("Q6_K", {"F32", "Q6_K"}, {"Q6_K"}),
    "LLAMA_FTYPE_MOSTLY_Q8_0": ("Q8_0", {"F32", "Q8_0"}, {"Q8_0"}),
}


def _phi3(kind: str, label: str, hqf: bool = False) -> dict:
    m = {
        "name": f"phi3-{kind}",
        "title": f"Phi-3-mini-shaped random weights, {label}",
        "family": "phi3",
        "source": PHI3_MINI_RANDOM,
        "gguf": f"benchmarks/work/phi3-mini-{kind}.gguf",   # made here, once (relative to the repo)
        "llama_ftype": f"LLAMA_FTYPE_MOSTLY_{label}",
        "description": PHI3_MINI_RANDOM["description"],
    }
    if hqf:   # Hearth's own format, quantized by `hearth quantize` from the checkpoint
        m.update({"hqf": f"phi3-mini-{kind}.hqf", "hearth_type": kind})
    return m


def _phi35(kind: str, label: str) -> dict:
    return {
        "name": f"phi35-{kind}",
        "title": f"Phi-3.5-mini-shaped random weights (LongRoPE, 128k context), {label}",
        "family": "phi35",
        "source": PHI35_MINI_RANDOM,
        "gguf": f"benchmarks/work/phi35-mini-{kind}.gguf",
        "llama_ftype": f"LLAMA_FTYPE_MOSTLY_{label}",
        "description": PHI35_MINI_RANDOM["description"],
        "only_by_name": True,   # not part of `all`: made for benchmarks/long_context.sh
    }


# One entry = one table in RESULTS.md: llama.cpp and Hearth on the same GGUF
# (and, for Phi-3 Q4_0, Hearth on its own .hqf of the same checkpoint too).
# `--models` selects entries by name or by family.
MODELS = [
    _phi3("q4_0", "Q4_0", hqf=True),
    _phi3("q4_k_m", "Q4_K_M"),
    _phi3("q5_k_m", "Q5_K_M"),
    _phi3("q6_k", "Q6_K"),
    _phi3("q8_0", "Q8_0"),
    _phi35("q4_k_m", "Q4_K_M"),
    _phi35("q4_0", "Q4_0"),
    {
        "name": "gemma",
        "title": "Gemma 3 270M, Q4_K_M (the project's default model)",
        "family": "gemma",
        "gguf": "models/gemma-3-270m-q4_k_m.gguf",   # given: fetched by scripts/fetch-default-model.sh, not made here
        "description": "Gemma 3 270M (gemma3 architecture), the project's default model as published "
                       "(models/registry.json), read by both engines as is; its embedding table is the output matrix",
    },
]


def select_models(spec: str | None) -> list[dict]:
    """--models: comma-separated entry names (phi3-q4_k_m, gemma, …) or
    families (phi3 = every phi3-* entry); 'all' or nothing = everything."""
    everyday = [m for m in MODELS if not m.get("only_by_name")]
    if not spec or spec.strip() == "all":
        return everyday
    want = [w.strip().lower() for w in spec.split(",") if w.strip()]
    names = [m["name"] for m in MODELS]
    families = sorted({m["family"] for m in MODELS})
    bad = [w for w in want if w not in names and w not in families and w != "all"]
    if bad:
        raise SystemExit(f"--models: unknown {', '.join(bad)}; choose from {', '.join(names)} "
                         f"or the families {', '.join(families)}")
    picked = [m for m in MODELS if m["name"] in want or m["family"] in want]
    if "all" in want:
        picked += [m for m in everyday if m not in picked]
    return [m for m in MODELS if m in picked]


# ---------------------------------------------------------------------------
# Random-weight checkpoint (HF hub layout, Phi3ForCausalLM, F16 safetensors)
# ---------------------------------------------------------------------------

def phi3_tensors(shape: dict) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, kind) in the order transformers' Phi3 defines them."""
    h = shape["hidden_size"]
    i = shape["intermediate_size"]
    v = shape["vocab_size"]
    nh = shape["num_attention_heads"]
    nkv = shape["num_key_value_heads"]
    hd = h // nh
    qkv = (nh + 2 * nkv) * hd
    out = [("model.embed_tokens.weight", (v, h), "matrix")]
    for n in range(shape["num_hidden_layers"]):
        p = f"model.layers.{n}."
        out += [
            (p + "input_layernorm.weight", (h,), "norm"),
            (p + "self_attn.qkv_proj.weight", (qkv, h), "matrix"),
            (p + "self_attn.o_proj.weight", (h, nh * hd), "matrix"),
            (p + "post_attention_layernorm.weight", (h,), "norm"),
            (p + "mlp.gate_up_proj.weight", (2 * i, h), "matrix"),
            (p + "mlp.down_proj.weight", (h, i), "matrix"),
        ]
    out += [("model.norm.weight", (h,), "norm"), ("lm_head.weight", (v, h), "matrix")]
    return out


def parameter_count(shape: dict) -> int:
    return sum(math.prod(s) for _, s, _ in phi3_tensors(shape))


def fill_tensor_f16(f, shape: tuple[int, ...], kind: str, seed: list[int]) -> None:
    """Write one tensor as little-endian F16, generated in bounded chunks."""
    import numpy as np

    rng = np.random.default_rng(seed)
    total = math.prod(shape)
    chunk = 1 << 24
    done = 0
    while done < total:
        n = min(chunk, total - done)
        x = rng.standard_normal(n, dtype=np.float32)
        if kind == "norm":
            x *= 0.02
            x += 1.0          # ones-ish
        else:
            x *= 0.02         # N(0, 0.02)
        f.write(x.astype("<f2").tobytes())
        done += n


def write_safetensors_shard(path: Path, tensors, seed: int, index_of: dict) -> None:
    """A safetensors file written tensor by tensor (header first), so memory
    stays at one chunk whatever the shard size."""
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape, _ in tensors:
        nbytes = math.prod(shape) * 2
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    hjson = json.dumps(header, separators=(",", ":")).encode()
    hjson += b" " * ((8 - len(hjson) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for name, shape, kind in tensors:
            fill_tensor_f16(f, shape, kind, [seed, index_of[name]])


def sentencepiece_model(vocab_pieces: int = 32000) -> bytes:
    """A SentencePiece BPE model built directly through its protobuf:
    <unk>, <s>, </s>, 256 byte-fallback pieces <0x00>..<0xFF>, then normal
    pieces (single characters, then '▁'/letter strings of growing length, each
    reachable by merging its prefix with its last character)."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    m = pb.ModelProto()
    T = pb.ModelProto.SentencePiece

    def add(piece: str, score: float, typ) -> None:
        sp = m.pieces.add()
        sp.piece = piece
        sp.score = score
        sp.type = typ

    add("<unk>", 0.0, T.UNKNOWN)
    add("<s>", 0.0, T.CONTROL)
    add("</s>", 0.0, T.CONTROL)
    for b in range(256):
        add(f"<0x{b:02X}>", 0.0, T.BYTE)

    need = vocab_pieces - len(m.pieces)
    singles = ["▁"] + [chr(c) for c in range(33, 127)]
    letters = ["▁"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    normal: list[str] = []
    seen: set[str] = set()

    def push(s: str) -> None:
        if s not in seen and len(normal) < need:
            seen.add(s)
            normal.append(s)

    for s in singles:
        push(s)
    layer = [""]
    while len(normal) < need:
        layer = [p + c for p in layer for c in letters]
        for s in layer:
            if len(s) >= 2:
                push(s)
            if len(normal) >= need:
                break
    for k, s in enumerate(normal):
        add(s, -float(k), T.NORMAL)
    assert len(m.pieces) == vocab_pieces, len(m.pieces)

    ts = m.trainer_spec
    ts.model_type = pb.TrainerSpec.BPE
    ts.vocab_size = vocab_pieces
    ts.byte_fallback = True
    ts.split_digits = True
    ts.allow_whitespace_only_pieces = True
    ts.unk_id, ts.bos_id, ts.eos_id, ts.pad_id = 0, 1, 2, -1
    ts.model_prefix = "tokenizer"
    ns = m.normalizer_spec
    ns.name = "identity"
    ns.add_dummy_prefix = True
    ns.remove_extra_whitespaces = False
    ns.escape_whitespaces = True
    return m.SerializeToString()


PHI3_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] in ['system', 'user', 'assistant'] %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"
)


def tokenizer_side_files() -> dict[str, dict]:
    def entry(content: str, rstrip: bool, special: bool) -> dict:
        return {"content": content, "lstrip": False, "normalized": False, "rstrip": rstrip,
                "single_word": False, "special": special}

    decoder = {"0": entry("<unk>", False, True), "1": entry("<s>", False, True), "2": entry("</s>", True, False)}
    for content, idx in PHI3_ADDED_TOKENS:
        decoder[str(idx)] = entry(content, content != "<|endoftext|>", True)

    def plain(content: str) -> dict:
        return {"content": content, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False}

    return {
        "tokenizer_config.json": {
            "add_bos_token": True,
            "add_eos_token": False,
            "added_tokens_decoder": decoder,
            "bos_token": "<s>",
            "chat_template": PHI3_CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": False,
            "eos_token": "<|endoftext|>",
            "legacy": False,
            "model_max_length": 4096,
            "pad_token": "<|endoftext|>",
            "padding_side": "left",
            "sp_model_kwargs": {},
            "tokenizer_class": "LlamaTokenizer",
            "unk_token": "<unk>",
            "use_default_system_prompt": False,
        },
        "added_tokens.json": {content: idx for content, idx in PHI3_ADDED_TOKENS},
        "special_tokens_map.json": {
            "bos_token": plain("<s>"),
            "eos_token": plain("<|endoftext|>"),
            "pad_token": plain("<|endoftext|>"),
            "unk_token": plain("<unk>"),
        },
    }


def checkpoint_recipe(model: dict) -> dict:
    recipe = {"generator": "benchmarks/bench.py", "version": 1, "seed": model["seed"], "shape": model["shape"],
              "dtype": "F16", "shard_bytes": model["shard_bytes"]}
    if "config" in model:
        recipe["config"] = model["config"]
    return recipe


def ensure_checkpoint(model: dict) -> Path:
    out = WORK / model["checkpoint"]
    stamp = out / ".hearth-bench-checkpoint.json"
    recipe = checkpoint_recipe(model)
    if stamp.is_file() and json.loads(stamp.read_text()) == recipe:
        log(f"checkpoint ready: {out}")
        return out
    tmp = WORK / (model["checkpoint"] + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shape = model["shape"]
    tensors = phi3_tensors(shape)
    index_of = {name: k for k, (name, _, _) in enumerate(tensors)}

    # Shards of at most shard_bytes, in definition order.
    shards: list[list] = [[]]
    size = 0
    for t in tensors:
        nbytes = math.prod(t[1]) * 2
        if shards[-1] and size + nbytes > model["shard_bytes"]:
            shards.append([])
            size = 0
        shards[-1].append(t)
        size += nbytes
    n = len(shards)
    log(f"writing random checkpoint ({parameter_count(shape) / 1e9:.2f} B params, {n} F16 shards) to {out}")
    t0 = time.time()
    weight_map = {}
    for k, group in enumerate(shards, 1):
        fname = f"model-{k:05d}-of-{n:05d}.safetensors"
        write_safetensors_shard(tmp / fname, group, model["seed"], index_of)
        for name, _, _ in group:
            weight_map[name] = fname
        log(f"  {fname}: {len(group)} tensors, {(tmp / fname).stat().st_size / 1e9:.2f} GB ({time.time() - t0:.0f} s)")
    total = sum(math.prod(s) * 2 for _, s, _ in tensors)
    write_json(tmp / "model.safetensors.index.json", {"metadata": {"total_size": total}, "weight_map": weight_map})

    config = {
        "architectures": ["Phi3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "embd_pdrop": 0.0,
        "eos_token_id": 32000,
        "hidden_act": "silu",
        "hidden_size": shape["hidden_size"],
        "initializer_range": 0.02,
        "intermediate_size": shape["intermediate_size"],
        "max_position_embeddings": shape["max_position_embeddings"],
        "model_type": "phi3",
        "num_attention_heads": shape["num_attention_heads"],
        "num_hidden_layers": shape["num_hidden_layers"],
        "num_key_value_heads": shape["num_key_value_heads"],
        # llama.cpp's converter requires it; equal to max_position_embeddings: no scaling.
        "original_max_position_embeddings": shape["max_position_embeddings"],
        "pad_token_id": 32000,
        "resid_pdrop": 0.0,
        "rms_norm_eps": shape["rms_norm_eps"],
        "rope_scaling": None,
        "rope_theta": shape["rope_theta"],
        # As in Phi-3-mini-4k-instruct; it never binds within pp512 + tg128.
        "sliding_window": 2047,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "transformers_version": "4.57.6",
        "use_cache": True,
        "vocab_size": shape["vocab_size"],
    }
    config.update(model.get("config", {}))
    write_json(tmp / "config.json", config)
    write_json(tmp / "generation_config.json", {
        "_from_model_config": True,
        "bos_token_id": 1,
        "eos_token_id": [32000, 32001, 32007],
        "pad_token_id": 32000,
        "transformers_version": "4.57.6",
    })
    (tmp / "tokenizer.model").write_bytes(sentencepiece_model(32000))
    for fname, obj in tokenizer_side_files().items():
        write_json(tmp / fname, obj)
    (tmp / "README.md").write_text(
        f"Random weights: {model['description']}. Made by benchmarks/bench.py for\n"
        "speed benchmarks only. The model says nothing meaningful.\n")
    write_json(tmp / stamp.name, recipe)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"checkpoint written in {time.time() - t0:.0f} s")
    return out


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------
# llama.cpp: convert (vendored convert_hf_to_gguf.py) and quantize
# ---------------------------------------------------------------------------

def llama_src_dir() -> Path:
    import llama_cpp

    d = WORK / "src" / f"llama_cpp_python-{llama_cpp.__version__}" / "vendor" / "llama.cpp"
    if not (d / "convert_hf_to_gguf.py").is_file():
        raise SystemExit(f"{d}/convert_hf_to_gguf.py missing: run benchmarks/run.sh (it unpacks the sdist)")
    return d


def ensure_ggufs(models: list[dict], keep_f16: bool, timings: dict) -> None:
    """Make the GGUF of every selected entry that has a source checkpoint and
    no file yet: one F16 GGUF by llama.cpp's convert_hf_to_gguf.py per
    checkpoint, kept while every missing type is quantized from it with
    llama_model_quantize (default parameters), then deleted unless keep_f16.
    Every file made is checked (check_gguf) before it gets its final name."""
    by_source: dict[str, list[dict]] = {}
    for m in models:
        if "source" in m and not (REPO / m["gguf"]).is_file():
            by_source.setdefault(m["source"]["checkpoint"], []).append(m)
    for group in by_source.values():
        source = group[0]["source"]
        ckpt = ensure_checkpoint(source)
        f16 = WORK / source["gguf_f16"]
        if not f16.is_file():
            src = llama_src_dir()
            tmp = f16.with_suffix(".partial.gguf")
            cmd = [sys.executable, str(src / "convert_hf_to_gguf.py"), str(ckpt), "--outtype", "f16",
                   "--outfile", str(tmp)]
            log(f"converting to F16 GGUF with llama.cpp's convert_hf_to_gguf.py (log: {LOGS / 'convert.log'})")
            t0 = time.time()
            with open(LOGS / "convert.log", "w") as lf:
                rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=src)
            if rc != 0:
                tail = (LOGS / "convert.log").read_text(errors="replace").splitlines()[-30:]
                raise SystemExit("convert_hf_to_gguf.py failed:\n" + "\n".join(tail))
            tmp.rename(f16)
            timings["convert_s"] = timings.get("convert_s", 0.0) + round(time.time() - t0, 1)
            log(f"F16 GGUF written in {time.time() - t0:.0f} s: {f16} ({f16.stat().st_size / 1e9:.2f} GB)")
        for m in group:
            quant = REPO / m["gguf"]
            tmp = quant.with_suffix(".partial.gguf")
            qlog = LOGS / f"quantize-{m['name']}.log"
            log(f"quantizing {f16.name} -> {quant.name} with llama_model_quantize ({m['llama_ftype']}; log: {qlog})")
            t0 = time.time()
            with open(qlog, "w") as lf:
                rc = subprocess.call([sys.executable, __file__, "_quantize", str(f16), str(tmp), m["llama_ftype"]],
                                     stdout=lf, stderr=subprocess.STDOUT)
            if rc != 0:
                tmp.unlink(missing_ok=True)
                tail = qlog.read_text(errors="replace").splitlines()[-30:]
                raise SystemExit("llama_model_quantize failed:\n" + "\n".join(tail))
            problem = check_gguf(m, gguf_stats(tmp))
            if problem:
                raise SystemExit(f"{tmp}: {problem} (file left there for inspection)")
            tmp.rename(quant)
            timings["quantize_s"] = timings.get("quantize_s", 0.0) + round(time.time() - t0, 1)
            log(f"quantized in {time.time() - t0:.0f} s: {quant} ({quant.stat().st_size / 1e9:.2f} GB)")
        if not keep_f16:
            f16.unlink()
            log(f"deleted {f16} (--keep-f16 keeps it)")


def check_gguf(model: dict, st: dict) -> str:
    """'' if the GGUF's tensor types are what llama_model_quantize gives the
    entry's ftype (GGUF_TYPES), else what is wrong."""
    if model.get("llama_ftype") not in GGUF_TYPES:
        return ""
    main, allowed, required = GGUF_TYPES[model["llama_ftype"]]
    by_bytes = st["tensor_bytes_by_type"]
    counts = ", ".join(f"{k} {v}" for k, v in sorted(st["tensor_count_by_type"].items()))
    extra = sorted(set(by_bytes) - allowed)
    if extra:
        return f"unexpected tensor types {extra} for {model['llama_ftype']} (tensors per type: {counts})"
    absent = sorted(required - set(by_bytes))
    if absent:
        return f"no {absent} tensors, expected for {model['llama_ftype']} (tensors per type: {counts})"
    top = max(by_bytes, key=by_bytes.get)
    if top != main:
        return f"most bytes are {top}, expected {main} for {model['llama_ftype']} (tensors per type: {counts})"
    return ""


def child_quantize(inp: str, out: str, ftype_name: str) -> int:
    import ctypes
    import llama_cpp

    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, ftype_name)
    params.nthread = os.cpu_count() or 1
    rc = llama_cpp.llama_model_quantize(inp.encode(), out.encode(), ctypes.byref(params))
    llama_cpp.llama_backend_free()
    print(f"llama_model_quantize returned {rc}", file=sys.stderr)
    return 0 if rc == 0 else 1


def gguf_stats(path: Path) -> dict:
    """gguf_stats_here(path), computed in a child process: GGUFReader holds a
    large vocabulary as numpy arrays (Gemma's 262144 tokens take ~700 MB), and
    whatever this process's peak RSS reaches, every bench child inherits as the
    floor of its ru_maxrss (see run_measured)."""
    r = subprocess.run([sys.executable, __file__, "_gguf-stats", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"reading {path} with the gguf package failed:\n{r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout)


def gguf_stats_here(path: Path) -> dict:
    from gguf import GGUFReader

    r = GGUFReader(str(path))
    by_type: dict[str, int] = {}
    count_by_type: dict[str, int] = {}
    total = 0
    embd = 0
    n_elements = 0
    names = set()
    for t in r.tensors:
        nb = int(t.n_bytes)
        total += nb
        n_elements += int(t.n_elements)
        by_type[t.tensor_type.name] = by_type.get(t.tensor_type.name, 0) + nb
        count_by_type[t.tensor_type.name] = count_by_type.get(t.tensor_type.name, 0) + 1
        names.add(t.name)
        if t.name == "token_embd.weight":
            embd = nb
    # Without output.weight, llama.cpp (and Hearth) use token_embd as the
    # output matrix: tied, so all of it is read for every token. Untied, a
    # decode step gathers one row of it and streams every other tensor once.
    tied = "output.weight" not in names
    arch = None
    try:
        f = r.fields.get("general.architecture")
        arch = bytes(f.parts[f.data[0]]).decode() if f else None
    except Exception:  # noqa: BLE001
        pass
    return {"file_bytes": path.stat().st_size, "tensor_bytes": total, "token_embd_bytes": embd,
            "tied_embeddings": tied, "weight_bytes_per_token": total - (0 if tied else embd),
            "tensor_elements": n_elements, "tensor_bytes_by_type": by_type, "tensor_count_by_type": count_by_type,
            "n_tensors": len(r.tensors), "architecture": arch}


# ---------------------------------------------------------------------------
# llama.cpp bench child: llama-bench semantics through the low-level API
# ---------------------------------------------------------------------------

def proc_status_bytes(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def mean_sd(samples: list[float]) -> tuple[float, float]:
    if not samples:
        return float("nan"), float("nan")
    m = statistics.fmean(samples)
    return m, (statistics.stdev(samples) if len(samples) > 1 else 0.0)


def child_llama_bench(a: argparse.Namespace) -> int:
    rss_start = proc_status_bytes("VmRSS")
    import llama_cpp as L

    rss_after_import = proc_status_bytes("VmRSS")
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    mp.load_mode = L.LLAMA_LOAD_MODE_MMAP

    t_load = time.perf_counter()
    model = L.llama_model_load_from_file(a.model.encode(), mp)
    if not model:
        print("failed to load model", file=sys.stderr)
        return 1
    cp = L.llama_context_default_params()
    cp.n_ctx = a.prompt + a.gen
    cp.n_batch = a.batch
    cp.n_ubatch = a.batch
    cp.n_threads = a.threads
    cp.n_threads_batch = a.threads
    cp.no_perf = True
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        print("failed to create context", file=sys.stderr)
        return 1
    load_seconds = time.perf_counter() - t_load
    rss_after_load = proc_status_bytes("VmRSS")

    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    add_bos = bool(L.llama_vocab_get_add_bos(vocab))
    bos = L.llama_vocab_bos(vocab)
    mem = L.llama_get_memory(ctx)
    rng = random.Random(1234)
    TokArr = L.llama_token * max(a.batch, 1)

    def decode(arr, n: int) -> None:
        rc = L.llama_decode(ctx, L.llama_batch_get_one(arr, n))
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    # Like llama-bench's test_prompt: batches of n_batch random ids (BOS first
    # if the vocab adds one), then synchronize.
    def test_prompt(n_prompt: int) -> None:
        done = 0
        while done < n_prompt:
            n = min(n_prompt - done, a.batch)
            arr = TokArr()
            for k in range(n):
                arr[k] = rng.randrange(n_vocab)
            if done == 0 and add_bos:
                arr[0] = bos
            decode(arr, n)
            done += n
        L.llama_synchronize(ctx)

    # Like llama-bench's test_gen: n single-token decodes, each synchronized.
    def test_gen(n_gen: int) -> None:
        tok = (L.llama_token * 1)()
        tok[0] = bos if add_bos else rng.randrange(n_vocab)
        for _ in range(n_gen):
            decode(tok, 1)
            L.llama_synchronize(ctx)
            tok[0] = rng.randrange(n_vocab)

    def clear() -> None:
        L.llama_memory_clear(mem, False)

    result: dict = {}
    for test, n, fn in (("pp", a.prompt, test_prompt), ("tg", a.gen, test_gen)):
        if n <= 0:
            continue
        clear()
        # Warm-up as llama-bench does: the whole prompt for pp, one token for tg.
        fn(n if test == "pp" else 1)
        samples = []
        for _ in range(a.reps):
            clear()
            t0 = time.perf_counter_ns()
            fn(n)
            dt = (time.perf_counter_ns() - t0) / 1e9
            samples.append(n / dt)
        m, sd = mean_sd(samples)
        result[test] = {"tokens_per_second": m, "stddev": sd, "samples": samples, "tokens": n}

    try:
        sysinfo = L.llama_print_system_info().decode(errors="replace").strip()
    except Exception:  # noqa: BLE001
        sysinfo = None
    result.update({
        "engine": "llama.cpp",
        "llama_cpp_python": L.__version__,
        "system_info": sysinfo,
        "threads": a.threads,
        "n_ctx": L.llama_n_ctx(ctx),
        "n_batch": a.batch,
        "n_ubatch": a.batch,
        "load_mode": "mmap",
        "flash_attn": "auto",
        "load_seconds": load_seconds,
        "n_params": int(L.llama_model_n_params(model)),
        "model_size_bytes": int(L.llama_model_size(model)),
        "rss_start_bytes": rss_start,
        "rss_after_import_bytes": rss_after_import,
        "rss_after_load_bytes": rss_after_load,
        "peak_rss_bytes": proc_status_bytes("VmHWM"),
    })
    L.llama_free(ctx)
    L.llama_model_free(model)
    print(json.dumps(result))
    return 0


# ---------------------------------------------------------------------------
# Running measured children
# ---------------------------------------------------------------------------

def cpu_busy_seconds() -> float:
    """CPU time (all cores) the machine spent busy since boot, from /proc/stat."""
    try:
        f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return float("nan")
    v = [int(x) for x in f]
    idle = v[3] + (v[4] if len(v) > 4 else 0)          # idle + iowait
    busy = sum(v[:8]) - idle                             # user..steal, without guest (already in user)
    return busy / os.sysconf("SC_CLK_TCK")


def busy_cores(seconds: float = 2.0) -> float:
    b0, t0 = cpu_busy_seconds(), time.time()
    time.sleep(seconds)
    return (cpu_busy_seconds() - b0) / (time.time() - t0)


IDLE_WAIT = {"seconds": 0.0}


def wait_for_idle(max_wait: float, threshold: float = 0.25, quiet_for: float = 20.0) -> float:
    """Wait (up to max_wait s) until other processes have used < threshold
    cores for quiet_for seconds in a row; return the last measured load."""
    start = time.time()
    deadline = start + max_wait
    quiet_since = None
    warned = False
    load = 0.0
    while True:
        load = busy_cores()
        now = time.time()
        if load < threshold:
            quiet_since = quiet_since or now - 2.0
            if now - quiet_since >= quiet_for:
                break
        else:
            quiet_since = None
            if not warned:
                log(f"  machine busy ({load:.2f} cores used by other processes); waiting up to {max_wait:.0f} s "
                    f"for {quiet_for:.0f} s of quiet")
                warned = True
        if now >= deadline:
            log(f"  still busy ({load:.2f} cores); measuring anyway (flagged in the results)")
            break
    IDLE_WAIT["seconds"] += time.time() - start
    return load


def run_measured(cmd: list[str], log_path: Path, timeout: float) -> dict:
    """Run cmd; return its stdout, exit status, wall time and the peak RSS of
    that one child (wait4's ru_maxrss), with stderr going to log_path.

    Linux carries a process's RSS high-water mark across exec, and Python
    starts children with vfork, so a child's ru_maxrss is at least this
    process's own peak RSS: the harness keeps its own small (gguf_stats runs
    in a child) and records its peak next to each child's, so that a child
    whose figure does not exceed it is flagged."""
    import resource

    with tempfile.TemporaryFile() as out, open(log_path, "w") as err:
        err.write("$ " + " ".join(cmd) + "\n")
        err.flush()
        t0 = time.time()
        busy0 = cpu_busy_seconds()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=REPO, start_new_session=True)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.time() - t0
        # CPU the rest of the machine used meanwhile: all busy time minus the child's own.
        foreign = (cpu_busy_seconds() - busy0) - (ru.ru_utime + ru.ru_stime)
        out.seek(0)
        stdout = out.read().decode(errors="replace")
    return {"returncode": p.returncode, "stdout": stdout, "wall_seconds": wall,
            "maxrss_bytes": ru.ru_maxrss * 1024, "timed_out": timed_out.is_set(), "log": str(log_path),
            "harness_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "child_cpu_seconds": ru.ru_utime + ru.ru_stime, "foreign_load_cores": max(0.0, foreign) / max(wall, 1e-9)}


def last_json_line(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def log_tail(path: str, n: int = 8) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def llama_buffers(log_path: str) -> dict:
    """llama.cpp's own account of its buffers, from its log: 'CPU_Mapped model
    buffer size = 2047.66 MiB', 'CPU_REPACK model buffer size = …', KV cache,
    compute buffer."""
    out: dict[str, float] = {}
    try:
        text = Path(log_path).read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if "buffer size" in line and "MiB" in line:
            left, _, right = line.partition("buffer size")
            name = " ".join(left.split(":", 1)[-1].split())
            try:
                mib = float(right.split("=")[1].split("MiB")[0])
            except (IndexError, ValueError):
                continue
            out[name] = out.get(name, 0.0) + mib
    return out


def bench_llama(gguf: Path, a: argparse.Namespace, tag: str) -> dict:
    cmd = [sys.executable, __file__, "_llama-bench", "--model", str(gguf), "-p", str(a.prompt), "-n", str(a.gen),
           "-r", str(a.reps), "-t", str(a.threads), "-b", str(a.batch)]
    r = run_measured(cmd, LOGS / f"llama-{tag}.log", a.timeout)
    res = last_json_line(r["stdout"]) if r["returncode"] == 0 else None
    if res is not None:
        res["buffers_mib"] = llama_buffers(r["log"])
    entry = {"engine": "llama.cpp", "file": str(gguf.relative_to(REPO)), "ok": res is not None,
             "wall_seconds": r["wall_seconds"], "maxrss_bytes": r["maxrss_bytes"], "log": r["log"],
             "child_cpu_seconds": r["child_cpu_seconds"], "foreign_load_cores": r["foreign_load_cores"],
             "harness_maxrss_bytes": r["harness_maxrss_bytes"], "result": res}
    if res is None:
        entry["error"] = f"exit {r['returncode']}{' (timeout)' if r['timed_out'] else ''}: {log_tail(r['log'])}"
    return entry


def measured(fn, a: argparse.Namespace, what: str) -> dict:
    """Run one bench (fn() -> entry) on a quiet machine: wait for idle first,
    and run it again (up to --retries times) if other processes took more than
    --max-foreign-load cores while it ran. Disturbed attempts are kept."""
    discarded = []
    while True:
        idle = wait_for_idle(a.max_wait_idle)
        e = fn()
        e["load_before_cores"] = idle
        log_entry(e)
        if not e["ok"] or e["foreign_load_cores"] <= a.max_foreign_load or len(discarded) >= a.retries:
            break
        log(f"  other processes used {e['foreign_load_cores']:.2f} cores during {what}: discarding it and running it again")
        discarded.append({k: v for k, v in e.items()})
    e["discarded_attempts"] = discarded
    return e


# ---------------------------------------------------------------------------
# Hearth
# ---------------------------------------------------------------------------

def find_hearth(explicit: str | None) -> tuple[Path | None, str]:
    if explicit:
        p = Path(explicit)
        return (p, "") if p.is_file() and os.access(p, os.X_OK) else (None, f"HEARTH_BIN={explicit} is not an executable file")
    candidates = [REPO / ".build" / "release" / "hearth"]
    candidates += sorted((REPO / ".build").glob("*/release/hearth"))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c, ""
    if shutil.which("swift"):
        # Only asks SwiftPM where the release binary would be; builds nothing.
        try:
            out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO, text=True,
                                 capture_output=True, timeout=120).stdout.strip()
            c = Path(out) / "hearth"
            if out and c.is_file() and os.access(c, os.X_OK):
                return c, ""
            return None, f"no hearth binary at {c} (build it: swift build -c release --product hearth)"
        except (subprocess.TimeoutExpired, OSError) as e:
            return None, f"swift build --show-bin-path failed: {e}"
    return None, "no hearth binary (.build/release/hearth) and no swift to locate one; set HEARTH_BIN"


def hearth_has(binary: Path, sub: str) -> bool:
    try:
        r = subprocess.run([str(binary), sub, "--help"], capture_output=True, text=True, timeout=60, cwd=REPO)
        return r.returncode == 0
    except (subprocess.TimeoutExpired, OSError):
        return False


def ensure_hqf(binary: Path, model: dict, ckpt: Path, timings: dict) -> tuple[Path | None, str]:
    hqf = WORK / model["hqf"]
    if hqf.is_file():
        return hqf, ""
    if not hearth_has(binary, "quantize"):
        return None, "hearth has no `quantize` subcommand"
    tmp = hqf.with_suffix(".partial.hqf")
    cmd = [str(binary), "quantize", "--model", str(ckpt.relative_to(REPO)), "--output", str(tmp.relative_to(REPO)),
           "--type", model["hearth_type"]]
    log(f"hearth quantize -> {hqf} (log: {LOGS / 'hearth-quantize.log'})")
    t0 = time.time()
    with open(LOGS / "hearth-quantize.log", "w") as lf:
        lf.write("$ " + " ".join(cmd) + "\n")
        lf.flush()
        rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=REPO)
    if rc != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        return None, f"hearth quantize failed (exit {rc}): {log_tail(str(LOGS / 'hearth-quantize.log'), 4)}"
    tmp.rename(hqf)
    timings["hearth_quantize_s"] = round(time.time() - t0, 1)
    log(f"hearth quantize done in {timings['hearth_quantize_s']} s ({hqf.stat().st_size / 1e9:.2f} GB)")
    return hqf, ""


def clear_repack_cache() -> None:
    """Empty the repack cache directory Hearth uses in this run ($HEARTH_REPACK_CACHE_DIR,
    which the harness sets to REPACK_CACHE unless it was set already)."""
    d = Path(os.environ.get("HEARTH_REPACK_CACHE_DIR") or REPACK_CACHE)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True, exist_ok=True)


def bench_hearth(binary: Path, model_file: Path, a: argparse.Namespace, tag: str, bits: str = "16",
                 sizes: tuple[int, int, int] | None = None) -> dict:
    prompt, gen, reps = sizes or (a.prompt, a.gen, a.reps)
    cmd = [str(binary), "bench", "--model", str(model_file.relative_to(REPO)), "-p", str(prompt), "-n", str(gen),
           "-r", str(reps), "-t", str(a.threads), "--json", "--activation-bits", bits]
    r = run_measured(cmd, LOGS / f"hearth-{tag}.log", a.timeout)
    res = last_json_line(r["stdout"]) if r["returncode"] == 0 else None
    if res is not None and not (isinstance(res.get("pp"), dict) or isinstance(res.get("tg"), dict)):
        res = None
    entry = {"engine": "hearth", "variant": bits, "file": str(model_file.relative_to(REPO)), "ok": res is not None,
             "wall_seconds": r["wall_seconds"], "maxrss_bytes": r["maxrss_bytes"], "log": r["log"],
             "child_cpu_seconds": r["child_cpu_seconds"], "foreign_load_cores": r["foreign_load_cores"],
             "harness_maxrss_bytes": r["harness_maxrss_bytes"], "result": res}
    if res is None:
        # Hearth's own message: the end of its stderr (the log minus the command line), else of its stdout.
        err_lines = [x for x in Path(r["log"]).read_text(errors="replace").splitlines()[1:] if x.strip()]
        msg = "\n".join((err_lines or [x for x in r["stdout"].splitlines() if x.strip()])[-4:])
        with open(r["log"], "a") as lf:
            lf.write("\n--- stdout ---\n" + r["stdout"][-4000:])
        entry["error"] = f"exit {r['returncode']}{' (timeout)' if r['timed_out'] else ''}: {msg}"
    return entry


# ---------------------------------------------------------------------------
# Streaming-read bandwidth (membw.c)
# ---------------------------------------------------------------------------

def run_membw(threads_list: list[int], mib: int, runs: int, max_wait_idle: float = 900,
              max_foreign_load: float = 0.1, retries: int = 3, sweeps: int = 3) -> list[dict]:
    """Every (threads, THP) configuration once per sweep, sweeps interleaved so
    a slow spell of the host hits all configurations alike; best pass over all
    sweeps per configuration. A configuration disturbed by other processes is
    measured again."""
    import resource

    src = HERE / "membw.c"
    exe = WORK / "membw"
    cc = os.environ.get("CC", "cc")
    if not exe.is_file() or exe.stat().st_mtime < src.stat().st_mtime:
        cmd = [cc, "-O3", "-march=native", "-pthread", "-o", str(exe), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            log(f"membw.c did not compile ({' '.join(cmd)}): {r.stderr.strip()[:500]}")
            return []
    configs = [(t, huge) for t in threads_list for huge in (0, 1)]
    results: dict[tuple[int, int], list[dict]] = {c: [] for c in configs}

    def child_cpu() -> float:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    for sweep in range(sweeps):
        wait_for_idle(max_wait_idle)
        for t, huge in configs:
            for attempt in range(retries + 1):
                b0, c0, t0 = cpu_busy_seconds(), child_cpu(), time.time()
                r = subprocess.run([str(exe), "--mib", str(mib), "--threads", str(t), "--hugepage", str(huge),
                                    "--runs", str(runs)], capture_output=True, text=True)
                foreign = (cpu_busy_seconds() - b0) - (child_cpu() - c0)
                foreign_load = max(0.0, foreign) / max(time.time() - t0, 1e-9)
                if r.returncode != 0 or foreign_load <= max_foreign_load or attempt == retries:
                    break
                log(f"  membw disturbed (other processes {foreign_load:.2f} cores); again")
                wait_for_idle(max_wait_idle)
            if r.returncode != 0:
                log(f"membw failed: {r.stderr.strip()[:300]}")
                continue
            d = json.loads(r.stdout)
            d["foreign_load_cores"] = round(foreign_load, 3)
            results[(t, huge)].append(d)
    out = []
    for t, huge in configs:
        ds = results[(t, huge)]
        if not ds:
            continue
        best = max(ds, key=lambda d: d["best_gb_s"])
        merged = dict(best)
        merged["sweeps"] = len(ds)
        merged["sweep_best_gb_s"] = [d["best_gb_s"] for d in ds]
        merged["mean_gb_s"] = statistics.fmean(x for d in ds for x in d["samples_gb_s"])
        merged["foreign_load_cores"] = max(d["foreign_load_cores"] for d in ds)
        out.append(merged)
        log(f"membw {t} thread(s), {'MADV_HUGEPAGE  ' if huge else 'MADV_NOHUGEPAGE'}: best {merged['best_gb_s']:.1f} GB/s "
            f"(per sweep {', '.join(f'{x:.1f}' for x in merged['sweep_best_gb_s'])}; "
            f"huge pages {best['anon_huge_kib'] // 1024} MiB)")
    return out


# ---------------------------------------------------------------------------
# Machine description
# ---------------------------------------------------------------------------

def machine_info() -> dict:
    info: dict = {"cpu": None, "cores": os.cpu_count(), "kernel": platform.release(), "arch": platform.machine()}
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        for line in cpu.splitlines():
            k, _, v = line.partition(":")
            k = k.strip()
            if k == "model name" and not info["cpu"]:
                info["cpu"] = v.strip()
            elif k in ("cpu family", "model", "stepping") and f"cpu_{k.replace(' ', '_')}" not in info:
                info[f"cpu_{k.replace(' ', '_')}"] = v.strip()
            elif k == "flags" and "flags" not in info:
                fl = v.split()
                info["flags"] = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                                             "avx512_bf16", "avx_vnni", "amx_tile") if f in fl]
        info["physical_cores"] = len({(b.split("physical id")[1].split("\n")[0] if "physical id" in b else "",
                                       b.split("core id")[1].split("\n")[0] if "core id" in b else str(i))
                                      for i, b in enumerate(cpu.split("\n\n")) if b.strip()})
    except OSError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["ram_bytes"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("L2 cache", "L3 cache", "Hypervisor vendor"):
                info[k.strip().lower().replace(" ", "_")] = v.strip()
    except OSError:
        pass
    for name in ("enabled", "defrag"):
        try:
            txt = Path(f"/sys/kernel/mm/transparent_hugepage/{name}").read_text()
            info[f"thp_{name}"] = txt.split("[")[1].split("]")[0]
        except (OSError, IndexError):
            pass
    return info


def git_info() -> dict:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""
    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


# ---------------------------------------------------------------------------
# Summaries and RESULTS.md
# ---------------------------------------------------------------------------

def _variant(r: dict) -> str:
    """A Hearth row's activation bits as shown in the tables (`--activation-bits`)."""
    v = r.get("variant")
    return f" (a{v})" if v else ""


def summarize(model: dict, runs: list[dict], stats: dict) -> list[dict]:
    rows = []
    keys = []
    for r in runs:
        k = (r["engine"], r["file"], r.get("variant"))
        if k not in keys:
            keys.append(k)
    for engine, file, variant in keys:
        mine = [r for r in runs if (r["engine"], r["file"], r.get("variant")) == (engine, file, variant)]
        ok = [r for r in mine if r["ok"]]
        row: dict = {"model": model["name"], "engine": engine, "file": file, "runs": len(mine), "ok_runs": len(ok)}
        if variant:
            row["variant"] = variant
        fpath = REPO / file
        row["file_bytes"] = fpath.stat().st_size if fpath.is_file() else None
        row["bits_per_weight"] = row["file_bytes"] * 8 / stats["params"] if row["file_bytes"] else None
        if not ok:
            row["error"] = mine[-1].get("error") if mine else "not run"
            rows.append(row)
            continue
        for test in ("pp", "tg"):
            samples = [s for r in ok for s in ((r["result"].get(test) or {}).get("samples") or [])]
            if samples:
                m, sd = mean_sd(samples)
                row[test] = {"tokens_per_second": m, "stddev": sd, "n": len(samples),
                             "round_means": [(r["result"].get(test) or {}).get("tokens_per_second") for r in ok]}
        row["peak_rss_bytes"] = max(r["maxrss_bytes"] for r in ok)
        row["harness_maxrss_bytes"] = max((r.get("harness_maxrss_bytes") or 0) for r in ok) or None
        row["max_foreign_load_cores"] = max(r.get("foreign_load_cores", 0.0) for r in ok)
        row["discarded_attempts"] = sum(len(r.get("discarded_attempts") or []) for r in mine)
        row["engine_peak_rss_bytes"] = max((r["result"].get("peak_rss_bytes") or 0) for r in ok) or None
        row["load_seconds"] = statistics.fmean(r["result"].get("load_seconds") or 0.0 for r in ok)
        if engine == "hearth":
            outcomes = sorted({r["result"].get("repack_cache") or "?" for r in ok})
            row["repack_cache"] = ",".join(outcomes)
        res0 = ok[0]["result"]
        g = stats["gguf"].get(file)
        if g:
            # Both engines, same file: every tensor is streamed once per token, except an untied
            # embedding table, of which one row is gathered (gguf_stats).
            row["weight_bytes_per_token"] = g["weight_bytes_per_token"]
            row["weight_bytes_source"] = ("GGUF tensor bytes (token_embd tied to the output, counted)"
                                          if g["tied_embeddings"] else "GGUF tensor bytes minus token_embd")
        if engine == "llama.cpp":
            row["rss_after_import_bytes"] = res0.get("rss_after_import_bytes")
            row["buffers_mib"] = res0.get("buffers_mib")
        else:
            wb = res0.get("weight_bytes_per_token")
            row["hearth_weight_bytes_per_token"] = wb if wb else res0.get("model_bytes")
            if not g:   # Hearth's own file (.hqf): its own account
                row["weight_bytes_per_token"] = row["hearth_weight_bytes_per_token"]
                row["weight_bytes_source"] = "hearth weight_bytes_per_token" if wb else "hearth model_bytes"
            for k in ("kernel", "weight_types", "prefill_path", "kv_cache_bytes", "parameters"):
                if k in res0:
                    row[k] = res0[k]
        if "tg" in row and row.get("weight_bytes_per_token"):
            row["decode_gb_s"] = row["weight_bytes_per_token"] * row["tg"]["tokens_per_second"] / 1e9
        rows.append(row)
    base = next((r for r in rows if r["engine"] == "llama.cpp" and r.get("ok_runs")), None)
    for r in rows:
        if base is None or r is base:
            continue
        for test in ("pp", "tg"):
            if test in r and test in base:
                r[f"{test}_ratio"] = r[test]["tokens_per_second"] / base[test]["tokens_per_second"]
        if r.get("load_seconds") and base.get("load_seconds"):
            r["load_ratio"] = r["load_seconds"] / base["load_seconds"]
        if r.get("peak_rss_bytes") and base.get("peak_rss_bytes"):
            r["rss_ratio"] = r["peak_rss_bytes"] / base["peak_rss_bytes"]
    return rows


def fmt_ts(d: dict | None) -> str:
    return f"{d['tokens_per_second']:.2f} ± {d['stddev']:.2f}" if d else "—"


def fmt_gib(b) -> str:
    return f"{b / 2**30:.2f} GiB" if b else "—"


def membw_ref_gb_s(run: dict) -> float | None:
    """The figure decode bandwidth is divided by: membw's best pass at the
    run's thread count (2 by default), over both huge-page settings, measured
    in the same run."""
    t = run["settings"]["threads"]
    vals = [d["best_gb_s"] for d in run.get("membw") or [] if d["threads"] == t]
    return max(vals) if vals else None


def add_bandwidth_shares(run: dict) -> None:
    """Each tg row's decode bandwidth (weights read per token × tg t/s) as a
    share of membw_ref_gb_s."""
    ref = membw_ref_gb_s(run)
    run["settings"]["membw_ref_gb_s"] = ref
    for mo in run["models"]:
        for r in mo["summary"]:
            r.pop("membw_share", None)
            if r.get("decode_gb_s") and ref:
                r["membw_share"] = r["decode_gb_s"] / ref


def _ratio(r: dict, k: str) -> str:
    if r.get(k) is not None:
        return f"{r[k]:.2f}×"
    return "1" if r["engine"] == "llama.cpp" and r.get("ok_runs") else "—"


def _seconds(x) -> str:
    return f"{x:.2f} s" if isinstance(x, (int, float)) else "—"


def _first_load(model: dict) -> str:
    f = model.get("hearth_first_load")
    if not f:
        return "—"
    if not f.get("ok"):
        return "failed"
    return f"{_seconds(f.get('load_seconds'))} ({f.get('repack_cache') or '?'})"


def _share(r: dict) -> str:
    return f"{100 * r['membw_share']:.0f}%" if r.get("membw_share") else "—"


def _types(g: dict) -> str:
    counts = g.get("tensor_count_by_type") or {}
    return ", ".join(f"{k} ×{counts[k]} {v / 1e9:.2f} GB" if k in counts else f"{k} {v / 1e9:.2f} GB"
                     for k, v in sorted(g["tensor_bytes_by_type"].items()))


def _hearth_types(wt) -> str:
    if isinstance(wt, dict):
        return ", ".join(f"{k} {v / 1e9:.2f} GB" if isinstance(v, (int, float)) else f"{k} {v}"
                         for k, v in sorted(wt.items()))
    return str(wt)


def write_results_md(run: dict) -> str:
    m = run["machine"]
    s = run["settings"]
    git = run["git"]
    ref = s.get("membw_ref_gb_s") or membw_ref_gb_s(run)
    pp, tg = f"pp{s['prompt']}", f"tg{s['gen']}"
    L = []
    L.append("# Benchmarks: Hearth vs llama.cpp (CPU)")
    L.append("")
    L.append("Written by `benchmarks/run.sh` (see [README.md](README.md)); every run rewrites this part, down to "
             "the end-of-generated marker, and keeps its raw numbers in `benchmarks/work/last-run.json`. One table "
             "per model file (model × quant type), both engines reading the same GGUF; the entries are `MODELS` in "
             "`benchmarks/bench.py`.")
    L.append("")
    L.append("## Run")
    L.append("")
    L.append(f"- Date: {run['date_utc']}")
    L.append(f"- Repo commit: `{(git['commit'] or 'unknown')[:12]}`{' (work tree had uncommitted changes)' if git['dirty'] else ''}")
    L.append(f"- CPU: {m.get('cpu')} (family {m.get('cpu_cpu_family')}, model {m.get('cpu_model')}), "
             f"{m.get('cores')} cores; L2 {m.get('l2_cache', '?')}, L3 {m.get('l3_cache', '?')}; "
             f"{', '.join(m.get('flags', []))}"
             + (f"; hypervisor {m['hypervisor_vendor']}" if m.get("hypervisor_vendor") else ""))
    L.append(f"- RAM: {m.get('ram_bytes', 0) / 2**30:.1f} GiB; kernel {m.get('kernel')}; transparent huge pages: "
             f"{m.get('thp_enabled', '?')} (defrag {m.get('thp_defrag', '?')})")
    lc = run["llama_cpp"]
    L.append(f"- llama.cpp: llama-cpp-python {lc.get('version')} built from its sdist with default CMake flags "
             f"(native CPU); `{lc.get('system_info') or ''}`")
    h = run["hearth"]
    L.append(f"- Hearth: {'`' + h['binary'] + '`' if h.get('binary') else 'not found'}"
             + (f" — {h['note']}" if h.get("note") else ""))
    L.append(f"- Models: {', '.join(s.get('models') or [mo['name'] for mo in run['models']])}"
             + (f" (`--models {s['models_filter']}`)" if s.get("models_filter") else " (all)"))
    L.append(f"- Method: llama-bench semantics. {pp} = {s['prompt']} random token ids decoded from an empty "
             f"KV cache in batches of {s['batch']} (n_ubatch {s['batch']}); {tg} = {s['gen']} sequential "
             f"single-token decodes from an empty cache. Warm-up (full prompt for pp, one token for tg), then "
             f"{s['reps']} repetitions; tokens/s mean ± sample sd over all repetitions of {s['rounds']} rounds. "
             f"Threads = {s['threads']}. Model by model, engines alternate round by round "
             f"({' → '.join(s['order'])}; Hearth reads its .hqf, where there is one, then the GGUF), each bench in "
             f"a fresh process; each model's files were read once beforehand so both start from a warm page cache. "
             f"Peak RSS = the bench process's ru_maxrss (max over rounds)."
             + (f" Hearth rows are marked with their `--activation-bits` (aoutliers: the default since 2026-11-27, "
                f"8-bit activations for the prompt's layer products where the CPU has AVX-512 VNNI with each token's "
                f"8 largest activations per product in f32; abalanced: the same without the f32 picks, q/k/v at 16 "
                f"bits; amixed: no picks, q/k/v at 8; a16: 16-bit activations everywhere, the exact path; a8: 8-bit "
                f"everywhere, as llama.cpp; docs/ACCURACY.md for what each costs)."
                if s.get("hearth_activation_bits") else ""))
    L.append(f"- Decode bandwidth share (*of membw*): weights read per token × {tg} t/s ÷ "
             + (f"{ref:.1f} GB/s, " if ref else "")
             + f"the best {s['threads']}-thread streaming-read figure measured by membw in this run (below). "
             "Weights read per token = the GGUF's tensor bytes, without `token_embd` when the model has a separate "
             "`output.weight` (one row of the embedding table is gathered per token) and with it when the two are "
             "tied (it is then the output matrix, read whole); the same figure for both engines reading that "
             "GGUF. For Hearth's `.hqf` it is the `weight_bytes_per_token` Hearth reports.")
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append(f"Hearth ÷ llama.cpp on the same weights (> 1 = Hearth faster; for RSS, > 1 = Hearth uses more), and "
             f"each engine's decode bandwidth as a share of membw's {s['threads']}-thread figure.")
    L.append("")
    L.append(f"| model / type | Hearth file | {pp} ×llama.cpp | {tg} ×llama.cpp | peak RSS ×llama.cpp | "
             f"load ×llama.cpp | load Hearth / llama.cpp | Hearth first load | Hearth of membw | llama.cpp of membw |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for model in run["models"]:
        base = next((r for r in model["summary"] if r["engine"] == "llama.cpp"), None)
        hrows = [r for r in model["summary"] if r["engine"] == "hearth"]
        base_load = _seconds(base.get("load_seconds")) if base else "—"
        if not hrows:
            L.append(f"| {model['name']} | — | — | — | — | — | — / {base_load} | — | — | {_share(base) if base else '—'} |")
        for r in hrows:
            first = _first_load(model) if r["file"] == model.get("gguf") else "—"
            if r.get("ok_runs", 0) == 0:
                L.append(f"| {model['name']} | `{Path(r['file']).name}`{_variant(r)} | not run | not run | — | — | "
                         f"— / {base_load} | {first} | — | {_share(base) if base else '—'} |")
                continue
            L.append(f"| {model['name']} | `{Path(r['file']).name}`{_variant(r)} | {_ratio(r, 'pp_ratio')} | "
                     f"{_ratio(r, 'tg_ratio')} | {_ratio(r, 'rss_ratio')} | {_ratio(r, 'load_ratio')} | "
                     f"{_seconds(r.get('load_seconds'))} / {base_load} | {first} | {_share(r)} | "
                     f"{_share(base) if base else '—'} |")
    L.append("")
    L.append("*load*: seconds from the start of the model load to a model ready to run (Hearth: `load_seconds` of "
             "`hearth bench`, its repack cache warm; llama.cpp: `llama_model_load_from_file` + "
             "`llama_init_from_model`, mmap), mean over the rounds. *Hearth first load*: the same file loaded once "
             "more before the rounds with Hearth's repack cache emptied (it rearranges the weights and writes "
             "the cache the rounds then map; docs/REPACK-CACHE.md), and what the cache did.")
    L.append("")
    L.append("## Results")
    L.append("")
    for model in run["models"]:
        st = model["stats"]
        L.append(f"### {model['name']}: {model.get('title', model['name'])}")
        L.append("")
        hdr = (f"| engine | file | bits/weight | {pp} t/s | {tg} t/s | pp ×llama.cpp | tg ×llama.cpp | peak RSS | "
               f"RSS ×llama.cpp | load | weights read/token | decode bandwidth | of membw |")
        L.append(hdr)
        L.append("|" + "---|" * (hdr.count("|") - 1))
        if not model["summary"]:
            L.append("| — | `" + model.get("gguf", "") + "` |" + " not run |" * 11)
        for r in model["summary"]:
            bpw = f"{r['bits_per_weight']:.2f}" if r.get("bits_per_weight") else "—"
            if r.get("ok_runs", 0) == 0:
                what = "failed" if r.get("runs") else "not run"
                L.append(f"| {r['engine']}{_variant(r)} | `{r['file']}` | {bpw} | {what} | {what} |" + " — |" * 8)
                continue
            wb = r.get("weight_bytes_per_token")
            dec = r.get("decode_gb_s")
            load = f"{r['load_seconds']:.2f} s" if r.get("load_seconds") is not None else "—"
            if r.get("repack_cache"):
                load += f" (cache: {r['repack_cache']})"
            L.append(f"| {r['engine']}{_variant(r)} | `{r['file']}` | {bpw} | {fmt_ts(r.get('pp'))} | "
                     f"{fmt_ts(r.get('tg'))} | {_ratio(r, 'pp_ratio')} | {_ratio(r, 'tg_ratio')} | "
                     f"{fmt_gib(r.get('peak_rss_bytes'))} | {_ratio(r, 'rss_ratio')} | {load} | "
                     f"{f'{wb / 1e9:.3f} GB' if wb else '—'} | {f'{dec:.1f} GB/s' if dec else '—'} | {_share(r)} |")
        L.append("")
        notes = []
        params = st.get("params")
        notes.append(f"- {model['description']}"
                     + (f"; {params / 1e9:.3f} B parameters (bits/weight = file bytes × 8 / this count)" if params
                        else "") + ".")
        for f, g in st["gguf"].items():
            made = (f"made by llama.cpp's convert_hf_to_gguf.py (F16) from `{model.get('checkpoint')}` + "
                    f"llama_model_quantize ({model.get('llama_ftype')}, default params)"
                    if model.get("made_here") else "the published file, as fetched")
            notes.append(f"- `{f}`: {g['file_bytes'] / 1e9:.3f} GB file, {g['tensor_bytes'] / 1e9:.3f} GB tensor "
                         f"data in {g.get('n_tensors', '?')} tensors, per type {_types(g)}; "
                         f"`token_embd` {g['token_embd_bytes'] / 1e9:.3f} GB, "
                         f"{'tied to the output (read whole every token)' if g.get('tied_embeddings') else 'untied (one row read per token)'}"
                         f"; {made}.")
        for r in model["summary"]:
            if r.get("discarded_attempts"):
                notes.append(f"- {r['engine']} `{r['file']}`: {r['discarded_attempts']} attempt(s) disturbed by other "
                             f"processes were discarded and run again.")
            if r.get("max_foreign_load_cores", 0.0) > 0.1:
                notes.append(f"- ⚠ {r['engine']} `{r['file']}`: other processes used up to "
                             f"{r['max_foreign_load_cores']:.2f} cores during its runs; its numbers are disturbed.")
            if r.get("harness_maxrss_bytes") and r.get("peak_rss_bytes") and \
                    r["peak_rss_bytes"] <= r["harness_maxrss_bytes"] * 1.02:
                notes.append(f"- ⚠ {r['engine']} `{r['file']}`: its peak RSS does not exceed the harness's own "
                             f"({r['harness_maxrss_bytes'] / 2**20:.0f} MiB), which a child inherits as the floor "
                             f"of its ru_maxrss; its true peak may be lower.")
            if r.get("ok_runs", 0) == 0 and r.get("error"):
                err = " / ".join(x.strip() for x in r["error"].splitlines() if x.strip())
                notes.append(f"- {r['engine']} `{r['file']}` {'failed' if r.get('runs') else 'not run'}: {err[:600]}")
            elif r["engine"] == "llama.cpp" and r.get("rss_after_import_bytes"):
                bufs = r.get("buffers_mib") or {}
                btxt = ", ".join(f"{k} {v:.0f} MiB" for k, v in bufs.items())
                notes.append(f"- llama.cpp peak RSS includes the Python interpreter + llama_cpp import "
                             f"({r['rss_after_import_bytes'] / 2**20:.0f} MiB before the model was loaded)"
                             + (f"; its buffers: {btxt}" if btxt else "")
                             + (" (the mapped GGUF pages read while repacking stay resident next to the repacked "
                                "copy)" if any("REPACK" in k for k in bufs) else "") + ".")
            elif r["engine"] == "hearth" and r.get("ok_runs"):
                hw = r.get("hearth_weight_bytes_per_token")
                notes.append(f"- hearth{_variant(r)} `{r['file']}`: kernel {r.get('kernel')}, prefill path {r.get('prefill_path')}"
                             + (f", weight types {_hearth_types(r['weight_types'])}" if r.get("weight_types") else "")
                             + (f"; reports {hw / 1e9:.3f} GB of weights per token" if hw else "")
                             + f" (the table uses {r.get('weight_bytes_source')}).")
        for skipped in model.get("skipped", []):
            notes.append(f"- {skipped}")
        L.extend(notes)
        L.append("")
    L.append("## Streaming-read bandwidth (`benchmarks/membw.c`)")
    L.append("")
    if run["membw"]:
        mb = run["membw"][0]["bytes"] / 2**30
        d0 = run["membw"][0]
        L.append(f"Sum of a {mb:.0f} GiB buffer written first, `cc -O3 -march=native`; {d0.get('sweeps', 1)} sweeps "
                 f"over the configurations, interleaved, {d0['runs']} timed passes each; best pass overall, mean of "
                 f"all passes, and the best of each sweep (1 GB = 1e9 bytes). This VM's bandwidth varies with its "
                 f"host's load: compare the sweeps."
                 + (f" The *of membw* columns divide by {ref:.1f} GB/s, the best {s['threads']}-thread pass." if ref
                    else ""))
        L.append("")
        L.append("| threads | madvise | huge pages in buffer | best GB/s | mean GB/s | best per sweep |")
        L.append("|---|---|---|---|---|---|")
        for d in run["membw"]:
            per = ", ".join(f"{x:.1f}" for x in d.get("sweep_best_gb_s", [d["best_gb_s"]]))
            L.append(f"| {d['threads']} | {'MADV_HUGEPAGE' if d['hugepage'] else 'MADV_NOHUGEPAGE'} | "
                     f"{d['anon_huge_kib'] / 1024:.0f} MiB | {d['best_gb_s']:.1f} | {d['mean_gb_s']:.1f} | {per} |")
    else:
        L.append("Not measured (membw.c did not build or was skipped), so there is no *of membw* share.")
    L.append("")
    L.append("## Timings")
    L.append("")
    L.append(", ".join(f"{k.replace('_s', '')} {v:.0f} s" for k, v in run["timings"].items()) + ".")
    L.append("")
    generated = "\n".join(L)
    kept = kept_sections(RESULTS_MD)
    text = GEN_BEGIN + "\n" + generated + GEN_END + "\n" + ("\n" + kept if kept else "")
    RESULTS_MD.write_text(text)
    # The README's picture follows the summary it was drawn from.
    subprocess.run([sys.executable, str(HERE / "plot_summary.py")], check=False)
    return text


GEN_BEGIN = ("<!-- generated: benchmarks/run.sh rewrites everything down to the end-of-generated marker; "
             "hand-written sections below that marker are kept -->")
GEN_END = "<!-- end-of-generated -->"


def kept_sections(path: Path) -> str:
    """What an existing RESULTS.md has besides the generated block: text after
    the end marker (or, in a file written before the markers existed, every
    section after the generated '## Timings' one)."""
    if not path.is_file():
        return ""
    old = path.read_text()
    if GEN_END in old:
        return old.split(GEN_END, 1)[1].lstrip("\n")
    lines = old.splitlines(keepends=True)
    for k, line in enumerate(lines):
        if line.startswith("## Timings"):
            for j in range(k + 1, len(lines)):
                if lines[j].startswith("## "):
                    return "".join(lines[j:])
            return ""
    return ""


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def warm_page_cache(paths: list[Path]) -> None:
    for p in paths:
        if p and p.is_file():
            with open(p, "rb", buffering=0) as f:
                while f.read(1 << 24):
                    pass


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", "-t", type=int, default=2, help="threads for both engines (default 2)")
    ap.add_argument("--reps", "-r", type=int, default=5, help="repetitions per test (default 5)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds per engine (default 2)")
    ap.add_argument("--prompt", "-p", type=int, default=512, help="pp test tokens (default 512)")
    ap.add_argument("--gen", "-n", type=int, default=128, help="tg test tokens (default 128)")
    ap.add_argument("--batch", "-b", type=int, default=512, help="n_batch = n_ubatch for llama.cpp (default 512)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds before one bench process is killed")
    ap.add_argument("--max-wait-idle", type=float, default=900,
                    help="before each bench, wait up to this many seconds for other processes to leave the CPU")
    ap.add_argument("--max-foreign-load", type=float, default=0.1,
                    help="a bench during which other processes used more cores than this is run again")
    ap.add_argument("--retries", type=int, default=3, help="how often a disturbed bench is run again")
    ap.add_argument("--skip-hearth", action="store_true", help="only llama.cpp")
    ap.add_argument("--hearth-activation-bits", default="outliers,16", metavar="LIST",
                    help="Hearth's --activation-bits values to bench, each its own row (default outliers,16: the "
                         "default path, 8-bit prompt products with outlier channels in f32, and the exact path)")
    ap.add_argument("--skip-llama", action="store_true", help="only Hearth")
    ap.add_argument("--skip-membw", action="store_true", help="skip the bandwidth probe")
    ap.add_argument("--membw-mib", type=int, default=1024, help="bandwidth probe buffer (MiB, default 1024)")
    ap.add_argument("--membw-runs", type=int, default=7, help="timed passes per configuration and sweep")
    ap.add_argument("--membw-sweeps", type=int, default=3, help="interleaved sweeps over the configurations")
    ap.add_argument("--models", metavar="LIST",
                    help="comma-separated entries to run, by name or family: "
                         + ", ".join(m["name"] for m in MODELS) + "; families "
                         + ", ".join(sorted({m["family"] for m in MODELS}))
                         + " (e.g. --models gemma,phi3-q4_k_m; default: all). Only their files are made and "
                         "benched, and RESULTS.md and work/last-run.json are rewritten with only their tables "
                         "(`git checkout benchmarks/RESULTS.md` brings back the committed full run)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="only make and check the selected files (checkpoint, GGUFs, .hqf), print their tensor "
                         "types and sizes, and stop: no bandwidth probe, no benches, RESULTS.md untouched")
    ap.add_argument("--keep-f16", action="store_true",
                    help="keep the intermediate F16 GGUF (7.6 GB) after quantizing (default: delete it once "
                         "every missing Phi-3 GGUF of the run is made from it; it is made again if a later run "
                         "needs another)")
    ap.add_argument("--hearth-bin", default=os.environ.get("HEARTH_BIN"), help="hearth binary (default: $HEARTH_BIN, "
                    "else .build/release/hearth, else `swift build -c release --show-bin-path`/hearth)")
    ap.add_argument("--report-only", action="store_true",
                    help="only rewrite RESULTS.md from benchmarks/work/last-run.json (after a format change)")
    a = ap.parse_args(argv)

    if a.report_only:
        run = json.loads(LAST_RUN.read_text())
        if run.get("schema") != SCHEMA:
            raise SystemExit(f"{LAST_RUN} has schema {run.get('schema')}, this bench.py writes {SCHEMA}: "
                             "run the benchmark again")
        by_name = {m["name"]: m for m in MODELS}
        for mo in run["models"]:
            if mo["name"] in by_name:
                # Rows that never ran (no Hearth binary) are not in the runs: keep them as they are.
                keep = [r for r in mo["summary"] if r.get("ok_runs", 0) == 0 and r["engine"] == "hearth"
                        and not any(x["engine"] == "hearth" for x in mo["runs"])]
                mo["summary"] = summarize(by_name[mo["name"]], mo["runs"], mo["stats"]) + keep
        add_bandwidth_shares(run)
        write_results_md(run)
        print(RESULTS_MD.read_text())
        return 0

    t_start = time.time()
    WORK.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}

    import llama_cpp

    llama_info = {"version": llama_cpp.__version__}
    try:
        llama_info["system_info"] = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
    except Exception:  # noqa: BLE001
        pass

    # Hearth binary and capabilities.
    hearth: dict = {"binary": None, "bench": False, "note": ""}
    hbin = None
    if a.skip_hearth:
        hearth["note"] = "skipped (--skip-hearth)"
    else:
        hbin, why = find_hearth(a.hearth_bin)
        os.environ.setdefault("HEARTH_REPACK_CACHE_DIR", str(REPACK_CACHE))
        if hbin is None:
            hearth["note"] = f"not run: {why}"
        else:
            hearth["binary"] = str(hbin.relative_to(REPO)) if hbin.is_relative_to(REPO) else str(hbin)
            hearth["bench"] = hearth_has(hbin, "bench")
            if not hearth["bench"]:
                hearth["note"] = "not run: this binary has no `bench` subcommand"
    if hearth["note"]:
        log(f"Hearth {hearth['note']}")

    # Files: each selected entry's GGUF (made once from its checkpoint, or given), checked; Hearth's .hqf.
    models = select_models(a.models)
    log(f"models: {', '.join(m['name'] for m in models)}")
    t0 = time.time()
    ensure_ggufs(models, a.keep_f16, timings)
    prepared = []
    for model in models:
        gguf = REPO / model["gguf"]
        stats: dict = {"gguf": {}}
        skipped: list[str] = []
        missing = ""
        if gguf.is_file():
            st = gguf_stats(gguf)
            problem = check_gguf(model, st)
            if problem:
                raise SystemExit(f"{gguf}: {problem}; delete it and run again to remake it")
            stats["gguf"][model["gguf"]] = st
            stats["params"] = parameter_count(model["source"]["shape"]) if "source" in model else st["tensor_elements"]
            counts = ", ".join(f"{k} {v}" for k, v in sorted(st["tensor_count_by_type"].items()))
            log(f"GGUF ready: {model['gguf']} ({st['file_bytes'] / 1e9:.2f} GB; tensors per type: {counts})")
        else:
            missing = (f"`{model['gguf']}` is missing"
                       + (" (scripts/fetch-default-model.sh fetches it)" if "source" not in model else ""))
            stats["params"] = parameter_count(model["source"]["shape"]) if "source" in model else None
            skipped.append(f"not run: {missing}")
            log(f"[{model['name']}] {missing}; its rows are not run")
        hqf = None
        if model.get("hqf") and hbin is not None and hearth["bench"]:
            hqf, why = WORK / model["hqf"], ""
            if not hqf.is_file():
                hqf, why = ensure_hqf(hbin, model, ensure_checkpoint(model["source"]), timings)
            if hqf is None:
                skipped.append(f"hearth `.hqf` rows not run: {why}")
                log(skipped[-1])
        prepared.append({"model": model, "gguf": gguf if gguf.is_file() else None, "hqf": hqf, "stats": stats,
                         "skipped": skipped})
    timings["files_s"] = time.time() - t0
    if a.prepare_only:
        log(f"--prepare-only: files ready in {timings['files_s']:.0f} s")
        for p in prepared:
            for f, st in p["stats"]["gguf"].items():
                counts = ", ".join(f"{k} {v}" for k, v in sorted(st["tensor_count_by_type"].items()))
                print(f"{p['model']['name']}: {f} {st['file_bytes'] / 1e9:.3f} GB, {st['n_tensors']} tensors "
                      f"({counts}), {st['weight_bytes_per_token'] / 1e9:.3f} GB read per token")
            if p["hqf"]:
                print(f"{p['model']['name']}: {p['hqf'].relative_to(REPO)} {p['hqf'].stat().st_size / 1e9:.3f} GB")
            for sk in p["skipped"]:
                print(f"{p['model']['name']}: {sk}")
        return 0

    # Bandwidth probe (before the benches; nothing else of ours is running).
    membw = []
    if not a.skip_membw:
        t0 = time.time()
        membw = run_membw(sorted({1, 2, a.threads}), a.membw_mib, a.membw_runs, a.max_wait_idle,
                          a.max_foreign_load, a.retries, a.membw_sweeps)
        timings["membw_s"] = time.time() - t0

    # Alternating benches: per entry, round by round llama.cpp → Hearth .hqf (if any) → Hearth GGUF.
    t0 = time.time()
    order = []
    if not a.skip_llama:
        order.append("llama.cpp")
    if hbin is not None and hearth["bench"]:
        order.append("hearth")
    models_out = []
    for p in prepared:
        model = p["model"]
        runs: list[dict] = []
        if p["gguf"] is not None or p["hqf"] is not None:
            warm_page_cache([p["gguf"], p["hqf"]])
        hearth_gguf_ok = True
        first_load = None
        if "hearth" in order and p["gguf"] is not None:
            # Hearth's first load of the file: its repack cache emptied first, so the load
            # rearranges the weights and writes the cache the rounds below then map.
            clear_repack_cache()
            log(f"[{model['name']}] hearth first load of {p['gguf'].name} (repack cache emptied)")
            e = measured(lambda: bench_hearth(hbin, p["gguf"], a, f"{model['name']}-first-load", "16", (16, 1, 1)),
                         a, "this bench")
            res = e.get("result") or {}
            first_load = {"ok": e["ok"], "load_seconds": res.get("load_seconds"), "repack_cache": res.get("repack_cache"),
                          "wall_seconds": e["wall_seconds"], "maxrss_bytes": e["maxrss_bytes"], "log": e["log"],
                          "error": e.get("error")}
            if not e["ok"]:
                hearth_gguf_ok = False
        for rnd in range(1, a.rounds + 1):
            if "llama.cpp" in order and p["gguf"] is not None:
                log(f"[{model['name']}] round {rnd}/{a.rounds}: llama.cpp {p['gguf'].name}")
                e = measured(lambda: bench_llama(p["gguf"], a, f"{model['name']}-r{rnd}"), a, "this bench")
                e["round"] = rnd
                runs.append(e)
            if "hearth" in order:
                targets = []
                if p["hqf"] is not None:
                    targets.append(p["hqf"])
                if hearth_gguf_ok and p["gguf"] is not None:
                    targets.append(p["gguf"])
                for f in targets:
                    for bits in a.hearth_activation_bits.split(","):
                        log(f"[{model['name']}] round {rnd}/{a.rounds}: hearth {f.name} --activation-bits {bits}")
                        e = measured(lambda: bench_hearth(hbin, f, a, f"{model['name']}-{f.suffix[1:]}-a{bits}-r{rnd}", bits),
                                     a, "this bench")
                        e["round"] = rnd
                        runs.append(e)
                        if f == p["gguf"] and not e["ok"]:
                            hearth_gguf_ok = False   # cannot read this file: the error is reported, not retried
                            break
        summary = summarize(model, runs, p["stats"])
        if hbin is None or not hearth["bench"]:
            files = []
            if model.get("hqf"):
                files.append(f"benchmarks/work/{model['hqf']}")
            files.append(model["gguf"])
            for f in files:
                summary.append({"model": model["name"], "engine": "hearth", "file": f, "ok_runs": 0,
                                "bits_per_weight": None, "error": hearth["note"]})
        models_out.append({"name": model["name"], "title": model["title"], "description": model["description"],
                           "llama_ftype": model.get("llama_ftype"), "gguf": model["gguf"],
                           "made_here": "source" in model,
                           "checkpoint": f"benchmarks/work/{model['source']['checkpoint']}" if "source" in model else None,
                           "stats": p["stats"], "runs": runs, "summary": summary, "skipped": p["skipped"],
                           "hearth_first_load": first_load})
    timings["bench_s"] = time.time() - t0
    timings["waiting_for_idle_s"] = IDLE_WAIT["seconds"]
    timings["total_s"] = time.time() - t_start

    run = {
        "schema": SCHEMA,
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git": git_info(),
        "machine": machine_info(),
        "llama_cpp": llama_info,
        "hearth": hearth,
        "settings": {"threads": a.threads, "reps": a.reps, "rounds": a.rounds, "prompt": a.prompt, "gen": a.gen,
                     "hearth_activation_bits": a.hearth_activation_bits,
                     "batch": a.batch, "order": order, "models": [m["name"] for m in models],
                     "models_filter": a.models},
        "membw": membw,
        "models": models_out,
        "timings": {k: round(v, 1) for k, v in timings.items()},
    }
    add_bandwidth_shares(run)
    write_json(LAST_RUN, run)
    write_results_md(run)
    log(f"wrote {RESULTS_MD.relative_to(REPO)} and {LAST_RUN.relative_to(REPO)} in {timings['total_s']:.0f} s")
    print(RESULTS_MD.read_text())
    return 0


def log_entry(e: dict) -> None:
    if not e["ok"]:
        log(f"  failed: {e.get('error', '')[:400]}")
        return
    r = e["result"]
    parts = [f"{t} {r[t]['tokens_per_second']:.2f} ± {r[t]['stddev']:.2f} t/s" for t in ("pp", "tg")
             if isinstance(r.get(t), dict)]
    log(f"  {', '.join(parts)}; peak RSS {e['maxrss_bytes'] / 2**30:.2f} GiB; {e['wall_seconds']:.0f} s; "
        f"other processes {e['foreign_load_cores']:.2f} cores")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_llama-bench":
        cp = argparse.ArgumentParser()
        cp.add_argument("--model", required=True)
        cp.add_argument("-p", dest="prompt", type=int, default=512)
        cp.add_argument("-n", dest="gen", type=int, default=128)
        cp.add_argument("-r", dest="reps", type=int, default=5)
        cp.add_argument("-t", dest="threads", type=int, default=2)
        cp.add_argument("-b", dest="batch", type=int, default=512)
        sys.exit(child_llama_bench(cp.parse_args(sys.argv[2:])))
    if len(sys.argv) > 1 and sys.argv[1] == "_gguf-stats":
        print(json.dumps(gguf_stats_here(Path(sys.argv[2]))))
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "_quantize":
        sys.exit(child_quantize(*sys.argv[2:5]))
    sys.exit(main(sys.argv[1:]))
