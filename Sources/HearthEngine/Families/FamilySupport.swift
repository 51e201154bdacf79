import Foundation
import HearthFormats
import HearthKernels

// The steps model families share, in one place: the config.json prelude (dimensions and
// the heads / kv-heads / head-dim checks), defaults for the families' own config keys, the
// GGUF hyperparameter reader, transformers' activation names, rotary dimensions and
// LongRoPE's attention factor.

/// Reads a required positive integer from a configuration, with a clear error.
func required(_ value: Int?, _ key: String, path: String = "config.json") throws -> Int {
    guard let value else { throw FormatError(.missingKey, "missing required value", path: path, key: key) }
    guard value > 0 else {
        throw FormatError(.invalidValue, "must be a positive integer, got \(value)", path: path, key: key)
    }
    return value
}

/// The part of a `config.json` every family reads the same way: dimensions, validated once.
struct ConfigPrelude {
    /// `hidden_size`, `num_attention_heads`, `num_hidden_layers`, `intermediate_size`, `vocab_size`.
    let hidden, heads, layers, ffn, vocab: Int
    /// `num_key_value_heads`, defaulting to `heads`; always divides `heads`. `head_dim`, else
    /// the family's default, else hidden / heads (which must then divide).
    let kvHeads, headDim: Int

    init(_ config: HFConfig, defaultHeadDim: Int? = nil) throws {
        let path = config.path
        hidden = try required(config.hiddenSize, "hidden_size", path: path)
        heads = try required(config.numAttentionHeads, "num_attention_heads", path: path)
        kvHeads = try required(config.numKeyValueHeads ?? heads, "num_key_value_heads", path: path)
        guard heads % kvHeads == 0 else {
            throw FormatError(
                .invalidValue, "num_attention_heads \(heads) is not a multiple of num_key_value_heads \(kvHeads)",
                path: path, key: "num_key_value_heads")
        }
        if let explicit = config.headDim ?? defaultHeadDim {
            headDim = try required(explicit, "head_dim", path: path)
        } else {
            guard hidden % heads == 0 else {
                throw FormatError(
                    .invalidValue, "hidden_size \(hidden) is not divisible by num_attention_heads \(heads)",
                    path: path, key: "hidden_size")
            }
            headDim = hidden / heads
        }
        layers = try required(config.numHiddenLayers, "num_hidden_layers", path: path)
        ffn = try required(config.intermediateSize, "intermediate_size", path: path)
        vocab = try required(config.vocabSize, "vocab_size", path: path)
    }

    /// The options with these dimensions and the family's choices.
    func options(
        norm: DecoderOptions.Norm, mlp: DecoderOptions.MLP, rope: DecoderOptions.RoPE, tiedEmbeddings: Bool,
        maxContext: Int, slidingWindow: Int? = nil
    ) -> DecoderOptions {
        DecoderOptions(
            hiddenSize: hidden, layerCount: layers, headCount: heads, kvHeadCount: kvHeads, headDim: headDim,
            ffnSize: ffn, vocabSize: vocab, norm: norm, mlp: mlp, rope: rope, tiedEmbeddings: tiedEmbeddings,
            maxContext: maxContext, slidingWindow: slidingWindow)
    }
}

extension KeyedDecodingContainer {
    /// The value at `key`, or `fallback` when the key is absent or null: how a family's private
    /// configuration gives transformers' defaults.
    func decode<T: Decodable>(_ key: Key, default fallback: T) throws -> T {
        try decodeIfPresent(T.self, forKey: key) ?? fallback
    }
}

/// Maps transformers' activation names (`hidden_act`, `hidden_activation`).
func activation(_ name: String, key: String = "hidden_act", path: String = "config.json") throws -> DecoderOptions.Activation {
    switch name {
    case "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_tanh": return .geluTanh
    case "gelu": return .gelu
    case "silu", "swish": return .silu
    default:
        throw FormatError(.invalidValue, "unsupported activation '\(name)'", path: path, key: key)
    }
}

/// int(headDim × partial_rotary_factor), as transformers computes it; must be even and positive.
func rotaryDimensions(headDim: Int, factor: Double) throws -> Int {
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

/// LongRoPE's default attention (magnitude) factor for a context stretched from `original`
/// to `context` positions: √(1 + ln(s) / ln(original)) with s = context / original, 1 when
/// not stretched (transformers' `_compute_longrope_parameters`).
func longRoPEAttentionFactor(context: Int, original: Int) -> Double {
    let factor = Double(context) / Double(original)
    return factor <= 1 ? 1 : (1 + Foundation.log(factor) / Foundation.log(Double(original))).squareRoot()
}

extension DecoderOptions {
    /// A copy with `change` applied (for the flags that the initialiser leaves at defaults).
    func with(_ change: (inout DecoderOptions) -> Void) -> DecoderOptions {
        var copy = self
        change(&copy)
        return copy
    }
}

/// Reads `{arch}.…` hyperparameters with errors that name the key.
struct GGUFHyperparameters {
    let gguf: GGUFFile
    /// The file's `general.architecture`: the prefix of its hyperparameter keys (the registry
    /// chose the family by it, so each family names its GGUF architecture once, in
    /// `ggufArchitecture`).
    let arch: String

    init(_ gguf: GGUFFile) throws {
        self.gguf = gguf
        arch = try gguf.metadata.require("general.architecture", gguf.metadata.string)
    }

    func int(_ key: String) throws -> Int {
        let value = try gguf.metadata.require("\(arch).\(key)", gguf.metadata.int)
        guard value > 0 else {
            throw FormatError(.invalidValue, "must be positive, got \(value)", path: gguf.file.path, key: "\(arch).\(key)")
        }
        return value
    }

    func optionalInt(_ key: String) throws -> Int? { try gguf.metadata.int("\(arch).\(key)") }
    func optionalFloat(_ key: String) throws -> Float? { try gguf.metadata.float("\(arch).\(key)") }
    func optionalString(_ key: String) throws -> String? { try gguf.metadata.string("\(arch).\(key)") }

    /// A small f32 vector tensor (rope factors), as Floats.
    func vector(_ name: String) throws -> [Float]? {
        guard let t = try gguf.tensor(named: name) else { return nil }
        let m = try ModelWeights.matrix(t, rows: 1, cols: t.elementCount)
        var v = [Float](repeating: 0, count: t.elementCount)
        v.withUnsafeMutableBufferPointer { if let p = $0.baseAddress { m.dequantizeRow(0, into: p) } }
        return v
    }

    /// Per-frequency RoPE divisors (`rope_freqs`, `rope_factors_long`…): one f32 per rotating
    /// pair, nil when the file has none.
    func ropeFactors(_ name: String, rotaryDims: Int) throws -> [Float]? {
        guard let factors = try vector(name) else { return nil }
        guard factors.count == rotaryDims / 2 else {
            throw FormatError(
                .shapeMismatch, "has \(factors.count) values for \(rotaryDims / 2) rotary frequencies",
                path: gguf.file.path, key: name)
        }
        return factors
    }

    /// The common core: dimensions, heads, context.
    func base(norm: DecoderOptions.Norm, mlp: DecoderOptions.MLP, headDim explicit: Int? = nil) throws -> DecoderOptions {
        let hidden = try int("embedding_length")
        let heads = try int("attention.head_count")
        let kvHeads = try optionalInt("attention.head_count_kv") ?? heads
        guard kvHeads > 0, heads % kvHeads == 0 else {
            throw FormatError(.invalidValue, "head_count is not a multiple of head_count_kv", path: gguf.file.path, key: "\(arch).attention.head_count_kv")
        }
        let headDim = try explicit ?? optionalInt("attention.key_length") ?? (hidden / heads)
        guard headDim > 0 else { throw FormatError(.invalidValue, "head dimension is zero", path: gguf.file.path, key: "\(arch).attention.key_length") }
        let rotary = try optionalInt("rope.dimension_count") ?? headDim
        let vocab: Int
        if let t = gguf.info(named: "token_embd.weight"), t.dims.count == 2 {
            vocab = t.dims[1]
        } else {
            vocab = try gguf.metadata.strings("tokenizer.ggml.tokens")?.count ?? 0
        }
        return DecoderOptions(
            hiddenSize: hidden, layerCount: try int("block_count"), headCount: heads, kvHeadCount: kvHeads,
            headDim: headDim, ffnSize: try int("feed_forward_length"), vocabSize: vocab, norm: norm, mlp: mlp,
            rope: .init(theta: try optionalFloat("rope.freq_base") ?? 10000, rotaryDims: rotary),
            tiedEmbeddings: gguf.info(named: "output.weight") == nil,
            maxContext: try optionalInt("context_length") ?? 4096,
            slidingWindow: try optionalInt("attention.sliding_window"))
    }
}

extension GGUFHyperparameters {
    /// `rope.scaling.type == "linear"` with its factor, else nil.
    func linearScaling() throws -> DecoderOptions.Scaling? {
        guard try optionalString("rope.scaling.type") == "linear", let factor = try optionalFloat("rope.scaling.factor") else {
            return nil
        }
        return .linear(factor: factor)
    }
}
