import Foundation
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// Several local models behind one residency limit: loaded on first use, the least recently
/// used unloaded beyond the limit, reloaded when asked for again.
@Suite struct ModelResidencyTests {
    func provider(_ name: String, _ residency: ModelResidency) -> LocalProvider {
        var configuration = LocalProvider.Configuration(modelPath: Fixtures.checkpoint(name).path, context: 64, threads: 2, batch: 8)
        configuration.residency = residency
        return LocalProvider(id: name, configuration: configuration)
    }

    func answer(_ provider: LocalProvider) async throws -> String {
        var text = ""
        let request = ChatRequest(messages: [.user("Hello")], options: ChatOptions(temperature: 0, maxTokens: 3))
        for try await event in provider.stream(request) { if case .textDelta(let delta) = event { text += delta } }
        return text
    }

    @Test func leastRecentlyUsedIsUnloadedBeyondTheLimit() async throws {
        let residency = ModelResidency(maxLoaded: 2)
        let a = provider("phi3-mha", residency), b = provider("llama-tiny", residency), c = provider("gemma3-tiny", residency)
        #expect(!a.isResident && !b.isResident && !c.isResident)  // nothing loads before it is used
        let first = try await answer(a)
        _ = try await answer(b)
        #expect(a.isResident && b.isResident && residency.unloads == 0)
        _ = try await answer(a)  // a is now the most recent: b goes when c comes
        _ = try await answer(c)
        #expect(a.isResident && !b.isResident && c.isResident && residency.unloads == 1)
        _ = try await answer(b)
        #expect(!a.isResident && b.isResident && c.isResident && residency.unloads == 2)
        // An unloaded model loads again on its next use and answers as before (greedy).
        #expect(try await answer(a) == first)
        #expect(a.isResident && residency.unloads == 3)
    }
}
