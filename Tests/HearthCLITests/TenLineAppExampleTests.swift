import Foundation
import HearthTestSupport
import Testing

/// Examples/TenLineApp run as a user runs it: the built example loads the default model by its
/// registry name (offline: models/registry.json beside the checkout names the installed file),
/// streams a greeting, generates a `City` and answers with a typed tool call.
@Suite struct TenLineAppExampleTests {
    /// The example's binary, built beside `hearth` by `swift build` (`--build-tests` included).
    static var binary: URL? {
        CLITests.binary?.deletingLastPathComponent().appendingPathComponent("hearth-ten-line-app")
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: RealModel.model)), .timeLimit(.minutes(2)))
    func loadsByNameStreamsGeneratesACityAndCallsATool() throws {
        let binary = try #require(Self.binary)
        #expect(FileManager.default.isExecutableFile(atPath: binary.path), "build the example: swift build --build-tests")
        let process = Process()
        process.executableURL = binary
        process.arguments = []  // the default model's registry name, from main.swift
        // No network: a name that had to be downloaded would fail rather than wait.
        process.environment = ProcessInfo.processInfo.environment.merging(["HF_HUB_OFFLINE": "1"]) { _, new in new }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let started = Date()
        try process.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(log.suffix(2000))")
        let lines = printed.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // A streamed greeting, then the city (a decoded City), then the tool's result and the answer.
        let cityLine = try #require(lines.first { $0.hasPrefix("City: ") }, "\(printed)")
        #expect(lines.firstIndex(of: cityLine) ?? 0 > 0 && !(lines.first ?? "").isEmpty, "the greeting comes first: \(printed)")
        let parts = cityLine.dropFirst("City: ".count).components(separatedBy: ", ")
        #expect(parts.count >= 3 && !parts[0].isEmpty && parts.last?.hasPrefix("population ") == true, "\(cityLine)")
        let tool = try #require(lines.first { $0.hasPrefix("Tool: ") }, "\(printed)")
        #expect(tool.contains("°C and sunny in "), "the typed tool ran: \(tool)")
        #expect(lines.contains { $0.hasPrefix("Answer: ") }, "\(printed)")
        print("TenLineAppExampleTests: \(String(format: "%.1f", Date().timeIntervalSince(started))) s\n\(printed)")
    }
}
