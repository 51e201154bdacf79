"""The side-by-side benchmark harness behind benchmarks/run.sh (entry point: benchmarks/bench.py).

- common: paths, constants, logging
- models: the model files benchmarked (MODELS)
- checkpoints: random-weight checkpoints the GGUFs are made from
- ggufs: llama.cpp's conversion and quantization, checks, tensor statistics
- llama_child: the llama.cpp bench child (llama-bench semantics)
- harness: measured children, the Hearth side, membw, machine facts
- report: summaries and the run's tables (benchmarks/results/ggufs.md)
- cli: the command line and the run itself
- page, svgplot: benchmarks/RESULTS.md and its plots from benchmarks/results/*.json (no benchmark)
"""
