import HearthFormats
import HearthTokenizers

/// Phi-2 (`PhiForCausalLM`, GGUF `phi2`): LayerNorm with bias, attention and MLP in parallel
/// from one norm, partial rotary, `gelu_new`, biases on every projection, `lm_head` with bias.
package enum Phi2Family: ModelFamily {
    package static let architectures = ["PhiForCausalLM"]
    package static let ggufArchitecture: String? = "phi2"
    /// Phi-2 ships no chat template; its model card's QA format.
    package static let fallbackChatTemplate: ChatTemplate? = ChatTemplate(format: .instruct)

    /// The keys of a Phi-2 `config.json` beyond `HFConfig`'s, with transformers' defaults.
    private struct Configuration: Decodable {
        var layerNormEps = 1e-5
        var hiddenAct = "gelu_new"
        /// Per-head q/k LayerNorm (unsupported when true).
        var qkLayernorm = false

        enum CodingKeys: String, CodingKey {
            case layerNormEps = "layer_norm_eps", hiddenAct = "hidden_act", qkLayernorm = "qk_layernorm"
        }

        init(from decoder: any Swift.Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            layerNormEps = try c.decode(.layerNormEps, default: layerNormEps)
            hiddenAct = try c.decode(.hiddenAct, default: hiddenAct)
            qkLayernorm = try c.decode(.qkLayernorm, default: qkLayernorm)
        }
    }

    package static func options(from config: HFConfig) throws -> DecoderOptions {
        let own = try config.decode(Configuration.self)
        if own.qkLayernorm {
            throw FormatError(.invalidValue, "per-head q/k LayerNorm is not supported", path: config.path, key: "qk_layernorm")
        }
        let c = try ConfigPrelude(config)
        let rotaryDims = try rotaryDimensions(headDim: c.headDim, factor: config.partialRotaryFactor ?? 0.5)
        return c.options(
            norm: .layer(eps: Float(own.layerNormEps)), mlp: .plain(try activation(own.hiddenAct, path: config.path)),
            rope: .init(theta: Float(config.ropeTheta ?? 10000), rotaryDims: rotaryDims),
            tiedEmbeddings: config.tieWordEmbeddings ?? false, maxContext: config.maxPositionEmbeddings ?? 2048
        ).with { $0.parallelResidual = true }
    }

    package static func tensorName(_ role: TensorRole) -> String? {
        let p = "model.layers"
        switch role {
        case .outputNorm: return "model.final_layernorm.weight"
        case .outputNormBias: return "model.final_layernorm.bias"
        case .attnOutput(let l): return "\(p).\(l).self_attn.dense.weight"
        case .attnOutputBias(let l): return "\(p).\(l).self_attn.dense.bias"
        case .ffnUp(let l): return "\(p).\(l).mlp.fc1.weight"
        case .ffnUpBias(let l): return "\(p).\(l).mlp.fc1.bias"
        case .ffnDown(let l): return "\(p).\(l).mlp.fc2.weight"
        case .ffnDownBias(let l): return "\(p).\(l).mlp.fc2.bias"
        case .ffnNorm, .ffnNormBias, .ffnGate, .ffnGateUp, .attnQKV, .attnQKVBias: return nil
        default: return role.huggingFaceName
        }
    }

    package static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = try GGUFHyperparameters(gguf)
        return try h.base(norm: .layer(eps: try h.optionalFloat("attention.layer_norm_epsilon") ?? 1e-5), mlp: .plain(.geluTanh))
            .with { $0.parallelResidual = true }
    }
}
