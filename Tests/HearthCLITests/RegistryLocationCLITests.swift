import Foundation
import HearthTestSupport
import Testing

/// Where the `hearth` binary finds `models/registry.json` (docs/MODELS.md, "The registry"):
/// `$HEARTH_MODELS`, else the `models/` of the checkout it was built in — never the working
/// directory, so a registry planted in the folder `hearth` is run from (a cloned repository)
/// cannot point a short name at another repository.
@Suite struct RegistryLocationCLITests {
    /// Runs the binary in `directory` with `environment` added (nil removes a variable).
    func hearth(_ arguments: [String], in directory: URL, environment: [String: String?]) throws -> (status: Int32, stderr: String) {
        guard let binary = CLITests.binary else { throw CLITestError.binaryNotFound }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        process.environment = merged
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self))
    }

    @Test func aRegistryInTheWorkingDirectoryIsIgnored() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-cwd-registry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let planted = work.appendingPathComponent("models")
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: true)
        try Data("""
            {"default": "rogue-default",
             "models": [{"name": "rogue-name", "repo": "evil-org/rogue-repo", "quant": "Q4_K_M"},
                        {"name": "rogue-default", "file": "rogue.gguf"}]}
            """.utf8).write(to: planted.appendingPathComponent("registry.json"))
        try Data("not a model".utf8).write(to: planted.appendingPathComponent("rogue.gguf"))
        // Offline, with an empty cache: nothing is fetched whatever the name resolves to.
        let environment: [String: String?] = [
            "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": work.appendingPathComponent("cache").path, "HEARTH_MODELS": nil, "HF_TOKEN": nil,
        ]

        let ignored = try hearth(["pull", "rogue-name"], in: work, environment: environment)
        #expect(ignored.status != 0)
        #expect(!ignored.stderr.contains("evil-org/rogue-repo"), "the working directory's registry was used: \(ignored.stderr)")
        #expect(ignored.stderr.contains("rogue-name"), "\(ignored.stderr)")

        // HEARTH_MODELS names a registry explicitly: that one is used.
        var explicit = environment
        explicit["HEARTH_MODELS"] = planted.path
        let used = try hearth(["pull", "rogue-name"], in: work, environment: explicit)
        #expect(used.status != 0 && used.stderr.contains("evil-org/rogue-repo"), "\(used.stderr)")
    }
}
