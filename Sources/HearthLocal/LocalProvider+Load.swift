// Only with the `ModelHub` trait (on by default): it brings HearthHub and its HTTP stack.
#if ModelHub
import Foundation
import HearthHub
import HearthProviders

/// Models by name for apps: ``LocalProvider/load(_:catalog:hub:configure:progress:)`` takes a
/// path, a short name from the registry or a hub reference, downloads and verifies what is
/// missing, and loads it — the same resolution `hearth --model` uses (`ModelCatalog`).
extension LocalProvider {
    /// How far ``load(_:catalog:hub:configure:progress:)`` has come.
    public enum LoadProgress: Sendable {
        /// The name was resolved; `source` is what it names.
        case resolved(ModelSource)
        /// A download step of a model pulled from the hub (a file found in the cache, started,
        /// advanced, retried, finished and verified).
        case download(HubProgress)
        /// The model file is being loaded (mapped, rearranged for the kernels, its tokenizer read).
        case loading
        /// The model is loaded and ready, after `seconds` of loading.
        case loaded(seconds: Double)
    }

    /// What a model name resolved to, as ``LoadProgress/resolved(_:)`` reports it.
    public enum ModelSource: Sendable, Equatable {
        /// A file or folder on disk (a path, or the registry's installed default model).
        case file
        /// A repository on the Hugging Face hub (`org/repo[:QUANT]`), taken from the shared
        /// cache or downloaded into it.
        case hub(String)
    }

    /// Loads a model by name and returns it ready to answer.
    ///
    /// ```swift
    /// let model = try await LocalProvider.load("phi3.5-mini", progress: { progress in
    ///     if case .download(.advanced(_, let done, let total)) = progress { print(done, "of", total) }
    /// })
    /// let session = ChatSession(provider: model, instructions: "Be brief.")
    /// ```
    ///
    /// - Parameters:
    ///   - reference: a path to a `.gguf`/`.hqf` file or checkpoint folder; a short name from the
    ///     registry (`phi3.5-mini`, `gemma-3-270m-q4_k_m`, the default model's name); or a hub
    ///     reference `org/repo[:QUANT]` such as `bartowski/Phi-3.5-mini-instruct-GGUF:Q4_K_M`.
    ///     Nil: the registry's default model.
    ///   - catalog: where short names resolve (default `ModelCatalog.standard(environment:executable:fallback:)`:
    ///     `HEARTH_MODELS` or the checkout's `models/`, else the registry built into the library).
    ///   - hub: the hub client: endpoint, cache folder, token and offline mode (default: the
    ///     process environment's, as Python's `huggingface_hub` reads it, so the cache is
    ///     shared) and its retry policy; its own progress callback is called too.
    ///   - configure: changes to the provider's configuration (context, threads, parallel
    ///     sequences…); its `modelPath` is set to the resolved file.
    ///   - progress: told each step; called from background threads.
    /// - Throws: `ModelNameError` when `reference` names nothing (`.unknownName`,
    ///   `.missingPath`, `.notInstalled`); `HubError` when the download fails (`.network` for an
    ///   unreachable hub, `.notCached` offline, `.checksumMismatch`/`.sizeMismatch` for a file
    ///   that is not the listed or pinned one — it is never used); `ProviderError`
    ///   (`.modelUnavailable`) when the file does not load. All are `LocalizedError`s.
    public static func load(
        _ reference: String? = nil, catalog: ModelCatalog = .standard(), hub: HubModels = HubModels(),
        configure: (inout Configuration) -> Void = { _ in }, progress: @escaping @Sendable (LoadProgress) -> Void = { _ in }
    ) async throws -> LocalProvider {
        let target = try reference.map(catalog.target) ?? catalog.defaultTarget()
        let path: String
        switch target {
        case .local(let file):
            progress(.resolved(.file))
            path = file
        case .hub(let ref, let pins):
            progress(.resolved(.hub(ref.description)))
            var models = hub
            let inner = hub.progress
            models.progress = { step in
                inner(step)
                progress(.download(step))
            }
            path = try await models.resolve(ref, expected: pins).path.path
        }
        var configuration = Configuration(modelPath: path)
        configure(&configuration)
        configuration.modelPath = path
        // Errors name the model as the app named it, never by its path.
        if configuration.name == nil {
            configuration.name = reference.map { ModelCatalog.isPath($0) ? URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent : $0 }
                ?? catalog.defaultName
        }
        let observer = configuration.loadObserver
        configuration.loadObserver = { event in
            observer?(event)
            switch event {
            case .started: progress(.loading)
            case .loaded(let seconds): progress(.loaded(seconds: seconds))
            case .failed: break
            }
        }
        let provider = LocalProvider(configuration: configuration)
        try await provider.prewarm(nil)
        return provider
    }
}

/// A local model keeps its KV cache with a saved ``ChatSession`` (``LocalProvider/snapshot()``
/// and ``LocalProvider/restore(_:)``).
extension LocalProvider: ConversationSnapshotting {}

extension ConversationFile {
    /// A `.hchat` file (the format of `hearth chat`'s `/save`) holding a saved session: its
    /// transcript and KV snapshot, the snapshot zstd-compressed by ``encoded()``.
    /// `model` names the local model (nil for cloud providers).
    public init(_ saved: ChatSession.SavedState, model: String? = nil, savedAt: Date = Date()) {
        self.init(
            conversation: Conversation(
                messages: saved.transcript.conversation, options: saved.transcript.options, provider: saved.provider, model: model,
                savedAt: savedAt),
            snapshot: saved.snapshot)
    }

    /// The file as a saved session for `ChatSession.restore(_:provider:tools:maxToolRounds:)`: a
    /// leading system message becomes the instructions.
    public var sessionState: ChatSession.SavedState {
        var messages = conversation.messages
        var instructions: String?
        if let first = messages.first, first.role == .system {
            instructions = first.content
            messages.removeFirst()
        }
        return ChatSession.SavedState(
            transcript: ChatSession.Transcript(instructions: instructions, messages: messages, options: conversation.options),
            snapshot: snapshot, provider: conversation.provider)
    }
}

extension ConversationFileError: LocalizedError {
    /// What is wrong with the file.
    public var errorDescription: String? { description }
    /// What to do about it.
    public var recoverySuggestion: String? { "Open another saved conversation, or start a new one." }
}
#endif
