#ifndef HEARTH_CPU_H
#define HEARTH_CPU_H

/// CPU features Hearth's kernel levels need, as bits of `hearth_cpu_features()`. A bit is set
/// only when the CPU has the instructions AND the operating system saves the registers they
/// use (XCR0), so a set bit means the instructions can run.
/// x86-64: AVX, AVX2, FMA, F16C, BMI1, BMI2, LZCNT, MOVBE, POPCNT (what -target-cpu haswell may emit).
#define HEARTH_CPU_AVX2_LEVEL 1u
/// x86-64: the above and AVX-512 F, CD, BW, DQ, VL (-target-cpu skylake-avx512).
#define HEARTH_CPU_AVX512_LEVEL 2u
/// x86-64: AVX-512 VNNI (with the above: -target-cpu cascadelake).
#define HEARTH_CPU_AVX512VNNI 4u
/// x86-64: AMX tiles with 8-bit dot products (AMX-TILE, AMX-INT8; Intel Sapphire Rapids and
/// later), the tile state enabled by the OS, and on Linux the process's permission to use it
/// granted (arch_prctl ARCH_REQ_XCOMP_PERM, asked for by `hearth_cpu_features()`).
#define HEARTH_CPU_AMX 8u
/// arm64: the dot-product extension (SDOT/UDOT).
#define HEARTH_CPU_ARM_DOTPROD 256u

/// The feature bits of the CPU this process runs on (0 on CPUs Hearth has no level for).
unsigned hearth_cpu_features(void);

/// The CPU's brand string (x86 CPUID leaves 0x80000002–4), or "" when unknown; `out` gets at
/// most `size` bytes, NUL-terminated.
void hearth_cpu_name(char *out, unsigned size);

/// Asks the CPU to bring the cache lines of [p, p + bytes) towards L1 (a hint, never a fault:
/// the kernels prefetch the weights a few KiB ahead of the ones they multiply). Baseline
/// instruction (prefetcht0 on x86-64, prfm on arm64).
static inline void hearth_prefetch(const void *p, long bytes) {
    const char *c = (const char *)p;
    for (long i = 0; i < bytes; i += 64) __builtin_prefetch(c + i, 0, 3);
}

/// Hands memory the C heap holds free back to the operating system (glibc's malloc_trim:
/// glibc keeps freed blocks for reuse, counted in the process's resident memory). Nothing on
/// other C libraries, which return or reuse freed memory themselves.
void hearth_release_free_heap(void);

/// Page-aligned scratch memory straight from the operating system (anonymous mmap; malloc on
/// Windows), returned to it by `hearth_unmap_scratch` — for kernels' per-call scratch of a MiB
/// or more, which the C heap would keep resident in each worker thread's arena after freeing.
/// NULL when the system has no memory to give.
void *hearth_map_scratch(unsigned long bytes);
void hearth_unmap_scratch(void *p, unsigned long bytes);

#endif
