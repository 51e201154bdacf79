import Foundation
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// The forward pass against HF transformers' logits and greedy continuations
/// (Tests/Fixtures, made by scripts/make_reference_fixtures.py).
@Suite struct GoldenTests {
    /// Tolerance on the f32 path (weights in F32/F16/BF16 are upcast exactly).
    static let tolerance: Float = Fixtures.f32LogitTolerance

    @Test(arguments: Fixtures.allCheckpoints)
    func logitsMatchTransformers(_ name: String) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let reference = try Fixtures.reference(name)
        for batch in [1, 7, 64] {
            let generator = try Generator(model: model, context: 128, threads: 2, batch: batch, kvType: .f32)
            for prompt in reference.prompts {
                if !prompt.text.isEmpty {
                    #expect(try model.tokenizer.encode(prompt.text, addSpecialTokens: true) == prompt.input_ids)
                }
                let logits = try generator.logits(for: prompt.input_ids)
                let vocab = model.options.vocabSize
                var worst: Float = 0
                for (position, expected) in prompt.logits.enumerated() {
                    #expect(expected.count == vocab)
                    for (i, value) in expected.enumerated() {
                        worst = max(worst, abs(logits[position * vocab + i] - value))
                    }
                }
                #expect(worst <= Self.tolerance, "\(name)/\(prompt.name) batch \(batch): max |Δlogit| \(worst)")
            }
        }
    }

    /// The default f16 KV cache stays close to the reference (keys/values rounded to 11 bits).
    @Test(arguments: Fixtures.phi3Checkpoints)
    func f16CacheStaysClose(_ name: String) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let generator = try Generator(model: model, context: 128, threads: 2, kvType: .f16)
        for prompt in try Fixtures.reference(name).prompts {
            let logits = try generator.logits(for: prompt.input_ids)
            var worst: Float = 0
            for (position, expected) in prompt.logits.enumerated() {
                for (i, value) in expected.enumerated() {
                    worst = max(worst, abs(logits[position * model.options.vocabSize + i] - value))
                }
            }
            #expect(worst <= 0.05, "\(name)/\(prompt.name): max |Δlogit| \(worst)")
        }
    }

    @Test(arguments: Fixtures.allCheckpoints)
    func greedyMatchesTransformers(_ name: String) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let generator = try Generator(model: model, context: 128, threads: 2, batch: 8, kvType: .f32)
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 16
        for prompt in try Fixtures.reference(name).prompts {
            var ids: [Int32] = []
            let summary = try generator.run(prompt: prompt.input_ids, parameters: parameters) { ids.append($0.id) }
            // Up to the first near-tie of the reference (none on today's fixtures: their
            // smallest margin, 0.004, is 20× the cut-off).
            let clear = try Fixtures.clearGreedySteps(name, prompt: prompt.name)
            #expect(ids.prefix(clear) == prompt.greedy.prefix(clear), "\(name)/\(prompt.name)")
            if clear == prompt.greedy.count {
                #expect((summary.finishReason == .stop) == prompt.greedy_stopped_on_eos)
            }
        }
    }

    /// `chatPrompt` renders and tokenizes like `apply_chat_template(tokenize=True)`.
    @Test(arguments: Fixtures.chatCheckpoints)
    func chatPromptsMatchTransformers(_ name: String) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(name).path)
        let chats = try Fixtures.reference(name).chat
        #expect(chats.count == 3)
        for chat in chats {
            let messages = chat.messages.map { ChatTurn(role: $0.role, content: $0.content) }
            #expect(try model.chatTemplate?.render(messages, addGenerationPrompt: true) == chat.text)
            #expect(try model.chatPrompt(messages) == chat.input_ids, "\(name)")
        }
    }

    /// Phi-4-mini-shaped checkpoint: o200k tokenizer.json, its chat template, stop tokens.
    @Test func phi4MiniUsesItsTokenizerJSON() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi4-mini-tiny").path)
        #expect(model.tokenizer is BPETokenizer)
        #expect(model.tokenizer.kind.hasPrefix("bpe-byte-level"))
        #expect(model.tokenizer.kind.contains("o200k"))
        #expect(model.chatTemplate?.format == .phi4Mini)
        #expect(!model.tokenizer.addsBOS)
        // generation_config.json: <|end|> and <|endoftext|>.
        #expect(model.eosIDs == [1799, 1802])
        #expect(model.options.rope.rotaryDims == 12 && model.options.tiedEmbeddings)
    }

    /// Phi-2 ships no chat template: the Instruct/Output format is the fallback.
    @Test func phi2FallsBackToInstructFormat() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi2-tiny").path)
        #expect(model.tokenizer is BPETokenizer)
        #expect(model.tokenizer.chatTemplate == nil)
        #expect(model.chatTemplate?.format == .instruct)
        let ids = try model.chatPrompt([ChatTurn(role: "user", content: "Name a colour.")])
        #expect(ids == (try model.tokenizer.encode("Instruct: Name a colour.\nOutput:", addSpecialTokens: false)))
    }

    /// A Phi-3 checkpoint with tokenizer.model and tokenizer.json gives the same ids either way.
    @Test func tokenizerJSONCanBeForced() throws {
        let path = Fixtures.checkpoint("phi3-mha").path
        let automatic = try TransformerModel(path: path)
        let json = try TransformerModel(path: path, tokenizer: .tokenizerJSON)
        #expect(automatic.tokenizer is SentencePieceTokenizer)
        #expect(json.tokenizer is BPETokenizer)
        for prompt in try Fixtures.reference("phi3-mha").prompts {
            #expect(try json.tokenizer.encode(prompt.text, addSpecialTokens: true) == prompt.input_ids)
        }
        for chat in try Fixtures.reference("phi3-mha").chat {
            let messages = chat.messages.map { ChatTurn(role: $0.role, content: $0.content) }
            #expect(try json.chatPrompt(messages) == chat.input_ids)
        }
        #expect(automatic.eosIDs == json.eosIDs)
    }

    @Test func eosSetIsTheUnionOfAllConfigs() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        // config.json: 1000; generation_config.json: 1000, 1007; tokenizer_config.json: <|endoftext|>.
        #expect(model.eosIDs == [1000, 1007])
    }

    @Test func kvReuseGivesTheSameTokens() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 1)
        let prompt = try Fixtures.reference("phi3-mha").prompts[0]
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 8
        var first: [Int32] = []
        _ = try generator.run(prompt: prompt.input_ids, parameters: parameters) { first.append($0.id) }
        // Second request extends the first: only the new tokens are computed.
        var second: [Int32] = []
        let summary = try generator.run(prompt: prompt.input_ids + first, parameters: parameters) { second.append($0.id) }
        #expect(summary.cachedPromptTokens == prompt.input_ids.count + first.count - 1)
        let clear = try Fixtures.clearGreedySteps("phi3-mha", prompt: prompt.name)
        #expect(Array(first + second).prefix(clear) == prompt.greedy.prefix(min(16, clear)))
    }

    @Test func seededSamplingIsReproducible() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 2)
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 1.0
        parameters.sampling.seed = 42
        parameters.maxTokens = 12
        let prompt = try Fixtures.reference("phi3-mha").prompts[1].input_ids
        var a: [Int32] = [], b: [Int32] = []
        _ = try generator.run(prompt: prompt, parameters: parameters) { a.append($0.id) }
        generator.reset()
        _ = try generator.run(prompt: prompt, parameters: parameters) { b.append($0.id) }
        #expect(a == b)
        parameters.sampling.seed = 43
        var c: [Int32] = []
        _ = try generator.run(prompt: prompt, parameters: parameters) { c.append($0.id) }
        #expect(a != c)
    }

    @Test func stopStringsEndGeneration() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 1)
        let prompt = try Fixtures.reference("phi3-mha").prompts[0]
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 16
        var full = ""
        _ = try generator.run(prompt: prompt.input_ids, parameters: parameters) { full += $0.text }
        // Stop on a piece of text from the middle of the greedy continuation.
        let chars = Array(full)
        let stop = String(chars[(chars.count / 2)..<(chars.count / 2 + 3)])
        parameters.stop = [stop]
        var text = ""
        let summary = try generator.run(prompt: prompt.input_ids, parameters: parameters) { text += $0.text }
        #expect(summary.finishReason == .stop)
        #expect(!text.contains(stop))
        #expect(full.hasPrefix(text))
        #expect(full.range(of: stop)?.lowerBound == full.index(full.startIndex, offsetBy: text.count))
    }

    @Test func streamDeliversTokensAndSummary() async throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 128, threads: 2)
        let prompt = try Fixtures.reference("phi3-mha").prompts[0]
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 16
        var ids: [Int32] = []
        var summary: GenerationSummary?
        for try await event in generator.generate(prompt: prompt.input_ids, parameters: parameters) {
            switch event {
            case .token(let token): ids.append(token.id)
            case .done(let s): summary = s
            }
        }
        let clear = try Fixtures.clearGreedySteps("phi3-mha", prompt: prompt.name)
        #expect(ids.prefix(clear) == prompt.greedy.prefix(clear))
        #expect(summary?.completionTokens == 16)
    }
}
