#!/usr/bin/env python3
"""Reasoning from a local reasoning model, read by the official clients (scripts/check-reasoning.sh
runs it against `hearth serve` on Tests/Fixtures/phi4-mini-reasoning-tiny, in a private venv of
the pinned openai and anthropic clients).

The fixture opens a `<think>` block after these prompts and writes random tokens in it; chat
requests nudge the closing tag with a logit bias (+5.25: greedy decoding closes after a few
tokens), the other APIs close the block with a budget or run it to the length.

1. openai chat completions: `message.reasoning_content` beside `content` (neither holds a tag,
   the answer is not empty), `completion_tokens_details.reasoning_tokens`; streamed, the
   `delta.reasoning_content` pieces come before the content and join to the same text.
2. openai responses: a `reasoning` output item (first) whose `reasoning_text` content and summary
   hold the reasoning, `output_tokens_details.reasoning_tokens`; streamed,
   `response.reasoning_text.delta` and `response.reasoning_summary_text.delta` join to it.
3. anthropic messages with `thinking` (budget 4): a `thinking` block first, with a signature, then
   the text; the thinking tokens within the budget and the closing sequence; streamed
   (`messages.stream`), `thinking_delta` then `signature_delta` and the final message's blocks,
   and the `message_delta` usage's `thinking_tokens` equal to the whole answer's.
4. anthropic tool round trip: a forced call after thinking, then the assistant turn sent back as
   the client returned it (thinking block with its signature, tool_use) with the tool result:
   the server accepts it and answers.
5. reasoning off (`reasoning_effort: none`, `thinking: disabled`) gives no reasoning part.

Usage: check_reasoning.py BASE_URL API_KEY MODEL
Prints one line per check and exits 1 when any fails.
"""
import sys

import anthropic
import openai

BASE, KEY, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []
NUDGED = {"1811": 100, "1812": 5.25, "1799": -100, "1802": -100}
CLOSING = 3  # </think> and the separator "\n\n" (two tokens in the fixture's vocabulary)
# anthropic 2.14's Messages.create takes no temperature argument: greedy decoding rides in the body.
GREEDY = {"temperature": 0}


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"))
    if not condition:
        failures.append(name)


def no_tags(text):
    return "<think>" not in text and "</think>" not in text


def extra(obj, name):
    """A field the official types do not declare (chat's reasoning_content) as the client kept it."""
    value = getattr(obj, name, None)
    if value is None and getattr(obj, "model_extra", None):
        value = obj.model_extra.get(name)
    return value


oa = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, timeout=120)
an = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0, timeout=120)
HI = [{"role": "user", "content": "Hi"}]

# 1. chat completions
whole = oa.chat.completions.create(
    model=MODEL, messages=HI, max_tokens=24, temperature=0, logit_bias=NUDGED, reasoning_effort="low"
)
message = whole.choices[0].message
reasoning = extra(message, "reasoning_content") or ""
content = message.content or ""
check("chat: reasoning_content beside the answer", reasoning != "" and content != "", f"{reasoning!r} / {content!r}")
check("chat: no tag in either part", no_tags(reasoning) and no_tags(content), f"{reasoning!r} / {content!r}")
details = whole.usage.completion_tokens_details
check(
    "chat: usage reasoning_tokens",
    details is not None and 0 < (details.reasoning_tokens or 0) < whole.usage.completion_tokens,
    f"{whole.usage}",
)
streamed_reasoning, streamed_content, order_ok = "", "", True
for chunk in oa.chat.completions.create(
    model=MODEL, messages=HI, max_tokens=24, temperature=0, logit_bias=NUDGED, reasoning_effort="low", stream=True
):
    if not chunk.choices:
        continue
    delta = chunk.choices[0].delta
    piece = extra(delta, "reasoning_content")
    if piece:
        order_ok = order_ok and streamed_content == ""
        streamed_reasoning += piece
    if delta.content:
        streamed_content += delta.content
check("chat stream: reasoning_content deltas before the content", order_ok)
check("chat stream: the same reasoning and answer", (streamed_reasoning, streamed_content) == (reasoning, content),
      f"{streamed_reasoning!r} / {streamed_content!r}")
back = oa.chat.completions.create(
    model=MODEL, max_tokens=2, temperature=0,
    messages=HI + [{"role": "assistant", "content": content, "reasoning_content": reasoning}, {"role": "user", "content": "And?"}],
)
check("chat: an assistant turn with reasoning_content is accepted", back.choices[0].message is not None)
off = oa.chat.completions.create(model=MODEL, messages=HI, max_tokens=6, temperature=0, reasoning_effort="none")
check("chat: reasoning_effort none gives no reasoning", not extra(off.choices[0].message, "reasoning_content"))

# 2. responses
response = oa.responses.create(
    model=MODEL, input="Hi", max_output_tokens=16, temperature=0, reasoning={"effort": "low", "summary": "auto"}
)
items = [item for item in response.output if item.type == "reasoning"]
check("responses: a reasoning item first", bool(response.output) and response.output[0].type == "reasoning",
      f"{[i.type for i in response.output]}")
item_text = ""
if items:
    item = items[0]
    item_text = item.content[0].text if item.content else ""
    summary = item.summary[0].text if item.summary else ""
    check("responses: reasoning_text content and summary", item_text != "" and item_text == summary and no_tags(item_text),
          f"{item}")
check(
    "responses: usage reasoning_tokens",
    response.usage is not None and response.usage.output_tokens_details.reasoning_tokens > 0,
    f"{response.usage}",
)
# The block runs to max_output_tokens (effort low is a budget of 1024), so the stream ends with
# response.incomplete, whose response is the final one (get_final_response wants completed).
deltas, summaries, final = "", "", None
for event in oa.responses.create(
    model=MODEL, input="Hi", max_output_tokens=16, temperature=0, reasoning={"effort": "low", "summary": "auto"}, stream=True
):
    if event.type == "response.reasoning_text.delta":
        deltas += event.delta
    elif event.type == "response.reasoning_summary_text.delta":
        summaries += event.delta
    elif event.type in ("response.completed", "response.incomplete"):
        final = event.response
check("responses stream: reasoning_text deltas join to the item", deltas != "" and deltas == item_text, f"{deltas!r}")
check("responses stream: summary deltas join to the item", summaries == item_text, f"{summaries!r}")
check("responses stream: the final response has the item", final is not None and any(i.type == "reasoning" for i in final.output))

# 3. anthropic thinking
BUDGET = 4
msg = an.messages.create(
    model=MODEL, max_tokens=32, extra_body=GREEDY, messages=HI, thinking={"type": "enabled", "budget_tokens": BUDGET}
)
kinds = [block.type for block in msg.content]
check("anthropic: a thinking block first, then text", kinds[:1] == ["thinking"] and "text" in kinds, f"{kinds}")
thinking = msg.content[0] if kinds[:1] == ["thinking"] else None
check("anthropic: the thinking block is signed", thinking is not None and thinking.signature.startswith("hearth-sha256:"),
      f"{thinking}")
text = "".join(block.text for block in msg.content if block.type == "text")
check("anthropic: an answer follows, no tag in either", text != "" and no_tags(text) and (thinking is None or no_tags(thinking.thinking)),
      f"{text!r}")
thinking_tokens = msg.usage.model_extra.get("output_tokens_details", {}).get("thinking_tokens", 0) if msg.usage.model_extra else 0
thinking_tokens = thinking_tokens or getattr(getattr(msg.usage, "output_tokens_details", None), "thinking_tokens", 0) or 0
check("anthropic: thinking tokens within the budget and the closing sequence", 0 < thinking_tokens <= BUDGET + CLOSING,
      f"{msg.usage}")
seen = []
streamed_thinking_tokens = None
with an.messages.stream(
    model=MODEL, max_tokens=32, extra_body=GREEDY, messages=HI, thinking={"type": "enabled", "budget_tokens": BUDGET}
) as stream:
    for event in stream:
        if event.type == "content_block_delta" and (not seen or seen[-1] != event.delta.type):
            seen.append(event.delta.type)
        if event.type == "message_delta":
            details = extra(event.usage, "output_tokens_details") or {}
            streamed_thinking_tokens = details.get("thinking_tokens") if isinstance(details, dict) else getattr(details, "thinking_tokens", None)
    final = stream.get_final_message()
check("anthropic stream: message_delta usage counts the thinking tokens as the whole answer does",
      streamed_thinking_tokens == thinking_tokens, f"streamed {streamed_thinking_tokens}, whole {thinking_tokens}")
check("anthropic stream: thinking_delta, signature_delta, then text", seen[:3] == ["thinking_delta", "signature_delta", "text_delta"],
      f"{seen}")
check("anthropic stream: the same blocks as whole",
      [b.type for b in final.content] == kinds and thinking is not None and final.content[0].thinking == thinking.thinking
      and final.content[0].signature == thinking.signature, f"{final.content}")

# 4. anthropic tool round trip with the thinking block sent back
tool = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]},
}
called = an.messages.create(
    model=MODEL, max_tokens=64, extra_body=GREEDY, tools=[tool], tool_choice={"type": "any"},
    thinking={"type": "enabled", "budget_tokens": BUDGET},
    messages=[{"role": "user", "content": "What is the weather in Oslo?"}],
)
kinds = [block.type for block in called.content]
check("anthropic tools: thinking, then a tool_use", kinds[:1] == ["thinking"] and "tool_use" in kinds, f"{kinds}")
uses = [block for block in called.content if block.type == "tool_use"]
if uses:
    answer = an.messages.create(
        model=MODEL, max_tokens=8, extra_body=GREEDY, tools=[tool], thinking={"type": "enabled", "budget_tokens": BUDGET},
        messages=[
            {"role": "user", "content": "What is the weather in Oslo?"},
            {"role": "assistant", "content": called.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "Sunny, 18 degrees"}]},
        ],
    )
    check("anthropic tools: the signed thinking block goes back with the result", answer.stop_reason is not None)
off = an.messages.create(model=MODEL, max_tokens=6, extra_body=GREEDY, messages=HI, thinking={"type": "disabled"})
check("anthropic: thinking disabled gives no thinking block", all(b.type != "thinking" for b in off.content))

if failures:
    print(f"{len(failures)} reasoning check(s) failed", file=sys.stderr)
    sys.exit(1)
print("all reasoning checks passed")
