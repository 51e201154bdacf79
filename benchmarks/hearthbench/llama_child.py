"""The llama.cpp bench child: llama-bench semantics through llama-cpp-python's low-level API, in its own process."""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path


# ---------------------------------------------------------------------------
# llama.cpp bench child: llama-bench semantics through the low-level API
# ---------------------------------------------------------------------------

def proc_status_bytes(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def mean_sd(samples: list[float]) -> tuple[float, float]:
    if not samples:
        return float("nan"), float("nan")
    m = statistics.fmean(samples)
    return m, (statistics.stdev(samples) if len(samples) > 1 else 0.0)


def child_llama_bench(a: argparse.Namespace) -> int:
    rss_start = proc_status_bytes("VmRSS")
    import llama_cpp as L

    rss_after_import = proc_status_bytes("VmRSS")
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    mp.load_mode = L.LLAMA_LOAD_MODE_MMAP

    t_load = time.perf_counter()
    model = L.llama_model_load_from_file(a.model.encode(), mp)
    if not model:
        print("failed to load model", file=sys.stderr)
        return 1
    cp = L.llama_context_default_params()
    cp.n_ctx = a.prompt + a.gen
    cp.n_batch = a.batch
    cp.n_ubatch = a.batch
    cp.n_threads = a.threads
    cp.n_threads_batch = a.threads
    cp.no_perf = True
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        print("failed to create context", file=sys.stderr)
        return 1
    load_seconds = time.perf_counter() - t_load
    rss_after_load = proc_status_bytes("VmRSS")

    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    add_bos = bool(L.llama_vocab_get_add_bos(vocab))
    bos = L.llama_vocab_bos(vocab)
    mem = L.llama_get_memory(ctx)
    rng = random.Random(1234)
    TokArr = L.llama_token * max(a.batch, 1)

    def decode(arr, n: int) -> None:
        rc = L.llama_decode(ctx, L.llama_batch_get_one(arr, n))
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    # Like llama-bench's test_prompt: batches of n_batch random ids (BOS first
    # if the vocab adds one), then synchronize.
    def test_prompt(n_prompt: int) -> None:
        done = 0
        while done < n_prompt:
            n = min(n_prompt - done, a.batch)
            arr = TokArr()
            for k in range(n):
                arr[k] = rng.randrange(n_vocab)
            if done == 0 and add_bos:
                arr[0] = bos
            decode(arr, n)
            done += n
        L.llama_synchronize(ctx)

    # Like llama-bench's test_gen: n single-token decodes, each synchronized.
    def test_gen(n_gen: int) -> None:
        tok = (L.llama_token * 1)()
        tok[0] = bos if add_bos else rng.randrange(n_vocab)
        for _ in range(n_gen):
            decode(tok, 1)
            L.llama_synchronize(ctx)
            tok[0] = rng.randrange(n_vocab)

    def clear() -> None:
        L.llama_memory_clear(mem, False)

    result: dict = {}
    for test, n, fn in (("pp", a.prompt, test_prompt), ("tg", a.gen, test_gen)):
        if n <= 0:
            continue
        clear()
        # Warm-up as llama-bench does: the whole prompt for pp, one token for tg.
        fn(n if test == "pp" else 1)
        samples = []
        for _ in range(a.reps):
            clear()
            t0 = time.perf_counter_ns()
            fn(n)
            dt = (time.perf_counter_ns() - t0) / 1e9
            samples.append(n / dt)
        m, sd = mean_sd(samples)
        result[test] = {"tokens_per_second": m, "stddev": sd, "samples": samples, "tokens": n}

    try:
        sysinfo = L.llama_print_system_info().decode(errors="replace").strip()
    except Exception:  # noqa: BLE001
        sysinfo = None
    result.update({
        "engine": "llama.cpp",
        "llama_cpp_python": L.__version__,
        "system_info": sysinfo,
        "threads": a.threads,
        "n_ctx": L.llama_n_ctx(ctx),
        "n_batch": a.batch,
        "n_ubatch": a.batch,
        "load_mode": "mmap",
        "flash_attn": "auto",
        "load_seconds": load_seconds,
        "n_params": int(L.llama_model_n_params(model)),
        "model_size_bytes": int(L.llama_model_size(model)),
        "rss_start_bytes": rss_start,
        "rss_after_import_bytes": rss_after_import,
        "rss_after_load_bytes": rss_after_load,
        "peak_rss_bytes": proc_status_bytes("VmHWM"),
    })
    L.llama_free(ctx)
    L.llama_model_free(model)
    print(json.dumps(result))
    return 0
