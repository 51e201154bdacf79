#!/usr/bin/env python3
"""Reference embeddings for Hearth's embedding tests: Tests/Fixtures/embeddings.json.

Run ONCE, BY HAND (never in CI), with the reference stack of
scripts/requirements-reference.txt (see scripts/make_reference_fixtures.py):

    /opt/hearth-ref/bin/python scripts/make_embedding_fixtures.py

For a few inputs on tiny fixture checkpoints (phi3-mha: texts tokenized by transformers
from the checkpoint's tokenizer files; llama-tiny and gemma3-tiny: the token-id prompts of
their reference.json) it runs the base model (`model.model`, the causal LM without its
output head) in float32 with eager attention, one input at a time with no padding, and
records from `last_hidden_state` (which is after the final norm):

    mean  the mean over every token (BOS included), L2-normalised
    last  the last token's state, L2-normalised

HearthEngineTests/EmbeddingTests asserts that Hearth's vectors are within 1e-4 cosine
distance of these on the f32 path. Nothing is downloaded; the weights are the committed
fixtures.
"""

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

transformers.utils.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "Fixtures"
OUTPUT = FIXTURES / "embeddings.json"

# Texts for the checkpoint with a real tokenizer (any script: the phi3 fixture's SentencePiece
# model falls back to bytes for characters it has not seen).
TEXTS = [
    ("fire", "The fire is a small promise that you have to keep all day."),
    ("tea", "我们一边喝茶一边聊天。"),
    ("short", "Bread."),
]
# Checkpoints without a usable tokenizer use the first three token-id prompts of their reference.json.
TOKEN_CHECKPOINTS = ["llama-tiny", "gemma3-tiny"]
TEXT_CHECKPOINTS = ["phi3-mha"]


def load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32, attn_implementation="eager")
    model.eval()
    return model


def unit(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.float64)
    return v / np.linalg.norm(v)


def embed(model, ids: list[int]) -> dict:
    with torch.no_grad():
        hidden = model.model(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()
    mean = unit(hidden.astype(np.float64).mean(axis=0))
    last = unit(hidden[-1])
    # 9 significant digits round-trip float32.
    return {"mean": [float(f"{x:.9g}") for x in mean], "last": [float(f"{x:.9g}") for x in last]}


def main() -> int:
    torch.manual_seed(0)
    checkpoints = {}
    for name in TEXT_CHECKPOINTS:
        path = FIXTURES / name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tok = AutoTokenizer.from_pretrained(str(path))
        model = load(path)
        inputs = []
        for key, text in TEXTS:
            ids = [int(i) for i in tok.encode(text, add_special_tokens=True)]
            inputs.append({"name": key, "text": text, "input_ids": ids, **embed(model, ids)})
        checkpoints[name] = inputs
    for name in TOKEN_CHECKPOINTS:
        path = FIXTURES / name
        reference = json.loads((path / "reference.json").read_text())
        model = load(path)
        inputs = []
        for prompt in reference["prompts"][:3]:
            ids = [int(i) for i in prompt["input_ids"]]
            inputs.append({"name": prompt["name"], "text": "", "input_ids": ids, **embed(model, ids)})
        checkpoints[name] = inputs
    document = {
        "generator": (
            f"scripts/make_embedding_fixtures.py (torch {torch.__version__}, transformers {transformers.__version__}, "
            f"numpy {np.__version__}; model.model(...).last_hidden_state in float32, eager attention, one input "
            "at a time, no padding; mean over all tokens and last token, L2-normalised)"
        ),
        "checkpoints": checkpoints,
    }
    OUTPUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUTPUT.relative_to(REPO_ROOT)}: " + ", ".join(f"{k} ({len(v)} inputs)" for k, v in checkpoints.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
