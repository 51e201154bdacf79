"""The model files benchmarked: each entry of MODELS is one GGUF both engines read and one table in RESULTS.md."""
from __future__ import annotations



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
