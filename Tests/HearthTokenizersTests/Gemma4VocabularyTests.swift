import Testing

@testable import HearthTokenizers

/// The rules of llama.cpp's `gemma4` vocabularies (src/llama-vocab.cpp) that the converted
/// fixture's small vocabulary cannot show (its ids against llama.cpp are checked by
/// `Gemma4GGUFTests` in HearthEngineTests): a run of newlines that is itself a token is that
/// token, whatever the merges say; merges never cross a newline; and a piece the merges build
/// is looked up as `▁`-escaped UTF-8, missing characters falling back to `<0xNN>` bytes.
@Suite struct Gemma4VocabularyTests {
    static func tokenizer() throws -> BPETokenizer {
        var tokens = ["<unk>", "<bos>", "<eos>"]
        tokens += (0..<256).map { String(format: "<0x%02X>", $0) }
        // 259…: single characters, then what the merges make.
        tokens += ["\n", "a", "b", "\u{2581}", "ab", "\u{2581}a", "\n\n", "\n\n\n", "a\n"]
        let merges = ["a b", "\u{2581} a", "\n \n", "a \n"]
        let model = try BPEModelDefinition(tokens: tokens, merges: merges)
        return try BPETokenizer(
            gemma4Model: model, controlTokens: [0, 1, 2], userDefinedTokens: [], bos: 1, eos: 2, addBOS: true,
            addEOS: false, extraStopTokens: [], chatTemplate: nil)
    }

    static func id(_ t: BPETokenizer, _ token: String) throws -> Int32 { try #require(t.id(of: token)) }

    @Test func newlineRunsThatAreTokensStayWhole() throws {
        let t = try Self.tokenizer()
        // "\n\n\n" is a token: one id (the merges alone would give "\n\n" + "\n").
        #expect(try t.encode("\n\n\n", addSpecialTokens: false) == [try Self.id(t, "\n\n\n")])
        // Four newlines are not a token: merged by rank.
        #expect(try t.encode("\n\n\n\n", addSpecialTokens: false) == [try Self.id(t, "\n\n"), try Self.id(t, "\n\n")])
    }

    @Test func mergesDoNotCrossNewlinesAndSpacesAreEscaped() throws {
        let t = try Self.tokenizer()
        // "a\n" is a token and a merge, but "a" and "\n" fall in different runs.
        #expect(try t.encode("ab\n a", addSpecialTokens: true) == [1, try Self.id(t, "ab"), try Self.id(t, "\n"), try Self.id(t, "\u{2581}a")])
        // "é" (C3 A9) is not in the vocabulary: its bytes.
        #expect(try t.encode("é", addSpecialTokens: false) == [3 + 0xC3, 3 + 0xA9])
        #expect(t.decode(try t.encode("ab\n aé", addSpecialTokens: false), skipSpecialTokens: false) == "ab\n aé")
    }
}
