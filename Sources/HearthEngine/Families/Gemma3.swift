import Foundation
import HearthFormats
import HearthTokenizers

/// Gemma 3 text models (`Gemma3ForCausalLM`, GGUF `gemma3`): interleaved sliding-window and
/// global layers with their own RoPE bases, q/k RMSNorm, norms before and after attention and
/// MLP, GELU-tanh gated MLP, embeddings scaled by √hidden, tied output. Checkpoints store norm
/// weights as w − 1 (the model multiplies by 1 + w); the offset is applied at load.
package enum Gemma3Family: ModelFamily {
    package static let architectures = ["Gemma3ForCausalLM"]
    package static let ggufArchitecture: String? = "gemma3"
    package static let normWeightOffset: Float = 1

    /// The keys of a Gemma 3 `config.json` beyond `HFConfig`'s, with transformers' defaults.
    private struct Configuration: Decodable {
        var rmsNormEps = 1e-6
        /// `hidden_activation`, else `hidden_act`.
        var activation = "gelu_pytorch_tanh"
        /// The key `activation` came from (for errors).
        var activationKey = "hidden_activation"
        var slidingWindow: Int?
        /// Per-layer attention kinds (`sliding_attention`, `full_attention`).
        var layerTypes: [String]?
        /// Older configs without `layer_types`: every n-th layer is global.
        var slidingWindowPattern = 6
        /// RoPE base of sliding layers: `rope_parameters.sliding_attention.rope_theta`, else
        /// the older `rope_local_base_freq`.
        var slidingRoPETheta = 10_000.0
        /// The attention scale is query_pre_attn_scalar^-0.5 (nil: head_dim's).
        var queryPreAttnScalar: Double?
        /// Gemma 2's final logit soft-capping (unsupported when set).
        var finalLogitSoftcapping: Double?

        enum CodingKeys: String, CodingKey {
            case rmsNormEps = "rms_norm_eps", hiddenActivation = "hidden_activation", hiddenAct = "hidden_act"
            case slidingWindow = "sliding_window", layerTypes = "layer_types"
            case slidingWindowPattern = "sliding_window_pattern", ropeParameters = "rope_parameters"
            case ropeLocalBaseFreq = "rope_local_base_freq", queryPreAttnScalar = "query_pre_attn_scalar"
            case finalLogitSoftcapping = "final_logit_softcapping"
        }

        init(from decoder: any Swift.Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            rmsNormEps = try c.decode(.rmsNormEps, default: rmsNormEps)
            if let named = try c.decodeIfPresent(String.self, forKey: .hiddenActivation) {
                activation = named
            } else {
                activation = try c.decode(.hiddenAct, default: activation)
                activationKey = "hidden_act"
            }
            slidingWindow = try c.decodeIfPresent(Int.self, forKey: .slidingWindow)
            layerTypes = try c.decodeIfPresent([String].self, forKey: .layerTypes)
            slidingWindowPattern = try c.decode(.slidingWindowPattern, default: slidingWindowPattern)
            // `rope_parameters` per layer type (the full-attention entry is `HFConfig.ropeScaling`).
            let byType = try? c.decodeIfPresent([String: RopeScalingConfig].self, forKey: .ropeParameters)
            slidingRoPETheta =
                try byType?["sliding_attention"]?.ropeTheta ?? c.decode(.ropeLocalBaseFreq, default: slidingRoPETheta)
            queryPreAttnScalar = try c.decodeIfPresent(Double.self, forKey: .queryPreAttnScalar)
            finalLogitSoftcapping = try c.decodeIfPresent(Double.self, forKey: .finalLogitSoftcapping)
        }
    }

    package static func options(from config: HFConfig) throws -> DecoderOptions {
        let own = try config.decode(Configuration.self)
        if let cap = own.finalLogitSoftcapping {
            throw FormatError(
                .invalidValue, "final logit soft-capping (\(cap)) is not supported", path: config.path,
                key: "final_logit_softcapping")
        }
        let c = try ConfigPrelude(config, defaultHeadDim: 256)
        // Which layers slide: `layer_types`, or every layer but each n-th (`sliding_window_pattern`).
        let sliding: [Bool]
        if let types = own.layerTypes {
            guard types.count == c.layers else {
                throw FormatError(.invalidValue, "has \(types.count) entries for \(c.layers) layers", path: config.path, key: "layer_types")
            }
            sliding = types.map { $0 == "sliding_attention" }
        } else {
            sliding = (0..<c.layers).map { ($0 + 1) % max(own.slidingWindowPattern, 1) != 0 }
        }
        var fullScaling = DecoderOptions.Scaling.none
        if let scaling = config.ropeScaling, scaling.type == "linear", let factor = scaling.factor {
            fullScaling = .linear(factor: Float(factor))
        }
        return c.options(
            norm: .rms(eps: Float(own.rmsNormEps)), mlp: .gated(try activation(own.activation, key: own.activationKey, path: config.path)),
            rope: .init(theta: Float(config.ropeTheta ?? 1_000_000), rotaryDims: c.headDim, scaling: fullScaling),
            tiedEmbeddings: config.tieWordEmbeddings ?? true,
            maxContext: config.maxPositionEmbeddings ?? 32768, slidingWindow: own.slidingWindow
        ).with {
            $0.slidingLayers = sliding
            $0.slidingRoPE = .init(theta: Float(own.slidingRoPETheta), rotaryDims: c.headDim)
            $0.qkNorm = true
            $0.sandwichNorms = true
            $0.embeddingScale = Float(Double(c.hidden).squareRoot())
            $0.attentionScale = Float(1 / (own.queryPreAttnScalar ?? Double(c.headDim)).squareRoot())
        }
    }

    package static func tensorName(_ role: TensorRole) -> String? {
        let p = "model.layers"
        switch role {
        case .postAttnNorm(let l): return "\(p).\(l).post_attention_layernorm.weight"
        case .ffnNorm(let l): return "\(p).\(l).pre_feedforward_layernorm.weight"
        case .postFFNNorm(let l): return "\(p).\(l).post_feedforward_layernorm.weight"
        default: return role.huggingFaceName
        }
    }

    package static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = try GGUFHyperparameters(gguf)
        var o = try h.base(norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-6), mlp: .gated(.geluTanh))
        // llama.cpp: every 6th layer is global; sliding layers use base 10000.
        let pattern = try h.optionalInt("attention.sliding_window_pattern") ?? 6
        o.slidingLayers = (0..<o.layerCount).map { ($0 + 1) % max(pattern, 1) != 0 }
        o.slidingRoPE = .init(theta: 10000, rotaryDims: o.rope.rotaryDims)
        if let linear = try h.linearScaling() { o.rope.scaling = linear }
        o.qkNorm = true
        o.sandwichNorms = true
        o.embeddingScale = Float(o.hiddenSize).squareRoot()
        o.attentionScale = 1 / Float(o.headDim).squareRoot()
        o.tiedEmbeddings = gguf.info(named: "output.weight") == nil
        return o
    }

    /// GGUF files without a template: Gemma's `<start_of_turn>user … <end_of_turn>` format.
    package static func ggufFallbackChatTemplate(bos: String?, eos: String?) -> ChatTemplate? {
        ChatTemplate(format: .gemma, prefix: bos ?? "")
    }
}
