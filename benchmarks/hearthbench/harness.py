"""Running measured children (peak RSS, foreign CPU load, retries), the Hearth side, membw, machine facts."""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .common import BENCH_PY, HERE, LOGS, REPACK_CACHE, REPO, WORK, log


# ---------------------------------------------------------------------------
# Running measured children
# ---------------------------------------------------------------------------

def cpu_busy_seconds() -> float:
    """CPU time (all cores) the machine spent busy since boot, from /proc/stat."""
    try:
        f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return float("nan")
    v = [int(x) for x in f]
    idle = v[3] + (v[4] if len(v) > 4 else 0)          # idle + iowait
    busy = sum(v[:8]) - idle                             # user..steal, without guest (already in user)
    return busy / os.sysconf("SC_CLK_TCK")


def busy_cores(seconds: float = 2.0) -> float:
    b0, t0 = cpu_busy_seconds(), time.time()
    time.sleep(seconds)
    return (cpu_busy_seconds() - b0) / (time.time() - t0)


IDLE_WAIT = {"seconds": 0.0}


def wait_for_idle(max_wait: float, threshold: float = 0.25, quiet_for: float = 20.0) -> float:
    """Wait (up to max_wait s) until other processes have used < threshold
    cores for quiet_for seconds in a row; return the last measured load."""
    start = time.time()
    deadline = start + max_wait
    quiet_since = None
    warned = False
    load = 0.0
    while True:
        load = busy_cores()
        now = time.time()
        if load < threshold:
            quiet_since = quiet_since or now - 2.0
            if now - quiet_since >= quiet_for:
                break
        else:
            quiet_since = None
            if not warned:
                log(f"  machine busy ({load:.2f} cores used by other processes); waiting up to {max_wait:.0f} s "
                    f"for {quiet_for:.0f} s of quiet")
                warned = True
        if now >= deadline:
            log(f"  still busy ({load:.2f} cores); measuring anyway (flagged in the results)")
            break
    IDLE_WAIT["seconds"] += time.time() - start
    return load


def run_measured(cmd: list[str], log_path: Path, timeout: float, env: dict[str, str] | None = None) -> dict:
    """Run cmd; return its stdout, exit status, wall time and the peak RSS of
    that one child (wait4's ru_maxrss), with stderr going to log_path.

    Linux carries a process's RSS high-water mark across exec, and Python
    starts children with vfork, so a child's ru_maxrss is at least this
    process's own peak RSS: the harness keeps its own small (gguf_stats runs
    in a child) and records its peak next to each child's, so that a child
    whose figure does not exceed it is flagged."""
    import resource

    with tempfile.TemporaryFile() as out, open(log_path, "w") as err:
        extra = {k: v for k, v in (env or {}).items() if os.environ.get(k) != v}
        err.write("$ " + "".join(f"{k}={v} " for k, v in sorted(extra.items())) + " ".join(cmd) + "\n")
        err.flush()
        t0 = time.time()
        busy0 = cpu_busy_seconds()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=REPO, start_new_session=True, env=env)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.time() - t0
        # CPU the rest of the machine used meanwhile: all busy time minus the child's own.
        foreign = (cpu_busy_seconds() - busy0) - (ru.ru_utime + ru.ru_stime)
        out.seek(0)
        stdout = out.read().decode(errors="replace")
    return {"returncode": p.returncode, "stdout": stdout, "wall_seconds": wall,
            "maxrss_bytes": ru.ru_maxrss * 1024, "timed_out": timed_out.is_set(), "log": str(log_path),
            "harness_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "child_cpu_seconds": ru.ru_utime + ru.ru_stime, "foreign_load_cores": max(0.0, foreign) / max(wall, 1e-9)}


def last_json_line(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def log_tail(path: str, n: int = 8) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def llama_buffers(log_path: str) -> dict:
    """llama.cpp's own account of its buffers, from its log: 'CPU_Mapped model
    buffer size = 2047.66 MiB', 'CPU_REPACK model buffer size = …', KV cache,
    compute buffer."""
    out: dict[str, float] = {}
    try:
        text = Path(log_path).read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if "buffer size" in line and "MiB" in line:
            left, _, right = line.partition("buffer size")
            name = " ".join(left.split(":", 1)[-1].split())
            try:
                mib = float(right.split("=")[1].split("MiB")[0])
            except (IndexError, ValueError):
                continue
            out[name] = out.get(name, 0.0) + mib
    return out


def bench_llama(gguf: Path, a: argparse.Namespace, tag: str) -> dict:
    cmd = [sys.executable, str(BENCH_PY), "_llama-bench", "--model", str(gguf), "-p", str(a.prompt), "-n", str(a.gen),
           "-r", str(a.reps), "-t", str(a.threads), "-b", str(a.batch)]
    r = run_measured(cmd, LOGS / f"llama-{tag}.log", a.timeout)
    res = last_json_line(r["stdout"]) if r["returncode"] == 0 else None
    if res is not None:
        res["buffers_mib"] = llama_buffers(r["log"])
    entry = {"engine": "llama.cpp", "file": str(gguf.relative_to(REPO)), "ok": res is not None,
             "wall_seconds": r["wall_seconds"], "maxrss_bytes": r["maxrss_bytes"], "log": r["log"],
             "child_cpu_seconds": r["child_cpu_seconds"], "foreign_load_cores": r["foreign_load_cores"],
             "harness_maxrss_bytes": r["harness_maxrss_bytes"], "result": res}
    if res is None:
        entry["error"] = f"exit {r['returncode']}{' (timeout)' if r['timed_out'] else ''}: {log_tail(r['log'])}"
    return entry


def measured(fn, a: argparse.Namespace, what: str) -> dict:
    """Run one bench (fn() -> entry) on a quiet machine: wait for idle first,
    and run it again (up to --retries times) if other processes took more than
    --max-foreign-load cores while it ran. Disturbed attempts are kept."""
    discarded = []
    while True:
        idle = wait_for_idle(a.max_wait_idle)
        e = fn()
        e["load_before_cores"] = idle
        log_entry(e)
        if not e["ok"] or e["foreign_load_cores"] <= a.max_foreign_load or len(discarded) >= a.retries:
            break
        log(f"  other processes used {e['foreign_load_cores']:.2f} cores during {what}: discarding it and running it again")
        discarded.append({k: v for k, v in e.items()})
    e["discarded_attempts"] = discarded
    return e


# ---------------------------------------------------------------------------
# Hearth
# ---------------------------------------------------------------------------

def find_hearth(explicit: str | None) -> tuple[Path | None, str]:
    if explicit:
        p = Path(explicit)
        return (p, "") if p.is_file() and os.access(p, os.X_OK) else (None, f"HEARTH_BIN={explicit} is not an executable file")
    candidates = [REPO / ".build" / "release" / "hearth"]
    candidates += sorted((REPO / ".build").glob("*/release/hearth"))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c, ""
    if shutil.which("swift"):
        # Only asks SwiftPM where the release binary would be; builds nothing.
        try:
            out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO, text=True,
                                 capture_output=True, timeout=120).stdout.strip()
            c = Path(out) / "hearth"
            if out and c.is_file() and os.access(c, os.X_OK):
                return c, ""
            return None, f"no hearth binary at {c} (build it: swift build -c release --product hearth)"
        except (subprocess.TimeoutExpired, OSError) as e:
            return None, f"swift build --show-bin-path failed: {e}"
    return None, "no hearth binary (.build/release/hearth) and no swift to locate one; set HEARTH_BIN"


def hearth_has(binary: Path, sub: str) -> bool:
    try:
        r = subprocess.run([str(binary), sub, "--help"], capture_output=True, text=True, timeout=60, cwd=REPO)
        return r.returncode == 0
    except (subprocess.TimeoutExpired, OSError):
        return False


def ensure_hqf(binary: Path, model: dict, ckpt: Path, timings: dict) -> tuple[Path | None, str]:
    hqf = WORK / model["hqf"]
    if hqf.is_file():
        return hqf, ""
    if not hearth_has(binary, "quantize"):
        return None, "hearth has no `quantize` subcommand"
    tmp = hqf.with_suffix(".partial.hqf")
    cmd = [str(binary), "quantize", "--model", str(ckpt.relative_to(REPO)), "--output", str(tmp.relative_to(REPO)),
           "--type", model["hearth_type"]]
    log(f"hearth quantize -> {hqf} (log: {LOGS / 'hearth-quantize.log'})")
    t0 = time.time()
    with open(LOGS / "hearth-quantize.log", "w") as lf:
        lf.write("$ " + " ".join(cmd) + "\n")
        lf.flush()
        rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=REPO)
    if rc != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        return None, f"hearth quantize failed (exit {rc}): {log_tail(str(LOGS / 'hearth-quantize.log'), 4)}"
    tmp.rename(hqf)
    timings["hearth_quantize_s"] = round(time.time() - t0, 1)
    log(f"hearth quantize done in {timings['hearth_quantize_s']} s ({hqf.stat().st_size / 1e9:.2f} GB)")
    return hqf, ""


def clear_repack_cache() -> None:
    """Empty the repack cache directory Hearth uses in this run ($HEARTH_REPACK_CACHE_DIR,
    which the harness sets to REPACK_CACHE unless it was set already)."""
    d = Path(os.environ.get("HEARTH_REPACK_CACHE_DIR") or REPACK_CACHE)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True, exist_ok=True)


def hearth_kernel_level(binary: Path) -> str | None:
    """The kernel level a default Hearth run uses here, from Hearth's own report (`hearth --version`
    ends with "kernels LEVEL": the best level this CPU runs, or the one $HEARTH_CPU forces), or None."""
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, cwd=REPO).stdout
    except (subprocess.TimeoutExpired, OSError):
        return None
    m = re.search(r"kernels ([A-Za-z0-9_-]+)", out)
    return m.group(1) if m else None


def bench_hearth(binary: Path, model_file: Path, a: argparse.Namespace, tag: str, bits: str = "16",
                 sizes: tuple[int, int, int] | None = None, level: str | None = None) -> dict:
    """One `hearth bench --json` process. With level, it runs with HEARTH_CPU=level (a second Hearth
    engine: the same file at a lower kernel level); the entry records the level requested
    (`hearth_cpu`) and the one Hearth reports it ran at (`kernel_level`, with `cpu_best_level`)."""
    prompt, gen, reps = sizes or (a.prompt, a.gen, a.reps)
    cmd = [str(binary), "bench", "--model", str(model_file.relative_to(REPO)), "-p", str(prompt), "-n", str(gen),
           "-r", str(reps), "-t", str(a.threads), "--json", "--activation-bits", bits]
    env = dict(os.environ, HEARTH_CPU=level) if level else None
    r = run_measured(cmd, LOGS / f"hearth-{tag}.log", a.timeout, env)
    res = last_json_line(r["stdout"]) if r["returncode"] == 0 else None
    if res is not None and not (isinstance(res.get("pp"), dict) or isinstance(res.get("tg"), dict)):
        res = None
    entry = {"engine": "hearth", "variant": bits, "file": str(model_file.relative_to(REPO)), "ok": res is not None,
             "hearth_cpu": level, "kernel_level": (res or {}).get("kernel_level"),
             "cpu_best_level": (res or {}).get("cpu_best_level"),
             "wall_seconds": r["wall_seconds"], "maxrss_bytes": r["maxrss_bytes"], "log": r["log"],
             "child_cpu_seconds": r["child_cpu_seconds"], "foreign_load_cores": r["foreign_load_cores"],
             "harness_maxrss_bytes": r["harness_maxrss_bytes"], "result": res}
    if res is None:
        # Hearth's own message: the end of its stderr (the log minus the command line), else of its stdout.
        err_lines = [x for x in Path(r["log"]).read_text(errors="replace").splitlines()[1:] if x.strip()]
        msg = "\n".join((err_lines or [x for x in r["stdout"].splitlines() if x.strip()])[-4:])
        with open(r["log"], "a") as lf:
            lf.write("\n--- stdout ---\n" + r["stdout"][-4000:])
        entry["error"] = f"exit {r['returncode']}{' (timeout)' if r['timed_out'] else ''}: {msg}"
    return entry


# ---------------------------------------------------------------------------
# Streaming-read bandwidth (membw.c)
# ---------------------------------------------------------------------------

def run_membw(threads_list: list[int], mib: int, runs: int, max_wait_idle: float = 900,
              max_foreign_load: float = 0.1, retries: int = 3, sweeps: int = 3) -> list[dict]:
    """Every (threads, THP) configuration once per sweep, sweeps interleaved so
    a slow spell of the host hits all configurations alike; best pass over all
    sweeps per configuration. A configuration disturbed by other processes is
    measured again."""
    import resource

    src = HERE / "membw.c"
    exe = WORK / "membw"
    cc = os.environ.get("CC", "cc")
    if not exe.is_file() or exe.stat().st_mtime < src.stat().st_mtime:
        cmd = [cc, "-O3", "-march=native", "-pthread", "-o", str(exe), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            log(f"membw.c did not compile ({' '.join(cmd)}): {r.stderr.strip()[:500]}")
            return []
    configs = [(t, huge) for t in threads_list for huge in (0, 1)]
    results: dict[tuple[int, int], list[dict]] = {c: [] for c in configs}

    def child_cpu() -> float:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    for sweep in range(sweeps):
        wait_for_idle(max_wait_idle)
        for t, huge in configs:
            for attempt in range(retries + 1):
                b0, c0, t0 = cpu_busy_seconds(), child_cpu(), time.time()
                r = subprocess.run([str(exe), "--mib", str(mib), "--threads", str(t), "--hugepage", str(huge),
                                    "--runs", str(runs)], capture_output=True, text=True)
                foreign = (cpu_busy_seconds() - b0) - (child_cpu() - c0)
                foreign_load = max(0.0, foreign) / max(time.time() - t0, 1e-9)
                if r.returncode != 0 or foreign_load <= max_foreign_load or attempt == retries:
                    break
                log(f"  membw disturbed (other processes {foreign_load:.2f} cores); again")
                wait_for_idle(max_wait_idle)
            if r.returncode != 0:
                log(f"membw failed: {r.stderr.strip()[:300]}")
                continue
            d = json.loads(r.stdout)
            d["foreign_load_cores"] = round(foreign_load, 3)
            results[(t, huge)].append(d)
    out = []
    for t, huge in configs:
        ds = results[(t, huge)]
        if not ds:
            continue
        best = max(ds, key=lambda d: d["best_gb_s"])
        merged = dict(best)
        merged["sweeps"] = len(ds)
        merged["sweep_best_gb_s"] = [d["best_gb_s"] for d in ds]
        merged["mean_gb_s"] = statistics.fmean(x for d in ds for x in d["samples_gb_s"])
        merged["foreign_load_cores"] = max(d["foreign_load_cores"] for d in ds)
        out.append(merged)
        log(f"membw {t} thread(s), {'MADV_HUGEPAGE  ' if huge else 'MADV_NOHUGEPAGE'}: best {merged['best_gb_s']:.1f} GB/s "
            f"(per sweep {', '.join(f'{x:.1f}' for x in merged['sweep_best_gb_s'])}; "
            f"huge pages {best['anon_huge_kib'] // 1024} MiB)")
    return out


# ---------------------------------------------------------------------------
# Machine description
# ---------------------------------------------------------------------------

def machine_info() -> dict:
    info: dict = {"cpu": None, "cores": os.cpu_count(), "kernel": platform.release(), "arch": platform.machine()}
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        for line in cpu.splitlines():
            k, _, v = line.partition(":")
            k = k.strip()
            if k == "model name" and not info["cpu"]:
                info["cpu"] = v.strip()
            elif k in ("cpu family", "model", "stepping") and f"cpu_{k.replace(' ', '_')}" not in info:
                info[f"cpu_{k.replace(' ', '_')}"] = v.strip()
            elif k == "flags" and "flags" not in info:
                fl = v.split()
                info["flags"] = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                                             "avx512_bf16", "avx_vnni", "amx_tile") if f in fl]
        info["physical_cores"] = len({(b.split("physical id")[1].split("\n")[0] if "physical id" in b else "",
                                       b.split("core id")[1].split("\n")[0] if "core id" in b else str(i))
                                      for i, b in enumerate(cpu.split("\n\n")) if b.strip()})
    except OSError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["ram_bytes"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("L2 cache", "L3 cache", "Hypervisor vendor"):
                info[k.strip().lower().replace(" ", "_")] = v.strip()
    except OSError:
        pass
    for name in ("enabled", "defrag"):
        try:
            txt = Path(f"/sys/kernel/mm/transparent_hugepage/{name}").read_text()
            info[f"thp_{name}"] = txt.split("[")[1].split("]")[0]
        except (OSError, IndexError):
            pass
    return info


def git_info() -> dict:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""
    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def log_entry(e: dict) -> None:
    if not e["ok"]:
        log(f"  failed: {e.get('error', '')[:400]}")
        return
    r = e["result"]
    parts = [f"{t} {r[t]['tokens_per_second']:.2f} ± {r[t]['stddev']:.2f} t/s" for t in ("pp", "tg")
             if isinstance(r.get(t), dict)]
    if e.get("kernel_level"):
        parts.append(f"kernel level {e['kernel_level']}")
    log(f"  {', '.join(parts)}; peak RSS {e['maxrss_bytes'] / 2**30:.2f} GiB; {e['wall_seconds']:.0f} s; "
        f"other processes {e['foreign_load_cores']:.2f} cores")
