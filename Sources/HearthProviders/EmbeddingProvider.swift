/// One input to embed: text, or token ids of the provider's own tokenizer.
public enum EmbeddingInput: Sendable, Equatable {
    /// Text, tokenized by the provider (the local model adds its BOS token as its tokenizer
    /// config says, as it does for prompts).
    case text(String)
    /// Token ids, used as given. Ids are specific to one model's vocabulary: a provider whose
    /// vocabulary they are not from computes a meaningless vector or refuses them.
    case tokens([Int32])
}

/// A request for embedding vectors: one vector per input, in input order.
public struct EmbeddingRequest: Sendable {
    /// What to embed; at least one input, none empty.
    public var inputs: [EmbeddingInput]
    /// The length of the vectors wanted (`nil`: the model's own). A provider that cannot give
    /// that length refuses the request with ``ProviderError/Code/invalidRequest`` naming
    /// `dimensions`; the local model accepts only its hidden size.
    public var dimensions: Int?
    /// A model name that overrides the provider's configured embedding model (`nil`: the
    /// provider's own; the local provider serves its one loaded model whatever the name).
    public var model: String?

    /// Creates a request.
    public init(inputs: [EmbeddingInput], dimensions: Int? = nil, model: String? = nil) {
        self.inputs = inputs
        self.dimensions = dimensions
        self.model = model
    }

    /// A request for the vectors of `texts`.
    public init(texts: [String], dimensions: Int? = nil, model: String? = nil) {
        self.init(inputs: texts.map { .text($0) }, dimensions: dimensions, model: model)
    }
}

/// The vectors of an ``EmbeddingRequest``.
public struct EmbeddingResponse: Sendable {
    /// One vector per input, in input order, all of one length. The local model's are
    /// L2-normalised (unit length); cloud providers return what their server computed.
    public var vectors: [[Float]]
    /// Tokens the inputs took, as the provider counted them (0 when a server does not say).
    public var promptTokens: Int
    /// The ``EmbeddingProvider/id`` of the provider that computed the vectors (behind a
    /// ``FallbackRouter``, the one that served).
    public var provider: String

    /// Creates a response.
    public init(vectors: [[Float]], promptTokens: Int, provider: String) {
        self.vectors = vectors
        self.promptTokens = promptTokens
        self.provider = provider
    }

    /// The length of the vectors (0 when there are none).
    public var dimensions: Int { vectors.first?.count ?? 0 }
}

/// A provider that turns text into embedding vectors (for search, retrieval, clustering).
///
/// Conformers throw ``ProviderError`` and nothing else: ``ProviderError/Code/invalidRequest``
/// for no inputs, an empty input or an unsupported `dimensions`;
/// ``ProviderError/Code/contextLengthExceeded(tokens:limit:)`` for an input longer than the
/// model takes; the transport and server codes as for chat. ``FallbackRouter`` conforms and
/// fails over between its providers that conform.
public protocol EmbeddingProvider: Sendable {
    /// A stable name for logs, errors and routing, such as `"openai"` or `"local"`.
    var id: String { get }
    /// The vectors of `request`'s inputs, in order. Throws ``ProviderError``.
    func embed(_ request: EmbeddingRequest) async throws -> EmbeddingResponse
}

extension EmbeddingRequest {
    /// Checks what every provider requires: at least one input and no empty one; a positive
    /// `dimensions` when given. Throws ``ProviderError/Code/invalidRequest`` attributed to `provider`.
    public func validate(provider: String) throws {
        guard !inputs.isEmpty else {
            throw ProviderError(.invalidRequest, provider: provider, message: "`input` is empty: give at least one text to embed.")
        }
        for (index, input) in inputs.enumerated() {
            let empty: Bool
            switch input {
            case .text(let text): empty = text.isEmpty
            case .tokens(let ids): empty = ids.isEmpty
            }
            if empty {
                throw ProviderError(
                    .invalidRequest, provider: provider,
                    message: "`input` \(index) is empty: every input needs at least one character or token.")
            }
        }
        if let dimensions, dimensions < 1 {
            throw ProviderError(
                .invalidRequest, provider: provider, message: "`dimensions` must be at least 1, got \(dimensions).")
        }
    }
}
