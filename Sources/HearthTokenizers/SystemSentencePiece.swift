#if SystemLibraries && os(Linux)
import CSentencePieceShim
import Foundation

/// libsentencepiece itself, through `CSentencePieceShim` — only in builds with the
/// `SystemLibraries` trait (the default on Linux). Hearth tokenizes with the Swift
/// ``SentencePieceModel``; this is its reference: the tests compare the two on every model and
/// text, and `hearth bench-tokenizer` compares their load times.
///
/// `@unchecked Sendable`: after loading, libsentencepiece's processor is only read
/// (`Encode` and lookups are const and thread-safe).
package final class SystemSentencePieceModel: @unchecked Sendable {
    private let handle: OpaquePointer
    /// Number of pieces in the model's vocabulary.
    package let vocabularySize: Int
    /// Special ids as libsentencepiece reports them (-1 when the model has none).
    package let bosID: Int32, eosID: Int32, unkID: Int32, padID: Int32

    /// Loads a serialized ModelProto into libsentencepiece; with `disableDummyPrefix` the
    /// proto's `NormalizerSpec.add_dummy_prefix` is set to false first.
    /// - Throws: `TokenizerError` `.invalidModel` with libsentencepiece's message.
    package init(protoBytes: Data, disableDummyPrefix: Bool = false, path: String? = nil) throws {
        let bytes = disableDummyPrefix ? try Self.withoutDummyPrefix([UInt8](protoBytes), path: path) : [UInt8](protoBytes)
        var error = [CChar](repeating: 0, count: 512)
        let loaded = bytes.withUnsafeBytes { raw in hearth_spm_load(raw.baseAddress, raw.count, &error, error.count) }
        guard let loaded else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw TokenizerError(
                .invalidModel, "cannot load SentencePiece model: \(message)", path: path,
                remedy: "Check that tokenizer.model is a SentencePiece model file")
        }
        handle = loaded
        vocabularySize = Int(hearth_spm_vocab_size(loaded))
        bosID = hearth_spm_bos_id(loaded)
        eosID = hearth_spm_eos_id(loaded)
        unkID = hearth_spm_unk_id(loaded)
        padID = hearth_spm_pad_id(loaded)
    }

    deinit { hearth_spm_free(handle) }

    /// Encodes UTF-8 text with libsentencepiece (no BOS/EOS).
    package func encode(_ text: String) throws -> [Int32] {
        let count = text.utf8.count
        if count == 0 { return [] }
        var ids = [Int32](repeating: 0, count: count + 8)
        var n = text.withCString { hearth_spm_encode(handle, $0, count, &ids, ids.count) }
        if n > Int64(ids.count) {
            ids = [Int32](repeating: 0, count: Int(n))
            n = text.withCString { hearth_spm_encode(handle, $0, count, &ids, ids.count) }
        }
        guard n >= 0 else { throw TokenizerError(.encodingFailed, "SentencePiece could not encode the text") }
        return Array(ids.prefix(Int(n)))
    }

    /// The proto with `add_dummy_prefix: false` appended to its NormalizerSpec (ModelProto
    /// field 3, NormalizerSpec field 3; the last value of a field wins).
    static func withoutDummyPrefix(_ bytes: [UInt8], path: String?) throws -> [UInt8] {
        var reader = ProtobufReader(bytes: bytes, range: 0..<bytes.count, path: path)
        var output: [UInt8] = []
        var sawNormalizer = false
        while true {
            let start = reader.position
            guard let (field, wire) = try reader.nextField() else { break }
            if field == 3 && wire == 2 {
                let payload = try reader.lengthDelimited()
                let patched = Array(bytes[payload]) + [0x18, 0x00]
                output += [0x1a] + ProtobufWire.varint(UInt64(patched.count)) + patched
                sawNormalizer = true
            } else {
                try reader.skip(wire: wire)
                output += bytes[start..<reader.position]
            }
        }
        if !sawNormalizer { output += [0x1a, 0x02, 0x18, 0x00] }
        return output
    }
}
#endif
