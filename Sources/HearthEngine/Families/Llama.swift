import HearthFormats

/// Llama 2/3 (`LlamaForCausalLM`) and Mistral (`MistralForCausalLM`): RMSNorm, SwiGLU,
/// grouped-query attention, RoPE with linear or Llama 3 scaling.
public enum LlamaFamily: ModelFamily {
    public static let architectures = ["LlamaForCausalLM", "MistralForCausalLM"]

    public static func options(from config: HFConfig) throws -> DecoderOptions {
        let hidden = try required(config.hiddenSize, "hidden_size")
        let heads = try required(config.numAttentionHeads, "num_attention_heads")
        let kvHeads = try required(config.numKeyValueHeads ?? heads, "num_key_value_heads")
        guard heads % kvHeads == 0 else {
            throw FormatError(.invalidValue, "num_attention_heads is not a multiple of num_key_value_heads", path: "config.json", key: "num_key_value_heads")
        }
        let headDim = try required(config.headDim ?? (hidden / heads), "head_dim")
        let maxContext = config.maxPositionEmbeddings ?? 4096
        var scaling = DecoderOptions.Scaling.none
        if let s = config.ropeScaling {
            switch s.type {
            case "default": break
            case "linear": scaling = .linear(factor: Float(s.factor ?? 1))
            case "llama3":
                scaling = .llama3(
                    factor: Float(s.factor ?? 8), lowFrequencyFactor: Float(s.lowFrequencyFactor ?? 1),
                    highFrequencyFactor: Float(s.highFrequencyFactor ?? 4),
                    originalContext: s.originalMaxPositionEmbeddings ?? config.originalMaxPositionEmbeddings ?? 8192)
            default:
                throw FormatError(.invalidValue, "unsupported rope scaling '\(s.type)'", path: "config.json", key: "rope_scaling")
            }
        }
        return DecoderOptions(
            hiddenSize: hidden, layerCount: try required(config.numHiddenLayers, "num_hidden_layers"),
            headCount: heads, kvHeadCount: kvHeads, headDim: headDim,
            ffnSize: try required(config.intermediateSize, "intermediate_size"),
            vocabSize: try required(config.vocabSize, "vocab_size"),
            norm: .rms(eps: Float(config.rmsNormEps ?? 1e-5)),
            mlp: .gated(try Phi2Family.activation(config.hiddenAct ?? "silu")),
            rope: .init(theta: Float(config.ropeTheta ?? 10000), rotaryDims: headDim, scaling: scaling),
            tiedEmbeddings: config.tieWordEmbeddings ?? false,
            maxContext: maxContext, slidingWindow: config.slidingWindow)
    }
}
