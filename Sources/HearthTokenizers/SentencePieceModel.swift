import Foundation

/// A SentencePiece `tokenizer.model`, loaded and run in Swift: unigram and BPE models,
/// the model's normalizer (precompiled NFKC-style character map, whitespace rules,
/// `add_dummy_prefix`), user-defined pieces, byte fallback and UNUSED pieces, giving the ids
/// libsentencepiece gives (Tests/HearthTokenizersTests/SentencePieceReferenceTests.swift).
///
/// Immutable after loading, so it is `Sendable`.
package final class SentencePieceModel: Sendable {
    /// What a vocabulary entry is (ModelProto.SentencePiece.Type).
    package enum PieceKind: Int32, Sendable {
        case normal = 1, unknown = 2, control = 3, userDefined = 4, unused = 5, byte = 6
    }

    /// The algorithm of the model (TrainerSpec.model_type); Hearth runs unigram and BPE.
    package enum Algorithm: String, Sendable {
        case unigram, bpe
    }

    /// Number of pieces in the model's vocabulary.
    package let vocabularySize: Int
    /// Piece strings by id (as stored, with `▁` for spaces and `<0xNN>` for bytes).
    package let pieces: [String]
    /// Piece kinds by id.
    package let kinds: [PieceKind]
    /// Piece scores by id (log-probabilities for unigram, merge priority for BPE).
    package let scores: [Float]
    /// Special ids (-1 when the model has none), as libsentencepiece reports them: the id of
    /// the trainer spec's `<s>`, `</s>`, `<pad>` piece when that piece is a control piece, and of
    /// `<unk>` when it is the unknown piece.
    package let bosID: Int32, eosID: Int32, unkID: Int32, padID: Int32
    /// Whether the normalizer prepends `▁` to the input (`add_dummy_prefix`, after
    /// `disableDummyPrefix`).
    package let addsDummyPrefix: Bool
    /// The model's algorithm.
    package let algorithm: Algorithm

    private let vocabulary: SentencePieceVocabulary
    private let normalizer: SentencePieceNormalizer
    private let unigram: UnigramEncoder?
    private let bpe: BPEPieceEncoder?
    private let byteFallback: Bool
    /// Whose arithmetic the unigram search follows (tests choose `.legacy` to compare with an
    /// old libsentencepiece).
    let compatibility: SentencePieceCompatibility
    /// `<0xNN>` piece ids by byte.
    private let byteIDs: [Int32]

    /// Loads a serialized ModelProto. With `disableDummyPrefix` the normalizer's
    /// `add_dummy_prefix` is off (what HF's non-legacy Llama tokenizer does).
    ///
    /// - Throws: `TokenizerError` `.invalidModel` for a broken protobuf or a model
    ///   libsentencepiece would refuse (an empty or repeated piece, no or two unknown pieces,
    ///   byte pieces without `byte_fallback` or fewer than 256 with it, a broken normalization
    ///   map); `.unsupported` for the word and character model types.
    package convenience init(protoBytes: Data, disableDummyPrefix: Bool = false, path: String? = nil) throws {
        try self.init(protoBytes: protoBytes, disableDummyPrefix: disableDummyPrefix, path: path, compatibility: .current)
    }

    // Long: sentencepiece's own load checks in its order (model type, each piece's length, NUL, kind:
    // unknown, control, byte, user-defined; the unknown piece; the tables), each with sentencepiece's
    // error, filling the piece tables in one pass over the pieces.
    init(protoBytes: Data, disableDummyPrefix: Bool, path: String?, compatibility: SentencePieceCompatibility) throws {
        self.compatibility = compatibility
        let file = try SentencePieceModelFile(bytes: [UInt8](protoBytes), path: path)
        func invalid(_ message: String) -> TokenizerError {
            TokenizerError(
                .invalidModel, "cannot load SentencePiece model: \(message)", path: path,
                remedy: "Check that tokenizer.model is a SentencePiece model file")
        }
        switch file.modelType {
        case .unigram: algorithm = .unigram
        case .bpe: algorithm = .bpe
        case .word, .character:
            throw TokenizerError(
                .unsupported, "SentencePiece \(file.modelType == .word ? "word" : "char") models are not supported",
                path: path, key: "trainer_spec.model_type", remedy: "Use a unigram or BPE tokenizer.model")
        }

        let count = file.pieceRanges.count
        var kinds = file.kinds
        var totalBytes = 0
        for range in file.pieceRanges { totalBytes += range.count }
        // BPE keeps every piece in one table; unigram keeps CONTROL, UNKNOWN and BYTE apart.
        let separateReserved = algorithm == .unigram
        var normal = ByteTrie(totalBytes: totalBytes)
        var reserved = ByteTrie(totalBytes: separateReserved ? 64 : 0)
        var userDefinedBytes = 0
        for (range, kind) in zip(file.pieceRanges, kinds) where kind == .userDefined { userDefinedBytes += range.count }
        var userDefined = ByteTrie(totalBytes: userDefinedBytes)
        var pieces: [String] = []
        pieces.reserveCapacity(count)
        var unknown: Int32 = -1
        var byteIDs = [Int32](repeating: -1, count: 256)
        try file.bytes.withUnsafeBufferPointer { all in
            for id in 0..<count {
                let range = file.pieceRanges[id]
                let bytes = UnsafeBufferPointer(rebasing: all[range])
                let piece = String(decoding: bytes, as: UTF8.self)
                pieces.append(piece)
                guard bytes.count < 8000 else { throw invalid("piece \(id) is too long") }
                guard !bytes.isEmpty else { throw invalid("piece \(id) must not be empty") }
                // A lone NUL piece (written by some converters) is unused under byte fallback and
                // skipped when unused; any other NUL is refused.
                if bytes.count == 1 && bytes[0] == 0 {
                    if file.byteFallback { kinds[id] = .unused }
                    if kinds[id] == .unused { continue }
                }
                guard !bytes.contains(0) else { throw invalid("piece \(id) must not include a null character") }
                let kind = kinds[id]
                let isNormal = kind == .normal || kind == .userDefined || kind == .unused
                if isNormal || !separateReserved {
                    if normal.insert(bytes, value: Int32(id)) != nil { throw invalid("\(piece) is already defined") }
                } else if reserved.insert(bytes, value: Int32(id)) != nil {
                    throw invalid("\(piece) is already defined")
                }
                if kind == .userDefined { userDefined.insert(bytes, value: Int32(id)) }
                if kind == .unknown {
                    guard unknown < 0 else { throw invalid("unk is already defined") }
                    unknown = Int32(id)
                }
                if kind == .byte {
                    guard file.byteFallback else {
                        throw invalid("byte piece \(piece) is found although `byte_fallback` is false")
                    }
                    guard let byte = Self.byteValue(piece) else { throw invalid("byte piece \(piece) is invalid") }
                    byteIDs[Int(byte)] = Int32(id)
                }
                if separateReserved && !file.scores[id].isFinite { throw invalid("the score of piece \(id) is NaN or Inf") }
            }
        }
        guard unknown >= 0 || file.byteFallback else { throw invalid("unk is not defined") }
        if file.byteFallback && byteIDs.contains(-1) {
            throw invalid("there are not 256 byte pieces although `byte_fallback` is true")
        }
        if algorithm == .unigram && normal.isEmpty { throw invalid("no entry is found in the trie") }

        vocabularySize = count
        self.pieces = pieces
        self.kinds = kinds
        scores = file.scores
        byteFallback = file.byteFallback
        self.byteIDs = byteIDs
        let vocabulary = SentencePieceVocabulary(
            pieces: normal, reserved: reserved, scores: file.scores, kinds: kinds, unknownID: unknown)
        self.vocabulary = vocabulary
        normalizer = try SentencePieceNormalizer(file: file, userDefined: userDefined, path: path)
        addsDummyPrefix = file.addDummyPrefix && !disableDummyPrefix
        if algorithm == .unigram {
            var encoder = UnigramEncoder(vocabulary: vocabulary)
            encoder.compatibility = compatibility
            unigram = encoder
        } else {
            unigram = nil
        }
        bpe = algorithm == .bpe ? BPEPieceEncoder(vocabulary: vocabulary, userDefined: userDefined) : nil

        func special(_ piece: String, _ kind: PieceKind) -> Int32 {
            var piece = piece
            let id = piece.withUTF8 { vocabulary.id(of: $0) }
            return id >= 0 && kinds[Int(id)] == kind ? id : -1
        }
        bosID = special(file.bosPiece, .control)
        eosID = special(file.eosPiece, .control)
        padID = special(file.padPiece, .control)
        unkID = special(file.unknownPiece, .unknown)
    }

    /// Loads `tokenizer.model` from disk.
    package convenience init(path: String, disableDummyPrefix: Bool = false) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TokenizerError(.fileNotFound, "cannot read SentencePiece model", path: path)
        }
        try self.init(protoBytes: data, disableDummyPrefix: disableDummyPrefix, path: path)
    }

    private static func byteValue(_ piece: String) -> UInt8? {
        guard piece.utf8.count == 6, piece.hasPrefix("<0x"), piece.hasSuffix(">") else { return nil }
        return UInt8(piece.dropFirst(3).dropLast(), radix: 16)
    }

    /// Encodes UTF-8 text with the model's own normalizer (no BOS/EOS), as libsentencepiece's
    /// `Encode`: an unknown piece becomes its `<0xNN>` byte pieces when the model has byte
    /// fallback, and a run of unknown pieces is one unknown id otherwise.
    package func encode(_ text: String) throws -> [Int32] {
        encode(text, addDummyPrefix: addsDummyPrefix)
    }

    /// Encodes like ``encode(_:)`` with `add_dummy_prefix` set to `addDummyPrefix` instead of
    /// the model's own setting (HF's non-legacy rule turns it off after the start of the text).
    package func encode(_ text: String, addDummyPrefix: Bool) -> [Int32] {
        var text = text
        var normalized: [UInt8] = []
        text.withUTF8 { normalizer.normalize($0, addDummyPrefix: addDummyPrefix, into: &normalized) }
        var pieces: [EncodedPiece] = []
        var ids: [Int32] = []
        normalized.withUnsafeBufferPointer { bytes in
            if let unigram { unigram.encode(bytes, into: &pieces) } else { bpe?.encode(bytes, into: &pieces) }
            ids.reserveCapacity(pieces.count)
            var previousIsUnknown = false
            for piece in pieces {
                let isControl = piece.id >= 0 && kinds[Int(piece.id)] == .control
                if isControl {
                    ids.append(piece.id)
                    previousIsUnknown = false
                    continue
                }
                let isUnknown = piece.id == vocabulary.unknownID || (piece.id >= 0 && kinds[Int(piece.id)] == .unknown)
                if isUnknown && byteFallback {
                    for k in Int(piece.start)..<Int(piece.end) {
                        let id = byteIDs[Int(bytes[k])]
                        ids.append(id >= 0 ? id : vocabulary.unknownID)
                    }
                } else if !(isUnknown && previousIsUnknown) {
                    ids.append(piece.id)
                }
                previousIsUnknown = isUnknown
            }
        }
        return ids
    }

    /// Looks up a piece string's id (CONTROL, UNKNOWN and BYTE pieces first, as libsentencepiece).
    package func id(ofPiece piece: String) -> Int32? {
        var piece = piece
        return piece.withUTF8 { vocabulary.reserved.lookup($0) ?? vocabulary.pieces.lookup($0) }
    }
}
