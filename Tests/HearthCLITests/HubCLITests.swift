import Foundation
import HearthFakeServers
import HearthTestSupport
import Testing

/// `hearth pull`, `list`, `rm` and `--model ORG/REPO` against the fake hub (loopback HTTP), the
/// way a user runs them: the real binary, HF_ENDPOINT and HF_HUB_CACHE in its environment.
@Suite(.serialized) struct HubCLITests {
    static let token = "hf_cli_secret_value"

    struct Run {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs hearth on a plain thread (the fake hub serves from the cooperative pool meanwhile).
    func hearth(_ arguments: [String], hub: FakeHub, cache: URL, extra: [String: String?] = [:]) async throws -> Run {
        guard let binary = CLITests.binary else { throw CLITestError.binaryNotFound }
        var environment: [String: String?] = [
            "HF_ENDPOINT": hub.endpoint, "HF_HUB_CACHE": cache.path, "HF_HOME": cache.appendingPathComponent("home").path,
            "HF_TOKEN": nil, "HF_HUB_OFFLINE": nil,
        ]
        for (name, value) in extra { environment[name] = value }
        let frozen = environment
        let result = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try runProcess(binary, arguments, environment: frozen) })
            }
        }
        return Run(status: result.status, stdout: String(decoding: result.stdout, as: UTF8.self), stderr: String(decoding: result.stderr, as: UTF8.self))
    }

    @Test func pullRunListAndRemoveACheckpointByName() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-hub-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let hub = try await FakeHub.start(
            repositories: ["test/gemma3-tiny": Fixtures.checkpoint("gemma3-tiny"), "test/gated": Fixtures.checkpoint("gemma3-tiny")],
            gated: ["test/gated": Self.token])
        let cache = root.appendingPathComponent("cache")

        let pulled = try await hearth(["pull", "test/gemma3-tiny", "--json"], hub: hub, cache: cache)
        #expect(pulled.status == 0, "\(pulled.stderr)")
        let info = try #require(try JSONSerialization.jsonObject(with: Data(pulled.stdout.utf8)) as? [String: Any])
        let path = try #require(info["path"] as? String)
        #expect(path.hasPrefix(cache.appendingPathComponent("models--test--gemma3-tiny/snapshots/").path))
        // Not a terminal: one line per file, each saying how it was checked.
        #expect(pulled.stderr.contains("test/gemma3-tiny/model.safetensors: 1.3 MiB, sha256 verified"), "\(pulled.stderr)")
        #expect(pulled.stderr.contains("test/gemma3-tiny/config.json:") && pulled.stderr.contains("git blob id verified"))
        #expect(!pulled.stderr.contains("\r"))

        // The name works wherever a path does, from the cache (no request to the hub).
        let before = hub.requests.count
        let generated = try await hearth(
            ["generate", "--model", "test/gemma3-tiny", "--prompt", "Hello", "--max-tokens", "2", "--temperature", "0", "--raw"], hub: hub, cache: cache)
        #expect(generated.status == 0, "\(generated.stderr)")
        #expect(hub.requests.count == before)

        let listed = try await hearth(["list", "--json"], hub: hub, cache: cache)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1 && rows.first?["name"] as? String == "test/gemma3-tiny" && rows.first?["format"] as? String == "safetensors")
        #expect(rows.first?["last_used"] as? String != nil)
        let table = try await hearth(["list"], hub: hub, cache: cache)
        #expect(table.stdout.contains("NAME") && table.stdout.contains("test/gemma3-tiny") && table.stdout.contains("safetensors"))

        // 401 on a gated repository names HF_TOKEN and never prints the token given.
        let refused = try await hearth(["pull", "test/gated"], hub: hub, cache: cache, extra: ["HF_TOKEN": "hf_wrong_value"])
        #expect(refused.status == 1 && refused.stderr.contains("HF_TOKEN") && refused.stderr.contains("gated"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("hf_wrong_value"))
        let allowed = try await hearth(["pull", "test/gated"], hub: hub, cache: cache, extra: ["HF_TOKEN": Self.token])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(!(allowed.stdout + allowed.stderr).contains(Self.token))

        // A missing repository and an unknown name.
        let missing = try await hearth(["pull", "test/absent:Q4_K_M"], hub: hub, cache: cache)
        #expect(missing.status == 1 && missing.stderr.contains("test/absent"), "\(missing.stderr)")
        let unknown = try await hearth(["generate", "--model", "no-such-model", "--prompt", "x"], hub: hub, cache: cache)
        #expect(unknown.status != 0 && unknown.stderr.contains("no-such-model"))

        let removed = try await hearth(["rm", "test/gemma3-tiny"], hub: hub, cache: cache)
        #expect(removed.status == 0 && removed.stdout.contains("removed test/gemma3-tiny"), "\(removed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cache.appendingPathComponent("models--test--gemma3-tiny").path))
        let again = try await hearth(["rm", "test/gemma3-tiny"], hub: hub, cache: cache)
        #expect(again.status == 1 && again.stderr.contains("not in the hub cache"))
        await hub.stop()
    }

    @Test func everyNewFlagHasHelp() async throws {
        guard let binary = CLITests.binary else { throw CLITestError.binaryNotFound }
        for command in ["pull", "list", "rm"] {
            let result = try runProcess(binary, [command, "--help"])
            let text = String(decoding: result.stdout, as: UTF8.self)
            #expect(result.status == 0 && text.contains("OVERVIEW"))
            for line in text.split(separator: "\n") where line.hasPrefix("  --") || line.hasPrefix("  <") {
                #expect(line.split(separator: " ", omittingEmptySubsequences: true).count > 1, "no help text: \(line)")
            }
        }
    }
}
