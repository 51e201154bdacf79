extension FallbackRouter: EmbeddingProvider {
    /// The providers that compute embeddings, in the order they are tried: the ``policy``'s
    /// order over ``providers``, keeping those that conform to ``EmbeddingProvider``.
    public var embeddingProviders: [any EmbeddingProvider] { embedders.map(\.embedder) }

    /// Each provider that embeds, as both of its protocols (availability is the chat one's).
    private var embedders: [(provider: any LanguageModelProvider, embedder: any EmbeddingProvider)] {
        let ordered: [any LanguageModelProvider] = policy == .cloudFirst ? providers : providers.reversed()
        return ordered.compactMap { provider in (provider as? any EmbeddingProvider).map { (provider, $0) } }
    }

    /// The vectors from the first provider that can compute them, failing over as for chat:
    /// providers that are `.unavailable` are skipped, and a failure for which
    /// ``shouldFailOver`` is true (by default network errors, timeouts, 5xx, 429, unavailable
    /// models, undecodable replies) moves on to the next provider that conforms to
    /// ``EmbeddingProvider``. The response names the provider that served.
    ///
    /// Throws ``ProviderError``: the error that ended the last attempt, or
    /// ``ProviderError/Code/modelUnavailable`` when no provider computes embeddings or none is
    /// available. Vectors of different providers are not comparable with each other: an app
    /// that stores them should keep ``EmbeddingResponse/provider`` with them.
    public func embed(_ request: EmbeddingRequest) async throws -> EmbeddingResponse {
        let candidates = embedders
        guard !candidates.isEmpty else {
            throw ProviderError(
                .modelUnavailable, provider: id,
                message: "None of this router's providers computes embeddings (\(providers.map(\.id).joined(separator: ", "))). "
                    + "Add one that conforms to EmbeddingProvider, such as the local model or an OpenAI-compatible server.")
        }
        var skipped: [String] = []
        var lastFailure: ProviderError?
        for (provider, embedder) in candidates {
            do { try Task.checkCancellation() } catch { throw ProviderError.wrapping(error, provider: id) }
            if case .unavailable(let reason) = await provider.availability {
                skipped.append("\(provider.id): \(reason)")
                continue
            }
            do {
                return try await embedder.embed(request)
            } catch {
                let failure = ProviderError.wrapping(error, provider: embedder.id)
                if failure.code == .cancelled || Task.isCancelled { throw failure }
                guard shouldFailOver(failure) else { throw failure }
                lastFailure = failure
            }
        }
        if let lastFailure { throw lastFailure }
        throw ProviderError(
            .modelUnavailable, provider: id,
            message: "No provider that computes embeddings is available (\(skipped.joined(separator: "; "))). "
                + "Check the network and credentials, or download the local model.")
    }
}
