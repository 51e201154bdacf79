import Foundation
import HearthFormats
import HearthTokenizers

/// Gemma 3 text models (`Gemma3ForCausalLM`, GGUF `gemma3`): interleaved sliding-window and
/// global layers with their own RoPE bases, q/k RMSNorm, norms before and after attention and
/// MLP, GELU-tanh gated MLP, embeddings scaled by √hidden, tied output. Checkpoints store norm
/// weights as w − 1 (the model multiplies by 1 + w); the offset is applied at load.
public enum Gemma3Family: ModelFamily {
    public static let architectures = ["Gemma3ForCausalLM"]
    public static let ggufArchitecture: String? = "gemma3"
    public static let normWeightOffset: Float = 1

    public static func options(from config: HFConfig) throws -> DecoderOptions {
        if let cap = config.finalLogitSoftcapping {
            throw FormatError(
                .invalidValue, "final logit soft-capping (\(cap)) is not supported", path: "config.json",
                key: "final_logit_softcapping")
        }
        let c = try ConfigPrelude(config, defaultHeadDim: 256)
        // Which layers slide: `layer_types`, or every layer but each n-th (`sliding_window_pattern`, default 6).
        let sliding: [Bool]
        if let types = config.layerTypes {
            guard types.count == c.layers else {
                throw FormatError(.invalidValue, "has \(types.count) entries for \(c.layers) layers", path: "config.json", key: "layer_types")
            }
            sliding = types.map { $0 == "sliding_attention" }
        } else {
            let pattern = config.slidingWindowPattern ?? 6
            sliding = (0..<c.layers).map { ($0 + 1) % max(pattern, 1) != 0 }
        }
        let fullParameters = config.ropeParametersByLayerType?["full_attention"]
        let slidingParameters = config.ropeParametersByLayerType?["sliding_attention"]
        let fullTheta = Float(fullParameters?.ropeTheta ?? config.ropeTheta ?? 1_000_000)
        let slidingTheta = Float(slidingParameters?.ropeTheta ?? config.ropeLocalBaseFreq ?? 10_000)
        var fullScaling = DecoderOptions.Scaling.none
        if let scaling = fullParameters ?? config.ropeScaling, scaling.type == "linear", let factor = scaling.factor {
            fullScaling = .linear(factor: Float(factor))
        }
        return c.options(
            norm: .rms(eps: Float(config.rmsNormEps ?? 1e-6)),
            mlp: .gated(try activation(config.hiddenActivation ?? config.hiddenAct ?? "gelu_pytorch_tanh")),
            rope: .init(theta: fullTheta, rotaryDims: c.headDim, scaling: fullScaling),
            tiedEmbeddings: config.tieWordEmbeddings ?? true,
            maxContext: config.maxPositionEmbeddings ?? 32768, slidingWindow: config.slidingWindow
        ).with {
            $0.slidingLayers = sliding
            $0.slidingRoPE = .init(theta: slidingTheta, rotaryDims: c.headDim)
            $0.qkNorm = true
            $0.sandwichNorms = true
            $0.embeddingScale = Float(Double(c.hidden).squareRoot())
            $0.attentionScale = Float(1 / (config.queryPreAttnScalar ?? Double(c.headDim)).squareRoot())
        }
    }

    public static func tensorName(_ role: TensorRole) -> String? {
        let p = "model.layers"
        switch role {
        case .postAttnNorm(let l): return "\(p).\(l).post_attention_layernorm.weight"
        case .ffnNorm(let l): return "\(p).\(l).pre_feedforward_layernorm.weight"
        case .postFFNNorm(let l): return "\(p).\(l).post_feedforward_layernorm.weight"
        default: return role.huggingFaceName
        }
    }

    public static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = GGUFHyperparameters(gguf: gguf, arch: "gemma3")
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
    public static func ggufFallbackChatTemplate(bos: String?, eos: String?) -> ChatTemplate? {
        ChatTemplate(format: .gemma, prefix: bos ?? "")
    }
}
