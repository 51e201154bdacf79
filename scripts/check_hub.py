"""Cross-checks Hearth's hub cache with the official huggingface_hub package (see check-hub.sh).

Run with HF_ENDPOINT pointing at the fake hub and HF_HUB_CACHE at an empty folder.
Arguments: the hearth binary, the fake hub's request log, the folder of the served repositories.
"""
import hashlib
import json
import os
import subprocess
import sys
import time

from huggingface_hub import hf_hub_download, scan_cache_dir, snapshot_download
from huggingface_hub.errors import LocalEntryNotFoundError

hearth, fake_log, repos = sys.argv[1], sys.argv[2], sys.argv[3]
GGUF = "hearth-test/gemma-3-270m-it-GGUF"
GGUF_FILE = "gemma-3-270m-it-Q4_K_M.gguf"
TINY = "hearth-test/gemma3-tiny"
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    if condition:
        results["passed"] += 1
        print(f"PASS {name}")
    else:
        results["failed"] += 1
        print(f"FAIL {name} {detail}")


def run(*args, env=None):
    started = time.time()
    done = subprocess.run([hearth, *args], capture_output=True, text=True, env=env)
    print(f"  hearth {' '.join(args)} -> {done.returncode} ({time.time() - started:.1f}s)")
    return done


def requests():
    """Request lines the fake hub logged so far (it flushes every 100 ms)."""
    time.sleep(0.3)
    with open(fake_log) as f:
        return [line.strip() for line in f.readlines()[1:]]


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


# 1. Hearth pulls a checkpoint; huggingface_hub finds every file in the cache, offline.
pulled = run("pull", TINY, "--json")
check("hearth pull of a safetensors checkpoint", pulled.returncode == 0, pulled.stderr)
info = json.loads(pulled.stdout) if pulled.returncode == 0 else {"files": [], "path": ""}
for name in info["files"]:
    try:
        found = hf_hub_download(TINY, name, local_files_only=True)
        same = found == os.path.join(info["path"], name) and sha256(found) == sha256(os.path.join(repos, "tiny", name))
        check(f"hf_hub_download(local_files_only=True) finds {name} pulled by Hearth", same, found)
    except LocalEntryNotFoundError as error:
        check(f"hf_hub_download(local_files_only=True) finds {name} pulled by Hearth", False, str(error))
try:
    check("snapshot_download(local_files_only=True) is Hearth's snapshot", snapshot_download(TINY, local_files_only=True) == info["path"])
except LocalEntryNotFoundError as error:
    check("snapshot_download(local_files_only=True) is Hearth's snapshot", False, str(error))
report = scan_cache_dir()
tiny = [r for r in report.repos if r.repo_id == TINY]
check("scan_cache_dir reads Hearth's cache without warnings", not report.warnings and len(tiny) == 1, str(report.warnings))
if tiny:
    expected = sum(os.path.getsize(os.path.join(repos, "tiny", n)) for n in info["files"])
    check("scan_cache_dir counts the blobs Hearth wrote", tiny[0].size_on_disk == expected, f"{tiny[0].size_on_disk} != {expected}")
    check("scan_cache_dir sees refs/main", "main" in {ref for rev in tiny[0].revisions for ref in rev.refs})

generated = run("generate", "--model", TINY, "--prompt", "Hello", "--max-tokens", "2", "--temperature", "0", "--raw")
check("hearth generate --model org/repo (a cached checkpoint)", generated.returncode == 0, generated.stderr)

# 2. huggingface_hub downloads a GGUF; Hearth uses it by name with no request to the hub.
path = hf_hub_download(GGUF, GGUF_FILE)
check("huggingface_hub downloads the GGUF through the fake hub", sha256(path) == sha256(os.path.join(repos, "gguf", GGUF_FILE)))
before = len(requests())
generated = run("generate", "--model", f"{GGUF}:Q4_K_M", "--prompt", "The capital of France is", "--max-tokens", "3",
                "--temperature", "0", "--raw")
check("hearth generate --model org/repo:Q4_K_M uses huggingface_hub's download", generated.returncode == 0 and generated.stdout.strip() != "",
      generated.stderr)
after = requests()
check("... without any request to the hub", len(after) == before, str(after[before:]))

pulled = run("pull", f"{GGUF}:Q4_K_M", "--json")
after_pull = requests()
check("hearth pull of a file huggingface_hub fetched downloads nothing",
      pulled.returncode == 0 and not any("/cdn/" in r or "/resolve/" in r for r in after_pull[len(after):]),
      pulled.stderr + str(after_pull[len(after):]))
check("... and reports it cached", "already in the cache" in pulled.stderr, pulled.stderr)

listed = run("list", "--json")
names = {m["name"]: m for m in json.loads(listed.stdout)} if listed.returncode == 0 else {}
check("hearth list shows both, with quant and size", f"{GGUF}:Q4_K_M" in names and TINY in names
      and names[f"{GGUF}:Q4_K_M"]["bytes"] == os.path.getsize(path), listed.stdout)

# 3. Offline: the cache alone.
offline = dict(os.environ, HF_HUB_OFFLINE="1")
before = len(requests())
generated = run("generate", "--model", f"{GGUF}:Q4_K_M", "--prompt", "Hi", "--max-tokens", "2", "--raw", env=offline)
missing = run("pull", "hearth-test/not-cached:Q4_K_M", env=offline)
check("HF_HUB_OFFLINE=1: a cached model runs", generated.returncode == 0, generated.stderr)
check("HF_HUB_OFFLINE=1: a missing model is refused by name", missing.returncode != 0 and "HF_HUB_OFFLINE" in missing.stderr, missing.stderr)
check("HF_HUB_OFFLINE=1: no request to the hub", len(requests()) == before)

# 4. hearth rm: gone for huggingface_hub too.
removed = run("rm", TINY)
check("hearth rm", removed.returncode == 0, removed.stderr)
try:
    hf_hub_download(TINY, "config.json", local_files_only=True)
    check("huggingface_hub no longer finds what hearth rm removed", False)
except LocalEntryNotFoundError:
    check("huggingface_hub no longer finds what hearth rm removed", True)
report = scan_cache_dir()
check("scan_cache_dir after hearth rm: the GGUF stays, the checkpoint is gone",
      {r.repo_id for r in report.repos} == {GGUF} and not report.warnings, str(report.warnings))

print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
