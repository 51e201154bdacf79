#!/usr/bin/env python3
"""Load through a LiteLLM proxy in front of `hearth serve` replicas; kills one replica midway.

Usage: scale_out_litellm.py PROXY_URL PROXY_KEY MODEL VICTIM_PID [REQUESTS] [CLIENTS]
Every request that starts after the kill must succeed (LiteLLM routes it to a live replica);
requests in flight on the killed replica may fail once and are retried by LiteLLM.
"""
import os
import signal
import sys
import threading
import time

import openai

PROXY, KEY, MODEL, VICTIM = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
TOTAL = int(sys.argv[5]) if len(sys.argv) > 5 else 60
CLIENTS = int(sys.argv[6]) if len(sys.argv) > 6 else 8

lock = threading.Lock()
next_request = [0]
killed_at = [None]
results = []  # (started, finished, ok, detail)


def worker():
    client = openai.OpenAI(base_url=PROXY + "/v1", api_key=KEY, max_retries=0, timeout=300)
    while True:
        with lock:
            if next_request[0] >= TOTAL:
                return
            n = next_request[0]
            next_request[0] += 1
            if n == TOTAL // 3 and killed_at[0] is None:
                os.kill(VICTIM, signal.SIGKILL)
                killed_at[0] = time.time()
                print(f"killed replica pid {VICTIM} before request {n}", flush=True)
        started = time.time()
        try:
            reply = client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": f"Say a number near {n}."}], max_tokens=24,
                temperature=0.7, seed=n)
            ok = bool(reply.choices) and reply.choices[0].finish_reason in ("stop", "length")
            detail = reply.choices[0].finish_reason
        except Exception as error:  # noqa: BLE001 - reported below
            ok, detail = False, f"{type(error).__name__}: {str(error)[:120]}"
        with lock:
            results.append((started, time.time(), ok, detail))


t0 = time.time()
threads = [threading.Thread(target=worker) for _ in range(CLIENTS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.time() - t0
kill_time = killed_at[0] or float("inf")
after = [r for r in results if r[0] > kill_time + 0.5]
around = [r for r in results if r[0] <= kill_time + 0.5]
print(f"{len(results)} requests in {elapsed:.1f}s with {CLIENTS} clients: "
      f"{sum(r[2] for r in results)} ok; started after the kill: {len(after)}, ok {sum(r[2] for r in after)}; "
      f"before or around it: {len(around)}, ok {sum(r[2] for r in around)}", flush=True)
for r in results:
    if not r[2]:
        print("  failed:", r[3], flush=True)
passed = len(results) == TOTAL and killed_at[0] is not None and after and all(r[2] for r in after)
print("scale-out check passed" if passed else "scale-out check FAILED")
sys.exit(0 if passed else 1)
