#!/usr/bin/env python3
"""How long `hearth serve` takes to refuse a prompt longer than its context, by body size.

Starts the release binary on the default model (`--ctx 4096` unless told otherwise), then
POSTs /v1/chat/completions bodies from 1 KB to just under the 4 MiB body limit over a real
loopback socket, for four kinds of text:

  dense    "a\\n" repeated: one token per byte (past the context from ~4 KB)
  prose    Tests/Fixtures/corpus.txt repeated: ~3.2 bytes per token, a line break per paragraph
  one-run  the prose with every run of white space made one space: no special token anywhere,
           so the prompt is one SentencePiece run (the tokenizer cuts it into chunks)
  dashes   "————————————————" repeated, the vocabulary's longest piece (48 bytes, one token):
           the most bytes a prompt can carry per token, so the most tokenizing before a refusal

The time is from the body's last byte sent to the status line read (the server's parsing,
template, tokenizing and refusal; the upload itself is excluded; bodies are sized in bytes of
JSON, written without escaping non-ASCII), best of --runs. A body whose
prompt fits is reported as "fits" (it is served with max_tokens 1; its time is not a refusal).

    benchmarks/refusal.py [--hearth .build/release/hearth] [--ctx 4096] [--runs 3]
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 128 << 10, 192 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20,
         (4 << 20) - (4 << 10)]


def texts():
    with open(os.path.join(ROOT, "Tests", "Fixtures", "corpus.txt"), encoding="utf-8") as f:
        prose = f.read()
    return {
        "dense": "a\n",
        "prose": prose,
        "one-run": " ".join(prose.split()) + " ",
        "dashes": "————————————————",
    }


def text_of(unit, size):
    """`unit` repeated to `size` bytes of UTF-8 (JSON-escaped line breaks count double; close enough)."""
    data = (unit * (size // len(unit.encode()) + 1)).encode()[:size]
    return data.decode("utf-8", "ignore")


def make_body(model, unit, size):
    """A chat request of at most `size` bytes whose user message is `unit` repeated."""
    target = size
    while True:
        body = json.dumps({"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": text_of(unit, target)}]},
                          ensure_ascii=False).encode()
        if len(body) <= size:
            return body
        target -= len(body) - size + 16


def request(port, body):
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(head + body)
        sent = time.perf_counter()
        reply = b""
        while b"\r\n" not in reply:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
        elapsed = time.perf_counter() - sent
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0
    code = re.search(rb'"code"\s*:\s*"([a-z_]+)"', reply)
    return status, code.group(1).decode() if code else "", elapsed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hearth", default=os.path.join(ROOT, ".build", "release", "hearth"))
    p.add_argument("--model", default=os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf"))
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--port", type=int, default=18187)
    args = p.parse_args()
    server = subprocess.Popen(
        [args.hearth, "serve", "--model", args.model, "--ctx", str(args.ctx), "--port", str(args.port), "--parallel", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", args.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        while time.time() < deadline:  # the model loads after the socket opens
            with socket.create_connection(("127.0.0.1", args.port)) as s:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    break
            time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", args.port)) as s:
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            reply = b""
            while chunk := s.recv(65536):
                reply += chunk
        model = json.loads(reply.split(b"\r\n\r\n", 1)[1])["data"][0]["id"]
        worst = 0.0
        print(f"refusal time at --ctx {args.ctx} (ms, best of {args.runs}; 'fits' = the prompt fits and is served)")
        kinds = texts()
        print("| body | " + " | ".join(kinds) + " |")
        print("|---:|" + "---:|" * len(kinds))
        for size in SIZES:
            cells = []
            for kind, unit in kinds.items():
                body = make_body(model, unit, size)
                best, outcome = None, ""
                for _ in range(args.runs):
                    status, code, elapsed = request(args.port, body)
                    if status == 400 and code == "context_length_exceeded":
                        best = elapsed if best is None else min(best, elapsed)
                    else:
                        outcome = "fits" if status == 200 else f"{status} {code}"
                        break
                if best is None:
                    cells.append(outcome)
                else:
                    worst = max(worst, best)
                    cells.append(f"{best * 1000:.1f}")
            label = f"{size >> 10} KiB" if size < (1 << 20) else f"{size / (1 << 20):.2f} MiB"
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
        print(f"slowest refusal: {worst * 1000:.1f} ms")
        return 0 if worst < 0.05 else 1
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
