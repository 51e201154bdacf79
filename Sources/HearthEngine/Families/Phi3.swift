import Foundation
import HearthFormats

/// Phi-3 / Phi-3.5 (`Phi3ForCausalLM`): Llama-style decoder with fused `qkv_proj` and
/// `gate_up_proj`, RMSNorm, SwiGLU, grouped-query attention, LongRoPE and partial rotary.
public enum Phi3Family: ModelFamily {
    public static let architectures = ["Phi3ForCausalLM"]

    public static func options(from config: HFConfig) throws -> DecoderOptions {
        let hidden = try required(config.hiddenSize, "hidden_size")
        let heads = try required(config.numAttentionHeads, "num_attention_heads")
        let kvHeads = try required(config.numKeyValueHeads ?? heads, "num_key_value_heads")
        guard hidden % heads == 0 || config.headDim != nil else {
            throw FormatError(
                .invalidValue, "hidden_size \(hidden) is not divisible by num_attention_heads \(heads)",
                path: "config.json", key: "hidden_size")
        }
        guard heads % kvHeads == 0 else {
            throw FormatError(
                .invalidValue, "num_attention_heads \(heads) is not a multiple of num_key_value_heads \(kvHeads)",
                path: "config.json", key: "num_key_value_heads")
        }
        let headDim = try required(config.headDim ?? hidden / heads, "head_dim")
        let rotaryDims = try rotaryDimensions(headDim: headDim, factor: config.partialRotaryFactor ?? 1)
        let maxContext = config.maxPositionEmbeddings ?? 4096
        let scaling = try ropeScaling(config, rotaryDims: rotaryDims, maxContext: maxContext)
        return DecoderOptions(
            hiddenSize: hidden,
            layerCount: try required(config.numHiddenLayers, "num_hidden_layers"),
            headCount: heads, kvHeadCount: kvHeads, headDim: headDim,
            ffnSize: try required(config.intermediateSize, "intermediate_size"),
            vocabSize: try required(config.vocabSize, "vocab_size"),
            norm: .rms(eps: Float(config.rmsNormEps ?? 1e-5)),
            mlp: .gated(.silu),
            rope: .init(theta: Float(config.ropeTheta ?? 10000), rotaryDims: rotaryDims, scaling: scaling),
            tiedEmbeddings: config.tieWordEmbeddings ?? false,
            maxContext: maxContext,
            slidingWindow: config.slidingWindow)
    }

    /// int(headDim × partial_rotary_factor), as transformers computes it; must be even and positive.
    static func rotaryDimensions(headDim: Int, factor: Double) throws -> Int {
        guard factor > 0, factor <= 1 else {
            throw FormatError(.invalidValue, "must be in (0, 1]", path: "config.json", key: "partial_rotary_factor")
        }
        let rotaryDims = Int(Double(headDim) * factor)
        guard rotaryDims % 2 == 0, rotaryDims > 0 else {
            throw FormatError(
                .invalidValue, "gives an odd rotary dimension \(rotaryDims)", path: "config.json",
                key: "partial_rotary_factor")
        }
        return rotaryDims
    }

    /// LongRoPE (`longrope`, formerly `su`) as transformers implements it.
    static func ropeScaling(_ config: HFConfig, rotaryDims: Int, maxContext: Int) throws -> DecoderOptions.Scaling {
        guard let scaling = config.ropeScaling else { return .none }
        switch scaling.type {
        case "default": return .none
        case "linear":
            return .linear(factor: Float(scaling.factor ?? 1))
        case "longrope", "su":
            guard let short = scaling.shortFactor, let long = scaling.longFactor,
                short.count == rotaryDims / 2, long.count == rotaryDims / 2
            else {
                throw FormatError(
                    .invalidValue, "longrope needs short_factor and long_factor of \(rotaryDims / 2) values each",
                    path: "config.json", key: "rope_scaling")
            }
            let original = scaling.originalMaxPositionEmbeddings ?? config.originalMaxPositionEmbeddings ?? maxContext
            let factor = Double(maxContext) / Double(original)
            let attention =
                scaling.attentionFactor ?? (factor <= 1 ? 1 : (1 + Foundation.log(factor) / Foundation.log(Double(original))).squareRoot())
            return .longRoPE(
                short: short.map(Float.init), long: long.map(Float.init), originalContext: original,
                attentionFactor: Float(attention))
        default:
            throw FormatError(
                .invalidValue, "unsupported rope scaling type '\(scaling.type)'", path: "config.json",
                key: "rope_scaling.type", remedy: "Phi-3 checkpoints use longrope or none")
        }
    }
}
