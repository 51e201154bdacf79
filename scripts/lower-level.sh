# Sourced by scripts/test-variants.sh and scripts/test-without-system-libraries.sh: the kernel
# levels this CPU runs (from the release binary: `hearth inspect` prints the best one) and the
# one lower level CI forces — avx2 (the other family of kernels) below an AVX-512 best, portable
# below an avx2 best, none on a CPU that runs only the portable kernels.
levels_supported() {
  local best
  best=$(.build/release/hearth inspect 2>/dev/null | sed -n 's/.*best on this CPU: \([a-z0-9-]*\).*/\1/p')
  case "$best" in
    amx) echo portable avx2 avx512 avx512-vnni amx ;;
    avx512-vnni) echo portable avx2 avx512 avx512-vnni ;;
    avx512) echo portable avx2 avx512 ;;
    avx2) echo portable avx2 ;;
    *) echo portable ;;
  esac
}
lower_level() {
  local all best
  all=$(levels_supported)
  best=${all##* }
  case "$best" in avx512*|amx) echo avx2 ;; avx2) echo portable ;; *) echo "" ;; esac
}
