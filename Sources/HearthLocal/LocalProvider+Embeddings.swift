import Foundation
import HearthEngine
import HearthProviders

extension LocalProvider: EmbeddingProvider {
    /// Embedding vectors of the loaded model: each input's final hidden states (after the
    /// final norm) pooled as ``Configuration/embeddingPooling`` says (mean over the tokens by
    /// default) and L2-normalised, `hiddenSize` floats per input.
    ///
    /// Texts are tokenized as prompts are (BOS added as the tokenizer config says); token
    /// inputs are used as given. All inputs run together in batched forward passes on a
    /// scratch cache, taking turns with the decode steps of running chats (never racing them),
    /// and no KV slot is kept: cached conversations stay as they are. The model loads on first
    /// use, as for chat. Cancelling the calling task stops the work between passes.
    ///
    /// Throws `ProviderError`: `.invalidRequest` for no inputs, an empty input, token ids
    /// outside the vocabulary, or `dimensions` other than the model's hidden size;
    /// `.contextLengthExceeded(tokens:limit:)` for an input longer than the context;
    /// `.cancelled`; `.modelUnavailable` when the model cannot load.
    public func embed(_ request: EmbeddingRequest) async throws -> EmbeddingResponse {
        try await embed(request, maxTokens: nil, admission: nil)
    }

    /// ``embed(_:)`` bounded and admitted as a server needs: the inputs together may have at
    /// most `maxTokens` tokens (nil: no bound; over it is `.invalidRequest` naming the bound,
    /// its underlying `InvalidGenerationOption` the field `input`, found before any forward
    /// pass and without tokenizing the rest), and the work waits for `admission` (the model
    /// held meanwhile, see ``Admission``).
    public func embed(_ request: EmbeddingRequest, maxTokens: Int?, admission: Admission?) async throws -> EmbeddingResponse {
        try request.validate(provider: id)
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }
        try Task.checkCancellation(provider: id)
        if let dimensions = request.dimensions, dimensions != generator.embeddingDimensions {
            throw ProviderError(
                .invalidRequest, provider: id,
                message: "`dimensions` \(dimensions) is not supported: the local model's embeddings have "
                    + "\(generator.embeddingDimensions) dimensions (its hidden size). Leave `dimensions` unset.")
        }
        let release: (@Sendable () -> Void)?
        do { release = try await admission?(1) } catch { throw providerError(error) }
        defer { release?() }
        try Task.checkCancellation(provider: id)
        let inputs = request.inputs, pooling = configuration.embeddingPooling
        let stop = CancellationFlag()
        let vectors: [[Float]], tokens: Int
        do {
            (vectors, tokens) = try await withTaskCancellationHandler {
                try await Self.onThread { () throws -> ([[Float]], Int) in
                    let sequences = try self.tokens(of: inputs, generator: generator, budget: maxTokens, isCancelled: { stop.isSet })
                    let vectors = try generator.embeddings(for: sequences, pooling: pooling, isCancelled: { stop.isSet })
                    return (vectors, sequences.reduce(0) { $0 + $1.count })
                }
            } onCancel: {
                stop.set()
            }
        } catch {
            throw providerError(error)
        }
        return EmbeddingResponse(vectors: vectors, promptTokens: tokens, provider: id)
    }

    /// The token ids of each input, checked against the context and, all together, against
    /// `budget`; `isCancelled` is asked before each input (thousands of texts take a while to
    /// tokenize).
    private func tokens(of inputs: [EmbeddingInput], generator: Generator, budget: Int?, isCancelled: () -> Bool) throws -> [[Int32]] {
        var sequences: [[Int32]] = []
        var total = 0
        func overBudget(_ budget: Int) -> ProviderError {
            let message = "The input is more than \(budget) tokens (all inputs together), the most one embeddings request may have; "
                + "send fewer or shorter inputs."
            return ProviderError(
                .invalidRequest, provider: id, message: message, underlying: InvalidGenerationOption(field: "input", message: message))
        }
        for (index, input) in inputs.enumerated() {
            if isCancelled() { throw ProviderError(.cancelled, provider: id, message: "the request was cancelled") }
            let tokens: [Int32]
            let left = budget.map { $0 - total } ?? Int.max
            switch input {
            case .text(let text):
                // A text of megabytes is refused before it is all tokenized; past the budget, the
                // tokenizer stops where it can.
                if let budget, left < generator.context {
                    guard Self.trimmedByteCount(text) / longestTokenBytes(generator) <= left,
                        let encoded = try generator.model.tokenizer.encode(text, addSpecialTokens: true, limit: left)
                    else { throw overBudget(budget) }
                    tokens = encoded
                } else {
                    tokens = try encodeWithin(text, limit: generator.context, generator: generator)
                }
            case .tokens(let ids):
                tokens = ids
            }
            total += tokens.count
            if let budget, total > budget { throw overBudget(budget) }
            guard tokens.count <= generator.context else {
                throw ProviderError(
                    .contextLengthExceeded(tokens: tokens.count, limit: generator.context), provider: id,
                    message: "input \(index) is \(tokens.count) tokens but the local context holds \(generator.context); "
                        + "shorten or split it, or load the model with a larger context")
            }
            sequences.append(tokens)
        }
        return sequences
    }

    /// Runs blocking engine work on its own thread (not the cooperative pool), mapping its
    /// errors to ``ProviderError``.
    private static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}

extension Task where Success == Never, Failure == Never {
    /// Throws ``ProviderError/Code/cancelled`` of `provider` when the current task is cancelled.
    fileprivate static func checkCancellation(provider: String) throws {
        if Task.isCancelled {
            throw ProviderError(.cancelled, provider: provider, message: "the request was cancelled")
        }
    }
}
