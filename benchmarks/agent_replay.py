#!/usr/bin/env python3
"""Agent replay: a recorded coding-agent session, replayed as requests against `hearth serve` and
llama.cpp's `llama-server` (issue 56, item 3). Stdlib only.

The session (made here from a fixed seed, the same for every server of one run, and written to
--session-out so it can be inspected) is a prompt-format agent's: the tools are described in the
system prompt and called in the assistant's text (<tool_call>…</tool_call>), results come back in
a user turn (<tool_result>…</tool_result>) — the way agents drive models without a native tool
format (Gemma 3) — so both servers render exactly the same prompt through the model's own chat
template (the request's `tools` field would be rendered differently by each server):
  - a system prompt of ~2k tokens: agent instructions plus eight tools (JSON schemas);
  - turn 1: the task with the context a coding agent attaches to its first message (project
    notes, git status, an open file), ~3.5k tokens, so the prompt starts near 5.5k tokens;
  - turns 2..30: the recorded assistant reply of the previous turn (a tool call) and its tool
    result (every 7th turn a user follow-up instead), each turn adding 2-3.6 % of the prompt, so
    the conversation grows past 12k tokens by turn 30;
  - every 5 main turns (after turns 5, 10, 15, 20, 25) a sub-agent step: two sub-agents run at
    once (as a coding agent's parallel Task calls), each a conversation of its own with a shared
    ~1.2k-token sub-agent system prompt, two requests each (the task; then one tool round).
    Three live conversations against --parallel 2: the sub-agents take both slots, so the main
    conversation's next turn finds its prefix only in a prompt cache.
The assistant messages in the history are the recorded ones, not what the server answers
(temperature 0, --max-tokens per request), exactly as a client replays a transcript.

Per request: TTFT (request sent -> first streamed frame with content, a tool call or reasoning),
prompt tokens and cached prompt tokens as the server reports them (`usage.prompt_tokens_details.
cached_tokens`; llama-server's `timings.cache_n` when usage lacks it), total time. Per run: the
summed TTFT, wall time, the server's peak RSS (VmHWM).

Runs (--runs, comma-separated):
  hearth-off      hearth serve --cache-ram 0 (live slots only)
  hearth          hearth serve --cache-ram MiB --cache-dir DIR (a fresh directory), then the
                  server is stopped and started again on the same directory and the session's
                  last main turn is sent as the first request of the new process (`restart`
                  rows: its cached share came from disk)
  llama-fa-off    llama-server -np P -c P*ctx --cache-ram MiB --cache-reuse 256 -fa off (a GGUF
                  without a chat template, as the default Gemma file, needs --llama-args
                  "--chat-template-file benchmarks/data/gemma3-chat.jinja": llama-server
                  would fall back to ChatML)
  llama-fa-on     the same with -fa on
Each server is started fresh for its run.

Usage:
  benchmarks/agent_replay.py --model models/gemma-3-270m-q4_k_m.gguf \
      [--hearth .build/release/hearth] [--llama-server /work/llama-build/build/bin/llama-server] \
      [--runs hearth-off,hearth,llama-fa-off,llama-fa-on] [--parallel 2] [--ctx 16384] \
      [--threads 2] [--cache-ram 4096] [--max-tokens 24] [--turns 30] [--json OUT]
Prints a per-turn table and the summary with the Done-when ratios of issue 56; --json writes all
figures.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------------
# The session
# ---------------------------------------------------------------------------------------------

WORDS = ("the a of to and in is it for that this with on as be are we by an not or from at "
         "function module request response cache server client token prompt slot block chain "
         "value key error test build file path line change commit branch review parse buffer "
         "stream event handler route model layer batch thread lock queue worker config option "
         "default limit bound check result status field schema type struct class method call "
         "return index count length offset size bytes memory disk read write open close start "
         "stop retry timeout signal process output input format encode decode json text code "
         "should must when then because before after while until every each only also still "
         "first last next previous other same new old small large fast slow clear simple").split()
IDENTS = ("cache slot block chain prefix token prompt request reply usage stream writer reader "
          "handler router model layer batch queue worker config state entry table index").split()


def prose(rng: random.Random, chars: int) -> str:
    out, n = [], 0
    while n < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18)))
        sentence = sentence[0].upper() + sentence[1:] + "."
        out.append(sentence)
        n += len(sentence) + 1
    return " ".join(out)


def code(rng: random.Random, chars: int) -> str:
    lines, n, depth = [], 0, 0
    while n < chars:
        a, b, c = (rng.choice(IDENTS) for _ in range(3))
        kind = rng.randint(0, 5)
        if kind == 0 or depth == 0:
            line, depth = f"func {a}{b.capitalize()}(_ {c}: Int) -> Int {{", 1
        elif kind == 1:
            line = "    " * depth + f"let {a} = {b}.{c}(at: {rng.randint(0, 4096)})"
        elif kind == 2:
            line = "    " * depth + f"if {a}.count > {rng.randint(1, 512)} {{ return {b}.{c} }}"
        elif kind == 3:
            line = "    " * depth + f"// {prose(rng, 40)[:60]}"
        elif kind == 4:
            line = "    " * depth + f"{a}.{b}({c}: {c}, limit: {rng.randint(1, 64)})"
        else:
            line, depth = "}", 0
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)


TOOL_NAMES = ["read_file", "write_file", "edit_file", "list_directory", "search_code", "run_command",
              "run_tests", "web_fetch"]


def make_tools(rng: random.Random, cpt: float) -> list:
    tools = []
    for name in TOOL_NAMES:
        tools.append({"type": "function", "function": {
            "name": name,
            "description": prose(rng, int(70 * cpt)),
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string", "description": prose(rng, int(12 * cpt))},
                "content": {"type": "string", "description": prose(rng, int(8 * cpt))},
                "limit": {"type": "integer", "description": "At most this many lines."},
            }, "required": ["path"]}}})
    return tools


def tool_call(name: str, args: str) -> dict:
    """A recorded assistant turn that calls a tool, as a prompt-format agent writes it."""
    return {"role": "assistant", "content": f'<tool_call>{{"name": "{name}", "arguments": {args}}}</tool_call>'}


def tool_result(k: int, text: str) -> dict:
    return {"role": "user", "content": f'<tool_result id="{k}">\n{text}\n</tool_result>'}


def tools_text(tools: list) -> str:
    return ("\n\n# Tools\nCall a tool by writing <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>; "
            "its result comes back in <tool_result>.\n" + "\n".join(json.dumps(t["function"]) for t in tools))


def make_session(seed: int, cpt: float, turns: int, sub_every: int, target_end: int) -> dict:
    """The recorded session. `cpt` is characters per token for the model's tokenizer (measured
    with the server's /tokenize), so sizes come out in tokens."""
    rng = random.Random(seed)
    tok = lambda n: int(n * cpt)  # noqa: E731 - tokens -> characters
    system = ("You are a coding agent working in a Swift repository. " + prose(rng, tok(1300)))
    tools = make_tools(rng, cpt)
    sub_system = ("You are a sub-agent: do the one task you are given and report back. "
                  + prose(rng, tok(900)))
    first = ("<context>\n# Project notes\n" + prose(rng, tok(1200)) + "\n# git status\n"
             + "\n".join(f" M Sources/{rng.choice(IDENTS).capitalize()}/{rng.choice(IDENTS)}.swift"
                         for _ in range(30))
             + "\n# Open file\n" + code(rng, tok(1900)) + "\n</context>\n\nTask: " + prose(rng, tok(120)))
    # Turn k (2..turns) adds a recorded tool call and its result; growth g per turn on average,
    # each turn between 0.7 g and 1.2 g of the prompt so far (estimated in tokens).
    start = 2000 + 3500 + 60
    growth = (target_end / start) ** (1.0 / max(1, turns - 1)) - 1.0
    main = [{"turn": 1, "add": [{"role": "user", "content": first}]}]
    size = start
    for k in range(2, turns + 1):
        share = growth * rng.uniform(0.7, 1.2)
        add_tokens = max(40, int(size * share))
        if k % 7 == 0:
            add = [{"role": "assistant", "content": prose(rng, tok(30))},
                   {"role": "user", "content": prose(rng, tok(max(20, add_tokens - 45)))}]
        else:
            name = TOOL_NAMES[k % len(TOOL_NAMES)]
            args = json.dumps({"path": f"Sources/{rng.choice(IDENTS).capitalize()}/{rng.choice(IDENTS)}.swift",
                               "limit": rng.randint(20, 400)})
            result = code(rng, tok(max(20, add_tokens - 50))) if k % 2 else prose(rng, tok(max(20, add_tokens - 50)))
            add = [tool_call(name, args), tool_result(k, result)]
        main.append({"turn": k, "add": add})
        size += add_tokens
    subs = []
    for after in range(sub_every, turns, sub_every):
        pair = []
        for j in range(2):
            task = f"Sub-task {after}.{j}: " + prose(rng, tok(300))
            result = code(rng, tok(400))
            pair.append({"after": after, "name": f"sub{after}.{j}", "requests": [
                [{"role": "user", "content": task}],
                [tool_call("search_code", json.dumps({"path": "Sources"})), tool_result(1, result)]]})
        subs.append(pair)
    system += tools_text(tools)
    sub_system += tools_text(tools)
    return {"seed": seed, "chars_per_token": cpt, "system": system, "sub_system": sub_system,
            "tools": tools, "main": main, "subs": subs}


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------

def post_json(port: int, path: str, body: dict, timeout: float = 600) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    if resp.status != 200:
        raise RuntimeError(f"{path}: HTTP {resp.status}: {data[:300]!r}")
    return json.loads(data)


def chat(port: int, model: str, messages: list, tools: list, max_tokens: int, label: dict) -> dict:
    """One streaming chat request; the figures of one row."""
    body = {"model": model, "messages": messages, "temperature": 0,
            "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}}
    row = dict(label)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    t0 = time.monotonic()
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        row["error"] = f"HTTP {resp.status}: {resp.read()[:300]!r}"
        conn.close()
        return row
    ttft = None
    usage, timings = None, None
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            break
        try:
            frame = json.loads(payload)
        except ValueError:
            continue
        if frame.get("usage"):
            usage = frame["usage"]
        if frame.get("timings"):
            timings = frame["timings"]
        for choice in frame.get("choices") or []:
            delta = choice.get("delta") or {}
            if ttft is None and (delta.get("content") or delta.get("tool_calls") or delta.get("reasoning_content")
                                 or choice.get("finish_reason")):
                ttft = time.monotonic() - t0
    total = time.monotonic() - t0
    conn.close()
    row["ttft"] = ttft if ttft is not None else total
    row["total"] = total
    if usage:
        row["prompt"] = usage.get("prompt_tokens")
        row["completion"] = usage.get("completion_tokens")
        details = usage.get("prompt_tokens_details") or {}
        if details.get("cached_tokens") is not None:
            row["cached"] = details["cached_tokens"]
    if timings:
        row.setdefault("cached", timings.get("cache_n"))
        if row.get("prompt") is None and timings.get("prompt_n") is not None:
            row["prompt"] = timings.get("prompt_n", 0) + timings.get("cache_n", 0)
    return row


# ---------------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, argv: list, log: Path, port: int):
        self.argv, self.port, self.log = argv, port, log
        self.fh = open(log, "ab")
        self.fh.write(("\n$ " + " ".join(argv) + "\n").encode())
        self.fh.flush()
        self.proc = subprocess.Popen(argv, stdout=self.fh, stderr=subprocess.STDOUT)
        self.started = time.monotonic()

    def wait_ready(self, timeout: float = 900) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}); see {self.log}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/health")
                r = conn.getresponse()
                r.read()
                conn.close()
                if r.status == 200:
                    return time.monotonic() - self.started
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"server not ready in {timeout} s; see {self.log}")

    def peak_rss_mb(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def metrics(self) -> str:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            text = r.read().decode("utf-8", "replace")
            conn.close()
            return text if r.status == 200 else ""
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=300)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.fh.close()


def metric_sum(text: str, name: str) -> float | None:
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            try:
                total += float(line.rsplit(None, 1)[1])
                seen = True
            except (ValueError, IndexError):
                pass
    return total if seen else None


# ---------------------------------------------------------------------------------------------
# Replay
# ---------------------------------------------------------------------------------------------

def main_messages(session: dict, upto: int) -> list:
    msgs = [{"role": "system", "content": session["system"]}]
    for t in session["main"][:upto]:
        msgs.extend(t["add"])
    return msgs


def replay(port: int, model: str, session: dict, max_tokens: int, sub_every: int, log=print) -> list:
    rows = []
    subs = {pair[0]["after"]: pair for pair in session["subs"]}
    for i, turn in enumerate(session["main"]):
        row = chat(port, model, main_messages(session, i + 1), session["tools"], max_tokens,
                   {"conv": "main", "turn": turn["turn"]})
        rows.append(row)
        log(fmt_row(row))
        pair = subs.get(turn["turn"])
        if not pair:
            continue
        out: list = [[], []]

        def run_sub(j: int) -> None:
            sub = pair[j]
            msgs = [{"role": "system", "content": session["sub_system"]}]
            for r, add in enumerate(sub["requests"]):
                msgs = msgs + add
                out[j].append(chat(port, model, msgs, session["tools"], max_tokens,
                                   {"conv": sub["name"], "turn": f"{turn['turn']}.{r + 1}"}))
        threads = [threading.Thread(target=run_sub, args=(j,)) for j in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for j in range(2):
            for row in out[j]:
                rows.append(row)
                log(fmt_row(row))
    return rows


def fmt_row(row: dict) -> str:
    if row.get("error"):
        return f"  {row['conv']:>8} {row['turn']!s:>5}  ERROR {row['error']}"
    p, c = row.get("prompt"), row.get("cached")
    share = f"{c / p:.3f}" if p and c is not None else "-"
    return (f"  {row['conv']:>8} {row['turn']!s:>5}  prompt {p!s:>6}  cached {c!s:>6}  share {share:>5}  "
            f"ttft {row['ttft']:7.3f} s  total {row['total']:7.3f} s")


def summarize(rows: list) -> dict:
    ok = [r for r in rows if not r.get("error")]
    main = [r for r in ok if r["conv"] == "main"]
    later = [r for r in main if r["turn"] >= 2]
    shares = [(r["turn"], (r.get("cached") or 0) / r["prompt"]) for r in later if r.get("prompt")]
    return {
        "requests": len(rows), "errors": len(rows) - len(ok),
        "ttft_sum": sum(r["ttft"] for r in ok),
        "ttft_sum_main": sum(r["ttft"] for r in main),
        "total_sum": sum(r["total"] for r in ok),
        "main_min_share_from_turn2": min((s for _, s in shares), default=None),
        "main_turns_below_095": [t for t, s in shares if s < 0.95],
        "final_main_prompt": main[-1].get("prompt") if main else None,
    }


def markdown(results: dict) -> str:
    """The run's tables for RESULTS.md: per run, then the main conversation turn by turn."""
    r = results["runs"]
    out = ["| run | summed TTFT | main | sub-agents | main turns 2–30 | min main share (turn ≥ 2) | wall | peak RSS |",
           "|---|---|---|---|---|---|---|---|"]
    for k, e in r.items():
        s = e["summary"]
        main = [x for x in e["rows"] if x["conv"] == "main"]
        share = s["main_min_share_from_turn2"]
        out.append(f"| {k} | {s['ttft_sum']:.2f} s | {s['ttft_sum_main']:.2f} s | {s['ttft_sum'] - s['ttft_sum_main']:.2f} s | "
                   f"{s['ttft_sum_main'] - main[0]['ttft']:.2f} s | {share:.3f} | {e['wall']:.1f} s | {e['peak_rss_mb']:.0f} MB |"
                   if share is not None else f"| {k} | {s['ttft_sum']:.2f} s | … |")
    out += ["", "| main turn | " + " | ".join(f"{k} prompt / share / TTFT" for k in r) + " |",
            "|---|" + "---|" * len(r)]
    turns = max(len([x for x in e["rows"] if x["conv"] == "main"]) for e in r.values())
    for t in range(1, turns + 1):
        cells = []
        for e in r.values():
            row = next((x for x in e["rows"] if x["conv"] == "main" and x["turn"] == t), None)
            if not row or row.get("error") or not row.get("prompt"):
                cells.append("–")
            else:
                cells.append(f"{row['prompt']} / {(row.get('cached') or 0) / row['prompt']:.3f} / {row['ttft']:.2f} s")
        out.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def hearth_argv(a, port: int, cache_ram: int, cache_dir: str | None) -> list:
    argv = [a.hearth, "serve", "--model", a.model, "--host", "127.0.0.1", "--port", str(port),
            "--parallel", str(a.parallel), "--ctx", str(a.ctx), "--threads", str(a.threads),
            "--cache-ram", str(cache_ram)]
    if cache_dir:
        argv += ["--cache-dir", cache_dir]
    return argv + a.hearth_args.split()


def llama_argv(a, port: int, fa: str) -> list:
    return [a.llama_server, "-m", a.model, "--host", "127.0.0.1", "--port", str(port),
            "-t", str(a.threads), "-tb", str(a.threads), "-np", str(a.parallel), "-c", str(a.parallel * a.ctx),
            "--cont-batching", "-fa", fa, "--cache-ram", str(a.cache_ram), "--cache-reuse", "256",
            "--no-webui"] + a.llama_args.split()


def served_model(port: int) -> str:
    """The id of the model the server serves (the first of /v1/models)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/v1/models")
    r = conn.getresponse()
    data = json.loads(r.read())
    conn.close()
    return (data.get("data") or [{}])[0].get("id", "")


def calibrate(port: int, model: str) -> float:
    rng = random.Random(7)
    sample = prose(rng, 6000) + "\n" + code(rng, 6000)
    tokens = post_json(port, "/tokenize", {"content": sample} | ({"model": model} if model else {}))["tokens"]
    return len(sample) / max(1, len(tokens))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(REPO / "models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--hearth", default=str(REPO / ".build/release/hearth"))
    ap.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER", "/work/llama-build/build/bin/llama-server"))
    ap.add_argument("--runs", default="hearth-off,hearth,llama-fa-off,llama-fa-on")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=16384, help="context per slot")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache-ram", type=int, default=4096, help="MiB, both servers")
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--sub-every", type=int, default=5)
    ap.add_argument("--target-end", type=int, default=13000, help="tokens of the main prompt at the last turn (estimate)")
    ap.add_argument("--seed", type=int, default=56)
    ap.add_argument("--chars-per-token", type=float, default=0.0, help="skip the /tokenize calibration")
    ap.add_argument("--hearth-args", default="", help="extra hearth serve flags")
    ap.add_argument("--llama-args", default="", help="extra llama-server flags (e.g. --swa-full)")
    ap.add_argument("--logs", default=str(REPO / "benchmarks/work/agent-replay-logs"))
    ap.add_argument("--json", default="")
    ap.add_argument("--session-out", default="")
    ap.add_argument("--report", default="", help="print the markdown tables of a --json file and exit")
    a = ap.parse_args()
    if a.report:
        print(markdown(json.loads(Path(a.report).read_text())))
        return 0
    a.model = str(Path(a.model).resolve())
    runs = [r for r in a.runs.split(",") if r]
    for r in runs:
        if r not in ("hearth-off", "hearth", "llama-fa-off", "llama-fa-on"):
            ap.error(f"unknown run {r}")
    logs = Path(a.logs)
    logs.mkdir(parents=True, exist_ok=True)
    stem = Path(a.model).stem
    model_name = ""  # both servers serve the one model they were started with
    results: dict = {"model": a.model, "host": f"{os.uname().nodename} {os.uname().machine}, {os.cpu_count()} cores",
                     "args": vars(a), "runs": {}}
    session = None
    for run in runs:
        port = free_port()
        log_file = logs / f"{stem}-{run}.log"
        disk = None
        if run.startswith("hearth"):
            if run == "hearth":
                disk = tempfile.mkdtemp(prefix="agent-replay-cache-", dir=str(logs))
            server = Server(hearth_argv(a, port, 0 if run == "hearth-off" else a.cache_ram, disk), log_file, port)
        else:
            server = Server(llama_argv(a, port, run.split("-")[-1]), log_file, port)
        try:
            load = server.wait_ready()
            if session is None:
                model_name = served_model(port)
                cpt = a.chars_per_token or calibrate(port, model_name)
                session = make_session(a.seed, cpt, a.turns, a.sub_every, a.target_end)
                results["chars_per_token"] = cpt
                if a.session_out:
                    Path(a.session_out).write_text(json.dumps(session, indent=1))
            model_name = served_model(port)
            print(f"== {run} (ready in {load:.1f} s): {' '.join(server.argv)}", flush=True)
            t0 = time.monotonic()
            rows = replay(port, model_name, session, a.max_tokens, a.sub_every)
            wall = time.monotonic() - t0
            entry = {"argv": server.argv, "rows": rows, "wall": wall, "summary": summarize(rows),
                     "peak_rss_mb": server.peak_rss_mb()}
            m = server.metrics()
            if m:
                entry["metrics"] = {k: metric_sum(m, k) for k in (
                    "hearth_prompt_cache_bytes", "hearth_prompt_cache_budget_bytes", "hearth_prompt_cache_hits_total",
                    "hearth_prompt_cache_misses_total", "hearth_prompt_cache_evictions_total",
                    "hearth_prompt_cache_disk_writes_total", "hearth_kv_cache_bytes")}
        finally:
            server.stop()
        if run == "hearth" and disk:
            # The restart: a new process on the same --cache-dir; the session's last main turn first.
            port = free_port()
            again = Server(hearth_argv(a, port, a.cache_ram, disk), log_file, port)
            try:
                again.wait_ready()
                model_name = served_model(port)
                last = session["main"][-1]["turn"]
                row = chat(port, model_name, main_messages(session, last), session["tools"], a.max_tokens,
                           {"conv": "main", "turn": last, "restart": True})
                print("  restart:" + fmt_row(row), flush=True)
                m = again.metrics()
                entry["restart"] = {"row": row, "disk_reads": metric_sum(m, "hearth_prompt_cache_disk_reads_total"),
                                    "disk_rejected": metric_sum(m, "hearth_prompt_cache_disk_rejected_total"),
                                    "peak_rss_mb": again.peak_rss_mb()}
            finally:
                again.stop()
            shutil.rmtree(disk, ignore_errors=True)
        s = entry["summary"]
        print(f"   summed TTFT {s['ttft_sum']:.2f} s (main {s['ttft_sum_main']:.2f} s), wall {wall:.1f} s, "
              f"min main share from turn 2 {s['main_min_share_from_turn2']}, below 0.95: {s['main_turns_below_095']}, "
              f"peak RSS {entry['peak_rss_mb']} MB", flush=True)
        results["runs"][run] = entry
        if a.json:
            Path(a.json).write_text(json.dumps(results, indent=1))
    # Ratios
    r = results["runs"]
    print("\n== summary")
    best_llama = min((r[k]["summary"]["ttft_sum"], k) for k in r if k.startswith("llama")) if any(
        k.startswith("llama") for k in r) else None
    for k, e in r.items():
        s = e["summary"]
        line = f"{k:>13}: summed TTFT {s['ttft_sum']:8.2f} s, wall {e['wall']:7.1f} s, peak RSS {e['peak_rss_mb']} MB"
        if "hearth-off" in r and k == "hearth":
            line += f", ÷ cache off {s['ttft_sum'] / r['hearth-off']['summary']['ttft_sum']:.3f}"
        if best_llama and k == "hearth":
            line += f", ÷ llama-server best ({best_llama[1]}) {s['ttft_sum'] / best_llama[0]:.3f}"
        print(line)
    if "hearth" in r and "restart" in r["hearth"]:
        row = r["hearth"]["restart"]["row"]
        if row.get("prompt"):
            print(f"      restart: first turn cached {row.get('cached')}/{row['prompt']} = "
                  f"{(row.get('cached') or 0) / row['prompt']:.3f}, TTFT {row['ttft']:.3f} s")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
