#!/usr/bin/env python3
"""Generate Hearth's per-family reference fixtures (Phi-2, Gemma-3 text, Llama-3 rope, Phi-4-mini).

Run BY HAND by a developer, never in CI; the outputs are committed. It needs the
reference stack from scripts/requirements-reference.txt (the same venv as
scripts/make_reference_fixtures.py) and must run after that script, because it
copies the tokenizer files of Tests/Fixtures/phi3-mha/, and after
scripts/make_tokenizer_fixtures.py, whose byte-level BPE tokenizers phi2-tiny and
phi4-mini-tiny copy:

    /opt/hearth-ref/bin/python scripts/make_family_fixtures.py            # write + verify all
    /opt/hearth-ref/bin/python scripts/make_family_fixtures.py --only gemma3-tiny
    /opt/hearth-ref/bin/python scripts/make_family_fixtures.py --verify   # re-check committed files

Nothing is downloaded. Each fixture is a tiny random-weight checkpoint in Hugging
Face hub layout (config.json, generation_config.json, F32 model.safetensors
written by save_pretrained) plus tokenizer files and reference.json:

    Tests/Fixtures/phi2-tiny/      PhiForCausalLM: LayerNorm, parallel attention+MLP,
                                   partial rotary (6 of 16 dims), gelu_new, biases everywhere;
                                   GPT-2-style byte-level BPE tokenizer.json (tokenizers/gpt2-bpe:
                                   <|endoftext|> 960 as BOS/EOS, Phi-2's whitespace added tokens)
    Tests/Fixtures/gemma3-tiny/    Gemma3ForCausalLM (gemma3_text): 1 kv head, head_dim 32 != 64/4,
                                   query_pre_attn_scalar 24, 5 sliding (window 8) + 1 global layer,
                                   two RoPE bases, (1 + w) RMSNorm, q/k norms, sandwich norms, tied;
                                   phi3-mha's SentencePiece tokenizer files
    Tests/Fixtures/llama-tiny/     LlamaForCausalLM: GQA 4/2, rope_type "llama3" frequency remapping;
                                   phi3-mha's SentencePiece tokenizer files
    Tests/Fixtures/phi4-mini-tiny/ Phi3ForCausalLM shaped like Phi-4-mini: GQA 4/2, partial rotary
                                   0.75 (12 of 16 dims), LongRoPE (6 short/long factors, original
                                   context 16 of 128), tied embeddings, vocabulary 1856 padded;
                                   o200k tokenizer.json with Phi-4-mini's special tokens and chat
                                   template (tokenizers/o200k-bpe)
    Tests/Fixtures/qwen2-tiny/     Qwen2ForCausalLM shaped like Qwen2.5: GQA 4/1, q/k/v biases (no o_proj
                                   bias), RoPE base 1e6, untied lm_head, vocabulary 672 padded past the
                                   tokenizer's 662 (tokenizers/qwen2-bpe, Qwen2.5's chat template)
    Tests/Fixtures/qwen3-tiny/     Qwen3ForCausalLM shaped like Qwen3-0.6B: GQA 4/2, head_dim 32 with 4 heads
                                   wider than hidden 64, per-head q/k RMSNorm, no biases, tied embeddings,
                                   vocabulary 672 padded past 666 (tokenizers/qwen3-bpe, Qwen3's template)
    The two Qwen fixtures store BF16 weights, as the released checkpoints do (transformers upcasts them
    exactly to float32, as Hearth does), and use short random-id prompts without BOS (QWEN_PROMPT_LENGTHS)
    so the logits stay small; their chats are rendered and tokenized by apply_chat_template.

reference.json has the layout of the phi3 fixtures. gemma3-tiny and llama-tiny use
seeded random token-id lists (BOS 1 first, then ids in [3, 1000)) with "text": ""
and no chats; phi2-tiny and phi4-mini-tiny use TEXT_PROMPTS encoded by
transformers' AutoTokenizer on the fixture directory (so the Swift tests also check
the tokenizer), and phi4-mini-tiny records CHATS rendered and tokenized by
apply_chat_template. For every prompt it records float32 logits at every position
(eager attention, printed with 9 significant digits, which round-trips float32
exactly) and the 16 new tokens of generate(do_sample=False, max_new_tokens=16).
The output rows of special and padding ids (ids >= the family's "first_damped")
are damped and the generation EOS ids are among them, so no greedy run stops
early and no greedy token is a special or padding id.

Every random choice is seeded: a re-run with the pinned versions rewrites the
same files (the last digit of a logit may differ across CPUs/BLAS builds). Each
model is re-seeded until every greedy step has a top-1 minus top-2 logit gap
above MIN_GREEDY_GAP, so the greedy tokens are robust to float32 rounding, and
every continuation has at least MIN_DISTINCT_GREEDY distinct tokens.

Random weights: matrices and embeddings N(0, 0.25), biases N(0, 0.1), saved norm
weights 1 + 0.1 * N(0, 1) -- the raw tensor, so Gemma's (1 + w) norms scale by
about 2 -- except Gemma's q_norm/k_norm, saved as 0.1 * N(0, 1), and Gemma's
tied embedding, N(0, 0.15) (see FAMILIES for why).

Verification (always run after writing, or alone with --verify): the fixture is
reloaded with AutoModelForCausalLM and must reproduce the recorded logits and
greedy tokens; greedy decoding with the KV cache must agree with full
re-computation; an independent float64 numpy forward pass written from the
model descriptions below (see numpy_forward_*) must match the recorded logits;
and the tokenizer must still give the recorded prompt and chat ids.
"""

import argparse
import copy
import json
import math
import random
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors import safe_open
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    PhiConfig,
    PhiForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

transformers.utils.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "Fixtures"
TOKENIZER_SOURCE = FIXTURES / "phi3-mha"
TOKENIZER_FILES = ["tokenizer.model", "tokenizer_config.json", "added_tokens.json", "special_tokens_map.json"]
# The byte-level BPE tokenizers of scripts/make_tokenizer_fixtures.py.
BPE_TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json"]
GPT2_TOKENIZER = FIXTURES / "tokenizers" / "gpt2-bpe"
O200K_TOKENIZER = FIXTURES / "tokenizers" / "o200k-bpe"
PHI2_ENDOFTEXT = 960  # <|endoftext|> in tokenizers/gpt2-bpe: Phi-2's BOS and EOS (50256 in Phi-2)
PHI4_ENDOFTEXT = 1799  # <|endoftext|> in tokenizers/o200k-bpe (199999 in Phi-4-mini)
PHI4_END = 1802  # <|end|> (200020 in Phi-4-mini)
PHI4_VOCAB = 1856  # the model's padded vocabulary (200064 in Phi-4-mini)
QWEN2_TOKENIZER = FIXTURES / "tokenizers" / "qwen2-bpe"
QWEN3_TOKENIZER = FIXTURES / "tokenizers" / "qwen3-bpe"
QWEN_ENDOFTEXT = 640  # <|endoftext|> in tokenizers/qwen*-bpe (151643 in Qwen): BOS/pad in Qwen's configs
QWEN_IM_END = 642  # <|im_end|> (151645)
QWEN_VOCAB = 672  # padded past the tokenizers' 662/666 ids, as Qwen's 151936 is past 151669
QWEN_PROMPT_LENGTHS = [6, 17]  # no BOS; ids in [0, QWEN_ENDOFTEXT)
SCRIPT_NAME = "scripts/make_family_fixtures.py"

VOCAB = 1024
BOS_ID = 1
PAD_ID = 1000  # <|endoftext|>, the pad token of the phi3 tokenizer files
GEN_EOS_ID = 1023  # a padding id: never produced, so generation always runs 16 steps
FIRST_DAMPED_ID = 1000  # output rows >= this are scaled down: no special/padding id wins greedy
DAMP = 0.05
MAX_POSITIONS = 128

PROMPT_SEED = 4242
PROMPT_LENGTHS = [9, 17, 26, 33]  # including BOS
PROMPT_ID_RANGE = (3, 1000)  # [low, high)
MAX_NEW_TOKENS = 16
MIN_GREEDY_GAP = 1e-3
MIN_DISTINCT_GREEDY = 5  # reject seeds whose greedy run is (nearly) one repeated token

# Text prompts (phi2-tiny, phi4-mini-tiny): English long enough to cross phi4-mini-tiny's
# LongRoPE original context (16), Chinese, code with indentation, and mixed scripts with emoji.
TEXT_PROMPTS = [
    ("english", "The fire is a small promise that you have to keep all day, said my grandmother."),
    ("chinese", "我们一边喝茶一边聊天，奶奶写了一个字。"),
    ("code", "def f(x):\n    return x * 2\n"),
    ("mixed", "Hello 你好 Привет 👩‍💻 123!"),
]

CHATS = [
    [{"role": "user", "content": "How do I bake a plain loaf of bread at home?"}],
    [
        {"role": "system", "content": "你是一个有帮助的助手。Отвечай кратко."},
        {"role": "user", "content": "今天天气怎么样？"},
        {"role": "assistant", "content": "Сегодня холодно, идёт снег。"},
        {"role": "user", "content": "那我们在家喝茶吧。А ты что будешь делать?"},
    ],
    [{"role": "user", "content": "  two leading spaces\n\nthen a blank line\n\tand a tab\n\n\nthree newlines \n"}],
]
MAX_ATTEMPTS = 50

INIT_STD = 0.25  # matrices and embeddings
NORM_STD = 0.1  # saved norm weights are 1 + NORM_STD * N(0, 1) (raw, also for Gemma's 1 + w)
BIAS_STD = 0.1


# ---------------------------------------------------------------------------
# Configs
# ---------------------------------------------------------------------------

def common_ids():
    return dict(vocab_size=VOCAB, bos_token_id=BOS_ID, eos_token_id=GEN_EOS_ID, pad_token_id=PAD_ID,
                max_position_embeddings=MAX_POSITIONS, initializer_range=INIT_STD)


def phi2_ids():
    return dict(vocab_size=VOCAB, bos_token_id=PHI2_ENDOFTEXT, eos_token_id=PHI2_ENDOFTEXT,
                pad_token_id=PHI2_ENDOFTEXT, max_position_embeddings=MAX_POSITIONS, initializer_range=INIT_STD)


def phi2_config():
    return PhiConfig(
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=4,
        num_hidden_layers=2,
        intermediate_size=256,
        hidden_act="gelu_new",
        layer_norm_eps=1e-5,
        tie_word_embeddings=False,
        qk_layernorm=False,
        # PhiConfig defaults the top-level partial_rotary_factor to 0.5; pass it in both places.
        partial_rotary_factor=0.375,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.375},
        **phi2_ids(),
    )


GEMMA3_LAYER_TYPES = ["sliding_attention"] * 5 + ["full_attention"]


def gemma3_config():
    return Gemma3TextConfig(
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=32,
        query_pre_attn_scalar=24,
        num_hidden_layers=6,
        layer_types=list(GEMMA3_LAYER_TYPES),
        sliding_window=8,
        rope_parameters={
            "full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
        },
        intermediate_size=128,
        hidden_activation="gelu_pytorch_tanh",
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        final_logit_softcapping=None,
        attn_logit_softcapping=None,
        attention_bias=False,
        **common_ids(),
    )


def llama_config():
    return LlamaConfig(
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        intermediate_size=128,
        hidden_act="silu",
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        attention_bias=False,
        mlp_bias=False,
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 10000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 16,
        },
        **common_ids(),
    )


def qwen_ids():
    return dict(vocab_size=QWEN_VOCAB, bos_token_id=QWEN_ENDOFTEXT, eos_token_id=QWEN_IM_END,
                pad_token_id=QWEN_ENDOFTEXT, max_position_embeddings=MAX_POSITIONS, initializer_range=INIT_STD)


def qwen2_config():
    """Qwen2.5's shape in miniature: GQA with biases on q/k/v only, RoPE base 1e6, separate lm_head."""
    return Qwen2Config(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=1, num_hidden_layers=2, intermediate_size=96,
        hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,
        sliding_window=32768, max_window_layers=2, rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
        **qwen_ids())


def qwen3_config():
    """Qwen3-0.6B's shape in miniature: head_dim 32 (4 x 32 = 128 > hidden 64), q/k norms, tied."""
    return Qwen3Config(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_hidden_layers=2,
        intermediate_size=96, hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False,
        use_sliding_window=False, sliding_window=None, max_window_layers=2,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0}, **qwen_ids())


PHI4_SHORT_FACTOR = [1.0, 1.1, 1.25, 1.5, 2.0, 3.0]
PHI4_LONG_FACTOR = [1.5, 2.0, 3.0, 4.5, 6.0, 8.0]


def phi4_mini_config():
    """Phi-4-mini's shape in miniature: GQA, partial rotary 0.75, LongRoPE, tied embeddings."""
    return Phi3Config(
        vocab_size=PHI4_VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=MAX_POSITIONS,
        original_max_position_embeddings=16,
        initializer_range=INIT_STD,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=PHI4_ENDOFTEXT,
        eos_token_id=PHI4_ENDOFTEXT,
        pad_token_id=PHI4_ENDOFTEXT,
        hidden_act="silu",
        partial_rotary_factor=0.75,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
                         "short_factor": list(PHI4_SHORT_FACTOR), "long_factor": list(PHI4_LONG_FACTOR),
                         "original_max_position_embeddings": 16},
    )


# Gemma's RMSNorm multiplies by (1 + weight), so with raw weights 1 + 0.1 * N(0, 1) its
# effective multipliers are 2 + 0.1 * N(0, 1). That is deliberate: with multipliers near 1 the
# scaled, tied embedding dominates the residual stream and greedy decoding just repeats the last
# token; larger sublayer outputs make the continuation depend on context (and forgetting the
# "+ 1" changes every logit). The exception is q_norm/k_norm ("zero_mean_norms": raw weights
# 0.1 * N(0, 1), effective ~1): doubling both q and k would make attention 4x sharper and raise
# the float32 noise of the reference logits from ~1e-5 to ~1e-4. The (tied) embedding is drawn
# with a smaller std ("embed_std" 0.15; it is multiplied by sqrt(64) = 8 on input): at 0.25 the
# current token's own embedding still dominates and greedy decoding mostly repeats it.
# Per family: the tokenizer files copied in (source, names), whether prompts are text, the
# first damped output id and the generation EOS ids (damped, so never produced).
SPM_TOKENIZER = {"tokenizer": (TOKENIZER_SOURCE, TOKENIZER_FILES), "text_prompts": False,
                 "first_damped": FIRST_DAMPED_ID, "generation_eos": GEN_EOS_ID, "bos": BOS_ID, "pad": PAD_ID}
FAMILIES = {
    "phi2-tiny": {"config": phi2_config, "model_class": PhiForCausalLM, "seed": 5101,
                  "tokenizer": (GPT2_TOKENIZER, BPE_TOKENIZER_FILES), "text_prompts": True,
                  "first_damped": PHI2_ENDOFTEXT, "generation_eos": PHI2_ENDOFTEXT, "bos": PHI2_ENDOFTEXT,
                  "pad": PHI2_ENDOFTEXT},
    "gemma3-tiny": {"config": gemma3_config, "model_class": Gemma3ForCausalLM, "seed": 5202,
                    "zero_mean_norms": ("q_norm", "k_norm"), "embed_std": 0.15, **SPM_TOKENIZER},
    "llama-tiny": {"config": llama_config, "model_class": LlamaForCausalLM, "seed": 5303, **SPM_TOKENIZER},
    "phi4-mini-tiny": {"config": phi4_mini_config, "model_class": Phi3ForCausalLM, "seed": 5404,
                       "tokenizer": (O200K_TOKENIZER, BPE_TOKENIZER_FILES), "text_prompts": True, "chats": True,
                       "first_damped": PHI4_ENDOFTEXT, "generation_eos": [PHI4_END, PHI4_ENDOFTEXT],
                       "bos": PHI4_ENDOFTEXT, "pad": PHI4_ENDOFTEXT},
    "qwen2-tiny": {"config": qwen2_config, "model_class": Qwen2ForCausalLM, "seed": 5505,
                   "tokenizer": (QWEN2_TOKENIZER, BPE_TOKENIZER_FILES), "text_prompts": False, "chats": True,
                   "prompt_lengths": QWEN_PROMPT_LENGTHS, "dtype": torch.bfloat16,
                   "first_damped": QWEN_ENDOFTEXT, "generation_eos": [QWEN_IM_END, QWEN_ENDOFTEXT],
                   "bos": QWEN_ENDOFTEXT, "pad": QWEN_ENDOFTEXT},
    "qwen3-tiny": {"config": qwen3_config, "model_class": Qwen3ForCausalLM, "seed": 5606,
                   "tokenizer": (QWEN3_TOKENIZER, BPE_TOKENIZER_FILES), "text_prompts": False, "chats": True,
                   "prompt_lengths": QWEN_PROMPT_LENGTHS, "dtype": torch.bfloat16,
                   "first_damped": QWEN_ENDOFTEXT, "generation_eos": [QWEN_IM_END, QWEN_ENDOFTEXT],
                   "bos": QWEN_ENDOFTEXT, "pad": QWEN_ENDOFTEXT},
}


def make_prompts():
    rng = random.Random(PROMPT_SEED)
    prompts = []
    for n in PROMPT_LENGTHS:
        ids = [BOS_ID] + [rng.randrange(*PROMPT_ID_RANGE) for _ in range(n - 1)]
        prompts.append({"name": f"random-{n}", "text": "", "input_ids": ids})
    return prompts


def load_tokenizer(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoTokenizer.from_pretrained(str(path))


def chat_ids(tok, messages):
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(out, "keys") and "input_ids" in out:  # transformers 5 may return a BatchEncoding
        out = out["input_ids"]
    out = list(out)
    if out and isinstance(out[0], list):
        out = out[0]
    return [int(i) for i in out]


def family_prompts(name: str, random_prompts: list) -> list:
    """Random id prompts, or TEXT_PROMPTS encoded by transformers on the family's tokenizer files."""
    fam = FAMILIES[name]
    if "prompt_lengths" in fam:  # no BOS, ids below the first added token
        rng = random.Random(PROMPT_SEED)
        return [{"name": f"random-{n}", "text": "", "input_ids": [rng.randrange(0, fam["first_damped"]) for _ in range(n)]}
                for n in fam["prompt_lengths"]]
    if not fam["text_prompts"]:
        return random_prompts
    tok = load_tokenizer(fam["tokenizer"][0])
    return [{"name": n, "text": t, "input_ids": [int(i) for i in tok.encode(t)]} for n, t in TEXT_PROMPTS]


def family_chats(name: str) -> list:
    if not FAMILIES[name].get("chats"):
        return []
    tok = load_tokenizer(FAMILIES[name]["tokenizer"][0])
    return [{"messages": m, "text": tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False),
             "input_ids": chat_ids(tok, m)} for m in CHATS]


# ---------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------

def is_norm_weight(name: str) -> bool:
    return name.endswith(".weight") and "norm" in name.rsplit(".", 2)[-2]


@torch.no_grad()
def randomize(model, seed: int, zero_mean_norms=(), embed_std=INIT_STD, first_damped=FIRST_DAMPED_ID):
    """Overwrite every parameter: N(0, INIT_STD) matrices, N(0, embed_std) input embedding,
    N(0, BIAS_STD) biases, 1 + N(0, NORM_STD) norm weights (N(0, NORM_STD) for the modules
    named in zero_mean_norms); then damp the output rows (and bias) of ids >= first_damped."""
    gen = torch.Generator().manual_seed(seed)
    seen = set()
    for name, p in sorted(model.named_parameters()):
        if name.endswith(".bias"):
            p.copy_(BIAS_STD * torch.randn(p.shape, generator=gen))
        elif is_norm_weight(name):
            assert p.dim() == 1, name
            offset = 0.0 if name.rsplit(".", 2)[-2] in zero_mean_norms else 1.0
            p.copy_(offset + NORM_STD * torch.randn(p.shape, generator=gen))
        elif name == "model.embed_tokens.weight":
            p.copy_(embed_std * torch.randn(p.shape, generator=gen))
        else:
            p.copy_(INIT_STD * torch.randn(p.shape, generator=gen))
        seen.add(p.data_ptr())
    head = model.get_output_embeddings()
    assert head.weight.data_ptr() in seen
    head.weight[first_damped:] *= DAMP
    if head.bias is not None:
        head.bias[first_damped:] *= DAMP
    if model.config.tie_word_embeddings:
        assert head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()


# ---------------------------------------------------------------------------
# Reference runs
# ---------------------------------------------------------------------------

@torch.no_grad()
def all_logits(model, ids) -> np.ndarray:
    out = model(input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0].numpy().astype(np.float32)


@torch.no_grad()
def greedy_generate(model, ids):
    """generate(do_sample=False) with the KV cache; returns new ids, stopped flag, per-step gaps."""
    inp = torch.tensor([ids])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.generate(input_ids=inp, attention_mask=torch.ones_like(inp), do_sample=False,
                             max_new_tokens=MAX_NEW_TOKENS, output_logits=True, return_dict_in_generate=True)
    new = [int(t) for t in out.sequences[0, len(ids):]]
    gaps = []
    for step in out.logits:
        top = torch.topk(step[0].float(), 2).values
        gaps.append(float(top[0] - top[1]))
    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos])
    stopped = len(new) < MAX_NEW_TOKENS or (bool(new) and new[-1] in eos)
    return new, stopped, gaps


@torch.no_grad()
def greedy_recompute(model, ids, steps):
    """Greedy without a cache: a full forward pass over the whole sequence per step."""
    seq, new, gaps = list(ids), [], []
    for _ in range(steps):
        row = all_logits(model, seq)[-1]
        order = np.argsort(-row, kind="stable")
        new.append(int(order[0]))
        gaps.append(float(row[order[0]] - row[order[1]]))
        seq.append(new[-1])
    return new, gaps


def load_fixture_model(path: Path, expected_class):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32, attn_implementation="eager")
    assert type(model) is expected_class, type(model)
    assert model.config._attn_implementation == "eager"
    model.eval()
    return model


# ---------------------------------------------------------------------------
# Independent float64 numpy forward passes (the behaviour Hearth must match)
# ---------------------------------------------------------------------------

def read_weights(path: Path) -> dict:
    with safe_open(str(path / "model.safetensors"), "pt") as f:  # "pt": numpy has no bfloat16
        return {k: f.get_tensor(k).to(torch.float64).numpy() for k in f.keys()}


def rope_rotate(x, pos, inv_freq):
    """HF "rotate_half" RoPE on the first 2*len(inv_freq) dims of x[..., seq, dim]:
    pairs (i, i + d/2) of the rotary slice, angle = pos * inv_freq[i]."""
    d = 2 * len(inv_freq)
    ang = pos[:, None] * inv_freq[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    x1, x2, rest = x[..., : d // 2], x[..., d // 2: d], x[..., d:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], axis=-1)


def attention(q, k, v, scale, window=None):
    """q [H, T, D], k/v [KV, T, D]; query head h uses kv head h // (H / KV).
    Key j is visible to query i iff j <= i and (window is None or i - j < window)."""
    h, t, _ = q.shape
    rep = h // k.shape[0]
    k, v = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)
    s = np.einsum("hid,hjd->hij", q, k) * scale
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]
    allowed = j <= i
    if window is not None:
        allowed &= (i - j) < window
    s = np.where(allowed, s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    return np.einsum("hij,hjd->hid", s, v)


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def split_heads(x, n):  # [T, n*D] -> [n, T, D]
    t = x.shape[0]
    return x.reshape(t, n, -1).transpose(1, 0, 2)


def merge_heads(x):  # [n, T, D] -> [T, n*D]
    return x.transpose(1, 0, 2).reshape(x.shape[1], -1)


def default_inv_freq(theta, rotary_dim):
    return 1.0 / theta ** (np.arange(0, rotary_dim, 2) / rotary_dim)


def llama3_inv_freq(theta, head_dim, factor, low_ff, high_ff, old_ctx):
    inv = default_inv_freq(theta, head_dim)
    wavelen = 2 * math.pi / inv
    low_wavelen, high_wavelen = old_ctx / low_ff, old_ctx / high_ff
    smooth = (old_ctx / wavelen - low_ff) / (high_ff - low_ff)
    out = np.where(wavelen > low_wavelen, inv / factor, inv)  # long wavelengths: divide by factor
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return np.where(medium, (1 - smooth) * inv / factor + smooth * inv, out)


def numpy_forward_phi2(w, cfg, ids):
    d, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = d // nh
    rp = cfg["rope_parameters"]
    rot = int(hd * rp["partial_rotary_factor"])
    inv = default_inv_freq(rp["rope_theta"], rot)
    pos = np.arange(len(ids), dtype=np.float64)
    eps = cfg["layer_norm_eps"]
    lin = lambda x, name: x @ w[name + ".weight"].T + w[name + ".bias"]
    x = w["model.embed_tokens.weight"][ids]
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        h = layer_norm(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
        q = rope_rotate(split_heads(lin(h, p + "self_attn.q_proj"), nh), pos, inv)
        k = rope_rotate(split_heads(lin(h, p + "self_attn.k_proj"), nh), pos, inv)
        v = split_heads(lin(h, p + "self_attn.v_proj"), nh)
        attn = lin(merge_heads(attention(q, k, v, hd ** -0.5)), p + "self_attn.dense")
        mlp = lin(gelu_tanh(lin(h, p + "mlp.fc1")), p + "mlp.fc2")  # same LayerNorm output h
        x = x + attn + mlp
    x = layer_norm(x, w["model.final_layernorm.weight"], w["model.final_layernorm.bias"], eps)
    return lin(x, "lm_head")


def numpy_forward_gemma3(w, cfg, ids):
    d, nh, nkv, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    pos = np.arange(len(ids), dtype=np.float64)
    gnorm = lambda x, name: rms_norm(x, 1.0 + w[name + ".weight"], eps)  # Gemma: (1 + w)
    mat = lambda x, name: x @ w[name + ".weight"].T
    emb = w["model.embed_tokens.weight"]
    x = emb[ids] * np.float64(np.float32(math.sqrt(d)))  # sqrt(hidden), as a float32 constant
    for L, kind in enumerate(cfg["layer_types"]):
        p = f"model.layers.{L}."
        inv = default_inv_freq(cfg["rope_parameters"][kind]["rope_theta"], hd)
        window = cfg["sliding_window"] if kind == "sliding_attention" else None
        h = gnorm(x, p + "input_layernorm")
        q = gnorm(split_heads(mat(h, p + "self_attn.q_proj"), nh), p + "self_attn.q_norm")  # per head, before RoPE
        k = gnorm(split_heads(mat(h, p + "self_attn.k_proj"), nkv), p + "self_attn.k_norm")
        v = split_heads(mat(h, p + "self_attn.v_proj"), nkv)  # no norm on v
        q, k = rope_rotate(q, pos, inv), rope_rotate(k, pos, inv)
        a = mat(merge_heads(attention(q, k, v, cfg["query_pre_attn_scalar"] ** -0.5, window)), p + "self_attn.o_proj")
        x = x + gnorm(a, p + "post_attention_layernorm")
        h = gnorm(x, p + "pre_feedforward_layernorm")
        m = mat(gelu_tanh(mat(h, p + "mlp.gate_proj")) * mat(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        x = x + gnorm(m, p + "post_feedforward_layernorm")
    x = gnorm(x, "model.norm")
    return x @ emb.T  # tied: no lm_head.weight in the file


def numpy_forward_llama(w, cfg, ids):
    d, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = d // nh
    rp = cfg["rope_parameters"]
    inv = llama3_inv_freq(rp["rope_theta"], hd, rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"],
                          rp["original_max_position_embeddings"])
    eps = cfg["rms_norm_eps"]
    pos = np.arange(len(ids), dtype=np.float64)
    mat = lambda x, name: x @ w[name + ".weight"].T
    x = w["model.embed_tokens.weight"][ids]
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = rope_rotate(split_heads(mat(h, p + "self_attn.q_proj"), nh), pos, inv)
        k = rope_rotate(split_heads(mat(h, p + "self_attn.k_proj"), nkv), pos, inv)
        v = split_heads(mat(h, p + "self_attn.v_proj"), nkv)
        x = x + mat(merge_heads(attention(q, k, v, hd ** -0.5)), p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + mat(silu(mat(h, p + "mlp.gate_proj")) * mat(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    return mat(rms_norm(x, w["model.norm.weight"], eps), "lm_head")


def numpy_forward_phi3(w, cfg, ids):
    """Phi-3 / Phi-4-mini: fused qkv and gate_up, partial rotary, LongRoPE, tied embedding."""
    d, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = d // nh
    rp = cfg["rope_parameters"]
    rot = int(hd * rp["partial_rotary_factor"])
    original = rp["original_max_position_embeddings"]
    # LongRoPE: one factor per frequency, long ones for the whole sequence once it exceeds the
    # original context; cos and sin scaled by sqrt(1 + ln(factor) / ln(original)).
    factors = np.array(rp["long_factor"] if len(ids) > original else rp["short_factor"], dtype=np.float64)
    inv = 1.0 / (factors * rp["rope_theta"] ** (np.arange(0, rot, 2) / rot))
    scale = math.sqrt(1 + math.log(cfg["max_position_embeddings"] / original) / math.log(original))
    pos = np.arange(len(ids), dtype=np.float64)
    eps = cfg["rms_norm_eps"]
    mat = lambda x, name: x @ w[name + ".weight"].T

    def rope(x):  # rope_rotate with cos and sin scaled by the attention factor
        ang = pos[:, None] * inv[None, :]
        cos, sin = np.cos(ang) * scale, np.sin(ang) * scale
        x1, x2, rest = x[..., : rot // 2], x[..., rot // 2: rot], x[..., rot:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], axis=-1)

    emb = w["model.embed_tokens.weight"]
    x = emb[ids]
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        qkv = mat(h, p + "self_attn.qkv_proj")
        q, k, v = np.split(qkv, [nh * hd, nh * hd + nkv * hd], axis=-1)
        q, k, v = rope(split_heads(q, nh)), rope(split_heads(k, nkv)), split_heads(v, nkv)
        x = x + mat(merge_heads(attention(q, k, v, hd ** -0.5)), p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = np.split(mat(h, p + "mlp.gate_up_proj"), 2, axis=-1)
        x = x + mat(silu(gate) * up, p + "mlp.down_proj")
    return rms_norm(x, w["model.norm.weight"], eps) @ emb.T  # tied: no lm_head.weight in the file


def numpy_forward_qwen(w, cfg, ids):
    """Qwen2 (q/k/v biases) and Qwen3 (per-head q/k RMSNorm before RoPE, own head_dim): whichever
    tensors the file has; tied when there is no lm_head.weight."""
    d, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // nh
    inv = default_inv_freq(cfg["rope_parameters"]["rope_theta"], hd)
    eps = cfg["rms_norm_eps"]
    pos = np.arange(len(ids), dtype=np.float64)

    def lin(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def head_norm(x, name):  # x [n, T, hd]
        return rms_norm(x, w[name + ".weight"], eps) if name + ".weight" in w else x

    emb = w["model.embed_tokens.weight"]
    x = emb[ids]
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = head_norm(split_heads(lin(h, p + "self_attn.q_proj"), nh), p + "self_attn.q_norm")
        k = head_norm(split_heads(lin(h, p + "self_attn.k_proj"), nkv), p + "self_attn.k_norm")
        v = split_heads(lin(h, p + "self_attn.v_proj"), nkv)
        q, k = rope_rotate(q, pos, inv), rope_rotate(k, pos, inv)
        x = x + lin(merge_heads(attention(q, k, v, hd ** -0.5)), p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + lin(silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    head = w.get("lm_head.weight", emb)
    return rms_norm(x, w["model.norm.weight"], eps) @ head.T


NUMPY_FORWARD = {"phi2-tiny": numpy_forward_phi2, "gemma3-tiny": numpy_forward_gemma3,
                 "llama-tiny": numpy_forward_llama, "phi4-mini-tiny": numpy_forward_phi3,
                 "qwen2-tiny": numpy_forward_qwen, "qwen3-tiny": numpy_forward_qwen}


# ---------------------------------------------------------------------------
# Family-specific assertions on what transformers actually built
# ---------------------------------------------------------------------------

def check_model_internals(name, model):
    cfg = model.config
    if name == "phi2-tiny":
        attn = model.model.layers[0].self_attn
        assert attn.rotary_ndims == int(16 * 0.375) == 6, attn.rotary_ndims
        assert model.model.rotary_emb.inv_freq.numel() == 3
        assert cfg.hidden_act == "gelu_new" and not cfg.qk_layernorm
        assert model.lm_head.bias is not None
    elif name == "gemma3-tiny":
        assert list(cfg.layer_types) == GEMMA3_LAYER_TYPES, cfg.layer_types
        for L, layer in enumerate(model.model.layers):
            a = layer.self_attn
            assert a.head_dim == 32 and a.scaling == 24 ** -0.5
            assert a.sliding_window == (8 if GEMMA3_LAYER_TYPES[L] == "sliding_attention" else None)
        assert float(model.model.embed_tokens.embed_scale) == 8.0
        re = model.model.rotary_emb
        np.testing.assert_allclose(re.sliding_attention_inv_freq.numpy(), default_inv_freq(1e4, 32), rtol=1e-6)
        np.testing.assert_allclose(re.full_attention_inv_freq.numpy(), default_inv_freq(1e6, 32), rtol=1e-6)
        assert cfg.final_logit_softcapping is None and cfg.attn_logit_softcapping is None
    elif name == "phi4-mini-tiny":
        attn = model.model.layers[0].self_attn
        assert attn.num_key_value_groups == 2 and cfg.tie_word_embeddings
        assert model.model.rotary_emb.inv_freq.numel() == 6  # 12 of 16 dims rotate
        assert "lm_head.weight" not in read_weights(FIXTURES / name)
        expected = math.sqrt(1 + math.log(MAX_POSITIONS / 16) / math.log(16))
        assert abs(model.model.rotary_emb.attention_scaling - expected) < 1e-9
    elif name in ("qwen2-tiny", "qwen3-tiny"):
        attn = model.model.layers[0].self_attn
        w = read_weights(FIXTURES / name)
        if name == "qwen2-tiny":
            assert attn.q_proj.bias is not None and attn.o_proj.bias is None and attn.num_key_value_groups == 4
            assert not cfg.tie_word_embeddings and "lm_head.weight" in w and cfg.sliding_window is None
        else:
            assert attn.head_dim == 32 and attn.q_proj.weight.shape == (128, 64) and attn.q_proj.bias is None
            assert attn.q_norm.weight.shape == (32,) and attn.num_key_value_groups == 2
            assert cfg.tie_word_embeddings and "lm_head.weight" not in w
        assert all(layer.self_attn.sliding_window is None for layer in model.model.layers)
        np.testing.assert_allclose(model.model.rotary_emb.inv_freq.numpy(), default_inv_freq(1e6, attn.head_dim), rtol=1e-6)
    elif name == "llama-tiny":
        inv = model.model.rotary_emb.inv_freq.numpy()
        np.testing.assert_allclose(inv, llama3_inv_freq(1e4, 16, 8.0, 1.0, 4.0, 16), rtol=1e-6)
        assert not np.allclose(inv, default_inv_freq(1e4, 16), rtol=1e-3)


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------

def write_json(path: Path, obj):
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def json_scalar_list(values):
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def json_logits(rows: np.ndarray) -> str:
    return "[" + ",\n".join("[" + ",".join("%.9g" % v for v in row.tolist()) + "]" for row in rows) + "]"


def write_reference(path: Path, generator: str, prompts: list, chats: list):
    """Same layout as the phi3 fixtures: one key per line, id lists on one line, one logits row per line."""
    entries = []
    for p in prompts:
        fields = [
            ("name", json.dumps(p["name"])),
            ("text", json.dumps(p["text"], ensure_ascii=False)),
            ("input_ids", json_scalar_list(p["input_ids"])),
            ("logits", json_logits(p["logits"])),
            ("greedy", json_scalar_list(p["greedy"])),
            ("greedy_stopped_on_eos", json.dumps(p["greedy_stopped_on_eos"])),
        ]
        entries.append("  {\n" + ",\n".join(f"   {json.dumps(k)}: {v}" for k, v in fields) + "\n  }")
    chat_entries = ["  " + json.dumps(c, ensure_ascii=False) for c in chats]
    text = ("{\n"
            f" \"generator\": {json.dumps(generator)},\n"
            " \"prompts\": [\n" + ",\n".join(entries) + "\n ],\n"
            " \"chat\": [" + ("\n" + ",\n".join(chat_entries) + "\n ]" if chats else "]") + "\n"
            "}\n")
    json.loads(text)
    path.write_text(text, encoding="utf-8")


def generator_string(name: str):
    fam = FAMILIES[name]
    prompts = ("text prompts and chats tokenized by AutoTokenizer (tokenizers "
               f"{__import__('tokenizers').__version__}) from {fam['tokenizer'][0].relative_to(FIXTURES)}"
               if fam["text_prompts"] else "prompts are seeded random token ids, no tokenizer involved")
    return (f"{SCRIPT_NAME} (torch {torch.__version__}, transformers {transformers.__version__}, "
            f"safetensors {__import__('safetensors').__version__}, numpy {np.__version__}; "
            f"{prompts}; eager attention, float32)")


def save_fixture(model, out: Path, name: str):
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if "dtype" in FAMILIES[name]:  # the released checkpoints' storage type (an exact upcast on load)
        model = copy.deepcopy(model).to(FAMILIES[name]["dtype"])
    model.save_pretrained(str(out), safe_serialization=True)
    assert (out / "model.safetensors").exists() and not (out / "model.safetensors.index.json").exists()
    # Our own generation_config.json (overwrites the one save_pretrained derives from the config).
    fam = FAMILIES[name]
    write_json(out / "generation_config.json", {
        "_from_model_config": True,
        "bos_token_id": fam["bos"],
        "eos_token_id": fam["generation_eos"],
        "pad_token_id": fam["pad"],
        "transformers_version": transformers.__version__,
    })
    source, files = fam["tokenizer"]
    for fname in files:
        shutil.copyfile(source / fname, out / fname)


def build(name: str, prompts: list, chats: list):
    fam = FAMILIES[name]
    out = FIXTURES / name
    for attempt in range(MAX_ATTEMPTS):
        seed = fam["seed"] + 1000 * attempt
        torch.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fam["model_class"](fam["config"]())
        model.eval()
        randomize(model, seed, fam.get("zero_mean_norms", ()), fam.get("embed_std", INIT_STD), fam["first_damped"])
        with tempfile.TemporaryDirectory() as tmp:
            # Decide on the reloaded checkpoint, exactly as it will be committed.
            save_fixture(model, Path(tmp), name)
            ref = load_fixture_model(Path(tmp), fam["model_class"])
            results, ok, worst = [], True, math.inf
            for p in prompts:
                new, stopped, gaps = greedy_generate(ref, p["input_ids"])
                worst = min(worst, min(gaps))
                if (min(gaps) <= MIN_GREEDY_GAP or stopped or any(t >= fam["first_damped"] for t in new)
                        or len(set(new)) < MIN_DISTINCT_GREEDY):
                    ok = False
                    break
                results.append(dict(p, logits=all_logits(ref, p["input_ids"]), greedy=new,
                                    greedy_stopped_on_eos=stopped))
        if ok:
            break
        print(f"  {name}: seed {seed} rejected (gap {worst:.2e} or repetitive greedy); re-seeding")
    else:
        raise SystemExit(f"{name}: no acceptable seed in {MAX_ATTEMPTS} attempts")
    save_fixture(model, out, name)
    write_reference(out / "reference.json", generator_string(name), results, chats)
    print(f"{name}: wrote {out.relative_to(REPO_ROOT)} (seed {seed})")


# ---------------------------------------------------------------------------
# Verification of the committed files
# ---------------------------------------------------------------------------

def verify(name: str, prompts: list, chats: list) -> bool:
    fam = FAMILIES[name]
    path = FIXTURES / name
    ok = True
    with safe_open(str(path / "model.safetensors"), "pt") as f:
        dtypes = {f.get_slice(k).get_dtype() for k in f.keys()}
    ok &= dtypes == ({"BF16"} if fam.get("dtype") == torch.bfloat16 else {"F32"})
    ref_doc = json.loads((path / "reference.json").read_text(encoding="utf-8"))
    ok &= ref_doc["chat"] == chats and len(ref_doc["prompts"]) == len(prompts)
    cfg = json.loads((path / "config.json").read_text())
    gen_cfg = json.loads((path / "generation_config.json").read_text())
    ok &= gen_cfg["eos_token_id"] == fam["generation_eos"]
    source, files = fam["tokenizer"]
    for fname in files:
        ok &= (path / fname).read_bytes() == (source / fname).read_bytes()
    if fam["text_prompts"]:
        # The committed checkpoint's own tokenizer gives the recorded ids.
        tok = load_tokenizer(path)
        ok &= all([int(i) for i in tok.encode(p["text"])] == p["input_ids"] for p in prompts)
        ok &= all(chat_ids(tok, c["messages"]) == c["input_ids"] for c in chats)

    model = load_fixture_model(path, fam["model_class"])
    check_model_internals(name, model)
    weights = read_weights(path)
    max_torch, max_numpy, min_gap = 0.0, 0.0, math.inf
    for p, rec in zip(prompts, ref_doc["prompts"]):
        ok &= rec["input_ids"] == p["input_ids"] and rec["text"] == p["text"] and rec["name"] == p["name"]
        recorded = np.array(rec["logits"], dtype=np.float32)
        ok &= recorded.shape == (len(p["input_ids"]), cfg["vocab_size"])
        max_torch = max(max_torch, float(np.abs(all_logits(model, p["input_ids"]) - recorded).max()))
        ours = NUMPY_FORWARD[name](weights, cfg, p["input_ids"])
        max_numpy = max(max_numpy, float(np.abs(ours - recorded).max()))
        new, stopped, gaps = greedy_generate(model, p["input_ids"])
        slow, slow_gaps = greedy_recompute(model, p["input_ids"], MAX_NEW_TOKENS)
        min_gap = min(min_gap, min(gaps), min(slow_gaps))
        ok &= new == rec["greedy"] == slow and stopped is False and rec["greedy_stopped_on_eos"] is False
        ok &= all(t < fam["first_damped"] for t in new)
    ok &= max_torch <= 1e-5 and max_numpy <= 5e-5 and min_gap > MIN_GREEDY_GAP
    size = sum(f.stat().st_size for f in path.iterdir())
    print(f"{name}: {'OK' if ok else 'FAILED'}  reload max|dlogit|={max_torch:.3g}  "
          f"numpy-f64 max|dlogit|={max_numpy:.3g}  min greedy gap={min_gap:.4f}  dir={size} bytes")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=sorted(FAMILIES), action="append", help="build/verify only this fixture")
    ap.add_argument("--verify", action="store_true", help="only verify the existing fixtures")
    args = ap.parse_args()
    names = args.only or list(FAMILIES)
    torch.set_num_threads(1)  # deterministic reductions, and polite on shared machines
    random_prompts = make_prompts()
    for name in names:
        source, files = FAMILIES[name]["tokenizer"]
        for fname in files:
            assert (source / fname).exists(), (
                f"run scripts/make_reference_fixtures.py and scripts/make_tokenizer_fixtures.py first ({source / fname})")
    if not args.verify:
        for name in names:
            build(name, family_prompts(name, random_prompts), family_chats(name))
    ok = all([verify(name, family_prompts(name, random_prompts), family_chats(name)) for name in names])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
