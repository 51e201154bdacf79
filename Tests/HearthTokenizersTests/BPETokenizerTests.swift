import Foundation
import HearthTestSupport
import Testing

@testable import HearthTokenizers

/// tokenizer.json tokenizers against HF `tokenizers` (Tests/Fixtures/tokenizers/cases.json,
/// made by scripts/make_tokenizer_fixtures.py).
@Suite struct BPETokenizerTests {
    static let cases: TokenizerJSONCases? = try? TokenizerJSONCases.load()

    static func fixture() throws -> TokenizerJSONCases { try #require(cases) }

    static func tokenizer(_ name: String) throws -> BPETokenizer {
        try BPETokenizer(directory: try fixture().directory(name))
    }

    @Test(arguments: TokenizerJSONCases.names)
    func idsEqualTokenizers(_ name: String) throws {
        let entry = try #require(try Self.fixture().tokenizers[name])
        let tokenizer = try Self.tokenizer(name)
        #expect(tokenizer.vocabularySize == entry.vocab_size)
        #expect(entry.cases.count >= 80)
        for c in entry.cases {
            #expect(try tokenizer.encode(c.text, addSpecialTokens: true) == c.ids, "\(name): \(c.text.debugDescription)")
            #expect(
                try tokenizer.encode(c.text, addSpecialTokens: false) == c.ids_without_special,
                "\(name): \(c.text.debugDescription)")
        }
    }

    @Test(arguments: TokenizerJSONCases.names)
    func tokensAreTheVocabularyEntries(_ name: String) throws {
        let entry = try #require(try Self.fixture().tokenizers[name])
        let tokenizer = try Self.tokenizer(name)
        for c in entry.cases {
            let ids = try tokenizer.encode(c.text, addSpecialTokens: false)
            let added = Set(tokenizer.definition?.addedTokens.map(\.id) ?? [])
            #expect(ids.count == c.tokens.count, "\(name): \(c.text.debugDescription)")
            for (id, expected) in zip(ids, c.tokens) {
                let token = tokenizer.token(id) ?? "?"
                // tokenizers reports an added token as the text it matched, stripped whitespace included.
                #expect(
                    added.contains(id) ? (expected.isEmpty || expected.contains(token)) : token == expected,
                    "\(name): \(c.text.debugDescription): \(token.debugDescription) vs \(expected.debugDescription)")
            }
        }
    }

    @Test(arguments: TokenizerJSONCases.names)
    func decodeEqualsTokenizers(_ name: String) throws {
        let entry = try #require(try Self.fixture().tokenizers[name])
        let tokenizer = try Self.tokenizer(name)
        for c in entry.cases {
            #expect(tokenizer.decode(c.ids, skipSpecialTokens: false) == c.decoded, "\(name): \(c.text.debugDescription)")
            #expect(
                tokenizer.decode(c.ids, skipSpecialTokens: true) == c.decoded_skipping_special,
                "\(name): \(c.text.debugDescription)")
        }
    }

    /// The hand-written scanners give exactly the pieces of tokenizers' `Split(Regex, Isolated)`.
    @Test(arguments: ["gpt2", "llama3", "o200k"])
    func knownPatternsSplitLikeOniguruma(_ name: String) throws {
        let split = try #require(try Self.fixture().splits[name])
        let pattern = try #require(KnownSplitPattern(regex: split.pattern))
        #expect(split.cases.count > 100)
        for c in split.cases {
            let scalars = Array(c.text.unicodeScalars)
            let pieces = pattern.matches(in: scalars[...]).map { Normalizer.string(Array(scalars[$0])) }
            #expect(pieces == c.pieces, "\(name): \(c.text.debugDescription)")
        }
    }

    /// Swift `Regex` (the fallback for unknown patterns) mostly agrees with the scanners on the same texts.
    @Test func regexFallbackRunsTheKnownPatterns() throws {
        let split = try #require(try Self.fixture().splits["llama3"])
        let regex = try RegexMatcher(split.pattern, path: nil, key: "test")
        var equal = 0
        for c in split.cases {
            let scalars = Array(c.text.unicodeScalars)
            let pieces = regex.matches(in: scalars[...]).map { Normalizer.string(Array(scalars[$0])) }
            if pieces == c.pieces { equal += 1 }
        }
        #expect(equal >= split.cases.count * 9 / 10, "\(equal) of \(split.cases.count)")
    }

    @Test(arguments: ["o200k-bpe", "phi3-mha"])
    func chatTemplateMatchesTransformers(_ name: String) throws {
        let entry = try #require(try Self.fixture().tokenizers[name])
        let tokenizer = try Self.tokenizer(name)
        let template = try #require(tokenizer.chatTemplate)
        #expect(template.format == (name == "o200k-bpe" ? .phi4Mini : .phi3))
        #expect(entry.chat.count == 3)
        for chat in entry.chat {
            let messages = chat.messages.map { ChatTurn(role: $0.role, content: $0.content) }
            let rendered = try template.render(messages, addGenerationPrompt: true)
            #expect(rendered == chat.text)
            #expect(try tokenizer.encode(rendered, addSpecialTokens: false) == chat.input_ids)
        }
    }

    @Test func kindAndSpecialTokens() throws {
        let o200k = try Self.tokenizer("o200k-bpe")
        #expect(o200k.kind.hasPrefix("bpe-byte-level"))
        #expect(o200k.kind.contains("o200k"))
        #expect(!o200k.addsBOS)
        let end = try #require(o200k.id(of: "<|end|>"))
        #expect(o200k.isSpecial(end))
        #expect(o200k.eosIDs == [try #require(o200k.id(of: "<|endoftext|>"))])
        #expect(o200k.decode([end]) == "")

        let llama3 = try Self.tokenizer("llama3-bpe")
        #expect(llama3.addsBOS)
        #expect(llama3.bosID == llama3.id(of: "<|begin_of_text|>"))

        let phi3 = try Self.tokenizer("phi3-mha")
        #expect(phi3.kind.hasPrefix("bpe, byte fallback"))
        #expect(phi3.decoderStripsLeadingSpace)
        #expect(phi3.bosID == 1 && phi3.addsBOS)

        // Phi-2's whitespace runs are added tokens, but not special ones: they decode as text.
        let gpt2 = try Self.tokenizer("gpt2-bpe")
        let fourSpaces = try #require(gpt2.id(of: "    "))
        #expect(!gpt2.isSpecial(fourSpaces))
        #expect(gpt2.decode([fourSpaces]) == "    ")
    }

    /// Byte-level tokens split characters; the detokenizer holds partial UTF-8 back.
    @Test func streamingNeverEmitsBrokenCharacters() throws {
        let tokenizer = try Self.tokenizer("o200k-bpe")
        let text = "龘 and 👩🏽‍🚀 mixed with 中文"
        let ids = try tokenizer.encode(text, addSpecialTokens: false)
        #expect(ids.contains { (tokenizer.bytes(of: $0) ?? []).contains { $0 >= 0x80 } })
        var detokenizer = StreamingDetokenizer(tokenizer: tokenizer)
        var pieces: [String] = []
        for id in ids { pieces.append(detokenizer.push(id)) }
        pieces.append(detokenizer.flush())
        #expect(pieces.joined() == text)
        #expect(!pieces.contains { $0.contains("\u{FFFD}") })
    }

    /// Either file of a Phi-3 checkpoint gives the same ids.
    @Test func phi3SentencePieceAndTokenizerJSONAgree() throws {
        let directory = Fixtures.checkpoint("phi3-mha")
        let files = TokenizerFiles(directory: directory)
        let viaSentencePiece = try TokenizerLoader.load(files: files)
        let viaJSON = try TokenizerLoader.load(files: files, source: .tokenizerJSON)
        #expect(viaSentencePiece is SentencePieceTokenizer)
        #expect(viaJSON is BPETokenizer)
        var texts = try TokenizerCases.load().cases.map(\.text)
        texts += try #require(try Self.fixture().tokenizers["phi3-mha"]).cases.map(\.text)
        for text in texts {
            for special in [true, false] {
                #expect(
                    try viaSentencePiece.encode(text, addSpecialTokens: special)
                        == viaJSON.encode(text, addSpecialTokens: special), "\(text.debugDescription)")
            }
        }
        #expect(viaSentencePiece.bosID == viaJSON.bosID)
        #expect(viaSentencePiece.eosIDs == viaJSON.eosIDs)
        #expect(viaSentencePiece.chatTemplate == viaJSON.chatTemplate)
    }
}
