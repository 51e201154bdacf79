"""The random-weight checkpoints (HF layout, F16 safetensors, SentencePiece tokenizer) the GGUFs are made from."""
from __future__ import annotations

import json
import math
import shutil
import struct
import time
from pathlib import Path

from .common import WORK, log
from .models import PHI3_ADDED_TOKENS


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
