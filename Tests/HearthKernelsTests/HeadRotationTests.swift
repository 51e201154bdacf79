import Foundation
import HearthTestSupport
import Testing

@testable import HearthKernels

/// ``HeadRotation``, the transform a quantized KV cache's queries, keys and values take: its
/// matrix is a block-diagonal signed Walsh–Hadamard matrix from the definition, it is
/// orthonormal (dot products kept, ``HeadRotation/inverse(_:)`` undoes it), and on head vectors
/// with a few large channels — what the model's keys look like — it lowers the error of q4_0 and
/// q8_0 records against the exact dot products.
@Suite struct HeadRotationTests {
    /// Gemma 3 (256), Phi-3 (96), 64, 128, 80 (blocks of 16), 32, 12 (blocks of 4), 7 (signs only).
    static let headDims = [256, 96, 64, 128, 80, 32, 12, 7]

    /// The rotation's matrix, column j = forward(e_j).
    static func matrix(_ r: HeadRotation) -> [[Float]] {
        let n = r.headDim
        var columns: [[Float]] = []
        for j in 0..<n {
            var e = [Float](repeating: 0, count: n)
            e[j] = 1
            e.withUnsafeMutableBufferPointer { r.forward($0.baseAddress!) }
            columns.append(e)
        }
        return columns
    }

    @Test(arguments: headDims)
    func isASignedWalshHadamardMatrixPerBlock(headDim: Int) {
        let r = HeadRotation(headDim: headDim)
        let b = r.block
        #expect(headDim % b == 0 && b & (b - 1) == 0 && (b == 256 || headDim % (2 * b) != 0))
        let m = Self.matrix(r)
        let norm = 1 / Float(b).squareRoot()
        for j in 0..<headDim {
            let start = j / b * b
            // Row `start` of a Walsh–Hadamard block is all ones: it gives column j's sign.
            let sign: Float = m[j][start] > 0 ? 1 : -1
            for i in 0..<headDim {
                let expected: Float
                if i / b != j / b {
                    expected = 0
                } else {
                    let parity = ((i - start) & (j - start)).nonzeroBitCount & 1
                    expected = sign * (parity == 0 ? norm : -norm)
                }
                #expect(abs(m[j][i] - expected) < 1e-6, "headDim \(headDim): element (\(i), \(j)) \(m[j][i]) ≠ \(expected)")
            }
        }
        // Not one fixed sign for every column: the signs are mixed.
        if headDim >= 32 {
            let signs = (0..<headDim).map { j in m[j][j / b * b] > 0 }
            #expect(signs.contains(true) && signs.contains(false))
        }
    }

    @Test(arguments: headDims)
    func keepsDotProductsAndInverts(headDim: Int) {
        let r = HeadRotation(headDim: headDim)
        var rng = SeededRandom(state: UInt64(headDim))
        for _ in 0..<8 {
            let x = (0..<headDim).map { _ in rng.normal() }, y = (0..<headDim).map { _ in rng.normal() }
            var rx = x, ry = y
            rx.withUnsafeMutableBufferPointer { r.forward($0.baseAddress!) }
            ry.withUnsafeMutableBufferPointer { r.forward($0.baseAddress!) }
            let exact = zip(x, y).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            let rotated = zip(rx, ry).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            #expect(abs(exact - rotated) < 1e-4 * Double(headDim))
            rx.withUnsafeMutableBufferPointer { r.inverse($0.baseAddress!) }
            for i in 0..<headDim { #expect(abs(rx[i] - x[i]) < 1e-5) }
        }
    }

    /// Keys with two large channels (×25), as RoPE pairs with large norm weights make them:
    /// quantized as q4_0 / q8_0 records after the rotation, their dot products with random
    /// queries (rotated alike) are far closer to the exact ones than without it.
    @Test(arguments: [DType.q4_0, .q8_0], [96, 256])
    func lowersQuantizationErrorOnOutlierChannels(type: DType, headDim: Int) {
        let r = HeadRotation(headDim: headDim)
        var rng = SeededRandom(state: 7)
        var plainError = 0.0, rotatedError = 0.0
        var stored = [UInt8](repeating: 0, count: headDim * 2), decoded = [Float](repeating: 0, count: headDim)
        func quantizedDot(_ k: [Float], _ q: [Float]) -> Double {
            stored.withUnsafeMutableBytes { raw in
                k.withUnsafeBufferPointer { storeCached($0.baseAddress!, type: type, count: headDim, into: raw.baseAddress!) }
                decoded.withUnsafeMutableBufferPointer { loadCached(raw.baseAddress!, type: type, count: headDim, into: $0.baseAddress!) }
            }
            return zip(decoded, q).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
        }
        for _ in 0..<64 {
            var k = (0..<headDim).map { _ in rng.normal() }
            k[3] *= 25
            k[headDim / 2 + 3] *= 25
            let q = (0..<headDim).map { _ in rng.normal() }
            let exact = zip(k, q).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            plainError += abs(quantizedDot(k, q) - exact)
            var rk = k, rq = q
            rk.withUnsafeMutableBufferPointer { r.forward($0.baseAddress!) }
            rq.withUnsafeMutableBufferPointer { r.forward($0.baseAddress!) }
            rotatedError += abs(quantizedDot(rk, rq) - exact)
        }
        #expect(rotatedError < 0.5 * plainError, "\(type) \(headDim): rotated \(rotatedError), plain \(plainError)")
    }
}

extension SeededRandom {
    /// A standard normal sample (Box–Muller).
    mutating func normal() -> Float {
        let u1 = (Double(next() >> 11) + 1) / 9_007_199_254_740_993, u2 = Double(next() >> 11) / 9_007_199_254_740_992
        return Float((-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2))
    }
}
