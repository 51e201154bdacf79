import Foundation
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// The default model's SentencePiece-style vocabulary (Gemma 3 270M GGUF, 262,144 pieces,
/// `VocabularyTokenizer`) against HF `tokenizers` on 50 KB of prose and eight scripts, the
/// prose as one 60 KB run (encoded in chunks), edge cases and 300 random strings of pieces (Tests/Fixtures/gemma3-270m-tokens.json, made by
/// scripts/make_gemma_tokenizer_fixture.py and checked there against llama.cpp's /tokenize).
enum DefaultVocabulary {
    static let model = Fixtures.root.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path
    static var available: Bool { FileManager.default.fileExists(atPath: model) }
}

@Suite(.enabled(if: DefaultVocabulary.available, "the default model is not installed"))
struct GemmaVocabularyTokenizerTests {
    static let model = DefaultVocabulary.model

    struct Fixture: Decodable {
        struct Case: Decodable {
            let name: String
            let text: String?
            let ids: [Int32]
        }

        let cases: [Case]
    }

    static func load() throws -> (VocabularyTokenizer, [(name: String, text: String, ids: [Int32])]) {
        let tokenizer = try #require(try GGUFTokenizer.make(try GGUFFile(path: model)) as? VocabularyTokenizer)
        let fixture = try JSONDecoder().decode(
            Fixture.self, from: Data(contentsOf: Fixtures.directory.appendingPathComponent("gemma3-270m-tokens.json")))
        let cases = try fixture.cases.map { c in
            let text = try c.text ?? String(contentsOf: Fixtures.directory.appendingPathComponent(c.name), encoding: .utf8)
            return (c.name, text, c.ids)
        }
        return (tokenizer, cases)
    }

    @Test func idsEqualHFTokenizers() throws {
        let (tokenizer, cases) = try Self.load()
        #expect(cases.count == 304)
        for c in cases {
            let ids = try tokenizer.encode(c.text, addSpecialTokens: false)
            #expect(ids == c.ids, "\(c.name): first difference at \(zip(ids, c.ids).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(ids.count, c.ids.count))")
        }
    }

    /// All the texts as one (a 50 KB text of many runs), and the limited encoding: the whole
    /// answer at or above its length, nil below it.
    @Test func limitedEncodingIsExact() throws {
        let (tokenizer, cases) = try Self.load()
        let text = cases.map(\.text).joined()
        let ids = try tokenizer.encode(text, addSpecialTokens: false)
        #expect(ids.count > 15_000)
        for limit in [0, 1, 100, ids.count / 2, ids.count - 1] {
            #expect(try tokenizer.encode(text, addSpecialTokens: false, limit: limit) == nil, "limit \(limit)")
        }
        #expect(try tokenizer.encode(text, addSpecialTokens: false, limit: ids.count) == ids)
        #expect(try tokenizer.encode(text, addSpecialTokens: false, limit: .max) == ids)
        // One long run stops after the chunk that passes the limit, exactly.
        let run = try #require(cases.first { $0.name == "one-run" })
        for limit in [10, 3000, run.ids.count - 1] {
            #expect(try tokenizer.encode(run.text, addSpecialTokens: false, limit: limit) == nil, "limit \(limit)")
        }
        #expect(try tokenizer.encode(run.text, addSpecialTokens: false, limit: run.ids.count) == run.ids)
        // With BOS (and control tokens in the text left as text).
        let withBOS = try tokenizer.encode(text, addSpecialTokens: true)
        #expect(withBOS.first == tokenizer.bosID && withBOS.count > ids.count)
        #expect(try tokenizer.encode(text, addSpecialTokens: true, limit: withBOS.count - 1) == nil)
        #expect(try tokenizer.encode(text, addSpecialTokens: true, limit: withBOS.count) == withBOS)
    }
}
