#!/usr/bin/env python3
"""Closed-loop streaming load generator for OpenAI-compatible servers (stdlib only: asyncio + raw HTTP/1.1).

C clients each send R streaming POST /v1/completions requests one after another (a new one as
soon as the previous answer ended), every request with its own raw-text prompt (no chat
template, so both servers see the same prompt tokens; distinct prompts, so no request reuses
another's KV prefix), temperature 0, a fixed max_tokens, `ignore_eos: true` (llama-server
honours it; a server that does not simply stops at its end-of-sequence token, which the output
shows as fewer completion tokens per request).

From the SSE stream, timed on arrival of each `data:` frame that carries text:
  TTFT          request sent -> first text frame
  inter-token   gap between consecutive text frames of one request (both servers send one frame
                per token; a frame carrying k tokens counts as one gap, so this is a bound)
  tokens        the usage.completion_tokens the server reports (stream_options.include_usage),
                else the number of text frames
  tokens/s      all requests' completion tokens / wall time from the first request sent to the
                last answer ended

Usage: serve_load.py --url http://127.0.0.1:PORT --clients C --requests-per-client R
                     [--max-tokens 128] [--model NAME] [--label L] [--warmup N] [--seed S]
Prints one JSON line with the figures (and per-request token counts summarised).
"""
import argparse
import asyncio
import json
import sys
import time
import urllib.parse

# Topics for the prompts: request i gets topic i mod len, prefixed with its own number so that
# no two prompts share a prefix beyond BOS. All prompts are one paragraph of similar length.
TOPICS = [
    "a lighthouse keeper who finds a message in a bottle",
    "how bread rises and why the oven temperature matters",
    "the water cycle, explained for a curious child",
    "a chess match between two old friends in a park",
    "the history of the bicycle and its first riders",
    "a small robot learning to paint landscapes",
    "why the sky changes colour at sunset",
    "a fisherman's first day on a new boat",
]
PROMPT = ("Note {n}. The following is a long, detailed and carefully written article about {topic}. "
          "It covers the background, the main events, the people involved and what happened afterwards, "
          "in plain language and in several paragraphs.\n\n")


def prompt_for(n: int) -> str:
    return PROMPT.format(n=n, topic=TOPICS[n % len(TOPICS)])


class Result:
    __slots__ = ("sent", "client", "index", "ttft", "gaps", "tokens", "frames", "error", "status", "prompt_tokens", "usage_seen")

    def __init__(self):
        self.sent = None
        self.client = None
        self.index = None
        self.ttft = None
        self.gaps = []
        self.tokens = 0
        self.frames = 0
        self.error = None
        self.status = None
        self.prompt_tokens = None
        self.usage_seen = False


async def read_body_chunks(reader, headers):
    """Yields the body's bytes as they arrive (chunked or until close / content-length)."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            line = await reader.readline()
            if not line:
                return
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    elif "content-length" in headers:
        yield await reader.readexactly(int(headers["content-length"]))
    else:
        while True:
            data = await reader.read(65536)
            if not data:
                return
            yield data


async def one_request(host, port, path, body: bytes, result: Result):
    reader, writer = await asyncio.open_connection(host, port)
    try:
        request = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                   f"Accept: text/event-stream\r\nAuthorization: Bearer bench\r\nConnection: close\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        start = time.perf_counter()
        writer.write(request)
        await writer.drain()
        status_line = await reader.readline()
        result.status = int(status_line.split()[1])
        headers = {}
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        buffer = b""
        last = None
        usage_tokens = None
        async for data in read_body_chunks(reader, headers):
            now = time.perf_counter()
            buffer += data
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    line = line.strip()
                    if not line.startswith(b"data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == b"[DONE]":
                        continue
                    try:
                        obj = json.loads(payload)
                    except ValueError:
                        continue
                    if "error" in obj and not obj.get("choices"):
                        result.error = str(obj["error"])[:200]
                        continue
                    if obj.get("usage") and obj["usage"].get("completion_tokens") is not None:
                        usage_tokens = obj["usage"]["completion_tokens"]
                        result.prompt_tokens = obj["usage"].get("prompt_tokens")
                        result.usage_seen = True
                    choices = obj.get("choices") or []
                    text = choices[0].get("text") if choices else None
                    if text is None and choices:
                        text = (choices[0].get("delta") or {}).get("content")
                    if text:
                        result.frames += 1
                        if result.ttft is None:
                            result.ttft = now - start
                        else:
                            result.gaps.append(now - last)
                        last = now
        if result.status != 200 and result.error is None:
            result.error = f"HTTP {result.status}: {buffer[:200]!r}"
        result.tokens = usage_tokens if usage_tokens is not None else result.frames
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except Exception:  # noqa: BLE001
            pass


def request_body(args, n):
    body = {"prompt": prompt_for(n), "max_tokens": args.max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, "ignore_eos": True}
    if args.model:
        body["model"] = args.model
    return json.dumps(body).encode()


async def run(args):
    url = urllib.parse.urlparse(args.url)
    host, port = url.hostname, url.port or 80
    path = (url.path.rstrip("/") or "") + "/v1/completions"
    # Warm-up requests (not counted): numbered past every measured request.
    for w in range(args.warmup):
        r = Result()
        await one_request(host, port, path, request_body(args, 100000 + args.seed + w), r)
        if r.error:
            raise SystemExit(f"warm-up request failed: {r.error}")
    results = []

    async def client(index):
        for k in range(args.requests_per_client):
            n = args.seed + index * args.requests_per_client + k
            r = Result()
            r.client, r.index, r.sent = index, k, time.perf_counter() - t0
            try:
                await one_request(host, port, path, request_body(args, n), r)
            except Exception as error:  # noqa: BLE001 - counted and reported
                r.error = f"{type(error).__name__}: {error}"[:200]
            results.append(r)

    t0 = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(args.clients)))
    wall = time.perf_counter() - t0
    ok = [r for r in results if r.error is None and r.ttft is not None]
    ttfts = sorted(r.ttft for r in ok)
    gaps = sorted(g for r in ok for g in r.gaps)
    tokens = [r.tokens for r in ok]

    def pct(values, q):
        if not values:
            return None
        # nearest-rank percentile
        rank = max(1, min(len(values), int(-(-q * len(values) // 1))))
        return values[rank - 1]

    def ms(x):
        return None if x is None else round(x * 1000, 1)

    errors = [r.error for r in results if r.error is not None]
    if args.dump:
        with open(args.dump, "w") as f:
            for r in sorted(results, key=lambda r: r.sent):
                f.write(json.dumps({"client": r.client, "index": r.index, "sent_s": round(r.sent, 4),
                                    "ttft_ms": ms(r.ttft), "tokens": r.tokens, "max_gap_ms": ms(max(r.gaps, default=None)),
                                    "error": r.error}) + "\n")
    return {
        "label": args.label, "clients": args.clients, "requests": len(results), "completed": len(ok),
        "errors": len(errors), "first_error": errors[0] if errors else None,
        "wall_s": round(wall, 2), "completion_tokens": sum(tokens),
        "tokens_per_request_min": min(tokens) if tokens else None,
        "tokens_per_request_max": max(tokens) if tokens else None,
        "frames": sum(r.frames for r in ok),
        "tokens_from_usage": all(r.usage_seen for r in ok),
        "prompt_tokens_min": min((r.prompt_tokens for r in ok if r.prompt_tokens is not None), default=None),
        "prompt_tokens_max": max((r.prompt_tokens for r in ok if r.prompt_tokens is not None), default=None),
        "tokens_per_s": round(sum(tokens) / wall, 1) if wall > 0 else None,
        "requests_per_s": round(len(ok) / wall, 3) if wall > 0 else None,
        "ttft_p50_ms": ms(pct(ttfts, 0.50)), "ttft_p99_ms": ms(pct(ttfts, 0.99)),
        "itl_p50_ms": ms(pct(gaps, 0.50)), "itl_p99_ms": ms(pct(gaps, 0.99)),
        "ttft_samples": len(ttfts), "itl_samples": len(gaps),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--clients", type=int, required=True)
    p.add_argument("--requests-per-client", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--model", default=None)
    p.add_argument("--label", default="")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--dump", default=None, help="write one JSON line per request (send time, TTFT, tokens) to this file")
    p.add_argument("--seed", type=int, default=0, help="first prompt number (runs with different seeds use different prompts)")
    args = p.parse_args()
    out = asyncio.run(run(args))
    print(json.dumps(out), flush=True)
    return 0 if out["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
