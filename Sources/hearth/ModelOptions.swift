import ArgumentParser
import HearthEngine
import HearthKernels
import HearthTokenizers

/// Options shared by commands that load a model.
struct ModelOptions: ParsableArguments {
    @Option(name: .long, help: "Path to a model: a Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer.model), a .gguf file, or a .hqf file from `hearth quantize` (default: the model named in models/registry.json).")
    var model: String?

    /// The model path, falling back to the default model.
    func path() throws -> String { try model ?? DefaultModel.path() }

    @Option(name: .long, help: "Quantize float weights at load: q4_0, q4_1 or q8_0 (default: run them as stored).")
    var quantize: DType?

    @Option(name: .long, help: "Tokenizer file of a checkpoint or .hqf: auto (tokenizer.model if present, else tokenizer.json), sentencepiece or json.")
    var tokenizer: TokenizerChoice = .auto

    enum TokenizerChoice: String, ExpressibleByArgument {
        case auto, sentencepiece, json

        var source: TokenizerSource {
            switch self {
            case .auto: return .automatic
            case .sentencepiece: return .sentencePiece
            case .json: return .tokenizerJSON
            }
        }
    }

    func validate() throws {
        if let quantize, !quantize.supportsInterleaved16 { throw ValidationError("--quantize takes q4_0, q4_1 or q8_0") }
    }

    func load(threads: Int? = nil, showProgress: Bool = false) throws -> LanguageModel {
        let bar = showProgress && quantize != nil ? ProgressBar(label: "quantizing") : nil
        defer { bar?.finish() }
        var progress: (@Sendable (Double) -> Void)?
        if let bar { progress = { bar.update($0) } }
        return try LanguageModel(
            path: try path(), quantize: quantize, threads: threads, progress: progress, tokenizer: tokenizer.source)
    }
}

/// Options for running the model.
struct RuntimeOptions: ParsableArguments {
    @Option(name: [.customShort("t"), .long], help: "Worker threads (default: all cores).")
    var threads: Int?

    @Option(name: .long, help: "Context size in tokens: the KV cache is sized for this (default: the model's, at most 4096).")
    var ctx: Int?

    @Option(name: .long, help: "Prompt tokens processed per batch during prefill.")
    var batch: Int = 512

    @Option(name: .long, help: "KV cache element type: f16 (half the memory) or f32.")
    var kvType: DType = .f16

    func validate() throws {
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512") }
        if let ctx, ctx < 1 { throw ValidationError("--ctx must be at least 1") }
        if batch < 1 || batch > 4096 { throw ValidationError("--batch must be between 1 and 4096") }
        if kvType != .f16 && kvType != .f32 { throw ValidationError("--kv-type takes f16 or f32") }
    }
}

extension DType: ExpressibleByArgument {}

/// Sampling flags, mapped onto `SamplingOptions`.
struct SamplingFlags: ParsableArguments {
    @Option(name: .long, help: "Sampling temperature; 0 is greedy (always the most likely token).")
    var temperature: Float = 0.8

    @Option(name: .long, help: "Sample only among the K most likely tokens (0 disables).")
    var topK: Int = 40

    @Option(name: .long, help: "Nucleus sampling: keep the most likely tokens up to this total probability (1 disables).")
    var topP: Float = 0.95

    @Option(name: .long, help: "Drop tokens less likely than this fraction of the most likely one (0 disables).")
    var minP: Float = 0.05

    @Option(name: .long, help: "Penalise tokens seen in the last 64 tokens (1 disables; 1.1 is mild).")
    var repeatPenalty: Float = 1.0

    @Option(name: .long, help: "Random seed, for reproducible sampling.")
    var seed: UInt64?

    var options: SamplingOptions {
        var o = SamplingOptions()
        o.temperature = temperature
        o.topK = topK
        o.topP = topP
        o.minP = minP
        o.repetitionPenalty = repeatPenalty
        o.seed = seed
        return o
    }

    func validate() throws {
        do { try options.validate() } catch let error as EngineError { throw ValidationError(error.message) }
    }
}
