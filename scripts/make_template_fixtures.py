#!/usr/bin/env python3
"""Expected prompts for Hearth's chat-template corpus (Tests/Fixtures/chat-templates/).

Renders every template in Tests/Fixtures/chat-templates/templates/ for every conversation in
CONVERSATIONS below exactly as Hugging Face transformers' `apply_chat_template(...,
tokenize=False)` does: the same message normalization (`_normalize_chat_messages`), then
transformers' own `render_jinja_template` (its ImmutableSandboxedEnvironment with
trim_blocks/lstrip_blocks, loopcontrols, raise_exception, strftime_now and its tojson), with the
special tokens a tokenizer passes (`special_tokens_map`). `strftime_now` sees a fixed time
(2025-03-07 14:05:09) so the output is reproducible. Where the Python raises, the fixture records
the exception's type instead of a prompt.

Writes Tests/Fixtures/chat-templates/expected.json. Run from the repository root:

    python3 scripts/make_template_fixtures.py

It makes a private venv (scripts/.venv-templates) with the pinned transformers and jinja2.
"""
import datetime as _dt
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "scripts", ".venv-templates")
PINNED = ["transformers==5.24.0", "jinja2==3.1.6"]
CORPUS = os.path.join(ROOT, "Tests", "Fixtures", "chat-templates")

if os.path.realpath(sys.prefix) != os.path.realpath(VENV):
    if not os.path.exists(os.path.join(VENV, "bin", "python")):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
        subprocess.check_call([os.path.join(VENV, "bin", "pip"), "install", "--quiet", *PINNED])
    os.execv(os.path.join(VENV, "bin", "python"), [os.path.join(VENV, "bin", "python"), *sys.argv])

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
import jinja2  # noqa: E402
import transformers  # noqa: E402
from transformers.utils import chat_template_utils  # noqa: E402
from transformers.utils.chat_template_utils import _normalize_chat_messages, render_jinja_template  # noqa: E402

NOW = _dt.datetime(2025, 3, 7, 14, 5, 9)


class _FixedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return NOW


chat_template_utils.datetime = _FixedDatetime  # strftime_now reads the module's `datetime`

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "description": "max results"}},
            "required": ["query"],
        },
    },
}
CALL = {"id": "call_abc123456", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
CALL_STR = {"id": "call_abc123456", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
CALL2 = {"id": "call_xyz987654", "type": "function", "function": {"name": "search", "arguments": {"query": "Louvre hours", "limit": 3}}}

SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello! How are you?"}
A1 = {"role": "assistant", "content": "I'm fine, thanks. How can I help?"}
U2 = {"role": "user", "content": "What is the capital of France?"}
A2 = {"role": "assistant", "content": "The capital of France is Paris."}
U3 = {"role": "user", "content": "And its population?"}

CONVERSATIONS = [
    ("single_user_gen", dict(messages=[U1], add_generation_prompt=True)),
    ("single_user_nogen", dict(messages=[U1], add_generation_prompt=False)),
    ("system_user_gen", dict(messages=[SYS, U1], add_generation_prompt=True)),
    ("system_user_nogen", dict(messages=[SYS, U1])),
    ("multi_turn_gen", dict(messages=[U1, A1, U2, A2, U3], add_generation_prompt=True)),
    ("system_multi_turn", dict(messages=[SYS, U1, A1, U2, A2, U3], add_generation_prompt=True)),
    ("ends_with_assistant", dict(messages=[SYS, U1, A1])),
    ("continue_final", dict(messages=[U1, {"role": "assistant", "content": "Sure, the answer is"}], continue_final_message=True)),
    ("non_ascii", dict(messages=[
        {"role": "system", "content": "Réponds en français. 日本語もOK。"},
        {"role": "user", "content": "Ça va? 😀 Привет, 你好, مرحبا — “quotes” ‘single’ naïve café\u00a0nbsp"},
        {"role": "assistant", "content": "Très bien! 🎉 Всё хорошо."},
        {"role": "user", "content": "Tab\tand\nnewlines\r\nand backslash \\ done"},
    ], add_generation_prompt=True)),
    ("json_heavy", dict(messages=[
        {"role": "user", "content": "Parse this: {\"a\": [1, 2.5, null, true], \"b\": {\"c\": \"<tag> & 'x'\"}}"},
        {"role": "assistant", "content": "```json\n{\"a\": [1, 2.5, null, true]}\n```"},
        {"role": "user", "content": "{{ not a template }} {% neither %} {# nor #}"},
    ], add_generation_prompt=True)),
    ("whitespace_edges", dict(messages=[
        {"role": "system", "content": "  padded system  \n"},
        {"role": "user", "content": "\n\n  leading and trailing  \n\n"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": " "},
    ], add_generation_prompt=True)),
    ("tools_gen", dict(messages=[U2], tools=[WEATHER_TOOL, SEARCH_TOOL], add_generation_prompt=True)),
    ("tools_system", dict(messages=[SYS, U2], tools=[WEATHER_TOOL], add_generation_prompt=True)),
    ("tool_call_and_result", dict(messages=[
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_abc123456", "name": "get_weather", "content": "{\"temperature\": 18, \"condition\": \"sunny\"}"},
    ], tools=[WEATHER_TOOL], add_generation_prompt=True)),
    ("tool_call_result_answer", dict(messages=[
        SYS,
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_abc123456", "name": "get_weather", "content": "18 degrees, sunny"},
        {"role": "assistant", "content": "It is 18 °C and sunny in Paris."},
        {"role": "user", "content": "Thanks!"},
    ], tools=[WEATHER_TOOL], add_generation_prompt=True)),
    ("parallel_tool_calls", dict(messages=[
        {"role": "user", "content": "Weather in Paris and Louvre hours?"},
        {"role": "assistant", "content": "Let me check both.", "tool_calls": [CALL, CALL2]},
        {"role": "tool", "tool_call_id": "call_abc123456", "name": "get_weather", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_xyz987654", "name": "search", "content": "[{\"title\": \"Louvre\", \"hours\": \"9-18\"}]"},
    ], tools=[WEATHER_TOOL, SEARCH_TOOL], add_generation_prompt=True)),
    ("tool_call_string_args", dict(messages=[
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "tool_calls": [CALL_STR]},
        {"role": "tool", "tool_call_id": "call_abc123456", "content": "rainy"},
    ], tools=[WEATHER_TOOL], add_generation_prompt=True)),
    ("reasoning_history", dict(messages=[
        U2,
        {"role": "assistant", "content": "Paris.", "reasoning_content": "The user asks for the capital of France. That is Paris."},
        U3,
    ], add_generation_prompt=True)),
    ("reasoning_in_content", dict(messages=[
        U2,
        {"role": "assistant", "content": "<think>\nEasy one.\n</think>\n\nParis."},
        U3,
    ], add_generation_prompt=True)),
    ("reasoning_last_no_gen", dict(messages=[
        U2,
        {"role": "assistant", "content": "Paris.", "reasoning_content": "Capital lookup."},
    ])),
    ("enable_thinking_false", dict(messages=[SYS, U2], add_generation_prompt=True, enable_thinking=False)),
    ("enable_thinking_true", dict(messages=[U2], add_generation_prompt=True, enable_thinking=True)),
    ("documents", dict(messages=[{"role": "user", "content": "Summarize the documents."}], documents=[
        {"title": "Doc A", "text": "Paris is the capital of France."},
        {"title": "Doc B", "text": "It has 2.1 million inhabitants."},
    ], add_generation_prompt=True)),
    ("system_only", dict(messages=[SYS], add_generation_prompt=True)),
    ("two_system", dict(messages=[SYS, {"role": "system", "content": "Be brief."}, U1], add_generation_prompt=True)),
    ("user_user", dict(messages=[U1, U2], add_generation_prompt=True)),
    ("assistant_first", dict(messages=[A1, U1], add_generation_prompt=True)),
    ("content_blocks", dict(messages=[
        {"role": "user", "content": [{"type": "text", "text": "Describe this."}, {"type": "text", "text": " Briefly."}]},
    ], add_generation_prompt=True)),
    ("long_multi_turn", dict(messages=[SYS] + [m for i in range(6) for m in (
        {"role": "user", "content": f"Question {i}: what is {i} squared?"},
        {"role": "assistant", "content": f"{i} squared is {i * i}."},
    )] + [U3], add_generation_prompt=True)),
    ("tools_no_call", dict(messages=[SYS, U1, A1, U2], tools=[SEARCH_TOOL], add_generation_prompt=False)),
]


def render(template, conv):
    kwargs = dict(conv)
    messages = kwargs.pop("messages")
    tools = kwargs.pop("tools", None)
    documents = kwargs.pop("documents", None)
    add_generation_prompt = kwargs.pop("add_generation_prompt", False)
    continue_final_message = kwargs.pop("continue_final_message", False)
    # apply_chat_template's own steps before rendering (tokenization_utils_base.py):
    if len(messages) == 0:
        raise ValueError("empty conversation")
    conversations = [_normalize_chat_messages(json.loads(json.dumps(messages)))]
    if continue_final_message and add_generation_prompt:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible")
    template_kwargs = {**SPECIAL_TOKENS, **kwargs}
    rendered, _ = render_jinja_template(
        conversations=conversations, tools=tools, documents=documents, chat_template=template,
        continue_final_message=continue_final_message, add_generation_prompt=add_generation_prompt, **template_kwargs)
    return rendered[0]


def main():
    template_dir = os.path.join(CORPUS, "templates")
    names = sorted(f[:-len(".jinja")] for f in os.listdir(template_dir) if f.endswith(".jinja"))
    cases = []
    for name in names:
        with open(os.path.join(template_dir, name + ".jinja"), encoding="utf-8", newline="") as f:
            template = f.read()
        for conv_name, conv in CONVERSATIONS:
            case = {"template": name, "conversation": conv_name}
            try:
                case["output"] = render(template, conv)
            except Exception as e:  # the fixture records which exception the Python raised
                case["error"] = type(e).__name__
                case["message"] = str(e)[:300]
            cases.append(case)
    conversations = []
    for conv_name, conv in CONVERSATIONS:
        conversations.append({"name": conv_name, **conv})
    out = {
        "generator": "scripts/make_template_fixtures.py",
        "transformers": transformers.__version__,
        "jinja2": jinja2.__version__,
        "now": NOW.isoformat(),
        "special_tokens": SPECIAL_TOKENS,
        "conversations": conversations,
        "cases": cases,
    }
    with open(os.path.join(CORPUS, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum(1 for c in cases if "error" in c)
    print(f"{len(names)} templates x {len(CONVERSATIONS)} conversations: {len(cases)} cases, {errors} raise in Python")


if __name__ == "__main__":
    main()
