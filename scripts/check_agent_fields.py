#!/usr/bin/env python3
"""Requests shaped as coding agents send them, through the official clients, against a running
`hearth serve` (scripts/check-agent-fields.sh runs it in a private venv of pinned PyPI packages):

1. anthropic, as Claude Code sends them: `metadata.user_id`, `cache_control` on system blocks,
   tool definitions, message blocks and tool results, `thinking` (enabled, adaptive), earlier
   thinking blocks, top-level `cache_control`; whole and streamed (messages.stream), the beta
   endpoint with `context_management` and `output_config.effort`, and count_tokens with the same
   fields. Each answer has text or tool_use blocks and no thinking block, and every usage field.
2. openai responses, as a Responses-API coding agent sends them: `prompt_cache_key`,
   `store: false`, `include: ["reasoning.encrypted_content"]`, `reasoning` on a model that cannot
   reason, `parallel_tool_calls`, function tools, `stream_options`; whole and streamed
   (responses.stream). No reasoning item; the reasoning asked for is echoed.
3. openai chat: `reasoning_effort`, `prompt_cache_key`, `user`, `safety_identifier`,
   `metadata`, `store: false`, `parallel_tool_calls`, `stream_options` (usage, obfuscation);
   whole and streamed; every usage detail.
4. logprob tokens join to exactly the content (llama.cpp's test), whole and streamed.
5. a field no official API defines is still a 400 naming it.

Usage: check_agent_fields.py BASE_URL API_KEY MODEL
Prints one line per check, then "N passed, M failed"; exits 1 when any failed.
"""
import sys
import traceback

import anthropic
import openai

BASE, KEY, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
MAX_TOKENS = 24
passed, failed = [], []


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {str(detail)[:600]}"), flush=True)
    (passed if condition else failed).append(name)
    return condition


def run(name, body):
    """Runs one group of checks; an exception (a 400, a broken stream) fails it by name."""
    try:
        body()
    except Exception as error:  # noqa: BLE001 - every failure is reported, then counted
        check(name, False, f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=2)}")


oa = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, timeout=300)
an = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0, timeout=300)

EPHEMERAL = {"type": "ephemeral"}
BASH = {
    "type": "object",
    "properties": {"command": {"type": "string", "maxLength": 40}},
    "required": ["command"],
    "additionalProperties": False,
}
SYSTEM = [
    {"type": "text", "text": "You are a coding agent working in a repository.", "cache_control": EPHEMERAL},
    {"type": "text", "text": "Answer in one short sentence.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
]
TOOLS = [{"name": "Bash", "description": "Runs a shell command.", "input_schema": BASH, "cache_control": EPHEMERAL}]
CONVERSATION = [
    {"role": "user", "content": [{"type": "text", "text": "Which files are here?", "cache_control": EPHEMERAL}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should list the files.", "signature": "c2lnbmF0dXJl"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}, "cache_control": EPHEMERAL},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "cache_control": EPHEMERAL,
         "content": [{"type": "text", "text": "README.md main.swift", "cache_control": EPHEMERAL}]},
        {"type": "text", "text": "Say what you found.", "cache_control": EPHEMERAL},
    ]},
]
CLAUDE_CODE = dict(
    model=MODEL, max_tokens=MAX_TOKENS, system=SYSTEM, tools=TOOLS, messages=CONVERSATION,
    metadata={"user_id": "user_5a1e_account__session_0c8f7d2e"}, thinking={"type": "enabled", "budget_tokens": 1024},
    cache_control=EPHEMERAL,
)
ANTHROPIC_USAGE = ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                   "cache_creation", "server_tool_use", "service_tier", "inference_geo"]


def anthropic_answer(name, message):
    """An answer with text or calls, no thinking, and every usage field."""
    types = [block.type for block in message.content]
    check(f"{name}: answered", bool(types) and message.stop_reason in ("end_turn", "max_tokens", "tool_use"), message)
    check(f"{name}: no thinking block from a model that does not reason", all(t in ("text", "tool_use") for t in types), types)
    usage = message.usage.model_dump()
    missing = [key for key in ANTHROPIC_USAGE if usage.get(key) is None]
    check(f"{name}: usage has {', '.join(ANTHROPIC_USAGE)}", not missing and usage["cache_read_input_tokens"] >= 0, usage)


def claude_code():
    anthropic_answer("anthropic claude-code messages whole", an.messages.create(**CLAUDE_CODE))
    with an.messages.stream(**CLAUDE_CODE) as stream:
        final = stream.get_final_message()
    anthropic_answer("anthropic claude-code messages streamed", final)
    beta = an.beta.messages.create(
        **{**CLAUDE_CODE, "thinking": {"type": "adaptive"}},
        context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
        output_config={"effort": "low"}, betas=["context-management-2025-06-27"],
    )
    types = [block.type for block in beta.content]
    check("anthropic beta messages with context_management, adaptive thinking, effort", bool(types) and "thinking" not in types, beta)
    plain = an.messages.count_tokens(model=MODEL, system=SYSTEM, tools=TOOLS, messages=CONVERSATION)
    hinted = an.messages.count_tokens(
        model=MODEL, system=SYSTEM, tools=TOOLS, messages=CONVERSATION, thinking={"type": "enabled", "budget_tokens": 1024},
        cache_control=EPHEMERAL)
    check("anthropic count_tokens takes thinking and cache_control and counts the same prompt",
          plain.input_tokens > 0 and plain.input_tokens == hinted.input_tokens, (plain, hinted))


RESPONSES_TOOLS = [{"type": "function", "name": "shell", "description": "Runs a shell command.", "parameters": BASH, "strict": False}]
RESPONSES_AGENT = dict(
    model=MODEL, instructions="You are a coding agent. Answer in one short sentence.",
    input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Which files are here?"}]}],
    tools=RESPONSES_TOOLS, tool_choice="auto", parallel_tool_calls=False, reasoning={"effort": "medium", "summary": "auto"},
    store=False, include=["reasoning.encrypted_content"], prompt_cache_key="session-0c8f7d2e", max_output_tokens=MAX_TOKENS,
)


def responses_answer(name, response):
    kinds = [item.type for item in response.output]
    check(f"{name}: answered", bool(kinds) and response.status in ("completed", "incomplete"), response)
    check(f"{name}: no reasoning item from a model that does not reason", "reasoning" not in kinds, kinds)
    check(f"{name}: reasoning asked for is echoed, none spent",
          response.reasoning is not None and response.reasoning.effort == "medium"
          and response.usage.output_tokens_details.reasoning_tokens == 0
          and response.usage.input_tokens_details.cached_tokens >= 0, response)


def responses_agent():
    responses_answer("openai responses agent whole", oa.responses.create(**RESPONSES_AGENT))
    with oa.responses.stream(**RESPONSES_AGENT, stream_options={"include_obfuscation": False}) as stream:
        final = stream.get_final_response()
    responses_answer("openai responses agent streamed", final)


CHAT_AGENT = dict(
    model=MODEL, max_completion_tokens=MAX_TOKENS,
    messages=[{"role": "developer", "content": "Answer in one short sentence."}, {"role": "user", "content": "Which files are here?"}],
    tools=[{"type": "function", "function": {"name": "shell", "description": "Runs a shell command.", "parameters": BASH}}],
    parallel_tool_calls=True, reasoning_effort="low", prompt_cache_key="session-0c8f7d2e", user="user-1",
    safety_identifier="hash-1", metadata={"agent": "check"}, store=False,
)


def chat_agent():
    whole = oa.chat.completions.create(**CHAT_AGENT)
    check("openai chat agent whole: answered", whole.choices[0].finish_reason in ("stop", "length", "tool_calls"), whole)
    details = whole.usage.completion_tokens_details
    check("openai chat agent whole: usage details (reasoning, audio, predictions, cached)",
          details.reasoning_tokens == 0 and details.audio_tokens == 0 and details.accepted_prediction_tokens == 0
          and details.rejected_prediction_tokens == 0 and whole.usage.prompt_tokens_details.cached_tokens >= 0
          and whole.usage.prompt_tokens_details.audio_tokens == 0, whole.usage)
    chunks = list(oa.chat.completions.create(
        **CHAT_AGENT, stream=True, stream_options={"include_usage": True, "include_obfuscation": False}))
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    usage = [c.usage for c in chunks if c.usage is not None]
    check("openai chat agent streamed: answered with a usage chunk", len(finishes) == 1 and len(usage) == 1, chunks[-3:])


def logprobs_join():
    question = [{"role": "user", "content": "What are you?"}]
    whole = oa.chat.completions.create(model=MODEL, messages=question, max_tokens=MAX_TOKENS, temperature=0, logprobs=True, top_logprobs=2)
    content = whole.choices[0].message.content or ""
    joined = "".join(entry.token for entry in whole.choices[0].logprobs.content)
    check("openai chat logprob tokens join to exactly the content (whole)", content and joined == content, (joined, content))
    text, tokens = "", ""
    for chunk in oa.chat.completions.create(model=MODEL, messages=question, max_tokens=MAX_TOKENS, temperature=0, logprobs=True,
                                            top_logprobs=2, stream=True):
        if not chunk.choices:
            continue
        text += chunk.choices[0].delta.content or ""
        if chunk.choices[0].logprobs and chunk.choices[0].logprobs.content:
            tokens += "".join(entry.token for entry in chunk.choices[0].logprobs.content)
    check("openai chat logprob tokens join to exactly the content (streamed)", text == content and tokens == text, (tokens, text))


def undefined_fields():
    try:
        oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=2, extra_body={"frobnicate": 1})
        check("openai: a field no API defines is a 400", False, "accepted")
    except openai.BadRequestError as error:
        check("openai: a field no API defines is a 400 naming it", "frobnicate" in str(error), error)
    try:
        an.messages.create(model=MODEL, max_tokens=2, messages=[{"role": "user", "content": "Hi"}], extra_body={"frobnicate": 1})
        check("anthropic: a field no API defines is a 400", False, "accepted")
    except anthropic.BadRequestError as error:
        check("anthropic: a field no API defines is a 400 naming it", "frobnicate" in str(error), error)


run("anthropic claude-code requests", claude_code)
run("openai responses agent requests", responses_agent)
run("openai chat agent requests", chat_agent)
run("logprobs join to the content", logprobs_join)
run("undefined fields", undefined_fields)
print(f"{len(passed)} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
