#!/usr/bin/env python3
"""Token ids of the default model's vocabulary (Gemma 3 270M GGUF, a SentencePiece-style
`llama` vocabulary of 262,144 pieces) from HF `tokenizers` → Tests/Fixtures/gemma3-270m-tokens.json.

The GGUF file carries no tokenizer.json, so one is built from its vocabulary the way HF's own
Gemma 3 tokenizer.json is laid out: a BPE model with byte fallback whose merges are ordered by
the merged piece's score (transformers' `generate_merges`), the normalizer " " → "▁", no
pre-tokenizer, user-defined pieces (runs of spaces and line breaks, …) as non-special added
tokens matched on the raw text, control pieces as special added tokens. With
`--llama-server URL` (a `llama-server -m models/gemma-3-270m-q4_k_m.gguf` running) every text is
also tokenized by llama.cpp (`/tokenize`, parse_special on) and any difference stops the script:
llama.cpp is the reference for GGUF vocabularies.

Texts: Tests/Fixtures/corpus.txt and tokenizers/corpus-extra.txt whole (47 KB of English prose
and 1.4 KB of eight scripts), hand-written edge cases (runs of spaces and line breaks longer than
the longest such piece, control tokens written in the text, a literal "▁", NFC and NFD spellings,
characters that fall back to bytes), and 300 seeded random strings of vocabulary pieces, spaces and
line breaks, and 60 KB of the prose as one run (no line breaks). Ids exclude BOS (add_special_tokens=False).

Run by hand from the repository root with the reference venv (scripts/requirements-reference.txt):

    /opt/hearth-ref/bin/python scripts/make_gemma_tokenizer_fixture.py [--llama-server http://127.0.0.1:8080]
"""
import argparse
import json
import os
import random
import urllib.request
from importlib.metadata import version

import gguf
from tokenizers import AddedToken, Tokenizer, normalizers
from tokenizers.models import BPE
from transformers.tokenization_utils_base import generate_merges

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
OUT = os.path.join(ROOT, "Tests", "Fixtures", "gemma3-270m-tokens.json")
SEED = 20261125


def build():
    fields = gguf.GGUFReader(MODEL).fields
    tokens = fields["tokenizer.ggml.tokens"].contents()
    scores = fields["tokenizer.ggml.scores"].contents()
    types = fields["tokenizer.ggml.token_type"].contents()
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    normal = {t: i for t, i in vocab.items() if types[i] == 1}
    merges = generate_merges(normal, {t: scores[i] for t, i in vocab.items()})
    tk = Tokenizer(BPE(vocab=vocab, merges=merges, byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tk.normalizer = normalizers.Replace(" ", "\u2581")
    tk.add_tokens([AddedToken(t, normalized=False, special=False) for t, ty in zip(tokens, types) if ty == 4])
    tk.add_special_tokens([AddedToken(t, normalized=False, special=True) for t, ty in zip(tokens, types) if ty == 3])
    return tk, tokens, types


def texts(tokens, types):
    out = {}
    for name in ["corpus.txt", "tokenizers/corpus-extra.txt"]:
        with open(os.path.join(ROOT, "Tests", "Fixtures", name), encoding="utf-8") as f:
            out[name] = f.read()
    out["edge"] = (
        "a  b   c    d\t\te\n\n\nf " * 3 + " " * 70 + "x" + "\n" * 70 + "y"
        + "————————————————" * 3 + "<start_of_turn>user\nhi<end_of_turn>\n<unused17>"
        + " ▁literal ▁▁x ▁" + " café cafe\u0301 Å Å ﬃ "
        + "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🧑‍🚀 \u0000\u0001\u007f \ufeff"
        + " <bos><eos> <mask>"
    )
    # One run of 60 KB (no line breaks or runs of spaces, which are pieces of their own): the
    # encoder cuts long runs into chunks at spaces no merge crosses; `> </` is the one piece
    # with an inner space, so it is sprinkled in.
    words = " ".join(out["corpus.txt"].split())
    out["one-run"] = " > </ ".join([words, words[:7000], words[100:12000]]) + " x> </y"
    rng = random.Random(SEED)
    pool = [t for t, ty in zip(tokens, types) if ty in (1, 4)]
    controls = [t for t, ty in zip(tokens, types) if ty == 3]
    for k in range(300):
        parts = []
        for _ in range(rng.randint(1, 40)):
            r = rng.random()
            if r < 0.70:
                parts.append(rng.choice(pool).replace("\u2581", " "))
            elif r < 0.85:
                parts.append(" " * rng.randint(1, 4))
            elif r < 0.95:
                parts.append("\n" * rng.randint(1, 3))
            elif r < 0.98:
                parts.append(rng.choice(controls))
            else:
                parts.append(chr(rng.randint(0x80, 0x2FFF)))
        out[f"random-{k}"] = "".join(parts)
    return out


def llama(url, text):
    req = urllib.request.Request(
        url.rstrip("/") + "/tokenize",
        data=json.dumps({"content": text, "add_special": False, "parse_special": True}).encode(),
        headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))["tokens"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--llama-server", help="URL of a llama-server running the default model")
    args = p.parse_args()
    tk, tokens, types = build()
    cases = []
    checked = 0
    for name, text in texts(tokens, types).items():
        ids = tk.encode(text, add_special_tokens=False).ids
        if args.llama_server:
            ref = llama(args.llama_server, text)
            if ref != ids:
                i = next((i for i in range(min(len(ref), len(ids))) if ref[i] != ids[i]), min(len(ref), len(ids)))
                raise SystemExit(f"{name}: HF tokenizers and llama.cpp differ at {i}: {ids[i:i+5]} vs {ref[i:i+5]}")
            checked += 1
        case = {"name": name, "ids": ids}
        if name.startswith("random") or name in ("edge", "one-run"):
            case["text"] = text
        cases.append(case)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({
            "generator": f"scripts/make_gemma_tokenizer_fixture.py (tokenizers {version('tokenizers')}, "
                         f"transformers {version('transformers')}, gguf {version('gguf')}); "
                         f"{checked} of {len(cases)} texts also equal to llama.cpp's /tokenize",
            "model": "models/gemma-3-270m-q4_k_m.gguf",
            "cases": cases,
        }, f, ensure_ascii=False, separators=(",", ":"))
    print(f"wrote {OUT}: {len(cases)} texts, {checked} checked against llama.cpp")


if __name__ == "__main__":
    main()
