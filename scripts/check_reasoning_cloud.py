#!/usr/bin/env python3
"""Reasoning from an OpenAI Responses-API cloud through the gateway, read by the official openai
client (scripts/check-reasoning.sh runs it against `hearth serve --config` whose route MODEL is
an `openai-responses` provider pointed at the fake Responses API of `dashscope-fake`).

1. responses, whole: a `reasoning` output item first, its summary the fake's reasoning, its id
   and `encrypted_content` the fake's; the answer after it; `output_tokens_details.reasoning_tokens`
   and `input_tokens_details.cached_tokens` passed through.
2. responses, streamed: `response.reasoning_summary_text.delta` pieces join to the reasoning and
   come before the text; the reasoning item's `response.output_item.done` carries the encrypted
   content.
3. tool round trip: a forced call after reasoning, then the client sends the output items back as
   it got them (reasoning item with encrypted content, function_call) with the call's output: the
   gateway sends the reasoning item on to the cloud, which verifies its encrypted content and
   answers (it refuses a reasoning model's call sent back without its reasoning item).
4. chat completions from the same cloud (gpt-oss style `reasoning_text`): `reasoning_content`
   whole and streamed, apart from the answer.

Usage: check_reasoning_cloud.py BASE_URL API_KEY MODEL
Prints one line per check and exits 1 when any fails.
"""
import sys

import openai

BASE, KEY, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + "cloud " + name + ("" if condition else f": {detail}"))
    if not condition:
        failures.append(name)


def thought(prompt):
    """The fake's reasoning for a prompt (Tests/HearthFakeServers/FakeReasoning.swift)."""
    topic = prompt.replace("#", "")[:40]
    return f"The user asks about “{topic}”. 先想一想：西湖在杭州 🌸, Ça marche — answer briefly."


def answer(prompt):
    """The fake's answer to a prompt (FakeAnswers, round 1)."""
    topic = prompt.replace("#", "")
    return (f"好的！这是我们对话的第1轮。你说的是「{topic}」。"
            "杭州的西湖很美，春天的时候桃花盛开 🌸，游客很多。Ça va? 一切都好 👍。")


def extra(obj, name):
    value = getattr(obj, name, None)
    if value is None and getattr(obj, "model_extra", None):
        value = obj.model_extra.get(name)
    return value


oa = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, timeout=60)
REASONING = {"effort": "low", "summary": "auto"}

# 1. Whole.
prompt = "Why is the sky blue?"
r = oa.responses.create(model=MODEL, input=prompt, reasoning=REASONING, include=["reasoning.encrypted_content"], store=False)
kinds = [item.type for item in r.output]
check("responses whole: reasoning item, then the message", kinds == ["reasoning", "message"], kinds)
item = r.output[0]
summary = "".join(s.text for s in (item.summary or []))
check("responses whole: the summary is the cloud's reasoning", summary == thought(prompt), summary)
check("responses whole: the item keeps the cloud's id and encrypted content",
      item.id.startswith("rs_fake") and (item.encrypted_content or "").startswith("gAAAAB"), (item.id, item.encrypted_content))
check("responses whole: the answer is apart from the reasoning", r.output_text == answer(prompt), r.output_text)
details = r.usage.output_tokens_details
check("responses whole: reasoning and cached tokens passed through",
      details.reasoning_tokens == len(thought(prompt)) and r.usage.input_tokens_details.cached_tokens == 8, r.usage)

# 2. Streamed.
deltas, text, order, done_items = [], [], [], []
with oa.responses.create(model=MODEL, input=prompt, reasoning=REASONING, stream=True) as stream:
    for event in stream:
        if event.type == "response.reasoning_summary_text.delta":
            deltas.append(event.delta)
            order.append("r")
        elif event.type == "response.output_text.delta":
            text.append(event.delta)
            order.append("t")
        elif event.type == "response.output_item.done":
            done_items.append(event.item)
check("responses streamed: summary deltas join to the reasoning", "".join(deltas) == thought(prompt), "".join(deltas))
check("responses streamed: reasoning before the text, text is the answer",
      order and order[0] == "r" and "r" not in order[order.index("t"):] and "".join(text) == answer(prompt), order)
reasoning_done = [i for i in done_items if i.type == "reasoning"]
check("responses streamed: the reasoning item's done event carries its encrypted content",
      len(reasoning_done) == 1 and (reasoning_done[0].encrypted_content or "").startswith("gAAAAB"), done_items)

# 3. Tool round trip with the reasoning item sent back.
tools = [{"type": "function", "name": "weather", "strict": False,
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
question = [{"role": "user", "content": "Weather in Hangzhou?"}]
first = oa.responses.create(model=MODEL, input=question, tools=tools, tool_choice="required", reasoning=REASONING,
                            include=["reasoning.encrypted_content"], store=False)
kinds = [item.type for item in first.output]
calls = [item for item in first.output if item.type == "function_call"]
check("tool turn: reasoning item, then the call", kinds[:1] == ["reasoning"] and len(calls) == 1 and calls[0].name == "weather", kinds)
if calls:
    follow = question + [item.model_dump(exclude_none=True) for item in first.output] + [
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "晴 25°C"}]
    try:
        second = oa.responses.create(model=MODEL, input=follow, tools=tools, reasoning=REASONING,
                                     include=["reasoning.encrypted_content"], store=False)
        check("tool round trip: the cloud verified the reasoning item sent back and answered",
              "晴 25°C" in second.output_text, second.output_text)
    except openai.APIError as error:
        check("tool round trip: the cloud verified the reasoning item sent back and answered", False, error)

# 4. Chat completions from the same cloud (reasoning as reasoning_text, as gpt-oss servers send it).
chat_prompt = "#reasoning-text Hi"
c = oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": chat_prompt}], reasoning_effort="low")
message = c.choices[0].message
check("chat whole: reasoning_content from the cloud, apart from the answer",
      extra(message, "reasoning_content") == thought(chat_prompt) and message.content == answer(chat_prompt),
      (extra(message, "reasoning_content"), message.content))
pieces, content = [], []
for chunk in oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": chat_prompt}], stream=True):
    for choice in chunk.choices:
        if extra(choice.delta, "reasoning_content"):
            pieces.append(extra(choice.delta, "reasoning_content"))
        if choice.delta.content:
            content.append(choice.delta.content)
check("chat streamed: reasoning_content pieces join to the cloud's reasoning",
      "".join(pieces) == thought(chat_prompt) and "".join(content) == answer(chat_prompt), ("".join(pieces), "".join(content)))

print(f"cloud reasoning: {len(failures)} failed")
sys.exit(1 if failures else 0)
