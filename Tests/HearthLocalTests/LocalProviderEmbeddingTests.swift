import Foundation
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// `LocalProvider.embed`: the engine's embeddings behind the provider protocol.
@Suite struct LocalProviderEmbeddingTests {
    static func provider(
        context: Int = 64, parallel: Int = 1, pooling: EmbeddingPooling = .mean
    ) throws -> LocalProvider {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        return try LocalProvider(
            model: model, context: context, threads: 2, batch: 16, parallel: parallel, embeddingPooling: pooling)
    }


    static let texts = ["The fire is a small promise.", "Bread.", "我们一边喝茶一边聊天。"]

    @Test func embedsTextsAndTokensAlike() async throws {
        let provider = try Self.provider()
        let response = try await provider.embed(EmbeddingRequest(texts: Self.texts))
        #expect(response.provider == "local")
        #expect(response.vectors.count == 3 && response.dimensions == 64)
        for vector in response.vectors {
            #expect(abs(vector.reduce(0) { $0 + Double($1) * Double($1) } - 1) < 1e-5)
        }
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let ids = try Self.texts.map { try model.tokenizer.encode($0, addSpecialTokens: true) }
        #expect(response.promptTokens == ids.reduce(0) { $0 + $1.count })
        let byTokens = try await provider.embed(EmbeddingRequest(inputs: ids.map { .tokens($0) }, dimensions: 64))
        for (a, b) in zip(response.vectors, byTokens.vectors) { #expect(cosineSimilarity(a, b) >= 0.99999) }
        // One at a time gives the same vectors.
        for (i, text) in Self.texts.enumerated() {
            let alone = try await provider.embed(EmbeddingRequest(texts: [text]))
            #expect(cosineSimilarity(alone.vectors[0], response.vectors[i]) >= 0.99999)
        }
    }

    @Test func poolingComesFromTheConfiguration() async throws {
        let mean = try await Self.provider(pooling: .mean).embed(EmbeddingRequest(texts: Self.texts))
        let last = try await Self.provider(pooling: .last).embed(EmbeddingRequest(texts: Self.texts))
        for (m, l) in zip(mean.vectors, last.vectors) { #expect(cosineSimilarity(m, l) < 0.99) }
        var configuration = LocalProvider.Configuration(modelPath: "unused")
        #expect(configuration.embeddingPooling == .mean)
        configuration.embeddingPooling = .last
        #expect(configuration.embeddingPooling == .last)
    }

    @Test func refusesWhatItCannotDo() async throws {
        let provider = try Self.provider(context: 16)
        func failure(_ request: EmbeddingRequest) async -> ProviderError? {
            do {
                _ = try await provider.embed(request)
                return nil
            } catch {
                return error as? ProviderError
            }
        }
        let empty = await failure(EmbeddingRequest(inputs: []))
        #expect(empty?.code == .invalidRequest)
        #expect(await failure(EmbeddingRequest(texts: ["fine", ""]))?.code == .invalidRequest)
        let dimensions = await failure(EmbeddingRequest(texts: ["fine"], dimensions: 32))
        #expect(dimensions?.code == .invalidRequest && dimensions?.message.contains("`dimensions`") == true)
        #expect(dimensions?.message.contains("64") == true)
        let long = await failure(EmbeddingRequest(texts: ["fine", String(repeating: "a b c d ", count: 20)]))
        guard let long, case .contextLengthExceeded(let tokens?, 16) = long.code else {
            Issue.record("expected contextLengthExceeded with counts, got \(String(describing: long))")
            return
        }
        #expect(tokens > 16 && long.message.contains("input 1"))
        #expect(await failure(EmbeddingRequest(inputs: [.tokens([5, 99_999])]))?.code == .invalidRequest)
        // Still serves after the refusals.
        #expect(try await provider.embed(EmbeddingRequest(texts: ["fine"])).vectors.count == 1)
    }

    /// Embeddings and chats on one provider at once: both complete, the chats give exactly
    /// their text alone (embedding passes take turns with decode steps and use their own
    /// cache) and the vectors theirs.
    @Test func embedsWhileChatting() async throws {
        let provider = try Self.provider(context: 128)
        let chat = ChatRequest(messages: [.user("How do I bake bread?")], options: ChatOptions(temperature: 0, maxTokens: 24))
        let texts = (0..<10).map { "Item \($0): " + String(repeating: "warm bread and tea ", count: $0 % 4 + 1) }
        // Twice: the first fills the slot, so this one and the ones below all reuse the cached prompt.
        _ = try await provider.complete(chat)
        let aloneText = try await provider.complete(chat).text
        let aloneVectors = try await provider.embed(EmbeddingRequest(texts: texts)).vectors

        @Sendable func chatTwice() async throws -> [String] {
            var all: [String] = []
            for _ in 0..<2 { all.append(try await provider.complete(chat).text) }
            return all
        }
        @Sendable func embedThrice() async throws -> [[[Float]]] {
            try await withThrowingTaskGroup(of: [[Float]].self) { group in
                for _ in 0..<3 { group.addTask { try await provider.embed(EmbeddingRequest(texts: texts)).vectors } }
                var all: [[[Float]]] = []
                for try await vectors in group { all.append(vectors) }
                return all
            }
        }
        async let replies = chatTwice()
        async let embeddings = embedThrice()
        #expect(try await replies == [aloneText, aloneText])
        let calls = try await embeddings
        #expect(calls.count == 3)
        for vectors in calls {
            for (a, b) in zip(vectors, aloneVectors) { #expect(cosineSimilarity(a, b) >= 0.99999) }
        }
    }

    @Test func cancellingStopsTheWork() async throws {
        let provider = try Self.provider(context: 64)
        let texts = (0..<2000).map { "Text number \($0) about a warm hearth and fresh bread." }
        let task = Task { try await provider.embed(EmbeddingRequest(texts: texts)) }
        try await Task.sleep(for: .milliseconds(30))
        task.cancel()
        let started = ContinuousClock.now
        do {
            _ = try await task.value
            Issue.record("a cancelled embedding call finished")
        } catch let error as ProviderError {
            #expect(error.code == .cancelled)
        }
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
