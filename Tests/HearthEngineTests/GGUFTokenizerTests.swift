import Foundation
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// GGUF `gpt2` (byte-level BPE) vocabularies against llama.cpp and HF tokenizers
/// (Tests/Fixtures/gguf/tokenizers, made by scripts/make_gguf_fixtures.py).
@Suite struct GGUFTokenizerTests {
    struct Cases: Decodable {
        struct Case: Decodable {
            let text: String
            let hf: [Int32]
            let llama_cpp_special: [Int32]
            let llama_cpp_plain: [Int32]
        }

        struct File: Decodable {
            let tokenizer: String
            let pre: String
            let tokens: Int
            let bos: Int32?
            let eos: Int32?
            let cases: [Case]
        }

        let generator: String
        let files: [String: File]
    }

    static let directory = Fixtures.directory.appendingPathComponent("gguf/tokenizers")
    static let fileNames = ["phi2-gpt2.gguf", "phi2-default.gguf", "phi4-mini-o200k.gguf", "llama3-bpe.gguf"]

    static func cases() throws -> Cases {
        try JSONDecoder().decode(Cases.self, from: Data(contentsOf: directory.appendingPathComponent("cases.json")))
    }

    static func tokenizer(_ name: String) throws -> BPETokenizer {
        let tokenizer = try GGUFTokenizer.make(try GGUFFile(path: directory.appendingPathComponent(name).path))
        return try #require(tokenizer as? BPETokenizer)
    }

    /// llama.cpp's `tokenize(add_bos: false, special: true/false)` on the same file.
    @Test(arguments: fileNames)
    func idsEqualLlamaCpp(_ name: String) throws {
        let file = try #require(try Self.cases().files[name])
        let tokenizer = try Self.tokenizer(name)
        #expect(tokenizer.vocabularySize == file.tokens)
        #expect(tokenizer.kind.contains("gguf gpt2, pre \(file.pre)"))
        var agreeWithHF = 0, checked = 0
        for c in file.cases {
            let special = try tokenizer.encode(c.text, addSpecialTokens: false, parseSpecial: true)
            let plain = try tokenizer.encode(c.text, addSpecialTokens: false, parseSpecial: false)
            if file.pre == "gpt-4o" && c.llama_cpp_special != c.hf {
                // llama.cpp rewrites the o200k regex without \p{M} in its letter classes (its
                // "adapted" pattern), so marks split differently from the real tokenizer; Hearth
                // keeps the tokenizer's own pattern and matches tokenizers here.
                #expect(special == c.hf, "\(name): \(c.text.debugDescription)")
                continue
            }
            checked += 1
            #expect(special == c.llama_cpp_special, "\(name) special: \(c.text.debugDescription)")
            #expect(plain == c.llama_cpp_plain, "\(name) plain: \(c.text.debugDescription)")
            if special == c.hf { agreeWithHF += 1 }
        }
        #expect(checked >= file.cases.count - 1)
        // Apart from llama.cpp's "default" regexes, these are the tokenizer.json's own ids.
        if file.pre != "default" { #expect(agreeWithHF == checked) }
    }

    @Test func specialTokensAndDefaults() throws {
        let phi2 = try Self.tokenizer("phi2-gpt2.gguf")
        #expect(!phi2.addsBOS)
        #expect(phi2.bosID == 960 && phi2.eosIDs.contains(960))
        #expect(phi2.isSpecial(960))
        // User-defined whitespace tokens decode as written; control tokens are skipped for display.
        let fourSpaces = try #require(phi2.id(of: "    "))
        #expect(!phi2.isSpecial(fourSpaces))
        #expect(phi2.decode([fourSpaces, 960]) == "    ")
        #expect(phi2.decode([960], skipSpecialTokens: false) == "<|endoftext|>")

        // llama-bpe: BOS added by default, as llama.cpp does for Llama 3 vocabularies.
        let llama3 = try Self.tokenizer("llama3-bpe.gguf")
        #expect(llama3.addsBOS)
        let ids = try llama3.encode("Hello", addSpecialTokens: true)
        #expect(ids.first == llama3.bosID)

        let phi4 = try Self.tokenizer("phi4-mini-o200k.gguf")
        #expect(phi4.chatTemplate?.format == .phi4Mini)
        #expect(phi4.eosIDs.contains(try #require(phi4.id(of: "<|end|>"))))
    }

    @Test func decodingRoundTrips() throws {
        for name in Self.fileNames {
            let tokenizer = try Self.tokenizer(name)
            for c in try #require(try Self.cases().files[name]).cases where !c.text.contains("<|") {
                let ids = try tokenizer.encode(c.text, addSpecialTokens: false)
                #expect(tokenizer.decode(ids) == c.text, "\(name): \(c.text.debugDescription)")
            }
        }
    }

    @Test func unknownPreTokenizerIsATypedError() throws {
        let source = Self.directory.appendingPathComponent("phi2-gpt2.gguf")
        var bytes = [UInt8](try Data(contentsOf: source))
        // Rename the `pre` value "phi-2" to "phi-9" in place.
        let needle = Array("phi-2".utf8)
        let at = try #require((0...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) })
        bytes[at + 4] = UInt8(ascii: "9")
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-test-\(UUID().uuidString).gguf")
        try Data(bytes).write(to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }
        do {
            _ = try GGUFTokenizer.make(try GGUFFile(path: copy.path))
            Issue.record("an unknown pre-tokenizer was accepted")
        } catch let error as FormatError {
            #expect(error.key == "tokenizer.ggml.pre")
            #expect(error.message.contains("phi-9"))
        }
    }
}
