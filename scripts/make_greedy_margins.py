#!/usr/bin/env python3
"""Per-step greedy margins for the tiny checkpoint fixtures → Tests/Fixtures/<name>/greedy-margins.json.

For each checkpoint in CHECKPOINTS and each prompt of its reference.json (which is only
read), the checkpoint is loaded with transformers in float32 with eager attention, as
scripts/make_reference_fixtures.py and scripts/make_family_fixtures.py computed the
references, and one forward pass runs over input_ids + greedy. At greedy step i the logits
at the position that predicted greedy[i] give the margin: top-1 minus top-2 logit. The
argmax there must equal greedy[i]; a mismatch is reported (and makes the exit status 1).

LongRoPE checkpoints choose their factors from the sequence length (long once it exceeds
original_max_position_embeddings, and transformers' generate then recomputes the whole
sequence), so a step whose prefix is not longer than that uses a forward over the prefix
alone instead; every other step is also checked against such a prefix forward (the
largest difference is printed). A tie-free greedy step has margin > 0; small margins mark
the steps where an engine with different rounding may legitimately pick another token.

Run by hand from the repository root with the reference venv:

    /opt/hearth-ref/bin/python scripts/make_greedy_margins.py

Pinned versions (scripts/requirements-reference.txt): torch 2.15.0, transformers 5.23.0.
"""
import json
import os
import sys
import warnings

import torch
import transformers
from transformers import AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "Tests", "Fixtures")
CHECKPOINTS = ["phi3-mha", "phi3-gqa-longrope", "phi3-partial-tied", "phi2-tiny", "gemma3-tiny", "llama-tiny",
               "phi4-mini-tiny", "qwen2-tiny", "qwen3-tiny", "gemma4-tiny"]
LOW = 0.1


def load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert model.config._attn_implementation == "eager"
    return model


def longrope_original(config):
    """original_max_position_embeddings of a LongRoPE config, else None."""
    rope = getattr(config, "rope_parameters", None) or {}
    if rope.get("rope_type") != "longrope":
        return None
    return rope.get("original_max_position_embeddings") or config.original_max_position_embeddings


@torch.no_grad()
def logits(model, ids):
    out = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0]
    assert out.dtype == torch.float32
    return out.double()


def top2(row):
    v, i = torch.topk(row, 2)
    return int(i[0]), float(v[0] - v[1])


def main():
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    generator = (f"scripts/make_greedy_margins.py (transformers {transformers.__version__}, torch {torch.__version__}; "
                 "float32, eager attention; top-1 minus top-2 logit at each greedy step of reference.json)")
    mismatches, low, minima, worst_check = [], [], {}, 0.0
    for name in sys.argv[1:] or CHECKPOINTS:  # names on the command line: only those
        path = os.path.join(FIXTURES, name)
        ref = json.load(open(os.path.join(path, "reference.json")))
        model = load(path)
        original = longrope_original(model.config)
        prompts = {}
        for p in ref["prompts"]:
            ids, greedy = p["input_ids"], p["greedy"]
            full = logits(model, ids + greedy)
            margins = []
            for i, want in enumerate(greedy):
                prefix = len(ids) + i  # the sequence whose last position predicts greedy[i]
                alone = logits(model, ids + greedy[:i])[-1]
                if original is not None and prefix <= original:
                    row = alone  # short factors: the full pass used the long ones
                else:
                    row = full[prefix - 1]
                    worst_check = max(worst_check, abs(top2(row)[1] - top2(alone)[1]))
                got, margin = top2(row)
                if got != want:
                    mismatches.append((name, p["name"], i, want, got, margin))
                margins.append(round(margin, 6))
                if margin < LOW:
                    low.append((name, p["name"], i, round(margin, 6)))
            prompts[p["name"]] = margins
        minima[name] = min(min(m) for m in prompts.values())
        with open(os.path.join(path, "greedy-margins.json"), "w") as f:
            f.write("{\n  \"generator\": " + json.dumps(generator) + ",\n  \"prompts\": {\n"
                    + ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                                 for k, v in prompts.items())
                    + "\n  }\n}\n")
        rope = f", LongRoPE original context {original}" if original else ""
        print(f"{name}: min margin {minima[name]:.6f} over {sum(map(len, prompts.values()))} steps{rope}")
    print(f"largest |margin(one pass) - margin(prefix pass)| on steps taken from the one pass: {worst_check:.3g}")
    print(f"steps with margin < {LOW}: {low if low else 'none'}")
    if mismatches:
        print("argmax != reference greedy (checkpoint, prompt, step, greedy, argmax, margin):")
        for m in mismatches:
            print("  ", m)
        sys.exit(1)
    print("argmax == reference greedy at every step")


if __name__ == "__main__":
    main()
