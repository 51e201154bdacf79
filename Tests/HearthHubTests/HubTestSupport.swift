import Foundation
import HearthFakeServers
@testable import HearthHub

/// Repositories on disk for the fake hub, and a fresh cache per test.
struct HubFixture {
    let root: URL
    let hub: FakeHub
    let cache: URL

    static let token = "hf_test_secret_token_value"

    /// Deterministic pseudo-random bytes (so a flipped byte is a real change).
    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var state = seed &+ 0x9E37_79B9_7F4A_7C15
        var bytes = [UInt8](repeating: 0, count: count)
        for i in 0..<count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            bytes[i] = UInt8(truncatingIfNeeded: state >> 33)
        }
        return Data(bytes)
    }

    static func start(pageSize: Int = 3) async throws -> HubFixture {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-hub-\(UUID().uuidString)")
        func write(_ repo: String, _ path: String, _ data: Data) throws {
            let url = root.appendingPathComponent("repos").appendingPathComponent(repo).appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url)
        }
        try write("gguf", "tiny-Q4_K_M.gguf", bytes(3_000_000, seed: 1))
        try write("gguf", "tiny-Q8_0.gguf", bytes(200_000, seed: 2))
        try write("gguf", "tiny-IQ4_XS.gguf", bytes(1000, seed: 3))
        try write("gguf", "README.md", Data("# tiny\n".utf8))
        for part in 1...3 { try write("split", "big-Q4_K_M-0000\(part)-of-00003.gguf", bytes(50_000 + part, seed: UInt64(10 + part))) }
        try write("split", "mmproj-F16.gguf", bytes(100, seed: 20))
        try write("checkpoint", "config.json", Data("{\"model_type\": \"tiny\"}".utf8))
        try write("checkpoint", "tokenizer.json", Data("{\"version\": \"1.0\"}".utf8))
        try write("checkpoint", "model.safetensors.index.json", Data("""
            {"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}}
            """.utf8))
        try write("checkpoint", "model-00001-of-00002.safetensors", bytes(4000, seed: 30))
        try write("checkpoint", "model-00002-of-00002.safetensors", bytes(5000, seed: 31))
        try write("checkpoint", "consolidated.safetensors", bytes(9000, seed: 32))
        try write("checkpoint", "docs/notes.txt", Data("nested".utf8))
        try write("gated", "gated-Q4_K_M.gguf", bytes(1000, seed: 40))
        let repos = root.appendingPathComponent("repos")
        let hub = try await FakeHub.start(
            repositories: [
                "org/tiny-GGUF": repos.appendingPathComponent("gguf"), "org/split-GGUF": repos.appendingPathComponent("split"),
                "org/tiny-checkpoint": repos.appendingPathComponent("checkpoint"), "org/gated": repos.appendingPathComponent("gated"),
            ],
            gated: ["org/gated": token], pageSize: pageSize)
        return HubFixture(root: root, hub: hub, cache: root.appendingPathComponent("cache"))
    }

    func models(token: String? = nil, offline: Bool = false, events: EventLog? = nil) -> HubModels {
        HubModels(
            environment: HubEnvironment(endpoint: hub.endpoint, cacheDirectory: cache, token: HubToken(token), offline: offline),
            retry: RetryPolicy(attempts: 4, initialDelay: 0.05, maximumDelay: 0.2),
            progress: { event in events?.append(event) })
    }

    func contents(_ repo: String, _ path: String) throws -> Data {
        let dir = ["org/tiny-GGUF": "gguf", "org/split-GGUF": "split", "org/tiny-checkpoint": "checkpoint", "org/gated": "gated"][repo] ?? repo
        return try Data(contentsOf: root.appendingPathComponent("repos").appendingPathComponent(dir).appendingPathComponent(path))
    }

    /// Every file under the cache, relative.
    func cacheFiles() -> [String] {
        (FileManager.default.enumerator(atPath: cache.path)?.allObjects as? [String] ?? []).sorted()
    }

    func finish() async {
        await hub.stop()
        try? FileManager.default.removeItem(at: root)
    }
}

/// Progress events, collected across threads.
final class EventLog: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var events: [HubProgress] = []
    func append(_ event: HubProgress) { lock.withLock { events.append(event) } }
    var all: [HubProgress] { lock.withLock { events } }
}
