#!/usr/bin/env python3
"""Writes Tests/Fixtures/sampler-reference.json: the distributions reference implementations
sample from, for fixed logits vectors and sampling settings (SamplerReferenceTests).

References
- Temperature, top-k, top-p, min-p and the repetition penalty: HF transformers' logits
  processors, run in its order (`GenerationMixin._get_logits_processor`: the repetition
  penalty, then TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper).
  The repetition penalty is HF's multiplicative one (RepetitionPenaltyLogitsProcessor) over
  the tokens Hearth passes as `recent` (the last `repetitionWindow` of them, as llama.cpp's
  `penalty_last_n`; HF itself looks at the whole input).
- Frequency and presence penalties: OpenAI's additive definition
  (mu[j] -= c[j] * frequency + (c[j] > 0) * presence, c = times generated so far) in vLLM's
  composition (vllm/model_executor/layers/utils.py `apply_penalties`: the repetition
  penalty, then frequency, then presence, all before temperature), written out below with
  torch since vLLM does not install on a CPU-only machine. transformers has no such processor.
- `logit_bias`: HF's SequenceBiasLogitsProcessor with one-token sequences (OpenAI adds the
  bias to the logit before anything else).
- Defaults: HF's GenerationConfig decides greedy vs sampling for generation_config.json files.

Every case is checked for clear boundaries before it is written (the test never asserts the
outcome of a near-tie): the k-th and (k+1)-th logits, the cumulative mass around top-p and
each probability against min-p's threshold are at least MARGIN apart, and kept tokens have
distinct logits. Composition cases are also run in other orders and must come out different,
so a test against them fails if Hearth's order changes.

    python3 -m venv /tmp/venv-samp
    /tmp/venv-samp/bin/pip install --find-links /opt/wheels torch transformers numpy
    /tmp/venv-samp/bin/python scripts/make_sampler_fixture.py
"""

import json
import pathlib

import numpy as np
import torch
import transformers
from transformers import GenerationConfig
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    SequenceBiasLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

VOCAB = 48
MARGIN = 2e-3
OUT = pathlib.Path(__file__).resolve().parent.parent / "Tests/Fixtures/sampler-reference.json"


def penalties_vllm(logits, recent, generated, repetition, frequency, presence):
    """OpenAI's frequency/presence penalties after the repetition penalty, as vLLM composes them."""
    logits = logits.clone()
    seen = torch.zeros(VOCAB, dtype=torch.bool)
    for token in recent:
        seen[token] = True
    factor = torch.where(seen, torch.tensor(repetition, dtype=torch.float32), torch.tensor(1.0))
    logits = torch.where(logits > 0, logits / factor, logits * factor)
    counts = torch.zeros(VOCAB, dtype=torch.float32)
    for token, count in generated.items():
        counts[int(token)] = count
    logits -= frequency * counts
    logits -= presence * (counts > 0).to(torch.float32)
    return logits


def process(logits, o, order=("penalties", "temperature", "top_k", "top_p", "min_p")):
    """The filtered, processed logits (filtered tokens are -inf) in the given order."""
    ids = torch.tensor([o["recent"][-o["repetition_window"]:] or [0]])
    scores = torch.tensor(logits, dtype=torch.float32)[None, :]
    if o["logit_bias"]:
        bias = SequenceBiasLogitsProcessor({(int(k),): v for k, v in o["logit_bias"].items()})
        scores = bias(ids, scores)
    for step in order:
        if step == "penalties":
            if o["frequency_penalty"] or o["presence_penalty"]:
                scores = penalties_vllm(
                    scores[0], o["recent"][-o["repetition_window"]:], o["generated"], o["repetition_penalty"],
                    o["frequency_penalty"], o["presence_penalty"])[None, :]
            elif o["repetition_penalty"] != 1 and o["recent"]:
                scores = RepetitionPenaltyLogitsProcessor(o["repetition_penalty"])(ids, scores)
        elif step == "temperature":
            scores = TemperatureLogitsWarper(o["temperature"])(ids, scores)
        elif step == "top_k" and o["top_k"] > 0:
            scores = TopKLogitsWarper(o["top_k"])(ids, scores)
        elif step == "top_p" and o["top_p"] < 1:
            scores = TopPLogitsWarper(o["top_p"])(ids, scores)
        elif step == "min_p" and o["min_p"] > 0:
            scores = MinPLogitsWarper(o["min_p"])(ids, scores)
    return scores[0]


def distribution(scores):
    """[(id, p)] of the kept tokens, most likely first."""
    probs = torch.softmax(scores.to(torch.float64), dim=-1)
    kept = [(i, float(probs[i])) for i in range(VOCAB) if torch.isfinite(scores[i]) and probs[i] > 0]
    return sorted(kept, key=lambda x: -x[1])


def clear(logits, o):
    """Why the case is not clear of near-ties (None when it is), checked in float64."""
    penalised = process(logits, {**o, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}).double()
    x = np.sort(penalised.numpy() / o["temperature"])[::-1]
    if o["top_k"] > 0 and x[o["top_k"] - 1] - x[o["top_k"]] < MARGIN:
        return "top-k boundary"
    k = o["top_k"] or VOCAB
    kept = x[:k]
    if len(kept) > 1 and np.min(kept[:-1] - kept[1:]) < 1e-3:
        return "tied logits"
    p = np.exp(kept - kept[0])
    p /= p.sum()
    if o["top_p"] < 1:
        cumulative = np.cumsum(p)
        if np.min(np.abs(cumulative - o["top_p"])) < MARGIN:
            return "top-p boundary"
        p = p[: int(np.argmax(cumulative >= o["top_p"])) + 1]
    if o["min_p"] > 0 and np.min(np.abs(p / p[0] - o["min_p"])) < MARGIN:
        return "min-p boundary"
    return None


def total_variation(a, b):
    pa, pb = dict(a), dict(b)
    return 0.5 * sum(abs(pa.get(i, 0) - pb.get(i, 0)) for i in set(pa) | set(pb))


def options(**given):
    o = dict(
        temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0, repetition_window=64,
        presence_penalty=0.0, frequency_penalty=0.0, recent=[], generated={}, logit_bias={})
    o.update(given)
    return o


# name: (options, logits scale, alternative orders that must give another distribution)
SWAPPED = {
    "top-p before top-k": ("penalties", "temperature", "top_p", "top_k", "min_p"),
    "min-p before top-p": ("penalties", "temperature", "top_k", "min_p", "top_p"),
    "temperature after the filters": ("penalties", "top_k", "top_p", "min_p", "temperature"),
}
PENALTIES_AFTER_TEMPERATURE = {"penalties after temperature": ("temperature", "penalties", "top_k", "top_p", "min_p")}
CASES = {
    "temperature 0.7": (options(temperature=0.7), 2.0, {}),
    "temperature 1.8": (options(temperature=1.8), 2.0, {}),
    "top-k 7": (options(top_k=7), 2.0, {}),
    "top-p 0.8": (options(top_p=0.8), 1.5, {}),
    "min-p 0.1": (options(min_p=0.1), 1.5, {}),
    "repetition penalty 1.3": (
        options(repetition_penalty=1.3, recent=[1, 2, 3, 5, 8, 13, 21, 34, 2, 3]), 2.0, {}),
    "repetition window": (
        # 80 recent tokens, window 64: the first 16 (ids 40-47, twice) are not penalised.
        options(repetition_penalty=1.5, recent=[40 + i % 8 for i in range(16)] + [i % 16 for i in range(64)]), 2.0, {}),
    "frequency and presence": (
        options(frequency_penalty=0.5, presence_penalty=0.7, generated={"4": 1, "9": 3, "17": 2, "30": 5}), 2.0, {}),
    "negative frequency and presence": (
        options(frequency_penalty=-0.4, presence_penalty=-0.3, generated={"4": 2, "11": 1}), 2.0, {}),
    "logit bias": (options(logit_bias={"3": 2.5, "5": -1.0, "20": 4.0}), 2.0, {}),
    # Hearth's defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05) on a flat vocabulary.
    "defaults": (options(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05), 1.0, {}),
    "composition": (options(temperature=0.8, top_k=12, top_p=0.85, min_p=0.2), 0.8, SWAPPED),
    "composition with penalties": (
        options(
            temperature=0.6, top_k=16, top_p=0.9, min_p=0.08, repetition_penalty=1.2, frequency_penalty=0.3,
            presence_penalty=0.4, recent=[0, 1, 2, 3, 4, 5, 6, 7, 2, 3, 3], generated={"2": 2, "3": 3, "6": 1}),
        1.0, {**SWAPPED, **PENALTIES_AFTER_TEMPERATURE}),
}


def make_case(name, o, scale, alternatives):
    for seed in range(1000):
        rng = np.random.default_rng(seed)
        logits = [round(float(v), 4) for v in rng.normal(0, scale, VOCAB)]
        if clear(logits, o):
            continue
        expected = distribution(process(logits, o))
        distances = {alt: total_variation(expected, distribution(process(logits, o, order))) for alt, order in alternatives.items()}
        if any(d < 0.02 for d in distances.values()):
            continue
        # The adjustments must matter: without them (or with the whole history instead of the
        # window) the distribution is another, and the greedy pick moves.
        plain = {**o, "repetition_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0, "logit_bias": {}}
        if plain != o and total_variation(expected, distribution(process(logits, plain))) < 0.02:
            continue
        whole = {**o, "repetition_window": len(o["recent"])}
        if len(o["recent"]) > o["repetition_window"] and total_variation(expected, distribution(process(logits, whole))) < 0.02:
            continue
        penalised = process(logits, {**o, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0})
        top = torch.topk(penalised, 2).values
        if plain != o and int(torch.argmax(penalised)) == int(np.argmax(logits)):
            continue
        return {
            "name": name,
            "logits": logits,
            "temperature": o["temperature"],
            "topK": o["top_k"],
            "topP": o["top_p"],
            "minP": o["min_p"],
            "repetitionPenalty": o["repetition_penalty"],
            "repetitionWindow": o["repetition_window"],
            "presencePenalty": o["presence_penalty"],
            "frequencyPenalty": o["frequency_penalty"],
            "logitBias": o["logit_bias"],
            "recent": o["recent"],
            "generated": o["generated"],
            "kept": [i for i, _ in expected],
            "probabilities": [p for _, p in expected],
            "greedy": int(torch.argmax(penalised)),
            "greedyMargin": float(top[0] - top[1]),
            "otherOrders": distances,
        }
    raise SystemExit(f"no clear logits found for {name}")


# generation_config.json contents: HF's generation mode for each (greedy or sampling).
GENERATION_CONFIGS = [
    {"do_sample": False},
    {"do_sample": False, "temperature": 0.6, "top_p": 0.9},
    {"do_sample": True},
    {"do_sample": True, "temperature": 0.6, "top_p": 0.9, "top_k": 20},
    {"do_sample": True, "temperature": 0.7, "repetition_penalty": 1.1},
    # No do_sample: HF's default is False (greedy); Hearth samples (its documented rule: only
    # `do_sample: false` means greedy). The test asserts Hearth's rule here and says so.
    {"temperature": 0.6, "top_p": 0.9},
]


def main():
    cases = [make_case(name, *spec) for name, spec in CASES.items()]
    configs = []
    for config in GENERATION_CONFIGS:
        hf = GenerationConfig(**config)  # warns that temperature is unused when do_sample is false
        mode = hf.get_generation_mode()
        configs.append({"config": config, "greedy": mode.value == "greedy_search"})
    fixture = {
        "generator": "scripts/make_sampler_fixture.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "margin": MARGIN,
        "cases": cases,
        "generationConfigs": configs,
    }
    OUT.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")
    for case in cases:
        print(f"  {case['name']}: {len(case['kept'])} kept, greedy margin {case['greedyMargin']:.3f}, other orders {case['otherOrders']}")


if __name__ == "__main__":
    main()
