"""Issue 55's reproductions against a running `hearth serve` (scripts/check-bounds.sh starts it):
one request must never crash or starve the server. Each hostile request must end in a 4xx or a
bounded answer while /live keeps answering within a second and the server's resident memory
stays within its documented bound (docs/SERVER.md, "Per-request bounds").

Standard library only (real sockets on loopback). Prints one line per check and
"N passed, M failed"; exits 1 on any failure.

Usage: check_bounds.py BASE_URL PID KEY_A KEY_B
"""

import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse

BASE, PID, KEY_A, KEY_B = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
URL = urllib.parse.urlparse(BASE)
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what} {detail}")
    sys.stdout.flush()


def request(method, path, body=None, key=KEY_A, timeout=120):
    """(status, body bytes, seconds)."""
    conn = http.client.HTTPConnection(URL.hostname, URL.port, timeout=timeout)
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    started = time.monotonic()
    try:
        conn.request(method, path, body=data, headers=headers)
        reply = conn.getresponse()
        payload = reply.read()
        return reply.status, payload, time.monotonic() - started
    finally:
        conn.close()


def cpu_seconds():
    """User + system CPU time of the server so far."""
    with open(f"/proc/{PID}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


def rss():
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Watch:
    """/live every 0.2 s (the slowest answer, failures) and the server's RSS (the peak)."""

    def __init__(self):
        self.slowest = 0.0
        self.failures = 0
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, rss())
                status, _, seconds = request("GET", "/live", timeout=5)
                self.slowest = max(self.slowest, seconds)
                if status != 200:
                    self.failures += 1
            except Exception:
                self.failures += 1
                self.slowest = max(self.slowest, 5.0)
            self.stop.wait(0.2)

    def reset_peak(self):
        self.peak = rss()


def chain(count, deepest_first):
    lines = [f'a{i} ::= a{i + 1} "x" | "y"' for i in range(count - 1)] + [f'a{count - 1} ::= "y"']
    if deepest_first:
        lines.reverse()
    return "root ::= a0\n" + "\n".join(lines)


def code(body):
    try:
        return json.loads(body).get("error", {}).get("code")
    except Exception:
        return None


watch = Watch()
chat = {"model": "ga", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 20, "temperature": 0}

# Warm-up: the first model loaded, a baseline for a 20-token completion.
status, _, _ = request("POST", "/v1/chat/completions", chat)
check(status == 200, "warm-up chat on model ga")
baseline = min(request("POST", "/v1/chat/completions", chat)[2] for _ in range(2))
print(f"     baseline 20-token chat: {baseline:.2f} s")

# 1. Rule chains, both orders: 40,000 rules to chat, 100,000 to completions.
for deepest_first in (False, True):
    order = "deepest first" if deepest_first else "root first"
    status, body, seconds = request("POST", "/v1/chat/completions", dict(chat, grammar=chain(40_000, deepest_first)))
    check(status == 400 and code(body) == "response_format_too_complex", f"40,000-rule chain ({order}) to chat: 400 in {seconds:.2f} s", body[:200])
    status, body, seconds = request(
        "POST", "/v1/completions", {"model": "ga", "prompt": "x", "max_tokens": 4, "grammar": chain(100_000, deepest_first)})
    check(status == 400 and code(body) == "response_format_too_complex", f"100,000-rule chain ({order}) to completions: 400 in {seconds:.2f} s", body[:200])

# 2. Nine 4096×48 patterns (808 bytes).
schema = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": "^([a-z]{4096}){48}$"} for i in range(9)}}
fmt = {"type": "json_schema", "json_schema": {"name": "p", "schema": schema}}
status, body, seconds = request("POST", "/v1/chat/completions", dict(chat, response_format=fmt))
check(status == 400 and "/properties/p" in body.decode(errors="replace"), f"nine-pattern schema: 400 naming the field in {seconds:.2f} s", body[:200])

# 3. Small hostile tools: each a 4xx or an answer within the compile budget (10 s) and the reply.
hostile = [
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^((a|b|ab|ba){1,60}){1,60}$"}}},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "maxLength": 4000}, "minItems": 400}}},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^([a-z0-9]{1,99}\\.){1,40}[a-z]{2,63}$"}}},
]
for i, parameters in enumerate(hostile):
    tool = {"type": "function", "function": {"name": "f", "parameters": parameters}}
    text = json.dumps(tool)
    status, body, seconds = request("POST", "/v1/chat/completions", dict(chat, tools=[tool], tool_choice="required"))
    check(status in (200, 400) and seconds < 30, f"hostile tool {i} ({len(text)} bytes): {status} in {seconds:.2f} s", body[:200])
tools = [{"type": "function", "function": {"name": f"t{i}", "parameters": {"type": "object"}}} for i in range(129)]
status, body, seconds = request("POST", "/v1/chat/completions", dict(chat, tools=tools))
check(status == 400 and b"tools" in body, f"129 tools: 400 in {seconds:.2f} s", body[:200])

# 4. Alternating models under --max-loaded 1: never two copies resident.
watch.reset_peak()
before = rss()
errors = []


def alternate(model):
    status, body, _ = request("POST", "/v1/chat/completions", dict(chat, model=model, max_tokens=8))
    if status != 200:
        errors.append((model, status, body[:120]))


def hold(model):
    """A long answer that keeps `model` in use while the other is asked for."""
    status, body, _ = request("POST", "/v1/completions", {"model": model, "prompt": "Once", "max_tokens": 120, "ignore_eos": True})
    if status != 200:
        errors.append((model, status, body[:120]))


for round_ in range(4):
    held, other = ("ga", "gb") if round_ % 2 == 0 else ("gb", "ga")
    threads = [threading.Thread(target=hold, args=(held,))]
    threads[0].start()
    time.sleep(0.3)
    for m in (other, held):  # the other model, then the held one again while its first use still runs
        t = threading.Thread(target=alternate, args=(m,))
        t.start()
        threads.append(t)
        time.sleep(0.2)
    for t in threads:
        t.join()
peak = watch.peak
check(not errors, "twelve alternating requests on two models (--max-loaded 1, one held by a long answer each round) all answered", str(errors))
model_bytes = int(sys.argv[5]) if len(sys.argv) > 5 else 253_113_024
bound = before + model_bytes // 2
check(peak <= bound, f"alternating models: peak RSS {peak / 2**20:.0f} MiB <= {bound / 2**20:.0f} MiB (before {before / 2**20:.0f} MiB + half a model)")

# 5. 32 inputs of ~1,000 tokens: over the embeddings token bound, refused before any work.
words = " ".join(["lorem ipsum dolor sit amet"] * 200)
status, body, seconds = request("POST", "/v1/embeddings", {"model": "ga", "input": [words] * 32})
check(status == 400, f"32x1000-token embeddings request: {status} in {seconds:.2f} s (over --max-embedding-tokens)", body[:200])
# One within the bound (12 inputs) whose client leaves after 2 s stops within a forward pass.
body = json.dumps({"model": "ga", "input": [words] * 12}).encode()
sock = socket.create_connection((URL.hostname, URL.port))
sock.sendall(
    f"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY_B}\r\nContent-Type: application/json\r\n"
    f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
time.sleep(2)
sock.close()
time.sleep(1.5)
# Gone with its client: the server is idle again (a core busy would be ~1 s of CPU per second).
cpu = cpu_seconds()
time.sleep(2)
busy = cpu_seconds() - cpu
check(busy < 0.5, f"a 12x1000-token embeddings request stops when its client leaves: {busy:.2f} s of CPU in the 2 s after")
status, _, seconds = request("POST", "/v1/chat/completions", chat)
check(status == 200 and seconds <= max(4 * baseline, baseline + 0.5),
      f"after it: a 20-token chat in {seconds:.2f} s (baseline {baseline:.2f} s)")

# 6. 3 MB to /tokenize with pieces: refused or bounded.
status, body, seconds = request("POST", "/tokenize", {"model": "ga", "content": "word " * 600_000, "with_pieces": True})
check(400 <= status < 500 or len(body) <= 8 << 20, f"3 MB /tokenize with_pieces: {status}, {len(body)} bytes in {seconds:.2f} s", body[:200])

# 7. n: 8 from client b beside client a: a's request is not held behind b's eight choices.
results = {}


def choices_b():
    long = {"model": "ga", "prompt": "Once upon a time", "n": 8, "max_tokens": 300, "temperature": 1.0, "ignore_eos": True}
    results["b"] = request("POST", "/v1/completions", long, key=KEY_B)


tb = threading.Thread(target=choices_b)
tb.start()
time.sleep(0.5)
status, _, seconds = request("POST", "/v1/chat/completions", chat)
tb.join()
b_seconds = results["b"][2]
# With --parallel 2, b's eight choices run two at a time: a fair queue gives a the first slot that
# frees (about a quarter of b's time), never the wait for all eight (all of it).
check(status == 200 and seconds < b_seconds / 2,
      f"client a's 20-token chat beside client b's n=8 x 300 tokens: {seconds:.2f} s (baseline {baseline:.2f} s; b: {results['b'][0]} in {b_seconds:.2f} s)")

watch.stop.set()
watch.thread.join()
check(watch.failures == 0 and watch.slowest < 1.0, f"/live answered every poll within 1 s throughout (slowest {watch.slowest:.3f} s, {watch.failures} failures)")
status, _, _ = request("GET", "/health")
check(status == 200, "the server is still healthy")
print(f"peak RSS {watch.peak / 2**20:.0f} MiB")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
