// One file, compiled into two level modules: HearthKernelsAVX2 holds it and
// HearthKernelsAVX512VNNI links to it (a symbolic link of the same name), so the tile
// decoder's bit layouts are written once and each module compiles them for its own target CPU
// (an import across level modules, or a generic over the levels' intrinsics, measured slower).
import HearthKernelsCommon
import _Builtin_intrinsics.intel

/// The 32 weight bytes of half `half` (rows 0–7 / 8–15) of vector m of unit `u` (a 32-column
/// block; a K-quant tile has eight): unsigned quants, or signed for q8_0 and q6_K.
@_transparent
func weightBytes(_ kind: Int32, _ tile: UnsafeRawPointer, _ u: Int, _ m: Int, _ half: Int) -> SIMD4<Int64> {
    @inline(__always) func load(_ offset: Int) -> SIMD4<Int64> {
        tile.loadUnaligned(fromByteOffset: offset + 32 * half, as: SIMD4<Int64>.self)
    }
    @inline(__always) func nibble(_ base: Int) -> SIMD4<Int64> {
        let raw = load(base + 64 * (m & 3))
        let mask = _mm256_set1_epi8(0x0f)
        return m < 4 ? _mm256_and_si256(raw, mask) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask)
    }
    @inline(__always) func fifthBit(_ plane: Int) -> SIMD4<Int64> {
        let v = load(plane)
        let moved = m < 4 ? _mm256_slli_epi16(v, Int32(4 - m)) : m == 4 ? v : _mm256_srli_epi16(v, Int32(m - 4))
        return _mm256_and_si256(moved, _mm256_set1_epi8(0x10))
    }
    switch kind {
    case TileKind.q4_0: return nibble(32)
    case TileKind.q4_1: return nibble(64)
    case TileKind.q8_0: return _mm256_xor_si256(load(32 + 64 * m), _mm256_set1_epi8(-128))
    case TileKind.q8_a: return load(64 + 64 * m)
    case TileKind.q5_0: return _mm256_or_si256(nibble(KTile.q5_0Nibbles), fifthBit(KTile.q5_0High))
    case TileKind.q5_1: return _mm256_or_si256(nibble(KTile.q5_1Nibbles), fifthBit(KTile.q5_1High))
    case TileKind.q4_K: return nibble(KTile.kNibbles + 256 * u)
    case TileKind.q5_K: return _mm256_or_si256(nibble(KTile.kNibbles + 256 * u), fifthBit(KTile.k5High + 64 * u))
    default:  // q6_K
        let v = load(KTile.q6High + 128 * u + (m < 4 ? 0 : 64))
        let k = m & 3
        let shifted = k == 0 ? _mm256_slli_epi16(v, 4) : k == 1 ? _mm256_slli_epi16(v, 2) : k == 2 ? v : _mm256_srli_epi16(v, 2)
        let q = _mm256_or_si256(nibble(KTile.q6Nibbles + 256 * u), _mm256_and_si256(shifted, _mm256_set1_epi8(0x30)))
        return _mm256_sub_epi8(q, _mm256_set1_epi8(32))
    }
}
