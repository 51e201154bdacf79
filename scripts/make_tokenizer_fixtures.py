#!/usr/bin/env python3
"""Generate Hearth's tokenizer.json fixtures (byte-level BPE, o200k, llama-3, Phi-3 converted).

Run BY HAND by a developer, never in CI; the outputs are committed. It needs the
reference stack of scripts/requirements-reference.txt and must run after
scripts/make_reference_fixtures.py (it converts Tests/Fixtures/phi3-mha's
tokenizer.model) and before scripts/make_family_fixtures.py (phi2-tiny and
phi4-mini-tiny copy the tokenizers written here):

    /opt/hearth-ref/bin/python scripts/make_tokenizer_fixtures.py           # write + verify
    /opt/hearth-ref/bin/python scripts/make_tokenizer_fixtures.py --verify  # re-check committed files

Nothing is downloaded. Every tokenizer is trained here with HF `tokenizers` on
Tests/Fixtures/corpus.txt plus EXTRA_CORPUS below (Japanese, Arabic, Hindi, emoji
sequences, code, contractions, whitespace runs), with a tiny vocabulary:

    Tests/Fixtures/tokenizers/corpus-extra.txt   the extra training text
    Tests/Fixtures/tokenizers/gpt2-bpe/          GPT-2-style byte-level BPE (ByteLevel pre-tokenizer with
                                                 the GPT-2 regex), Phi-2's added tokens: <|endoftext|> and
                                                 the CodeGen whitespace runs (31..2 spaces, 9..2 tabs,
                                                 special=false, normalized=true); tokenizer_config.json
                                                 like Phi-2's. Also the tokenizer of phi2-tiny.
    Tests/Fixtures/tokenizers/o200k-bpe/         Split(o200k regex, Isolated) + ByteLevel(use_regex=false),
                                                 Phi-4-mini's special tokens and chat template. Also the
                                                 tokenizer of phi4-mini-tiny.
    Tests/Fixtures/tokenizers/llama3-bpe/        Split(llama-3 regex) + ByteLevel(use_regex=false),
                                                 ignore_merges, TemplateProcessing adding <|begin_of_text|>,
                                                 merges written in the legacy "a b" string form.
    Tests/Fixtures/phi3-mha/tokenizer.json       transformers' conversion of phi3-mha's tokenizer.model
                                                 (BPE + byte_fallback, Metaspace prepend_scheme "first")
    Tests/Fixtures/tokenizers/phi3-legacy/       the same vocabulary in the layout transformers 4 wrote for
                                                 legacy Llama tokenizers: Prepend + Replace normalizers, no
                                                 pre-tokenizer, "a b" merges (an edit of the conversion above;
                                                 its ids still come from `tokenizers` running it)
    Tests/Fixtures/tokenizers/misc-bpe/          NFKC/Lowercase/Replace/Strip normalizers, WhitespaceSplit/
                                                 Punctuation/Digits pre-tokenizers, a character-level BPE with
                                                 a fused <unk> and a "##" continuing-subword prefix, added
                                                 tokens with lstrip/rstrip/single_word/normalized, a
                                                 TemplateProcessing that appends [SEP]
    Tests/Fixtures/tokenizers/qwen2-bpe/         Qwen2/2.5's pipeline: NFC normalizer, Split(qwen2 regex, Isolated) +
                                                 ByteLevel(use_regex=false), ByteLevel post-processor (no BOS),
                                                 Qwen2.5's 22 added tokens (<|endoftext|>, <|im_start|>, <|im_end|>
                                                 and the vision/tool/FIM ones, special as in Qwen2.5's file) and
                                                 Qwen2.5-7B-Instruct's chat template (from Tests/Fixtures/chat-templates,
                                                 taken from llama.cpp's models/templates). Also the tokenizer of
                                                 qwen2-tiny (scripts/make_family_fixtures.py).
    Tests/Fixtures/tokenizers/qwen3-bpe/         the same vocabulary with Qwen3's 26 added tokens (<tool_response>,
                                                 </tool_response>, <think>, </think> added, not special) and
                                                 Qwen3-0.6B's chat template. Also the tokenizer of qwen3-tiny.
    Tests/Fixtures/tokenizers/cases.json         for every tokenizer above and every text of CASES:
                                                 ids with and without special tokens, tokens, and the
                                                 decoded text (skip_special_tokens false and true) as HF
                                                 `tokenizers` gives them; transformers' AutoTokenizer on the
                                                 same directory must give the same ids (checked here).

Every expected value comes from `tokenizers` / transformers; nothing is hand-written.
Training is deterministic, so a re-run with the pinned versions rewrites the same files.
"""

import argparse
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import tokenizers
import transformers
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                        trainers)
from transformers import AutoTokenizer, LlamaTokenizer

transformers.utils.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "Tests" / "Fixtures"
OUT = FIXTURES / "tokenizers"
PHI3_DIR = FIXTURES / "phi3-mha"
SCRIPT_NAME = "scripts/make_tokenizer_fixtures.py"

# The pre-tokenizer patterns exactly as they appear in real tokenizer.json files.
O200K_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)

# Phi-2 (CodeGen) adds whitespace runs as ordinary (non-special) tokens after <|endoftext|>.
PHI2_WHITESPACE = [" " * n for n in range(31, 1, -1)] + ["\t" * n for n in range(9, 1, -1)]

# Phi-4-mini's special tokens (its ids start at 199999; here right after the trained vocabulary).
PHI4_SPECIALS = ["<|endoftext|>", "<|endofprompt|>", "<|assistant|>", "<|end|>", "<|user|>", "<|system|>",
                 "<|tool|>", "<|/tool|>", "<|tool_call|>", "<|/tool_call|>", "<|tool_response|>", "<|tag|>"]
# Phi-4-mini-instruct's tokenizer_config.json chat_template, verbatim.
PHI4_MINI_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and "
    "message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + "
    "message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + "
    "message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
)
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen2.5's added tokens in id order (151643... there; here right after the trained vocabulary),
# with their `special` flag as in Qwen2.5's tokenizer.json; Qwen3 appends QWEN3_EXTRA.
QWEN2_ADDED = ([("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True)]
               + [(t, True) for t in ["<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
                                      "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
                                      "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]]
               + [("<tool_call>", False), ("</tool_call>", False)]
               + [(t, False) for t in ["<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                                       "<|repo_name|>", "<|file_sep|>"]])
QWEN3_EXTRA = [("<tool_response>", False), ("</tool_response>", False), ("<think>", False), ("</think>", False)]
TEMPLATES = FIXTURES / "chat-templates" / "templates"
QWEN25_CHAT_TEMPLATE = TEMPLATES / "llama.cpp--Qwen-Qwen2.5-7B-Instruct.jinja"
QWEN3_CHAT_TEMPLATE = TEMPLATES / "llama.cpp--Qwen-Qwen3-0.6B.jinja"
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]

TOKENIZERS = {
    # name: trained vocabulary size (byte alphabet included), pattern, extra options
    "gpt2-bpe": {"vocab_size": 960},
    "o200k-bpe": {"vocab_size": 1799},
    "llama3-bpe": {"vocab_size": 1200},
    "misc-bpe": {"vocab_size": 700},
    "qwen2-bpe": {"vocab_size": 640},
}

EXTRA_CORPUS = """\
日本語の文章です。今日はいい天気ですね。東京へ行きます。カタカナとひらがな、漢字が混ざっています。
私は毎朝コーヒーを飲みます。駅まで歩いて十分かかります。
مرحبا بالعالم. اللغة العربية جميلة. كتبتُ رسالةً إلى صديقي أمس.
نحن نتعلم البرمجة كل يوم، والقهوة ساخنة.
नमस्ते दुनिया। हिन्दी भाषा सुंदर है। मैं आज बाज़ार जाऊँगा।
हम हर दिन पढ़ते हैं और चाय पीते हैं।
Emoji: 👩🏽‍🚀 👨‍👩‍👧‍👦 🇺🇸🇫🇷🇯🇵 👍🏿👍🏻 ❤️‍🔥 🏳️‍🌈 1️⃣ #️⃣ 😀😃😄 🤖🧠
Contractions: I'm, you're, he's, she'll, we've, they'd, isn't, can't, won't, I'M, DON'T, It's, rock'n'roll.
Whitespace:    four spaces,\ttab,\t\ttwo tabs,  two spaces
    indented line
\t\tindented with tabs
Numbers: 1234567890 3.14159 1,000,000 ½ ² Ⅻ １２３ ٣٤٥ ४५६
def tokenize(text: str) -> list[int]:
    ids = []
    for word in text.split():
        if word in vocab:
            ids.append(vocab[word])
    return ids

struct Point { var x: Double; var y: Double }
let p = Point(x: 1.5, y: -2.25)  // a comment
if (a != b && c <= d) { return a->next; }
"""

CASES = [
    "Hello world",
    "Hello world!",
    " Hello world",
    "hello   world",
    "The quick brown fox jumps over the lazy dog.",
    "The fire is a small promise that you have to keep all day.",
    "antidisestablishmentarianism",
    "HTTPServerError in iPhone and McDonald's CamelCaseWords",
    "ALL CAPS SENTENCE WITH WORDS",
    "I'm sure you're right, he's here, she'll come, we've won, they'd go, it's fine.",
    "I'M SURE YOU'RE RIGHT; DON'T SHOUT. We'Ve MiXeD 'S cases",
    "rock'n'roll 'tis ''quoted'' don't''s",
    "'s 't 're 've 'm 'll 'd",
    "long s: 'ſ and 'ſt",
    "你好，世界",
    "今天天气很好，我们去公园散步吧。",
    "我们一边喝茶一边聊天奶奶写了一个字龘而且没有标点符号的很长的一段中文文字也要能正确处理才行",
    "龘",
    "日本語の文章です。カタカナとひらがな。",
    "Привет, мир! Зимой в деревне рано темнеет.",
    "ЁЛКА и ёлка",
    "مرحبا بالعالم، كتبتُ رسالةً.",
    "नमस्ते दुनिया। हिन्दी भाषा सुंदर है।",
    "สวัสดีครับ",
    "안녕하세요 세계",
    "Ελληνικά γράμματα",
    "naïve café résumé",
    "cafe\u0301 combining e\u0301",
    "\u0301leading combining mark",
    "🙂",
    "🔥🍞",
    "👩‍💻",
    "👨‍👩‍👧‍👦 family",
    "👩🏽‍🚀 astronaut, 👍🏿 👍🏻",
    "🇺🇸🇫🇷🇯🇵 flags",
    "❤️ love ❤️‍🔥",
    "1️⃣ #️⃣ keycaps",
    "😀😃😄😁😆",
    "12345",
    "1234567890",
    "3.14159",
    "2024-03-17 09:35",
    "-42 + 7 = -35",
    "1,000,000 and 1.000.000",
    "½ ² Ⅻ １２３ ٣٤٥ ४५६",
    "$19.99, €5.50, £3, ¥1200",
    "def f(x):\n    return x * 2\n",
    "def tokenize(text: str) -> list[int]:\n    ids = []\n    for word in text.split():\n        ids.append(vocab[word])\n    return ids\n",
    "if (a != b && c <= d) { return a->next; }",
    "path/to/file.txt and http://example.com/a/b?c=d",
    "col1\tcol2\tcol3",
    "\ttabbed",
    "\t\t\tthree tabs",
    " leading space",
    "trailing space ",
    "trailing spaces   ",
    "multiple   spaces   here",
    "a  \t \n\n  b",
    "   ",
    " ",
    "\n",
    "\n\n\n",
    "line1\nline2\n\nline4",
    "Hello\r\nWorld\r\n",
    "",
    "x",
    "!!!???...",
    "«ёлка» — “tree” 「树」",
    "nbsp\u00a0here, ideographic\u3000space, line\u2028sep, nel\u0085end",
    "zero\u200bwidth and joiner\u200d",
    "U+2581 is \u2581 the meta symbol",
    "Mixed: Hello 你好 Привет 123!",
    "a" * 300,
    "ab" * 150,
    "<|endoftext|>",
    "a<|endoftext|>b",
    "Hello<|endoftext|> world <|endoftext|>",
    "<|user|>\nHi<|end|>\n<|assistant|>\n",
    "<|system|>You are helpful.<|end|><|user|>你好<|end|><|assistant|>",
    "a<|end|>b",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "text with <s> and </s> inside",
    "<unk>",
    "<|tool|>[{\"name\": \"sum\"}]<|/tool|>",
]

# More text for the pre-tokenizer split checks (every known pattern on every string).
SPLIT_EXTRA = [
    "ǅemal ǈ ʰʲ ǂǃ Ⅻ A\u0300B \u0300\u0300x x\u0300\u0301y",
    "'S'T'RE'VE'M'LL'D 's't 'Re 'rE a'\u017fb a'\u212a",
    "x\r\n\r\ny \n \n  \t\n\t\r\n   \r\n",
    "1/2/3 foo//bar\n ...\n/ !!\n\n .\r ,/\r\n/",
    "a\u00a0\u00a0b \u2028\u2029 \u3000\u3000x \u0085y",
    "ABCdefGHI aBC ÀÉÎõü ﬁ ﬂ 𝐀𝐁𝐂𝐝𝐞 ＡＢＣａｂｃ",
    "１２３４５ ٠١٢٣٤٥٦ 12345678 ½¼ x²³",
    "🤷🏽‍♀️ 🧑‍🤝‍🧑 🏴󠁧󠁢󠁳󠁣󠁴󠁿 ✌🏾 a😀b 1😀2",
    "can't won't CAN'T Won'T it's IT'S i'M you'Re",
    "  leading\tand\ttabs  \n\n\n  trailing  ",
    "—«»“”„‟‹›「」『』【】〔〕《》",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
    "https://example.com/path?q=1&r=2#frag",
    "a\tb\u000bc\u000cd\u001ce",
]

SPLIT_PATTERNS = {"gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
                  "llama3": LLAMA3_PATTERN, "o200k": O200K_PATTERN, "qwen2": QWEN2_PATTERN}

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


def training_text() -> list:
    corpus = (FIXTURES / "corpus.txt").read_text(encoding="utf-8") + EXTRA_CORPUS
    return corpus.splitlines(keepends=True)


def train(pre_tokenizer, vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    assert tok.get_vocab_size() == vocab_size, (tok.get_vocab_size(), vocab_size)
    return tok


def build_gpt2() -> Tokenizer:
    tok = train(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), TOKENIZERS["gpt2-bpe"]["vocab_size"])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False)])
    tok.add_tokens([AddedToken(w, special=False, normalized=True) for w in PHI2_WHITESPACE])
    return tok


def build_o200k() -> Tokenizer:
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(O200K_PATTERN), "isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok = train(pre, TOKENIZERS["o200k-bpe"]["vocab_size"])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in PHI4_SPECIALS])
    return tok


def build_llama3() -> Tokenizer:
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok = train(pre, TOKENIZERS["llama3-bpe"]["vocab_size"])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in LLAMA3_SPECIALS])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
        special_tokens=[("<|begin_of_text|>", bos)])
    return tok


def build_qwen(added) -> Tokenizer:
    """Qwen2's tokenizer.json pipeline, trained here; `added` as (content, special) in id order."""
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), "isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TOKENIZERS["qwen2-bpe"]["vocab_size"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    assert tok.get_vocab_size() == TOKENIZERS["qwen2-bpe"]["vocab_size"]
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    for content, special in added:  # one at a time: ids in this order
        tok.add_tokens([AddedToken(content, special=special, normalized=False)])
    return tok


def qwen_config(tok: Tokenizer, template: Path) -> dict:
    """tokenizer_config.json as Qwen's instruct checkpoints ship it (eos <|im_end|>, no BOS)."""
    return tokenizer_config(
        tok, bos_token=None, chat_template=template.read_text(encoding="utf-8"), clean_up_tokenization_spaces=False,
        eos_token="<|im_end|>", errors="replace", model_max_length=131072, pad_token="<|endoftext|>",
        split_special_tokens=False, tokenizer_class="Qwen2Tokenizer", unk_token=None)


def llama3_file(doc: dict) -> dict:
    """Llama 3 sets ignore_merges and ships merges as "a b" strings (the legacy form)."""
    doc["model"]["ignore_merges"] = True
    doc["model"]["merges"] = [" ".join(m) for m in doc["model"]["merges"]]
    return doc


def build_misc() -> Tokenizer:
    """Many small pieces at once: NFKC + Lowercase + Replace + Strip normalizers, WhitespaceSplit +
    Punctuation + Digits pre-tokenizers, a character-level BPE with unk (fused) and a "##" prefix."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, continuing_subword_prefix="##"))
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKC(), normalizers.Lowercase(), normalizers.Replace("\t", " "),
        normalizers.Strip(left=False, right=True)])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation("isolated"),
        pre_tokenizers.Digits(individual_digits=True)])
    tok.decoder = decoders.Sequence([decoders.Replace("##", ""), decoders.Fuse()])
    trainer = trainers.BpeTrainer(vocab_size=TOKENIZERS["misc-bpe"]["vocab_size"], special_tokens=["<unk>"],
                                  continuing_subword_prefix="##", limit_alphabet=400, show_progress=False)
    # English and Russian only: Chinese, emoji and the rest become <unk>.
    text = [line for line in training_text() if not any("\u3000" <= ch <= "\u9fff" for ch in line)]
    tok.train_from_iterator(text, trainer)
    tok.add_special_tokens([AddedToken("[SEP]", special=True, normalized=False, lstrip=True, rstrip=True),
                            AddedToken("<b>", special=False, normalized=True, single_word=True)])
    tok.post_processor = processors.TemplateProcessing(single="$A [SEP]", special_tokens=[
        ("[SEP]", tok.token_to_id("[SEP]"))])
    return tok


def phi3_legacy_file(doc: dict) -> dict:
    """The layout transformers 4 wrote for legacy Llama tokenizers: Prepend + Replace normalizers, no
    pre-tokenizer, and merges as "a b" strings."""
    doc["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    doc["pre_tokenizer"] = None
    doc["model"]["merges"] = [" ".join(m) for m in doc["model"]["merges"]]
    return doc


def added_decoder_entry(token: AddedToken) -> dict:
    return {"content": token.content, "lstrip": token.lstrip, "normalized": token.normalized,
            "rstrip": token.rstrip, "single_word": token.single_word, "special": token.special}


def tokenizer_config(tok: Tokenizer, **fields) -> dict:
    decoder = {str(i): added_decoder_entry(t) for i, t in sorted(tok.get_added_tokens_decoder().items())}
    return {"add_prefix_space": False, "added_tokens_decoder": decoder, **fields}


def write_json(path: Path, obj):
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def save_tokenizer(tok: Tokenizer, out: Path, config, edit=None):
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    doc = json.loads(tok.to_str())
    if edit:
        doc = edit(doc)
    write_json(out / "tokenizer.json", doc)
    Tokenizer.from_file(str(out / "tokenizer.json"))  # must still load
    if config is not None:
        write_json(out / "tokenizer_config.json", config)


def write_qwen():
    qwen2 = build_qwen(QWEN2_ADDED)
    save_tokenizer(qwen2, OUT / "qwen2-bpe", qwen_config(qwen2, QWEN25_CHAT_TEMPLATE))
    qwen3 = build_qwen(QWEN2_ADDED + QWEN3_EXTRA)
    save_tokenizer(qwen3, OUT / "qwen3-bpe", qwen_config(qwen3, QWEN3_CHAT_TEMPLATE))


def write_all():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "corpus-extra.txt").write_text(EXTRA_CORPUS, encoding="utf-8")

    gpt2 = build_gpt2()
    save_tokenizer(gpt2, OUT / "gpt2-bpe", tokenizer_config(
        gpt2, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>",
        clean_up_tokenization_spaces=False, model_max_length=2048, return_token_type_ids=False,
        tokenizer_class="CodeGenTokenizer"))

    o200k = build_o200k()
    save_tokenizer(o200k, OUT / "o200k-bpe", tokenizer_config(
        o200k, add_bos_token=False, add_eos_token=False, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
        pad_token="<|endoftext|>", unk_token="<|endoftext|>", chat_template=PHI4_MINI_CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False, model_max_length=131072,
        # Phi-4-mini says "GPT2Tokenizer"; transformers 5 then rebuilds a GPT-2 pipeline and ignores the
        # file's o200k Split. The generic class runs the file as written, as `tokenizers` does.
        tokenizer_class="PreTrainedTokenizerFast"))

    llama3 = build_llama3()
    save_tokenizer(llama3, OUT / "llama3-bpe", tokenizer_config(
        llama3, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", clean_up_tokenization_spaces=True,
        model_max_length=131072, tokenizer_class="PreTrainedTokenizerFast"), edit=llama3_file)

    misc = build_misc()
    save_tokenizer(misc, OUT / "misc-bpe", tokenizer_config(
        misc, unk_token="<unk>", sep_token="[SEP]", clean_up_tokenization_spaces=False,
        tokenizer_class="PreTrainedTokenizerFast"))

    write_qwen()

    # Phi-3: transformers converts tokenizer.model to a tokenizer.json (legacy false, as in the checkpoint).
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name in ["tokenizer.model", "tokenizer_config.json", "added_tokens.json", "special_tokens_map.json"]:
            shutil.copyfile(PHI3_DIR / name, src / name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            slow = LlamaTokenizer.from_pretrained(str(src))
        saved = Path(tmp) / "saved"
        slow.save_pretrained(str(saved))
        converted = Tokenizer.from_file(str(saved / "tokenizer.json"))
        doc = json.loads(converted.to_str())
        write_json(PHI3_DIR / "tokenizer.json", doc)
        legacy_config = json.loads((src / "tokenizer_config.json").read_text())
        legacy_config["legacy"] = True
        # transformers 5's LlamaTokenizer would rebuild its own Metaspace pipeline and ignore the file's
        # normalizers; the generic class runs the file as written.
        legacy_config["tokenizer_class"] = "PreTrainedTokenizerFast"
        save_tokenizer(converted, OUT / "phi3-legacy", legacy_config, edit=phi3_legacy_file)


# ---------------------------------------------------------------------------
# Reference cases
# ---------------------------------------------------------------------------

FIXTURE_DIRS = {
    "gpt2-bpe": OUT / "gpt2-bpe",
    "o200k-bpe": OUT / "o200k-bpe",
    "llama3-bpe": OUT / "llama3-bpe",
    "phi3-mha": PHI3_DIR,
    "phi3-legacy": OUT / "phi3-legacy",
    "misc-bpe": OUT / "misc-bpe",
    "qwen2-bpe": OUT / "qwen2-bpe",
    "qwen3-bpe": OUT / "qwen3-bpe",
}


def load_auto(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoTokenizer.from_pretrained(str(path))


def chat_ids(tok, messages):
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(out, "keys") and "input_ids" in out:
        out = out["input_ids"]
    out = list(out)
    if out and isinstance(out[0], list):
        out = out[0]
    return [int(i) for i in out]


def make_cases() -> dict:
    doc = {"generator": generator_string(), "tokenizers": {}}
    for name, path in FIXTURE_DIRS.items():
        tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        auto = load_auto(path)
        cases = []
        for text in CASES:
            with_special = tok.encode(text, add_special_tokens=True)
            without = tok.encode(text, add_special_tokens=False)
            assert auto.encode(text) == with_special.ids, (name, text, auto.encode(text), with_special.ids)
            cases.append({
                "text": text,
                "ids": with_special.ids,
                "ids_without_special": without.ids,
                "tokens": without.tokens,
                "decoded": tok.decode(with_special.ids, skip_special_tokens=False),
                "decoded_skipping_special": tok.decode(with_special.ids, skip_special_tokens=True),
            })
        entry = {"directory": str(path.relative_to(FIXTURES)), "vocab_size": tok.get_vocab_size(), "cases": cases,
                 "chat": []}
        if getattr(auto, "chat_template", None):
            for messages in CHATS:
                text = auto.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
                entry["chat"].append({"messages": messages, "text": text, "input_ids": chat_ids(auto, messages)})
        doc["tokenizers"][name] = entry
    doc["splits"] = make_splits()
    return doc


def make_splits() -> dict:
    """What tokenizers' Split(pattern, Isolated) makes of each text: the pre-tokenizer alone."""
    texts = list(dict.fromkeys(CASES + SPLIT_EXTRA + EXTRA_CORPUS.splitlines(keepends=True)))
    out = {}
    for name, pattern in SPLIT_PATTERNS.items():
        split = pre_tokenizers.Split(Regex(pattern), "isolated", invert=False)
        out[name] = {"pattern": pattern,
                     "cases": [{"text": t, "pieces": [p for p, _ in split.pre_tokenize_str(t)]} for t in texts]}
    return out


def generator_string() -> str:
    return (f"{SCRIPT_NAME} (tokenizers {tokenizers.__version__}, transformers {transformers.__version__}; "
            f"ids from tokenizers.Tokenizer.from_file(tokenizer.json).encode, equal to AutoTokenizer's)")


def dumps_cases(doc: dict) -> str:
    """One case per line, so diffs of a re-run stay readable."""
    lines = ["{", f' "generator": {json.dumps(doc["generator"])},', ' "tokenizers": {']
    names = list(doc["tokenizers"])
    for n, name in enumerate(names):
        entry = doc["tokenizers"][name]
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "directory": {json.dumps(entry["directory"])},')
        lines.append(f'   "vocab_size": {entry["vocab_size"]},')
        lines.append('   "cases": [')
        for i, c in enumerate(entry["cases"]):
            comma = "," if i + 1 < len(entry["cases"]) else ""
            lines.append("    " + json.dumps(c, ensure_ascii=False) + comma)
        lines.append("   ],")
        lines.append('   "chat": [')
        for i, c in enumerate(entry["chat"]):
            comma = "," if i + 1 < len(entry["chat"]) else ""
            lines.append("    " + json.dumps(c, ensure_ascii=False) + comma)
        lines.append("   ]")
        lines.append("  }" + ("," if n + 1 < len(names) else ""))
    lines.append(" },")
    lines.append(' "splits": {')
    split_names = list(doc["splits"])
    for n, name in enumerate(split_names):
        entry = doc["splits"][name]
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "pattern": {json.dumps(entry["pattern"], ensure_ascii=False)},')
        lines.append('   "cases": [')
        for i, c in enumerate(entry["cases"]):
            comma = "," if i + 1 < len(entry["cases"]) else ""
            lines.append("    " + json.dumps(c, ensure_ascii=False) + comma)
        lines.append("   ]")
        lines.append("  }" + ("," if n + 1 < len(split_names) else ""))
    lines.append(" }")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    json.loads(text)
    return text


def verify() -> bool:
    ok = True
    committed = json.loads((OUT / "cases.json").read_text(encoding="utf-8"))
    fresh = make_cases()
    for name, entry in fresh["tokenizers"].items():
        same = committed["tokenizers"].get(name, {}).get("cases") == entry["cases"]
        same &= committed["tokenizers"][name]["chat"] == entry["chat"]
        tok = Tokenizer.from_file(str(FIXTURE_DIRS[name] / "tokenizer.json"))
        doc = json.loads((FIXTURE_DIRS[name] / "tokenizer.json").read_text(encoding="utf-8"))
        merges = doc["model"].get("merges", [])
        form = "strings" if merges and isinstance(merges[0], str) else "pairs"
        size = (FIXTURE_DIRS[name] / "tokenizer.json").stat().st_size
        print(f"{name}: {'OK' if same else 'DIFFERS'}  vocab {tok.get_vocab_size()}, merges {len(merges)} ({form}), "
              f"tokenizer.json {size / 1e3:.1f} KB, {len(entry['cases'])} cases, {len(entry['chat'])} chats")
        ok &= same
    splits_same = committed.get("splits") == fresh["splits"]
    print(f"splits: {'OK' if splits_same else 'DIFFERS'}  " + ", ".join(
        f"{k} {len(v['cases'])} texts" for k, v in fresh["splits"].items()))
    ok &= splits_same
    # The converted Phi-3 tokenizer.json must give transformers' sentencepiece-based ids.
    spm_cases = json.loads((FIXTURES / "tokenizer-cases.json").read_text(encoding="utf-8"))["cases"]
    phi3 = Tokenizer.from_file(str(PHI3_DIR / "tokenizer.json"))
    differ = [c["text"] for c in spm_cases if phi3.encode(c["text"]).ids != c["hf_ids"]]
    print(f"phi3-mha/tokenizer.json vs tokenizer-cases.json hf_ids: {len(spm_cases) - len(differ)}/{len(spm_cases)} equal")
    ok &= not differ
    print("verification " + ("PASSED" if ok else "FAILED"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verify", action="store_true", help="only verify the committed files")
    ap.add_argument("--only-qwen", action="store_true",
                    help="write only qwen2-bpe and qwen3-bpe and their cases and splits, keeping the other entries "
                         "of cases.json (misc-bpe's character-level training is not reproducible across runs)")
    args = ap.parse_args()
    if args.only_qwen and not args.verify:
        write_qwen()
        doc = json.loads((OUT / "cases.json").read_text(encoding="utf-8"))
        fresh = make_cases()
        for name in ["qwen2-bpe", "qwen3-bpe"]:
            doc["tokenizers"][name] = fresh["tokenizers"][name]
        doc["splits"]["qwen2"] = fresh["splits"]["qwen2"]
        (OUT / "cases.json").write_text(dumps_cases(doc), encoding="utf-8")
    elif not args.verify:
        write_all()
        (OUT / "cases.json").write_text(dumps_cases(make_cases()), encoding="utf-8")
    sys.exit(0 if verify() else 1)


if __name__ == "__main__":
    main()
