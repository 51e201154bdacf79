"""GGUF files: converted and quantized by llama.cpp's own tools, checked, and their tensor statistics."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .common import BENCH_PY, LOGS, REPO, WORK, log
from .models import GGUF_TYPES
from .checkpoints import ensure_checkpoint


# ---------------------------------------------------------------------------
# llama.cpp: convert (vendored convert_hf_to_gguf.py) and quantize
# ---------------------------------------------------------------------------

def llama_src_dir() -> Path:
    import llama_cpp

    d = WORK / "src" / f"llama_cpp_python-{llama_cpp.__version__}" / "vendor" / "llama.cpp"
    if not (d / "convert_hf_to_gguf.py").is_file():
        raise SystemExit(f"{d}/convert_hf_to_gguf.py missing: run benchmarks/run.sh (it unpacks the sdist)")
    return d


def ensure_ggufs(models: list[dict], keep_f16: bool, timings: dict) -> None:
    """Make the GGUF of every selected entry that has a source checkpoint and
    no file yet: one F16 GGUF by llama.cpp's convert_hf_to_gguf.py per
    checkpoint, kept while every missing type is quantized from it with
    llama_model_quantize (default parameters), then deleted unless keep_f16.
    Every file made is checked (check_gguf) before it gets its final name."""
    by_source: dict[str, list[dict]] = {}
    for m in models:
        if "source" in m and not (REPO / m["gguf"]).is_file():
            by_source.setdefault(m["source"]["checkpoint"], []).append(m)
    for group in by_source.values():
        source = group[0]["source"]
        ckpt = ensure_checkpoint(source)
        f16 = WORK / source["gguf_f16"]
        if not f16.is_file():
            src = llama_src_dir()
            tmp = f16.with_suffix(".partial.gguf")
            cmd = [sys.executable, str(src / "convert_hf_to_gguf.py"), str(ckpt), "--outtype", "f16",
                   "--outfile", str(tmp)]
            log(f"converting to F16 GGUF with llama.cpp's convert_hf_to_gguf.py (log: {LOGS / 'convert.log'})")
            t0 = time.time()
            with open(LOGS / "convert.log", "w") as lf:
                rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=src)
            if rc != 0:
                tail = (LOGS / "convert.log").read_text(errors="replace").splitlines()[-30:]
                raise SystemExit("convert_hf_to_gguf.py failed:\n" + "\n".join(tail))
            tmp.rename(f16)
            timings["convert_s"] = timings.get("convert_s", 0.0) + round(time.time() - t0, 1)
            log(f"F16 GGUF written in {time.time() - t0:.0f} s: {f16} ({f16.stat().st_size / 1e9:.2f} GB)")
        for m in group:
            quant = REPO / m["gguf"]
            tmp = quant.with_suffix(".partial.gguf")
            qlog = LOGS / f"quantize-{m['name']}.log"
            log(f"quantizing {f16.name} -> {quant.name} with llama_model_quantize ({m['llama_ftype']}; log: {qlog})")
            t0 = time.time()
            with open(qlog, "w") as lf:
                rc = subprocess.call([sys.executable, str(BENCH_PY), "_quantize", str(f16), str(tmp), m["llama_ftype"]],
                                     stdout=lf, stderr=subprocess.STDOUT)
            if rc != 0:
                tmp.unlink(missing_ok=True)
                tail = qlog.read_text(errors="replace").splitlines()[-30:]
                raise SystemExit("llama_model_quantize failed:\n" + "\n".join(tail))
            problem = check_gguf(m, gguf_stats(tmp))
            if problem:
                raise SystemExit(f"{tmp}: {problem} (file left there for inspection)")
            tmp.rename(quant)
            timings["quantize_s"] = timings.get("quantize_s", 0.0) + round(time.time() - t0, 1)
            log(f"quantized in {time.time() - t0:.0f} s: {quant} ({quant.stat().st_size / 1e9:.2f} GB)")
        if not keep_f16:
            f16.unlink()
            log(f"deleted {f16} (--keep-f16 keeps it)")


def check_gguf(model: dict, st: dict) -> str:
    """'' if the GGUF's tensor types are what llama_model_quantize gives the
    entry's ftype (GGUF_TYPES), else what is wrong."""
    if model.get("llama_ftype") not in GGUF_TYPES:
        return ""
    main, allowed, required = GGUF_TYPES[model["llama_ftype"]]
    by_bytes = st["tensor_bytes_by_type"]
    counts = ", ".join(f"{k} {v}" for k, v in sorted(st["tensor_count_by_type"].items()))
    extra = sorted(set(by_bytes) - allowed)
    if extra:
        return f"unexpected tensor types {extra} for {model['llama_ftype']} (tensors per type: {counts})"
    absent = sorted(required - set(by_bytes))
    if absent:
        return f"no {absent} tensors, expected for {model['llama_ftype']} (tensors per type: {counts})"
    top = max(by_bytes, key=by_bytes.get)
    if top != main:
        return f"most bytes are {top}, expected {main} for {model['llama_ftype']} (tensors per type: {counts})"
    return ""


def child_quantize(inp: str, out: str, ftype_name: str) -> int:
    import ctypes
    import llama_cpp

    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, ftype_name)
    params.nthread = os.cpu_count() or 1
    rc = llama_cpp.llama_model_quantize(inp.encode(), out.encode(), ctypes.byref(params))
    llama_cpp.llama_backend_free()
    print(f"llama_model_quantize returned {rc}", file=sys.stderr)
    return 0 if rc == 0 else 1


def gguf_stats(path: Path) -> dict:
    """gguf_stats_here(path), computed in a child process: GGUFReader holds a
    large vocabulary as numpy arrays (Gemma's 262144 tokens take ~700 MB), and
    whatever this process's peak RSS reaches, every bench child inherits as the
    floor of its ru_maxrss (see run_measured)."""
    r = subprocess.run([sys.executable, str(BENCH_PY), "_gguf-stats", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"reading {path} with the gguf package failed:\n{r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout)


def gguf_stats_here(path: Path) -> dict:
    from gguf import GGUFReader

    r = GGUFReader(str(path))
    by_type: dict[str, int] = {}
    count_by_type: dict[str, int] = {}
    total = 0
    embd = 0
    n_elements = 0
    names = set()
    for t in r.tensors:
        nb = int(t.n_bytes)
        total += nb
        n_elements += int(t.n_elements)
        by_type[t.tensor_type.name] = by_type.get(t.tensor_type.name, 0) + nb
        count_by_type[t.tensor_type.name] = count_by_type.get(t.tensor_type.name, 0) + 1
        names.add(t.name)
        if t.name == "token_embd.weight":
            embd = nb
    # Without output.weight, llama.cpp (and Hearth) use token_embd as the
    # output matrix: tied, so all of it is read for every token. Untied, a
    # decode step gathers one row of it and streams every other tensor once.
    tied = "output.weight" not in names
    arch = None
    try:
        f = r.fields.get("general.architecture")
        arch = bytes(f.parts[f.data[0]]).decode() if f else None
    except Exception:  # noqa: BLE001
        pass
    return {"file_bytes": path.stat().st_size, "tensor_bytes": total, "token_embd_bytes": embd,
            "tied_embeddings": tied, "weight_bytes_per_token": total - (0 if tied else embd),
            "tensor_elements": n_elements, "tensor_bytes_by_type": by_type, "tensor_count_by_type": count_by_type,
            "n_tensors": len(r.tensors), "architecture": arch}
