#!/usr/bin/env python3
"""The KL-divergence statistics of `hearth perplexity --kl-divergence-base`, computed directly
with numpy from two files written by `hearth perplexity --save-logits` — the independent check
the tests compare Hearth's own numbers with (Tests/HearthCLITests/KLDivergenceTests.swift).

    python3 scripts/kld_numpy.py BASE.hlog CURRENT.hlog     # prints one JSON object

BASE may keep any top K; CURRENT must keep the whole distribution (--logits-top-k equal to the
vocabulary size), so that q is known for every id. Per position, with P the base's top K and
rest mass and Q the current distribution:

    KL = sum_{i in topK(P)} p_i (log p_i - log q_i) + p_rest (log p_rest - log q_rest)

where q_rest = 1 - sum_{i in topK(P)} q_i, rounded to float32 like the stored p_rest; with K
equal to the vocabulary there is no rest term. File layout: docs/ACCURACY.md.
"""
import json
import struct
import sys

import numpy as np

MAGIC = b"HRTHLG01"


def checksum_of(data):
    """Hearth's file checksum: FNV-1a over 64-bit little-endian words, then the tail bytes,
    then xor the length (snapshotChecksum in Sources/HearthEngine/Generator+Snapshot.swift)."""
    h, mask, prime = 0xCBF29CE484222325, 0xFFFFFFFFFFFFFFFF, 0x100000001B3
    words = len(data) // 8
    for w in np.frombuffer(data, dtype="<u8", count=words).tolist():
        h = ((h ^ w) * prime) & mask
    for b in data[8 * words:]:
        h = ((h ^ b) * prime) & mask
    return h ^ len(data)


def read(path):
    raw = open(path, "rb").read()
    if raw[:8] != MAGIC:
        raise SystemExit(f"{path}: not a Hearth logits file")
    version, hlen = struct.unpack_from("<II", raw, 8)
    if version != 1:
        raise SystemExit(f"{path}: format version {version}")
    header = json.loads(raw[16:16 + hlen])
    off = 16 + hlen
    ntok = header["chunks"] * header["ctx"]
    tokens = np.frombuffer(raw, dtype="<u4", count=ntok, offset=off)
    off += 4 * ntok
    k = header["top_k"]
    npos = header["chunks"] * (header["ctx"] - 1 - header["first"])
    rec = np.dtype([("next", "<f4"), ("rest", "<f4"), ("entries", [("id", "<u4"), ("lp", "<f4")], (k,))])
    records = np.frombuffer(raw, dtype=rec, count=npos, offset=off)
    off += rec.itemsize * npos
    (checksum,) = struct.unpack_from("<Q", raw, off)
    if off + 8 != len(raw):
        raise SystemExit(f"{path}: size does not match its header")
    if checksum != checksum_of(raw[:off]):
        raise SystemExit(f"{path}: checksum mismatch")
    return header, tokens, records


def main():
    bh, btok, base = read(sys.argv[1])
    ch, ctok, cur = read(sys.argv[2])
    if ch["top_k"] != ch["vocab_size"]:
        raise SystemExit("the current file must keep the whole distribution (--logits-top-k = vocabulary size)")
    if not np.array_equal(btok, ctok) or len(base) != len(cur):
        raise SystemExit("the two runs are over different texts")
    # Current log-probabilities by id (the whole distribution is stored in id order).
    q_all = np.zeros((len(cur), ch["vocab_size"]), dtype=np.float64)
    rows = np.arange(len(cur))[:, None]
    q_all[rows, cur["entries"]["id"].astype(np.int64)] = cur["entries"]["lp"].astype(np.float64)

    ids = base["entries"]["id"].astype(np.int64)
    lp = base["entries"]["lp"].astype(np.float64)
    lq = q_all[rows, ids]
    kl = (np.exp(lp) * (lp - lq)).sum(axis=1)
    p_rest = base["rest"].astype(np.float64)
    q_rest = np.maximum(1 - np.exp(lq).sum(axis=1), 1e-30).astype(np.float32).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rest_term = np.where(p_rest > 0, p_rest * (np.log(p_rest) - np.log(q_rest)), 0.0)
    kl = kl + rest_term

    base_top = ids[np.arange(len(base)), lp.argmax(axis=1)]
    cur_top = q_all.argmax(axis=1)
    same = base_top == cur_top
    two = -np.sort(-base["entries"]["lp"], axis=1)[:, :2]  # float32, as Hearth subtracts them
    clear = (two[:, 0] - two[:, 1]) >= np.float32(0.1) if lp.shape[1] >= 2 else np.zeros(len(base), bool)

    b_next = base["next"].astype(np.float64)
    c_next = cur["next"].astype(np.float64)
    ppl, base_ppl = float(np.exp(-c_next.mean())), float(np.exp(-b_next.mean()))
    print(json.dumps({
        "positions": int(len(base)),
        "mean_kld": float(kl.mean()), "median_kld": float(np.median(kl)),
        "p99_kld": float(np.percentile(kl, 99)), "max_kld": float(kl.max()),
        "same_top": float(same.mean()),
        "same_top_clear": float(same[clear].mean()) if clear.any() else 0.0, "clear_positions": int(clear.sum()),
        "base_perplexity": base_ppl, "perplexity": ppl, "delta_perplexity": ppl / base_ppl - 1,
        "mean_abs_delta_logprob": float(np.abs(c_next - b_next).mean()),
        "max_abs_delta_logprob": float(np.abs(c_next - b_next).max()),
    }, sort_keys=True))


if __name__ == "__main__":
    main()
