import Foundation
import HearthFormats
import HearthKernels

/// A model family as GGUF files describe it (`general.architecture`): metadata → options,
/// and GGUF's tensor names (`blk.N.attn_q.weight`…) → roles.
public protocol GGUFModelFamily: Sendable {
    /// The `general.architecture` value.
    static var ggufArchitecture: String { get }
    /// Derives the forward-pass options from the metadata (and tensors such as rope factors).
    static func options(gguf: GGUFFile) throws -> DecoderOptions
    /// The GGUF tensor name of a role (nil: none).
    static func ggufTensorName(_ role: TensorRole) -> String?
}

extension GGUFModelFamily {
    public static func ggufTensorName(_ role: TensorRole) -> String? { role.ggufName }
}

/// The registry of GGUF families.
public enum GGUFFamilies {
    public static let all: [any GGUFModelFamily.Type] = [
        Phi3Family.self, Phi2Family.self, LlamaFamily.self, Gemma3Family.self,
    ]

    /// The family for a GGUF file, or a `FormatError` naming its architecture.
    public static func family(for gguf: GGUFFile) throws -> any GGUFModelFamily.Type {
        let arch = try gguf.metadata.require("general.architecture", gguf.metadata.string)
        guard let family = all.first(where: { $0.ggufArchitecture == arch }) else {
            throw FormatError(
                .unsupportedArchitecture, "unsupported GGUF architecture '\(arch)'", path: gguf.file.path,
                key: "general.architecture", remedy: "Hearth runs: \(all.map { $0.ggufArchitecture }.joined(separator: ", "))")
        }
        return family
    }
}

extension TensorRole {
    /// The tensor name in GGUF files (llama.cpp's names).
    public var ggufName: String? {
        switch self {
        case .tokenEmbedding: return "token_embd.weight"
        case .outputNorm: return "output_norm.weight"
        case .outputNormBias: return "output_norm.bias"
        case .output: return "output.weight"
        case .outputBias: return "output.bias"
        case .attnNorm(let l): return "blk.\(l).attn_norm.weight"
        case .attnNormBias(let l): return "blk.\(l).attn_norm.bias"
        case .attnQKV(let l): return "blk.\(l).attn_qkv.weight"
        case .attnQKVBias(let l): return "blk.\(l).attn_qkv.bias"
        case .attnQ(let l): return "blk.\(l).attn_q.weight"
        case .attnK(let l): return "blk.\(l).attn_k.weight"
        case .attnV(let l): return "blk.\(l).attn_v.weight"
        case .attnQBias(let l): return "blk.\(l).attn_q.bias"
        case .attnKBias(let l): return "blk.\(l).attn_k.bias"
        case .attnVBias(let l): return "blk.\(l).attn_v.bias"
        case .attnQNorm(let l): return "blk.\(l).attn_q_norm.weight"
        case .attnKNorm(let l): return "blk.\(l).attn_k_norm.weight"
        case .attnOutput(let l): return "blk.\(l).attn_output.weight"
        case .attnOutputBias(let l): return "blk.\(l).attn_output.bias"
        case .postAttnNorm(let l): return "blk.\(l).post_attention_norm.weight"
        case .ffnNorm(let l): return "blk.\(l).ffn_norm.weight"
        case .ffnNormBias(let l): return "blk.\(l).ffn_norm.bias"
        case .ffnGateUp: return nil
        case .ffnGate(let l): return "blk.\(l).ffn_gate.weight"
        case .ffnUp(let l): return "blk.\(l).ffn_up.weight"
        case .ffnUpBias(let l): return "blk.\(l).ffn_up.bias"
        case .ffnDown(let l): return "blk.\(l).ffn_down.weight"
        case .ffnDownBias(let l): return "blk.\(l).ffn_down.bias"
        case .postFFNNorm(let l): return "blk.\(l).post_ffw_norm.weight"
        }
    }
}

/// Reads `{arch}.…` hyperparameters with errors that name the key.
struct GGUFHyperparameters {
    let gguf: GGUFFile
    let arch: String

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

extension Phi3Family: GGUFModelFamily {
    public static let ggufArchitecture = "phi3"

    public static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = GGUFHyperparameters(gguf: gguf, arch: ggufArchitecture)
        var o = try h.base(norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-5), mlp: .gated(.silu))
        if let long = try h.vector("rope_factors_long.weight"), let short = try h.vector("rope_factors_short.weight") {
            let original = try h.optionalInt("rope.scaling.original_context_length") ?? o.maxContext
            let factor = Double(o.maxContext) / Double(original)
            let attention = try h.optionalFloat("rope.scaling.attn_factor")
                ?? Float(factor <= 1 ? 1 : (1 + log(factor) / log(Double(original))).squareRoot())
            o.rope.scaling = .longRoPE(short: short, long: long, originalContext: original, attentionFactor: attention)
        }
        return o
    }

    public static func ggufTensorName(_ role: TensorRole) -> String? {
        switch role {
        case .ffnGateUp(let l): return "blk.\(l).ffn_up.weight"  // fused gate | up
        case .ffnUp, .ffnGate: return nil
        default: return role.ggufName
        }
    }
}

extension Phi2Family: GGUFModelFamily {
    public static let ggufArchitecture = "phi2"

    public static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = GGUFHyperparameters(gguf: gguf, arch: ggufArchitecture)
        return try h.base(norm: .layer(eps: try h.optionalFloat("attention.layer_norm_epsilon") ?? 1e-5), mlp: .plain(.geluTanh))
            .with { $0.parallelResidual = true }
    }
}

extension LlamaFamily: GGUFModelFamily {
    public static let ggufArchitecture = "llama"

    public static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = GGUFHyperparameters(gguf: gguf, arch: ggufArchitecture)
        var o = try h.base(norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-5), mlp: .gated(.silu))
        // llama.cpp's converter permutes Q/K rows for its pairwise ("normal") RoPE.
        o.rope.style = .interleaved
        if let factors = try h.vector("rope_freqs.weight") {
            // Llama 3 ships its frequency remapping as per-frequency divisors.
            o.rope.scaling = .longRoPE(short: factors, long: factors, originalContext: Int.max, attentionFactor: 1)
        } else if try h.optionalString("rope.scaling.type") == "linear", let factor = try h.optionalFloat("rope.scaling.factor") {
            o.rope.scaling = .linear(factor: factor)
        }
        return o
    }
}

extension Gemma3Family: GGUFModelFamily {
    public static let ggufArchitecture = "gemma3"

    public static func options(gguf: GGUFFile) throws -> DecoderOptions {
        let h = GGUFHyperparameters(gguf: gguf, arch: ggufArchitecture)
        var o = try h.base(norm: .rms(eps: try h.optionalFloat("attention.layer_norm_rms_epsilon") ?? 1e-6), mlp: .gated(.geluTanh))
        // llama.cpp: every 6th layer is global; sliding layers use base 10000.
        let pattern = try h.optionalInt("attention.sliding_window_pattern") ?? 6
        o.slidingLayers = (0..<o.layerCount).map { ($0 + 1) % max(pattern, 1) != 0 }
        o.slidingRoPE = .init(theta: 10000, rotaryDims: o.rope.rotaryDims)
        if try h.optionalString("rope.scaling.type") == "linear", let factor = try h.optionalFloat("rope.scaling.factor") {
            o.rope.scaling = .linear(factor: factor)
        }
        o.qkNorm = true
        o.sandwichNorms = true
        o.embeddingScale = Float(o.hiddenSize).squareRoot()
        o.attentionScale = 1 / Float(o.headDim).squareRoot()
        o.tiedEmbeddings = gguf.info(named: "output.weight") == nil
        return o
    }
}
