#!/usr/bin/env python3
"""Serving benchmark client: C concurrent streaming /v1/completions clients against an OpenAI-compatible server.

Usage: serve_bench.py BASE_URL MODEL CLIENTS REQUESTS MAX_TOKENS [LABEL]
Prints one JSON line: requests/s, aggregate generated tokens/s, TTFT p50/p99 and inter-token
latency p99 (gaps between streamed content chunks; one chunk per token on both servers).
"""
import json
import sys
import threading
import time

import openai

BASE, MODEL, CLIENTS, REQUESTS, MAX_TOKENS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
LABEL = sys.argv[6] if len(sys.argv) > 6 else BASE
# Raw-text completions (/v1/completions): both servers see the same tokens, with no chat
# template differences (llama-cpp-python's chat handler ends the base model's reply at once).
PROMPTS = ["Here is a short story about a lighthouse keeper.", "This is how bread rises:",
           "Ten uses for a paperclip:", "The water cycle, explained for a child:"]
lock = threading.Lock()
queue = list(range(REQUESTS))
ttfts, gaps, tokens, errors = [], [], [], []


def worker():
    client = openai.OpenAI(base_url=BASE + "/v1", api_key="bench", max_retries=0, timeout=600)
    while True:
        with lock:
            if not queue:
                return
            n = queue.pop()
        start = time.perf_counter()
        last, first, count = None, None, 0
        try:
            stream = client.completions.create(
                model=MODEL, prompt=PROMPTS[n % len(PROMPTS)], max_tokens=MAX_TOKENS, temperature=0.7, seed=n, stream=True)
            local_gaps = []
            for chunk in stream:
                if not chunk.choices or not chunk.choices[0].text:
                    continue
                now = time.perf_counter()
                if first is None:
                    first = now - start
                else:
                    local_gaps.append(now - last)
                last = now
                count += 1
            with lock:
                if first is not None:
                    ttfts.append(first)
                gaps.extend(local_gaps)
                tokens.append(count)
        except Exception as error:  # noqa: BLE001 - counted and reported
            with lock:
                errors.append(f"{type(error).__name__}: {str(error)[:100]}")


def pct(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


t0 = time.perf_counter()
threads = [threading.Thread(target=worker) for _ in range(CLIENTS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
wall = time.perf_counter() - t0
print(json.dumps({
    "server": LABEL, "clients": CLIENTS, "requests": REQUESTS, "completed": len(tokens), "errors": len(errors),
    "requests_per_s": round(len(tokens) / wall, 3), "tokens_per_s": round(sum(tokens) / wall, 1),
    "ttft_p50_ms": round(pct(ttfts, 0.5) * 1000, 1), "ttft_p99_ms": round(pct(ttfts, 0.99) * 1000, 1),
    "itl_p99_ms": round(pct(gaps, 0.99) * 1000, 1), "wall_s": round(wall, 1),
    "first_error": errors[0] if errors else None}), flush=True)
