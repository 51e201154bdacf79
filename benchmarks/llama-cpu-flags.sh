# Sourced by benchmarks/run.sh and benchmarks/build-llama-server.sh: the extra compiler flags
# llama.cpp is built with on this CPU.
#
# llama.cpp's AMX matmul (ggml-cpu/amx, compiled in by -march=native on CPUs with amx_int8) died
# with SIGILL (a tileloadd in ggml_backend_amx_mul_mat, in an OpenMP worker) in its first prompt
# on a Sapphire Rapids KVM guest (2026-11-27), though AMX itself runs there (a C probe loading a
# tile config and running tdpbssd on 4 threads, with sleeps and CPU migrations, was fine). So on
# such CPUs the anchor is built without AMX (-mno-amx-*: its AVX-512 VNNI kernels and
# CPU_REPACK, the strongest llama.cpp that runs); LLAMA_AMX=on builds it with AMX. Hearth uses
# no AMX either.
llama_cpu_flags() {
  if [ "${LLAMA_AMX:-off}" != on ] && grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
    echo "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  fi
}
