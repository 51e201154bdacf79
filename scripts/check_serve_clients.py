#!/usr/bin/env python3
"""Drives a running `hearth serve` with the official openai and anthropic clients, curl and
raw sockets: wire formats, errors, disconnects, hostile HTTP and a bounded load test.

Usage: check_serve_clients.py BASE_URL API_KEY MODEL_ALIAS SERVER_PID
Prints one line per check and exits non-zero when any fails.
"""
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import anthropic
import openai

BASE, KEY, MODEL, PID = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
HOST_PORT = BASE.split("//")[1].split("/")[0]
HOST, PORT = HOST_PORT.rsplit(":", 1)
PORT = int(PORT)
failures = []


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)
    if not condition:
        failures.append(name)


def metric(name):
    request = urllib.request.Request(BASE + "/metrics", headers={"Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def rss_kib():
    with open(f"/proc/{PID}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


oa = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, timeout=120)
an = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0, timeout=120)
messages = [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": "Name three colours."}]

# --- openai: models, chat (stream and not), usage, stop, completions -------------------------
models = oa.models.list()
check("openai models.list lists the alias", [m.id for m in models.data] == [MODEL], models)

chat = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, seed=1)
text = chat.choices[0].message.content
check("openai chat non-streaming text", isinstance(text, str) and len(text) > 0, chat)
check("openai chat usage", chat.usage.completion_tokens > 0 and chat.usage.prompt_tokens > 0
      and chat.usage.total_tokens == chat.usage.prompt_tokens + chat.usage.completion_tokens, chat.usage)
check("openai chat cached_tokens field", chat.usage.prompt_tokens_details is not None
      and isinstance(chat.usage.prompt_tokens_details.cached_tokens, int), chat.usage)

# logit_bias: +100 on the first token of "zebra" (found with /tokenize with_pieces) makes it the
# greedy reply's first token (which it was not before).
pieced_request = urllib.request.Request(
    BASE + "/tokenize", data=json.dumps({"content": "zebra", "with_pieces": True}).encode(),
    headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
with urllib.request.urlopen(pieced_request, timeout=30) as response:
    zebra = json.loads(response.read())["tokens"][0]
check("/tokenize with_pieces gives ids with pieces", isinstance(zebra.get("id"), int) and isinstance(zebra.get("piece"), str), zebra)
one = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=1, temperature=0)
favoured = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=1, temperature=0,
                                      logit_bias={str(zebra["id"]): 100})
check("openai logit_bias +100 makes the token the greedy choice",
      favoured.choices[0].message.content.strip() == zebra["piece"].strip() != one.choices[0].message.content.strip(),
      (favoured.choices[0].message.content, zebra, one.choices[0].message.content))
try:
    oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=1, logit_bias={"not-a-token": 5})
    check("openai logit_bias with a bad key is a 400", False, "no error")
except openai.BadRequestError as error:
    check("openai logit_bias with a bad key is a 400", "logit_bias" in str(error), error)

stream = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, seed=1,
                                    stream=True, stream_options={"include_usage": True})
parts, finish, usage = [], None, None
for chunk in stream:
    if chunk.choices:
        parts.append(chunk.choices[0].delta.content or "")
        finish = chunk.choices[0].finish_reason or finish
    if chunk.usage:
        usage = chunk.usage
check("openai chat streaming = non-streaming (greedy)", "".join(parts) == text, ("".join(parts), text))
check("openai stream finish_reason", finish in ("stop", "length"), finish)
check("openai stream include_usage", usage is not None and usage.completion_tokens > 0, usage)

# n > 1: three choices from one prompt (choice i samples with seed + i), whole and streamed; the
# client's own stream helper accumulates the chunks by their index.
story = [{"role": "user", "content": "Tell me a short story."}]
several = oa.chat.completions.create(model=MODEL, messages=story, max_tokens=16, temperature=1, seed=40, n=3)
alone = oa.chat.completions.create(model=MODEL, messages=story, max_tokens=16, temperature=1, seed=41)
check("openai n=3: three choices with indexes 0, 1, 2", [c.index for c in several.choices] == [0, 1, 2], several)
check("openai n=3: choice 1 of seed 40 = the single reply of seed 41",
      several.choices[1].message.content == alone.choices[0].message.content,
      (several.choices[1].message.content, alone.choices[0].message.content))
check("openai n=3: the choices differ", len({c.message.content for c in several.choices}) > 1, several.choices)
check("openai n=3: usage counts the prompt once", several.usage.prompt_tokens == alone.usage.prompt_tokens,
      (several.usage, alone.usage))
with oa.chat.completions.stream(model=MODEL, messages=story, max_tokens=16, temperature=1, seed=40, n=3,
                                stream_options={"include_usage": True}) as chat_stream:
    for _ in chat_stream:
        pass
    streamed = chat_stream.get_final_completion()
check("openai n=3 streamed (client-accumulated) = whole",
      [c.message.content for c in streamed.choices] == [c.message.content for c in several.choices]
      and [c.finish_reason for c in streamed.choices] == [c.finish_reason for c in several.choices],
      (streamed.choices, several.choices))
check("openai n=3 streamed usage = whole", streamed.usage is not None
      and streamed.usage.completion_tokens == several.usage.completion_tokens
      and streamed.usage.prompt_tokens == several.usage.prompt_tokens, (streamed.usage, several.usage))
legacy = oa.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=8, temperature=1, seed=3, n=2)
check("openai completions n=2", [c.index for c in legacy.choices] == [0, 1], legacy)
try:
    oa.completions.create(model=MODEL, prompt="Once", max_tokens=4, n=2, best_of=3)
    check("openai completions best_of refused with 400", False, "accepted")
except openai.BadRequestError as error:
    check("openai completions best_of refused with 400", "best_of" in str(error), error)

# --- openai: the Responses API (whole and streamed) -------------------------------------------
resp = oa.responses.create(model=MODEL, instructions="You answer briefly.", input="Name three colours.",
                           max_output_tokens=24, temperature=0)
check("openai responses.create output_text = chat reply (same conversation, greedy)",
      resp.object == "response" and resp.output_text == text, (resp.output_text, text))
check("openai responses usage", resp.usage.input_tokens > 0 and resp.usage.output_tokens > 0
      and resp.usage.total_tokens == resp.usage.input_tokens + resp.usage.output_tokens, resp.usage)
kinds, deltas, final = [], [], None
with oa.responses.stream(model=MODEL, instructions="You answer briefly.", input="Name three colours.",
                         max_output_tokens=24, temperature=0) as rstream:
    for event in rstream:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
    final = rstream.get_final_response()
order = [k for k in kinds if k != "response.output_text.delta"]
check("openai responses stream event order",
      order[:4] == ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
      and order[-4:-1] == ["response.output_text.done", "response.content_part.done", "response.output_item.done"]
      and order[-1] in ("response.completed", "response.incomplete"), kinds)
check("openai responses stream text = whole", "".join(deltas) == text and final.output_text == text, ("".join(deltas), text))
try:
    oa.responses.create(model=MODEL, input="Hi", previous_response_id="resp_unknown")
    check("openai responses previous_response_id refused", False, "accepted")
except openai.BadRequestError as error:
    check("openai responses previous_response_id refused with 400", "previous_response_id" in str(error), error)

# --- openai: embeddings in both encodings ------------------------------------------------------
import math
docs = ["The cat sat on the mat.", "A recipe for sourdough bread.", "Stock markets fell on Monday."]
emb_float = oa.embeddings.create(model=MODEL, input=docs, encoding_format="float")
emb_default = oa.embeddings.create(model=MODEL, input=docs)  # the client asks for base64 and decodes it
vf = [d.embedding for d in emb_float.data]
vb = [d.embedding for d in emb_default.data]
check("openai embeddings.create float: one unit vector per input",
      len(vf) == 3 and all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-4 for v in vf), [len(v) for v in vf])
check("openai embeddings.create base64 (the client's default) = float",
      len(vb) == 3 and all(max(abs(a - b) for a, b in zip(x, y)) < 1e-6 for x, y in zip(vf, vb)))
single = oa.embeddings.create(model=MODEL, input=docs[1], encoding_format="float").data[0].embedding
cos = sum(a * b for a, b in zip(single, vf[1]))
check("openai embeddings: a text's vector does not depend on the batch (cosine >= 0.99999)", cos >= 0.99999, cos)
check("openai embeddings usage", emb_float.usage.prompt_tokens > 0, emb_float.usage)

# --- a prompt of megabytes is refused before it is all tokenized ---------------------------
big = "bread and butter with jam " * 150_000  # 3.9 MB, under the 4 MiB body limit
t0 = time.time()
code = None
try:
    oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": big}], max_tokens=4)
except openai.BadRequestError as error:
    code = (error.body or {}).get("code") if isinstance(error.body, dict) else None
elapsed = time.time() - t0
check("a 3.9 MB prompt is refused with context_length_exceeded", code == "context_length_exceeded", code)
check("... within 2 s round trip (it took 26 s when the whole prompt was tokenized)", elapsed < 2, elapsed)
print(f"     3.9 MB prompt refused in {elapsed * 1000:.0f} ms round trip (upload and JSON parsing included)")

# --- a base model over HTTP gets the dialogue prompt and replies that end -------------------
capital = oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "What is the capital of France?"}],
                                     max_tokens=200, temperature=0)
answer = capital.choices[0].message.content
check("base model: 'What is the capital of France?' ends before max_tokens (no echo loop)",
      capital.choices[0].finish_reason == "stop" and capital.usage.completion_tokens < 200
      and "What is the capital of France?" not in answer, (capital.choices[0].finish_reason, answer[:200]))
print(f"     capital of France → {answer.strip()[:120]!r} ({capital.usage.completion_tokens} tokens)")

again = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, seed=1)
check("openai prompt cache reported (cached_tokens > 0 on repeat)",
      again.usage.prompt_tokens_details.cached_tokens > 0, again.usage)

if len(text) > 3:
    # Stop at a string the greedy answer contains: the reply must end before it.
    cut = text[len(text) // 2:len(text) // 2 + 3]
    stopped = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, seed=1,
                                         stop=[cut])
    content = stopped.choices[0].message.content
    check("openai stop sequence ends the reply before it",
          cut not in content and text.startswith(content) and stopped.choices[0].finish_reason == "stop",
          (cut, content))

lp = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=5, temperature=0, logprobs=True, top_logprobs=3)
entries = lp.choices[0].logprobs.content
check("openai logprobs/top_logprobs", len(entries) == 5 and all(len(e.top_logprobs) == 3 and e.logprob <= 0 for e in entries),
      lp.choices[0].logprobs)

completion = oa.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=8, temperature=0)
check("openai completions", completion.object == "text_completion" and completion.usage.completion_tokens > 0, completion)
cstream = oa.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=8, temperature=0, stream=True)
check("openai completions streaming = non-streaming",
      "".join(c.choices[0].text for c in cstream if c.choices) == completion.choices[0].text)

# --- openai: errors -------------------------------------------------------------------------
try:
    openai.OpenAI(base_url=BASE + "/v1", api_key="wrong-key", max_retries=0).models.list()
    check("openai 401 on a wrong key", False, "no error")
except openai.AuthenticationError as error:
    check("openai 401 on a wrong key", error.status_code == 401 and KEY not in str(error))
try:
    oa.chat.completions.create(model="no-such-model", messages=messages, max_tokens=4)
    check("openai 404 unknown model", False, "no error")
except openai.NotFoundError as error:
    check("openai 404 unknown model", error.body.get("code") == "model_not_found", error.body)
try:
    oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "word " * 5000}], max_tokens=4)
    check("openai 400 context_length_exceeded", False, "no error")
except openai.BadRequestError as error:
    check("openai 400 context_length_exceeded with counts",
          error.body.get("code") == "context_length_exceeded" and "tokens" in error.body.get("message", ""), error.body)
try:
    oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=4, n=9)
    check("openai 400 n=9 (above the bound of 8)", False, "no error")
except openai.BadRequestError as error:
    check("openai 400 n=9 (above the bound of 8) names the field", error.body.get("param") == "n", error.body)

# --- anthropic ------------------------------------------------------------------------------
message = an.messages.create(model=MODEL, max_tokens=24, system="You answer briefly.",
                             messages=[{"role": "user", "content": "Name three colours."}], extra_body={"temperature": 0})
atext = "".join(block.text for block in message.content if block.type == "text")
check("anthropic messages.create", message.type == "message" and message.role == "assistant" and len(atext) > 0, message)
check("anthropic usage", message.usage.input_tokens > 0 and message.usage.output_tokens > 0, message.usage)
check("anthropic stop_reason", message.stop_reason in ("end_turn", "max_tokens"), message.stop_reason)
check("anthropic reply = openai reply (same prompt, greedy)", atext == text, (atext, text))
# messages.count_tokens: the prompt the same request generates from, tools included.
counted = an.messages.count_tokens(model=MODEL, system="You answer briefly.",
                                   messages=[{"role": "user", "content": "Name three colours."}])
# The reply's input_tokens leaves out the prompt tokens read from the cache (the Messages API's
# meaning): the whole prompt is input_tokens + cache_read_input_tokens.
prompt_tokens = message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0)
check("anthropic messages.count_tokens = the reply's whole prompt (input_tokens + cache_read_input_tokens)",
      counted.input_tokens == prompt_tokens,
      (counted.input_tokens, message.usage.input_tokens))
weather = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
with_tools = an.messages.count_tokens(model=MODEL, system="You answer briefly.", tools=[weather],
                                      messages=[{"role": "user", "content": "Name three colours."}])
check("anthropic messages.count_tokens counts the tools", with_tools.input_tokens > counted.input_tokens + 20,
      (with_tools.input_tokens, counted.input_tokens))
events = []
with an.messages.stream(model=MODEL, max_tokens=24, system="You answer briefly.",
                        messages=[{"role": "user", "content": "Name three colours."}], extra_body={"temperature": 0}) as s:
    for event in s:
        events.append(event.type)
    final = s.get_final_message()
streamed = "".join(block.text for block in final.content if block.type == "text")
check("anthropic streaming events", events[0] == "message_start" and events[-1] == "message_stop"
      and "content_block_delta" in events, events)
check("anthropic streaming text = non-streaming", streamed == atext, (streamed, atext))
if len(atext) > 3:
    cut = atext[len(atext) // 2:len(atext) // 2 + 3]
    stopped = an.messages.create(model=MODEL, max_tokens=24, system="You answer briefly.", extra_body={"temperature": 0},
                                 messages=[{"role": "user", "content": "Name three colours."}], stop_sequences=[cut])
    stext = "".join(b.text for b in stopped.content if b.type == "text")
    check("anthropic stop_sequences", cut not in stext and atext.startswith(stext), (cut, stext))
try:
    anthropic.Anthropic(base_url=BASE, api_key="wrong", max_retries=0).messages.create(
        model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "hi"}])
    check("anthropic 401", False, "no error")
except anthropic.AuthenticationError as error:
    check("anthropic 401", error.status_code == 401)
try:
    an.messages.create(model="claude-nope", max_tokens=4, messages=[{"role": "user", "content": "hi"}])
    check("anthropic 404 unknown model", False, "no error")
except anthropic.NotFoundError as error:
    check("anthropic 404 unknown model", error.status_code == 404)
try:
    an.messages.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "word " * 5000}])
    check("anthropic 400 context length", False, "no error")
except anthropic.BadRequestError as error:
    check("anthropic 400 context length", "context" in str(error), error)

# --- curl -N: SSE framing -------------------------------------------------------------------
body = json.dumps({"model": MODEL, "messages": messages, "max_tokens": 8, "stream": True, "temperature": 0})
raw = subprocess.run(["curl", "-sN", BASE + "/v1/chat/completions", "-H", f"Authorization: Bearer {KEY}",
                      "-H", "Content-Type: application/json", "-d", body], capture_output=True, text=True, timeout=60).stdout
frames = [f for f in raw.split("\n\n") if f]
check("curl -N SSE framing: data: {...}\\n\\n frames ending in data: [DONE]",
      raw.endswith("data: [DONE]\n\n") and all(f.startswith("data: ") for f in frames)
      and all(json.loads(f[6:])["object"] == "chat.completion.chunk" for f in frames[:-1]), raw[:400])
health = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", BASE + "/health"], capture_output=True, text=True).stdout
check("GET /health without a key is 200", health == "200", health)

# --- disconnect: the client drops mid-stream -------------------------------------------------
# A raw prompt the base model continues for hundreds of tokens (a chat turn gets the dialogue
# prompt, whose replies end after a sentence): what the disconnect and drain checks need.
STORY = "Chapter One\n\nIt was a dark and stormy night"


def drop_mid_stream():
    s = socket.create_connection((HOST, PORT), timeout=30)
    payload = json.dumps({"model": MODEL, "prompt": STORY, "max_tokens": 900, "stream": True, "temperature": 1,
                          "seed": 2}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
    received = b""
    while received.count(b"data: ") < 5:
        chunk = s.recv(4096)
        if not chunk:
            break
        received += chunk
    s.close()
    return received


def wait_idle(limit=10):
    """Seconds until the server's admitted and running counts are both 0, or None past `limit`."""
    t0 = time.time()
    while time.time() - t0 < limit:
        if metric("hearth_requests_admitted") == 0 and metric("hearth_requests_running") == 0:
            return time.time() - t0
        time.sleep(0.02)
    return None


def wait_running(limit=60):
    t0 = time.time()
    while time.time() - t0 < limit:
        if (metric("hearth_requests_running") or 0) >= 1:
            return True
        time.sleep(0.02)
    return False


CUT_SHORT = 'hearth_requests_total{endpoint="/v1/completions",status="499"}'

dropped = drop_mid_stream()
check("disconnect: the stream had started", dropped.startswith(b"HTTP/1.1 200") and dropped.count(b"data: ") >= 5, dropped[:200])
idle = wait_idle()
check("disconnect: admitted/running count returns to 0 within 2 s (well within the 900-token budget)",
      idle is not None and idle < 2, idle)
after = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, seed=1)
check("disconnect: the next request is correct", after.choices[0].message.content == text)

# --- disconnect: a non-streaming request dropped mid-generation (nothing written to it yet) ---
cut_before = metric(CUT_SHORT) or 0
s = socket.create_connection((HOST, PORT), timeout=30)
payload = json.dumps({"model": MODEL, "prompt": STORY, "max_tokens": 900, "stream": False, "temperature": 1,
                      "seed": 2}).encode()
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
generating = wait_running()
time.sleep(0.3)
s.close()
idle = wait_idle()
check("disconnect (non-streaming): the generation had started", generating)
check("disconnect (non-streaming): admitted/running count returns to 0 within 2 s", idle is not None and idle < 2, idle)
check("disconnect (non-streaming): counted as cut short (499)", (metric(CUT_SHORT) or 0) == cut_before + 1,
      (cut_before, metric(CUT_SHORT)))

# The openai client giving up (its timeout) closes the connection the same way.
t0 = time.time()
try:
    oa.with_options(timeout=1.5).completions.create(model=MODEL, prompt=STORY, max_tokens=900, temperature=1, seed=2)
    check("disconnect (openai client timeout): the request timed out", False, "it completed")
except openai.APITimeoutError:
    check("disconnect (openai client timeout): the request timed out", True)
idle = wait_idle()
check("disconnect (openai client timeout): admitted/running count returns to 0 within 2 s", idle is not None and idle < 2,
      idle)
after = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, seed=1)
check("disconnect (non-streaming): the next request is correct", after.choices[0].message.content == text)

# --- hostile HTTP ---------------------------------------------------------------------------
def raw_request(data, read_timeout=15):
    s = socket.create_connection((HOST, PORT), timeout=read_timeout)
    try:
        s.sendall(data)
        reply = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
            if b"\r\n\r\n" in reply and (b"content-length: 0" in reply.lower() or reply.count(b"}") > 0):
                break
        return reply
    except (ConnectionResetError, BrokenPipeError):
        return b"<reset>"
    except socket.timeout:
        return b"<timeout>"
    finally:
        s.close()


big_header = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
reply = raw_request(big_header)
check("oversized headers are refused (431/400 or closed), not served", not reply.startswith(b"HTTP/1.1 200"), reply[:80])

for label, payload in [
    ("malformed JSON", b"{oops"),
    ("wrong type", json.dumps({"model": MODEL, "messages": "hi"}).encode()),
    ("invalid UTF-8", b'{"model":"' + MODEL.encode() + b'","messages":[{"role":"user","content":"\xff\xfe"}]}'),
    ("negative max_tokens", json.dumps({"model": MODEL, "messages": messages, "max_tokens": -1}).encode()),
    ("absurd temperature", json.dumps({"model": MODEL, "messages": messages, "temperature": 1e308}).encode()),
]:
    request = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + \
        f"Authorization: Bearer {KEY}\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload
    reply = raw_request(request)
    check(f"hostile: {label} → 400 JSON error", reply.startswith(b"HTTP/1.1 400") and b'"error"' in reply, reply[:200])

big_body = b"x" * (5 << 20)
reply = raw_request(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(big_body)}\r\n\r\n".encode())
check("hostile: body over the limit → 413", reply.startswith(b"HTTP/1.1 413"), reply[:120])

# slowloris: a body trickled one byte a second is cut off by the idle timeout.
s = socket.create_connection((HOST, PORT), timeout=30)
s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + f"Authorization: Bearer {KEY}\r\nContent-Length: 1000\r\n\r\n".encode())
t0 = time.time()
closed = False
try:
    for _ in range(40):
        s.sendall(b" ")
        s.settimeout(1.0)
        try:
            data = s.recv(4096)
            if data == b"" or data.startswith(b"HTTP/1.1 408"):
                closed = True
                break
        except socket.timeout:
            pass
except (BrokenPipeError, ConnectionResetError):
    closed = True
s.close()
check("hostile: slowloris body is cut off by the timeout", closed and time.time() - t0 < 30, time.time() - t0)
alive = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, seed=1)
check("after hostile inputs the server still answers correctly", alive.choices[0].message.content == text)

# --- bounded load: 32 concurrent streaming clients, 96 requests ------------------------------
rss_before = rss_kib()
results = []
lock = threading.Lock()
queue = list(range(96))


def worker():
    client = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, timeout=300)
    while True:
        with lock:
            if not queue:
                return
            n = queue.pop()
        try:
            got, finished = "", None
            for chunk in client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": f"Count to {n % 7 + 3}."}], max_tokens=32,
                    temperature=0.7, seed=n, stream=True):
                if chunk.choices:
                    got += chunk.choices[0].delta.content or ""
                    finished = chunk.choices[0].finish_reason or finished
            outcome = "ok" if finished in ("stop", "length") else f"no finish ({finished})"
        except openai.APIStatusError as error:
            outcome = f"http {error.status_code}"
        except Exception as error:  # noqa: BLE001 - any other failure is a lost request
            outcome = f"lost: {type(error).__name__}: {error}"
        with lock:
            results.append(outcome)


t0 = time.time()
threads = [threading.Thread(target=worker) for _ in range(32)]
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.time() - t0
rss_after = rss_kib()
ok = results.count("ok")
refused = sum(1 for r in results if r == "http 503")
lost = [r for r in results if r not in ("ok", "http 503")]
print(f"     load: {len(results)} requests in {elapsed:.1f}s: {ok} ok, {refused} refused with 503, "
      f"{len(lost)} other; RSS {rss_before // 1024} → {rss_after // 1024} MiB", flush=True)
check("load: every request completed or got a clear 503, none lost", len(results) == 96 and not lost, lost[:3])
check("load: RSS bounded (grew < 300 MiB)", rss_after - rss_before < 300 * 1024, (rss_before, rss_after))
# The server lowers its counts just after the last bytes of an answer are written, so a client
# can be done a moment before them: wait for it (bounded) rather than read once.
idle = wait_idle(5)
check("load: admitted/running count back to 0 within 5 s", idle is not None, idle)
final = oa.chat.completions.create(model=MODEL, messages=messages, max_tokens=24, temperature=0, seed=1)
check("after load the server still answers correctly", final.choices[0].message.content == text)

print(f"{len(failures)} failure(s)" if failures else "all client checks passed")
sys.exit(1 if failures else 0)
