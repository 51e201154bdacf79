import Foundation
import HearthTestSupport
import Testing

/// Progress on a terminal (issue 63): each long command run under a pseudo-terminal (util-linux
/// `script`, as a user's terminal) shows a progress line; with `--json`, or with output to a
/// pipe, none.
@Suite struct ProgressTests {
    let model = Fixtures.checkpoint("phi3-mha").path

    /// What the terminal showed (stdout and stderr together) for `arguments` run under a pty.
    func underTerminal(_ arguments: [String]) throws -> String {
        let binary = try #require(CLITests.binary)
        let script = URL(fileURLWithPath: "/usr/bin/script")
        try #require(FileManager.default.isExecutableFile(atPath: script.path), "util-linux script (a pty for the test)")
        let command = ([binary.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let run = try runProcess(script, ["-q", "-e", "-c", command, "/dev/null"])
        #expect(run.status == 0, "\(command): \(String(decoding: run.stdout, as: UTF8.self).suffix(600))")
        return String(decoding: run.stdout, as: UTF8.self)
    }

    /// A drawn bar (`█`/`░` and a percentage) or a status line (`loading …`).
    func showsProgress(_ text: String) -> Bool { text.contains("░") || text.contains("█") || text.contains("loading ") }

    @Test func longCommandsShowProgressOnATerminalAndNoneInJSON() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-progress-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = directory.appendingPathComponent("text.txt")
        try Data(String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 40).utf8).write(to: text)

        let schemas = directory.appendingPathComponent("schemas")
        try FileManager.default.createDirectory(at: schemas, withIntermediateDirectories: true)
        try Data(#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#.utf8)
            .write(to: schemas.appendingPathComponent("a.json"))

        let commands: [(name: String, arguments: [String], json: [String]?)] = [
            ("bench-structured", ["bench-structured", "-m", model, "--schemas", schemas.path, "--seeds", "1", "-n", "8", "--decode-schemas", "0"], ["--json"]),
            ("bench", ["bench", "-m", model, "-p", "16", "-n", "4", "-r", "2"], ["--json"]),
            ("generate (the load)", ["generate", "-m", model, "-n", "2", "Hi"], ["--json"]),
            ("perplexity", ["perplexity", "-m", model, "--file", text.path, "-c", "32"], ["--json"]),
            ("quantize", ["quantize", "-m", model, "--type", "q8_0", "--output", directory.appendingPathComponent("m.hqf").path], nil),
        ]
        for command in commands {
            let shown = try underTerminal(command.arguments)
            #expect(showsProgress(shown), "\(command.name) showed no progress on a terminal: \(shown.suffix(400))")
            if let json = command.json {
                let quiet = try underTerminal(command.arguments + json)
                #expect(!showsProgress(quiet) && !quiet.contains("\u{1B}[2K"), "\(command.name) --json showed progress: \(quiet.suffix(400))")
            }
        }
        // Output to pipes (a script, CI): no progress either.
        let piped = try CLITests().hearth(["bench", "-m", model, "-p", "16", "-n", "4", "-r", "2"])
        #expect(piped.status == 0 && !showsProgress(piped.stdout + piped.stderr), "\(piped.stderr)")
        #expect(piped.stdout.contains("| pp16 |") && piped.stdout.contains("| tg4 |"), "\(piped.stdout)")
    }
}
