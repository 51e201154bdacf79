#ifndef HEARTH_AMX_H
#define HEARTH_AMX_H

// Intel AMX tile operations for the `amx` kernel level (HearthKernelsAVX512VNNI's
// AMXTiles.swift). Swift cannot name AMX instructions itself: the compiler's tile intrinsics
// take tile numbers as immediates, which the C headers expose only as macros. Each function
// here is one instruction on fixed tiles, inlined into the Swift kernel (built with the
// amx-tile and amx-int8 target features). Call them only after `hearth_cpu_features()`
// reported HEARTH_CPU_AMX (which also asked Linux for the tile state) and after
// `hearth_amx_configure` on the calling thread.
//
// The kernel's tiles: 0, 1 and 6, 7 accumulate (int32, 16 rows of 16; two banks, so one bank's
// products run while the other's are flushed), 2 and 3 hold activation bytes (tokens × K), 4
// and 5 weight bytes (K/4 rows of 16 columns × 4).

#if defined(__x86_64__) && !defined(_MSC_VER)
#include <immintrin.h>

#define HEARTH_AMX_FN static inline __attribute__((always_inline, target("amx-tile,amx-int8")))

/// Loads the 64-byte tile configuration at `config` (palette 1).
HEARTH_AMX_FN void hearth_amx_configure(const void *config) { _tile_loadconfig(config); }
/// Returns the tiles to their initial state (the thread's tile state no longer needs saving).
HEARTH_AMX_FN void hearth_amx_release(void) { _tile_release(); }
HEARTH_AMX_FN void hearth_amx_zero0(void) { _tile_zero(0); }
HEARTH_AMX_FN void hearth_amx_zero1(void) { _tile_zero(1); }
HEARTH_AMX_FN void hearth_amx_zero6(void) { _tile_zero(6); }
HEARTH_AMX_FN void hearth_amx_zero7(void) { _tile_zero(7); }
/// Tiles 2–5 from memory: `rows` (as configured) of `stride` bytes from `base`.
HEARTH_AMX_FN void hearth_amx_load2(const void *base, long stride) { _tile_loadd(2, base, stride); }
HEARTH_AMX_FN void hearth_amx_load3(const void *base, long stride) { _tile_loadd(3, base, stride); }
HEARTH_AMX_FN void hearth_amx_load4(const void *base, long stride) { _tile_loadd(4, base, stride); }
HEARTH_AMX_FN void hearth_amx_load5(const void *base, long stride) { _tile_loadd(5, base, stride); }
/// Tile 0 += tile 2 (signed bytes) · tile 4 (signed bytes); `_su`: tile 4 unsigned.
HEARTH_AMX_FN void hearth_amx_dot_ss_0_2_4(void) { _tile_dpbssd(0, 2, 4); }
HEARTH_AMX_FN void hearth_amx_dot_ss_1_3_5(void) { _tile_dpbssd(1, 3, 5); }
HEARTH_AMX_FN void hearth_amx_dot_su_0_2_4(void) { _tile_dpbsud(0, 2, 4); }
HEARTH_AMX_FN void hearth_amx_dot_su_1_3_5(void) { _tile_dpbsud(1, 3, 5); }
HEARTH_AMX_FN void hearth_amx_dot_ss_6_2_4(void) { _tile_dpbssd(6, 2, 4); }
HEARTH_AMX_FN void hearth_amx_dot_ss_7_3_5(void) { _tile_dpbssd(7, 3, 5); }
HEARTH_AMX_FN void hearth_amx_dot_su_6_2_4(void) { _tile_dpbsud(6, 2, 4); }
HEARTH_AMX_FN void hearth_amx_dot_su_7_3_5(void) { _tile_dpbsud(7, 3, 5); }
HEARTH_AMX_FN void hearth_amx_dot_ss_1_2_5(void) { _tile_dpbssd(1, 2, 5); }
HEARTH_AMX_FN void hearth_amx_dot_su_1_2_5(void) { _tile_dpbsud(1, 2, 5); }
HEARTH_AMX_FN void hearth_amx_dot_ss_6_3_4(void) { _tile_dpbssd(6, 3, 4); }
HEARTH_AMX_FN void hearth_amx_dot_su_6_3_4(void) { _tile_dpbsud(6, 3, 4); }
/// Tiles 0, 1, 6 and 7 to memory, rows `stride` bytes apart.
HEARTH_AMX_FN void hearth_amx_store0(void *base, long stride) { _tile_stored(0, base, stride); }
HEARTH_AMX_FN void hearth_amx_store1(void *base, long stride) { _tile_stored(1, base, stride); }
HEARTH_AMX_FN void hearth_amx_store6(void *base, long stride) { _tile_stored(6, base, stride); }
HEARTH_AMX_FN void hearth_amx_store7(void *base, long stride) { _tile_stored(7, base, stride); }

#undef HEARTH_AMX_FN
#endif

#endif
