#!/usr/bin/env python3
"""Paired time to first token of two running `hearth serve` processes (e.g. two builds).

Both servers are started beforehand on the same model and threads (an idle server uses no CPU);
requests alternate between them (ABBA order), one at a time, each with a prompt of its own (a
number at the start of the system prompt, so no prefix is reused from an earlier request and
each one prefills its whole prompt). TTFT is the time to the first SSE chunk that carries
non-empty `content`. Prints each side's median and quartiles and the ratio of medians.

    hearth-A serve --model M --port 18081 --alias m --threads 2 &
    hearth-B serve --model M --port 18082 --alias m --threads 2 &
    python3 benchmarks/ttft_pair.py --a 18081 --b 18082 --requests 40
"""
import argparse
import http.client
import json
import statistics
import time


def prompt(i):
    return json.dumps({
        "model": "m", "max_tokens": 4, "temperature": 0, "stream": True,
        "messages": [
            {"role": "system", "content": f"Session {i * 7919 % 100003}. You are a helpful assistant. Answer briefly and precisely."},
            {"role": "user", "content": "Explain in two sentences why the sky is blue, please, for a child of seven."},
        ],
    })


def ttft(port, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
    reply = connection.getresponse()
    first = None
    for line in reply:
        if first is None and line.startswith(b"data: ") and b'"content":"' in line and b'"content":""' not in line:
            first = time.perf_counter() - started
    connection.close()
    return first


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", type=int, default=18081, help="port of the first server (A)")
    parser.add_argument("--b", type=int, default=18082, help="port of the second server (B)")
    parser.add_argument("--requests", type=int, default=40, help="requests to each server (the first two of each are warm-up)")
    args = parser.parse_args()
    times = {"A": [], "B": []}
    ports = {"A": args.a, "B": args.b}
    for i in range(args.requests):
        for side in (["A", "B"] if i % 2 == 0 else ["B", "A"]):
            first = ttft(ports[side], prompt(2 * i + (side == "B")))
            if i >= 2 and first is not None:
                times[side].append(first * 1000)
    for side, values in times.items():
        q1, _, q3 = statistics.quantiles(values, n=4)
        print(f"{side} (port {ports[side]}): n {len(values)}, median TTFT {statistics.median(values):.1f} ms, quartiles {q1:.1f}–{q3:.1f} ms")
    print(f"B/A median: {statistics.median(times['B']) / statistics.median(times['A']):.3f}")


if __name__ == "__main__":
    main()
