import Foundation
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// Qwen2/2.5 and Qwen3 from safetensors (Tests/Fixtures/qwen2-tiny and qwen3-tiny, made by
/// scripts/make_family_fixtures.py: BF16 weights, random-id prompts, chats rendered by their own
/// templates). Their logits, greedy continuations and chat prompts against transformers are
/// `GoldenTests` (both are in `Fixtures.familyCheckpoints` and `chatCheckpoints`); here is what
/// is Qwen's own.
@Suite struct QwenFamilyTests {
    /// What each family reads from its config: Qwen2's q/k/v biases and separate head; Qwen3's
    /// q/k norms, head size wider than hidden / heads, tied head; both stop on <|im_end|>.
    @Test func familiesReadTheirShapes() throws {
        let qwen2 = try TransformerModel(path: Fixtures.checkpoint("qwen2-tiny").path)
        #expect(qwen2.architecture == "Qwen2ForCausalLM")
        #expect(!qwen2.options.qkNorm && !qwen2.options.tiedEmbeddings)
        #expect(qwen2.options.headCount == 4 && qwen2.options.kvHeadCount == 1 && qwen2.options.headDim == 16)
        #expect(qwen2.options.rope.theta == 1_000_000 && qwen2.options.slidingWindow == nil)
        #expect(qwen2.weights.layers.allSatisfy { $0.qkvBias?.count == qwen2.options.qkvWidth && $0.attnOutputBias == nil })
        let qwen3 = try TransformerModel(path: Fixtures.checkpoint("qwen3-tiny").path)
        #expect(qwen3.architecture == "Qwen3ForCausalLM")
        #expect(qwen3.options.qkNorm && qwen3.options.tiedEmbeddings)
        #expect(qwen3.options.headDim == 32 && qwen3.options.headCount * qwen3.options.headDim == 2 * qwen3.options.hiddenSize)
        #expect(qwen3.weights.layers.allSatisfy { $0.qkvBias == nil && $0.qNorm?.count == 32 && $0.kNorm?.count == 32 })
        for model in [qwen2, qwen3] {
            #expect(model.eosIDs == [640, 642])  // <|endoftext|>, <|im_end|>
            #expect(!model.tokenizer.addsBOS)
            #expect(model.tokenizer.kind.contains("qwen2"), "\(model.tokenizer.kind)")
        }
    }

    /// Qwen3 reasons in `<think>` blocks (tokens of its vocabulary); its template's generation
    /// prompt leaves the block to the model. Qwen2.5 has no such tokens and does not reason.
    @Test func qwen3ReasonsAndQwen2DoesNot() throws {
        let qwen3 = try TransformerModel(path: Fixtures.checkpoint("qwen3-tiny").path)
        let format = try #require(ReasoningFormat(tokenizer: qwen3.tokenizer))
        #expect(format.open == "<think>" && format.close == "</think>")
        #expect(format.openID == 664 && format.closeID == 665)
        let prompt = try #require(try qwen3.chatTemplate?.render([ChatTurn(role: "user", content: "Hi")], addGenerationPrompt: true))
        #expect(prompt == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
        #expect(!format.promptOpens(prompt))
        let qwen2 = try TransformerModel(path: Fixtures.checkpoint("qwen2-tiny").path)
        #expect(ReasoningFormat(tokenizer: qwen2.tokenizer) == nil)
    }

    /// `use_sliding_window` turns the window on for the layers from `max_window_layers` on, as
    /// transformers' Qwen2Config does; off (the released configs), `sliding_window` is ignored.
    @Test func slidingWindowFollowsUseSlidingWindow() throws {
        func options(_ edit: (inout [String: Any]) -> Void) throws -> DecoderOptions {
            let url = Fixtures.checkpoint("qwen2-tiny").appendingPathComponent("config.json")
            var object = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            object.removeValue(forKey: "layer_types")
            edit(&object)
            let data = try JSONSerialization.data(withJSONObject: object)
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("qwen-config-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("config.json")
            try data.write(to: file)
            return try Qwen2Family.options(from: HFConfig.load(from: file))
        }
        let off = try options { $0["sliding_window"] = 8 }
        #expect(off.slidingWindow == nil && !off.isSliding(0) && !off.isSliding(1))
        let on = try options {
            $0["use_sliding_window"] = true
            $0["sliding_window"] = 8
            $0["max_window_layers"] = 1
        }
        #expect(on.slidingWindow == 8 && !on.isSliding(0) && on.isSliding(1))
        do {
            _ = try options { $0["rope_parameters"] = ["rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6] }
            Issue.record("a YaRN rope_scaling loaded")
        } catch let error as FormatError {
            #expect(error.key == "rope_scaling")
        }
    }
}
