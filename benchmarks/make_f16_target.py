#!/usr/bin/env python3
"""Writes a 16-bit copy of a quantized GGUF: every quantized tensor dequantized to F16 (F32
tensors stay F32), every metadata key copied, `general.file_type` set to MOSTLY_F16.

Why: the draft-model benchmark needs a target model and a smaller draft with the same
tokenizer, and this machine has one real model (Gemma 3 270M Q4_K_M, no network). Its 16-bit
copy is a target whose decode step reads about twice the bytes of the 4-bit file, which then
drafts for it (`benchmarks/speculative.py --draft-model`): "the model at 16 bits, its 4-bit
quantization drafting". The copy computes the same function as the 4-bit file up to the
rounding of F16 storage and of the activations, so the draft agrees with it far more often than
a smaller model of a family agrees with a larger one: the acceptance rates measured with this
pair are an upper end, the cost side (a draft step against a verification step) is real.

Uses the `gguf` package's reader, dequantizer and writer (pip install gguf numpy).

Usage: benchmarks/make_f16_target.py IN.gguf OUT.gguf
"""
import sys

import numpy as np

import gguf
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter


def copy_metadata(reader, writer):
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        main = field.types[0]
        if field.name == "general.file_type":
            writer.add_key_value(field.name, int(gguf.LlamaFileType.MOSTLY_F16), GGUFValueType.UINT32)
            continue
        if main == GGUFValueType.ARRAY:
            writer.add_key_value(field.name, field.contents(), main, sub_type=field.types[-1])
        else:
            writer.add_key_value(field.name, field.contents(), main)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    reader = GGUFReader(sys.argv[1])
    arch = reader.fields["general.architecture"].contents()
    writer = GGUFWriter(sys.argv[2], arch)
    copy_metadata(reader, writer)
    for tensor in reader.tensors:
        shape = [int(d) for d in reversed(tensor.shape)]  # GGUF lists dimensions innermost first
        if tensor.tensor_type in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
            data = np.asarray(tensor.data)
            raw = tensor.tensor_type
        else:
            data = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float16)
            raw = GGMLQuantizationType.F16
        writer.add_tensor(tensor.name, data.reshape(shape), raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
