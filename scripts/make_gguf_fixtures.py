#!/usr/bin/env python3
"""Writes the GGUF reader and block-dequantizer fixtures under Tests/Fixtures/gguf/.

Run by hand, once, with the reference virtualenv (gguf and numpy, see
scripts/requirements-reference.txt):

    /opt/hearth-ref/bin/python scripts/make_gguf_fixtures.py

Outputs (committed):

  types.gguf      one tensor per tensor type Hearth reads (F32, F16, BF16, Q4_0, Q4_1,
                  Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), a 1-D and a 3-D F32
                  tensor, and metadata of every GGUF value type including nested arrays
                  and tokenizer-style arrays. Default alignment (32).
  types.json      for every tensor: ggml type id, numpy shape (outermost first), GGUF dims
                  (innermost first) and the values gguf.quants.dequantize gives for the
                  tensor's bytes as read back by gguf.GGUFReader, flattened row-major.
                  Values are float32 numbers written as exact decimals.
  aligned64.gguf  two small tensors with general.alignment = 64.

Types the gguf package can quantize (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) are
quantized from the F32 tensor's values by gguf.quants.quantize; the K-quants, which it
can only dequantize, get random block bytes whose f16 scales (d, dmin) are overwritten
with finite values of sane magnitude.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T
from gguf import GGUFValueType as V

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Tests", "Fixtures", "gguf")
SEED = 20240604

QUANTIZABLE = [T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]
# K-quant block byte offsets of the f16 fields (d, and dmin where present), from the
# block layouts in ggml-common.h.
K_QUANT_HALVES = {
    T.Q2_K: [80, 82],
    T.Q3_K: [108],
    T.Q4_K: [0, 2],
    T.Q5_K: [0, 2],
    T.Q6_K: [208],
}


def random_k_blocks(rng: np.random.Generator, qtype: T, rows: int, cols: int) -> np.ndarray:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = rows * cols // block_size
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for offset in K_QUANT_HALVES[qtype]:
        magnitude = rng.uniform(1e-4, 0.1, size=n_blocks)
        sign = np.where(rng.random(n_blocks) < 0.2, -1.0, 1.0) if offset == K_QUANT_HALVES[qtype][0] else 1.0
        halves = (magnitude * sign).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
        blocks[:, offset:offset + 2] = halves
    return blocks.reshape(rows, cols // block_size * type_size)


def add_metadata(w: gguf.GGUFWriter) -> None:
    w.add_name("hearth-gguf-fixture")
    w.add_key_value("test.uint8", 200, V.UINT8)
    w.add_key_value("test.int8", -100, V.INT8)
    w.add_key_value("test.uint16", 60000, V.UINT16)
    w.add_key_value("test.int16", -30000, V.INT16)
    w.add_key_value("test.uint32", 4_000_000_000, V.UINT32)
    w.add_key_value("test.int32", -2_000_000_000, V.INT32)
    w.add_key_value("test.float32", 0.1, V.FLOAT32)
    w.add_key_value("test.bool", True, V.BOOL)
    w.add_key_value("test.string", "h\u00e9llo, \u4e16\u754c \U0001f30d", V.STRING)
    w.add_key_value("test.uint64", 2**63 + 5, V.UINT64)
    w.add_key_value("test.int64", -(2**62), V.INT64)
    w.add_key_value("test.float64", 2.718281828459045, V.FLOAT64)
    w.add_key_value("test.array.uint8", [1, 2, 255], V.ARRAY, V.UINT8)
    w.add_key_value("test.array.int16", [-1, 300], V.ARRAY, V.INT16)
    w.add_key_value("test.array.uint64", [0, 2**64 - 1], V.ARRAY, V.UINT64)
    w.add_key_value("test.array.float64", [0.5, -1.25], V.ARRAY, V.FLOAT64)
    w.add_key_value("test.array.bool", [True, False, True], V.ARRAY, V.BOOL)
    w.add_key_value("test.array.string", ["a", "", "\u00fc\u00f1\u00ee"], V.ARRAY, V.STRING)
    w.add_key_value("test.array.nested", [[1, 2], [3]], V.ARRAY, V.ARRAY)  # inner INT32
    w.add_key_value("test.array.nested_strings", [["x", "y"], ["z"]], V.ARRAY, V.ARRAY)
    w.add_key_value("test.array.nested_twice", [[[7]], [[8, 9]]], V.ARRAY, V.ARRAY)
    # Tokenizer-shaped arrays, as llama.cpp's converters write them.
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>", "\u2581hello", "<0x0A>"])
    w.add_token_scores([0.0, 0.0, 0.0, -1.5, -2.25])
    w.add_token_types([2, 3, 3, 1, 6])
    w.add_token_merges(["\u2581 h", "e l"])


def write_types(rng: np.random.Generator) -> dict:
    path = os.path.join(OUT, "types.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    add_metadata(w)

    # The F32 source matrix the quantizable types are made from (2 rows × 256).
    source = (rng.standard_normal((2, 256)) * 0.05).astype(np.float32)
    w.add_tensor("f32", source)
    for qtype in QUANTIZABLE:
        data = gguf.quants.quantize(source, qtype)
        w.add_tensor(qtype.name.lower(), data, raw_dtype=qtype)
    for qtype in K_QUANT_HALVES:
        blocks = random_k_blocks(rng, qtype, 4, 256)
        w.add_tensor(qtype.name.lower(), blocks, raw_dtype=qtype)
    w.add_tensor("norm.1d", rng.standard_normal(64).astype(np.float32))
    w.add_tensor("shape.3d", rng.standard_normal((2, 3, 32)).astype(np.float32))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return describe(path)


def write_aligned64(rng: np.random.Generator) -> None:
    path = os.path.join(OUT, "aligned64.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_custom_alignment(64)
    w.add_tensor("a", rng.standard_normal(3).astype(np.float32))
    source = rng.standard_normal((1, 32)).astype(np.float32)
    w.add_tensor("b", gguf.quants.quantize(source, T.Q8_0), raw_dtype=T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def describe(path: str) -> dict:
    """Reads the file back with the reference reader and dequantizes every tensor."""
    reader = gguf.GGUFReader(path)
    tensors = {}
    for t in reader.tensors:
        dims = [int(d) for d in t.shape]  # GGUF order: innermost first
        values = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32).ravel()
        assert np.all(np.isfinite(values)), t.name
        tensors[t.name] = {
            "ggml_type": int(t.tensor_type),
            "type_name": t.tensor_type.name,
            "dims": dims,
            "shape": list(reversed(dims)),
            "offset": int(t.data_offset),
            "values": [float(v) for v in values],
        }
    return {
        "generator": f"scripts/make_gguf_fixtures.py with gguf {gguf_version()} and numpy {np.__version__}",
        "alignment": reader.alignment,
        "tensors": tensors,
    }


def to_json_lines(reference: dict) -> str:
    """JSON with one tensor per line, so diffs of a regenerated fixture stay readable."""
    compact = {"separators": (",", ":"), "sort_keys": True}
    lines = ["{"]
    lines.append(f' "generator": {json.dumps(reference["generator"])},')
    lines.append(f' "alignment": {reference["alignment"]},')
    lines.append(' "tensors": {')
    names = sorted(reference["tensors"])
    for i, name in enumerate(names):
        comma = "," if i + 1 < len(names) else ""
        lines.append(f"  {json.dumps(name)}: {json.dumps(reference['tensors'][name], **compact)}{comma}")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def gguf_version() -> str:
    try:
        from importlib.metadata import version

        return version("gguf")
    except Exception:  # pragma: no cover
        return "unknown"


def main() -> int:
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(SEED)
    reference = write_types(rng)
    write_aligned64(rng)
    with open(os.path.join(OUT, "types.json"), "w") as f:
        f.write(to_json_lines(reference))
    for name in sorted(os.listdir(OUT)):
        print(f"{name}: {os.path.getsize(os.path.join(OUT, name))} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
