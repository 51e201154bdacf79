import ArgumentParser
import Foundation
import HearthEngine
import HearthKernels

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Describe a model: architecture, dimensions, dtypes, parameters, tokenizer, stop tokens, context.")

    @OptionGroup var model: ModelOptions
    @OptionGroup var context: ContextOption
    @OptionGroup var kv: KVTypeOption
    @OptionGroup var template: ChatTemplateOption

    @Flag(name: .long, help: "Print one JSON object (stable keys, for scripts) instead of text.")
    var json = false

    /// What `inspect` reports; `--json` prints it as is.
    struct Report: Encodable {
        struct Token: Encodable {
            let id: Int32
            let text: String
        }
        let path, name, architecture, norm, mlp, activation, rope_scaling, tokenizer, kernels, best_kernels: String
        /// The default activation bits of the integer kernels and what they mean on this CPU.
        let activation_bits, activations: String
        let base_model_reason, quantization, chat_template: String?
        let instruction_tuned, tied_embeddings, adds_bos: Bool
        let parameters, hidden_size, layers, heads, kv_heads, head_dim, ffn_size, vocab_size, rotary_dims: Int
        let sliding_layers, context_length, kv_cache_context, kv_cache_bytes_f16, vocabulary: Int
        /// The `--kv-type` asked for, and its cache's bytes at `kv_cache_context` tokens (nil when
        /// the model's head dimension cannot be quantized to that type's 32-element blocks, or its
        /// layers differ in head size); with a sliding window, its layers count at their
        /// window-sized buffer (``KVCache/Window``, for the default batch), as `kv_cache_bytes_f16`
        /// does. Both count the cache as the engine allocates it: the layers that own their keys
        /// and values, each at the widest head.
        let kv_cache_type: String
        let kv_cache_bytes: Int?
        /// Bytes one token adds to the cache (keys and values of every layer holding a cache, at
        /// the widest head), per KV type the model can use.
        let kv_bytes_per_token: [String: Int]
        let sliding_window: Int?
        let norm_epsilon, rope_theta: Float
        let weight_bytes: [String: Int]
        let bos: Token?
        let stop_tokens: [Token]
        /// What renders chat prompts: the model's own Jinja template (and where it came from) or
        /// a hand-written format (``ChatTemplate/rendererDescription``); nil without a template.
        let chat_template_renderer: String?
    }

    func run() throws {
        try reportingErrors {
            let lm = try model.load(chatTemplate: template.chatTemplate)
            let report = Self.report(lm, context: context.ctx ?? lm.defaultContext, kvType: kv.kvType)
            emit(json ? try jsonLine(report) : Self.text(report, lm: lm))
        }
    }

    static func report(_ lm: TransformerModel, context: Int, kvType: DType = .f16) -> Report {
        let o = lm.options
        // The cache's real shape, as `Decoder` allocates it: only the leading layers that own their
        // keys and values hold a cache (`cacheLayerCount`; Gemma 4's sharing layers read another's),
        // each row `kvHeadCount` heads of the widest head (`maxHeadDim`; Gemma 4's full-attention
        // layers are wider). A quantized head is headDim/32 blocks, and a model whose layers differ
        // in head size cannot quantize its cache (`Decoder` refuses it), so those types are left out.
        let layers = o.cacheLayerCount, headDim = o.maxHeadDim
        var perToken: [String: Int] = [:]
        for type in [DType.f32, .f16, .q8_0, .q4_0] where !type.isQuantized || headDim == o.headDim {
            if let head = type.kvHeadBytes(headDim: headDim) { perToken[type.rawValue] = 2 * layers * o.kvHeadCount * head }
        }
        // Positions the cache holds over its layers: sliding-window layers at their buffer's span.
        let held = KVCache.Window(options: o, context: context, maxBatch: Generator.defaultBatch)?
            .positions(layerCount: layers, capacity: context) ?? layers * context
        let tokenizer = lm.tokenizer
        func token(_ id: Int32) -> Report.Token {
            .init(id: id, text: tokenizer.token(id) ?? "(not in the tokenizer's \(tokenizer.vocabularySize) tokens)")
        }
        return Report(
            path: lm.path.path, name: lm.name, architecture: lm.architecture, norm: o.norm.name, mlp: o.mlp.shape,
            activation: o.mlp.activationName, rope_scaling: o.rope.scaling.name, tokenizer: tokenizer.kind,
            kernels: KernelLevel.current.rawValue, best_kernels: KernelLevel.best.rawValue,
            activation_bits: ActivationPrecision.default.rawValue, activations: ActivationPrecision.default.summary(),
            base_model_reason: lm.baseModelReason, quantization: lm.quantizationSummary,
            chat_template: lm.chatTemplate?.format.rawValue, instruction_tuned: lm.baseModelReason == nil,
            tied_embeddings: o.tiedEmbeddings, adds_bos: tokenizer.addsBOS, parameters: lm.parameterCount,
            hidden_size: o.hiddenSize, layers: o.layerCount, heads: o.headCount, kv_heads: o.kvHeadCount,
            head_dim: o.headDim, ffn_size: o.ffnSize, vocab_size: o.vocabSize, rotary_dims: o.rope.rotaryDims,
            sliding_layers: o.slidingWindow == nil ? 0 : (0..<o.layerCount).filter { o.isSliding($0) }.count,
            context_length: o.maxContext, kv_cache_context: context,
            kv_cache_bytes_f16: 2 * held * o.kvHeadCount * headDim * 2,
            vocabulary: tokenizer.vocabularySize,
            kv_cache_type: kvType.rawValue, kv_cache_bytes: perToken[kvType.rawValue].map { $0 / max(1, layers) * held },
            kv_bytes_per_token: perToken, sliding_window: o.slidingWindow, norm_epsilon: o.norm.epsilon,
            rope_theta: o.rope.theta,
            weight_bytes: Dictionary(uniqueKeysWithValues: lm.weightBytesByType.map { ($0.key.rawValue, $0.value) }),
            bos: tokenizer.bosID.map(token), stop_tokens: lm.eosIDs.sorted().map(token),
            chat_template_renderer: lm.chatTemplate?.rendererDescription)
    }

    static func text(_ r: Report, lm: TransformerModel) -> String {
        var lines: [String] = []
        lines.append("path:            \(r.path)")
        lines.append("name:            \(r.name) (\(r.instruction_tuned ? "instruction-tuned" : "base model: \(r.base_model_reason ?? "")"))")
        lines.append("architecture:    \(r.architecture)")
        lines.append("parameters:      \(r.parameters) (\(String(format: "%.2f", Double(r.parameters) / 1e9)) B)")
        lines.append("dimensions:      hidden \(r.hidden_size), layers \(r.layers), heads \(r.heads), kv heads \(r.kv_heads), head dim \(r.head_dim), ffn \(r.ffn_size), vocab \(r.vocab_size)")
        let dtypes = r.weight_bytes.sorted { $0.key < $1.key }.map { "\($0.key) \(formatBytes($0.value))" }.joined(separator: ", ")
        lines.append("weights:         \(dtypes)")
        if let summary = r.quantization { lines.append("quantization:    \(summary)") }
        lines.append("norm:            \(r.norm) (eps \(r.norm_epsilon))")
        lines.append("mlp:             \(r.mlp), \(r.activation)")
        lines.append("rope:            theta \(r.rope_theta), rotary dims \(r.rotary_dims)/\(r.head_dim), scaling \(describe(lm.options.rope.scaling))")
        lines.append("tied embeddings: \(r.tied_embeddings)")
        if let window = r.sliding_window {
            lines.append("sliding window:  \(window) on \(r.sliding_layers) of \(r.layers) layers")
        }
        let unsupported = lm.options.maxHeadDim != r.head_dim
            ? "\(r.kv_cache_type) is not supported for layers of different head sizes (use --kv-type f16)"
            : "\(r.kv_cache_type) needs a head dim that is a multiple of 32"
        let cache = r.kv_cache_bytes.map { "\(formatBytes($0)) \(r.kv_cache_type)" } ?? unsupported
        lines.append("context length:  \(r.context_length) (trained); KV cache at \(r.kv_cache_context) tokens: \(cache)")
        let perToken = ["f16", "q8_0", "q4_0", "f32"].compactMap { type in r.kv_bytes_per_token[type].map { "\(type) \(formatBytes($0))" } }
        lines.append("KV per token:    \(perToken.joined(separator: ", "))")
        let bos = r.bos.map { "\($0.id) \($0.text)" } ?? "none"
        lines.append("tokenizer:       \(r.tokenizer), \(r.vocabulary) tokens, BOS \(bos) (added: \(r.adds_bos))")
        lines.append("stop tokens:     \(r.stop_tokens.map { "\($0.id) \($0.text)" }.joined(separator: ", "))")
        lines.append(
            "chat template:   \(r.chat_template.map { "\($0), rendered by \(r.chat_template_renderer ?? "?")" } ?? "none (use --raw or --chat-template)")")
        let cpu = KernelLevel.cpuName
        lines.append("kernels:         \(r.kernels) (best on this CPU: \(r.best_kernels)\(cpu.isEmpty ? "" : ", \(cpu)"); HEARTH_CPU forces a lower one)")
        lines.append("activations:     \(r.activations) (the default; --activation-bits outliers, balanced, 16, mixed or 8)")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func describe(_ scaling: DecoderOptions.Scaling) -> String {
        switch scaling {
        case .none: return "none"
        case .linear(let factor): return "linear ×\(factor)"
        case .frequencyFactors(let factors):
            return "per-frequency divisors (\(factors.count) rope_freqs)"
        case .longRoPE(_, _, let original, let attention):
            return "longrope (original context \(original), attention factor \(attention))"
        case .llama3(let factor, _, _, let original):
            return "llama3 ×\(factor) (original context \(original))"
        }
    }
}

func formatBytes(_ bytes: Int) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}
