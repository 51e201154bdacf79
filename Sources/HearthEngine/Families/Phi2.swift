import HearthFormats
import HearthTokenizers

/// Phi-2 (`PhiForCausalLM`): LayerNorm with bias, attention and MLP in parallel from one
/// norm, partial rotary, `gelu_new`, biases on every projection, `lm_head` with bias.
public enum Phi2Family: ModelFamily {
    public static let architectures = ["PhiForCausalLM"]
    /// Phi-2 ships no chat template; its model card's QA format.
    public static let fallbackChatTemplate: ChatTemplate? = ChatTemplate(format: .instruct)

    public static func options(from config: HFConfig) throws -> DecoderOptions {
        if config.qkLayernorm == true {
            throw FormatError(
                .invalidValue, "per-head q/k LayerNorm is not supported", path: "config.json", key: "qk_layernorm")
        }
        let hidden = try required(config.hiddenSize, "hidden_size")
        let heads = try required(config.numAttentionHeads, "num_attention_heads")
        guard hidden % heads == 0 else {
            throw FormatError(.invalidValue, "hidden_size is not divisible by num_attention_heads", path: "config.json", key: "hidden_size")
        }
        let headDim = hidden / heads
        let kvHeads = try required(config.numKeyValueHeads ?? heads, "num_key_value_heads")
        let rotaryDims = try Phi3Family.rotaryDimensions(headDim: headDim, factor: config.partialRotaryFactor ?? 0.5)
        return DecoderOptions(
            hiddenSize: hidden, layerCount: try required(config.numHiddenLayers, "num_hidden_layers"),
            headCount: heads, kvHeadCount: kvHeads, headDim: headDim,
            ffnSize: try required(config.intermediateSize, "intermediate_size"),
            vocabSize: try required(config.vocabSize, "vocab_size"),
            norm: .layer(eps: Float(config.layerNormEps ?? 1e-5)),
            mlp: .plain(try activation(config.hiddenAct ?? "gelu_new")),
            rope: .init(theta: Float(config.ropeTheta ?? 10000), rotaryDims: rotaryDims),
            tiedEmbeddings: config.tieWordEmbeddings ?? false,
            maxContext: config.maxPositionEmbeddings ?? 2048
        ).with { $0.parallelResidual = true }
    }

    public static func tensorName(_ role: TensorRole) -> String? {
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

    /// Maps transformers' activation names.
    static func activation(_ name: String) throws -> DecoderOptions.Activation {
        switch name {
        case "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_tanh": return .geluTanh
        case "gelu": return .gelu
        case "silu", "swish": return .silu
        default:
            throw FormatError(.invalidValue, "unsupported activation '\(name)'", path: "config.json", key: "hidden_act")
        }
    }
}

extension DecoderOptions {
    /// A copy with `change` applied (for the flags that the initialiser leaves at defaults).
    func with(_ change: (inout DecoderOptions) -> Void) -> DecoderOptions {
        var copy = self
        change(&copy)
        return copy
    }
}
