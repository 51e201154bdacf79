import Foundation
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// Broken checkpoints and impossible requests give typed errors, never traps.
@Suite struct BadInputTests {
    private func editConfig(_ dir: URL, _ edit: (inout [String: Any]) -> Void) throws {
        let url = dir.appendingPathComponent("config.json")
        var object = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        edit(&object)
        try JSONSerialization.data(withJSONObject: object).write(to: url)
    }

    private func formatError(_ body: () throws -> Void) -> FormatError? {
        do {
            try body()
            return nil
        } catch let error as FormatError {
            return error
        } catch {
            Issue.record("expected FormatError, got \(error)")
            return nil
        }
    }

    @Test func missingDirectory() {
        let error = formatError { _ = try TransformerModel(path: "/nonexistent/model") }
        #expect(error?.code == .fileNotFound)
    }

    @Test func missingConfig() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi3-mha")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.removeItem(at: dir.appendingPathComponent("config.json"))
        #expect(formatError { _ = try TransformerModel(path: dir.path) }?.code == .fileNotFound)
    }

    @Test func missingWeights() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi3-mha")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.removeItem(at: dir.appendingPathComponent("model.safetensors"))
        #expect(formatError { _ = try TransformerModel(path: dir.path) }?.code == .fileNotFound)
    }

    @Test func missingShard() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi3-gqa-longrope")
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.removeItem(at: dir.appendingPathComponent("model-00002-of-00002.safetensors"))
        #expect(formatError { _ = try TransformerModel(path: dir.path) }?.code == .fileNotFound)
    }

    @Test func missingTokenizer() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi3-mha")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Without tokenizer.model, tokenizer.json is used.
        try FileManager.default.removeItem(at: dir.appendingPathComponent("tokenizer.model"))
        #expect(try TransformerModel(path: dir.path).tokenizer is BPETokenizer)
        #expect(throws: TokenizerError.self) { _ = try TransformerModel(path: dir.path, tokenizer: .sentencePiece) }
        try FileManager.default.removeItem(at: dir.appendingPathComponent("tokenizer.json"))
        do {
            _ = try TransformerModel(path: dir.path)
            Issue.record("a checkpoint without tokenizer files loaded")
        } catch let error as TokenizerError {
            #expect(error.code == .fileNotFound)
        }
    }

    @Test func corruptTokenizerJSON() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi4-mini-tiny")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("tokenizer.json")
        let bytes = try Data(contentsOf: url)
        try bytes.prefix(bytes.count / 2).write(to: url)
        do {
            _ = try TransformerModel(path: dir.path)
            Issue.record("a truncated tokenizer.json loaded")
        } catch let error as TokenizerError {
            #expect(error.code == .invalidConfig)
            #expect(error.path?.hasSuffix("tokenizer.json") == true)
        }
    }

    @Test func unknownArchitecture() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi3-mha")
        defer { try? FileManager.default.removeItem(at: dir) }
        try editConfig(dir) { $0["architectures"] = ["MambaForCausalLM"] }
        let error = formatError { _ = try TransformerModel(path: dir.path) }
        #expect(error?.code == .unsupportedArchitecture)
        #expect(error?.description.contains("MambaForCausalLM") == true)
    }

    @Test func shapesDisagreeWithConfig() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi3-mha")
        defer { try? FileManager.default.removeItem(at: dir) }
        try editConfig(dir) { $0["intermediate_size"] = 96 }
        let error = formatError { _ = try TransformerModel(path: dir.path) }
        #expect(error?.code == .shapeMismatch)
        #expect(error?.key?.contains("gate_up_proj") == true)
    }

    @Test func invalidConfigValues() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi3-mha")
        defer { try? FileManager.default.removeItem(at: dir) }
        try editConfig(dir) { $0["num_key_value_heads"] = 3 }
        #expect(formatError { _ = try TransformerModel(path: dir.path) }?.code == .invalidValue)
        try editConfig(dir) { $0["hidden_size"] = "wide" }
        #expect(formatError { _ = try TransformerModel(path: dir.path) }?.code == .invalidValue)
        try editConfig(dir) { $0.removeValue(forKey: "hidden_size") }
        #expect(formatError { _ = try TransformerModel(path: dir.path) }?.code == .missingKey)
    }

    @Test func unsupportedDType() throws {
        let dir = try Fixtures.copyOfCheckpoint("phi3-mha")
        defer { try? FileManager.default.removeItem(at: dir) }
        // Rewrite the header so the final norm claims to be I32 (same byte size as F32).
        let url = dir.appendingPathComponent("model.safetensors")
        var bytes = [UInt8](try Data(contentsOf: url))
        let headerLength = Int(bytes[0..<8].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
        var header = String(decoding: bytes[8..<(8 + headerLength)], as: UTF8.self)
        let key = "\"model.norm.weight\":{\"dtype\":\"F32\""
        #expect(header.contains(key))
        header = header.replacingOccurrences(of: key, with: "\"model.norm.weight\":{\"dtype\":\"I32\"")
        bytes.replaceSubrange(8..<(8 + headerLength), with: Array(header.utf8))
        try Data(bytes).write(to: url)
        let error = formatError { _ = try TransformerModel(path: dir.path) }
        #expect(error?.code == .unsupportedDType)
        #expect(error?.key == "model.norm.weight")
    }

    @Test func promptLongerThanContext() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 16, threads: 1)
        let prompt = try Fixtures.reference("phi3-mha").prompts[0].input_ids
        #expect(prompt.count > 16)
        do {
            _ = try generator.run(prompt: prompt, parameters: GenerationParameters()) { _ in }
            Issue.record("expected an error")
        } catch let error as EngineError {
            #expect(error.code == .contextLengthExceeded)
        }
        // The generator is still usable afterwards.
        // Greedy, and an end-of-sequence token is a valid way to end: with the default sampling
        // (temperature 0.8, a random seed) a random-weight model samples its end token now and
        // then, which made this test fail one run in a few (CI of stop 71, at the avx2 level).
        var parameters = GenerationParameters()
        parameters.maxTokens = 3
        parameters.sampling.temperature = 0
        let summary = try generator.run(prompt: Array(prompt.prefix(8)), parameters: parameters) { _ in }
        if summary.finishReason == .length {
            #expect(summary.completionTokens == 3)
        } else {
            #expect(summary.finishReason == .stop)
            #expect(summary.completionTokens <= 3)
        }
    }

    @Test func generationStopsWhenTheContextFills() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 12, threads: 1)
        var parameters = GenerationParameters()
        parameters.maxTokens = 100
        parameters.sampling.temperature = 0
        let summary = try generator.run(prompt: [1, 300, 301], parameters: parameters) { _ in }
        #expect(summary.finishReason == .length || summary.finishReason == .stop)
        #expect(summary.completionTokens <= 10)
    }

    @Test func invalidTokensAndOptions() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 32, threads: 1)
        #expect(throws: EngineError.self) { _ = try generator.run(prompt: [1, 99999], parameters: .init()) { _ in } }
        #expect(throws: EngineError.self) { _ = try generator.run(prompt: [], parameters: .init()) { _ in } }
        // (Sampling values are not refused by the engine — SamplingOutOfRangeTests — but lengths are.)
        var parameters = GenerationParameters()
        parameters.maxTokens = -1
        #expect(throws: EngineError.self) { _ = try generator.run(prompt: [1, 5], parameters: parameters) { _ in } }
        #expect(throws: EngineError.self) { _ = try Generator(model: model, context: 0) }
    }
}
