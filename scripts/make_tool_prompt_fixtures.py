#!/usr/bin/env python3
"""Writes Tests/Fixtures/tool-prompts.json: conversations with tools rendered by the models' own
Jinja chat templates, the way transformers' `apply_chat_template` renders them (jinja2 with
trim_blocks/lstrip_blocks, `tojson` = json.dumps(ensure_ascii=False, indent)), for the Swift
test that Hearth's tool prompts are the same text.

Templates (reference data, read, not copied into Hearth):
  - Qwen 2.5 (ChatML + Hermes tool form) and Llama 3.2 from llama.cpp's models/templates, as
    vendored in the llama-cpp-python sdist (pass its directory as the first argument);
  - Phi-4-mini-instruct's template from its tokenizer_config.json (quoted below).
Llama's template is rendered without `strftime_now`, so it writes its fallback date (26 Jul
2024), which Hearth always writes.
Run: python3 scripts/make_tool_prompt_fixtures.py [/path/to/llama.cpp/models/templates]
"""
import json
import sys
from pathlib import Path

import jinja2

TEMPLATES = Path(sys.argv[1] if len(sys.argv) > 1 else
                 "/work/llama-build/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates")
PHI4_MINI = (
    "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}"
    "{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
)

WEATHER = {
    "name": "get_weather",
    "description": "The current weather in a city — « météo » included.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}},
        "required": ["city"], "additionalProperties": False},
}
TIME = {"name": "get_time", "description": "The time in a zone.",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}
NOARGS = {"name": "ping", "parameters": {"type": "object", "properties": {}}}


def render(source, messages, tools, bos=""):
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)

    def raise_exception(message):
        raise RuntimeError(message)

    env.globals["raise_exception"] = raise_exception
    return env.from_string(source).render(messages=messages, tools=tools, bos_token=bos, eos_token="",
                                          add_generation_prompt=True)


def hf_messages(messages):
    out = []
    for m in messages:
        item = {"role": m["role"], "content": m["content"]}
        if m.get("tool_calls"):
            item["tool_calls"] = [{"id": c["id"], "type": "function",
                                   "function": {"name": c["name"], "arguments": json.loads(c["arguments"])}}
                                  for c in m["tool_calls"]]
        if m.get("tool_call_id"):
            item["tool_call_id"] = m["tool_call_id"]
        out.append(item)
    return out


def call(id, name, arguments):
    return {"id": id, "name": name, "arguments": json.dumps(arguments, separators=(",", ":"))}


def main():
    system = {"role": "system", "content": "You are terse."}
    user = {"role": "user", "content": "  Weather in Paris and the time in Tokyo?  "}
    one_call = [system, user,
                {"role": "assistant", "content": "", "tool_calls": [call("call_1", "get_weather", {"city": "Paris", "days": [1, 2]})]},
                {"role": "tool", "content": "{\"temperature\": 18}\n", "tool_call_id": "call_1"}]
    two_calls = [system, user,
                 {"role": "assistant", "content": "Checking.", "tool_calls": [
                     call("call_1", "get_weather", {"city": "Paris"}), call("call_2", "get_time", {"zone": "Asia/Tokyo"})]},
                 {"role": "tool", "content": "18 C", "tool_call_id": "call_1"},
                 {"role": "tool", "content": "21:00", "tool_call_id": "call_2"},
                 {"role": "assistant", "content": "It is 18 C in Paris; 21:00 in Tokyo."},
                 {"role": "user", "content": "Thanks"}]
    tools = [WEATHER, TIME, NOARGS]
    openai_tools = [{"type": "function", "function": t} for t in tools]
    cases = []
    qwen = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    llama = (TEMPLATES / "meta-llama-Llama-3.2-3B-Instruct.jinja").read_text()
    for name, messages in [("tools", [system, user]), ("one-call", one_call), ("two-calls", two_calls)]:
        cases.append({"template": "chatml", "case": name, "messages": messages, "tools": tools,
                      "expected": render(qwen, hf_messages(messages), openai_tools)})
    for name, messages in [("tools", [system, user]), ("one-call", one_call), ("no-system", [user])]:
        cases.append({"template": "llama3", "bos": "<|begin_of_text|>", "case": name, "messages": messages, "tools": tools,
                      "expected": render(llama, hf_messages(messages), openai_tools, bos="<|begin_of_text|>")})
    # Phi-4-mini: the tools ride on the system message as JSON text (its model card's form).
    for name, messages in [("tools", [system, user])]:
        hf = hf_messages(messages)
        hf[0]["tools"] = json.dumps(tools, ensure_ascii=False)
        cases.append({"template": "phi4-mini", "case": name, "messages": messages, "tools": tools,
                      "expected": render(PHI4_MINI, hf, None)})
    for c in cases:
        c["tools"] = [{"name": t["name"], "description": t.get("description"),
                       "parameters": json.dumps(t["parameters"], ensure_ascii=False)} for t in c["tools"]]
    out = Path(__file__).resolve().parent.parent / "Tests/Fixtures/tool-prompts.json"
    out.write_text(json.dumps(cases, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
