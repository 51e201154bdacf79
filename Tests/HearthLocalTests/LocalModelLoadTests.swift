// `LocalProvider.load` exists only with the `ModelHub` trait (on by default).
#if ModelHub
import Foundation
import HearthFakeServers
import HearthHub
import HearthProviders
import HearthTestSupport
import Synchronization
import Testing

@testable import HearthLocal

/// Models by name in the library (`LocalProvider.load`) and `ChatSession` on a local model:
/// the default model by its registry name, by path and as the default; a model pulled from a
/// (fake) hub with progress, then loaded; typed, readable errors for a name that names nothing,
/// an offline or unreachable hub and a corrupted download; a session streaming a reply; and a
/// session saved with its KV snapshot and restored into a freshly loaded model, continuing
/// without processing the conversation again.
@Suite(.serialized) struct LocalModelLoadTests {
    static let models = Fixtures.root.appendingPathComponent("models")
    static let defaultModel = models.appendingPathComponent("gemma-3-270m-q4_k_m.gguf")
    static var installed: Bool { FileManager.default.fileExists(atPath: defaultModel.path) }

    /// The checkout's registry and models folder.
    static func catalog() throws -> ModelCatalog {
        ModelCatalog(registry: try ModelRegistry.load(models.appendingPathComponent("registry.json")), directory: models)
    }

    /// Small enough to load fast and hold the test conversations; no prompt cache, so only a
    /// restored snapshot can spare a fresh model the conversation's prefill.
    static func small(_ configuration: inout LocalProvider.Configuration) {
        configuration.context = 512
        configuration.threads = 2
        configuration.promptCache = .disabled
    }

    final class Steps: Sendable {
        let list = Mutex<[String]>([])
        func record(_ step: LocalProvider.LoadProgress) {
            let name: String
            switch step {
            case .resolved(.file): name = "resolved:file"
            case .resolved(.hub(let reference)): name = "resolved:\(reference)"
            case .download(.finished(let path, _, let check)): name = "verified:\(path):\(check)"
            case .download: name = "download"
            case .loading: name = "loading"
            case .loaded: name = "loaded"
            }
            list.withLock { $0.append(name) }
        }
        var all: [String] { list.withLock { $0 } }
    }

    @Test(.enabled(if: installed, "the default model is not installed (scripts/fetch-default-model.sh)"))
    func theDefaultModelLoadsByNameByPathAndAsTheDefault() async throws {
        let catalog = try Self.catalog()
        let name = try #require(catalog.defaultName)
        let steps = Steps()
        let byName = try await LocalProvider.load(name, catalog: catalog, configure: Self.small) { steps.record($0) }
        #expect(steps.all == ["resolved:file", "loading", "loaded"])
        #expect(byName.modelName == name && byName.configuration.modelPath == Self.defaultModel.path)
        #expect(byName.loadedContext == 512, "loaded by load(), not on first use")

        let byPath = try await LocalProvider.load(Self.defaultModel.path, catalog: catalog, configure: Self.small)
        #expect(byPath.modelName == "gemma-3-270m-q4_k_m" && byPath.loadedContext != nil)
        let reply = try await byPath.complete(ChatRequest(messages: [.user("Say hi.")], options: ChatOptions(temperature: 0, maxTokens: 4)))
        #expect(!reply.text.isEmpty)

        let byDefault = try await LocalProvider.load(catalog: catalog, configure: Self.small)
        #expect(byDefault.configuration.modelPath == Self.defaultModel.path && byDefault.modelName == name)
    }

    @Test func aNameThatNamesNothingIsATypedReadableError() async throws {
        let error = await #expect(throws: ModelNameError.self) {
            _ = try await LocalProvider.load("no-such-model", catalog: try Self.catalog())
        }
        #expect(error?.code == .unknownName)
        #expect(error?.localizedDescription == "no model file or folder at no-such-model, and it is not a model name")
        #expect(error?.recoverySuggestion?.contains("gemma-3-270m-q4_k_m") == true)
    }

    @Test func aFileThatIsNotAModelFailsTheLoadNamingItWithoutItsFolder() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-load-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let junk = dir.appendingPathComponent("junk.gguf")
        try Data("not a model".utf8).write(to: junk)
        let error = await #expect(throws: ProviderError.self) {
            _ = try await LocalProvider.load(junk.path, catalog: ModelCatalog(registry: nil, directory: nil))
        }
        #expect(error?.code == .modelUnavailable)
        #expect(error?.localizedDescription.contains("'junk'") == true && error?.localizedDescription.contains(dir.path) == false, "\(String(describing: error))")
        #expect(error?.recoverySuggestion?.isEmpty == false)
    }

    @Test func anOfflineOrUnreachableHubIsATypedReadableError() async throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-load-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: cache) }
        let offline = HubModels(environment: HubEnvironment(endpoint: "http://127.0.0.1:1", cacheDirectory: cache, offline: true))
        let notCached = await #expect(throws: HubError.self) {
            _ = try await LocalProvider.load("org/absent-GGUF:Q4_K_M", catalog: ModelCatalog(registry: nil, directory: nil), hub: offline)
        }
        #expect(notCached?.code == .notCached && notCached?.localizedDescription.contains("org/absent-GGUF:Q4_K_M") == true)
        #expect(notCached?.recoverySuggestion?.contains("HF_HUB_OFFLINE") == true)

        // A hub that hangs up on every request (a refused port would wait out the 10 s connect
        // timeout: the HTTP client retries refused connections until then); one attempt.
        let server = try await TestHTTPServer.start { _, _, _ in .close }
        try await withCleanup({ await server.stop() }) {
            let unreachable = HubModels(
                environment: HubEnvironment(endpoint: "http://127.0.0.1:\(server.port)", cacheDirectory: cache), retry: RetryPolicy(attempts: 1, initialDelay: 0))
            let down = await #expect(throws: HubError.self) {
                _ = try await LocalProvider.load("org/absent-GGUF:Q4_K_M", catalog: ModelCatalog(registry: nil, directory: nil), hub: unreachable)
            }
            #expect(down?.code == .network && down?.recoverySuggestion?.isEmpty == false, "\(String(describing: down))")
            #expect(down.map { !$0.localizedDescription.contains("couldn") } == true)
        }
    }

    @Test func aModelPulledFromTheHubIsVerifiedAndLoadedAndACorruptDownloadIsRefused() async throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-load-\(UUID().uuidString)")
        let hub = try await FakeHub.start(repositories: ["test/gemma3-tiny": Fixtures.checkpoint("gemma3-tiny")])
        try await withCleanup({
            await hub.stop()
            try? FileManager.default.removeItem(at: cache)
        }) {
            let models = HubModels(
                environment: HubEnvironment(endpoint: hub.endpoint, cacheDirectory: cache), retry: RetryPolicy(attempts: 2, initialDelay: 0))
            let registry = try JSONDecoder().decode(
                ModelRegistry.self, from: Data(#"{"models": [{"name": "tiny", "repo": "test/gemma3-tiny"}]}"#.utf8))
            let catalog = ModelCatalog(registry: registry, directory: nil)

            var faults = FakeHub.Faults()
            faults.corrupt = ["model.safetensors"]
            hub.setFaults(faults)
            let corrupt = await #expect(throws: HubError.self) { _ = try await LocalProvider.load("tiny", catalog: catalog, hub: models) }
            #expect(corrupt?.code == .checksumMismatch && corrupt?.localizedDescription.contains("model.safetensors") == true)
            #expect(corrupt?.recoverySuggestion?.isEmpty == false)

            hub.setFaults(FakeHub.Faults())
            let steps = Steps()
            let provider = try await LocalProvider.load("tiny", catalog: catalog, hub: models, configure: { $0.context = 64 }) { steps.record($0) }
            #expect(steps.all.first == "resolved:test/gemma3-tiny")
            #expect(steps.all.contains("verified:model.safetensors:sha256"), "\(steps.all)")
            #expect(Array(steps.all.suffix(2)) == ["loading", "loaded"])
            #expect(provider.modelName == "tiny" && provider.loadedContext == 64)
            #expect(provider.configuration.modelPath.hasPrefix(cache.path))
        }
    }

    @Test(.enabled(if: installed, "the default model is not installed (scripts/fetch-default-model.sh)"))
    func aSessionStreamsAndIsRestoredWithItsKVSnapshot() async throws {
        let catalog = try Self.catalog()
        let name = try #require(catalog.defaultName)
        let first = try await LocalProvider.load(name, catalog: catalog, configure: Self.small)
        let options = ChatOptions(temperature: 0, maxTokens: 12)
        let session = ChatSession(provider: first, instructions: "You are a helpful assistant. Answer briefly.", options: options)
        var deltas = 0
        var text = ""
        var completed: ChatSession.Response?
        for try await update in session.streamResponse(to: "Name a colour of the sky.") {
            if case .textDelta(let delta) = update {
                deltas += 1
                text += delta
            }
            if case .completed(let response) = update { completed = response }
        }
        let response = try #require(completed)
        #expect(deltas > 1 && !text.isEmpty && response.text == text)
        #expect(session.transcript.messages.map(\.role) == [.user, .assistant])

        let saved = try await session.savedState()
        let snapshot = try #require(saved.snapshot)
        #expect(!snapshot.isEmpty)
        // Through the .hchat file, as `hearth chat` saves conversations.
        let file = try ConversationFile.decode(ConversationFile(saved, model: name).encoded(), maxSnapshotBytes: 1 << 30)
        #expect(file.sessionState.transcript == saved.transcript && file.sessionState.snapshot == snapshot)

        // A fresh model with the snapshot continues without processing the conversation again…
        let second = try await LocalProvider.load(name, catalog: catalog, configure: Self.small)
        let restored = await ChatSession.restore(file.sessionState, provider: second)
        #expect(restored.restoredSnapshot && restored.snapshotProblem == nil)
        let continued = try await restored.respond(to: "And at night?")
        let reused = continued.reply.usage?.cachedPromptTokens ?? 0
        let prompt = continued.reply.usage?.promptTokens ?? 0
        #expect(reused > 20 && reused < prompt, "cached \(reused) of \(prompt) prompt tokens")
        #expect(restored.transcript.messages.count == 4 && !continued.text.isEmpty)

        // …and without it, the same turn processes the whole conversation.
        let third = try await LocalProvider.load(name, catalog: catalog, configure: Self.small)
        let plain = ChatSession(provider: third, transcript: saved.transcript)
        let again = try await plain.respond(to: "And at night?")
        #expect((again.reply.usage?.cachedPromptTokens ?? 0) < 4, "a fresh model holds nothing of the conversation")
        #expect(again.text == continued.text, "greedy: the same reply with and without the snapshot")
    }
}
#endif
