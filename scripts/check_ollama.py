"""Ollama's native API on `hearth serve` through the official `ollama` client (see check-ollama.sh).

Usage: check_ollama.py BASE_URL FIRST_MODEL SECOND_MODEL HUB_CACHE_DIR
"""
import json
import os
import sys
import time
import urllib.request

import ollama
from pydantic import BaseModel, Field

base, first, second, cache = sys.argv[1:5]
client = ollama.Client(host=base)
results = {"passed": 0, "failed": 0}
TINY = "hearth-test/gemma3-tiny"


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("PASS " if condition else "FAIL ") + name + ("" if condition else f" {str(detail)[:600]}"))


def attempt(name, body):
    """Runs one check's body; an exception fails it with its text."""
    try:
        body()
    except Exception as error:  # noqa: BLE001 - any failure is the check's
        check(name, False, f"{type(error).__name__}: {error}")


def final_ok(reply):
    return (reply.done and reply.done_reason in ("stop", "length") and reply.prompt_eval_count > 0 and reply.eval_count > 0
            and reply.total_duration >= reply.eval_duration >= 0 and reply.load_duration is not None)


hello = [{"role": "user", "content": "Say hello in one short sentence."}]
greedy = {"temperature": 0, "num_predict": 24}
whole = {}


def chat_whole():
    reply = client.chat(model=first, messages=hello, options=greedy)
    whole["text"] = reply.message.content
    check("chat (whole): an assistant message with done_reason, counts and durations in ns",
          reply.message.role == "assistant" and bool(reply.message.content) and final_ok(reply) and reply.model == first, reply)


def chat_streamed():
    parts = list(client.chat(model=first, messages=hello, options=greedy, stream=True))
    text = "".join(p.message.content or "" for p in parts)
    check("chat (streamed): NDJSON pieces, the last done with counts",
          len(parts) > 2 and all(not p.done for p in parts[:-1]) and final_ok(parts[-1]), parts[-1])
    check("chat (streamed): the pieces make the whole answer (greedy)", text == whole.get("text"), f"{text!r} vs {whole.get('text')!r}")


def generate():
    reply = client.generate(model=first, prompt="The capital of France is", options={"temperature": 0, "num_predict": 8})
    check("generate (whole)", bool(reply.response) and final_ok(reply), reply)
    parts = list(client.generate(model=first, prompt="The capital of France is", options={"temperature": 0, "num_predict": 8}, stream=True))
    check("generate (streamed) equals whole", "".join(p.response for p in parts) == reply.response and parts[-1].done, parts[-1])
    raw = client.generate(model=first, prompt="<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", raw=True,
                          options={"temperature": 0, "num_predict": 8})
    check("generate (raw prompt)", raw.done and raw.eval_count > 0, raw)


class City(BaseModel):
    name: str = Field(max_length=24)
    country: str = Field(max_length=24)
    population: int = Field(ge=0)


def structured():
    reply = client.chat(model=first, messages=[{"role": "user", "content": "Describe Paris as JSON."}],
                        format=City.model_json_schema(), options={"temperature": 0, "num_predict": 200})
    city = City.model_validate_json(reply.message.content)
    check("format: a pydantic model's schema, parsed", isinstance(city, City), reply.message.content)
    loose = client.chat(model=first, messages=[{"role": "user", "content": "Give me a JSON object about cats."}], format="json",
                        options={"temperature": 0, "num_predict": 120})
    check('format "json": a JSON object', isinstance(json.loads(loose.message.content), dict), loose.message.content)


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
      city: The city's name
    """
    return f"Sunny and 21 C in {city}"


def tools():
    messages = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]
    # Ollama has no tool choice; Hearth's `options.tool_choice` makes this small model call the tool.
    reply = client.chat(model=first, messages=messages, tools=[get_weather],
                        options={"temperature": 0, "num_predict": 64, "tool_choice": "required"})
    calls = reply.message.tool_calls or []
    check("tools: a tool call with parsed arguments",
          len(calls) >= 1 and calls[0].function.name == "get_weather" and isinstance(calls[0].function.arguments.get("city"), str), reply)
    streamed = list(client.chat(model=first, messages=messages, tools=[get_weather], stream=True,
                                options={"temperature": 0, "num_predict": 64, "tool_choice": "required"}))
    streamed_calls = [c for p in streamed for c in (p.message.tool_calls or [])]
    check("tools (streamed): the call arrives whole", len(streamed_calls) >= 1 and streamed_calls[0].function.name == "get_weather",
          streamed)
    if calls:
        messages.append(reply.message)
        messages.append({"role": "tool", "tool_name": "get_weather", "content": get_weather(**calls[0].function.arguments)})
        answer = client.chat(model=first, messages=messages, tools=[get_weather], options={"temperature": 0, "num_predict": 32})
        check("tools: the tool's result answered", answer.done and answer.message.role == "assistant", answer)


def embed():
    reply = client.embed(model=first, input=["The fire is warm.", "Snow is cold."])
    vectors = reply.embeddings
    check("embed: one vector per input", len(vectors) == 2 and len(vectors[0]) == len(vectors[1]) > 0 and reply.prompt_eval_count > 0,
          str(reply)[:200])
    legacy = client.embeddings(model=first, prompt="The fire is warm.")
    check("embeddings (legacy): one vector", len(legacy.embedding) == len(vectors[0]))


def listing():
    names = sorted(m.model for m in client.list().models)
    check("list: both served models", names == sorted([first, second]), names)
    model = next(m for m in client.list().models if m.model == first)
    check("list: size, digest, details", model.size > 0 and len(model.digest) == 64 and model.details.format == "gguf"
          and model.modified_at is not None, model)
    shown = client.show(first)
    check("show: details, model info, capabilities", "completion" in (shown.capabilities or []) and shown.details.format == "gguf"
          and any(k.endswith(".context_length") for k in (shown.modelinfo or {})), shown)
    running = client.ps().models
    check("ps: the model in use is running", any(m.model == first and m.context_length > 0 and m.expires_at for m in running), running)
    version = json.loads(urllib.request.urlopen(base + "/api/version").read())
    check("version", isinstance(version.get("version"), str), version)


def pull_and_delete():
    progress = list(client.pull(TINY, stream=True))
    statuses = [p.status for p in progress]
    sized = [p for p in progress if p.total]
    check("pull (streamed): manifest, files with total/completed, success",
          statuses[0] == "pulling manifest" and statuses[-1] == "success" and sized and all(p.completed <= p.total for p in sized)
          and any(p.completed == p.total for p in sized), statuses)
    snapshots = os.path.join(cache, "models--hearth-test--gemma3-tiny", "snapshots")
    files = [f for _, _, fs in os.walk(snapshots) for f in fs]
    check("pull: the checkpoint is in the hub cache", "model.safetensors" in files and "config.json" in files, files)
    again = client.pull(TINY)
    check("pull (whole, cached): success", again.status == "success", again)
    try:
        client.pull("hearth-test/no-such-repo")
        check("pull of a missing repository is an error", False)
    except ollama.ResponseError as error:
        check("pull of a missing repository is an error", error.status_code in (404, -1) and "no-such-repo" in str(error.error), error)
    deleted = client.delete(TINY)
    files = [f for _, _, fs in os.walk(snapshots) for f in fs] if os.path.isdir(snapshots) else []
    check("delete: removed from the hub cache", deleted.status == "success" and "model.safetensors" not in files, files)
    try:
        client.delete(TINY)
        check("delete of an absent model is a 404", False)
    except ollama.ResponseError as error:
        check("delete of an absent model is a 404", error.status_code == 404, error)


def errors():
    try:
        client.chat(model="no-such-model", messages=hello)
        check("an unknown model is a 404 with Ollama's error", False)
    except ollama.ResponseError as error:
        check("an unknown model is a 404 with Ollama's error", error.status_code == 404 and "no-such-model" in error.error, error)
    try:
        client.chat(model=first, messages=[{"role": "user", "content": "What is this?", "images": [b"\x89PNG"]}])
        check("images are refused by name", False)
    except ollama.ResponseError as error:
        check("images are refused by name", error.status_code == 400 and "images" in error.error, error)


started = time.monotonic()
for name, body in [("chat whole", chat_whole), ("chat streamed", chat_streamed), ("generate", generate), ("structured", structured),
                   ("tools", tools), ("embed", embed), ("listing", listing), ("pull/delete", pull_and_delete), ("errors", errors)]:
    attempt(name, body)
print(f"ollama client: {time.monotonic() - started:.1f} s")
print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
