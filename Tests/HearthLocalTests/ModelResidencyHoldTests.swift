import Foundation
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// A gate the test opens: an admission that waits on it holds its request (and so its model)
/// as a request waiting for a fair-queue turn does.
private final class Gate: @unchecked Sendable {
    // `@unchecked Sendable`: `open` and `waiting` are only touched under `lock`.
    private let lock = NSLock()
    private var isOpen = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        await withCheckedContinuation { continuation in
            let now: Bool = lock.withLock {
                if isOpen { return true }
                waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func open() {
        let pending: [CheckedContinuation<Void, Never>] = lock.withLock {
            isOpen = true
            defer { waiting = [] }
            return waiting
        }
        for continuation in pending { continuation.resume() }
    }

    var admission: LocalProvider.Admission {
        { [self] _ in
            await wait()
            return {}
        }
    }
}

/// Issue 55, items 3 and 5: a model is resident at most once, `maxLoaded` counts the copies
/// requests still hold, and a load that failed is tried again (after a pause) rather than
/// failing until the process restarts.
@Suite(.serialized) struct ModelResidencyHoldTests {
    func provider(_ name: String, _ residency: ModelResidency?, path: String? = nil) -> LocalProvider {
        var configuration = LocalProvider.Configuration(
            modelPath: path ?? Fixtures.checkpoint(name).path, context: 64, threads: 2, batch: 8)
        configuration.residency = residency
        return LocalProvider(id: name, configuration: configuration)
    }

    func answer(_ provider: LocalProvider, admission: LocalProvider.Admission? = nil) async throws -> String {
        var text = ""
        let options = ChatOptions(temperature: 0, maxTokens: 3)
        for try await event in provider.generate(.text("Hello"), options: options, admission: admission) {
            if case .token(let token) = event { text += token.text }
        }
        return text
    }

    static func eventually(within seconds: Double = 10, _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    /// With one model allowed and a request holding `a` (waiting for its turn), a request for
    /// `b` waits for `a` to be let go instead of loading `b` beside it; a request for `a` that
    /// comes meanwhile loads no second copy. Before, `b` loaded at once (`a` "unloaded" but
    /// still held: two models in memory) and the next `a` loaded a second copy of `a`.
    @Test func aHeldModelIsNotLoadedTwiceNorBesideAnother() async throws {
        let residency = ModelResidency(maxLoaded: 1)
        let a = provider("phi3-mha", residency), b = provider("llama-tiny", residency)
        let gate = Gate()
        let held = Task { try await answer(a, admission: gate.admission) }
        #expect(try await Self.eventually { a.isResident })
        let other = Task { try await answer(b) }
        // `b` would have loaded within milliseconds; it waits for `a`.
        try await Task.sleep(for: .milliseconds(600))
        #expect(!b.isResident && a.isResident && residency.unloads == 0)
        let again = Task { try await answer(a) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!b.isResident && a.isResident && residency.unloads == 0)
        gate.open()
        _ = try await held.value
        _ = try await other.value
        _ = try await again.value
        // `a` went for `b`, `b` for `a` again: one model loaded at a time, each switch once.
        #expect(residency.unloads == 2 && a.isResident && !b.isResident)
    }

    /// A request for a model that is still held, once nothing else waits for its room, uses
    /// the held copy: no second load, nothing unloaded.
    @Test func aHeldModelServesTheNextRequestForIt() async throws {
        let residency = ModelResidency(maxLoaded: 1)
        let a = provider("phi3-mha", residency), b = provider("llama-tiny", residency)
        let gate = Gate()
        let held = Task { try await answer(a, admission: gate.admission) }
        #expect(try await Self.eventually { a.isResident })
        let other = Task { try await answer(b) }
        try await Task.sleep(for: .milliseconds(300))
        other.cancel()  // its client left while it waited for `a` to be let go
        _ = try? await other.value
        // Served while the first request still holds `a`: the same copy.
        let text = try await answer(a)
        #expect(!text.isEmpty && residency.unloads == 0 && a.isResident && !b.isResident)
        gate.open()
        _ = try await held.value
        #expect(residency.unloads == 0)
    }

    /// A load that failed is tried again on a later request, not before a pause (one second,
    /// then doubling), and its error names the model, never its path.
    @Test func aFailedLoadIsRetriedAfterAPause() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-retry-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("late-model")
        let late = provider("late-model", nil, path: path.path)
        do {
            _ = try await answer(late)
            Issue.record("a model that is not there answered")
        } catch let error as ProviderError {
            #expect(error.code == .modelUnavailable)
            #expect(error.message.contains("late-model") && !error.message.contains(directory.path), "\(error.message)")
        }
        // The model arrives (the file descriptors are back, the download finished): within the
        // pause the failure stands, after it the next request loads it.
        try FileManager.default.copyItem(at: Fixtures.checkpoint("phi3-mha"), to: path)
        await #expect(throws: ProviderError.self) { _ = try await answer(late) }
        try await Task.sleep(for: .milliseconds(1300))
        #expect(try await !answer(late).isEmpty)
    }
}
