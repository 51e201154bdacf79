#!/usr/bin/env python3
"""Generate Tests/Fixtures/gemma4-tiny: a random-weight Gemma 4 text model (Gemma4ForCausalLM,
model_type gemma4_text) shaped like google/gemma-4-E2B's text decoder, with transformers' float32
logits and greedy continuations.

Run BY HAND, never in CI; the outputs are committed. It needs a venv with torch and transformers
5.x that has models/gemma4 (here: torch 2.13 cpu, transformers 5.23.0), and
scripts/make_family_fixtures.py beside it (its prompts, randomisation, reference writer and checks
are reused, so the fixture has exactly the layout of the other family fixtures):

    <venv>/bin/python scripts/make_gemma4_fixtures.py            # write + verify
    <venv>/bin/python scripts/make_gemma4_fixtures.py --verify   # re-check the committed files

Nothing is downloaded.

Where the shape comes from. E2B's published text_config (google/gemma-4-E2B-it, config.json; the
hub is not reachable here, the values are the ones several public projects pin in tests of their
E2B config parsers, and agree with transformers' Gemma4TextConfig and llama.cpp's converter):
hidden 1536, intermediate 6144 (doubled on KV-sharing layers: use_double_wide_mlp), 35 layers in
a 4 sliding : 1 full pattern (layers 4, 9, ..., 34 full), 8 query heads and 1 KV head, head_dim
256 on sliding layers and global_head_dim 512 on full ones, sliding_window 512, RoPE "default"
theta 1e4 on sliding layers and "proportional" theta 1e6 with partial_rotary_factor 0.25 on full
layers, num_kv_shared_layers 20 (layers 15-34 reuse the keys/values of layer 13, the last
sliding, and 14, the last full layer before them), per-layer embeddings of 256 per layer over
the whole vocabulary (vocab_size_per_layer_input = vocab_size = 262144),
final_logit_softcapping 30, attention_k_eq_v false, tied embeddings, gelu_pytorch_tanh.

gemma4-tiny keeps what changes the arithmetic and shrinks the rest:
  kept:   head_dim 256 / global_head_dim 512, 1 KV head (GQA 4:1 here, 8:1 in E2B), the two RoPE
          kinds and bases with partial rotary 0.25, per-layer input width 256 (one row of
          vocab x layers*256 per token), double-wide MLP on the sharing layers, soft-cap 30, the
          sharing rule (the last N layers reuse the last non-shared layer of their own type),
          tied embeddings, gelu-tanh, eps 1e-6, a layer_scalar per layer (drawn != 1).
  shrunk: 5 layers (sliding, sliding, full | sliding, full): layer 0 produces keys nobody else
          reads, layer 1 (sliding) and 2 (full) store theirs, layers 3 and 4 reuse them;
          hidden 64, intermediate 128, 4 query heads, vocabulary 1024 (phi3-mha's SentencePiece
          files as in gemma3-tiny; prompts are random ids), and the sliding window 8 instead of
          512 so the prompts (9-33 tokens + 16 generated) cross it -- with 512 no fixture
          prompt would ever reach the window and the sliding mask would go untested.
The weights are stored as BF16 (as the released checkpoint; transformers upcasts exactly).
config.json gains "global_head_dim": 512 (the key the released config uses; transformers 5.23
writes the same value as per_layer_config, which it also keeps).

Random weights: make_family_fixtures.randomize (matrices N(0, 0.25), norm weights
1 + 0.1 N(0,1) -- Gemma 4's RMSNorm multiplies by w itself, no 1 + w), then: embedding
N(0, 0.15) (scaled by sqrt(64) = 8 on input), the per-layer embedding table N(0, 1/16) (scaled by
sqrt(256) = 16), q_norm/k_norm weights 0.25 + 0.025 N(0,1) (Gemma 4's attention scale is 1, so
unit-RMS queries and keys of 256-512 dims would give logits of std ~16-22; 0.25 each brings them
to ~1), layer_scalar U(0.5, 1.5). Verification as in make_family_fixtures.verify: reload, cached
greedy == full recompute, and an independent float64 numpy forward pass (numpy_forward_gemma4).
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_family_fixtures as mff  # noqa: E402
from transformers import Gemma4ForCausalLM, Gemma4TextConfig  # noqa: E402

NAME = "gemma4-tiny"
LAYER_TYPES = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"]
HEAD_DIM, GLOBAL_HEAD_DIM, PLE_DIM = 256, 512, 256
SCRIPT_NAME = "scripts/make_gemma4_fixtures.py"


def gemma4_config():
    return Gemma4TextConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=len(LAYER_TYPES), num_attention_heads=4,
        num_key_value_heads=1, head_dim=HEAD_DIM, global_head_dim=GLOBAL_HEAD_DIM, layer_types=list(LAYER_TYPES),
        sliding_window=8, num_kv_shared_layers=2, use_double_wide_mlp=True, hidden_size_per_layer_input=PLE_DIM,
        vocab_size_per_layer_input=mff.VOCAB, final_logit_softcapping=30.0, attention_k_eq_v=False,
        hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0},
        },
        **mff.common_ids(),
    )


@torch.no_grad()
def randomize_gemma4(model, seed, zero_mean_norms=(), embed_std=mff.INIT_STD, first_damped=mff.FIRST_DAMPED_ID):
    mff.randomize(model, seed, zero_mean_norms, embed_std, first_damped)
    gen = torch.Generator().manual_seed(seed + 17)
    m = model.model
    m.embed_tokens_per_layer.weight.copy_(torch.randn(m.embed_tokens_per_layer.weight.shape, generator=gen) / 16)
    for layer in m.layers:
        a = layer.self_attn
        for norm in (a.q_norm, getattr(a, "k_norm", None)):
            if norm is not None:
                norm.weight.copy_(0.25 + 0.025 * torch.randn(norm.weight.shape, generator=gen))
        layer.layer_scalar.copy_(0.5 + torch.rand(1, generator=gen))
    # randomize damped the tied head = the input embedding rows >= first_damped: already done.


def numpy_forward_gemma4(w, cfg, ids):
    """Gemma 4 text, float64, from the description in transformers' modeling_gemma4.py."""
    d, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    n_layers, ple = cfg["num_hidden_layers"], cfg["hidden_size_per_layer_input"]
    eps = cfg["rms_norm_eps"]
    pos = np.arange(len(ids), dtype=np.float64)
    norm = lambda x, name: mff.rms_norm(x, w[name + ".weight"], eps)  # Gemma 4: w, not 1 + w
    mat = lambda x, name: x @ w[name + ".weight"].T
    f32 = lambda v: np.float64(np.float32(v))
    emb = w["model.embed_tokens.weight"]
    x = emb[ids] * f32(math.sqrt(d))
    # Per-layer inputs: (context projection, normed per layer + token's own row) / sqrt(2).
    proj = (mat(x, "model.per_layer_model_projection") * f32(d ** -0.5)).reshape(len(ids), n_layers, ple)
    proj = mff.rms_norm(proj, w["model.per_layer_projection_norm.weight"], eps)
    own = (w["model.embed_tokens_per_layer.weight"][ids] * f32(math.sqrt(ple))).reshape(len(ids), n_layers, ple)
    per_layer = (proj + own) * f32(2.0 ** -0.5)
    # Which layer's keys/values each layer reads: the last N reuse the last non-shared layer of their type.
    first_shared = n_layers - cfg["num_kv_shared_layers"]
    types = cfg["layer_types"]
    source = [L if L < first_shared else max(i for i in range(first_shared) if types[i] == types[L])
              for L in range(n_layers)]
    kv = {}
    for L, kind in enumerate(types):
        p = f"model.layers.{L}."
        full = kind == "full_attention"
        hd = cfg["global_head_dim"] if full else cfg["head_dim"]
        rp = cfg["rope_parameters"][kind]
        if full:  # proportional: the first 25% of the frequencies rotate, the rest are 0 (identity)
            rot = int(rp["partial_rotary_factor"] * hd // 2)
            inv = np.concatenate([1.0 / rp["rope_theta"] ** (np.arange(0, 2 * rot, 2) / hd), np.zeros(hd // 2 - rot)])
        else:
            inv = mff.default_inv_freq(rp["rope_theta"], hd)
        window = None if full else cfg["sliding_window"]
        h = norm(x, p + "input_layernorm")
        q = mff.rms_norm(split(mat(h, p + "self_attn.q_proj"), nh), w[p + "self_attn.q_norm.weight"], eps)
        q = mff.rope_rotate(q, pos, inv)
        if source[L] == L:
            k = mff.rms_norm(split(mat(h, p + "self_attn.k_proj"), nkv), w[p + "self_attn.k_norm.weight"], eps)
            k = mff.rope_rotate(k, pos, inv)
            v = mff.rms_norm(split(mat(h, p + "self_attn.v_proj"), nkv), 1.0, eps)  # v_norm: no scale
            kv[L] = (k, v)
        k, v = kv[source[L]]
        a = mat(mff.merge_heads(mff.attention(q, k, v, 1.0, window)), p + "self_attn.o_proj")  # scale 1
        x = x + norm(a, p + "post_attention_layernorm")
        h = norm(x, p + "pre_feedforward_layernorm")
        m = mat(mff.gelu_tanh(mat(h, p + "mlp.gate_proj")) * mat(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        x = x + norm(m, p + "post_feedforward_layernorm")
        g = mff.gelu_tanh(mat(x, p + "per_layer_input_gate")) * per_layer[:, L, :]
        x = x + norm(mat(g, p + "per_layer_projection"), p + "post_per_layer_input_norm")
        x = x * w[p + "layer_scalar"]
    x = norm(x, "model.norm")
    logits = x @ emb.T  # tied
    cap = cfg["final_logit_softcapping"]
    return np.tanh(logits / cap) * cap


def split(x, n):
    return mff.split_heads(x, n)


def check_gemma4_internals(name, model):
    cfg = model.config
    assert list(cfg.layer_types) == LAYER_TYPES
    assert cfg.kv_sharing_modes == [None, "store", "store", "reuse", "reuse"], cfg.kv_sharing_modes
    for L, layer in enumerate(model.model.layers):
        a = layer.self_attn
        full = LAYER_TYPES[L] == "full_attention"
        assert a.head_dim == (GLOBAL_HEAD_DIM if full else HEAD_DIM) and a.scaling == 1.0
        assert a.sliding_window == (None if full else 8)
        assert layer.mlp.intermediate_size == (256 if L >= 3 else 128)
        assert float(layer.layer_scalar) != 1.0
    re = model.model.rotary_emb
    inv = re.full_attention_inv_freq.numpy()
    assert inv.shape == (256,) and (inv[64:] == 0).all() and (inv[:64] > 0).all()
    np.testing.assert_allclose(re.sliding_attention_inv_freq.numpy(), mff.default_inv_freq(1e4, 256), rtol=1e-6)
    assert cfg.final_logit_softcapping == 30.0
    w = mff.read_weights(mff.FIXTURES / name)
    assert "lm_head.weight" not in w and "model.layers.3.self_attn.k_proj.weight" not in w
    assert "model.layers.0.layer_scalar" in w


def patch_config(out: Path):
    """Add the released config's global_head_dim key (transformers also keeps per_layer_config)."""
    path = out / "config.json"
    cfg = json.loads(path.read_text())
    cfg["global_head_dim"] = GLOBAL_HEAD_DIM
    mff.write_json(path, dict(sorted(cfg.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verify", action="store_true", help="only verify the committed fixture")
    args = ap.parse_args()
    torch.set_num_threads(1)
    # Register the family with the shared generator's tables, so build/verify work unchanged.
    mff.FAMILIES[NAME] = {"config": gemma4_config, "model_class": Gemma4ForCausalLM, "seed": 6707,
                          "embed_std": 0.15, "dtype": torch.bfloat16, **mff.SPM_TOKENIZER}
    mff.NUMPY_FORWARD[NAME] = numpy_forward_gemma4
    mff.randomize = _wrap_randomize(mff.randomize)
    original_check = mff.check_model_internals
    mff.check_model_internals = lambda name, model: (
        check_gemma4_internals(name, model) if name == NAME else original_check(name, model))
    original_save = mff.save_fixture

    def save(model, out, name):
        original_save(model, out, name)
        if name == NAME:
            patch_config(out)
    mff.save_fixture = save
    mff.SCRIPT_NAME = SCRIPT_NAME
    prompts = mff.make_prompts()
    if not args.verify:
        mff.build(NAME, prompts, [])
    sys.exit(0 if mff.verify(NAME, prompts, []) else 1)


def _wrap_randomize(original):
    def randomize(model, seed, zero_mean_norms=(), embed_std=mff.INIT_STD, first_damped=mff.FIRST_DAMPED_ID):
        if isinstance(model, Gemma4ForCausalLM):
            mff.randomize = original  # randomize_gemma4 calls the shared one first
            try:
                randomize_gemma4(model, seed, zero_mean_norms, embed_std, first_damped)
            finally:
                mff.randomize = randomize
        else:
            original(model, seed, zero_mean_norms, embed_std, first_damped)
    return randomize


if __name__ == "__main__":
    main()
