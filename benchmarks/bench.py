#!/usr/bin/env python3
"""Side-by-side CPU benchmark: Hearth against llama.cpp (llama-cpp-python).

Run through benchmarks/run.sh, which creates benchmarks/.venv first. This
script does the real work:

  1. makes a random-weight Phi-3-mini-shaped checkpoint (HF layout, F16
     safetensors shards, SentencePiece tokenizer) in benchmarks/work/, once;
  2. converts it with llama.cpp's own convert_hf_to_gguf.py to one F16 GGUF
     and quantizes that with llama.cpp's quantizer (llama_model_quantize) to
     Q4_0, Q4_K_M, Q5_K_M, Q6_K and Q8_0, each once, checking every file's
     tensor types; Gemma 3 270M Q4_K_M comes as is from models/;
  3. quantizes the checkpoint with `hearth quantize` to a q4_0 .hqf file, once;
  4. measures streaming-read bandwidth with membw.c;
  5. model file by model file, alternates llama.cpp and Hearth benches on the
     same GGUF (pp512 / tg128, llama-bench semantics), each bench in its own
     process so its peak RSS is its own;
  6. writes benchmarks/RESULTS.md (one table per model file, with each tg
     row's decode bandwidth as a share of membw's figure) and
     benchmarks/work/last-run.json.

--models restricts all of this to some entries of MODELS.
Internal subcommands (run in child processes): `_llama-bench`, `_quantize`,
`_gguf-stats`.
"""
# The harness is the package benchmarks/hearthbench (harness, engines, reports); this file is its
# entry point, which the bench children also run with an internal subcommand.
from hearthbench.cli import run

if __name__ == "__main__":
    run()
