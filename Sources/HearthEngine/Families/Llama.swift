import HearthFormats

/// Llama 2/3 (`LlamaForCausalLM`, GGUF `llama`) and Mistral (`MistralForCausalLM`): RMSNorm,
/// SwiGLU, grouped-query attention, RoPE with linear or Llama 3 scaling.
public enum LlamaFamily: ModelFamily {
    public static let architectures = ["LlamaForCausalLM", "MistralForCausalLM"]
    public static let ggufArchitecture: String? = "llama"

    public static func options(from config: HFConfig) throws -> DecoderOptions {
        let c = try ConfigPrelude(config)
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
        return c.options(
            norm: .rms(eps: Float(config.rmsNormEps ?? 1e-5)),
            mlp: .gated(try activation(config.hiddenAct ?? "silu")),
            rope: .init(theta: Float(config.ropeTheta ?? 10000), rotaryDims: c.headDim, scaling: scaling),
            tiedEmbeddings: config.tieWordEmbeddings ?? false,
            maxContext: config.maxPositionEmbeddings ?? 4096, slidingWindow: config.slidingWindow)
    }

    public static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = GGUFHyperparameters(gguf: gguf, arch: "llama")
        var o = try h.base(norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-5), mlp: .gated(.silu))
        // llama.cpp's converter permutes Q/K rows for its pairwise ("normal") RoPE.
        o.rope.style = .interleaved
        if let factors = try h.vector("rope_freqs.weight") {
            // Llama 3 GGUF files store the frequency remapping already applied, as one divisor
            // per frequency (`rope_freqs`). Dividing each frequency by a fixed factor is what
            // the `.longRoPE` case does with equal short and long factors, an original context
            // no position reaches and attention factor 1 — it is not LongRoPE, only its table.
            o.rope.scaling = .longRoPE(short: factors, long: factors, originalContext: Int.max, attentionFactor: 1)
        } else if let linear = try h.linearScaling() {
            o.rope.scaling = linear
        }
        return o
    }
}
