import Foundation
import HearthConstraints
import HearthEngine
import HearthKernels
import HearthProviders
import HearthTokenizers

/// Hearth's engine behind the provider protocol: the offline model an app falls back to.
///
/// One loaded model serves up to `parallel` requests at once, decoded together in one batch
/// per step (continuous batching); further callers wait for a free sequence slot. The KV
/// cache is reused across requests by matching the longest common token prefix, so turn N
/// of a conversation costs only its new tokens. Cancelling the consuming task (or dropping
/// the stream) stops that request within one step and leaves the others running.
public final class LocalProvider: LanguageModelProvider, @unchecked Sendable {
    // `@unchecked Sendable`: mutable state (`state`) is only touched under `lock`; the
    // generator serialises its own use.

    /// A load of the model, as ``Configuration/loadObserver`` hears it.
    public enum LoadEvent: Sendable {
        case started
        /// Loaded (the GGUF repack, the tokenizer, the generator) in `seconds`.
        case loaded(seconds: Double)
        case failed(ProviderError)
    }

    /// How the provider was configured.
    public struct Configuration: Sendable {
        /// The model: a checkpoint directory or a `.hqf` file.
        public var modelPath: String
        /// Quantize float weights at load (nil: run as stored).
        public var quantize: WeightQuantization?
        /// KV cache size in tokens (nil: the model's, capped at 4096).
        public var context: Int?
        /// Worker threads (nil: all cores).
        public var threads: Int?
        /// How the KV cache stores keys and values: `.f16` (the default), `.f32`, `.q8_0` or
        /// `.q4_0` (about half and a quarter of f16's memory per token; docs/ACCURACY.md).
        public var kvType: DType = .f16
        /// Tokens per step (prompt chunks and decode tokens together); cancellation is checked between steps.
        public var batch: Int
        /// Requests served at once, each with its own KV slot of `context` tokens (all
        /// allocated at load). Further requests wait for a slot.
        public var parallel: Int
        /// How conversations become prompts (default: the base-model dialogue for models that look
        /// like base models, so their replies end; the chat template for the rest).
        public var promptStyle: PromptStyle
        /// End a reply that repeats itself (`RepetitionGuard`: a line a third time, or a span
        /// three times in a row); it then finishes with `stop`. Off by default.
        public var endsRepetitiveReplies: Bool
        /// How ``LocalProvider/embed(_:)`` pools a text's final hidden states: `.mean` over its
        /// tokens (the default) or the `.last` token's.
        public var embeddingPooling: EmbeddingPooling = .mean
        /// Structured output ends complete within the token budget unless a request says
        /// otherwise (`GenerationParameters.finishInBudget`). On by default.
        public var finishInBudget = true
        /// Values for requests that leave them out (`hearth serve --temperature`, `--seed`,
        /// `--max-tokens`…, as llama-server's): sampling fields and `maxTokens`; the other
        /// fields are not used. Unset ones fall back to the model's generation_config.json,
        /// else the engine's defaults (and no token cap but the context).
        public var defaults = ChatOptions()
        /// Prompt tokens a step may spend on new requests while others are decoding (nil: the
        /// engine's default, 32, which keeps running sequences' pace; up to `batch`, which
        /// admits a wave of new requests sooner at the cost of those steps' latency).
        public var prefillWhileDecoding: Int?
        /// Shared with the other models of a server that serves several: unloads the least
        /// recently used beyond its limit when this one is about to be used (nil: stay loaded).
        public var residency: ModelResidency?
        /// The model's name in errors (`hearth serve` gives the name clients use; nil: the
        /// model file's or folder's name without extension). Errors never show the path.
        public var name: String?
        /// Seconds after a failed load before a request may try loading again; each further
        /// failure doubles it, up to ``maxLoadRetryDelay`` (a success starts over). Requests
        /// within the pause get the failure at once.
        public var loadRetryDelay: Double = 1
        /// The longest pause between load attempts, in seconds.
        public var maxLoadRetryDelay: Double = 60
        /// Speculative decoding for every request (`SpeculativeMode`; default prompt lookup,
        /// adaptive). It changes how many tokens a step verifies, never which are generated.
        public var speculative: SpeculativeMode = .lookup
        /// The draft model of `SpeculativeMode.draft` (a checkpoint directory, `.gguf` or
        /// `.hqf` of a smaller model with the same tokenizer), loaded with the model; nil: none.
        public var draftModelPath: String?
        /// Where GGUF weights rearranged for the kernels are kept between loads (default: the
        /// environment's, `RepackCache(environment:)`; `.disabled` rearranges in memory).
        public var repackCache: RepackCache = .default
        /// Bits of the activations the integer kernels multiply (`ActivationPrecision`; default
        /// `.outliers`: 8-bit prompt products where the CPU has AVX-512 VNNI, each token's 8
        /// largest activations of each product in f32, 16 bits for generated tokens; `.wide` is
        /// the exact path).
        public var activationPrecision: ActivationPrecision = .default
        /// The prompt cache (docs/PROMPT-CACHE.md): finished requests' keys and values kept in
        /// blocks beyond the `parallel` slots, so a conversation that left its slot (more
        /// conversations than slots, an app switching between chats) costs only its new tokens.
        /// Default `PromptCacheOptions.automatic`: up to a quarter of physical memory, at most
        /// 8 GiB; `.disabled` turns it off; a `directory` adds the disk tier.
        public var promptCache: PromptCacheOptions = .automatic
        /// The chat template to render prompts with instead of the checkpoint's own
        /// (`--chat-template FILE|NAME`: a Jinja file, a named template of the file such as
        /// `tool_use`, or a hand-written format such as `chatml`); nil: the checkpoint's.
        /// A name that names nothing, or a file that does not compile, fails the load.
        public var chatTemplate: String?
        /// Told when a load of the model starts and when it ends (`hearth serve`'s log lines and
        /// terminal status line); called on the loading thread.
        public var loadObserver: (@Sendable (LoadEvent) -> Void)?

        public init(
            modelPath: String, quantize: WeightQuantization? = nil, context: Int? = nil, threads: Int? = nil,
            batch: Int = Generator.defaultBatch,
            parallel: Int = 1, promptStyle: PromptStyle = .automatic, endsRepetitiveReplies: Bool = false
        ) {
            self.modelPath = modelPath
            self.promptStyle = promptStyle
            self.endsRepetitiveReplies = endsRepetitiveReplies
            self.quantize = quantize
            self.context = context
            self.threads = threads
            self.batch = batch
            self.parallel = parallel
        }
    }

    /// Block types float weights can be quantized to at load (``Configuration/quantize``).
    public enum WeightQuantization: String, Sendable, CaseIterable {
        /// 4.5 bits per weight: 32 weights share one f16 scale.
        case q4_0
        /// 5 bits per weight: 32 weights share an f16 scale and minimum.
        case q4_1
        /// 8.5 bits per weight: 32 weights share one f16 scale.
        case q8_0

        /// The kernel module's block type.
        var dtype: DType {
            switch self {
            case .q4_0: return .q4_0
            case .q4_1: return .q4_1
            case .q8_0: return .q8_0
            }
        }
    }

    /// How a conversation becomes a prompt.
    public enum PromptStyle: String, Sendable, CaseIterable {
        /// The model's chat template (what an instruction-tuned model was trained on).
        case chatTemplate
        /// The completion-style `User:`/`Assistant:` dialogue for base models, stopping at the
        /// next `User:` (`ChatTemplate.Format.dialogue`).
        case dialogue
        /// The dialogue when the model looks like a base model (`TransformerModel.baseModelReason`),
        /// else the chat template.
        case automatic
    }

    enum State {
        case idle
        case loading
        case loaded(Generator)
        case failed(ProviderError)
    }

    public let id: String
    public let configuration: Configuration
    let lock = NSLock()
    var state = State.idle  // internal: LocalProvider+Snapshot.swift reads it
    private var waiters: [CheckedContinuation<Generator, Error>] = []
    /// Loads that failed in a row, and when the next may be tried (``Configuration/loadRetryDelay``).
    private var failedLoads = 0
    private var nextLoadAttempt = ContinuousClock.now
    /// The longest token of the loaded vocabulary in bytes (computed once, for ``refuseByLength(_:generator:)``).
    private var longestToken: Int?

    /// Creates a provider; the model loads on first use or `prewarm`.
    public init(id: String = "local", configuration: Configuration) {
        self.id = id
        self.configuration = configuration
    }

    /// Creates a provider around an already loaded model, serving up to `parallel` requests at once
    /// (`kvType`: ``Configuration/kvType``; `speculative`: ``Configuration/speculative``, with
    /// `draftModel` drafting for `SpeculativeMode.draft`; `promptCache`:
    /// ``Configuration/promptCache``, off unless given here).
    public init(
        id: String = "local", model: TransformerModel, context: Int? = nil, threads: Int? = nil,
        batch: Int = Generator.defaultBatch,
        parallel: Int = 1, embeddingPooling: EmbeddingPooling = .mean, kvType: DType = .f16,
        speculative: SpeculativeMode = .lookup, draftModel: TransformerModel? = nil,
        promptCache: PromptCacheOptions = .disabled
    ) throws {
        self.id = id
        var configuration = Configuration(
            modelPath: model.path.path, context: context, threads: threads, batch: batch, parallel: parallel)
        configuration.embeddingPooling = embeddingPooling
        configuration.kvType = kvType
        configuration.speculative = speculative
        configuration.draftModelPath = draftModel?.path.path
        configuration.promptCache = promptCache
        self.configuration = configuration
        state = .loaded(
            try Generator(
                model: model, context: context, threads: threads, batch: batch, kvType: kvType, sequences: parallel,
                draftModel: draftModel, promptCache: promptCache))
    }

    /// How this provider's model computes on this CPU: the kernel level (`KernelLevel`), the
    /// configured `ActivationPrecision` and what it means here
    /// (`ActivationPrecision.summary(level:)`). For the server's model metadata.
    package var computePath: (kernels: String, activationBits: String, activations: String) {
        let precision = configuration.activationPrecision
        return (KernelLevel.current.rawValue, precision.rawValue, precision.summary())
    }

    public var availability: ProviderAvailability {
        get async { lock.withLock { currentAvailability() } }
    }

    private func currentAvailability() -> ProviderAvailability {
            switch state {
            case .loaded: return .available
            case .loading: return .unavailable(.loading)
            case .failed(let error):
                return .unavailable(error.code == .modelUnavailable ? .notDownloaded : .other(error.message))
            case .idle:
                return FileManager.default.fileExists(atPath: configuration.modelPath) ? .available : .unavailable(.notDownloaded)
            }
    }

    /// Loads the model and, when `request` is given, prefills its prompt so the first real
    /// request with that prefix starts generating at once.
    public func prewarm(_ request: ChatRequest?) async throws {
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }
        guard let request else { return }
        let prompt = try prompt(for: request, generator: generator).tokens
        var prefillOnly = GenerationParameters()
        prefillOnly.maxTokens = 0
        let parameters = prefillOnly
        _ = try await Self.detached { try generator.run(prompt: prompt, parameters: parameters) { _ in } }
    }

    /// The provider's finish reason for the engine's: a reply that called tools ends with
    /// `toolCalls`; a sequence this provider stopped itself (`stopped`: the repetition guard, a
    /// repeated call) ends as if it had finished, not as cancelled.
    static func finishReason(_ engine: HearthEngine.FinishReason, stopped: Bool, madeCalls: Bool) -> HearthProviders.FinishReason {
        switch engine {
        case .stop: return madeCalls ? .toolCalls : .stop
        case .length: return .length
        case .cancelled: return stopped ? (madeCalls ? .toolCalls : .stop) : .cancelled
        }
    }

    /// Whether `request` asks to continue its final message: ``ChatOptions/continueFinalMessage``
    /// with an assistant message last that carries text and no tool calls (and no router continuation).
    static func continuesFinalMessage(_ request: ChatRequest, _ messages: [ChatMessage]) -> Bool {
        guard request.options.continueFinalMessage == true, request.continuation == nil, let last = messages.last else { return false }
        return last.role == .assistant && last.toolCalls.isEmpty && !last.content.isEmpty
    }

    /// Renders the conversation (plus any partial reply to continue) and fits it into the
    /// context, dropping the oldest turns (system prompt kept) when the request allows it.
    func prompt(for request: ChatRequest, generator: Generator) throws -> (tokens: [Int32], dropped: Int) {
        let model = generator.model
        var messages = request.messages
        var dropped = 0
        if !request.allowTruncation {
            try refuseByLength(messages.map(\.content) + [request.continuation ?? ""], generator: generator)
        }
        // Without truncation the prompt must leave room for one generated token: encoding of a
        // long prompt stops as soon as it has more than `context - 1` ids.
        let contents = messages.map(\.content) + [request.continuation ?? ""]
        let limit = request.allowTruncation ? Int.max : Self.encodingLimit(contents, generator.context - 1)
        while true {
            var tokens: [Int32]
            do {
                // A final assistant message to continue (a prefill) is left open, and no
                // reasoning suffix follows it: the reply continues that message's text.
                let text =
                    Self.continuesFinalMessage(request, messages)
                    ? try renderPrompt(messages, request, model: model, ending: .finalMessageOpen)
                    : reasoningPrompt(try renderPrompt(messages, request, model: model), request, model)
                guard let encoded = try model.tokenizer.encode(text, addSpecialTokens: false, limit: limit) else {
                    throw tooLong(generator)
                }
                tokens = encoded
                if let continuation = request.continuation, !continuation.isEmpty {
                    guard let more = try model.tokenizer.encode(continuation, addSpecialTokens: false, limit: limit - tokens.count)
                    else { throw tooLong(generator) }
                    tokens += more
                }
            } catch let error as ProviderError {
                throw error
            } catch {
                throw providerError(error)
            }
            // Leave room for at least one generated token.
            if tokens.count < generator.context { return (tokens, dropped) }
            let removable = messages.firstIndex { $0.role != .system }
            let nonSystem = messages.filter { $0.role != .system }.count
            guard request.allowTruncation, let index = removable, nonSystem > 1 else {
                throw ProviderError(
                    .contextLengthExceeded(tokens: tokens.count, limit: generator.context), provider: id,
                    message: "the conversation is \(tokens.count) tokens but the local context holds \(generator.context); "
                        + "allow truncation, start a new conversation or load the model with a larger context")
            }
            messages.remove(at: index)
            dropped += 1
        }
    }

    /// Encodes a raw text prompt (BOS added as the tokenizer says). Over 64 KiB it is refused
    /// once it is certain to have more than `limit` tokens (``refuseByLength(_:generator:)``,
    /// then `Tokenizer.encode(_:addSpecialTokens:limit:)`); a shorter one is encoded whole and
    /// the caller compares its count (so its refusal can give the count).
    /// - Throws: `ProviderError` `.contextLengthExceeded`, or the tokenizer's error.
    func encodeWithin(_ text: String, limit: Int, generator: Generator) throws -> [Int32] {
        try refuseByLength([text], generator: generator)
        let encoded: [Int32]?
        do {
            encoded = try generator.model.tokenizer.encode(
                text, addSpecialTokens: true, limit: Self.encodingLimit([text], limit))
        } catch {
            throw providerError(error)
        }
        guard let encoded else { throw tooLong(generator) }
        return encoded
    }

    /// The limit to encode texts of this size with: none up to 64 KiB, where encoding all of it
    /// is cheap and the refusal can give the exact count; `limit` above.
    static func encodingLimit(_ texts: [String], _ limit: Int) -> Int {
        texts.reduce(0) { $0 + $1.utf8.count } > 64 << 10 ? limit : Int.max
    }

    /// The refusal of a prompt whose encoding stopped past the context (its exact count unknown).
    func tooLong(_ generator: Generator) -> ProviderError {
        ProviderError(
            .contextLengthExceeded(tokens: nil, limit: generator.context), provider: id,
            message: "This model's maximum context length is \(generator.context) tokens, but the prompt is longer "
                + "(tokenizing stopped there). Shorten the prompt or load the model with a larger context.")
    }

    func parametersFor(_ request: ChatRequest, promptTokens: Int, generator: Generator) throws -> GenerationParameters {
        let o = request.options
        var p = GenerationParameters()
        p.logprobs = false  // chat events carry no log-probabilities (``serveChoices`` sets them when asked)
        do {
            if !request.optionsChecked { try o.validate() }
            try request.messages.validateToolResults()
        } catch {
            throw ProviderError(.invalidRequest, provider: id, message: error.message, underlying: error)
        }
        var s = sampling(o, generator: generator)
        let vocabulary = generator.model.options.vocabSize
        if let bad = o.logitBias.keys.first(where: { Int($0) >= vocabulary }) {
            throw ProviderError(
                .invalidRequest, provider: id,
                message: "logit_bias names token \(bad), outside this model's vocabulary (0..<\(vocabulary))",
                underlying: InvalidGenerationOption(field: "logit_bias", message: "token \(bad) is outside the vocabulary"))
        }
        s.logitBias = o.logitBias.mapValues { Float($0) }
        // ignore_eos: the end tokens are banned (−100), so the reply runs to its length or a stop string.
        if o.ignoreEOS == true { for id in generator.model.eosIDs { s.logitBias[id] = -100 } }
        p.sampling = s
        p.maxTokens = min(o.maxTokens ?? configuration.defaults.maxTokens ?? Int.max, generator.context - promptTokens)
        p.stop = o.stop + (usesDialogue(generator.model) ? ChatTemplate.dialogueStops : [])
        p.speculative = configuration.speculative
        p.stripLeadingSpace = request.continuation?.isEmpty ?? true
        p.finishInBudget = o.finishInBudget ?? configuration.finishInBudget
        if !o.tools.isEmpty {
            try applyTools(request, to: &p, generator: generator)
        } else {
            try applyConstraint(o.responseFormat, stop: o.stop, continuation: request.continuation, to: &p, generator: generator)
        }
        return p
    }

    /// A request's sampling values, each unset one taken from ``Configuration/defaults`` (the
    /// server's `--temperature`, `--seed`…), else the model's generation_config.json, else the
    /// engine's defaults.
    func sampling(_ o: ChatOptions, generator: Generator) -> SamplingOptions {
        let d = configuration.defaults
        return SamplingOptions(
            temperature: o.temperature ?? d.temperature, topK: o.topK ?? d.topK, topP: o.topP ?? d.topP,
            minP: o.minP ?? d.minP, repetitionPenalty: o.repetitionPenalty ?? d.repetitionPenalty,
            presencePenalty: o.presencePenalty ?? d.presencePenalty,
            frequencyPenalty: o.frequencyPenalty ?? d.frequencyPenalty, seed: o.seed ?? d.seed,
            modelDefaults: generator.model.generationConfig)
    }

    /// Refuses, without tokenizing anything, text that cannot fit the context: no token covers
    /// more bytes of the text than the vocabulary's longest token, so text of more than
    /// `context × longest` bytes needs more tokens than the context holds. Leading and trailing
    /// white space is not counted (a chat template may trim it). Below that bound the prompt is
    /// encoded with a limit (``encodeWithin(_:limit:generator:)``, ``prompt(for:generator:)``)
    /// that stops as soon as the count passes the context: an exact count, not an estimate.
    /// (The bound assumes the tokenizer does not delete text inside it — a normalizer that
    /// collapses runs of spaces could make a prompt fit that this refuses.)
    func refuseByLength(_ texts: [String], generator: Generator) throws {
        let limit = generator.context
        let total = texts.reduce(0) { $0 + Self.trimmedByteCount($1) }
        let longest = longestTokenBytes(generator)
        guard total / longest > limit else { return }
        throw ProviderError(
            .contextLengthExceeded(tokens: nil, limit: limit), provider: id,
            message: "This model's maximum context length is \(limit) tokens, but the prompt is at least \(total / longest) "
                + "tokens (\(total) bytes; no token of this vocabulary is longer than \(longest) bytes). Shorten the prompt or "
                + "load the model with a larger context.")
    }

    /// UTF-8 bytes of `text` without leading and trailing white space (what Jinja's `trim`
    /// removes).
    static func trimmedByteCount(_ text: String) -> Int {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return 0 }
        return text.utf8.distance(from: first, to: scalars.index(after: last))
    }

    /// The longest token of the loaded vocabulary in bytes, at least 64 (special tokens whose
    /// bytes are unknown are covered by that floor); computed once.
    func longestTokenBytes(_ generator: Generator) -> Int {
        if let known = lock.withLock({ longestToken }) { return known }
        let tokenizer = generator.model.tokenizer
        var longest = 64
        for id in 0..<Int32(clamping: generator.model.options.vocabSize) {
            longest = max(longest, tokenizer.bytes(of: id)?.count ?? 0)
        }
        lock.withLock { longestToken = longest }
        return longest
    }

    /// Whether conversations with `model` are rendered as the base-model dialogue.
    func usesDialogue(_ model: TransformerModel) -> Bool {
        switch configuration.promptStyle {
        case .chatTemplate: return false
        case .dialogue: return true
        case .automatic: return model.baseModelReason != nil
        }
    }

    /// The generator, loading the model on first use (once, even with concurrent callers),
    /// and the hold that keeps it loaded (``ModelResidency``; nil without one): end it when the
    /// use is over. Waits for the model's place when the residency has none free.
    /// - Throws: `ProviderError` `.modelUnavailable` when the model cannot load, `.cancelled`.
    func heldGenerator() async throws -> (Generator, ModelResidency.Hold?) {
        let hold: ModelResidency.Hold?
        do { hold = try await configuration.residency?.hold(self) } catch { throw providerError(error) }
        do { return (try await generatorLoadingOnce(), hold) } catch {
            hold?.end()
            throw error
        }
    }

    /// The generator (``heldGenerator()``), held only until it is returned: a residency may
    /// unload it while it is used (for callers that serve one model, such as the chat REPL).
    func loadedGenerator() async throws -> Generator {
        let (generator, hold) = try await heldGenerator()
        hold?.end()
        return generator
    }

    /// The generator, loading the model on first use (once, even with concurrent callers). A
    /// load that failed is tried again by a request that comes after the pause
    /// (``Configuration/loadRetryDelay``); within it the failure is answered at once.
    private func generatorLoadingOnce() async throws -> Generator {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Generator, Error>) in
            lock.lock()
            switch state {
            case .loaded(let generator):
                lock.unlock()
                waiter.resume(returning: generator)
                return
            case .failed(let error) where ContinuousClock.now < nextLoadAttempt:
                lock.unlock()
                waiter.resume(throwing: error)
                return
            case .loading:
                waiters.append(waiter)
                lock.unlock()
                return
            case .idle, .failed:
                state = .loading
                waiters.append(waiter)
                lock.unlock()
            }
            let configuration = self.configuration
            Thread.detachNewThread { [self] in
                let result: Result<Generator, ProviderError>
                let loadStarted = DispatchTime.now()
                configuration.loadObserver?(.started)
                do {
                    let model = try TransformerModel(
                        path: configuration.modelPath, quantize: configuration.quantize?.dtype, threads: configuration.threads,
                        repackCache: configuration.repackCache, chatTemplate: configuration.chatTemplate)
                    let draft = try configuration.draftModelPath.map {
                        try TransformerModel(path: $0, threads: configuration.threads, repackCache: configuration.repackCache)
                    }
                    let generator = try Generator(
                        model: model, context: configuration.context, threads: configuration.threads,
                        batch: configuration.batch, kvType: configuration.kvType, sequences: configuration.parallel,
                        draftModel: draft, promptCache: configuration.promptCache)
                    if let tokens = configuration.prefillWhileDecoding { generator.interleavedPrefillTokens = max(1, tokens) }
                    generator.activationPrecision = configuration.activationPrecision
                    result = .success(generator)
                } catch {
                    result = .failure(self.loadError(error))
                }
                lock.lock()
                let pending = waiters
                waiters = []
                switch result {
                case .success(let generator):
                    state = .loaded(generator)
                    failedLoads = 0
                case .failure(let error):
                    state = .failed(error)
                    let delay = min(configuration.maxLoadRetryDelay, configuration.loadRetryDelay * pow(2, Double(min(failedLoads, 30))))
                    failedLoads += 1
                    nextLoadAttempt = ContinuousClock.now + .milliseconds(Int64(max(0, delay) * 1000))
                }
                lock.unlock()
                switch result {
                case .success:
                    let seconds = Double(DispatchTime.now().uptimeNanoseconds - loadStarted.uptimeNanoseconds) / 1e9
                    configuration.loadObserver?(.loaded(seconds: seconds))
                case .failure(let error): configuration.loadObserver?(.failed(error))
                }
                for waiter in pending { waiter.resume(with: result.mapError { $0 as Error }) }
            }
        }
    }

    /// The model's name in errors: ``Configuration/name``, else its file's or folder's name
    /// without extension.
    public var modelName: String {
        configuration.name ?? URL(fileURLWithPath: configuration.modelPath).deletingPathExtension().lastPathComponent
    }

    /// A failed load as the shared error type: the model named, every path in the cause shown
    /// by its last component only (a client must not learn where the server keeps its files).
    func loadError(_ error: Error) -> ProviderError {
        let cause = Self.withoutPaths(String(describing: error))
        return ProviderError(
            .modelUnavailable, provider: id,
            message: "the model '\(modelName)' could not be loaded: \(cause); it is tried again on a request after a pause",
            underlying: error)
    }

    /// `text` with every absolute or home-relative path (two components or more) replaced by
    /// its last component.
    static func withoutPaths(_ text: String) -> String {
        guard let pattern = try? NSRegularExpression(pattern: #"(?<![\w.~/:])~?(?:/[^/\s'"`,;:()\[\]]+){2,}/?"#) else { return text }
        var result = text
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).reversed() {
            guard let range = Range(match.range, in: result) else { continue }
            let path = result[range]
            let last = path.split(separator: "/").last.map(String.init) ?? ""
            result.replaceSubrange(range, with: last)
        }
        return result
    }

    /// Maps engine, format and tokenizer errors to the shared error type.
    func providerError(_ error: Error) -> ProviderError {
        if let error = error as? ProviderError { return error }
        if error is CancellationError { return ProviderError(.cancelled, provider: id, message: "the request was cancelled") }
        if let error = error as? EngineError {
            switch error.code {
            case .contextLengthExceeded:
                return ProviderError(.contextLengthExceeded(tokens: nil, limit: nil), provider: id, message: error.description, underlying: error)
            case .cancelled:
                return ProviderError(.cancelled, provider: id, message: error.description, underlying: error)
            case .invalidOption, .invalidToken, .missingComponent, .invalidSnapshot, .invalidLogitsFile, .logitsFileMismatch:
                return ProviderError(.invalidRequest, provider: id, message: error.description, underlying: error)
            }
        }
        return ProviderError(
            .modelUnavailable, provider: id, message: "the model '\(modelName)' could not be used: \(Self.withoutPaths("\(error)"))",
            underlying: error)
    }

    /// Runs blocking work on a thread of its own, off the cooperative pool.
    static func detached<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}

extension LocalProvider {
    /// The provider's usage figures for a finished generation.
    static func usage(_ summary: GenerationSummary, timeToFirstToken: Double?) -> Usage {
        var usage = Usage(
            promptTokens: summary.promptTokens, completionTokens: summary.completionTokens,
            cachedPromptTokens: summary.cachedPromptTokens, timeToFirstToken: timeToFirstToken,
            tokensPerSecond: summary.decodeTokensPerSecond > 0 ? summary.decodeTokensPerSecond : nil)
        usage.draftedTokens = summary.draftedTokens
        usage.acceptedDraftTokens = summary.acceptedDraftTokens
        usage.budgetShapedTokens = summary.budgetShapedTokens
        usage.reasoningTokens = summary.reasoningTokens > 0 ? summary.reasoningTokens : nil
        return usage
    }
}
