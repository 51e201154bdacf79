/// The parts of a SentencePiece `tokenizer.model` (a serialized `ModelProto`) that encoding
/// uses, read with just enough of protobuf's wire format and checked as libsentencepiece checks
/// them when it loads a model.
///
/// Field numbers (sentencepiece_model.proto): ModelProto 1 pieces, 2 trainer_spec,
/// 3 normalizer_spec; SentencePiece 1 piece, 2 score, 3 type; TrainerSpec 3 model_type,
/// 24 treat_whitespace_as_suffix, 35 byte_fallback, 45–48 unk/bos/eos/pad piece; NormalizerSpec
/// 1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
/// 5 escape_whitespaces. An embedded message that appears twice is merged and a scalar that
/// appears twice keeps its last value, as protobuf parsers do.
struct SentencePieceModelFile {
    /// TrainerSpec.ModelType.
    enum ModelType: UInt64 {
        case unigram = 1, bpe = 2, word = 3, character = 4
    }

    /// The whole file; pieces are ranges of it.
    let bytes: [UInt8]
    /// Per piece: where its bytes are in `bytes`.
    var pieceRanges: [Range<Int>] = []
    var scores: [Float] = []
    var kinds: [SentencePieceModel.PieceKind] = []
    var modelType: ModelType = .unigram
    var byteFallback = false
    var treatWhitespaceAsSuffix = false
    var unknownPiece = "<unk>", bosPiece = "<s>", eosPiece = "</s>", padPiece = "<pad>"
    var normalizerName = ""
    var charsMap: Range<Int>?
    var addDummyPrefix = true
    var removeExtraWhitespaces = true
    var escapeWhitespaces = true

    /// Parses `bytes`; throws `invalidModel` naming the byte offset when the protobuf is broken.
    init(bytes: [UInt8], path: String?) throws {
        self.bytes = bytes
        var reader = ProtobufReader(bytes: bytes, range: 0..<bytes.count, path: path)
        let estimate = bytes.count / 16
        pieceRanges.reserveCapacity(estimate)
        scores.reserveCapacity(estimate)
        kinds.reserveCapacity(estimate)
        while let (field, wire) = try reader.nextField() {
            switch (field, wire) {
            case (1, 2): try readPiece(reader.subMessage())
            case (2, 2): try readTrainerSpec(reader.subMessage())
            case (3, 2): try readNormalizerSpec(reader.subMessage())
            default: try reader.skip(wire: wire)
            }
        }
    }

    private mutating func readPiece(_ message: ProtobufReader) throws {
        var reader = message
        var piece = reader.range.lowerBound..<reader.range.lowerBound
        var score: Float = 0
        var kind = SentencePieceModel.PieceKind.normal
        while let (field, wire) = try reader.nextField() {
            switch (field, wire) {
            case (1, 2): piece = try reader.lengthDelimited()
            case (2, 5): score = Float(bitPattern: try reader.fixed32())
            // An enum value this reader does not know stays the default, as in proto2.
            case (3, 0): kind = SentencePieceModel.PieceKind(rawValue: Int32(truncatingIfNeeded: try reader.varint())) ?? kind
            default: try reader.skip(wire: wire)
            }
        }
        pieceRanges.append(piece)
        scores.append(score)
        kinds.append(kind)
    }

    private mutating func readTrainerSpec(_ message: ProtobufReader) throws {
        var reader = message
        while let (field, wire) = try reader.nextField() {
            switch (field, wire) {
            case (3, 0): modelType = ModelType(rawValue: try reader.varint()) ?? modelType
            case (24, 0): treatWhitespaceAsSuffix = try reader.varint() != 0
            case (35, 0): byteFallback = try reader.varint() != 0
            case (45, 2): unknownPiece = try reader.string()
            case (46, 2): bosPiece = try reader.string()
            case (47, 2): eosPiece = try reader.string()
            case (48, 2): padPiece = try reader.string()
            default: try reader.skip(wire: wire)
            }
        }
    }

    private mutating func readNormalizerSpec(_ message: ProtobufReader) throws {
        var reader = message
        while let (field, wire) = try reader.nextField() {
            switch (field, wire) {
            case (1, 2): normalizerName = try reader.string()
            case (2, 2): charsMap = try reader.lengthDelimited()
            case (3, 0): addDummyPrefix = try reader.varint() != 0
            case (4, 0): removeExtraWhitespaces = try reader.varint() != 0
            case (5, 0): escapeWhitespaces = try reader.varint() != 0
            default: try reader.skip(wire: wire)
            }
        }
    }
}

/// Writes protobuf's base-128 varints (for patching a model, and the tests' hand-made protos).
enum ProtobufWire {
    static func varint(_ value: UInt64) -> [UInt8] {
        var v = value
        var out: [UInt8] = []
        repeat {
            out.append(UInt8(v & 0x7f) | (v >= 0x80 ? 0x80 : 0))
            v >>= 7
        } while v != 0
        return out
    }
}

/// Reads protobuf's wire format from a range of a byte array; every read is bounds-checked and
/// a malformed message is a typed error naming the offset.
struct ProtobufReader {
    let bytes: [UInt8]
    /// The message being read; `position` moves through it.
    let range: Range<Int>
    let path: String?
    private(set) var position: Int

    init(bytes: [UInt8], range: Range<Int>, path: String?) {
        self.bytes = bytes
        self.range = range
        self.path = path
        position = range.lowerBound
    }

    func corrupt(_ what: String = "") -> TokenizerError {
        TokenizerError(
            .invalidModel,
            "tokenizer.model is not a valid SentencePiece protobuf (byte \(position)\(what.isEmpty ? "" : ": " + what))",
            path: path, remedy: "Download the checkpoint's tokenizer.model again")
    }

    /// The next field number and wire type, or nil at the end of the message.
    mutating func nextField() throws -> (UInt64, Int)? {
        guard position < range.upperBound else { return nil }
        let key = try varint()
        guard key >> 3 != 0 else { throw corrupt("field number 0") }
        return (key >> 3, Int(key & 7))
    }

    mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < range.upperBound, shift < 64 else { throw corrupt("truncated varint") }
            let byte = bytes[position]
            position += 1
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    mutating func fixed32() throws -> UInt32 {
        guard range.upperBound - position >= 4 else { throw corrupt("truncated fixed32") }
        var value: UInt32 = 0
        for k in 0..<4 { value |= UInt32(bytes[position + k]) << (8 * UInt32(k)) }
        position += 4
        return value
    }

    /// The range of a length-delimited field's payload.
    mutating func lengthDelimited() throws -> Range<Int> {
        let length = try varint()
        guard length <= UInt64(range.upperBound - position) else { throw corrupt("length past the end") }
        let start = position
        position += Int(length)
        return start..<position
    }

    mutating func subMessage() throws -> ProtobufReader {
        ProtobufReader(bytes: bytes, range: try lengthDelimited(), path: path)
    }

    mutating func string() throws -> String {
        String(decoding: bytes[try lengthDelimited()], as: UTF8.self)
    }

    mutating func skip(wire: Int) throws {
        switch wire {
        case 0: _ = try varint()
        case 1: try advance(8)
        case 2: _ = try lengthDelimited()
        case 5: try advance(4)
        default: throw corrupt("wire type \(wire)")
        }
    }

    private mutating func advance(_ n: Int) throws {
        guard n <= range.upperBound - position else { throw corrupt("truncated field") }
        position += n
    }
}
