import Foundation
import HearthFormats
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The registry of model families (`ModelFamilies.all`): each family is registered once under
/// its own Hugging Face and GGUF architecture strings, every family loads a committed fixture,
/// and a family's own config keys are checked in its own file.
@Suite struct ModelFamilyRegistryTests {
    /// Every committed checkpoint fixture (tiny safetensors checkpoints and MLX conversions).
    static let fixtures = Fixtures.allCheckpoints + Fixtures.mlxCheckpoints

    @Test func familyNamesAreUnique() {
        let names = ModelFamilies.all.map { String(describing: $0) }
        #expect(!names.isEmpty)
        #expect(Set(names).count == names.count, "registered more than once: \(names)")
    }

    @Test func architectureStringsAreUniqueAcrossFamilies() throws {
        let huggingFace = ModelFamilies.all.flatMap { $0.architectures }
        #expect(Set(huggingFace).count == huggingFace.count, "Hugging Face architectures: \(huggingFace)")
        let gguf = ModelFamilies.all.compactMap { $0.ggufArchitecture }
        #expect(Set(gguf).count == gguf.count, "GGUF architectures: \(gguf)")
        // Each string leads back to the family that declares it.
        for family in ModelFamilies.all {
            #expect(!family.architectures.isEmpty, "\(family) names no Hugging Face architecture")
            for name in family.architectures {
                let found = try ModelFamilies.family(for: HFConfig(architectures: [name]))
                #expect(ObjectIdentifier(found) == ObjectIdentifier(family), "\(name)")
            }
            if let name = family.ggufArchitecture {
                let found = try #require(ModelFamilies.family(ggufArchitecture: name))
                #expect(ObjectIdentifier(found) == ObjectIdentifier(family), "\(name)")
            }
        }
    }

    @Test func everyFamilyLoadsItsFixture() throws {
        var loadedBy: [ObjectIdentifier: [String]] = [:]
        for name in Self.fixtures {
            let url = Fixtures.checkpoint(name)
            let family = try ModelFamilies.family(for: HFConfig.load(from: url.appendingPathComponent("config.json")))
            let model = try TransformerModel(path: url.path)
            #expect(family.architectures.contains(model.architecture), "\(name): \(model.architecture)")
            // One forward step runs and gives finite logits.
            let generator = try Generator(model: model, context: 16, threads: 1, kvType: .f32)
            let logits = try generator.logits(for: [1, 2, 3])
            #expect(logits.count == 3 * model.options.vocabSize && logits.allSatisfy(\.isFinite), "\(name)")
            loadedBy[ObjectIdentifier(family), default: []].append(name)
        }
        for family in ModelFamilies.all {
            #expect(
                loadedBy[ObjectIdentifier(family)] != nil,
                "\(family) loads none of Tests/Fixtures' checkpoints: add a tiny one (scripts/make_family_fixtures.py)")
        }
    }

    /// A key only one family reads is checked by that family's own configuration, with an
    /// error that names the file and the key.
    @Test func familyKeysAreCheckedInTheFamily() throws {
        let dir = try Fixtures.copyOfCheckpoint("llama-tiny")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("config.json")
        var object = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        object["rms_norm_eps"] = "small"
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        do {
            _ = try TransformerModel(path: dir.path)
            Issue.record("a config.json with a text rms_norm_eps loaded")
        } catch let error as FormatError {
            #expect(error.code == .invalidValue)
            #expect(error.key == "rms_norm_eps")
            #expect(error.path == url.path)
        }
        // Phi-2's keys are not Llama's business.
        object["rms_norm_eps"] = 1e-5
        object["qk_layernorm"] = "yes"
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        _ = try TransformerModel(path: dir.path)
    }

    /// An unknown activation names the key it was read from and the file, for every family that
    /// reads one (Gemma 3 reads `hidden_activation` first, then `hidden_act`).
    @Test(arguments: [("llama-tiny", "hidden_act"), ("phi2-tiny", "hidden_act"), ("gemma3-tiny", "hidden_activation")])
    func unknownActivationsNameTheirKey(_ fixture: String, _ key: String) throws {
        let dir = try Fixtures.copyOfCheckpoint(fixture)
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("config.json")
        var object = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        object.removeValue(forKey: "hidden_activation")
        object[key] = "relu_squared"
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        do {
            _ = try TransformerModel(path: dir.path)
            Issue.record("\(fixture): an unknown activation loaded")
        } catch let error as FormatError {
            #expect(error.code == .invalidValue && error.key == key && error.path == url.path, "\(fixture): \(error)")
            #expect(error.message.contains("relu_squared"))
        }
    }

    /// Llama 3 GGUF files' `rope_freqs` divide each frequency by its own factor, at every
    /// position: the table transformers' formula gives, and the one these files had when they
    /// were read as LongRoPE with equal factors, an unreachable original context and no
    /// attention factor.
    @Test func frequencyFactorsDivideEachFrequency() {
        let factors: [Float] = (0..<8).map { 1 + Float($0 * $0) * 0.75 }
        let rope = DecoderOptions.RoPE(theta: 500_000, rotaryDims: 16, scaling: .frequencyFactors(factors))
        var posed = rope
        posed.scaling = .longRoPE(short: factors, long: factors, originalContext: Int.max, attentionFactor: 1)
        let expected = (0..<8).map { i in 1 / (factors[i] * powf(500_000, Float(2 * i) / 16)) }
        for end in [1, 8192, 1 << 20] {
            let table = RoPEFrequencies(rope, endPosition: end)
            let former = RoPEFrequencies(posed, endPosition: end)
            #expect(table.inverseFrequencies == expected)
            #expect(table.inverseFrequencies == former.inverseFrequencies)
            #expect(table.magnitude == 1 && table.positionScale == 1)
        }
        #expect(rope.scaling.name == "frequency-factors")
        #expect(posed.scaling.name == "longrope")
    }
}

/// GGUF files reach their family by `general.architecture`, whose keys the family reads.
@Suite struct GGUFFamilyTests {
    /// The header of a one-layer Llama GGUF file (64 wide, 4 heads of 16) with `freqs`
    /// `rope_freqs` values, opened from a temporary file.
    private func llamaFile(freqs: Int) throws -> GGUFFile {
        var b = GGUFBuilder()
        b.string("general.architecture", "llama")
        b.uint32("llama.embedding_length", 64)
        b.uint32("llama.attention.head_count", 4)
        b.uint32("llama.block_count", 1)
        b.uint32("llama.feed_forward_length", 128)
        b.f32Tensor("rope_freqs.weight", values: (0..<freqs).map { 1 + Float($0) / 2 })
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).gguf")
        try Data(b.bytes()).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try GGUFFile(path: url.path)
    }

    @Test func llamaRopeFreqsAreFrequencyFactors() throws {
        let gguf = try llamaFile(freqs: 8)
        let family = try ModelFamilies.family(for: gguf)
        #expect(ObjectIdentifier(family) == ObjectIdentifier(LlamaFamily.self))
        let options = try family.options(gguf: gguf)
        #expect(options.headDim == 16 && options.rope.style == .interleaved)
        #expect(options.rope.scaling == .frequencyFactors((0..<8).map { 1 + Float($0) / 2 }))
    }

    /// One divisor per rotating pair, or the file is refused (a short table would be read past its end).
    @Test func ropeFreqsOfTheWrongLengthAreRefused() throws {
        do {
            _ = try LlamaFamily.options(gguf: try llamaFile(freqs: 5))
            Issue.record("5 rope_freqs for 8 rotary frequencies were accepted")
        } catch let error as FormatError {
            #expect(error.code == .shapeMismatch && error.key == "rope_freqs.weight")
        }
    }
}
