import ArgumentParser
import Foundation
import HearthEngine
import HearthFormats
import HearthProviders
import HearthKernels
import HearthTokenizers

/// `--model`, declared once for every command that takes a model (`serve`, which takes it
/// several times, repeats it with ``help``).
struct ModelOption: ParsableArguments {
    /// The help text of `--model`.
    static let help = "The model: a path (a Hugging Face checkpoint directory, a .gguf file, or a .hqf file from `hearth quantize`), a Hugging Face repository ORG/REPO[:QUANT] (from the shared cache, pulled if missing), or a short name from models/registry.json (default: the registry's default model)."

    @Option(name: [.customShort("m"), .long], help: ArgumentHelp(ModelOption.help))
    var model: String?

    /// The help text of `--no-repack-cache`.
    static let repackCacheHelp = "Rearrange a GGUF's weights into the kernels' layout in memory on every load, without the repack cache (default: keep the rearranged copy in $HEARTH_REPACK_CACHE_DIR, else $XDG_CACHE_HOME/hearth/repack or ~/.cache/hearth/repack, so the next load of the unchanged file maps it; HEARTH_REPACK_CACHE=off also disables it; see docs/REPACK-CACHE.md)."

    @Flag(name: .long, help: ArgumentHelp(ModelOption.repackCacheHelp))
    var noRepackCache = false

    /// The model path, falling back to the default model; a name resolves through the hub cache.
    func path() throws -> String { try ModelNames.path(model) }

    /// The repack cache to load GGUF files through.
    var repackCache: RepackCache { noRepackCache ? .disabled : .default }
}

/// Options shared by commands that load a model: which one, quantized how, with which tokenizer.
struct ModelOptions: ParsableArguments {
    @OptionGroup var source: ModelOption

    /// The model as given (nil: the default model).
    var model: String? { source.model }

    /// The model path, falling back to the default model; a name resolves through the hub cache.
    func path() throws -> String { try source.path() }

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
        if let quantize, !QuantizationPlan.types.contains(quantize) { throw ValidationError("--quantize takes q4_0, q4_1 or q8_0") }
    }

    /// Loads the model; with `showProgress`, a status line on a terminal while it loads (the
    /// GGUF repack of a first load takes seconds) and a bar while it quantizes.
    func load(threads: Int? = nil, showProgress: Bool = false, chatTemplate: String? = nil) throws -> TransformerModel {
        let path = try path()
        let status = showProgress && quantize == nil ? StatusLine(label: "loading \(URL(fileURLWithPath: path).lastPathComponent)") : nil
        defer { status?.finish() }
        let bar = showProgress && quantize != nil ? ProgressBar(label: "quantizing") : nil
        defer { bar?.finish() }
        var progress: (@Sendable (Double) -> Void)?
        if let bar { progress = { bar.update($0) } }
        return try TransformerModel(
            path: path, quantize: quantize, threads: threads, progress: progress, tokenizer: tokenizer.source,
            repackCache: source.repackCache, chatTemplate: chatTemplate)
    }
}

// The option groups every command shares, declared and validated once: `--threads`
// (`ThreadsOption`), `--ctx` (`ContextOption`), the KV type and kernel path
// (`KernelOptions`) and sampling (`SamplingFlags`, validated by the provider layer's
// `ChatOptions.validate()`, the check the REPL, `LocalProvider` and the server use).

/// `-t/--threads`.
struct ThreadsOption: ParsableArguments {
    @Option(name: [.customShort("t"), .long], help: "Worker threads (default: all cores).")
    var threads: Int?

    func validate() throws {
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512") }
    }
}

/// `--ctx`: the KV cache size of a generating command.
struct ContextOption: ParsableArguments {
    @Option(name: [.customShort("c"), .long], help: "Context size in tokens: the KV cache is sized for this (default: the model's, at most 4096).")
    var ctx: Int?

    func validate() throws {
        if let ctx, ctx < 16 { throw ValidationError("--ctx must be at least 16") }
    }
}

/// `--activation-bits`: 8- or 16-bit activations in the integer kernels (every command that runs
/// the model; part of ``KernelOptions`` where those are taken).
struct ActivationOption: ParsableArguments {
    @Option(name: .long, help: "Bits of the activations the integer kernels multiply: outliers (the default: 8 for the layers' products over prompt tokens where the CPU has AVX-512 VNNI, with each token's 8 largest activations of every such product multiplied in f32; 16 for the tokens being generated and the output head; meets the project's accuracy rule, see docs/ACCURACY.md), balanced (as outliers without the f32 picks and with q/k/v at 16 bits), 16 (everywhere, within rounding of f32 activations — the exact path), mixed (balanced with q/k/v at 8 bits too: faster prompts, further from the exact math) or 8 (everywhere, as llama.cpp).")
    var activationBits: String = ActivationPrecision.default.rawValue

    func validate() throws {
        if ActivationPrecision(rawValue: activationBits) == nil { throw ValidationError("--activation-bits takes outliers, balanced, 16, mixed or 8") }
    }

    var precision: ActivationPrecision { ActivationPrecision(rawValue: activationBits) ?? .default }
}

/// `--kv-type`: how the KV cache stores keys and values (every command that runs the model).
struct KVTypeOption: ParsableArguments {
    @Option(name: .long, help: "KV cache type: f16 (the default), f32, q8_0 (8-bit blocks of 32 per head: about half of f16's memory per token) or q4_0 (4-bit blocks: about a quarter). Attention reads quantized keys with integer dot products; accuracy per type in docs/ACCURACY.md.")
    var kvType: DType = .f16

    func validate() throws {
        if !kvType.isKVCacheType { throw ValidationError("--kv-type takes f16, f32, q8_0 or q4_0") }
    }
}

/// `--kv-type`, `--prefill-path` and `--activation-bits`: how the engine stores and multiplies.
struct KernelOptions: ParsableArguments {
    @OptionGroup var kv: KVTypeOption

    /// The KV cache type (`--kv-type`).
    var kvType: DType { kv.kvType }

    @Option(name: .long, help: "Batched products over quantized weights: integer (quantized activations, see --activation-bits; the default) or sgemm (f32 activations: dequantize + BLAS).")
    var prefillPath: String = QuantizedBatchPath.integer.rawValue

    @OptionGroup var activation: ActivationOption

    func validate() throws {
        if QuantizedBatchPath(rawValue: prefillPath) == nil { throw ValidationError("--prefill-path takes integer or sgemm") }
    }

    var activationBits: String { activation.activationBits }
    var batchPath: QuantizedBatchPath { QuantizedBatchPath(rawValue: prefillPath) ?? .integer }
    var precision: ActivationPrecision { activation.precision }
}

/// `-b/--batch`: tokens per forward step, one default for every command and for
/// `LocalProvider` (``Generator/defaultBatch``).
struct BatchOption: ParsableArguments {
    @Option(name: [.customShort("b"), .long], help: "Tokens per forward step: prompt tokens processed together (and, when serving, the decode tokens of other requests beside them). Larger is faster on long prompts; cancellation (Ctrl-C, a closed connection) is noticed between layers of a step either way (default \(Generator.defaultBatch), llama.cpp's micro-batch).")
    var batch: Int = Generator.defaultBatch

    func validate() throws {
        if batch < 1 || batch > 4096 { throw ValidationError("--batch must be between 1 and 4096") }
    }
}

/// `--max-tokens`: the reply cap of a generating command; unset, each command's own default
/// (named in the help).
struct MaxTokensOption: ParsableArguments {
    @Option(name: [.customShort("n"), .long], help: "Most tokens to generate per reply (default: generate 256; chat \(ChatSession.replyCap), which /set max_tokens default restores; bench-structured 160).")
    var maxTokens: Int?

    func validate() throws {
        if let maxTokens, maxTokens < 1 { throw ValidationError("--max-tokens must be ≥ 1") }
    }

    /// The cap given, else `fallback` (the command's default).
    func value(default fallback: Int) -> Int { maxTokens ?? fallback }
}

extension SpeculativeMode: ExpressibleByArgument {}

/// `--speculative` and `--draft-model`: how tokens are drafted for verification several at a time.
struct SpeculativeOption: ParsableArguments {
    @Option(
        name: .long,
        help: "Speculative decoding: lookup (drafts tokens from repeats of the prompt and the reply so far), draft (a smaller model's most likely next tokens, needs --draft-model; where the text repeats 8 or more tokens of itself, lookup's) or off. Drafts are verified several at a time in one batched step; the draft length follows the acceptance rate and the measured cost of a step, and drafting pauses when it does not pay. The generated tokens are the same either way. (default: draft with --draft-model, else lookup)")
    var speculative: SpeculativeMode?

    @Option(
        name: .long,
        help: "A draft model for --speculative draft: a path or name as for --model, of a smaller model with the same tokenizer (checked at load). Its KV cache (f16, one slot per sequence) sits beside the model's.")
    var draftModel: String?

    /// The mode asked for: `--speculative`, else draft when a draft model is given, else lookup.
    var mode: SpeculativeMode { speculative ?? (draftModel != nil ? .draft : .lookup) }

    func validate() throws {
        if speculative == .draft && draftModel == nil { throw ValidationError("--speculative draft needs --draft-model") }
    }

    /// The draft model's path when the mode drafts with one (nil otherwise: not loaded).
    func draftPath() throws -> String? {
        guard mode == .draft, let draftModel else { return nil }
        return try ModelNames.path(draftModel)
    }

    /// Loads the draft model when the mode drafts with one.
    func loadDraft(threads: Int?, repackCache: RepackCache) throws -> TransformerModel? {
        guard let path = try draftPath() else { return nil }
        return try TransformerModel(path: path, threads: threads, repackCache: repackCache)
    }
}

/// Options for running the model: threads, context, batch, KV type and kernel path.
struct RuntimeOptions: ParsableArguments {
    @OptionGroup var workers: ThreadsOption
    @OptionGroup var context: ContextOption
    @OptionGroup var kernels: KernelOptions
    @OptionGroup var batching: BatchOption

    var threads: Int? { workers.threads }
    var ctx: Int? { context.ctx }
    var batch: Int { batching.batch }
}

extension DType: ExpressibleByArgument {}

/// Sampling flags. Unset ones are resolved in one place, `SamplingOptions(temperature:…
/// modelDefaults:)`: the model's generation_config.json (or the cloud provider's default),
/// else temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, no repetition penalty.
struct SamplingFlags: ParsableArguments {
    @Option(name: .long, help: "Sampling temperature; 0 is greedy (default: the model's generation_config.json, else 0.8).")
    var temperature: Double?

    @Option(name: .long, help: "Sample only among the K most likely tokens; 0 disables (default: the model's, else 40).")
    var topK: Int?

    @Option(name: .long, help: "Nucleus sampling: keep the most likely tokens up to this total probability; 1 disables (default: the model's, else 0.95).")
    var topP: Double?

    @Option(name: .long, help: "Drop tokens less likely than this fraction of the most likely one; 0 disables (default 0.05).")
    var minP: Double?

    @Option(name: .long, help: "Penalise tokens seen in the last 64 tokens; 1 disables, 1.1 is mild (default: the model's, else 1; chat: 1.1).")
    var repeatPenalty: Double?

    @Option(name: [.customShort("s"), .long], help: "Random seed, for reproducible sampling.")
    var seed: Int?

    /// The flags as provider-layer options (unset ones stay nil: the provider's defaults).
    var generationOptions: ChatOptions {
        ChatOptions(
            temperature: temperature, topP: topP, topK: topK, minP: minP, seed: seed, repetitionPenalty: repeatPenalty)
    }

    /// The engine's sampling options, unset values resolved against the model's defaults.
    func samplingOptions(modelDefaults: GenerationConfig?) -> SamplingOptions {
        SamplingOptions(
            temperature: temperature, topK: topK, topP: topP, minP: minP, repetitionPenalty: repeatPenalty, seed: seed,
            modelDefaults: modelDefaults)
    }

    func validate() throws {
        do { try generationOptions.validate() } catch { throw ValidationError("--" + error.message.replacingOccurrences(of: "_", with: "-")) }
    }
}
