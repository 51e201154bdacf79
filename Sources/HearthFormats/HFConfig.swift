import Foundation

/// A JSON value that is either one integer or a list of them (`eos_token_id` is both in the wild).
public struct IntList: Codable, Sendable, Equatable {
    /// The integers, in file order.
    public var values: [Int]

    /// Wraps a list.
    public init(_ values: [Int]) { self.values = values }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            values = []
        } else if let single = try? container.decode(Int.self) {
            values = [single]
        } else {
            values = try container.decode([Int].self)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(values)
    }
}

/// RoPE scaling as written in `config.json`, either the classic `rope_scaling` object or
/// the newer `rope_parameters` one (transformers ≥ 5), normalised into one shape.
public struct RopeScalingConfig: Codable, Sendable, Equatable {
    /// `longrope`/`su`, `linear`, `dynamic`, `yarn`, `llama3`, `default`…
    public var type: String
    /// LongRoPE per-frequency factors used while the sequence fits the original context.
    public var shortFactor: [Double]?
    /// LongRoPE per-frequency factors used beyond it.
    public var longFactor: [Double]?
    /// Scale factor for linear/dynamic/yarn/llama3 scaling.
    public var factor: Double?
    /// Pre-extension context length, when given inside the scaling object.
    public var originalMaxPositionEmbeddings: Int?
    /// Explicit attention (magnitude) factor.
    public var attentionFactor: Double?
    /// `rope_theta` given inside `rope_parameters`.
    public var ropeTheta: Double?
    /// `partial_rotary_factor` given inside `rope_parameters`.
    public var partialRotaryFactor: Double?
    /// Llama 3 scaling: low- and high-frequency factors.
    public var lowFrequencyFactor: Double?
    public var highFrequencyFactor: Double?

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

    public init(
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

    public init(from decoder: Decoder) throws {
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

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .ropeType)
        try c.encodeIfPresent(shortFactor, forKey: .shortFactor)
        try c.encodeIfPresent(longFactor, forKey: .longFactor)
        try c.encodeIfPresent(factor, forKey: .factor)
        try c.encodeIfPresent(originalMaxPositionEmbeddings, forKey: .originalMaxPositionEmbeddings)
        try c.encodeIfPresent(attentionFactor, forKey: .attentionFactor)
        try c.encodeIfPresent(ropeTheta, forKey: .ropeTheta)
        try c.encodeIfPresent(partialRotaryFactor, forKey: .partialRotaryFactor)
        try c.encodeIfPresent(lowFrequencyFactor, forKey: .lowFrequencyFactor)
        try c.encodeIfPresent(highFrequencyFactor, forKey: .highFrequencyFactor)
    }
}

/// The fields of a Hugging Face `config.json` that Hearth's model families read.
/// Families validate the values they need; everything optional here has a family default.
public struct HFConfig: Codable, Sendable {
    public var architectures: [String]?
    public var modelType: String?
    public var hiddenSize: Int?
    public var intermediateSize: Int?
    public var numHiddenLayers: Int?
    public var numAttentionHeads: Int?
    public var numKeyValueHeads: Int?
    public var headDim: Int?
    public var vocabSize: Int?
    public var rmsNormEps: Double?
    public var layerNormEps: Double?
    public var ropeTheta: Double?
    public var partialRotaryFactor: Double?
    public var maxPositionEmbeddings: Int?
    public var originalMaxPositionEmbeddings: Int?
    public var tieWordEmbeddings: Bool?
    public var hiddenAct: String?
    public var slidingWindow: Int?
    public var bosTokenId: IntList?
    public var eosTokenId: IntList?
    public var padTokenId: IntList?
    /// Classic `rope_scaling` and newer `rope_parameters`, merged (`rope_parameters` wins).
    public var ropeScaling: RopeScalingConfig?
    /// `rope_parameters` given per layer type (Gemma 3: `full_attention`, `sliding_attention`).
    public var ropeParametersByLayerType: [String: RopeScalingConfig]?
    /// Per-layer attention kinds (`sliding_attention`, `full_attention`).
    public var layerTypes: [String]?
    /// Older Gemma 3 configs: every n-th layer is global.
    public var slidingWindowPattern: Int?
    /// Older Gemma 3 configs: RoPE base of sliding layers.
    public var ropeLocalBaseFreq: Double?
    /// Gemma: attention scale is query_pre_attn_scalar^-0.5.
    public var queryPreAttnScalar: Double?
    /// Gemma's name for the MLP activation.
    public var hiddenActivation: String?
    /// Gemma 2's final logit soft-capping (unsupported when set).
    public var finalLogitSoftcapping: Double?
    /// Phi-2 with per-head q/k LayerNorm (unsupported when true).
    public var qkLayernorm: Bool?

    enum CodingKeys: String, CodingKey {
        case architectures
        case modelType = "model_type"
        case hiddenSize = "hidden_size"
        case intermediateSize = "intermediate_size"
        case numHiddenLayers = "num_hidden_layers"
        case numAttentionHeads = "num_attention_heads"
        case numKeyValueHeads = "num_key_value_heads"
        case headDim = "head_dim"
        case vocabSize = "vocab_size"
        case rmsNormEps = "rms_norm_eps"
        case layerNormEps = "layer_norm_eps"
        case ropeTheta = "rope_theta"
        case partialRotaryFactor = "partial_rotary_factor"
        case maxPositionEmbeddings = "max_position_embeddings"
        case originalMaxPositionEmbeddings = "original_max_position_embeddings"
        case tieWordEmbeddings = "tie_word_embeddings"
        case hiddenAct = "hidden_act"
        case slidingWindow = "sliding_window"
        case bosTokenId = "bos_token_id"
        case eosTokenId = "eos_token_id"
        case padTokenId = "pad_token_id"
        case ropeScaling = "rope_scaling"
        case ropeParameters = "rope_parameters"
        case layerTypes = "layer_types"
        case slidingWindowPattern = "sliding_window_pattern"
        case ropeLocalBaseFreq = "rope_local_base_freq"
        case queryPreAttnScalar = "query_pre_attn_scalar"
        case hiddenActivation = "hidden_activation"
        case finalLogitSoftcapping = "final_logit_softcapping"
        case qkLayernorm = "qk_layernorm"
    }

    public init() {}

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        architectures = try c.decodeIfPresent([String].self, forKey: .architectures)
        modelType = try c.decodeIfPresent(String.self, forKey: .modelType)
        hiddenSize = try c.decodeIfPresent(Int.self, forKey: .hiddenSize)
        intermediateSize = try c.decodeIfPresent(Int.self, forKey: .intermediateSize)
        numHiddenLayers = try c.decodeIfPresent(Int.self, forKey: .numHiddenLayers)
        numAttentionHeads = try c.decodeIfPresent(Int.self, forKey: .numAttentionHeads)
        numKeyValueHeads = try c.decodeIfPresent(Int.self, forKey: .numKeyValueHeads)
        headDim = try c.decodeIfPresent(Int.self, forKey: .headDim)
        vocabSize = try c.decodeIfPresent(Int.self, forKey: .vocabSize)
        rmsNormEps = try c.decodeIfPresent(Double.self, forKey: .rmsNormEps)
        layerNormEps = try c.decodeIfPresent(Double.self, forKey: .layerNormEps)
        ropeTheta = try c.decodeIfPresent(Double.self, forKey: .ropeTheta)
        partialRotaryFactor = try c.decodeIfPresent(Double.self, forKey: .partialRotaryFactor)
        maxPositionEmbeddings = try c.decodeIfPresent(Int.self, forKey: .maxPositionEmbeddings)
        originalMaxPositionEmbeddings = try c.decodeIfPresent(Int.self, forKey: .originalMaxPositionEmbeddings)
        tieWordEmbeddings = try c.decodeIfPresent(Bool.self, forKey: .tieWordEmbeddings)
        hiddenAct = try c.decodeIfPresent(String.self, forKey: .hiddenAct)
        slidingWindow = try c.decodeIfPresent(Int.self, forKey: .slidingWindow)
        bosTokenId = try c.decodeIfPresent(IntList.self, forKey: .bosTokenId)
        eosTokenId = try c.decodeIfPresent(IntList.self, forKey: .eosTokenId)
        padTokenId = try c.decodeIfPresent(IntList.self, forKey: .padTokenId)
        layerTypes = try c.decodeIfPresent([String].self, forKey: .layerTypes)
        slidingWindowPattern = try c.decodeIfPresent(Int.self, forKey: .slidingWindowPattern)
        ropeLocalBaseFreq = try c.decodeIfPresent(Double.self, forKey: .ropeLocalBaseFreq)
        queryPreAttnScalar = try c.decodeIfPresent(Double.self, forKey: .queryPreAttnScalar)
        hiddenActivation = try c.decodeIfPresent(String.self, forKey: .hiddenActivation)
        finalLogitSoftcapping = try c.decodeIfPresent(Double.self, forKey: .finalLogitSoftcapping)
        qkLayernorm = try c.decodeIfPresent(Bool.self, forKey: .qkLayernorm)
        let classic = try c.decodeIfPresent(RopeScalingConfig.self, forKey: .ropeScaling)
        // `rope_parameters` is flat, or a map per layer type (Gemma 3).
        var modern: RopeScalingConfig?
        if let byType = try? c.decodeIfPresent([String: RopeScalingConfig].self, forKey: .ropeParameters) {
            ropeParametersByLayerType = byType
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

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(architectures, forKey: .architectures)
        try c.encodeIfPresent(modelType, forKey: .modelType)
        try c.encodeIfPresent(hiddenSize, forKey: .hiddenSize)
        try c.encodeIfPresent(intermediateSize, forKey: .intermediateSize)
        try c.encodeIfPresent(numHiddenLayers, forKey: .numHiddenLayers)
        try c.encodeIfPresent(numAttentionHeads, forKey: .numAttentionHeads)
        try c.encodeIfPresent(numKeyValueHeads, forKey: .numKeyValueHeads)
        try c.encodeIfPresent(headDim, forKey: .headDim)
        try c.encodeIfPresent(vocabSize, forKey: .vocabSize)
        try c.encodeIfPresent(rmsNormEps, forKey: .rmsNormEps)
        try c.encodeIfPresent(layerNormEps, forKey: .layerNormEps)
        try c.encodeIfPresent(ropeTheta, forKey: .ropeTheta)
        try c.encodeIfPresent(partialRotaryFactor, forKey: .partialRotaryFactor)
        try c.encodeIfPresent(maxPositionEmbeddings, forKey: .maxPositionEmbeddings)
        try c.encodeIfPresent(originalMaxPositionEmbeddings, forKey: .originalMaxPositionEmbeddings)
        try c.encodeIfPresent(tieWordEmbeddings, forKey: .tieWordEmbeddings)
        try c.encodeIfPresent(hiddenAct, forKey: .hiddenAct)
        try c.encodeIfPresent(slidingWindow, forKey: .slidingWindow)
        try c.encodeIfPresent(bosTokenId, forKey: .bosTokenId)
        try c.encodeIfPresent(eosTokenId, forKey: .eosTokenId)
        try c.encodeIfPresent(padTokenId, forKey: .padTokenId)
        try c.encodeIfPresent(ropeScaling, forKey: .ropeScaling)
    }

    /// Reads and decodes `config.json`, turning decoding failures into `FormatError`s that name the key.
    public static func load(from url: URL) throws -> HFConfig {
        try decodeJSONFile(HFConfig.self, at: url)
    }
}

/// `generation_config.json`: decoding defaults shipped with a checkpoint.
public struct GenerationConfig: Codable, Sendable {
    public var bosTokenId: IntList?
    public var eosTokenId: IntList?
    public var temperature: Double?
    public var topP: Double?
    public var topK: Int?
    public var doSample: Bool?
    public var repetitionPenalty: Double?

    enum CodingKeys: String, CodingKey {
        case bosTokenId = "bos_token_id"
        case eosTokenId = "eos_token_id"
        case temperature
        case topP = "top_p"
        case topK = "top_k"
        case doSample = "do_sample"
        case repetitionPenalty = "repetition_penalty"
    }

    public init() {}

    /// Reads `generation_config.json`.
    public static func load(from url: URL) throws -> GenerationConfig {
        try decodeJSONFile(GenerationConfig.self, at: url)
    }
}

/// Decodes a JSON file, mapping every failure to a `FormatError` naming the file and key.
public func decodeJSONFile<T: Decodable>(_ type: T.Type, at url: URL) throws -> T {
    let data: Data
    do {
        data = try Data(contentsOf: url)
    } catch {
        throw FormatError(
            FileManager.default.fileExists(atPath: url.path) ? .ioError : .fileNotFound, "cannot read file",
            path: url.path, remedy: "Check that the checkpoint directory is complete")
    }
    return try decodeJSON(type, from: data, path: url.path)
}

/// Decodes JSON, mapping every failure to a `FormatError` naming `path` and the key.
public func decodeJSON<T: Decodable>(_ type: T.Type, from data: Data, path: String) throws -> T {
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
