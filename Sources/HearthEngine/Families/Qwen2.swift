import HearthFormats
import HearthTokenizers

/// Qwen2 / Qwen2.5 (`Qwen2ForCausalLM`, GGUF `qwen2`): Llama-style RMSNorm, SwiGLU and
/// grouped-query attention, with biases on the q/k/v projections (loaded because the files
/// have them), RoPE in the rotate-half pairing, tied or separate output. Sliding-window layers
/// exist only when `use_sliding_window` is true (then the layers from `max_window_layers` on,
/// or those `layer_types` names); the released checkpoints leave it off.
package enum Qwen2Family: ModelFamily {
    package static let architectures = ["Qwen2ForCausalLM"]
    package static let ggufArchitecture: String? = "qwen2"
    /// Files without a template get Qwen's own turn format, ChatML.
    package static let fallbackChatTemplate: ChatTemplate? = ChatTemplate(format: .chatml)

    /// The keys of a Qwen2 or Qwen3 `config.json` beyond `HFConfig`'s, with transformers' defaults.
    private struct Configuration: Decodable {
        var rmsNormEps = 1e-6
        var hiddenAct = "silu"
        var useSlidingWindow = false
        var slidingWindow: Int?
        var maxWindowLayers = 28
        /// Per-layer attention kinds (`sliding_attention`, `full_attention`).
        var layerTypes: [String]?

        enum CodingKeys: String, CodingKey {
            case rmsNormEps = "rms_norm_eps", hiddenAct = "hidden_act", useSlidingWindow = "use_sliding_window"
            case slidingWindow = "sliding_window", maxWindowLayers = "max_window_layers", layerTypes = "layer_types"
        }

        init(from decoder: any Swift.Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            rmsNormEps = try c.decode(.rmsNormEps, default: rmsNormEps)
            hiddenAct = try c.decode(.hiddenAct, default: hiddenAct)
            useSlidingWindow = try c.decode(.useSlidingWindow, default: useSlidingWindow)
            slidingWindow = try c.decodeIfPresent(Int.self, forKey: .slidingWindow)
            maxWindowLayers = try c.decode(.maxWindowLayers, default: maxWindowLayers)
            layerTypes = try c.decodeIfPresent([String].self, forKey: .layerTypes)
        }
    }

    package static func options(from config: HFConfig) throws -> DecoderOptions {
        try qwenOptions(from: config, defaultHeadDim: nil)
    }

    /// The options of a Qwen2-style configuration (Qwen3 reads the same keys; its head size
    /// defaults to 128 rather than hidden / heads).
    static func qwenOptions(from config: HFConfig, defaultHeadDim: Int?) throws -> DecoderOptions {
        let own = try config.decode(Configuration.self)
        let c = try ConfigPrelude(config, defaultHeadDim: defaultHeadDim)
        if let s = config.ropeScaling, s.type != "default" {
            throw FormatError(
                .invalidValue, "unsupported rope scaling '\(s.type)'", path: config.path, key: "rope_scaling",
                remedy: "Hearth runs Qwen checkpoints with the default RoPE")
        }
        // transformers: sliding_window counts only with use_sliding_window; layer_types, else
        // every layer from max_window_layers on.
        let window = own.useSlidingWindow ? own.slidingWindow : nil
        var sliding = [Bool](repeating: false, count: c.layers)
        if let window {
            guard window > 0 else {
                throw FormatError(.invalidValue, "must be positive, got \(window)", path: config.path, key: "sliding_window")
            }
            if let types = own.layerTypes {
                guard types.count == c.layers else {
                    throw FormatError(.invalidValue, "has \(types.count) entries for \(c.layers) layers", path: config.path, key: "layer_types")
                }
                sliding = types.map { $0 == "sliding_attention" }
            } else {
                sliding = (0..<c.layers).map { $0 >= own.maxWindowLayers }
            }
        }
        let anySliding = sliding.contains(true)
        return c.options(
            norm: .rms(eps: Float(own.rmsNormEps)), mlp: .gated(try activation(own.hiddenAct, path: config.path)),
            rope: .init(theta: Float(config.ropeTheta ?? 10000), rotaryDims: c.headDim),
            tiedEmbeddings: config.tieWordEmbeddings ?? false, maxContext: config.maxPositionEmbeddings ?? 32768,
            slidingWindow: anySliding ? window : nil
        ).with { $0.slidingLayers = anySliding ? sliding : [] }
    }

    package static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = try GGUFHyperparameters(gguf)
        // llama.cpp runs qwen2/qwen3 with NEOX RoPE and does not permute Q/K: the default pairing.
        var o = try h.base(norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-6), mlp: .gated(.silu))
        if let linear = try h.linearScaling() {
            o.rope.scaling = linear
        } else if let type = try h.optionalString("rope.scaling.type"), type != "none" {
            throw FormatError(
                .invalidValue, "unsupported rope scaling '\(type)'", path: gguf.file.path, key: "\(h.arch).rope.scaling.type",
                remedy: "Hearth runs Qwen files with the default RoPE")
        }
        return o
    }
}
