import Foundation
import HearthFormats
import HearthJSON
import HearthTokenizers

/// Gemma 4's small text models (`Gemma4ForCausalLM`, `model_type` `gemma4_text`, as
/// transformers 5.x defines them; E2B/E4B's text decoder): Gemma 3's layout (sliding-window and
/// full layers, q/k norms, norms before and after attention and MLP, GELU-tanh gated MLP,
/// embeddings scaled by √hidden, tied output) plus
///
/// - per-layer head sizes: `head_dim` on sliding layers, `global_head_dim` on full ones, each
///   kind with its own RoPE (full layers: "proportional", only the first
///   `partial_rotary_factor` of the frequencies turn, the others stay at angle 0);
/// - an unweighted RMS norm on values and an attention scale of 1;
/// - KV sharing: the last `num_kv_shared_layers` layers attend to the keys and values of the
///   last earlier layer of their kind and have no key/value projections; with
///   `use_double_wide_mlp` their MLP is twice as wide;
/// - per-layer embeddings (``PerLayerInputWeights``), a stored scalar per layer's output, and
///   logits soft-capped at `final_logit_softcapping`.
///
/// Norm weights are stored as the multiplier itself (no 1 + w). Refused with the key named:
/// `attention_k_eq_v` (values taken from the keys, the 26B/31B models), mixture-of-experts
/// blocks, bidirectional attention and RoPE types other than these.
///
/// `Gemma4ForConditionalGeneration` checkpoints (the released E2B/E4B: `text_config` inside the
/// config, the decoder's tensors under `model.language_model.`) load their text decoder; their
/// vision and audio towers are not read (Hearth takes text only), as transformers'
/// `AutoModelForCausalLM` loads the same checkpoint for text generation.
package enum Gemma4Family: ModelFamily {
    package static let architectures = ["Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"]
    package static let ggufArchitecture: String? = "gemma4"
    static let wrapper = "Gemma4ForConditionalGeneration"

    private struct Wrapper: Decodable {
        /// Handed on as a configuration of its own (HearthJSON's value, through `Codable`).
        var textConfig: JSON?
        enum CodingKeys: String, CodingKey { case textConfig = "text_config" }
    }

    /// The text decoder's configuration: `config` itself, or a wrapper's `text_config`.
    static func textConfig(_ config: HFConfig) throws -> HFConfig {
        guard config.architectures.contains(wrapper) else { return config }
        guard let text = try config.decode(Wrapper.self).textConfig else {
            throw FormatError(
                .missingKey, "a \(wrapper) configuration has no text_config", path: config.path, key: "text_config")
        }
        return try HFConfig(json: try JSONEncoder().encode(text), path: config.path + " (text_config)")
    }

    package static func decoderPrefix(for config: HFConfig) -> String? {
        config.architectures.contains(wrapper) ? "model.language_model." : nil
    }

    /// The keys of a Gemma 4 text `config.json` beyond `HFConfig`'s, with transformers' defaults.
    private struct Configuration: Decodable {
        struct RoPEEntry: Decodable {
            var ropeType: String?
            var ropeTheta: Double?
            var partialRotaryFactor: Double?
            var factor: Double?
            enum CodingKeys: String, CodingKey {
                case ropeType = "rope_type", ropeTheta = "rope_theta", partialRotaryFactor = "partial_rotary_factor"
                case factor
            }
        }
        struct LayerOverride: Decodable {
            var headDim: Int?
            var numKeyValueHeads: Int?
            enum CodingKeys: String, CodingKey { case headDim = "head_dim", numKeyValueHeads = "num_key_value_heads" }
        }

        var rmsNormEps = 1e-6
        var activation = "gelu_pytorch_tanh"
        var slidingWindow = 512
        var layerTypes: [String]?
        var rope: [String: RoPEEntry]?
        var globalHeadDim: Int?
        var perLayerConfig: [String: LayerOverride]?
        var attentionKEqV = false
        var numKVSharedLayers = 0
        var useDoubleWideMLP = false
        var perLayerInputSize: Int? = 256
        var perLayerVocabSize: Int?
        var finalLogitSoftcapping: Double?
        var enableMoE = false
        var bidirectional: String?

        enum CodingKeys: String, CodingKey {
            case rmsNormEps = "rms_norm_eps", activation = "hidden_activation", slidingWindow = "sliding_window"
            case layerTypes = "layer_types", rope = "rope_parameters", globalHeadDim = "global_head_dim"
            case perLayerConfig = "per_layer_config", attentionKEqV = "attention_k_eq_v"
            case numKVSharedLayers = "num_kv_shared_layers", useDoubleWideMLP = "use_double_wide_mlp"
            case perLayerInputSize = "hidden_size_per_layer_input", perLayerVocabSize = "vocab_size_per_layer_input"
            case finalLogitSoftcapping = "final_logit_softcapping", enableMoE = "enable_moe_block"
            case bidirectional = "use_bidirectional_attention"
        }

        init(from decoder: any Swift.Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            rmsNormEps = try c.decode(.rmsNormEps, default: rmsNormEps)
            activation = try c.decode(.activation, default: activation)
            slidingWindow = try c.decode(.slidingWindow, default: slidingWindow)
            layerTypes = try c.decodeIfPresent([String].self, forKey: .layerTypes)
            rope = try c.decodeIfPresent([String: RoPEEntry].self, forKey: .rope)
            globalHeadDim = try c.decodeIfPresent(Int.self, forKey: .globalHeadDim)
            perLayerConfig = try c.decodeIfPresent([String: LayerOverride].self, forKey: .perLayerConfig)
            attentionKEqV = try c.decode(.attentionKEqV, default: false)
            numKVSharedLayers = try c.decode(.numKVSharedLayers, default: 0)
            useDoubleWideMLP = try c.decode(.useDoubleWideMLP, default: false)
            // Present and null (or 0): no per-layer embeddings.
            if c.contains(.perLayerInputSize) {
                perLayerInputSize = try c.decodeIfPresent(Int.self, forKey: .perLayerInputSize)
            }
            perLayerVocabSize = try c.decodeIfPresent(Int.self, forKey: .perLayerVocabSize)
            finalLogitSoftcapping = try c.decodeIfPresent(Double.self, forKey: .finalLogitSoftcapping)
            enableMoE = try c.decode(.enableMoE, default: false)
            bidirectional = try c.decodeIfPresent(String.self, forKey: .bidirectional)
        }
    }

    package static func options(from wrapperOrText: HFConfig) throws -> DecoderOptions {
        let config = try textConfig(wrapperOrText)
        let own = try config.decode(Configuration.self)
        let path = config.path
        func refuse(_ what: String, key: String) -> FormatError {
            FormatError(.invalidValue, "\(what) is not supported", path: path, key: key)
        }
        if own.attentionKEqV { throw refuse("attention_k_eq_v (values taken from the keys, Gemma 4 26B/31B)", key: "attention_k_eq_v") }
        if own.enableMoE { throw refuse("a mixture-of-experts block (Gemma 4 26B-A4B)", key: "enable_moe_block") }
        if let mode = own.bidirectional { throw refuse("bidirectional attention ('\(mode)')", key: "use_bidirectional_attention") }
        let c = try ConfigPrelude(config, defaultHeadDim: 256)

        // Layer kinds: `layer_types`, else transformers' default of five sliding layers to one full; the last is full.
        var types = own.layerTypes ?? (0..<c.layers).map { ($0 + 1) % 6 == 0 ? "full_attention" : "sliding_attention" }
        guard types.count == c.layers else {
            throw FormatError(.invalidValue, "has \(types.count) entries for \(c.layers) layers", path: path, key: "layer_types")
        }
        if let bad = types.first(where: { $0 != "sliding_attention" && $0 != "full_attention" }) {
            throw refuse("layer type '\(bad)'", key: "layer_types")
        }
        types[c.layers - 1] = "full_attention"
        let sliding = types.map { $0 == "sliding_attention" }

        // Full layers' head size: `global_head_dim`, else a full layer's `per_layer_config` entry, else 512.
        let fullOverride = types.indices.lazy.filter { !sliding[$0] }.compactMap { own.perLayerConfig?[String($0)] }.first
        let fullHeadDim = own.globalHeadDim ?? fullOverride?.headDim ?? 512
        if let kv = fullOverride?.numKeyValueHeads, kv != c.kvHeads {
            throw refuse("a different key/value head count on full layers (\(kv))", key: "per_layer_config")
        }

        // RoPE per layer kind.
        func entry(_ kind: String) -> Configuration.RoPEEntry? { own.rope?[kind] }
        let slidingEntry = entry("sliding_attention")
        guard (slidingEntry?.ropeType ?? "default") == "default" else {
            throw refuse("RoPE type '\(slidingEntry?.ropeType ?? "")' on sliding layers", key: "rope_parameters.sliding_attention.rope_type")
        }
        let fullRoPE = try fullAttentionRoPE(entry("full_attention"), headDim: fullHeadDim, path: path)

        // KV sharing: the last N layers reuse the last earlier layer of their own kind.
        let firstShared = c.layers - own.numKVSharedLayers
        guard (1...c.layers).contains(firstShared) || own.numKVSharedLayers == 0 else {
            throw FormatError(.invalidValue, "is not below num_hidden_layers (\(c.layers))", path: path, key: "num_kv_shared_layers")
        }
        let sources = try kvSources(sliding: sliding, shared: own.numKVSharedLayers) { l in
            FormatError(
                .invalidValue, "layer \(l) (\(types[l])) shares keys, but no earlier layer of its kind computes them",
                path: path, key: "num_kv_shared_layers")
        }

        if let perLayerVocab = own.perLayerVocabSize, own.perLayerInputSize ?? 0 > 0, perLayerVocab != c.vocab {
            throw refuse("a per-layer embedding vocabulary (\(perLayerVocab)) other than vocab_size (\(c.vocab))", key: "vocab_size_per_layer_input")
        }
        return c.options(
            norm: .rms(eps: Float(own.rmsNormEps)), mlp: .gated(try activation(own.activation, key: "hidden_activation", path: path)),
            rope: fullRoPE, tiedEmbeddings: config.tieWordEmbeddings ?? true,
            maxContext: config.maxPositionEmbeddings ?? 131_072, slidingWindow: own.slidingWindow
        ).with {
            $0.slidingLayers = sliding
            $0.slidingRoPE = .init(theta: Float(slidingEntry?.ropeTheta ?? 10_000), rotaryDims: c.headDim)
            $0.fullAttentionHeadDim = fullHeadDim
            $0.qkNorm = true
            $0.valueNorm = true
            $0.sandwichNorms = true
            $0.embeddingScale = Float(Double(c.hidden).squareRoot())
            $0.attentionScale = 1
            $0.kvSourceLayers = own.numKVSharedLayers > 0 ? sources : []
            if own.useDoubleWideMLP && own.numKVSharedLayers > 0 {
                $0.layerFFNSizes = (0..<c.layers).map { $0 >= firstShared ? 2 * c.ffn : c.ffn }
            }
            if let width = own.perLayerInputSize, width > 0 { $0.perLayerInputSize = width }
            $0.layerScalars = true
            $0.finalLogitSoftcap = own.finalLogitSoftcapping.map { Float($0) }
        }
    }

    /// The options of a `gemma4` GGUF file as llama.cpp's converter writes it: per-layer
    /// `feed_forward_length` (an array when the MLP is double-wide on the sharing layers),
    /// `head_count_kv` (a number, or an array that must hold one value), the
    /// `attention.sliding_window_pattern` bools, `attention.shared_kv_layers`,
    /// `embedding_length_per_layer_input`, the two head sizes (`key_length` on full layers,
    /// `key_length_swa` on sliding ones) and RoPE per kind (`rope.freq_base`/`dimension_count`
    /// with the `rope_freqs` divisors on full layers — 1 where a pair turns, 1e30 where it does
    /// not: "proportional" RoPE; `rope.freq_base_swa`/`dimension_count_swa` on sliding layers).
    /// Tensor names are llama.cpp's (``TensorRole/ggufName``); norms hold the multiplier itself.
    package static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = try GGUFHyperparameters(gguf)
        let md = try GGUFLayerMetadata(h)
        let layers = md.layers, hidden = try h.int("embedding_length"), heads = try h.int("attention.head_count")
        let ffn = try gguf.metadata.require(md.key("feed_forward_length")) { _ in try md.perLayer("feed_forward_length") }
        let kvHeadsPerLayer = try md.perLayer("attention.head_count_kv") ?? [Int](repeating: heads, count: layers)
        guard let kvHeads = kvHeadsPerLayer.first, kvHeadsPerLayer.allSatisfy({ $0 == kvHeads }) else {
            throw md.invalid("different key/value head counts per layer (\(kvHeadsPerLayer)) are not supported", "attention.head_count_kv")
        }
        guard heads % kvHeads == 0 else { throw md.invalid("head_count \(heads) is not a multiple of \(kvHeads)", "attention.head_count_kv") }
        let sliding = try md.slidingLayers()
        let window = try h.optionalInt("attention.sliding_window")
        if sliding.contains(true), (window ?? 0) <= 0 {
            throw md.invalid("sliding layers need a positive attention.sliding_window", "attention.sliding_window")
        }
        let (fullHeadDim, slidingHeadDim) = try md.headSizes()
        let (fullRoPE, slidingRoPE) = try md.rope(fullHeadDim: fullHeadDim, slidingHeadDim: slidingHeadDim)
        let shared = try h.optionalInt("attention.shared_kv_layers") ?? 0
        guard (0..<layers).contains(shared) else { throw md.invalid("must be below block_count (\(layers))", "attention.shared_kv_layers") }
        let sources = try kvSources(sliding: sliding, shared: shared) { l in
            md.invalid("layer \(l) shares keys, but no earlier layer of its kind computes them", "attention.shared_kv_layers")
        }
        guard let embedding = gguf.info(named: "token_embd.weight"), embedding.dims.count == 2, embedding.dims[0] == hidden else {
            throw FormatError(
                .missingTensor, "token_embd.weight is missing or not (\(hidden), vocab)", path: gguf.file.path, key: "token_embd.weight")
        }
        let perLayerWidth = try h.optionalInt("embedding_length_per_layer_input") ?? 0
        guard perLayerWidth >= 0 else { throw md.invalid("must not be negative", "embedding_length_per_layer_input") }
        var o = DecoderOptions(
            hiddenSize: hidden, layerCount: layers, headCount: heads, kvHeadCount: kvHeads,
            headDim: sliding.contains(true) ? slidingHeadDim : fullHeadDim, ffnSize: ffn[0], vocabSize: embedding.dims[1],
            norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-6), mlp: .gated(.geluTanh),
            rope: fullRoPE, tiedEmbeddings: gguf.info(named: "output.weight") == nil,
            maxContext: try h.optionalInt("context_length") ?? 131_072, slidingWindow: sliding.contains(true) ? window : nil)
        o.slidingLayers = sliding
        o.slidingRoPE = slidingRoPE
        o.fullAttentionHeadDim = fullHeadDim
        o.qkNorm = true
        o.valueNorm = true
        o.sandwichNorms = true
        o.embeddingScale = Float(Double(hidden).squareRoot())
        o.attentionScale = 1
        o.kvSourceLayers = shared > 0 ? sources : []
        if Set(ffn).count > 1 { o.layerFFNSizes = ffn }
        if perLayerWidth > 0 { o.perLayerInputSize = perLayerWidth }
        o.layerScalars = true
        o.finalLogitSoftcap = try h.optionalFloat("final_logit_softcapping")
        return o
    }

    /// Full layers' RoPE from `rope_parameters.full_attention`: "default", or "proportional"
    /// (transformers: inv_freq[i] = θ^(−2i/head_dim) / factor for the first ⌊p·head_dim/2⌋
    /// pairs, 0 for the rest — a divisor per pair, huge where nothing turns); absent: proportional
    /// with p = 0.25 and θ = 10⁶.
    private static func fullAttentionRoPE(_ entry: Configuration.RoPEEntry?, headDim: Int, path: String) throws -> DecoderOptions.RoPE {
        var rope = DecoderOptions.RoPE(theta: Float(entry?.ropeTheta ?? 1_000_000), rotaryDims: headDim)
        switch entry?.ropeType ?? (entry == nil ? "proportional" : "default") {
        case "default": break
        case "proportional":
            let fraction = entry?.partialRotaryFactor ?? (entry == nil ? 0.25 : 1)
            let turning = Int(fraction * Double(headDim)) / 2
            let factor = Float(entry?.factor ?? 1)
            let half = headDim / 2
            guard (0...half).contains(turning) else {
                throw FormatError(.invalidValue, "is outside 0…1", path: path, key: "rope_parameters.full_attention.partial_rotary_factor")
            }
            rope.scaling = .frequencyFactors([Float](repeating: factor, count: turning) + [Float](repeating: 1e30, count: half - turning))
        case let other:
            throw FormatError(
                .invalidValue, "RoPE type '\(other)' on full layers is not supported", path: path,
                key: "rope_parameters.full_attention.rope_type")
        }
        return rope
    }

    /// Which layer's keys and values each layer reads: the last `shared` layers reuse the last
    /// earlier layer of their own kind (sliding or full); `missing` names a layer with none.
    static func kvSources(sliding: [Bool], shared: Int, missing: (Int) -> FormatError) throws -> [Int] {
        guard (0...sliding.count).contains(shared), !sliding.isEmpty else { throw missing(0) }
        let firstShared = sliding.count - shared
        var sources = Array(sliding.indices)
        for l in firstShared..<sliding.count {
            guard let source = (0..<firstShared).last(where: { sliding[$0] == sliding[l] }) else { throw missing(l) }
            sources[l] = source
        }
        return sources
    }

    /// The per-layer and per-kind keys of a `gemma4` GGUF file, with errors that name the key.
    private struct GGUFLayerMetadata {
        let h: GGUFHyperparameters
        let layers: Int

        init(_ h: GGUFHyperparameters) throws {
            self.h = h
            layers = try h.int("block_count")
        }

        func key(_ k: String) -> String { "\(h.arch).\(k)" }

        func invalid(_ what: String, _ k: String) -> FormatError {
            FormatError(.invalidValue, what, path: h.gguf.file.path, key: key(k))
        }

        /// One positive number for every layer, or an array of `layers` positive numbers; nil when absent.
        func perLayer(_ k: String) throws -> [Int]? {
            let md = h.gguf.metadata
            if case .array? = md[key(k)] {
                guard let values = try md.ints(key(k)), values.count == layers, values.allSatisfy({ $0 > 0 }) else {
                    throw invalid("must hold \(layers) positive integers, one per layer", k)
                }
                return values
            }
            guard let one = try md.int(key(k)) else { return nil }
            guard one > 0 else { throw invalid("must be positive, got \(one)", k) }
            return [Int](repeating: one, count: layers)
        }

        /// `attention.sliding_window_pattern`: one bool per layer (none slide without it).
        func slidingLayers() throws -> [Bool] {
            guard let pattern = try h.gguf.metadata.array(key("attention.sliding_window_pattern")) else {
                return [Bool](repeating: false, count: layers)
            }
            guard case .bool(let flags) = pattern, flags.count == layers else {
                throw invalid("must be \(layers) bools, one per layer", "attention.sliding_window_pattern")
            }
            return flags
        }

        /// (full, sliding) head sizes: `key_length` and `key_length_swa`; values must match keys.
        func headSizes() throws -> (full: Int, sliding: Int) {
            let full = try h.int("attention.key_length")
            let sliding = try h.optionalInt("attention.key_length_swa") ?? full
            if let v = try h.optionalInt("attention.value_length"), v != full {
                throw invalid("value head size \(v) differs from the key head size \(full)", "attention.value_length")
            }
            if let v = try h.optionalInt("attention.value_length_swa"), v != sliding {
                throw invalid("value head size \(v) differs from the key head size \(sliding)", "attention.value_length_swa")
            }
            return (full, sliding)
        }

        /// RoPE of full layers (`rope.freq_base`, `rope.dimension_count`, the `rope_freqs`
        /// divisors) and of sliding layers (`rope.freq_base_swa`, `rope.dimension_count_swa`).
        func rope(fullHeadDim: Int, slidingHeadDim: Int) throws -> (full: DecoderOptions.RoPE, sliding: DecoderOptions.RoPE) {
            let fullRotary = try h.optionalInt("rope.dimension_count") ?? fullHeadDim
            let slidingRotary = try h.optionalInt("rope.dimension_count_swa") ?? slidingHeadDim
            guard fullRotary <= fullHeadDim, slidingRotary <= slidingHeadDim, fullRotary % 2 == 0, slidingRotary % 2 == 0 else {
                throw invalid(
                    "rotary dimensions (\(fullRotary), \(slidingRotary)) must be even and within the head sizes", "rope.dimension_count")
            }
            var full = DecoderOptions.RoPE(theta: try h.optionalFloat("rope.freq_base") ?? 1_000_000, rotaryDims: fullRotary)
            if let factors = try h.ropeFactors("rope_freqs.weight", rotaryDims: fullRotary) {
                guard factors.allSatisfy({ $0 > 0 }) else {
                    throw FormatError(.invalidValue, "RoPE divisors must be positive", path: h.gguf.file.path, key: "rope_freqs.weight")
                }
                full.scaling = .frequencyFactors(factors)
            }
            let sliding = DecoderOptions.RoPE(theta: try h.optionalFloat("rope.freq_base_swa") ?? 10_000, rotaryDims: slidingRotary)
            return (full, sliding)
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
}
