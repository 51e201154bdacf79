#!/usr/bin/env python3
"""Generate Hearth's MLX-quantized fixtures under Tests/Fixtures/mlx-*.

Run ONCE, BY HAND (never in CI); the outputs are committed. The stack is the
reference one (scripts/requirements-reference.txt) plus mlx and mlx-lm:

    python -m venv /opt/hearth-mlx
    /opt/hearth-mlx/bin/pip install -r scripts/requirements-reference.txt "mlx[cpu]==0.32.4" mlx-lm==0.32.2
    /opt/hearth-mlx/bin/python scripts/make_mlx_fixtures.py

Nothing is downloaded. Each fixture starts from the configuration and tokenizer
of a committed tiny checkpoint (Tests/Fixtures/phi3-mha, phi3-partial-tied,
phi2-tiny) with new, seeded random weights, saved by transformers and converted
here by `mlx_lm.convert` itself. Hearth's integer kernels quantize activations
to 8 bits, and these tests compare greedy continuations token for token, so the
weights are made less sensitive than the other fixtures': N(0, 0.05)
projections instead of 0.2 (those fixtures are chaotic: rounding one activation
changes later tokens), and a random bigram preference in lm_head (see
make_source). Seeds are searched until every greedy step of every prompt has a
top-1/top-2 margin of at least MIN_GREEDY_MARGIN, five to ten times the typical
logit error 8-bit activations cause on these models (mean 0.009–0.021; the largest
single error over all logits is 0.054–0.135).

For every converted checkpoint the script

1. records the logits at every prompt position and the greedy continuation that
   mlx-lm's own model computes on the quantized weights, with every float
   parameter (scales, biases, norms) upcast to f32 so MLX computes in f32;
2. cross-checks them independently: unpacks the uint32 words in numpy (element j
   of a row is bits 4(j mod 8)… of word j/8, lowest bits first), dequantizes
   w = scale·q + bias in f32, loads those weights into transformers' model of the
   source architecture and compares logits and greedy continuations;
3. writes reference.json in the format of the other fixtures (plus an "mlx"
   object with the conversion settings and the cross-check figures).

Tokenizer files are copied from the source fixture (tokenizer.model for the
Phi-3 ones, tokenizer.json for phi2-tiny); the tokenizer files mlx-lm writes are
not, so each fixture tokenizes exactly like its source.

Fixtures (config and tokenizer from the named fixture, new weights):
    mlx-phi3-q4-g64          phi3-mha: 4-bit, group 64, scales f16 (as mlx-community's Phi-3.5 4bit)
    mlx-phi3-tied-q4-g32     phi3-partial-tied (tied embeddings, partial rotary, like Phi-4-mini):
                             4-bit group 32, scales bf16, per-layer overrides: one module at 8 bits,
                             group 64, and one left unquantized (recorded as `false` in config.json)
    mlx-phi2-q4-g64          phi2-tiny (biases, lm_head bias): 4-bit, group 64, scales f16
    mlx-phi3-q8-g64          phi3-mha: 8-bit, group 64, scales f16
"""

import argparse
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import mlx.core as mx
import mlx_lm
import numpy as np
import torch
import transformers
from mlx.utils import tree_map
from mlx_lm import convert as mlx_convert
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_reference_fixtures as ref  # noqa: E402  (write_reference, dumps_compact)

transformers.utils.logging.set_verbosity_error()

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "Fixtures"
SCRIPT_NAME = "scripts/make_mlx_fixtures.py"
MAX_NEW_TOKENS = 16
MIN_GREEDY_MARGIN = 0.1
PROJECTION_STD = 0.05
EMBEDDING_STD = 0.2   # token embeddings and lm_head: logits spread ≈ 0.2·√64 = 1.6
MAX_SEEDS = 200
BIGRAM_GAIN = 0.6
TOKENIZER_FILES = ["tokenizer.model", "tokenizer.json", "tokenizer_config.json", "added_tokens.json",
                   "special_tokens_map.json", "generation_config.json"]


def tied_predicate(path, module):
    """Per-layer overrides for the tied fixture: 8 bits, group 64 for one MLP, one module unquantized."""
    if path == "model.layers.1.mlp.down_proj":
        return {"group_size": 64, "bits": 8, "mode": "affine"}
    if path == "model.layers.0.self_attn.o_proj":
        return False
    return True


RECIPES = [
    {"name": "mlx-phi3-q4-g64", "source": "phi3-mha", "group_size": 64, "bits": 4, "dtype": "float16",
     "seed": 7001},
    {"name": "mlx-phi3-tied-q4-g32", "source": "phi3-partial-tied", "group_size": 32, "bits": 4,
     "dtype": "bfloat16", "predicate": tied_predicate, "unquantized": ["model.layers.0.self_attn.o_proj"],
     "seed": 7002},
    # Phi-2's parallel residual spreads the logits less: a stronger bigram preference.
    {"name": "mlx-phi2-q4-g64", "source": "phi2-tiny", "group_size": 64, "bits": 4, "dtype": "float16",
     "seed": 7003, "bigram_gain": 1.5},
    {"name": "mlx-phi3-q8-g64", "source": "phi3-mha", "group_size": 64, "bits": 8, "dtype": "float16",
     "seed": 7004},
]


def tokenizer_size(src: Path) -> int:
    """Tokens the source's tokenizer knows (vocabulary + added tokens); higher ids are padding."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return len(AutoTokenizer.from_pretrained(str(src)))


def make_source(recipe, seed: int, out: Path):
    """The source fixture's config and tokenizer with new N(0, PROJECTION_STD) weights."""
    src = FIXTURES / recipe["source"]
    size = tokenizer_size(src)
    config = AutoConfig.from_pretrained(str(src))
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "norm" in name or "layernorm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name or "lm_head.weight" in name:
                p.copy_(EMBEDDING_STD * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(PROJECTION_STD * torch.randn(p.shape, generator=gen))
        # Give the output layer a preferred next token for each input token (a random
        # bigram table): row π(t) of lm_head gets BIGRAM_GAIN · e_t. The top-1/top-2
        # margins then mostly exceed the error of 8-bit activations, while attention and
        # the MLP still move the logits (the logits test checks every one of them). With
        # tied embeddings the same happens by itself: e_t · e_t stands out.
        if not config.tie_word_embeddings:
            perm = torch.randperm(size, generator=gen)
            embed = model.get_input_embeddings().weight
            model.get_output_embeddings().weight[perm] += recipe.get("bigram_gain", BIGRAM_GAIN) * embed[:size]
        # Padding ids have no token: keep their output rows small (as make_reference_fixtures.py does).
        model.get_output_embeddings().weight[size:] *= 0.05
    model.save_pretrained(str(out))
    for name in TOKENIZER_FILES:
        if (src / name).exists():
            shutil.copy(src / name, out / name)


def convert(recipe, src: Path, out: Path):
    with tempfile.TemporaryDirectory(prefix="hearth-mlx-") as work:
        tmp = Path(work) / "mlx"
        mlx_convert(str(src), mlx_path=str(tmp), quantize=True, q_group_size=recipe["group_size"],
                    q_bits=recipe["bits"], dtype=recipe["dtype"], quant_predicate=recipe.get("predicate"))
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for f in sorted(tmp.iterdir()):
            if f.name.endswith(".safetensors") or f.name in ("config.json", "model.safetensors.index.json"):
                shutil.copy(f, out / f.name)
    for name in TOKENIZER_FILES:
        if (src / name).exists():
            shutil.copy(src / name, out / name)
    cfg = json.loads((out / "config.json").read_text())
    # mlx-lm's phi3 model reads rope_theta only at the top level, not inside transformers 5's
    # `rope_parameters` (it would silently use 10000): state it at the top level too, as
    # published Phi configs do. Hearth reads either (rope_parameters wins; they agree).
    theta = cfg.get("rope_parameters", {}).get("rope_theta")
    if theta is not None and "rope_theta" not in cfg:
        cfg["rope_theta"] = theta
    for path in recipe.get("unquantized", []):
        # mlx-lm's loader reads `false` entries as "not quantized"; published mixed
        # conversions carry them, so the fixture does too.
        for key in ("quantization", "quantization_config"):
            cfg[key][path] = False
    (out / "config.json").write_text(json.dumps(cfg, indent=4) + "\n")


def eos_ids(path: Path):
    ids = set()
    for name in ("config.json", "generation_config.json"):
        f = path / name
        if f.exists():
            e = json.loads(f.read_text()).get("eos_token_id")
            ids |= set(e if isinstance(e, list) else [e] if e is not None else [])
    return ids


def mlx_model_f32(path: Path):
    model, _ = mlx_lm.load(str(path))
    model.update(tree_map(lambda p: p.astype(mx.float32) if mx.issubdtype(p.dtype, mx.floating) else p,
                          model.parameters()))
    return model


def mlx_logits(model, ids):
    out = model(mx.array([ids]))
    return np.array(out[0].astype(mx.float32))


def greedy_loop(logits_fn, ids, eos):
    """Full recompute at every step: argmax, stop at EOS; returns tokens, stop flag, min top-2 margin."""
    seq, new, margins = list(ids), [], []
    for _ in range(MAX_NEW_TOKENS):
        last = logits_fn(seq)[-1]
        top2 = np.sort(last)[-2:]
        margins.append(float(top2[1] - top2[0]))
        nxt = int(np.argmax(last))
        new.append(nxt)
        seq.append(nxt)
        if nxt in eos:
            break
    return new, bool(new) and new[-1] in eos, min(margins)


def dequantized_state_dict(path: Path, cfg: dict):
    """Unpacks MLX's uint32 words in numpy and applies w = scale·q + bias in f32."""
    tensors = {}
    for f in sorted(path.glob("*.safetensors")):
        tensors.update(load_file(str(f)))
    quant = cfg["quantization"]
    out = {}
    for name, t in tensors.items():
        if name.endswith(".scales") or name.endswith(".biases"):
            continue
        module = name[: -len(".weight")] if name.endswith(".weight") else None
        if module and module + ".scales" in tensors:
            entry = quant.get(module, True)
            params = entry if isinstance(entry, dict) else quant
            bits, group = params.get("bits", quant["bits"]), params.get("group_size", quant["group_size"])
            words = t.numpy().view(np.uint32)
            per = 32 // bits
            shifts = (np.arange(per, dtype=np.uint32) * bits)
            q = ((words[..., None] >> shifts) & ((1 << bits) - 1)).reshape(words.shape[0], -1).astype(np.float32)
            s = tensors[module + ".scales"].float().numpy()
            b = tensors[module + ".biases"].float().numpy()
            w = q * np.repeat(s, group, axis=1) + np.repeat(b, group, axis=1)
            out[name] = torch.from_numpy(w)
        else:
            out[name] = t.float()
    return out


def transformers_model(source: Path, state):
    config = AutoConfig.from_pretrained(str(source))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="eager")
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not (m == "lm_head.weight" and config.tie_word_embeddings)]
    assert not missing and not unexpected, (missing, unexpected)
    if config.tie_word_embeddings:
        model.tie_weights()
    model.eval()
    return model


@torch.no_grad()
def hf_logits(model, ids):
    return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float().numpy()


def attempt(recipe, seed: int, out: Path, source_ref: dict, min_margin: float):
    """Makes and converts one candidate; returns its results, or None when a margin is too small."""
    with tempfile.TemporaryDirectory(prefix="hearth-mlx-src-") as work:
        src = Path(work)
        make_source(recipe, seed, src)
        convert(recipe, src, out)
        cfg = json.loads((out / "config.json").read_text())
        eos = eos_ids(out)
        model = mlx_model_f32(out)
        results, margins = [], []
        for p in source_ref["prompts"]:
            ids = p["input_ids"]
            new, stopped, margin = greedy_loop(lambda s: mlx_logits(model, s), ids, eos)
            if margin < min_margin or any(t >= tokenizer_size(src) for t in new):
                return None
            margins.append(margin)
            results.append({"name": p["name"], "text": p["text"], "input_ids": ids, "logits": mlx_logits(model, ids),
                            "greedy": new, "greedy_stopped_on_eos": stopped})
        # Independent cross-check: numpy dequantization + transformers on the source architecture.
        hf = transformers_model(src, dequantized_state_dict(out, cfg))
        worst = 0.0
        for r in results:
            worst = max(worst, float(np.abs(r["logits"] - hf_logits(hf, r["input_ids"])).max()))
            hf_new, _, _ = greedy_loop(lambda s: hf_logits(hf, s), r["input_ids"], eos)
            assert hf_new == r["greedy"], f"{recipe['name']}/{r['name']}: transformers {hf_new} != mlx {r['greedy']}"
        assert worst < 1e-3, f"{recipe['name']}: mlx vs dequantized transformers max |Δlogit| {worst}"
        return cfg, results, margins, worst


def build(recipe, min_margin=MIN_GREEDY_MARGIN):
    out = FIXTURES / recipe["name"]
    source_ref = json.loads((FIXTURES / recipe["source"] / "reference.json").read_text(encoding="utf-8"))
    for seed in range(recipe["seed"], recipe["seed"] + MAX_SEEDS):
        found = attempt(recipe, seed, out, source_ref, min_margin)
        if found:
            break
    else:
        raise RuntimeError(f"{recipe['name']}: no seed with greedy margins >= {min_margin}")
    cfg, results, margins, worst = found
    header = {
        "generator": (f"{SCRIPT_NAME} (mlx {mx.__version__}, mlx-lm {mlx_lm.__version__}, torch {torch.__version__}, "
                      f"transformers {transformers.__version__}; logits: mlx-lm on the quantized model, f32 compute)"),
        "mlx": {"source": recipe["source"], "seed": seed, "quantization": cfg["quantization"], "dtype": recipe["dtype"],
                "crosscheck_max_abs_logit_diff_vs_transformers_on_dequantized_weights": worst,
                "min_greedy_margin": min(margins)},
    }
    ref.write_reference(out / "reference.json", header, results, source_ref.get("chat", []))
    print(f"{recipe['name']}: seed {seed}, cross-check max |Δlogit| {worst:.3g}, greedy margins {['%.4f' % m for m in margins]}, "
          f"files {sorted(f.name for f in out.iterdir())}")
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="build only this fixture")
    parser.add_argument("--min-margin", type=float, default=MIN_GREEDY_MARGIN,
                        help="smallest top-1/top-2 margin a greedy step may have (default %(default)s)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    mx.set_default_device(mx.cpu)
    for recipe in RECIPES:
        if args.only and recipe["name"] != args.only:
            continue
        build(recipe, args.min_margin)


if __name__ == "__main__":
    main()
