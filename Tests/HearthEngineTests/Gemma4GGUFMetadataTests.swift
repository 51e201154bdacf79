import Foundation
import HearthFormats
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The `gemma4` GGUF metadata, hand-built (GGUFBuilder) around a valid core, with each
/// per-layer or per-kind key broken in turn: every one is refused with a `FormatError` naming
/// the key, never a crash or a silently wrong model.
@Suite struct Gemma4GGUFMetadataTests {
    /// A 4-layer `gemma4` file's metadata (sliding, full, sliding, full; the last two share),
    /// with `change` applied to the entries before they are written.
    static func file(_ change: (inout [String: (UInt32, [UInt8])]) -> Void = { _ in }) throws -> GGUFFile {
        typealias B = GGUFBuilder
        func int32s(_ v: [Int32]) -> (UInt32, [UInt8]) {
            (9, B.array(type: 5, count: UInt64(v.count), v.flatMap { B.u32(UInt32(bitPattern: $0)) }))
        }
        func bools(_ v: [Bool]) -> (UInt32, [UInt8]) { (9, B.array(type: 7, count: UInt64(v.count), v.map { $0 ? 1 : 0 })) }
        func u32(_ v: UInt32) -> (UInt32, [UInt8]) { (4, B.u32(v)) }
        func f32(_ v: Float) -> (UInt32, [UInt8]) { (6, B.u32(v.bitPattern)) }
        var entries: [String: (UInt32, [UInt8])] = [
            "gemma4.block_count": u32(4), "gemma4.embedding_length": u32(64), "gemma4.attention.head_count": u32(4),
            "gemma4.attention.head_count_kv": u32(1), "gemma4.feed_forward_length": int32s([128, 128, 256, 256]),
            "gemma4.attention.key_length": u32(512), "gemma4.attention.value_length": u32(512),
            "gemma4.attention.key_length_swa": u32(256), "gemma4.attention.value_length_swa": u32(256),
            "gemma4.attention.sliding_window": u32(8), "gemma4.attention.sliding_window_pattern": bools([true, false, true, false]),
            "gemma4.attention.shared_kv_layers": u32(2), "gemma4.embedding_length_per_layer_input": u32(256),
            "gemma4.rope.freq_base": f32(1e6), "gemma4.rope.freq_base_swa": f32(1e4), "gemma4.rope.dimension_count": u32(512),
            "gemma4.rope.dimension_count_swa": u32(256), "gemma4.final_logit_softcapping": f32(30),
        ]
        change(&entries)
        var b = B()
        b.string("general.architecture", "gemma4")
        for (key, (type, payload)) in entries.sorted(by: { $0.key < $1.key }) { b.entry(key, type: type, payload) }
        b.f32Tensor("rope_freqs.weight", values: [Float](repeating: 1, count: 64) + [Float](repeating: 1e30, count: 192))
        while b.data.count % b.alignment != 0 { b.data.append(0) }
        b.tensor("token_embd.weight", dims: [64, 8], type: 0, offset: UInt64(b.data.count))
        b.data += [UInt8](repeating: 0, count: 64 * 8 * 4)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).gguf")
        try Data(b.bytes()).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try GGUFFile(path: url.path)
    }

    @Test func theValidCoreGivesGemma4Options() throws {
        let o = try Gemma4Family.options(gguf: try Self.file())
        #expect(o.headDim == 256 && o.fullAttentionHeadDim == 512 && o.slidingLayers == [true, false, true, false])
        #expect(o.kvSourceLayers == [0, 1, 0, 1] && o.layerFFNSizes == [128, 128, 256, 256] && o.vocabSize == 8)
        #expect(o.perLayerInputSize == 256 && o.finalLogitSoftcap == 30 && o.slidingRoPE?.theta == 1e4)
        #expect(o.rope.scaling == .frequencyFactors([Float](repeating: 1, count: 64) + [Float](repeating: 1e30, count: 192)))
    }

    static let broken: [(String, @Sendable (inout [String: (UInt32, [UInt8])]) -> Void)] = [
        ("gemma4.feed_forward_length", { $0["gemma4.feed_forward_length"] = (9, GGUFBuilder.array(type: 5, count: 3, (0..<3).flatMap { _ in GGUFBuilder.u32(128) })) }),
        ("gemma4.feed_forward_length", { $0["gemma4.feed_forward_length"] = nil }),
        ("gemma4.attention.head_count_kv", { $0["gemma4.attention.head_count_kv"] = (9, GGUFBuilder.array(type: 5, count: 4, [1, 1, 2, 2].flatMap { GGUFBuilder.u32($0) })) }),
        ("gemma4.attention.sliding_window_pattern", { $0["gemma4.attention.sliding_window_pattern"] = (9, GGUFBuilder.array(type: 7, count: 3, [1, 0, 1])) }),
        ("gemma4.attention.sliding_window_pattern", { $0["gemma4.attention.sliding_window_pattern"] = (9, GGUFBuilder.array(type: 5, count: 4, (0..<4).flatMap { _ in GGUFBuilder.u32(1) })) }),
        ("gemma4.attention.shared_kv_layers", { $0["gemma4.attention.shared_kv_layers"] = (4, GGUFBuilder.u32(4)) }),
        // Layer 0 full, layers 1-3 sliding and shared: no earlier sliding layer computes keys.
        ("gemma4.attention.shared_kv_layers", { $0["gemma4.attention.sliding_window_pattern"] = (9, GGUFBuilder.array(type: 7, count: 4, [0, 1, 1, 1])); $0["gemma4.attention.shared_kv_layers"] = (4, GGUFBuilder.u32(3)) }),
        ("gemma4.attention.value_length_swa", { $0["gemma4.attention.value_length_swa"] = (4, GGUFBuilder.u32(128)) }),
        ("gemma4.rope.dimension_count", { $0["gemma4.rope.dimension_count"] = (4, GGUFBuilder.u32(1024)) }),
        ("rope_freqs.weight", { $0["gemma4.rope.dimension_count"] = (4, GGUFBuilder.u32(256)) }),
        ("gemma4.attention.sliding_window", { $0["gemma4.attention.sliding_window"] = nil }),
    ]

    @Test(arguments: Self.broken.indices)
    func brokenMetadataIsRefusedNamingTheKey(_ index: Int) throws {
        let (key, change) = Self.broken[index]
        do {
            _ = try Gemma4Family.options(gguf: try Self.file(change))
            Issue.record("case \(index): accepted, expected an error naming \(key)")
        } catch let error as FormatError {
            #expect(error.key == key, "case \(index): \(error)")
        }
    }
}
