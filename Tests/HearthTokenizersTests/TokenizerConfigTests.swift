import Foundation
import HearthTokenizers
import Testing

/// `tokenizer_config.json` is read with `JSONDecoder`, which keeps `true` and `1` apart
/// (`JSONSerialization`'s NSNumbers do not on Linux).
@Suite struct TokenizerConfigTests {
    func parse(_ json: String, added: String? = nil) throws -> TokenizerConfig {
        try TokenizerConfig.parse(
            files: TokenizerFiles(
                sentencePieceModel: nil, config: Data(json.utf8), addedTokens: added.map { Data($0.utf8) }, origin: "/t"))
    }

    @Test func booleansAreBooleansNotNumbers() throws {
        #expect(try parse(#"{"add_bos_token": true, "add_eos_token": false}"#).addBOSToken == true)
        #expect(try parse(#"{"add_bos_token": 1}"#).addBOSToken == nil)
        #expect(try parse(#"{"add_bos_token": 0, "legacy": "no"}"#).addBOSToken == nil)
        #expect(try parse(#"{"add_eos_token": false}"#).addEOSToken == false)
    }

    @Test func readsTokensTemplatesAndAddedTokens() throws {
        let config = try parse(
            #"""
            {"bos_token": {"content": "<s>"}, "eos_token": "</s>", "model_max_length": 1e30,
             "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}],
             "added_tokens_decoder": {"5": {"content": "<x>", "special": false}}, "unrelated": [1, {"a": null}]}
            """#, added: #"{"<y>": 6}"#)
        #expect(config.bosToken == "<s>" && config.eosToken == "</s>")
        #expect(config.modelMaxLength == nil)
        #expect(config.chatTemplate == "D")
        #expect(config.addedTokens.map(\.content) == ["<x>", "<y>"])
        #expect(config.addedTokens.first?.special == false)
        #expect(throws: TokenizerError.self) { try parse(#"{"added_tokens_decoder": {"x": {"content": "a"}}}"#) }
        #expect(throws: TokenizerError.self) { try parse("[1, 2]") }
        #expect(throws: TokenizerError.self) { try parse("{}", added: #"{"<y>": "six"}"#) }
    }
}
