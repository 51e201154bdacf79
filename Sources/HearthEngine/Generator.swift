import Foundation
import HearthKernels
import HearthTokenizers

/// What to generate.
public struct GenerationParameters: Sendable {
    /// Stop after this many new tokens.
    public var maxTokens: Int = 256
    /// How to pick tokens.
    public var sampling = SamplingOptions()
    /// Stop when the text contains any of these (the stop string is not emitted).
    public var stop: [String] = []
    /// Report the log-probabilities of this many most likely tokens at each step.
    public var topLogprobs: Int = 0
    /// Drop the first token's leading space (replies that start after a chat template).
    public var stripLeadingSpace = false

    public init() {}
}

/// Why generation ended.
public enum FinishReason: String, Sendable, Codable {
    /// An end-of-sequence token or a stop string.
    case stop
    /// The token limit or the context filled.
    case length
    /// The caller cancelled.
    case cancelled
}

/// One generated token.
public struct GeneratedToken: Sendable {
    public var id: Int32
    /// Text this token completed (may be empty while a multi-byte character is incomplete,
    /// or while text that may start a stop string is held back).
    public var text: String
    /// log p(token) under the model's full distribution.
    public var logprob: Float
    /// The most likely alternatives, when requested.
    public var topLogprobs: [(id: Int32, logprob: Float)]
}

/// Counts and timings of a finished generation.
public struct GenerationSummary: Sendable {
    public var finishReason: FinishReason
    public var promptTokens: Int
    /// Prompt tokens that were served from the KV cache instead of being recomputed.
    public var cachedPromptTokens: Int
    public var completionTokens: Int
    public var prefillSeconds: Double
    public var decodeSeconds: Double

    /// Prompt tokens processed per second (cached ones excluded).
    public var prefillTokensPerSecond: Double {
        prefillSeconds > 0 ? Double(promptTokens - cachedPromptTokens) / prefillSeconds : 0
    }
    /// Generated tokens per second after the first.
    public var decodeTokensPerSecond: Double {
        decodeSeconds > 0 && completionTokens > 1 ? Double(completionTokens - 1) / decodeSeconds : 0
    }
}

/// Events of a generation stream.
public enum GenerationEvent: Sendable {
    case token(GeneratedToken)
    case done(GenerationSummary)
}

/// Runs generation for one conversation at a time on one model: owns a `Decoder` (and
/// so the KV cache) and reuses the cached prefix of the previous request.
///
/// `@unchecked Sendable`: all decoder access happens while holding `lock`, so
/// concurrent callers wait for each other.
public final class Generator: @unchecked Sendable {
    public let model: LanguageModel
    let decoder: Decoder
    let lock = NSLock()  // internal: Generator+Snapshot.swift holds it too
    var cachedTokens: [Int32] = []

    /// Creates a generator with a KV cache of `context` tokens (default: the model's, capped),
    /// `threads` workers and prefill batches of `batch` tokens.
    public init(
        model: LanguageModel, context: Int? = nil, threads: Int? = nil, batch: Int = 64, kvType: DType = .f16
    ) throws {
        let context = context ?? model.defaultContext
        guard context > 0, context <= 1 << 20 else {
            throw EngineError(.invalidOption, "context must be between 1 and \(1 << 20) tokens, got \(context)")
        }
        guard batch > 0, batch <= 4096 else {
            throw EngineError(.invalidOption, "batch must be between 1 and 4096, got \(batch)")
        }
        self.model = model
        decoder = try Decoder(
            weights: model.weights, options: model.options, context: context, maxBatch: batch, kvType: kvType,
            pool: WorkerPool(threads: threads ?? WorkerPool.defaultThreadCount))
    }

    /// The context size in tokens.
    public var context: Int { decoder.context }

    /// Bytes held by the KV cache.
    public var cacheBytes: Int { decoder.cache.byteCount }

    /// Streams a generation for `prompt`. Cancelling the consuming task or dropping the
    /// stream stops work within one decode step (or one prefill batch).
    public func generate(prompt: [Int32], parameters: GenerationParameters) -> AsyncThrowingStream<GenerationEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream<GenerationEvent, Error>.makeStream()
        let cancelled = CancellationFlag()
        continuation.onTermination = { _ in cancelled.set() }
        let thread = Thread { [self] in
            do {
                let summary = try self.run(prompt: prompt, parameters: parameters, isCancelled: { cancelled.isSet }) {
                    continuation.yield(.token($0))
                }
                continuation.yield(.done(summary))
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        thread.stackSize = 4 << 20
        thread.start()
        return stream
    }

    /// Generates synchronously, calling `onToken` for every token.
    public func run(
        prompt: [Int32], parameters: GenerationParameters, isCancelled: () -> Bool = { false },
        onToken: (GeneratedToken) -> Void
    ) throws -> GenerationSummary {
        try parameters.sampling.validate()
        guard !prompt.isEmpty else { throw EngineError(.invalidOption, "the prompt is empty") }
        guard parameters.maxTokens >= 0 else {
            throw EngineError(.invalidOption, "max tokens must be ≥ 0, got \(parameters.maxTokens)")
        }
        lock.lock()
        defer { lock.unlock() }
        guard prompt.count < decoder.context else {
            throw EngineError(
                .contextLengthExceeded,
                "the prompt is \(prompt.count) tokens but the context holds \(decoder.context)",
                remedy: "Shorten the prompt or raise --ctx (up to the model's \(model.options.maxContext))")
        }

        // Reuse the longest common prefix of what the cache holds (at least one token is recomputed for logits).
        var reuse = 0
        while reuse < min(cachedTokens.count, prompt.count - 1) && cachedTokens[reuse] == prompt[reuse] { reuse += 1 }
        if decoder.needsRecompute(cached: reuse, end: prompt.count) { reuse = 0 }
        cachedTokens = Array(prompt.prefix(reuse))

        var summary = GenerationSummary(
            finishReason: .length, promptTokens: prompt.count, cachedPromptTokens: reuse, completionTokens: 0,
            prefillSeconds: 0, decodeSeconds: 0)
        let prefillStart = DispatchTime.now()
        var logits: UnsafeBufferPointer<Float>
        do {
            logits = try decoder.forward(Array(prompt[reuse...]), from: reuse, shouldStop: isCancelled)
        } catch let error as EngineError where error.code == .cancelled {
            summary.finishReason = .cancelled
            return summary
        }
        cachedTokens = prompt
        summary.prefillSeconds = seconds(since: prefillStart)

        var sampler = Sampler(options: parameters.sampling)
        var detokenizer = StreamingDetokenizer(tokenizer: model.tokenizer, stripLeadingSpace: parameters.stripLeadingSpace)
        var history = prompt
        var generatedCounts: [Int32: Int] = [:]
        var text = ""  // generated text not yet emitted (held back for stop strings)
        let longestStop = parameters.stop.map(\.count).max() ?? 0
        var decodeStart = DispatchTime.now()

        while summary.completionTokens < parameters.maxTokens {
            if isCancelled() {
                summary.finishReason = .cancelled
                break
            }
            let id = sampler.sample(logits, recent: history[...], generated: generatedCounts)
            generatedCounts[id, default: 0] += 1
            let normalizer = LogProbabilities.normalizer(logits)
            var token = GeneratedToken(
                id: id, text: "", logprob: LogProbabilities.of(id, in: logits, normalizer: normalizer),
                topLogprobs: LogProbabilities.top(parameters.topLogprobs, in: logits, normalizer: normalizer))
            summary.completionTokens += 1
            if summary.completionTokens == 1 { decodeStart = DispatchTime.now() }

            if model.eosIDs.contains(id) {
                token.text = text + detokenizer.flush()
                onToken(token)
                summary.finishReason = .stop
                break
            }
            text += detokenizer.push(id)
            if let range = parameters.stop.lazy.compactMap({ text.range(of: $0) }).first {
                token.text = String(text[..<range.lowerBound])
                onToken(token)
                summary.finishReason = .stop
                break
            }
            // Emit all but a tail that could still begin a stop string.
            let hold = longestStop > 0 ? heldBackCount(text, stops: parameters.stop) : 0
            token.text = String(text.dropLast(hold))
            text = String(text.suffix(hold))
            onToken(token)

            history.append(id)
            if summary.completionTokens == parameters.maxTokens { break }
            if history.count >= decoder.context {
                summary.finishReason = .length
                break
            }
            if decoder.needsRecompute(cached: history.count - 1, end: history.count) {
                logits = try decoder.forward(history, from: 0, shouldStop: isCancelled)
            } else {
                logits = try decoder.forward([id], from: history.count - 1)
            }
            cachedTokens = history
        }
        if summary.completionTokens > 0 { summary.decodeSeconds = seconds(since: decodeStart) }
        return summary
    }

    /// Forgets the cached conversation.
    public func reset() {
        lock.lock()
        cachedTokens = []
        decoder.cache.truncate(to: 0)
        lock.unlock()
    }

    /// How batched products over quantized weights are computed during prompt processing:
    /// 8-bit activations on the integer kernels (the default) or dequantized slabs through
    /// BLAS `sgemm` (f32 activations). Set it before a generation starts.
    public var quantizedBatchPath: QuantizedBatchPath {
        get { decoder.quantizedBatchPath }
        set { decoder.quantizedBatchPath = newValue }
    }

    /// Bits of the integer kernels' quantized activations; see ``Decoder/activationPrecision``.
    public var activationPrecision: ActivationPrecision {
        get { decoder.activationPrecision }
        set { decoder.activationPrecision = newValue }
    }

    /// Scores `tokens` in one pass and returns the logits at every position (for tests and perplexity).
    public func logits(for tokens: [Int32]) throws -> [Float] {
        lock.lock()
        defer { lock.unlock() }
        cachedTokens = []
        let result = try decoder.forwardAll(tokens, from: 0)
        cachedTokens = tokens
        return result
    }

    private func heldBackCount(_ text: String, stops: [String]) -> Int {
        var hold = 0
        for stop in stops {
            for length in stride(from: min(stop.count - 1, text.count), to: 0, by: -1)
            where text.hasSuffix(stop.prefix(length)) {
                hold = max(hold, length)
                break
            }
        }
        return hold
    }

    private func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }
}

/// A thread-safe one-way flag.
final class CancellationFlag: @unchecked Sendable {
    // `@unchecked Sendable`: the value is only read and written under `lock`.
    private let lock = NSLock()
    private var value = false

    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }

    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
