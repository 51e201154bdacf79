import Foundation
import HearthTestSupport
import Testing

@testable import HearthTokenizers

/// Hearth's Swift SentencePiece against libsentencepiece: the ids the PyPI `sentencepiece`
/// package wrote for the large multilingual text (every build), and libsentencepiece itself on
/// the same texts (builds with the `SystemLibraries` trait).
@Suite struct SentencePieceReferenceTests {
    static let cases = Result { try SentencePieceCases.load() }

    @Test func fixtureCoversEveryModelKind() throws {
        let cases = try Self.cases.get()
        #expect(cases.models.count >= 6)
        #expect(cases.models.values.contains { $0.wholeText != nil })
        #expect(cases.cases.count >= 700)
        #expect(cases.wholeText.utf8.count > 100_000)
        var algorithms = Set<SentencePieceModel.Algorithm>()
        var kinds = Set<SentencePieceModel.PieceKind>()
        for model in cases.models.values {
            let loaded = try SentencePieceModel(path: cases.path(of: model))
            algorithms.insert(loaded.algorithm)
            kinds.formUnion(loaded.kinds)
        }
        #expect(algorithms == [.unigram, .bpe])
        #expect(kinds == [.normal, .unknown, .control, .userDefined, .unused, .byte])
    }

    @Test(arguments: try SentencePieceCases.load().models.keys.sorted())
    func idsEqualSentencePiece(_ name: String) throws {
        let cases = try Self.cases.get()
        let reference = try #require(cases.models[name])
        let model = try SentencePieceModel(path: cases.path(of: reference))
        #expect(model.vocabularySize == reference.pieces)
        #expect([model.bosID, model.eosID, model.unkID, model.padID] == [reference.bos, reference.eos, reference.unk, reference.pad])
        var mismatches = 0
        for (k, text) in cases.cases.enumerated() {
            let ids = model.encode(text, addDummyPrefix: model.addsDummyPrefix)
            let plain = ids == reference.ids[k]
            let noPrefix = k >= reference.idsWithoutDummyPrefix.count
                || model.encode(text, addDummyPrefix: false) == reference.idsWithoutDummyPrefix[k]
            if !plain || !noPrefix {
                mismatches += 1
                if mismatches <= 5 {
                    Issue.record("\(name) case \(k) (dummy prefix \(plain ? "ok" : "differs"), without \(noPrefix ? "ok" : "differs")): \(text.debugDescription)")
                }
            }
        }
        #expect(mismatches == 0, "\(name): \(mismatches) of \(cases.cases.count) cases differ")
        if let whole = reference.wholeText { #expect(try model.encode(cases.wholeText) == whole) }
    }

    @Test func disableDummyPrefixEqualsEncodingWithoutIt() throws {
        let cases = try Self.cases.get()
        let reference = try #require(cases.models["unigram-nmt"])
        let model = try SentencePieceModel(path: cases.path(of: reference), disableDummyPrefix: true)
        #expect(!model.addsDummyPrefix)
        for (k, ids) in reference.idsWithoutDummyPrefix.enumerated() {
            #expect(try model.encode(cases.cases[k]) == ids)
        }
    }

    #if SystemLibraries && os(Linux)
    /// The texts of every tokenizer fixture, for libsentencepiece to encode here.
    static func allTexts() throws -> [String] {
        var texts = try Self.cases.get().cases
        texts.append(try Self.cases.get().wholeText)
        texts += try TokenizerCases.load().cases.map(\.text)
        texts += try TokenizerJSONCases.load().tokenizers.values.flatMap { $0.cases.map(\.text) }
        return texts
    }

    /// libsentencepiece as this machine has it. Its release decides near-ties of the unigram
    /// search (``SentencePieceCompatibility``): the Swift model must equal it on every text in
    /// one of its two modes (`.current` is what the committed 0.2.3 ids hold it to).
    @Test(arguments: try SentencePieceCases.load().models.keys.sorted())
    func idsEqualLibSentencePiece(_ name: String) throws {
        let cases = try Self.cases.get()
        let reference = try #require(cases.models[name])
        let data = try Data(contentsOf: URL(fileURLWithPath: cases.path(of: reference)))
        let system = try SystemSentencePieceModel(protoBytes: data)
        let systemWithoutPrefix = try SystemSentencePieceModel(protoBytes: data, disableDummyPrefix: true)
        let texts = try Self.allTexts()
        var mismatches: [SentencePieceCompatibility: Int] = [:]
        var examples: [String] = []
        for mode in [SentencePieceCompatibility.current, .legacy] {
            let model = try SentencePieceModel(protoBytes: data, disableDummyPrefix: false, path: nil, compatibility: mode)
            #expect(model.vocabularySize == system.vocabularySize)
            #expect([model.bosID, model.eosID, model.unkID, model.padID] == [system.bosID, system.eosID, system.unkID, system.padID])
            var count = 0
            for text in texts {
                let same = try model.encode(text) == system.encode(text)
                    && model.encode(text, addDummyPrefix: false) == systemWithoutPrefix.encode(text)
                if !same {
                    count += 1
                    if examples.count < 3 { examples.append("\(mode): \(text.debugDescription)") }
                }
            }
            mismatches[mode] = count
            if count == 0 { break }
        }
        #expect(mismatches.values.contains(0), "\(name): texts that differ per mode \(mismatches) of \(texts.count); \(examples)")
    }
    #endif
}

/// A damaged tokenizer.model is a typed error, never a crash, and the checks libsentencepiece
/// makes when it loads a model are made.
@Suite struct SentencePieceBadInputTests {
    static let modelPath = Fixtures.directory.appendingPathComponent("sentencepiece/unigram-nmt.model").path

    @Test func truncatedAndCorruptedFilesAreTypedErrors() throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.modelPath)))
        var generator = SplitMix64(seed: 7)
        var rejected = 0
        var variants: [[UInt8]] = []
        for _ in 0..<150 { variants.append(Array(bytes.prefix(Int(generator.next() % UInt64(bytes.count))))) }
        for _ in 0..<150 {
            var damaged = bytes
            for _ in 0..<4 { damaged[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next()) }
            variants.append(damaged)
        }
        for variant in variants {
            do {
                let model = try SentencePieceModel(protoBytes: Data(variant))
                // What loads must encode without trapping.
                _ = try model.encode("Hello wörld ＡＢＣ 龘 <tag> 😀")
            } catch let error as TokenizerError {
                #expect(error.code == .invalidModel || error.code == .unsupported)
                rejected += 1
            }
        }
        #expect(rejected > 150)
    }

    /// A ModelProto written field by field.
    static func proto(pieces: [(String, Float, Int)], trainer: [UInt8] = [], normalizer: [UInt8]? = nil) -> Data {
        let varint = ProtobufWire.varint
        func field(_ number: UInt64, _ payload: [UInt8]) -> [UInt8] { varint(number << 3 | 2) + varint(UInt64(payload.count)) + payload }
        var out: [UInt8] = []
        for (piece, score, type) in pieces {
            let body = field(1, Array(piece.utf8)) + [0x15] + withUnsafeBytes(of: score.bitPattern.littleEndian, Array.init)
                + [0x18] + varint(UInt64(type))
            out += field(1, body)
        }
        out += field(2, trainer)
        if let normalizer { out += field(3, normalizer) }
        return Data(out)
    }

    @Test func modelChecksAreTheOnesLibSentencePieceMakes() throws {
        let base: [(String, Float, Int)] = [("<unk>", 0, 2), ("<s>", 0, 3), ("a", -1, 1), ("b", -2, 1), ("ab", -0.5, 1)]
        #expect(throws: Never.self) { try SentencePieceModel(protoBytes: Self.proto(pieces: base)) }
        #if SystemLibraries && os(Linux)
        let model = try SentencePieceModel(protoBytes: Self.proto(pieces: base))
        let system = try SystemSentencePieceModel(protoBytes: Self.proto(pieces: base))
        for text in ["ab ba", "aab", "c", "  b a  ", "abcab"] { #expect(try model.encode(text) == system.encode(text)) }
        #expect([model.bosID, model.eosID, model.unkID, model.padID] == [system.bosID, system.eosID, system.unkID, system.padID])
        #endif

        func rejects(_ pieces: [(String, Float, Int)], trainer: [UInt8] = [], _ fragment: String, sentencepieceToo: Bool = true) {
            #expect {
                try SentencePieceModel(protoBytes: Self.proto(pieces: pieces, trainer: trainer))
            } throws: { error in
                (error as? TokenizerError)?.message.contains(fragment) == true
            }
            #if SystemLibraries && os(Linux)
            if sentencepieceToo {
                #expect(throws: TokenizerError.self) {
                    try SystemSentencePieceModel(protoBytes: Self.proto(pieces: pieces, trainer: trainer))
                }
            }
            #endif
        }
        rejects(base + [("a", -3, 1)], "already defined")
        rejects(Array(base.dropFirst()), "unk is not defined")
        rejects(base + [("<unk2>", 0, 2)], "unk is already defined")
        rejects(base + [("", 0, 1)], "empty")
        rejects(base + [("<0x41>", 0, 6)], "byte_fallback")
        rejects(base + [("<0x41>", 0, 6)], trainer: [0x98, 0x02, 0x01], "256 byte pieces")  // byte_fallback: true
        rejects(base, trainer: [0x18, 0x03], "word", sentencepieceToo: false)  // model_type: WORD (libsentencepiece has it)
        // A precompiled map whose trie runs past the blob.
        #expect(throws: TokenizerError.self) {
            try SentencePieceModel(protoBytes: Self.proto(pieces: base, normalizer: [0x12, 0x05, 0xff, 0xff, 0, 0, 1]))
        }
    }

    @Test func notAProtobufIsATypedError() {
        #expect(throws: TokenizerError.self) { try SentencePieceModel(protoBytes: Data("this is not a protobuf".utf8)) }
        #expect(throws: TokenizerError.self) { try SentencePieceModel(protoBytes: Data()) }
    }
}
