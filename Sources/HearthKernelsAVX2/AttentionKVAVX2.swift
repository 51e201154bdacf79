#if arch(x86_64)
import HearthKernelsCommon

// The quantized KV cache's kernels (HearthKernelsCommon's KVBlocks.swift) compiled for AVX2.

/// ``attentionScoresKV`` compiled for AVX2.
@inline(never)
public func hearthAttentionScoresKVAVX2(
    _ qQuants: UnsafePointer<Int8>, _ qScales: UnsafePointer<Float>, keys: UnsafeRawPointer, stride: Int, first: Int,
    last: Int, headDim: Int, scale: Float, kind: Int32, into s: UnsafeMutablePointer<Float>
) {
    attentionScoresKV(
        qQuants, qScales, keys: keys, stride: stride, positions: first...last, headDim: headDim, scale: scale, kind: kind,
        into: s)
}

/// ``attentionValuesKV`` compiled for AVX2.
@inline(never)
public func hearthAttentionValuesKVAVX2(
    _ s: UnsafePointer<Float>, values: UnsafeRawPointer, stride: Int, first: Int, last: Int, headDim: Int, kind: Int32,
    into out: UnsafeMutablePointer<Float>
) {
    attentionValuesKV(s, values: values, stride: stride, positions: first...last, headDim: headDim, kind: kind, into: out)
}

/// ``dequantizeKVRecord`` compiled for AVX2.
@inline(never)
public func hearthDequantizeKVAVX2(_ src: UnsafeRawPointer, count: Int, kind: Int32, into out: UnsafeMutablePointer<Float>) {
    dequantizeKVRecord(src, count: count, kind: kind, into: out)
}

/// ``quantizeKVRecord`` compiled for AVX2.
@inline(never)
public func hearthQuantizeKVAVX2(_ x: UnsafePointer<Float>, count: Int, kind: Int32, into dst: UnsafeMutableRawPointer) {
    quantizeKVRecord(x, count: count, kind: kind, into: dst)
}
#endif
