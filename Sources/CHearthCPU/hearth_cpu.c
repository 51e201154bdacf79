// Run-time CPU feature detection for Hearth's kernel dispatch (docs/KERNELS.md).
// x86-64: CPUID (leaves 1 and 7, sub-leaf 0) and XGETBV for the OS-enabled register state.
// arm64 Linux: getauxval(AT_HWCAP); arm64 Apple: sysctlbyname("hw.optional.arm.FEAT_DotProd").
#include "hearth_cpu.h"
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/// Whether this process may use the AMX tile data registers. Linux keeps them disabled until
/// the process asks (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16+; the
/// grant covers every thread of the process); other systems: not used.
static int amx_permitted(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return 0;
#endif
}

static unsigned long long xgetbv0(void) {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

unsigned hearth_cpu_features(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int fma = (c >> 12) & 1, movbe = (c >> 22) & 1, popcnt = (c >> 23) & 1;
    const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return 0;
    const unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return 0;  // XMM and YMM state saved by the OS
    unsigned a7, b7, c7, d7;
    if (!__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7)) return 0;
    const int bmi1 = (b7 >> 3) & 1, avx2 = (b7 >> 5) & 1, bmi2 = (b7 >> 8) & 1;
    unsigned ae, be, ce, de;
    const int lzcnt = __get_cpuid(0x80000001, &ae, &be, &ce, &de) ? (ce >> 5) & 1 : 0;
    unsigned features = 0;
    if (avx2 && fma && f16c && bmi1 && bmi2 && lzcnt && movbe && popcnt) features |= HEARTH_CPU_AVX2_LEVEL;
    const int avx512f = (b7 >> 16) & 1, avx512dq = (b7 >> 17) & 1, avx512cd = (b7 >> 28) & 1;
    const int avx512bw = (b7 >> 30) & 1, avx512vl = (b7 >> 31) & 1, vnni = (c7 >> 11) & 1;
    const int zmm = (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM0-15 upper halves, ZMM16-31
    if ((features & HEARTH_CPU_AVX2_LEVEL) && zmm && avx512f && avx512dq && avx512cd && avx512bw && avx512vl) {
        features |= HEARTH_CPU_AVX512_LEVEL;
        if (vnni) features |= HEARTH_CPU_AVX512VNNI;
        // AMX: AMX-TILE (leaf 7 EDX bit 24) and AMX-INT8 (bit 25), the tile configuration
        // and data state in XCR0 (bits 17, 18), and the permission to use them.
        const int amxTile = (d7 >> 24) & 1, amxInt8 = (d7 >> 25) & 1;
        if (vnni && amxTile && amxInt8 && (xcr0 & 0x60000) == 0x60000 && amx_permitted()) features |= HEARTH_CPU_AMX;
    }
    return features;
}

void hearth_cpu_name(char *out, unsigned size) {
    if (size == 0) return;
    out[0] = 0;
    unsigned regs[12], a, b, c, d;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000004) return;
    for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002 + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    char brand[49];
    memcpy(brand, regs, 48);
    brand[48] = 0;
    const char *start = brand;
    while (*start == ' ') start++;
    strncpy(out, start, size - 1);
    out[size - 1] = 0;
}

#elif defined(__aarch64__)
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
unsigned hearth_cpu_features(void) {
    return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) ? HEARTH_CPU_ARM_DOTPROD : 0;
}
#elif defined(__APPLE__)
#include <sys/sysctl.h>
unsigned hearth_cpu_features(void) {
    int value = 0;
    size_t size = sizeof(value);
    if (sysctlbyname("hw.optional.arm.FEAT_DotProd", &value, &size, NULL, 0) != 0) return 0;
    return value ? HEARTH_CPU_ARM_DOTPROD : 0;
}
#else
unsigned hearth_cpu_features(void) { return 0; }
#endif
void hearth_cpu_name(char *out, unsigned size) {
    if (size) out[0] = 0;
}

#else
unsigned hearth_cpu_features(void) { return 0; }
void hearth_cpu_name(char *out, unsigned size) {
    if (size) out[0] = 0;
}
#endif

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
void hearth_release_free_heap(void) { malloc_trim(0); }
#else
void hearth_release_free_heap(void) {}
#endif

#if defined(_WIN32)
#include <stdlib.h>
void *hearth_map_scratch(unsigned long bytes) { return malloc(bytes); }
void hearth_unmap_scratch(void *p, unsigned long bytes) { (void)bytes; free(p); }
#else
#include <sys/mman.h>
void *hearth_map_scratch(unsigned long bytes) {
    void *p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? 0 : p;
}
void hearth_unmap_scratch(void *p, unsigned long bytes) {
    if (p) munmap(p, bytes);
}
#endif
