import ArgumentParser
import Foundation
import HearthEngine
import HearthKernels

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Describe a model: architecture, dimensions, dtypes, parameters, tokenizer, stop tokens, context.")

    @OptionGroup var model: ModelOptions

    @Option(name: .long, help: "Context size used to report the KV cache size (default: the model's, at most 4096).")
    var ctx: Int?

    func run() throws {
        try reportingErrors {
            let lm = try model.load()
            let o = lm.options
            let context = ctx ?? lm.defaultContext
            let kvBytes = 2 * o.layerCount * context * o.kvHeadCount * o.headDim * 2
            var lines: [String] = []
            lines.append("path:            \(lm.path.path)")
            lines.append("architecture:    \(lm.architecture)")
            lines.append("parameters:      \(lm.parameterCount) (\(String(format: "%.2f", Double(lm.parameterCount) / 1e9)) B)")
            lines.append("dimensions:      hidden \(o.hiddenSize), layers \(o.layerCount), heads \(o.headCount), kv heads \(o.kvHeadCount), head dim \(o.headDim), ffn \(o.ffnSize), vocab \(o.vocabSize)")
            let dtypes = lm.weightBytesByType.sorted { $0.key.rawValue < $1.key.rawValue }
                .map { "\($0.key.rawValue) \(formatBytes($0.value))" }.joined(separator: ", ")
            lines.append("weights:         \(dtypes)")
            if let summary = lm.quantizationSummary { lines.append("quantization:    \(summary)") }
            lines.append("norm:            \(o.norm)")
            lines.append("mlp:             \(o.mlp)")
            lines.append("rope:            theta \(o.rope.theta), rotary dims \(o.rope.rotaryDims)/\(o.headDim), scaling \(describe(o.rope.scaling))")
            lines.append("tied embeddings: \(o.tiedEmbeddings)")
            if let window = o.slidingWindow {
                let count = (0..<o.layerCount).filter { o.isSliding($0) }.count
                lines.append("sliding window:  \(window) on \(count) of \(o.layerCount) layers")
            }
            lines.append("context length:  \(o.maxContext) (trained); KV cache at \(context) tokens: \(formatBytes(kvBytes)) f16")
            let tokenizer = lm.tokenizer
            lines.append("tokenizer:       \(tokenizer.kind), \(tokenizer.vocabularySize) tokens, BOS \(tokenizer.bosID.map(String.init) ?? "none") (added: \(tokenizer.addsBOS))")
            let eos = lm.eosIDs.sorted().map { id in
                "\(id) \(String(decoding: tokenizer.bytes(of: id) ?? [], as: UTF8.self).debugDescription)"
            }
            lines.append("stop tokens:     \(eos.joined(separator: ", "))")
            lines.append("chat template:   \(lm.chatTemplate.map { $0.format.rawValue } ?? "none (use --raw)")")
            let cpu = KernelLevel.cpuName
            lines.append("kernels:         \(KernelLevel.current.rawValue) (best on this CPU: \(KernelLevel.best.rawValue)\(cpu.isEmpty ? "" : ", \(cpu)"); HEARTH_CPU forces a lower one)")
            emit(lines.joined(separator: "\n") + "\n")
        }
    }

    private func describe(_ scaling: DecoderOptions.Scaling) -> String {
        switch scaling {
        case .none: return "none"
        case .linear(let factor): return "linear ×\(factor)"
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
