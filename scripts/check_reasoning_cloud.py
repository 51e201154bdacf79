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
5. the anthropic client on route CLAUDE (an `anthropic` provider pointed at the fake Messages
   API): the cloud's thinking block with the cloud's own signature and a redacted_thinking block,
   whole and streamed (`thinking_delta`, `signature_delta`); a tool round trip in which the client
   sends the signed blocks back as it got them and the cloud verifies them before answering.

Usage: check_reasoning_cloud.py BASE_URL API_KEY MODEL CLAUDE
Prints one line per check and exits 1 when any fails.
"""
import sys

import anthropic
import openai

BASE, KEY, MODEL, CLAUDE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
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

# 5. Anthropic's signed thinking from a cloud route, sent back in a tool round trip.
an = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0, timeout=60)
THINKING = {"type": "enabled", "budget_tokens": 1024}
claude_prompt = "Why is the sky blue? #redacted"
msg = an.messages.create(model=CLAUDE, max_tokens=2048, thinking=THINKING, messages=[{"role": "user", "content": claude_prompt}])
kinds = [block.type for block in msg.content]
check("anthropic whole: the cloud's thinking and redacted_thinking blocks, then text",
      kinds == ["thinking", "redacted_thinking", "text"], kinds)
first = msg.content[0] if kinds[:1] == ["thinking"] else None
check("anthropic whole: the thinking is the cloud's, signed by the cloud (not re-signed)",
      first is not None and first.thinking == thought(claude_prompt) and first.signature
      and not first.signature.startswith("hearth-sha256:"), first)
seen = []
with an.messages.stream(model=CLAUDE, max_tokens=2048, thinking=THINKING,
                        messages=[{"role": "user", "content": claude_prompt}]) as stream:
    for event in stream:
        if event.type == "content_block_delta" and (not seen or seen[-1] != event.delta.type):
            seen.append(event.delta.type)
    final = stream.get_final_message()
check("anthropic streamed: thinking_delta, signature_delta, then text, the same blocks as whole",
      seen[:2] == ["thinking_delta", "signature_delta"] and "text_delta" in seen
      and [b.type for b in final.content] == kinds and first is not None and final.content[0].signature == first.signature, seen)
weather = [{"name": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
ask = [{"role": "user", "content": "Weather in Hangzhou?"}]
turn = an.messages.create(model=CLAUDE, max_tokens=2048, thinking=THINKING, tools=weather, messages=ask)
uses = [block for block in turn.content if block.type == "tool_use"]
check("anthropic tools: thinking, then a tool_use", [b.type for b in turn.content][:1] == ["thinking"] and len(uses) >= 1,
      [b.type for b in turn.content])
if uses:
    follow = ask + [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in turn.content]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "晴 25°C"} for u in uses]}]
    try:
        done = an.messages.create(model=CLAUDE, max_tokens=2048, thinking=THINKING, tools=weather, messages=follow)
        text = "".join(b.text for b in done.content if b.type == "text")
        check("anthropic tool round trip: the cloud verified its signed thinking sent back and answered", "晴 25°C" in text, text)
    except anthropic.APIError as error:
        check("anthropic tool round trip: the cloud verified its signed thinking sent back and answered", False, error)

print(f"cloud reasoning: {len(failures)} failed")
sys.exit(1 if failures else 0)
