import Foundation
import HearthTestSupport
import Testing

@testable import HearthTokenizers

@Suite struct SentencePieceTests {
    static let directory = Fixtures.checkpoint("phi3-mha")

    @Test func rawIdsEqualSentencePiece() throws {
        let model = try SentencePieceModel(path: Self.directory.appendingPathComponent("tokenizer.model").path)
        let cases = try TokenizerCases.load()
        #expect(cases.cases.count >= 40)
        for c in cases.cases {
            #expect(try model.encode(c.text) == c.sp_ids, "text: \(c.text.debugDescription)")
        }
    }

    @Test func idsEqualTransformers() throws {
        let tokenizer = try SentencePieceTokenizer(directory: Self.directory)
        for c in try TokenizerCases.load().cases {
            #expect(try tokenizer.encode(c.text, addSpecialTokens: true) == c.hf_ids, "text: \(c.text.debugDescription)")
        }
    }

    @Test func decodeEqualsSentencePiece() throws {
        let tokenizer = try SentencePieceTokenizer(directory: Self.directory)
        for c in try TokenizerCases.load().cases {
            // sentencepiece's decode drops the dummy-prefix space at the start.
            var detokenizer = StreamingDetokenizer(tokenizer: tokenizer, stripLeadingSpace: true)
            var text = ""
            for id in c.sp_ids { text += detokenizer.push(id) }
            text += detokenizer.flush()
            #expect(text == c.decoded, "text: \(c.text.debugDescription)")
        }
    }

    @Test func streamingNeverEmitsBrokenCharacters() throws {
        let tokenizer = try SentencePieceTokenizer(directory: Self.directory)
        let text = "龘 and 😀 mixed with 中文"
        let ids = try tokenizer.model.encode(text)
        // The rare character and the emoji fall back to several byte tokens.
        #expect(ids.contains { tokenizer.model.kinds[Int($0)] == .byte })
        var detokenizer = StreamingDetokenizer(tokenizer: tokenizer, stripLeadingSpace: true)
        var pieces: [String] = []
        for id in ids { pieces.append(detokenizer.push(id)) }
        pieces.append(detokenizer.flush())
        #expect(pieces.joined() == text)
        #expect(!pieces.joined().contains("\u{FFFD}"))
        #expect(pieces.filter { $0.contains("龘") }.count == 1)
        #expect(pieces.filter { $0.contains("😀") }.count == 1)
    }

    @Test func chatTemplateMatchesTransformers() throws {
        for name in Fixtures.phi3Checkpoints {
            let tokenizer = try SentencePieceTokenizer(directory: Fixtures.checkpoint(name))
            let template = try #require(tokenizer.chatTemplate)
            #expect(template.format == .phi3)
            for chat in try Fixtures.reference(name).chat {
                let messages = chat.messages.map { ChatTurn(role: $0.role, content: $0.content) }
                let rendered = try template.render(messages, addGenerationPrompt: true)
                #expect(rendered == chat.text)
                #expect(try tokenizer.encode(rendered, addSpecialTokens: false) == chat.input_ids)
            }
        }
    }

    @Test func specialTokensAndStopTokens() throws {
        let tokenizer = try SentencePieceTokenizer(directory: Self.directory)
        #expect(tokenizer.bosID == 1)
        #expect(tokenizer.addsBOS)
        #expect(tokenizer.id(of: "<|end|>") == 1007)
        #expect(tokenizer.id(of: "<|user|>") == 1010)
        #expect(tokenizer.isSpecial(1007))
        #expect(tokenizer.eosIDs.contains(1000))
        #expect(tokenizer.decode([1010, 1007]) == "")
    }

    @Test func corruptModelIsATypedError() throws {
        let junk = Data("this is not a protobuf".utf8)
        #expect(throws: TokenizerError.self) { try SentencePieceModel(protoBytes: junk) }
        #expect(throws: TokenizerError.self) { try SentencePieceModel(protoBytes: Data()) }
    }
}
