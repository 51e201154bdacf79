import Foundation
import HearthFormats

/// Gemma 3 text models (`Gemma3ForCausalLM`): interleaved sliding-window and global layers
/// with their own RoPE bases, q/k RMSNorm, norms before and after attention and MLP,
/// GELU-tanh gated MLP, embeddings scaled by √hidden, tied output. Checkpoints store norm
/// weights as w − 1 (the model multiplies by 1 + w); the offset is applied at load.
public enum Gemma3Family: ModelFamily {
    public static let architectures = ["Gemma3ForCausalLM"]
    public static let normWeightOffset: Float = 1

    public static func options(from config: HFConfig) throws -> DecoderOptions {
        if let cap = config.finalLogitSoftcapping {
            throw FormatError(
                .invalidValue, "final logit soft-capping (\(cap)) is not supported", path: "config.json",
                key: "final_logit_softcapping")
        }
        let hidden = try required(config.hiddenSize, "hidden_size")
        let heads = try required(config.numAttentionHeads, "num_attention_heads")
        let kvHeads = try required(config.numKeyValueHeads ?? heads, "num_key_value_heads")
        guard heads % kvHeads == 0 else {
            throw FormatError(.invalidValue, "num_attention_heads is not a multiple of num_key_value_heads", path: "config.json", key: "num_key_value_heads")
        }
        let headDim = try required(config.headDim ?? 256, "head_dim")
        let layers = try required(config.numHiddenLayers, "num_hidden_layers")
        // Which layers slide: `layer_types`, or every layer but each n-th (`sliding_window_pattern`, default 6).
        let sliding: [Bool]
        if let types = config.layerTypes {
            guard types.count == layers else {
                throw FormatError(.invalidValue, "has \(types.count) entries for \(layers) layers", path: "config.json", key: "layer_types")
            }
            sliding = types.map { $0 == "sliding_attention" }
        } else {
            let pattern = config.slidingWindowPattern ?? 6
            sliding = (0..<layers).map { ($0 + 1) % max(pattern, 1) != 0 }
        }
        let fullParameters = config.ropeParametersByLayerType?["full_attention"]
        let slidingParameters = config.ropeParametersByLayerType?["sliding_attention"]
        let fullTheta = Float(fullParameters?.ropeTheta ?? config.ropeTheta ?? 1_000_000)
        let slidingTheta = Float(slidingParameters?.ropeTheta ?? config.ropeLocalBaseFreq ?? 10_000)
        var fullScaling = DecoderOptions.Scaling.none
        if let scaling = fullParameters ?? config.ropeScaling, scaling.type == "linear", let factor = scaling.factor {
            fullScaling = .linear(factor: Float(factor))
        }
        let activation = try Phi2Family.activation(config.hiddenActivation ?? config.hiddenAct ?? "gelu_pytorch_tanh")
        return DecoderOptions(
            hiddenSize: hidden, layerCount: layers, headCount: heads, kvHeadCount: kvHeads, headDim: headDim,
            ffnSize: try required(config.intermediateSize, "intermediate_size"),
            vocabSize: try required(config.vocabSize, "vocab_size"),
            norm: .rms(eps: Float(config.rmsNormEps ?? 1e-6)),
            mlp: .gated(activation),
            rope: .init(theta: fullTheta, rotaryDims: headDim, scaling: fullScaling),
            tiedEmbeddings: config.tieWordEmbeddings ?? true,
            maxContext: config.maxPositionEmbeddings ?? 32768,
            slidingWindow: config.slidingWindow
        ).with {
            $0.slidingLayers = sliding
            $0.slidingRoPE = .init(theta: slidingTheta, rotaryDims: headDim)
            $0.qkNorm = true
            $0.sandwichNorms = true
            $0.embeddingScale = Float(Double(hidden).squareRoot())
            $0.attentionScale = Float(1 / (config.queryPreAttnScalar ?? Double(headDim)).squareRoot())
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
}
