// How many 512-bit operations one core issues per second, alone and in pairs: vpdpbusd (the
// 8-bit kernels' multiply-add), the float operations of a kernel's flush (vcvtdq2ps, vfmadd),
// and an integer add. On a CPU with two 512-bit pipes for these, a pair of different
// operations issues about twice as fast as one alone; with one pipe, every operation in a
// kernel's loop costs a vpdpbusd slot. Eight independent chains per test (latency hidden).
//
//   cc -O2 -mavx512f -mavx512vnni -o /tmp/zmm_pipes benchmarks/zmm_pipes.c && taskset -c 0 /tmp/zmm_pipes
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#define N 20000000L
#define KEEP(v) __asm__ volatile("" : "+v"(v[0]), "+v"(v[1]), "+v"(v[2]), "+v"(v[3]), "+v"(v[4]), "+v"(v[5]), "+v"(v[6]), "+v"(v[7]))

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    const __m512i w = _mm512_set1_epi32(0x01020304), x = _mm512_set1_epi32(0x01010101);
    const __m512 fw = _mm512_set1_ps(1.0001f), fx = _mm512_set1_ps(0.5f);
    for (int round = 0; round < 3; round++) {
        __m512i a[8], b[8];
        __m512 f[8];
        for (int i = 0; i < 8; i++) { a[i] = _mm512_set1_epi32(i); b[i] = a[i]; f[i] = _mm512_set1_ps((float)i); }
        double t = seconds();
        for (long n = 0; n < N; n++) { _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) a[i] = _mm512_dpbusd_epi32(a[i], w, x); KEEP(a); }
        double dp = N * 8 / (seconds() - t) / 1e9;
        t = seconds();
        for (long n = 0; n < N; n++) { _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) f[i] = _mm512_fmadd_ps(f[i], fw, fx); KEEP(f); }
        double fma = N * 8 / (seconds() - t) / 1e9;
        t = seconds();
        for (long n = 0; n < N; n++) { _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) b[i] = _mm512_add_epi32(b[i], w); KEEP(b); }
        double add = N * 8 / (seconds() - t) / 1e9;
        t = seconds();
        for (long n = 0; n < N; n++) { _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) b[i] = _mm512_castps_si512(_mm512_cvtepi32_ps(b[i])); KEEP(b); }
        double cvt = N * 8 / (seconds() - t) / 1e9;
        t = seconds();
        for (long n = 0; n < N; n++) {
            _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) { a[i] = _mm512_dpbusd_epi32(a[i], w, x); f[i] = _mm512_fmadd_ps(f[i], fw, fx); }
            KEEP(a); KEEP(f);
        }
        double dpFma = N * 8 / (seconds() - t) / 1e9;
        t = seconds();
        for (long n = 0; n < N; n++) {
            _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) { a[i] = _mm512_dpbusd_epi32(a[i], w, x); b[i] = _mm512_add_epi32(b[i], w); }
            KEEP(a); KEEP(b);
        }
        double dpAdd = N * 8 / (seconds() - t) / 1e9;
        int sink = _mm512_reduce_add_epi32(a[0]) + _mm512_reduce_add_epi32(b[0]) + (int)_mm512_reduce_add_ps(f[0]);
        printf("G/s: vpdpbusd %.2f  vfmadd %.2f  vpaddd %.2f  vcvtdq2ps %.2f | pairs/s: vpdpbusd+vfmadd %.2f  vpdpbusd+vpaddd %.2f (%d)\n",
               dp, fma, add, cvt, dpFma, dpAdd, sink & 1);
    }
    return 0;
}
