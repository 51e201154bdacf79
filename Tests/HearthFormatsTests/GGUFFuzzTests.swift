import Foundation
import HearthKernels
import Testing

@testable import HearthFormats

/// SplitMix64: a small seeded generator so every run mutates the same way.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A seeded mutation fuzzer over the real fixture headers: byte flips, truncations,
/// insertions/deletions and corruption of every count, length, type tag, dim and offset
/// field. Every input must either parse — and then every tensor it describes must lie in
/// the buffer and dequantize — or throw `FormatError`; never crash, hang or allocate
/// absurdly. (docs/GGUF.md describes the longer libFuzzer run.)
@Suite struct GGUFFuzzTests {
    static let iterations = 20_000
    static let seed: UInt64 = 0x4845_4152_5448  // "HEARTH"

    /// Values that break length arithmetic: zero, small, around powers of two, huge.
    static let interesting: [UInt64] = [
        0, 1, 2, 3, 4, 5, 7, 8, 12, 13, 16, 31, 32, 33, 63, 64, 255, 256, 4095, 4096, 65535, 65536,
        0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 1 << 32, 1 << 40, 1 << 62, 1 << 63, .max - 1, .max,
    ]

    struct Input {
        let bytes: [UInt8]
        let layout: GGUFLayout
    }

    func mutate(_ input: Input, _ rng: inout SplitMix64) -> [UInt8] {
        var b = input.bytes
        let headerEnd = min(b.count, input.layout.infosEnd + 64)
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard !b.isEmpty else { break }
            switch Int.random(in: 0..<10, using: &rng) {
            case 0, 1:  // flip a bit, mostly in the header
                let i = Int.random(in: 0..<min(b.count, headerEnd), using: &rng)
                b[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
            case 2:  // random byte anywhere
                b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 3, 4, 5:  // corrupt a structural field
                let field = input.layout.fields.randomElement(using: &rng)!
                guard field.offset + field.width <= b.count else { continue }
                var value = Self.interesting.randomElement(using: &rng)!
                if Bool.random(using: &rng) {
                    // Nudge the original value instead.
                    var original: UInt64 = 0
                    for k in 0..<field.width { original |= UInt64(b[field.offset + k]) << (8 * UInt64(k)) }
                    value = original &+ UInt64(bitPattern: Int64.random(in: -40...40, using: &rng))
                }
                for k in 0..<field.width { b[field.offset + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(k))) }
            case 6, 7:  // truncate, usually inside the header
                let limit = Bool.random(using: &rng) ? min(b.count, headerEnd) : b.count
                b.removeLast(b.count - Int.random(in: 0...limit, using: &rng))
            case 8:  // insert bytes in the header
                let at = Int.random(in: 0...min(b.count, headerEnd), using: &rng)
                b.insert(contentsOf: (0..<Int.random(in: 1...9, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
            default:  // delete bytes in the header
                let at = Int.random(in: 0..<min(b.count, headerEnd), using: &rng)
                b.removeSubrange(at..<min(b.count, at + Int.random(in: 1...9, using: &rng)))
            }
        }
        return b
    }

    /// Checks what a successful parse promises: every tensor inside the buffer, aligned,
    /// and readable by the dequantizer.
    func checkParsed(_ header: GGUFHeader, _ bytes: [UInt8]) {
        for t in header.tensors {
            #expect(t.fileOffset >= header.dataOffset && t.fileOffset + t.byteCount <= bytes.count, "\(t.name)")
            #expect(t.offset % header.alignment == 0)
            guard let dtype = t.dtype, t.elementCount <= 1 << 20 else { continue }
            var out = [Float](repeating: 0, count: t.elementCount)
            bytes.withUnsafeBytes { raw in
                out.withUnsafeMutableBufferPointer {
                    dequantize(raw.baseAddress! + t.fileOffset, dtype: dtype, count: t.elementCount, into: $0.baseAddress!)
                }
            }
        }
    }

    @Test func mutatedHeadersParseOrThrowFormatError() throws {
        let inputs = try ["types.gguf", "aligned64.gguf"].map { name in
            let bytes = try GGUFFixtures.bytes(name)
            return Input(bytes: bytes, layout: GGUFLayout(bytes))
        }
        var rng = SplitMix64(state: Self.seed)
        var parsed = 0
        var refused: [FormatError.Code: Int] = [:]
        var slowest = Duration.zero
        let rssBefore = peakResidentBytes()
        let clock = ContinuousClock()
        let started = clock.now
        for iteration in 0..<Self.iterations {
            let input = inputs[iteration % 4 == 3 ? 1 : 0]
            let bytes = mutate(input, &rng)
            let begin = clock.now
            do {
                let header = try parseGGUF(bytes)
                parsed += 1
                checkParsed(header, bytes)
            } catch let error as FormatError {
                refused[error.code, default: 0] += 1
                #expect(!error.message.isEmpty)
            } catch {
                Issue.record("iteration \(iteration): non-FormatError \(error)")
            }
            slowest = max(slowest, clock.now - begin)
        }
        let elapsed = clock.now - started
        let grown = peakResidentBytes() - rssBefore
        print("GGUF fuzz: \(Self.iterations) inputs in \(elapsed), slowest \(slowest), parsed \(parsed), refused \(refused), peak RSS +\(grown >> 20) MiB")
        #expect(parsed > 0 && refused.values.reduce(0, +) > Self.iterations / 2, "the mutations exercise both outcomes")
        #expect(refused.count >= 5, "many different problems were found: \(refused)")
        #expect(slowest < .seconds(1), "no input takes long to refuse")
        #expect(grown < 256 << 20, "no absurd allocation")
    }
}
