import Foundation

/// Locations of the committed reference fixtures (made by scripts/make_reference_fixtures.py).
public enum Fixtures {
    /// The repository root, found from this file's path.
    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `Tests/Fixtures`.
    public static let directory = root.appendingPathComponent("Tests/Fixtures")

    /// The tiny Phi-3 checkpoints.
    public static let phi3Checkpoints = ["phi3-mha", "phi3-gqa-longrope", "phi3-partial-tied"]

    /// Tiny checkpoints of the other families (made by scripts/make_family_fixtures.py; gemma3-tiny
    /// and llama-tiny have token-id prompts only, phi2-tiny and phi4-mini-tiny text prompts
    /// tokenized by their tokenizer.json, phi4-mini-tiny also chats; qwen2-tiny and qwen3-tiny
    /// BF16 weights, token-id prompts and chats; gemma4-tiny, by scripts/make_gemma4_fixtures.py,
    /// BF16 weights and token-id prompts).
    public static let familyCheckpoints = [
        "phi2-tiny", "gemma3-tiny", "llama-tiny", "phi4-mini-tiny", "qwen2-tiny", "qwen3-tiny", "gemma4-tiny",
    ]

    /// Checkpoints whose reference.json records chat-template prompts.
    public static let chatCheckpoints = phi3Checkpoints + ["phi4-mini-tiny", "qwen2-tiny", "qwen3-tiny"]

    /// MLX-quantized conversions (scripts/make_mlx_fixtures.py); references from mlx-lm.
    public static let mlxCheckpoints = ["mlx-phi3-q4-g64", "mlx-phi3-tied-q4-g32", "mlx-phi2-q4-g64", "mlx-phi3-q8-g64"]

    /// Every checkpoint with reference logits.
    public static let allCheckpoints = phi3Checkpoints + familyCheckpoints

    /// Path of a checkpoint directory.
    public static func checkpoint(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// The decoded `reference.json` of a checkpoint.
    public static func reference(_ name: String) throws -> Reference {
        let data = try Data(contentsOf: checkpoint(name).appendingPathComponent("reference.json"))
        return try JSONDecoder().decode(Reference.self, from: data)
    }

    /// The reference's top-1 minus top-2 logit at each greedy step, by prompt name
    /// (`greedy-margins.json`, made by scripts/make_greedy_margins.py with transformers in f32).
    public static func greedyMargins(_ name: String) throws -> [String: [Float]] {
        struct File: Decodable { let prompts: [String: [Float]] }
        let data = try Data(contentsOf: checkpoint(name).appendingPathComponent("greedy-margins.json"))
        return try JSONDecoder().decode(File.self, from: data).prompts
    }

    /// The largest |Δ logit| against transformers that the f32 path is held to (GoldenTests).
    public static let f32LogitTolerance: Float = 1e-4

    /// How many leading greedy steps of `prompt` a test may assert: the steps before the first
    /// whose reference margin is below twice the per-logit tolerance, where two correct engines
    /// may rank the two best tokens either way (docs/ACCURACY.md).
    public static func clearGreedySteps(_ name: String, prompt: String, tolerance: Float = f32LogitTolerance) throws -> Int {
        let margins = try greedyMargins(name)[prompt] ?? []
        return margins.firstIndex { $0 < 2 * tolerance } ?? margins.count
    }

    /// Copies a checkpoint into a fresh temporary directory (for tests that damage it).
    public static func copyOfCheckpoint(_ name: String) throws -> URL {
        let target = FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-test-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: checkpoint(name), to: target)
        return target
    }
}

/// Reference outputs of HF transformers for one checkpoint.
public struct Reference: Decodable, Sendable {
    public struct Prompt: Decodable, Sendable {
        public let name: String
        public let text: String
        public let input_ids: [Int32]
        /// Logits at every position, `[position][vocab]`.
        public let logits: [[Float]]
        public let greedy: [Int32]
        public let greedy_stopped_on_eos: Bool
    }

    public struct Message: Decodable, Sendable {
        public let role: String
        public let content: String
    }

    public struct Chat: Decodable, Sendable {
        public let messages: [Message]
        public let text: String
        public let input_ids: [Int32]
    }

    public let generator: String
    public let prompts: [Prompt]
    public let chat: [Chat]
}

/// `tokenizer-cases.json`: texts with sentencepiece's and transformers' ids.
public struct TokenizerCases: Decodable, Sendable {
    public struct Case: Decodable, Sendable {
        public let text: String
        public let sp_ids: [Int32]
        public let hf_ids: [Int32]
        public let sp_pieces: [String]
        public let decoded: String
    }

    public let generator: String
    public let cases: [Case]

    public static func load() throws -> TokenizerCases {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("tokenizer-cases.json"))
        return try JSONDecoder().decode(TokenizerCases.self, from: data)
    }
}

/// `tokenizers/cases.json` (scripts/make_tokenizer_fixtures.py): HF tokenizers' ids, tokens and
/// decoded text for every tokenizer.json fixture, and the pieces of each known split pattern.
public struct TokenizerJSONCases: Decodable, Sendable {
    public struct Case: Decodable, Sendable {
        public let text: String
        public let ids: [Int32]
        public let ids_without_special: [Int32]
        public let tokens: [String]
        public let decoded: String
        public let decoded_skipping_special: String
    }

    public struct Entry: Decodable, Sendable {
        /// Relative to `Tests/Fixtures`.
        public let directory: String
        public let vocab_size: Int
        public let cases: [Case]
        public let chat: [Reference.Chat]
    }

    public struct SplitCase: Decodable, Sendable {
        public let text: String
        public let pieces: [String]
    }

    public struct Split: Decodable, Sendable {
        public let pattern: String
        public let cases: [SplitCase]
    }

    public let generator: String
    public let tokenizers: [String: Entry]
    public let splits: [String: Split]

    /// The tokenizer names, in a stable order.
    public static let names = ["gpt2-bpe", "o200k-bpe", "llama3-bpe", "phi3-mha", "phi3-legacy", "misc-bpe"]

    public static func load() throws -> TokenizerJSONCases {
        let url = Fixtures.directory.appendingPathComponent("tokenizers/cases.json")
        return try JSONDecoder().decode(TokenizerJSONCases.self, from: Data(contentsOf: url))
    }

    /// The directory of one tokenizer.
    public func directory(_ name: String) throws -> URL {
        guard let entry = tokenizers[name] else { throw CocoaError(.fileNoSuchFile) }
        return Fixtures.directory.appendingPathComponent(entry.directory)
    }
}

/// `sentencepiece/ids.json` (scripts/make_sentencepiece_fixtures.py): for every SentencePiece
/// model of `Tests/Fixtures/sentencepiece/` and phi3-mha's tokenizer.model, the ids the PyPI
/// `sentencepiece` package gives for each case of the large multilingual text; for the first
/// cases also with `add_dummy_prefix` off, and for the 32k model the whole text (the cases joined
/// by "\n\n") as one input. The file stores ids as base64 of little-endian uint16.
public struct SentencePieceCases: Sendable {
    public struct Model: Sendable {
        /// Path relative to `Tests/Fixtures`.
        public let file: String
        public let pieces: Int
        public let ids: [[Int32]]
        /// For the first `ids_no_dummy_prefix.count` cases.
        public let idsWithoutDummyPrefix: [[Int32]]
        public let wholeText: [Int32]?
        public let bos: Int32, eos: Int32, unk: Int32, pad: Int32
    }

    public let sentencepiece: String
    public let cases: [String]
    public let models: [String: Model]

    /// The cases joined as the generator joined them.
    public var wholeText: String { cases.joined(separator: "\n\n") }

    private struct File: Decodable {
        struct Model: Decodable {
            let file: String
            let pieces: Int
            let ids: [String]
            let ids_no_dummy_prefix: [String]
            let whole_text: String?
            let bos: Int32, eos: Int32, unk: Int32, pad: Int32
        }
        let sentencepiece: String
        let cases: [String]
        let models: [String: Model]
    }

    struct BadIDs: Error {}

    static func unpack(_ base64: String) throws -> [Int32] {
        guard let data = Data(base64Encoded: base64), data.count % 2 == 0 else { throw BadIDs() }
        return stride(from: 0, to: data.count, by: 2).map { Int32(UInt16(data[$0]) | UInt16(data[$0 + 1]) << 8) }
    }

    public static func load() throws -> SentencePieceCases {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("sentencepiece/ids.json"))
        let file = try JSONDecoder().decode(File.self, from: data)
        var models: [String: Model] = [:]
        for (name, m) in file.models {
            models[name] = Model(
                file: m.file, pieces: m.pieces, ids: try m.ids.map(unpack),
                idsWithoutDummyPrefix: try m.ids_no_dummy_prefix.map(unpack), wholeText: try m.whole_text.map(unpack),
                bos: m.bos, eos: m.eos, unk: m.unk, pad: m.pad)
        }
        return SentencePieceCases(sentencepiece: file.sentencepiece, cases: file.cases, models: models)
    }

    /// The path of a model's file.
    public func path(of model: Model) -> String { Fixtures.directory.appendingPathComponent(model.file).path }
}
