#!/usr/bin/env python3
"""Tool calling against a running `hearth serve` with the official clients and an agent
library (scripts/check-tools.sh runs it in a private venv of pinned PyPI packages).

1. openai chat completions: tool_choice "required" and named, whole and streamed (the client's
   own reassembly: chat.completions.stream(...).get_final_completion(), and delta.tool_calls
   accumulated by index); every call's arguments validated with `jsonschema` against its
   tool's schema; then the tool results sent back: tool_choice "none" answers text with
   finish_reason "stop", "auto" answers text or valid calls.
2. anthropic messages: tool_choice {"type": "any"}, whole and streamed
   (messages.stream(...).get_final_message()): tool_use blocks whose input validates.
3. openai responses: a function_call item when the tool is forced, whole and streamed.
4. openai-agents: an Agent over OpenAIChatCompletionsModel pointed at the server,
   ModelSettings(tool_choice="required") (reset to auto by the SDK after the first tool use),
   two function tools: both are called and a final output is produced.

Usage: check_tools.py BASE_URL API_KEY MODEL
Prints one line per check and exits 1 when any fails.
"""
import asyncio
import json
import sys
import time

import anthropic
import jsonschema
import openai
from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

BASE, KEY, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []
MAX_TOKENS = 160

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 40},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TIME = {
    "type": "object",
    "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 40}},
    "required": ["city"],
    "additionalProperties": False,
}
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
DESCRIPTIONS = {"get_weather": "The current weather in a city.", "get_time": "The local time in a city."}
CHAT_TOOLS = [
    {"type": "function", "function": {"name": name, "description": DESCRIPTIONS[name], "parameters": schema, "strict": True}}
    for name, schema in SCHEMAS.items()
]
QUESTION = [
    {"role": "system", "content": "You are a helpful assistant. Use the tools to answer."},
    {"role": "user", "content": "What is the weather in Paris right now, in celsius?"},
]
RESULTS = {"get_weather": "18 degrees celsius and sunny", "get_time": "14:05"}


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {str(detail)[:600]}"), flush=True)
    if not condition:
        failures.append(name)
    return condition


def invalid_call(name, arguments, allowed):
    """Why a call is not valid (None when it is): a tool of the request, arguments that are a
    JSON object valid against its schema."""
    if name not in allowed:
        return f"{name!r} is not among {sorted(allowed)}"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as error:
            return f"arguments are not JSON ({error}): {arguments!r}"
    try:
        jsonschema.validate(arguments, SCHEMAS[name])
    except jsonschema.ValidationError as error:
        return f"arguments {arguments!r} do not validate: {error.message}"
    return None


def check_calls(label, calls, allowed):
    """calls: [(name, arguments)]; at least one, each valid."""
    problems = [p for p in (invalid_call(name, arguments, allowed) for name, arguments in calls) if p]
    check(f"{label}: at least one call", len(calls) > 0, calls)
    check(f"{label}: every call names a tool and validates against its schema", not problems, problems)


def timed(label, function):
    started = time.monotonic()
    try:
        return function()
    except Exception as error:  # a failed request is a failed check, and the next ones still run
        check(label, False, f"{type(error).__name__}: {error}")
        return None
    finally:
        print(f"     ({label}: {time.monotonic() - started:.1f} s)", flush=True)


oa = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, timeout=300)
# The anthropic client of this version takes no `temperature` argument: it goes in extra_body.
an = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0, timeout=300)


# --- openai chat completions -----------------------------------------------------------------
def chat_required_whole():
    reply = oa.chat.completions.create(
        model=MODEL, messages=QUESTION, tools=CHAT_TOOLS, tool_choice="required", max_tokens=MAX_TOKENS, temperature=0)
    choice = reply.choices[0]
    calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    check_calls("openai chat required (whole)", calls, SCHEMAS)
    check("openai chat required (whole): finish_reason tool_calls", choice.finish_reason == "tool_calls", choice.finish_reason)
    check("openai chat required (whole): ids and type", all(c.id and c.type == "function" for c in choice.message.tool_calls or []), choice)
    check("openai chat required (whole): completion tokens counted", reply.usage.completion_tokens > 0, reply.usage)
    return choice.message


def chat_required_streamed():
    with oa.chat.completions.stream(
        model=MODEL, messages=QUESTION, tools=CHAT_TOOLS, tool_choice="required", max_tokens=MAX_TOKENS, temperature=0,
        stream_options={"include_usage": True},
    ) as stream:
        done_events = [e for e in stream if e.type == "tool_calls.function.arguments.done"]
        final = stream.get_final_completion()
    choice = final.choices[0]
    calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    check_calls("openai chat required (streamed, get_final_completion)", calls, SCHEMAS)
    check("openai chat required (streamed): finish_reason tool_calls", choice.finish_reason == "tool_calls", choice.finish_reason)
    check("openai chat required (streamed): no call text in content", not (choice.message.content or "").strip(), choice.message.content)
    check("openai chat required (streamed): arguments.done per call", len(done_events) == len(calls), done_events)
    check("openai chat required (streamed): usage", final.usage is not None and final.usage.completion_tokens > 0, final.usage)


def chat_named_whole():
    reply = oa.chat.completions.create(
        model=MODEL, messages=QUESTION, tools=CHAT_TOOLS, tool_choice={"type": "function", "function": {"name": "get_time"}},
        max_tokens=MAX_TOKENS, temperature=0)
    choice = reply.choices[0]
    calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    check_calls("openai chat named get_time (whole)", calls, {"get_time"})
    check("openai chat named (whole): finish_reason tool_calls", choice.finish_reason == "tool_calls", choice.finish_reason)


def chat_named_streamed():
    stream = oa.chat.completions.create(
        model=MODEL, messages=QUESTION, tools=CHAT_TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=MAX_TOKENS, temperature=0, stream=True)
    calls, content, finish = {}, "", None
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        finish = chunk.choices[0].finish_reason or finish
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
            if call.id:
                entry["id"] = call.id
            if call.function and call.function.name:
                entry["name"] += call.function.name
            if call.function and call.function.arguments:
                entry["arguments"] += call.function.arguments
    ordered = [calls[i] for i in sorted(calls)]
    check_calls("openai chat named get_weather (streamed, deltas by index)", [(c["name"], c["arguments"]) for c in ordered], {"get_weather"})
    check("openai chat named (streamed): every call has an id", all(c["id"] for c in ordered), ordered)
    check("openai chat named (streamed): finish_reason tool_calls", finish == "tool_calls", finish)
    check("openai chat named (streamed): no call text in content", not content.strip(), content)


def chat_answer_after_results(message):
    if message is None or not message.tool_calls:
        check("openai chat answer after tool results", False, "no calls to answer (the required call failed)")
        return
    history = QUESTION + [message.model_dump(exclude_none=True)] + [
        {"role": "tool", "tool_call_id": c.id, "content": RESULTS.get(c.function.name, "done")} for c in message.tool_calls
    ]
    reply = oa.chat.completions.create(
        model=MODEL, messages=history, tools=CHAT_TOOLS, tool_choice="none", max_tokens=48, temperature=0)
    choice = reply.choices[0]
    check("openai chat after results, tool_choice none: a text answer", bool((choice.message.content or "").strip()), choice.message)
    check("openai chat after results, tool_choice none: no calls", not choice.message.tool_calls, choice.message.tool_calls)
    check("openai chat after results, tool_choice none: finish_reason stop", choice.finish_reason == "stop", choice.finish_reason)
    reply = oa.chat.completions.create(
        model=MODEL, messages=history, tools=CHAT_TOOLS, tool_choice="auto", max_tokens=MAX_TOKENS, temperature=0)
    choice = reply.choices[0]
    if choice.message.tool_calls:
        check_calls("openai chat after results, tool_choice auto (calls again)", [(c.function.name, c.function.arguments) for c in choice.message.tool_calls], SCHEMAS)
        check("openai chat after results, auto: finish_reason tool_calls", choice.finish_reason == "tool_calls", choice.finish_reason)
    else:
        check("openai chat after results, tool_choice auto: a text answer", bool((choice.message.content or "").strip()), choice.message)
        check("openai chat after results, auto: finish_reason stop or length", choice.finish_reason in ("stop", "length"), choice.finish_reason)


# --- anthropic messages ----------------------------------------------------------------------
ANTHROPIC_TOOLS = [{"name": name, "description": DESCRIPTIONS[name], "input_schema": schema} for name, schema in SCHEMAS.items()]


def anthropic_calls(label, message):
    uses = [b for b in message.content if b.type == "tool_use"]
    check_calls(label, [(b.name, b.input) for b in uses], SCHEMAS)
    check(f"{label}: stop_reason tool_use", message.stop_reason == "tool_use", message.stop_reason)
    check(f"{label}: ids", all(b.id for b in uses), uses)
    check(f"{label}: output tokens counted", message.usage.output_tokens > 0, message.usage)


def anthropic_whole():
    message = an.messages.create(
        model=MODEL, max_tokens=MAX_TOKENS, system=QUESTION[0]["content"], messages=QUESTION[1:], tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "any"}, extra_body={"temperature": 0})
    anthropic_calls("anthropic tool_choice any (whole)", message)
    return message


def anthropic_streamed():
    with an.messages.stream(
        model=MODEL, max_tokens=MAX_TOKENS, system=QUESTION[0]["content"], messages=QUESTION[1:], tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "any"}, extra_body={"temperature": 0},
    ) as stream:
        message = stream.get_final_message()
    anthropic_calls("anthropic tool_choice any (streamed, get_final_message)", message)


def anthropic_answer_after_results(message):
    if message is None:
        return
    uses = [b for b in message.content if b.type == "tool_use"]
    if not uses:
        return
    history = QUESTION[1:] + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id, "content": RESULTS.get(b.name, "done")} for b in uses]},
    ]
    reply = an.messages.create(
        model=MODEL, max_tokens=48, system=QUESTION[0]["content"], messages=history, tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "none"}, extra_body={"temperature": 0})
    text = "".join(b.text for b in reply.content if b.type == "text")
    check("anthropic after tool_result, tool_choice none: a text answer", bool(text.strip()) and reply.stop_reason in ("end_turn", "max_tokens"), reply)


# --- openai responses ------------------------------------------------------------------------
RESPONSES_TOOLS = [
    {"type": "function", "name": name, "description": DESCRIPTIONS[name], "parameters": schema, "strict": True}
    for name, schema in SCHEMAS.items()
]


def responses_calls(label, response):
    items = [item for item in response.output if item.type == "function_call"]
    check_calls(label, [(item.name, item.arguments) for item in items], {"get_weather"})
    check(f"{label}: call_id and status", all(item.call_id and item.status == "completed" for item in items), items)


def responses_forced():
    response = oa.responses.create(
        model=MODEL, instructions=QUESTION[0]["content"], input=QUESTION[1]["content"], tools=RESPONSES_TOOLS,
        tool_choice={"type": "function", "name": "get_weather"}, max_output_tokens=MAX_TOKENS, temperature=0)
    responses_calls("openai responses forced function_call (whole)", response)
    items = [item for item in response.output if item.type == "function_call"]
    if items:
        follow = oa.responses.create(
            model=MODEL, instructions=QUESTION[0]["content"], tools=RESPONSES_TOOLS, tool_choice="none", max_output_tokens=48,
            temperature=0,
            input=[{"role": "user", "content": QUESTION[1]["content"]}]
            + [{"type": "function_call", "call_id": i.call_id, "name": i.name, "arguments": i.arguments} for i in items]
            + [{"type": "function_call_output", "call_id": i.call_id, "output": RESULTS["get_weather"]} for i in items])
        check("openai responses after function_call_output: a text answer", bool(follow.output_text.strip()), follow.output)


def responses_streamed():
    with oa.responses.stream(
        model=MODEL, instructions=QUESTION[0]["content"], input=QUESTION[1]["content"], tools=RESPONSES_TOOLS,
        tool_choice={"type": "function", "name": "get_weather"}, max_output_tokens=MAX_TOKENS, temperature=0,
    ) as stream:
        kinds = {event.type for event in stream}
        response = stream.get_final_response()
    responses_calls("openai responses forced function_call (streamed)", response)
    check("openai responses (streamed): argument delta and done events",
          {"response.function_call_arguments.delta", "response.function_call_arguments.done"} <= kinds, sorted(kinds))


# --- openai-agents ---------------------------------------------------------------------------
def agent_loop():
    set_tracing_disabled(True)
    called = []

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        called.append("get_weather")
        return f"18 degrees celsius and sunny in {city}"

    @function_tool
    def get_time(city: str) -> str:
        """The local time in a city."""
        called.append("get_time")
        return f"It is 14:05 in {city}"

    client = openai.AsyncOpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, timeout=300)
    agent = Agent(
        name="assistant",
        instructions="You answer questions about cities. Call get_weather and get_time, both, before you answer.",
        tools=[get_weather, get_time],
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        model_settings=ModelSettings(tool_choice="required", temperature=0, max_tokens=MAX_TOKENS),
    )
    result = asyncio.run(Runner.run(agent, "What are the weather and the local time in Paris?", max_turns=6))
    check("openai-agents: both tools called", {"get_weather", "get_time"} <= set(called), called)
    check("openai-agents: a final output", isinstance(result.final_output, str) and bool(result.final_output.strip()), result.final_output)


started = time.monotonic()
message = timed("openai chat required (whole)", chat_required_whole)
timed("openai chat required (streamed)", chat_required_streamed)
timed("openai chat named (whole)", chat_named_whole)
timed("openai chat named (streamed)", chat_named_streamed)
timed("openai chat answer after tool results", lambda: chat_answer_after_results(message))
anthropic_message = timed("anthropic any (whole)", anthropic_whole)
timed("anthropic any (streamed)", anthropic_streamed)
timed("anthropic answer after tool_result", lambda: anthropic_answer_after_results(anthropic_message))
timed("openai responses forced (whole)", responses_forced)
timed("openai responses forced (streamed)", responses_streamed)
timed("openai-agents two-tool task", agent_loop)
print(f"{'FAILED ' + str(len(failures)) if failures else 'all passed'} in {time.monotonic() - started:.1f} s", flush=True)
sys.exit(1 if failures else 0)
