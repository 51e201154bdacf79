import HearthFormats

/// Llama 2/3 (`LlamaForCausalLM`, GGUF `llama`) and Mistral (`MistralForCausalLM`): RMSNorm,
/// SwiGLU, grouped-query attention, RoPE with linear or Llama 3 scaling.
package enum LlamaFamily: ModelFamily {
    package static let architectures = ["LlamaForCausalLM", "MistralForCausalLM"]
    package static let ggufArchitecture: String? = "llama"

    /// The keys of a Llama or Mistral `config.json` beyond `HFConfig`'s, with transformers' defaults.
    private struct Configuration: Decodable {
        var rmsNormEps = 1e-5
        var hiddenAct = "silu"
        /// Mistral's attention window (nil: none).
        var slidingWindow: Int?

        enum CodingKeys: String, CodingKey {
            case rmsNormEps = "rms_norm_eps", hiddenAct = "hidden_act", slidingWindow = "sliding_window"
        }

        init(from decoder: any Swift.Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            rmsNormEps = try c.decode(.rmsNormEps, default: rmsNormEps)
            hiddenAct = try c.decode(.hiddenAct, default: hiddenAct)
            slidingWindow = try c.decodeIfPresent(Int.self, forKey: .slidingWindow)
        }
    }

    package static func options(from config: HFConfig) throws -> DecoderOptions {
        let own = try config.decode(Configuration.self)
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
                throw FormatError(.invalidValue, "unsupported rope scaling '\(s.type)'", path: config.path, key: "rope_scaling")
            }
        }
        return c.options(
            norm: .rms(eps: Float(own.rmsNormEps)), mlp: .gated(try activation(own.hiddenAct, path: config.path)),
            rope: .init(theta: Float(config.ropeTheta ?? 10000), rotaryDims: c.headDim, scaling: scaling),
            tiedEmbeddings: config.tieWordEmbeddings ?? false,
            maxContext: config.maxPositionEmbeddings ?? 4096, slidingWindow: own.slidingWindow)
    }

    package static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = try GGUFHyperparameters(gguf)
        var o = try h.base(norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-5), mlp: .gated(.silu))
        // llama.cpp's converter permutes Q/K rows for its pairwise ("normal") RoPE.
        o.rope.style = .interleaved
        if let factors = try h.ropeFactors("rope_freqs.weight", rotaryDims: o.rope.rotaryDims) {
            // Llama 3 GGUF files store the frequency remapping already applied, as one divisor
            // per frequency.
            o.rope.scaling = .frequencyFactors(factors)
        } else if let linear = try h.linearScaling() {
            o.rope.scaling = linear
        }
        return o
    }
}
