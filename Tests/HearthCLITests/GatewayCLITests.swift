import Foundation
import HearthTestSupport
import Testing

/// `hearth serve --config` as a user runs it: a broken configuration stops the binary with
/// one line naming the key, never a secret; `--help` documents the flag.
@Suite struct GatewayCLITests {
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String, error: String) {
        let binary = try #require(CLITests.binary)
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let error = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output, error)
    }

    @Test func aBrokenConfigurationNamesTheKeyAndNotTheSecret() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-gateway-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = "gw-cli-secret-0123456789abcdef"
        let config = directory.appendingPathComponent("gateway.json")
        try #"{"clients": [{"name": "ops", "key_env": "GW_CLI_KEY", "requests_per_minute": 0}], "models": {"local": {"provider": "local"}}}"#
            .write(to: config, atomically: true, encoding: .utf8)
        let result = try run(
            ["serve", "--config", config.path, "--model", Fixtures.checkpoint("phi3-mha").path, "--port", "0"],
            environment: ["GW_CLI_KEY": secret])
        #expect(result.status == 1)
        #expect(result.error.contains("gateway.json: clients[0].requests_per_minute: must be at least 1"), "\(result.error)")
        #expect(!result.error.contains(secret) && !result.output.contains(secret))

        let both = try run(["serve", "--config", config.path, "--api-key", "k"])
        #expect(both.status != 0 && both.error.contains("--config"))
        let help = try run(["serve", "--help"])
        #expect(help.output.contains("--config"))
    }
}
