import CSentencePieceShim
import Foundation

/// A SentencePiece `tokenizer.model` loaded into libsentencepiece.
///
/// `@unchecked Sendable`: after loading, libsentencepiece's processor is only read
/// (`Encode` and lookups are const and thread-safe).
public final class SentencePieceModel: @unchecked Sendable {
    /// What a vocabulary entry is.
    public enum PieceKind: Int32, Sendable {
        case normal = 1, unknown = 2, control = 3, userDefined = 4, unused = 5, byte = 6
    }

    private let handle: OpaquePointer
    /// Number of pieces in the model's vocabulary.
    public let vocabularySize: Int
    /// Piece strings by id (as stored, with `▁` for spaces and `<0xNN>` for bytes).
    public let pieces: [String]
    /// Piece kinds by id.
    public let kinds: [PieceKind]
    /// Special ids (-1 when the model has none).
    public let bosID: Int32, eosID: Int32, unkID: Int32, padID: Int32
    /// Whether the model's normalizer prepends `▁` to the input (`add_dummy_prefix`).
    public let addsDummyPrefix: Bool

    /// Loads a serialized ModelProto. With `disableDummyPrefix` the normalizer's
    /// `add_dummy_prefix` is switched off in the proto before loading (what HF's
    /// non-legacy Llama tokenizer does).
    public init(protoBytes: Data, disableDummyPrefix: Bool = false, path: String? = nil) throws {
        let (patched, dummyPrefix) = try SentencePieceProto.withDummyPrefix(
            disabled: disableDummyPrefix, in: protoBytes, path: path)
        var error = [CChar](repeating: 0, count: 512)
        let loaded = patched.withUnsafeBytes { raw in
            hearth_spm_load(raw.baseAddress, raw.count, &error, error.count)
        }
        guard let loaded else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw TokenizerError(
                .invalidModel, "cannot load SentencePiece model: \(message)", path: path,
                remedy: "Check that tokenizer.model is a SentencePiece model file")
        }
        handle = loaded
        addsDummyPrefix = dummyPrefix && !disableDummyPrefix
        let size = Int(hearth_spm_vocab_size(loaded))
        vocabularySize = size
        var pieces: [String] = []
        var kinds: [PieceKind] = []
        pieces.reserveCapacity(size)
        kinds.reserveCapacity(size)
        var buffer = [CChar](repeating: 0, count: 256)
        for id in 0..<Int32(size) {
            var length = Int(hearth_spm_piece(loaded, id, &buffer, buffer.count))
            if length > buffer.count {
                buffer = [CChar](repeating: 0, count: length)
                length = Int(hearth_spm_piece(loaded, id, &buffer, buffer.count))
            }
            let bytes = buffer.prefix(max(0, length)).map { UInt8(bitPattern: $0) }
            pieces.append(String(decoding: bytes, as: UTF8.self))
            kinds.append(PieceKind(rawValue: hearth_spm_kind(loaded, id)) ?? .normal)
        }
        self.pieces = pieces
        self.kinds = kinds
        bosID = hearth_spm_bos_id(loaded)
        eosID = hearth_spm_eos_id(loaded)
        unkID = hearth_spm_unk_id(loaded)
        padID = hearth_spm_pad_id(loaded)
    }

    /// Loads `tokenizer.model` from disk.
    public convenience init(path: String, disableDummyPrefix: Bool = false) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TokenizerError(.fileNotFound, "cannot read SentencePiece model", path: path)
        }
        try self.init(protoBytes: data, disableDummyPrefix: disableDummyPrefix, path: path)
    }

    deinit { hearth_spm_free(handle) }

    /// Encodes UTF-8 text with the model's own normalizer (no BOS/EOS).
    public func encode(_ text: String) throws -> [Int32] {
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

    /// Looks up a piece string's id.
    public func id(ofPiece piece: String) -> Int32? {
        pieces.firstIndex(of: piece).map(Int32.init)
    }
}

/// Just enough of protobuf's wire format to flip `NormalizerSpec.add_dummy_prefix`
/// (ModelProto field 3 → NormalizerSpec field 3) without the generated protobuf code.
enum SentencePieceProto {
    /// Returns the (possibly patched) proto and whether the original adds a dummy prefix.
    static func withDummyPrefix(disabled: Bool, in data: Data, path: String?) throws -> (Data, Bool) {
        let bytes = [UInt8](data)
        var reader = Reader(bytes: bytes, path: path)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 8)
        var addsDummyPrefix = true
        var sawNormalizer = false
        while !reader.atEnd {
            let start = reader.position
            let key = try reader.varint()
            let field = key >> 3, wire = Int(key & 7)
            if field == 3 && wire == 2 {
                let payload = try reader.lengthDelimited()
                sawNormalizer = true
                addsDummyPrefix = try readDummyPrefix(payload, path: path) ?? true
                if disabled {
                    let patched = payload + [0x18, 0x00]  // field 3, varint 0: last value wins
                    output += encodeVarint(key) + encodeVarint(UInt64(patched.count)) + patched
                    continue
                }
            } else {
                try reader.skip(wire: wire)
            }
            output += bytes[start..<reader.position]
        }
        if disabled && !sawNormalizer {
            output += [0x1a, 0x02, 0x18, 0x00]
        }
        return (disabled ? Data(output) : data, addsDummyPrefix)
    }

    private static func readDummyPrefix(_ payload: [UInt8], path: String?) throws -> Bool? {
        var reader = Reader(bytes: payload, path: path)
        var value: Bool?
        while !reader.atEnd {
            let key = try reader.varint()
            if key >> 3 == 3 && key & 7 == 0 {
                value = try reader.varint() != 0
            } else {
                try reader.skip(wire: Int(key & 7))
            }
        }
        return value
    }

    private static func encodeVarint(_ value: UInt64) -> [UInt8] {
        var v = value
        var out: [UInt8] = []
        repeat {
            var byte = UInt8(v & 0x7f)
            v >>= 7
            if v != 0 { byte |= 0x80 }
            out.append(byte)
        } while v != 0
        return out
    }

    struct Reader {
        let bytes: [UInt8]
        let path: String?
        var position = 0

        var atEnd: Bool { position >= bytes.count }

        func corrupt() -> TokenizerError {
            TokenizerError(
                .invalidModel, "tokenizer.model is not a valid SentencePiece protobuf (byte \(position))", path: path)
        }

        mutating func varint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard position < bytes.count, shift < 64 else { throw corrupt() }
                let byte = bytes[position]
                position += 1
                result |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return result }
                shift += 7
            }
        }

        mutating func lengthDelimited() throws -> [UInt8] {
            let length = try varint()
            guard length <= UInt64(bytes.count - position) else { throw corrupt() }
            let end = position + Int(length)
            defer { position = end }
            return Array(bytes[position..<end])
        }

        mutating func skip(wire: Int) throws {
            switch wire {
            case 0: _ = try varint()
            case 1: try advance(8)
            case 2: _ = try lengthDelimited()
            case 5: try advance(4)
            default: throw corrupt()
            }
        }

        mutating func advance(_ n: Int) throws {
            guard n <= bytes.count - position else { throw corrupt() }
            position += n
        }
    }
}
