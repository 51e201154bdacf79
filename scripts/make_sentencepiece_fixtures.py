#!/usr/bin/env python3
"""SentencePiece models and reference ids for Hearth's pure-Swift SentencePiece
→ Tests/Fixtures/sentencepiece/.

Run through scripts/make-sentencepiece-fixtures.sh (a private venv with the pinned `sentencepiece`
and `protobuf` from PyPI); the outputs are committed. Nothing is downloaded but those packages.

    the text           the large multilingual text, generated here (seeded), stored as the cases of
                       ids.json (joined by blank lines they are the whole text): Tests/Fixtures/corpus.txt
                       and tokenizers/corpus-extra.txt, then random words in 24 scripts, emoji
                       sequences, digits and punctuation, runs of spaces, tabs and line breaks,
                       NBSP/ideographic/zero-width spaces, characters NFKC rewrites (full-width
                       Latin, ligatures, circled digits, half-width katakana, decomposed accents,
                       Hangul jamo), a literal "▁", user-defined and control pieces written in the
                       text, and rare characters that fall back to bytes. One case a paragraph.
    *.model            SentencePiece models trained here on that text (`SentencePieceTrainer`):
      unigram-nmt.model      unigram, nmt_nfkc, byte_fallback, user-defined and control symbols,
                             a few pieces re-typed UNUSED after training
      bpe-identity.model     BPE, identity normalization, extra whitespaces kept, whitespace-only
                             pieces, split digits, byte_fallback, user-defined symbols, a few
                             merged pieces re-typed UNUSED (libsentencepiece re-splits them)
      unigram-cf-suffix.model unigram, nfkc_cf, treat_whitespace_as_suffix, no byte fallback and
                             98% character coverage (runs of unknown characters)
      bpe-raw.model          BPE, nmt_nfkc_cf, add_dummy_prefix off, whitespace not escaped
      unigram-32k.model      unigram, 32,000 pieces, nmt_nfkc, byte_fallback (the load-time check;
                             trained on the text plus more seeded random words)
    ids.json           for every model above and Tests/Fixtures/phi3-mha/tokenizer.model, for every
                       case: libsentencepiece's ids (`encode`, no BOS/EOS) with the model as it is;
                       for the first NO_PREFIX_CASES cases also with NormalizerSpec.add_dummy_prefix
                       switched off (what Hearth does for HF's non-legacy rule); for the 32k model
                       the whole text as one input as well. Ids are stored as base64 of
                       little-endian uint16 (every vocabulary here is below 65,536 pieces), which
                       keeps the file a quarter of its size as JSON numbers.

Every id comes from the `sentencepiece` package; nothing is hand-written. Training is seeded and
single-threaded, so a re-run with the pinned versions writes the same files.
"""
import argparse
import array
import base64
import json
import os
import random
import sys
import tempfile
from importlib.metadata import version

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "Tests", "Fixtures")
OUT = os.path.join(FIXTURES, "sentencepiece")
SEED = 20261126
NO_PREFIX_CASES = 120

# Code-point ranges of letters per script (inclusive), for random words.
SCRIPTS = {
    "latin": [(0x61, 0x7A), (0x41, 0x5A)],
    "latin-ext": [(0xC0, 0xFF), (0x100, 0x17F)],
    "greek": [(0x3B1, 0x3C9), (0x391, 0x3A9)],
    "cyrillic": [(0x430, 0x44F), (0x410, 0x42F)],
    "armenian": [(0x561, 0x586)],
    "hebrew": [(0x5D0, 0x5EA)],
    "arabic": [(0x627, 0x64A)],
    "devanagari": [(0x915, 0x939), (0x93E, 0x94C)],
    "bengali": [(0x995, 0x9B9)],
    "tamil": [(0xB95, 0xBB9)],
    "thai": [(0xE01, 0xE2E), (0xE30, 0xE39)],
    "georgian": [(0x10D0, 0x10F0)],
    "ethiopic": [(0x1200, 0x1248)],
    "hangul": [(0xAC00, 0xAC00 + 400)],
    "hiragana": [(0x3041, 0x3093)],
    "katakana": [(0x30A1, 0x30F3)],
    "cjk": [(0x4E00, 0x4E00 + 1500)],
    "cjk-rare": [(0x9000, 0x9FA5)],
    "khmer": [(0x1780, 0x17A2)],
    "sinhala": [(0xD9A, 0xDC6)],
    "tibetan": [(0xF40, 0xF6C)],
    "mongolian": [(0x1820, 0x1877)],
    "cherokee": [(0x13A0, 0x13F4)],
    "math": [(0x1D400, 0x1D433)],
}
EMOJI = ["😀", "🤖", "🧠", "👍🏽", "👩🏽‍🚀", "👨‍👩‍👧‍👦", "🇯🇵", "🇫🇷", "❤️‍🔥", "🏳️‍🌈", "1️⃣", "#️⃣", "🐈‍⬛"]
# Characters NFKC (and case folding) rewrites, and spaces the normalizers treat specially.
NFKC = ["ＡＢＣ", "ｈｅｌｌｏ", "１２３", "ﬁ", "ﬂ", "①②", "㍿", "x²", "Ⅻ", "ｶﾀｶﾅ", "e\u0301", "A\u030A", "\u212B",
        "\u212A", "\u1100\u1161\u11A8", "ﾊﾟ", "…", "™", "㎏", "ǅ", "Straße", "İstanbul", "ΣΑΣ", "Ｈｅａｒｔｈ"]
SPACES = [" ", "  ", "   ", "\t", "\u00A0", "\u3000", "\u200B", "\u2009", " \t ", "\u2581"]
PUNCT = list(".,;:!?-—()[]{}\"'«»„“”‘’/\\@#$%^&*+=<>|~`") + ["。", "、", "！", "？", "،", "؟", "।"]
USER_DEFINED = ["<tag>", "[MASK]", "🤖", "<|im_start|>"]
CONTROL = ["<ctrl>", "<sep>"]
RARE = ["龘", "𠜎", "𝔘𝔫𝔦", "\U0001F9EA", "ᚠᛇᚻ", "ꙮ", "\u0F3A", "𓀀"]


def random_word(rng, script):
    ranges = SCRIPTS[script]
    n = rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 12])
    out = []
    for _ in range(n):
        lo, hi = rng.choice(ranges)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def random_paragraph(rng, scripts):
    parts = []
    for _ in range(rng.randint(3, 40)):
        r = rng.random()
        if r < 0.62:
            parts.append(random_word(rng, rng.choice(scripts)))
        elif r < 0.67:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 9))))
        elif r < 0.74:
            parts.append(rng.choice(PUNCT))
        elif r < 0.78:
            parts.append(rng.choice(EMOJI))
        elif r < 0.83:
            parts.append(rng.choice(NFKC))
        elif r < 0.86:
            parts.append(rng.choice(USER_DEFINED + CONTROL + ["<s>", "</s>", "<unk>", "<0x41>"]))
        elif r < 0.88:
            parts.append(rng.choice(RARE))
        elif r < 0.90:
            parts.append(rng.choice(["\n", "\n\n", "\r\n", " \n "]))
        parts.append(rng.choice(SPACES) if rng.random() < 0.3 else " ")
    text = "".join(parts)
    if rng.random() < 0.2:
        text = rng.choice(SPACES) + text
    if rng.random() < 0.2:
        text = text + rng.choice(SPACES)
    return text


def make_cases(rng):
    cases = []
    for name in ("corpus.txt", os.path.join("tokenizers", "corpus-extra.txt")):
        with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
            cases += [p for p in f.read().split("\n\n") if p.strip()]
    scripts = list(SCRIPTS)
    for i in range(700):
        # Mostly one or two scripts per paragraph, as real text is; some paragraphs mix many.
        chosen = rng.sample(scripts, rng.choice([1, 1, 2, 2, 3, 6]))
        if rng.random() < 0.5:
            chosen.append("latin")
        cases.append(random_paragraph(rng, chosen))
    # Edge cases: empty, whitespace only, single characters of each kind.
    cases += ["", " ", "   ", "\t\n", "\u2581", "\u2581\u2581x", "a", "▁hello", " leading", "trailing ",
              "<tag>", "<tag><tag>", "a<tag>b", "<ctrl>", "[MASK] x", "🤖🤖", "龘龘龘", "x" * 300,
              "ab" * 200, " ".join(["hello"] * 100), "ＡＢＣ ｶﾀｶﾅ ①", "e\u0301 \u212B"]
    return cases


def train(name, text_path, **options):
    prefix = os.path.join(OUT, name)
    spm.SentencePieceTrainer.train(
        input=text_path, model_prefix=prefix, num_threads=1, seed_sentencepiece_size=1000000,
        input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2, **options)
    os.remove(prefix + ".vocab")
    # The trainer records the (temporary) input path and output prefix; keep the file reproducible.
    proto = model_pb2.ModelProto()
    with open(prefix + ".model", "rb") as f:
        proto.ParseFromString(f.read())
    del proto.trainer_spec.input[:]
    proto.trainer_spec.input.append(os.path.basename(text_path))
    proto.trainer_spec.model_prefix = name
    with open(prefix + ".model", "wb") as f:
        f.write(proto.SerializeToString())
    return prefix + ".model"


def retype_unused(path, count, rng, pick):
    """Marks `count` pieces UNUSED (chosen by `pick`), as models with reserved pieces have."""
    proto = model_pb2.ModelProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    candidates = [i for i, p in enumerate(proto.pieces) if pick(p)]
    for i in rng.sample(candidates, count):
        proto.pieces[i].type = model_pb2.ModelProto.SentencePiece.UNUSED
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def packed(ids):
    """Ids as base64 of little-endian uint16."""
    values = array.array("H", ids)
    if sys.byteorder != "little":
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def processors(path):
    with open(path, "rb") as f:
        data = f.read()
    plain = spm.SentencePieceProcessor(model_proto=data)
    proto = model_pb2.ModelProto()
    proto.ParseFromString(data)
    proto.normalizer_spec.add_dummy_prefix = False
    no_prefix = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    return plain, no_prefix


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(SEED)
    cases = make_cases(rng)
    text = "\n\n".join(cases)
    tmp = tempfile.TemporaryDirectory()
    text_path = os.path.join(tmp.name, "multilingual.txt")
    with open(text_path, "w", encoding="utf-8", newline="") as f:
        f.write(text)

    n = model_pb2.ModelProto.SentencePiece.NORMAL
    common = dict(user_defined_symbols=USER_DEFINED, control_symbols=CONTROL)
    models = {}
    models["unigram-nmt"] = train("unigram-nmt", text_path, model_type="unigram", vocab_size=8000,
                                  character_coverage=0.995, byte_fallback=True, **common)
    retype_unused(models["unigram-nmt"], 40, rng, lambda p: p.type == n and len(p.piece) > 1)
    models["bpe-identity"] = train("bpe-identity", text_path, model_type="bpe", vocab_size=6000, character_coverage=0.99,
                                   normalization_rule_name="identity", remove_extra_whitespaces=False,
                                   allow_whitespace_only_pieces=True, split_digits=True, byte_fallback=True,
                                   **common)
    retype_unused(models["bpe-identity"], 40, rng, lambda p: p.type == n and len(p.piece) > 2)
    models["unigram-cf-suffix"] = train("unigram-cf-suffix", text_path, model_type="unigram", vocab_size=5000,
                                        normalization_rule_name="nfkc_cf", treat_whitespace_as_suffix=True,
                                        character_coverage=0.98, **common)
    models["bpe-raw"] = train("bpe-raw", text_path, model_type="bpe", vocab_size=5000,
                              normalization_rule_name="nmt_nfkc_cf", add_dummy_prefix=False,
                              character_coverage=0.98, user_defined_symbols=USER_DEFINED)
    proto = model_pb2.ModelProto()
    with open(models["bpe-raw"], "rb") as f:
        proto.ParseFromString(f.read())
    proto.normalizer_spec.escape_whitespaces = False
    with open(models["bpe-raw"], "wb") as f:
        f.write(proto.SerializeToString())

    # The 32k model needs more distinct text than the fixture holds; the extra is seeded, not kept.
    big = os.path.join(tmp.name, "big.txt")
    big_rng = random.Random(SEED + 1)
    with open(big, "w", encoding="utf-8") as f:
        f.write(text)
        for _ in range(12000):
            f.write("\n" + random_paragraph(big_rng, big_rng.sample(list(SCRIPTS), 2)))
    models["unigram-32k"] = train("unigram-32k", big, model_type="unigram", vocab_size=32000,
                                  byte_fallback=True, **common)

    models["phi3-mha"] = os.path.join(FIXTURES, "phi3-mha", "tokenizer.model")
    result = {
        "generator": "scripts/make_sentencepiece_fixtures.py",
        "sentencepiece": version("sentencepiece"),
        "whole_text": "the cases joined with two line feeds",
        "cases": cases,
        "models": {},
    }
    for name, path in models.items():
        plain, no_prefix = processors(path)
        assert plain.get_piece_size() < 65536
        whole = plain.encode(text)
        entry = {
            "file": os.path.relpath(path, FIXTURES),
            "pieces": plain.get_piece_size(),
            "ids": [packed(plain.encode(c)) for c in cases],
            "ids_no_dummy_prefix": [packed(no_prefix.encode(c)) for c in cases[:NO_PREFIX_CASES]],
            "whole_text": packed(whole) if name == "unigram-32k" else None,
            "bos": plain.bos_id(), "eos": plain.eos_id(), "unk": plain.unk_id(), "pad": plain.pad_id(),
        }
        result["models"][name] = entry
        print(f"{name}: {entry['pieces']} pieces, {len(whole)} ids for the whole text")
    with open(os.path.join(OUT, "ids.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"text: {len(text.encode())} bytes, {len(cases)} cases")


if __name__ == "__main__":
    main()
