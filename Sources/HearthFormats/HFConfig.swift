import Foundation

/// A JSON value that is either one integer or a list of them (`eos_token_id` is both in the wild).
package struct IntList: Codable, Sendable, Equatable {
    /// The integers, in file order.
    package var values: [Int]

    /// Wraps a list.
    package init(_ values: [Int]) { self.values = values }

    package init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            values = []
        } else if let single = try? container.decode(Int.self) {
            values = [single]
        } else {
            values = try container.decode([Int].self)
        }
    }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values)
    }
}

/// RoPE scaling as written in `config.json`, either the classic `rope_scaling` object or
/// the newer `rope_parameters` one (transformers ≥ 5), normalised into one shape.
package struct RopeScalingConfig: Decodable, Sendable, Equatable {
    /// `longrope`/`su`, `linear`, `dynamic`, `yarn`, `llama3`, `default`…
    package var type: String
    /// LongRoPE per-frequency factors used while the sequence fits the original context.
    package var shortFactor: [Double]?
    /// LongRoPE per-frequency factors used beyond it.
    package var longFactor: [Double]?
    /// Scale factor for linear/dynamic/yarn/llama3 scaling.
    package var factor: Double?
    /// Pre-extension context length, when given inside the scaling object.
    package var originalMaxPositionEmbeddings: Int?
    /// Explicit attention (magnitude) factor.
    package var attentionFactor: Double?
    /// `rope_theta` given inside `rope_parameters`.
    package var ropeTheta: Double?
    /// `partial_rotary_factor` given inside `rope_parameters`.
    package var partialRotaryFactor: Double?
    /// Llama 3 scaling: the low-frequency factor.
    package var lowFrequencyFactor: Double?
    /// Llama 3 scaling: the high-frequency factor.
    package var highFrequencyFactor: Double?

    enum CodingKeys: String, CodingKey {
        case type
        case ropeType = "rope_type"
        case shortFactor = "short_factor"
        case longFactor = "long_factor"
        case factor
        case originalMaxPositionEmbeddings = "original_max_position_embeddings"
        case attentionFactor = "attention_factor"
        case ropeTheta = "rope_theta"
        case partialRotaryFactor = "partial_rotary_factor"
        case lowFrequencyFactor = "low_freq_factor"
        case highFrequencyFactor = "high_freq_factor"
    }

    /// A scaling of `type` with the given values (tests and callers that build configs in code).
    package init(
        type: String, shortFactor: [Double]? = nil, longFactor: [Double]? = nil, factor: Double? = nil,
        originalMaxPositionEmbeddings: Int? = nil, attentionFactor: Double? = nil
    ) {
        self.type = type
        self.shortFactor = shortFactor
        self.longFactor = longFactor
        self.factor = factor
        self.originalMaxPositionEmbeddings = originalMaxPositionEmbeddings
        self.attentionFactor = attentionFactor
    }

    /// Decodes either shape; `rope_type` wins over the older `type`, and a missing one is `default`.
    package init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        type =
            try c.decodeIfPresent(String.self, forKey: .ropeType) ?? c.decodeIfPresent(String.self, forKey: .type)
            ?? "default"
        shortFactor = try c.decodeIfPresent([Double].self, forKey: .shortFactor)
        longFactor = try c.decodeIfPresent([Double].self, forKey: .longFactor)
        factor = try c.decodeIfPresent(Double.self, forKey: .factor)
        originalMaxPositionEmbeddings = try c.decodeIfPresent(Int.self, forKey: .originalMaxPositionEmbeddings)
        attentionFactor = try c.decodeIfPresent(Double.self, forKey: .attentionFactor)
        ropeTheta = try c.decodeIfPresent(Double.self, forKey: .ropeTheta)
        partialRotaryFactor = try c.decodeIfPresent(Double.self, forKey: .partialRotaryFactor)
        lowFrequencyFactor = try c.decodeIfPresent(Double.self, forKey: .lowFrequencyFactor)
        highFrequencyFactor = try c.decodeIfPresent(Double.self, forKey: .highFrequencyFactor)
    }
}

/// The part of a Hugging Face `config.json` every model family reads: which architecture it
/// is, its EOS ids, the common dimensions and RoPE. Everything else is a family's own:
/// each family file decodes a private `Decodable` struct of its keys from the same file with
/// ``decode(_:)``, so a new key is one edit in one family file.
///
/// Values are as written (nil when absent); families validate them and supply defaults.
package struct HFConfig: Decodable, Sendable {
    /// `architectures`: the transformers class names (`LlamaForCausalLM`…); empty when absent.
    package var architectures: [String] = []
    /// `eos_token_id`: one id or a list; generation stops at any of them.
    package var eosTokenId: IntList?
    /// `hidden_size`: the residual stream's width.
    package var hiddenSize: Int?
    /// `intermediate_size`: the MLP's inner width.
    package var intermediateSize: Int?
    /// `num_hidden_layers`.
    package var numHiddenLayers: Int?
    /// `num_attention_heads`: query heads.
    package var numAttentionHeads: Int?
    /// `num_key_value_heads`: key/value heads (grouped-query attention); absent means one per query head.
    package var numKeyValueHeads: Int?
    /// `head_dim`; absent means hidden_size / num_attention_heads unless the family says otherwise.
    package var headDim: Int?
    /// `vocab_size`.
    package var vocabSize: Int?
    /// `max_position_embeddings`: the trained context, in positions.
    package var maxPositionEmbeddings: Int?
    /// `tie_word_embeddings`: the output projection reuses the token embeddings.
    package var tieWordEmbeddings: Bool?
    /// `rope_theta` (or `rope_parameters.rope_theta`, which wins): the RoPE frequency base.
    package var ropeTheta: Double?
    /// `partial_rotary_factor` (or inside `rope_parameters`): the rotating share of each head.
    package var partialRotaryFactor: Double?
    /// `original_max_position_embeddings` (or inside `rope_parameters`): the context before extension.
    package var originalMaxPositionEmbeddings: Int?
    /// Classic `rope_scaling` and newer `rope_parameters`, merged (`rope_parameters` wins; given
    /// per layer type, its `full_attention` entry).
    package var ropeScaling: RopeScalingConfig?

    /// The file's bytes, for the families' own keys (``decode(_:)``); `{}` for GGUF files.
    private var json = Data("{}".utf8)
    /// Where the configuration came from, for errors.
    package private(set) var path = "config.json"

    enum CodingKeys: String, CodingKey {
        case architectures
        case eosTokenId = "eos_token_id"
        case hiddenSize = "hidden_size"
        case intermediateSize = "intermediate_size"
        case numHiddenLayers = "num_hidden_layers"
        case numAttentionHeads = "num_attention_heads"
        case numKeyValueHeads = "num_key_value_heads"
        case headDim = "head_dim"
        case vocabSize = "vocab_size"
        case maxPositionEmbeddings = "max_position_embeddings"
        case tieWordEmbeddings = "tie_word_embeddings"
        case ropeTheta = "rope_theta"
        case partialRotaryFactor = "partial_rotary_factor"
        case originalMaxPositionEmbeddings = "original_max_position_embeddings"
        case ropeScaling = "rope_scaling"
        case ropeParameters = "rope_parameters"
    }

    /// A configuration that names only its architectures (GGUF files, whose dimensions are in
    /// their own metadata).
    package init(architectures: [String]) { self.architectures = architectures }

    /// Decodes `config.json`'s bytes; `path` names the file in errors.
    /// - Throws: `FormatError` naming the file and key when a value has the wrong type.
    package init(json: Data, path: String) throws {
        self = try decodeJSON(HFConfig.self, from: json, path: path)
        self.json = json
        self.path = path
    }

    /// Decodes the shared keys (use ``init(json:path:)`` to keep the bytes for ``decode(_:)``).
    package init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        architectures = try c.decodeIfPresent([String].self, forKey: .architectures) ?? []
        eosTokenId = try c.decodeIfPresent(IntList.self, forKey: .eosTokenId)
        hiddenSize = try c.decodeIfPresent(Int.self, forKey: .hiddenSize)
        intermediateSize = try c.decodeIfPresent(Int.self, forKey: .intermediateSize)
        numHiddenLayers = try c.decodeIfPresent(Int.self, forKey: .numHiddenLayers)
        numAttentionHeads = try c.decodeIfPresent(Int.self, forKey: .numAttentionHeads)
        numKeyValueHeads = try c.decodeIfPresent(Int.self, forKey: .numKeyValueHeads)
        headDim = try c.decodeIfPresent(Int.self, forKey: .headDim)
        vocabSize = try c.decodeIfPresent(Int.self, forKey: .vocabSize)
        maxPositionEmbeddings = try c.decodeIfPresent(Int.self, forKey: .maxPositionEmbeddings)
        tieWordEmbeddings = try c.decodeIfPresent(Bool.self, forKey: .tieWordEmbeddings)
        ropeTheta = try c.decodeIfPresent(Double.self, forKey: .ropeTheta)
        partialRotaryFactor = try c.decodeIfPresent(Double.self, forKey: .partialRotaryFactor)
        originalMaxPositionEmbeddings = try c.decodeIfPresent(Int.self, forKey: .originalMaxPositionEmbeddings)
        let classic = try c.decodeIfPresent(RopeScalingConfig.self, forKey: .ropeScaling)
        // `rope_parameters` is flat, or a map per layer type (Gemma 3), whose full-attention
        // entry is the model's RoPE.
        let modern: RopeScalingConfig?
        if let byType = try? c.decodeIfPresent([String: RopeScalingConfig].self, forKey: .ropeParameters) {
            modern = byType["full_attention"]
        } else {
            modern = try c.decodeIfPresent(RopeScalingConfig.self, forKey: .ropeParameters)
        }
        ropeScaling = modern ?? classic
        if let modern {
            if let theta = modern.ropeTheta { ropeTheta = theta }
            if let partial = modern.partialRotaryFactor { partialRotaryFactor = partial }
            if originalMaxPositionEmbeddings == nil {
                originalMaxPositionEmbeddings = modern.originalMaxPositionEmbeddings
            }
        }
    }

    /// Decodes a family's own keys from the same file (a private `Decodable` struct in the
    /// family's file), with errors that name the file and key.
    /// - Throws: `FormatError` `.invalidValue`/`.missingKey`/`.invalidJSON`.
    package func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeJSON(type, from: json, path: path)
    }

    /// Reads and decodes `config.json`, turning decoding failures into `FormatError`s that name the key.
    package static func load(from url: URL) throws -> HFConfig {
        try HFConfig(json: readJSONFile(url), path: url.path)
    }
}

/// `generation_config.json`: decoding defaults shipped with a checkpoint.
package struct GenerationConfig: Codable, Sendable {
    package var bosTokenId: IntList?
    package var eosTokenId: IntList?
    package var temperature: Double?
    package var topP: Double?
    package var topK: Int?
    package var doSample: Bool?
    package var repetitionPenalty: Double?

    enum CodingKeys: String, CodingKey {
        case bosTokenId = "bos_token_id"
        case eosTokenId = "eos_token_id"
        case temperature
        case topP = "top_p"
        case topK = "top_k"
        case doSample = "do_sample"
        case repetitionPenalty = "repetition_penalty"
    }

    package init() {}

    /// Reads `generation_config.json`.
    package static func load(from url: URL) throws -> GenerationConfig {
        try decodeJSONFile(GenerationConfig.self, at: url)
    }
}

/// Decodes a JSON file, mapping every failure to a `FormatError` naming the file and key.
package func decodeJSONFile<T: Decodable>(_ type: T.Type, at url: URL) throws -> T {
    try decodeJSON(type, from: readJSONFile(url), path: url.path)
}

/// A checkpoint's JSON file's bytes, or a `FormatError` naming it.
private func readJSONFile(_ url: URL) throws -> Data {
    do {
        return try Data(contentsOf: url)
    } catch {
        throw FormatError(
            FileManager.default.fileExists(atPath: url.path) ? .ioError : .fileNotFound, "cannot read file",
            path: url.path, remedy: "Check that the checkpoint directory is complete")
    }
}

/// Decodes JSON, mapping every failure to a `FormatError` naming `path` and the key.
package func decodeJSON<T: Decodable>(_ type: T.Type, from data: Data, path: String) throws -> T {
    do {
        return try JSONDecoder().decode(T.self, from: data)
    } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
        throw FormatError(
            .invalidValue, "unexpected value: \(context.debugDescription)", path: path,
            key: context.codingPath.map(\.stringValue).joined(separator: "."))
    } catch let DecodingError.keyNotFound(key, context) {
        throw FormatError(
            .missingKey, "missing key", path: path,
            key: (context.codingPath + [key]).map(\.stringValue).joined(separator: "."))
    } catch {
        throw FormatError(.invalidJSON, "not valid JSON", path: path)
    }
}
