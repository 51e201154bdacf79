#!/usr/bin/env bash
# Checks that no instruction beyond baseline x86-64 leaked out of the kernel-level modules: in the
# release binary, every function that uses a VEX/EVEX-encoded instruction (AVX, AVX2, FMA, F16C,
# AVX-512: mnemonics starting with "v") or a BMI/LZCNT/MOVBE/POPCNT one must belong to
# HearthKernelsAVX2, HearthKernelsAVX512 or HearthKernelsAVX512VNNI — the modules that only run
# after the CPU was checked (docs/KERNELS.md). BoringSSL's assembly (swift-crypto, linked by
# HearthCloud) picks its own code paths at run time from CPUID and is listed apart. (tzcnt is not
# in the list: LLVM emits it for baseline code as `rep bsf`, which older CPUs run as bsf.)
# AMX instructions (tile loads, stores and dot products, ldtilecfg, tilerelease) must appear only
# in the `amx` level's entry points, hearthQuantizedMatMulAMX and hearthSuperBlockMatMulAMX
# (HearthKernelsAVX512VNNI's AMXTiles.swift, AMXSuperBlocks.swift), which run only after CPUID,
# XCR0 and the OS allowed them.
#
#   scripts/check-kernel-isolation.sh [BINARY]     # default .build/release/hearth
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-.build/release/hearth}"
[ "$(uname -m)" = x86_64 ] || { echo "not x86-64: nothing to check"; exit 0; }
rm -f /tmp/hearth-amx-functions.txt
objdump -d --no-show-raw-insn "$bin" | awk '
  /^[0-9a-f]+ <.*>:$/ { fn = $2; next }
  {
    split($0, parts, "\t"); ins = parts[2]; sub(/ .*/, "", ins)
    if (ins ~ /^(ldtilecfg|sttilecfg|tileloadd|tileloaddt1|tilestored|tilezero|tilerelease|tdpb[su][su]d|tdpbf16ps)$/) {
      if (!(fn in amx)) { amx[fn] = 1; print fn > "/tmp/hearth-amx-functions.txt" }
    }
    if (ins ~ /^v/ || ins ~ /^(shlx|shrx|sarx|rorx|andn|bzhi|bextr|blsi|blsr|blsmsk|pdep|pext|lzcnt|movbe|popcnt|mulx|adcx|adox)$/) {
      if (!(fn in seen)) { seen[fn] = 1; print fn }
    }
  }' > /tmp/hearth-wide-functions.txt
levels=$(grep -c 'HearthKernelsAVX' /tmp/hearth-wide-functions.txt || true)
boring=$(grep -ci 'boringssl\|keccak\|aesni\|nistz256\|mulx4x\|bn_\|GFMUL' /tmp/hearth-wide-functions.txt || true)
leaks=$(grep -v 'HearthKernelsAVX' /tmp/hearth-wide-functions.txt | grep -vi 'boringssl\|keccak\|aesni\|nistz256\|mulx4x\|bn_\|GFMUL' || true)
echo "functions with instructions beyond baseline x86-64: $levels in the kernel-level modules, $boring in BoringSSL (run-time dispatched)"
if [ -n "$leaks" ]; then
  echo "LEAKED into code that runs on every CPU:" >&2
  echo "$leaks" | head -40 >&2
  exit 1
fi
echo "none elsewhere"
touch /tmp/hearth-amx-functions.txt
amx_functions=$(wc -l < /tmp/hearth-amx-functions.txt)
amx_leaks=$(grep -v 'hearthQuantizedMatMulAMX\|hearthSuperBlockMatMulAMX' /tmp/hearth-amx-functions.txt || true)
if [ -n "$amx_leaks" ]; then
  echo "AMX instructions outside the amx level's kernel:" >&2
  echo "$amx_leaks" | head -20 >&2
  exit 1
fi
echo "functions with AMX instructions: $amx_functions, all the amx level's kernels"
