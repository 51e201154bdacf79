"""Drives `hearth serve --config` (the gateway) as an app backend would, with the official
`openai` client signing every request like the seed app (an httpx request hook adds
x-timestamp and x-signature = hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nhex(SHA256(body))),
and a fake OpenAI upstream on loopback. Run by scripts/check-gateway.sh, which starts and kills
the server; this file does the checks in steps:

  check_gateway.py upstream PORTFILE           run the fake upstream (until killed)
  check_gateway.py checks BASE STATE           the checks; writes the expected usage to STATE
  check_gateway.py inflight BASE               start a long stream and return after its first chunk
  check_gateway.py ledger DB STATE             after kill -9: the SQLite file is consistent and holds
                                               exactly the finished requests
  check_gateway.py usage BASE STATE            after a restart: GET /v1/usage still says the same
"""

import hashlib
import hmac
import http.server
import json
import os
import socket
import sqlite3
import sys
import threading
import time

APP_KEY = os.environ.get("APP_KEY", "")
APP_SECRET = os.environ.get("APP_HMAC_SECRET", "")
OPS_KEY = os.environ.get("OPS_KEY", "")
LIMITED_KEY = os.environ.get("LIMITED_KEY", "")
QUOTA_KEY = os.environ.get("QUOTA_KEY", "")
CLOUD_TEXT = ["The capital ", "of France ", "is Paris, ", "a city on the Seine."]


def ok(message):
    print(f"ok   {message}", flush=True)


def fail(message):
    print(f"FAIL {message}", flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)
    ok(message)


# ---------------------------------------------------------------- the fake upstream

class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        Upstream.seen.append(body)
        with open(self.server.count_file, "w") as f:
            f.write(str(len(Upstream.seen)))
        if "#echo" in body:
            # A 401 that quotes the key it was sent, as some servers do.
            data = json.dumps({"error": {"message": "Incorrect API key provided: " + self.headers.get("Authorization", ""),
                                         "type": "invalid_request_error"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if "#500" in body:
            data = b'{"error":{"message":"upstream exploded","type":"server_error"}}'
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(text):
            data = text.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        pieces = CLOUD_TEXT[:2] if "#drop" in body else CLOUD_TEXT
        for piece in pieces:
            chunk("data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": piece}}]}) + "\n\n")
            time.sleep(0.02)
        if "#drop" in body:
            # The upstream dies mid-answer: no end marker, no last chunk, the socket closed.
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        chunk('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
        chunk('data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}\n\n')
        chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")


def run_upstream(port_file):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.count_file = port_file + ".count"
    with open(server.count_file, "w") as f:
        f.write("0")
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


# ---------------------------------------------------------------- signing like the seed app

def sign(secret, method, path, body, timestamp=None):
    timestamp = str(int(time.time()) if timestamp is None else timestamp)
    canonical = f"{method}\n{path}\n{timestamp}\n{hashlib.sha256(body).hexdigest()}"
    return {"x-timestamp": timestamp, "x-signature": hmac.new(secret.encode(), canonical.encode(), hashlib.sha256).hexdigest()}


def signing_hook(secret):
    """An httpx request hook: what the seed app's interceptor does before each request."""
    def hook(request):
        request.headers.update(sign(secret, request.method, request.url.raw_path.decode(), request.content))
    return hook


def signed_openai(base, key, secret):
    import httpx
    from openai import OpenAI
    return OpenAI(base_url=base + "/v1", api_key=key, max_retries=0,
                  http_client=httpx.Client(event_hooks={"request": [signing_hook(secret)]}, timeout=120))


def upstream_count(state):
    with open(state["upstream_count_file"]) as f:
        return int(f.read() or "0")


# ---------------------------------------------------------------- the checks

def checks(base, state_file):
    import httpx
    import openai
    from openai import OpenAI

    with open(state_file) as f:
        state = json.load(f)
    expected = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}

    def count(usage=None):
        expected["requests"] += 1
        if usage is not None:
            expected["prompt_tokens"] += usage.prompt_tokens
            expected["completion_tokens"] += usage.completion_tokens

    app = signed_openai(base, APP_KEY, APP_SECRET)
    messages = [{"role": "user", "content": "Name three colours."}]

    # Signed requests from the official client: whole and streamed.
    raw = app.chat.completions.with_raw_response.create(model="local", messages=messages, max_tokens=8, temperature=0)
    reply = raw.parse()
    check(reply.choices[0].message.content and raw.headers.get("x-hearth-served-by") == "local",
          "a signed request (official openai client + signing hook) is answered by the local route")
    text = "".join(c.choices[0].delta.content or "" for c in app.chat.completions.create(
        model="local", messages=messages, max_tokens=8, temperature=0.7, stream=True) if c.choices)
    check(len(text) > 0, "a signed streaming request is answered")

    # Missing signature, wrong key, missing key.
    unsigned = OpenAI(base_url=base + "/v1", api_key=APP_KEY, max_retries=0)
    for label, client, code in [
        ("a request without signature", unsigned, "signature_missing"),
        ("a wrong key", OpenAI(base_url=base + "/v1", api_key="hk-not-a-key-0000000000", max_retries=0), "invalid_api_key"),
    ]:
        try:
            client.chat.completions.create(model="local", messages=messages, max_tokens=2)
            fail(f"{label} was accepted")
        except openai.AuthenticationError as error:
            check(error.status_code == 401 and error.code == code, f"{label} is refused: 401 {code}")

    # Expired, replayed and tampered signatures (a raw client, as the seed app sends them).
    http = httpx.Client(timeout=120)
    r = http.post(base + "/v1/chat/completions", json={"model": "local", "messages": messages, "max_tokens": 2})
    check(r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key", "a missing key is refused: 401 invalid_api_key")
    body = json.dumps({"model": "local", "messages": messages, "max_tokens": 2}).encode()
    auth = {"authorization": f"Bearer {APP_KEY}", "content-type": "application/json"}
    url = base + "/v1/chat/completions"
    r = http.post(url, content=body, headers={**auth, **sign(APP_SECRET, "POST", "/v1/chat/completions", body, int(time.time()) - 400)})
    check(r.status_code == 401 and r.json()["error"]["code"] == "signature_expired", "a signature 400 s old is refused (signature_expired)")
    headers = {**auth, **sign(APP_SECRET, "POST", "/v1/chat/completions", body)}
    first = http.post(url, content=body, headers=headers)
    again = http.post(url, content=body, headers=headers)
    check(first.status_code == 200 and again.status_code == 401 and again.json()["error"]["code"] == "signature_replayed",
          "a captured signed request replayed is refused (signature_replayed)")
    tampered = body.replace(b"max_tokens\": 2", b"max_tokens\": 3")
    r = http.post(url, content=tampered, headers={**auth, **sign(APP_SECRET, "POST", "/v1/chat/completions", body, int(time.time()) + 1)})
    check(r.status_code == 401 and r.json()["error"]["code"] == "signature_invalid", "a body changed after signing is refused (signature_invalid)")

    # A short-lived token, used as bearer and as signing key.
    r = http.post(base + "/v1/auth/token", content=b"{}", headers={**auth, **sign(APP_SECRET, "POST", "/v1/auth/token", b"{}")})
    token = r.json().get("token", "")
    check(r.status_code == 200 and token.startswith("hst_") and r.json()["expires_in"] > 0, "POST /v1/auth/token gives a token with an expiry")
    state["token"] = token
    with_token = signed_openai(base, token, token)
    check(with_token.chat.completions.create(model="local", messages=messages, max_tokens=2).choices[0].message is not None,
          "the token works as bearer and signing key")

    # Requests per minute and tokens per day: 429 with Retry-After and x-ratelimit-* headers, before any work.
    limited = OpenAI(base_url=base + "/v1", api_key=LIMITED_KEY, max_retries=0)
    for _ in range(2):
        limited.chat.completions.create(model="local", messages=messages, max_tokens=1)
    before = upstream_count(state)
    try:
        limited.chat.completions.create(model="gpt-4o-mini", messages=messages, max_tokens=1)
        fail("the third request in a minute was accepted (limit 2)")
    except openai.RateLimitError as error:
        h = error.response.headers
        check(error.status_code == 429 and error.code == "rate_limit_exceeded" and int(h["retry-after"]) >= 1
              and h["x-ratelimit-limit-requests"] == "2" and h["x-ratelimit-remaining-requests"] == "0",
              "requests per minute exhausted: 429 rate_limit_exceeded, Retry-After, x-ratelimit-*")
    check(upstream_count(state) == before, "the refused request did not reach the upstream")
    quota = OpenAI(base_url=base + "/v1", api_key=QUOTA_KEY, max_retries=0)
    first = quota.chat.completions.create(model="local", messages=messages, max_tokens=1)
    left = 200 - first.usage.total_tokens
    try:
        # Tokens are reserved at admission (prompt estimate + max_tokens): more than is left is refused.
        quota.chat.completions.create(model="local", messages=messages, max_tokens=200)
        fail("a request that may pass the daily token quota was accepted")
    except openai.RateLimitError as error:
        h = error.response.headers
        check(error.code == "token_quota_exceeded" and h["x-ratelimit-remaining-tokens"] == str(left) and int(h["retry-after"]) > 0,
              "tokens per day reserved: 429 token_quota_exceeded when max_tokens does not fit what is left, Retry-After until midnight UTC"
              + f" ({error.code}, remaining {h.get('x-ratelimit-remaining-tokens')} vs {left}, retry-after {h.get('retry-after')})")

    # The admin client (no signature): cache, filter, cloud route with local fallback; usage counted.
    ops = OpenAI(base_url=base + "/v1", api_key=OPS_KEY, max_retries=0)
    cached = [{"role": "user", "content": "Say something cacheable."}]
    a = ops.chat.completions.with_raw_response.create(model="local", messages=cached, max_tokens=6, temperature=0)
    b = ops.chat.completions.with_raw_response.create(model="local", messages=cached, max_tokens=6, temperature=0)
    count(a.parse().usage)
    count(b.parse().usage)
    check(a.headers["x-hearth-cache"] == "miss" and b.headers["x-hearth-cache"] == "hit"
          and a.parse().choices[0].message.content == b.parse().choices[0].message.content,
          "a deterministic request is a miss, then a hit with the same answer")
    stream = ops.chat.completions.with_raw_response.create(model="local", messages=cached, max_tokens=6, temperature=0, stream=True,
                                                           stream_options={"include_usage": True})
    pieces, usage = [], None
    for chunk in stream.parse():
        if chunk.choices:
            pieces.append(chunk.choices[0].delta.content or "")
        if chunk.usage:
            usage = chunk.usage
    count(usage)
    check(stream.headers["x-hearth-cache"] == "hit" and "".join(pieces) == a.parse().choices[0].message.content,
          "a streaming request for a cached answer is replayed as a stream")
    c = ops.chat.completions.with_raw_response.create(model="local", messages=cached, max_tokens=6, temperature=0,
                                                      extra_headers={"Cache-Control": "no-cache"})
    count(c.parse().usage)
    check(c.headers["x-hearth-cache"] == "miss", "Cache-Control: no-cache bypasses the cache")

    before = upstream_count(state)
    try:
        ops.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "tell me about Bananarama"}], max_tokens=4)
        fail("a blocked word was forwarded")
    except openai.BadRequestError as error:
        count(None)
        check(error.status_code == 400 and error.code == "content_filtered", "a blocked word is refused: 400 content_filtered")
    check(upstream_count(state) == before, "nothing was sent upstream for the filtered request")

    r = ops.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=messages, max_tokens=20, temperature=0.5)
    count(r.parse().usage)
    check(r.headers["x-hearth-served-by"] == "openai" and r.parse().choices[0].message.content == "".join(CLOUD_TEXT),
          "the cloud route is served by the upstream (key from the server's environment)")
    r = ops.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "#500"}], max_tokens=6)
    count(r.parse().usage)
    check(r.headers["x-hearth-served-by"] == "local" and r.parse().choices[0].message.content,
          "an upstream 500 falls back to the local model")
    try:
        ops.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "#echo"}], max_tokens=4)
        fail("an upstream 401 was answered as a success")
    except openai.APIStatusError as error:
        count(None)
        check(os.environ["OPENAI_API_KEY"] not in error.response.text,
              f"an upstream 401 echoing the key reaches the client as {error.status_code} without the key")
    events, text, usage = [], "", None
    for chunk in ops.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Capital of France? #drop"}],
                                             max_tokens=12, temperature=0, stream=True, stream_options={"include_usage": True}):
        extra = (chunk.model_extra or {}).get("hearth")
        if extra:
            events.append(extra)
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    count(usage)
    prefix = "".join(CLOUD_TEXT[:2])
    check(text.startswith(prefix) and len(text) > len(prefix) and events and events[-1].get("served_by") == "local"
          and events[-1].get("switched_from") == "openai",
          f"the upstream died mid-answer; the local model finished it ({len(text) - len(prefix)} more characters, events {events})")

    # GET /v1/usage equals the sum of the responses' usage.
    r = http.get(base + "/v1/usage?client=ops", headers={"authorization": f"Bearer {OPS_KEY}"})
    total = r.json()["total"]
    check(total["requests"] == expected["requests"] and total["prompt_tokens"] == expected["prompt_tokens"]
          and total["completion_tokens"] == expected["completion_tokens"],
          f"GET /v1/usage equals the sum of the responses' usage ({total['requests']} requests, "
          f"{total['prompt_tokens']} prompt and {total['completion_tokens']} completion tokens)")
    r = http.get(base + "/v1/usage", headers={"authorization": f"Bearer {OPS_KEY}"})
    clients = {row["client"] for row in r.json()["data"]}
    check({"app", "ops", "limited", "quota"} <= clients, f"an admin sees every client's usage ({sorted(clients)})")
    r = http.get(base + "/v1/usage?client=ops", headers={"authorization": f"Bearer {APP_KEY}", **sign(APP_SECRET, "GET", "/v1/usage?client=ops", b"")})
    check(r.status_code == 403, "a client cannot read another client's usage")
    scrape_metrics(base, http, count)
    state["expected"] = expected
    with open(state_file, "w") as f:
        json.dump(state, f)


def scrape_metrics(base, http, count):
    """/metrics read by prometheus_client's own text parser: per-model and per-provider series
    (the cloud route answered by openai and by the local fallback, the local model), the failover
    and response-cache counters, hearth_build_info and the resident memory."""
    from prometheus_client.parser import text_string_to_metric_families
    from openai import OpenAI
    ops = OpenAI(base_url=base + "/v1", api_key=OPS_KEY, max_retries=0)
    tiny = ops.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hi"}], max_tokens=3, temperature=0)
    count(tiny.usage)
    check(tiny.usage.completion_tokens > 0, "the second local model answers on its route")
    r = http.get(base + "/metrics", headers={"authorization": f"Bearer {OPS_KEY}"})
    check(r.status_code == 200, f"GET /metrics answers ({r.status_code})")
    families = {family.name: family for family in text_string_to_metric_families(r.text)}
    def samples(name):
        family = families.get(name)
        return [sample for sample in family.samples] if family else []
    served = [s.labels for s in samples("hearth_served_requests") if s.name == "hearth_served_requests_total"]
    pairs = {(labels["model"], labels["provider"]) for labels in served}
    check({("gpt-4o-mini", "openai"), ("gpt-4o-mini", "local"), ("local", "local"), ("tiny", "local")} <= pairs,
          f"hearth_served_requests_total by model and provider: the cloud route served by openai and by the local fallback, two local models ({sorted(pairs)})")
    check(all(labels.get("route") and labels.get("finish_reason") for labels in served), "each served request carries its route and finish_reason")
    ttft = {(s.labels["model"], s.labels["provider"]) for s in samples("hearth_served_time_to_first_token_seconds")
            if s.name.endswith("_count") and s.value > 0}
    check(("gpt-4o-mini", "openai") in ttft and ("local", "local") in ttft,
          f"time to first token has its own series per model and provider ({sorted(ttft)})")
    queued = {s.labels["model"] for s in samples("hearth_queue_time_seconds") if s.name.endswith("_count") and s.value > 0}
    check({"local", "tiny"} <= queued, f"hearth_queue_time_seconds has each local model's requests ({sorted(queued)})")
    loaded = {s.labels["model"] for s in samples("hearth_model_loaded") if s.value == 1}
    check(len(loaded) >= 2, f"hearth_model_loaded names both local models ({sorted(loaded)})")
    steps = {s.name: s.value for s in samples("hearth_model_steps") + samples("hearth_model_step_sequences") if s.labels.get("model") == "local"}
    check(steps.get("hearth_model_steps_total", 0) > 0 and steps.get("hearth_model_step_sequences_total", 0) >= steps.get("hearth_model_steps_total", 0),
          f"the batch's occupancy: steps and the sequences they held ({steps})")
    failovers = [s for s in samples("hearth_failovers") if s.name == "hearth_failovers_total"]
    check(any(s.labels["from"] == "openai" and s.labels["to"] == "local" and s.value >= 1 for s in failovers),
          "hearth_failovers_total counts the openai → local fallbacks")
    hits = [s for s in samples("hearth_response_cache_hits") if s.name == "hearth_response_cache_hits_total"]
    check(any(s.value >= 1 for s in hits), "hearth_response_cache_hits_total counts the cache hits")
    build = samples("hearth_build_info")
    check(build and build[0].value == 1 and build[0].labels.get("version") and build[0].labels.get("commit"),
          f"hearth_build_info carries the version and commit ({build[0].labels if build else None})")
    rss = samples("process_resident_memory_bytes")
    check(rss and rss[0].value > 10_000_000, "process_resident_memory_bytes is the server's resident memory")


def inflight(base):
    """Starts a long stream as ops and returns once its first text arrived (the shell then kills the server)."""
    from openai import OpenAI
    ops = OpenAI(base_url=base + "/v1", api_key=OPS_KEY, max_retries=0)
    stream = ops.chat.completions.create(model="local", messages=[{"role": "user", "content": "Tell me a long story."}],
                                         max_tokens=400, temperature=0.8, stream=True,
                                         # No end token: a sampled reply that ended within the shell's 50 ms
                                         # poll was recorded before the kill (10 of 9 + 1, once).
                                         extra_body={"ignore_eos": True})
    announced = False
    try:
        for chunk in stream:
            if not announced and chunk.choices and chunk.choices[0].delta.content:
                print("in flight", flush=True)
                announced = True
    except Exception:
        pass  # the server was killed mid-answer, as intended


def ledger(db, state_file):
    with open(state_file) as f:
        expected = json.load(f)["expected"]
    connection = sqlite3.connect(db)
    check(connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "after kill -9 the usage database passes integrity_check")
    rows = connection.execute("SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM requests WHERE client = 'ops'").fetchone()
    totals = connection.execute("SELECT SUM(requests), SUM(prompt_tokens), SUM(completion_tokens) FROM usage WHERE client = 'ops'").fetchone()
    check(tuple(rows) == tuple(totals), f"the totals equal the sum of the request rows {tuple(rows)}")
    check(rows[0] == expected["requests"] and rows[1] == expected["prompt_tokens"] and rows[2] == expected["completion_tokens"],
          f"every finished request is recorded and only the one in flight is lost ({rows[0]} of {expected['requests']} + 1)")
    all_rows = connection.execute("SELECT COUNT(*), SUM(prompt_tokens + completion_tokens) FROM requests").fetchone()
    all_totals = connection.execute("SELECT SUM(requests), SUM(prompt_tokens + completion_tokens) FROM usage").fetchone()
    check(tuple(all_rows) == tuple(all_totals), "the same holds for every client")


def usage_after_restart(base, state_file):
    import httpx
    with open(state_file) as f:
        expected = json.load(f)["expected"]
    total = httpx.get(base + "/v1/usage?client=ops", headers={"authorization": f"Bearer {OPS_KEY}"}).json()["total"]
    check(total["requests"] == expected["requests"] and total["prompt_tokens"] == expected["prompt_tokens"],
          "after a restart GET /v1/usage reports the same usage")


if __name__ == "__main__":
    step = sys.argv[1]
    if step == "upstream":
        run_upstream(sys.argv[2])
    elif step == "checks":
        checks(sys.argv[2], sys.argv[3])
    elif step == "inflight":
        inflight(sys.argv[2])
    elif step == "ledger":
        ledger(sys.argv[2], sys.argv[3])
    elif step == "usage":
        usage_after_restart(sys.argv[2], sys.argv[3])
    else:
        fail(f"unknown step {step}")
