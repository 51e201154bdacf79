import Foundation
import HearthTestSupport
import Testing

@testable import HearthTokenizers

/// Qwen2/2.5 and Qwen3 tokenizer.json files (NFC, the `qwen2` split, byte-level BPE, no BOS)
/// against HF `tokenizers` on the multilingual cases of Tests/Fixtures/tokenizers/cases.json
/// (scripts/make_tokenizer_fixtures.py: qwen2-bpe and qwen3-bpe, and the `qwen2` split cases).
@Suite struct QwenTokenizerTests {
    static let names = ["qwen2-bpe", "qwen3-bpe"]

    static func fixture() throws -> TokenizerJSONCases { try TokenizerJSONCases.load() }

    @Test(arguments: names)
    func idsAndDecodingEqualTokenizers(_ name: String) throws {
        let cases = try Self.fixture()
        let entry = try #require(cases.tokenizers[name])
        let tokenizer = try BPETokenizer(directory: try cases.directory(name))
        #expect(tokenizer.vocabularySize == entry.vocab_size)
        #expect(tokenizer.kind.contains("qwen2 split"), "\(tokenizer.kind)")
        #expect(!tokenizer.addsBOS)
        #expect(entry.cases.count >= 80)
        for c in entry.cases {
            #expect(try tokenizer.encode(c.text, addSpecialTokens: true) == c.ids, "\(name): \(c.text.debugDescription)")
            #expect(
                try tokenizer.encode(c.text, addSpecialTokens: false) == c.ids_without_special,
                "\(name): \(c.text.debugDescription)")
            #expect(tokenizer.decode(c.ids, skipSpecialTokens: false) == c.decoded, "\(name): \(c.text.debugDescription)")
            #expect(
                tokenizer.decode(c.ids, skipSpecialTokens: true) == c.decoded_skipping_special,
                "\(name): \(c.text.debugDescription)")
        }
    }

    /// The hand-written scanner for Qwen2's regex (`\p{N}` one digit at a time) gives exactly
    /// the pieces of tokenizers' `Split(Regex, Isolated)`.
    @Test func qwen2PatternSplitsLikeOniguruma() throws {
        let split = try #require(try Self.fixture().splits["qwen2"])
        let pattern = try #require(KnownSplitPattern(regex: split.pattern))
        #expect(pattern == .cl100k(maxDigits: 1))
        #expect(split.cases.count > 100)
        for c in split.cases {
            let scalars = Array(c.text.unicodeScalars)
            let pieces = pattern.matches(in: scalars[...]).map { Normalizer.string(Array(scalars[$0])) }
            #expect(pieces == c.pieces, "qwen2: \(c.text.debugDescription)")
        }
    }

    /// Qwen2.5's and Qwen3's own templates (tokenizer_config.json) render and tokenize like
    /// transformers' `apply_chat_template`.
    @Test(arguments: names)
    func chatTemplateMatchesTransformers(_ name: String) throws {
        let cases = try Self.fixture()
        let entry = try #require(cases.tokenizers[name])
        let tokenizer = try BPETokenizer(directory: try cases.directory(name))
        let template = try #require(tokenizer.chatTemplate)
        #expect(entry.chat.count == 3)
        for chat in entry.chat {
            let messages = chat.messages.map { ChatTurn(role: $0.role, content: $0.content) }
            let rendered = try template.render(messages, addGenerationPrompt: true)
            #expect(rendered == chat.text)
            #expect(try tokenizer.encode(rendered, addSpecialTokens: false) == chat.input_ids)
        }
    }
}
