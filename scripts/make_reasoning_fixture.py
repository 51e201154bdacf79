#!/usr/bin/env python3
"""Generate Tests/Fixtures/phi4-mini-reasoning-tiny: a tiny random-weight reasoning model in the
shape and with the chat template of microsoft/Phi-4-mini-reasoning (issue 57).

Run BY HAND by a developer, never in CI; the outputs are committed. It needs torch,
transformers, tokenizers and safetensors (the versions of scripts/requirements-reference.txt)
and runs after scripts/make_family_fixtures.py, whose phi4-mini-tiny it takes the model shape
and the o200k tokenizer from:

    python scripts/make_reasoning_fixture.py            # write + verify
    python scripts/make_reasoning_fixture.py --verify   # re-check the committed files

Nothing is downloaded. The fixture is:

  - config.json / generation_config.json / model.safetensors: Phi3ForCausalLM shaped like
    phi4-mini-tiny (and Phi-4-mini-reasoning: GQA, partial rotary 0.75, LongRoPE, tied
    embeddings, vocabulary padded to 1856), fresh seeded random weights N(0, 0.25), norms
    1 + 0.1 N(0, 1), saved by save_pretrained in float32;
  - tokenizer.json / tokenizer_config.json: phi4-mini-tiny's o200k tokenizer with `<think>`
    (1811) and `</think>` (1812) added as non-special added tokens (as Qwen3 and the
    DeepSeek-R1 distills declare them), and Phi-4-mini-reasoning's chat template, verbatim
    (it writes the default system line "Your name is Phi, an AI math expert developed by
    Microsoft." and does not open the block: the model writes `<think>` itself);
  - reference.json: for each of CHATS, the prompt as apply_chat_template renders it and its
    ids, and the ids of `<think>`, `</think>`, "\\n\\n" and `<think>\\n\\n</think>\\n\\n` (the
    no-think form), so the Swift tests check Hearth's tokenizer against transformers'.

The weights are random but for one row: the (tied) embedding of `<think>` is set along the
mean direction of the final normed hidden state at the end of the generation prompts of PROBES,
scaled so that `<think>` is the greedy first token after each of them by a margin of at least
OPEN_MARGIN logits. So the model opens a block the way Phi-4-mini-reasoning does, without a
logit bias (the Anthropic and Responses APIs have none); what it writes inside is random, and
only a budget, a logit bias or the length ends it. Tests that need a particular trace drive it
with a logit bias (the opening tag first, the closing tag nudged or banned) and a budget.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch
import transformers
from transformers import AutoTokenizer, Phi3Config, Phi3ForCausalLM

transformers.utils.logging.set_verbosity_error()

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "Fixtures"
SOURCE = FIXTURES / "phi4-mini-tiny"
TARGET = FIXTURES / "phi4-mini-reasoning-tiny"
SEED = 5757
THINK_ID = 1811
END_THINK_ID = 1812

# microsoft/Phi-4-mini-reasoning's tokenizer_config.json "chat_template", verbatim.
PHI4_MINI_REASONING_TEMPLATE = (
    "{{ '<|system|>Your name is Phi, an AI math expert developed by Microsoft.' }}"
    "{% for message in messages %}{% if message['role'] == 'system' %} {{ message['content'] }}"
    "{% if 'tools' in message and message['tools'] is not none %}{{ '<|tool|>' + message['tools'] + '<|/tool|>' }}"
    "{% endif %}{% endif %}{% endfor %}{{ '<|end|>' }}"
    "{% for message in messages %}{% if message['role'] != 'system' %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
)

OPEN_MARGIN = 6.0
# Generation prompts the block must open after: the real template's renderings of CHATS, and
# short conversations as Hearth's phi4-mini renderer writes them (without the template's
# default system line) -- the prompts of the Swift tests and scripts/check_reasoning.py.
PROBES = [
    "<|user|>Hi<|end|><|assistant|>",
    "<|user|>What is 2+2?<|end|><|assistant|>",
    "<|user|>Hello<|end|><|assistant|>",
    "<|user|>What is the weather in Oslo?<|end|><|assistant|>",
    "<|system|>Answer briefly.<|end|><|user|>Hi<|end|><|assistant|>",
]

CHATS = [
    [{"role": "user", "content": "How to solve 3*x^2+4*x+5=1?"}],
    [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is 12 times 12?"},
    ],
]


def added(content, special):
    return {
        "content": content,
        "lstrip": False,
        "normalized": False,
        "rstrip": False,
        "single_word": False,
        "special": special,
    }


def write_tokenizer():
    tokenizer = json.loads((SOURCE / "tokenizer.json").read_text())
    used = {token["id"] for token in tokenizer["added_tokens"]}
    assert THINK_ID not in used and END_THINK_ID not in used
    for token_id, content in [(THINK_ID, "<think>"), (END_THINK_ID, "</think>")]:
        entry = added(content, False)
        entry["id"] = token_id
        tokenizer["added_tokens"].append(entry)
    (TARGET / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False, indent=2) + "\n")
    config = json.loads((SOURCE / "tokenizer_config.json").read_text())
    config["added_tokens_decoder"][str(THINK_ID)] = added("<think>", False)
    config["added_tokens_decoder"][str(END_THINK_ID)] = added("</think>", False)
    config["chat_template"] = PHI4_MINI_REASONING_TEMPLATE
    (TARGET / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n")


def write_model():
    config = Phi3Config.from_pretrained(SOURCE)
    torch.manual_seed(SEED)
    model = Phi3ForCausalLM(config).eval()
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            if name.endswith("norm.weight"):
                tensor.copy_(1 + 0.1 * torch.randn_like(tensor))
            else:
                tensor.copy_(0.25 * torch.randn_like(tensor))
    open_the_block(model)
    model.save_pretrained(TARGET, safe_serialization=True)
    shutil.copy(SOURCE / "generation_config.json", TARGET / "generation_config.json")


def probe_ids(tokenizer):
    prompts = list(PROBES)
    for messages in CHATS:
        prompts.append(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    return [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]


def final_hidden(model, ids):
    with torch.no_grad():
        out = model.model(torch.tensor([ids]))
    return out.last_hidden_state[0, -1]  # after the final norm: logits = h @ E.T


def open_the_block(model):
    """Sets `<think>`'s (tied) embedding so it is the greedy first token after every probe."""
    tokenizer = AutoTokenizer.from_pretrained(TARGET)
    embedding = model.model.embed_tokens.weight
    with torch.no_grad():
        hidden = [final_hidden(model, ids) for ids in probe_ids(tokenizer)]
        direction = torch.stack([h / h.norm() for h in hidden]).mean(0)
        direction /= direction.norm()
        scale = 0.0
        for h in hidden:
            logits = h @ embedding.T
            logits[THINK_ID] = -float("inf")
            along = float(h @ direction)
            assert along > 0, "a probe's hidden state points away from the mean direction"
            scale = max(scale, (float(logits.max()) + OPEN_MARGIN) / along)
        embedding[THINK_ID] = scale * direction


def reference():
    tokenizer = AutoTokenizer.from_pretrained(TARGET)
    chats = []
    for messages in CHATS:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        chats.append({"messages": messages, "prompt": text, "ids": ids})
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    return {
        "generated_by": "scripts/make_reasoning_fixture.py",
        "transformers": transformers.__version__,
        "think": encode("<think>"),
        "end_think": encode("</think>"),
        "separator": encode("\n\n"),
        "no_think": encode("<think>\n\n</think>\n\n"),
        "chats": chats,
    }


def verify():
    expected = json.loads((TARGET / "reference.json").read_text())
    actual = reference()
    assert actual["think"] == [THINK_ID], actual["think"]
    assert actual["end_think"] == [END_THINK_ID], actual["end_think"]
    for key in ["think", "end_think", "separator", "no_think", "chats"]:
        assert actual[key] == expected[key], f"{key}: {actual[key]} != {expected[key]}"
    for chat in actual["chats"]:
        assert chat["prompt"].startswith("<|system|>Your name is Phi, an AI math expert developed by Microsoft.")
        assert chat["prompt"].endswith("<|assistant|>")
    model = Phi3ForCausalLM.from_pretrained(TARGET).eval()
    tokenizer = AutoTokenizer.from_pretrained(TARGET)
    for ids in probe_ids(tokenizer):
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        assert torch.isfinite(logits).all()
        top2 = torch.topk(logits, 2)
        assert int(top2.indices[0]) == THINK_ID, "the block does not open after a probe"
        assert float(top2.values[0] - top2.values[1]) >= OPEN_MARGIN - 1e-3
    print(f"verified {TARGET.relative_to(REPO_ROOT)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verify", action="store_true", help="only re-check the committed files")
    args = parser.parse_args()
    if not args.verify:
        TARGET.mkdir(parents=True, exist_ok=True)
        write_tokenizer()
        write_model()
        (TARGET / "reference.json").write_text(json.dumps(reference(), ensure_ascii=False, indent=2) + "\n")
    verify()


if __name__ == "__main__":
    sys.exit(main())
