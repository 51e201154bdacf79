import Foundation

/// Two runs' next-token logits compared position by position (row-major, `vocab` per position):
/// mean KL(p_reference ‖ p_other) in Double, and top-1 agreement where the reference's top logit
/// leads its second by more than `clearMargin`. This target is optimized in debug builds
/// (Package.swift), so a 262k-entry vocabulary over a few hundred positions takes a fraction of
/// a second instead of the tens of seconds it took in an -Onone test module.
public struct LogitsComparison: Sendable {
    /// Mean KL divergence over the positions (nats).
    public var meanKLD = 0.0
    /// Positions whose reference top-1 is clear.
    public var clearPositions = 0
    /// Clear positions where the other run's top-1 is the same token.
    public var clearAgreement = 0

    /// Compares `other` with `reference` (equal counts, a multiple of `vocab`).
    public init(_ reference: [Float], _ other: [Float], vocab: Int, clearMargin: Float = 1) {
        let positions = min(reference.count, other.count) / max(vocab, 1)
        guard positions > 0 else { return }
        reference.withUnsafeBufferPointer { ra in
            other.withUnsafeBufferPointer { rb in
                guard let baseA = ra.baseAddress, let baseB = rb.baseAddress else { return }
                for p in 0..<positions {
                    let a = baseA + p * vocab, b = baseB + p * vocab
                    var topA = 0, secondA = -Float.infinity, topB = 0
                    for i in 1..<vocab {
                        if a[i] > a[topA] {
                            secondA = a[topA]
                            topA = i
                        } else if a[i] > secondA {
                            secondA = a[i]
                        }
                        if b[i] > b[topB] { topB = i }
                    }
                    let maxA = Double(a[topA]), maxB = Double(b[topB])
                    var sumA = 0.0, sumB = 0.0
                    for i in 0..<vocab {
                        sumA += exp(Double(a[i]) - maxA)
                        sumB += exp(Double(b[i]) - maxB)
                    }
                    let logA = maxA + log(sumA), logB = maxB + log(sumB)
                    var kld = 0.0
                    for i in 0..<vocab {
                        let la = Double(a[i]) - logA, lb = Double(b[i]) - logB
                        kld += exp(la) * (la - lb)
                    }
                    meanKLD += kld / Double(positions)
                    if a[topA] - secondA > clearMargin {
                        clearPositions += 1
                        if topA == topB { clearAgreement += 1 }
                    }
                }
            }
        }
    }
}
