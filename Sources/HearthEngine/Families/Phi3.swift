import Foundation
import HearthFormats
import HearthTokenizers

/// Phi-3 / Phi-3.5 (`Phi3ForCausalLM`, GGUF `phi3`): Llama-style decoder with fused
/// `qkv_proj` and `gate_up_proj`, RMSNorm, SwiGLU, grouped-query attention, LongRoPE and
/// partial rotary.
package enum Phi3Family: ModelFamily {
    package static let architectures = ["Phi3ForCausalLM"]
    package static let ggufArchitecture: String? = "phi3"

    /// The keys of a Phi-3 `config.json` beyond `HFConfig`'s, with transformers' defaults.
    private struct Configuration: Decodable {
        var rmsNormEps = 1e-5
        /// Phi-3-mini-4k's attention window (nil: none).
        var slidingWindow: Int?

        enum CodingKeys: String, CodingKey {
            case rmsNormEps = "rms_norm_eps", slidingWindow = "sliding_window"
        }

        init(from decoder: any Swift.Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            rmsNormEps = try c.decode(.rmsNormEps, default: rmsNormEps)
            slidingWindow = try c.decodeIfPresent(Int.self, forKey: .slidingWindow)
        }
    }

    package static func options(from config: HFConfig) throws -> DecoderOptions {
        let own = try config.decode(Configuration.self)
        let c = try ConfigPrelude(config)
        let rotaryDims = try rotaryDimensions(headDim: c.headDim, factor: config.partialRotaryFactor ?? 1)
        let maxContext = config.maxPositionEmbeddings ?? 4096
        let scaling = try ropeScaling(config, rotaryDims: rotaryDims, maxContext: maxContext)
        return c.options(
            norm: .rms(eps: Float(own.rmsNormEps)), mlp: .gated(.silu),
            rope: .init(theta: Float(config.ropeTheta ?? 10000), rotaryDims: rotaryDims, scaling: scaling),
            tiedEmbeddings: config.tieWordEmbeddings ?? false, maxContext: maxContext,
            slidingWindow: own.slidingWindow)
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
                    path: config.path, key: "rope_scaling")
            }
            let original = scaling.originalMaxPositionEmbeddings ?? config.originalMaxPositionEmbeddings ?? maxContext
            let attention = scaling.attentionFactor ?? longRoPEAttentionFactor(context: maxContext, original: original)
            return .longRoPE(
                short: short.map(Float.init), long: long.map(Float.init), originalContext: original,
                attentionFactor: Float(attention))
        default:
            throw FormatError(
                .invalidValue, "unsupported rope scaling type '\(scaling.type)'", path: config.path,
                key: "rope_scaling.type", remedy: "Phi-3 checkpoints use longrope or none")
        }
    }

    package static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = try GGUFHyperparameters(gguf)
        var o = try h.base(norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-5), mlp: .gated(.silu))
        let rotaryDims = o.rope.rotaryDims
        if let long = try h.ropeFactors("rope_factors_long.weight", rotaryDims: rotaryDims),
            let short = try h.ropeFactors("rope_factors_short.weight", rotaryDims: rotaryDims)
        {
            let original = try h.optionalInt("rope.scaling.original_context_length") ?? o.maxContext
            let attention = try h.optionalFloat("rope.scaling.attn_factor")
                ?? Float(longRoPEAttentionFactor(context: o.maxContext, original: original))
            o.rope.scaling = .longRoPE(short: short, long: long, originalContext: original, attentionFactor: attention)
        }
        return o
    }

    package static func ggufTensorName(_ role: TensorRole) -> String? {
        switch role {
        case .ffnGateUp(let l): return "blk.\(l).ffn_up.weight"  // fused gate | up
        case .ffnUp, .ffnGate: return nil
        default: return role.ggufName
        }
    }

    /// GGUF files without a template: Phi-3's `<|user|> … <|end|>` format.
    package static func ggufFallbackChatTemplate(bos: String?, eos: String?) -> ChatTemplate? {
        ChatTemplate(format: .phi3, endOfText: eos ?? "")
    }
}
