import Foundation
import HearthFakeServers
import HearthTestSupport
import Testing

/// Progress on a terminal (issue 63): each long command run under a pseudo-terminal (util-linux
/// `script`, as a user's terminal) shows a progress line; with `--json`, or with output to a
/// pipe, none.
@Suite struct ProgressTests {
    let model = Fixtures.checkpoint("phi3-mha").path

    /// A word for a POSIX shell, quoted.
    static func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// What the terminal showed (stdout and stderr together) for `arguments` run under a pty.
    func underTerminal(_ arguments: [String], environment: [String: String?] = [:]) throws -> String {
        let binary = try #require(CLITests.binary)
        return try underTerminal(shell: ([binary.path] + arguments).map(Self.quoted).joined(separator: " "), environment: environment)
    }

    /// What the terminal showed for a shell command line run under a pty.
    func underTerminal(shell command: String, environment: [String: String?] = [:]) throws -> String {
        let script = URL(fileURLWithPath: "/usr/bin/script")
        try #require(FileManager.default.isExecutableFile(atPath: script.path), "util-linux script (a pty for the test)")
        let run = try runProcess(script, ["-q", "-e", "-c", command, "/dev/null"], environment: environment)
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

        // bench --speculative: a line per run (prompt i of N, each side).
        let prompts = directory.appendingPathComponent("prompts.jsonl")
        try Data((#"{"prompt":"One two three one two three one two"}"# + "\n" + #"{"prompt":"Red green blue red green blue"}"# + "\n").utf8)
            .write(to: prompts)

        let commands: [(name: String, arguments: [String], json: [String]?)] = [
            ("bench --speculative", ["bench", "-m", model, "--speculative", "lookup", "--prompt-file", prompts.path, "-n", "4", "-r", "1"], ["--json"]),
            ("bench-structured", ["bench-structured", "-m", model, "--schemas", schemas.path, "--seeds", "1", "-n", "8", "--decode-schemas", "0"], ["--json"]),
            ("bench", ["bench", "-m", model, "-p", "16", "-n", "4", "-r", "2"], ["--json"]),
            ("bench --parallel", ["bench", "-m", model, "--parallel", "1,2", "-p", "8", "-n", "2", "-r", "1"], ["--json"]),
            ("generate (the load)", ["generate", "-m", model, "-n", "2", "Hi"], ["--json"]),
            ("run (the load)", ["run", model, "Hi", "-n", "2"], nil),
            ("perplexity", ["perplexity", "-m", model, "--file", text.path, "-c", "32"], ["--json"]),
            ("quantize", ["quantize", "-m", model, "--type", "q8_0", "--output", directory.appendingPathComponent("m.hqf").path], nil),
        ]
        for command in commands {
            let shown = try underTerminal(command.arguments)
            #expect(showsProgress(shown), "\(command.name) showed no progress on a terminal: \(shown.suffix(400))")
            if command.name == "bench --speculative" {
                #expect(shown.contains("prompt 2 of 2, off") && shown.contains("prompt 2 of 2, lookup"), "\(shown.suffix(600))")
                #expect(shown.contains("speculative lookup |"), "the rows: \(shown.suffix(600))")
            }
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

    /// `hearth chat` on a terminal: the model loads behind a status line before the first
    /// prompt.
    @Test func chatShowsTheLoadOnATerminal() throws {
        let binary = try #require(CLITests.binary)
        let script = URL(fileURLWithPath: "/usr/bin/script")
        try #require(FileManager.default.isExecutableFile(atPath: script.path), "util-linux script (a pty for the test)")
        let command = [binary.path, "chat", "-m", model, "-n", "2"].map(Self.quoted).joined(separator: " ")
        // Styled output as on a user's terminal (the suite's environment sets NO_COLOR); `/bye`
        // typed into the pty ends the session (a timeout bounds it should it not).
        let line = "printf '/bye\\n' | env -u NO_COLOR TERM=xterm timeout 20 /usr/bin/script -q -c \(Self.quoted(command)) /dev/null"
        let run = try runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", line])
        let shown = String(decoding: run.stdout, as: UTF8.self)
        #expect(shown.contains("loading phi3-mha") && shown.contains("hearth chat"), "\(shown.suffix(600))")
    }

    /// `hearth serve`: the first load of the model shows a status line on a terminal and is
    /// logged ("loading NAME", "loaded NAME in N s"); with `--log-format json`, or with stderr
    /// not a terminal, the log lines only.
    @Test func serveShowsTheLoadOnATerminalAndLogsIt() throws {
        let binary = try #require(CLITests.binary)
        let port = try freeLoopbackPort()
        // Serve, wait until /health answers, then stop it (SIGINT: a graceful shutdown).
        func served(_ extra: [String]) -> String {
            let serve = ([binary.path, "serve", "-m", model, "--alias", "tiny", "--port", "\(port)", "--no-web-ui"] + extra)
                .map(Self.quoted).joined(separator: " ")
            return """
                \(serve) & pid=$!; i=0
                while [ $i -lt 600 ] && ! curl -sf http://127.0.0.1:\(port)/health >/dev/null 2>&1; do sleep 0.1; i=$((i+1)); done
                kill -INT $pid; wait $pid
                """
        }
        let shown = try underTerminal(shell: served([]))
        #expect(shown.contains("\rloading tiny… ") && shown.contains("\u{1B}[2K"), "no status line: \(shown.suffix(800))")
        #expect(shown.contains("loading tiny") && shown.contains("loaded tiny in "), "\(shown.suffix(800))")

        let json = try underTerminal(shell: served(["--log-format", "json"]))
        #expect(!json.contains("…") && !json.contains("\u{1B}[2K"), "a status line in JSON logs: \(json.suffix(800))")
        let lines = json.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("{") }
        let messages = lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["message"] as? String
        }
        #expect(messages.contains("loading tiny") && messages.contains { $0.hasPrefix("loaded tiny in ") }, "\(messages)")

        // stderr to a pipe: the log lines, no status line.
        let piped = try runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", served([])])
        let text = String(decoding: piped.stdout + piped.stderr, as: UTF8.self)
        #expect(text.contains("loaded tiny in ") && !text.contains("\r") && !text.contains("…"), "\(text.suffix(800))")
    }

    /// `hearth pull` from the fake hub: a bar per file on a terminal; with `--json` the line
    /// per file only (as through a pipe, which HubCLITests checks).
    @Test func pullShowsBarsOnATerminalAndNoneWithJSON() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-pull-progress-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let hub = try await FakeHub.start(repositories: ["test/gemma3-tiny": Fixtures.checkpoint("gemma3-tiny")])
        defer { Task { await hub.stop() } }
        func pulled(_ extra: [String], cache: String) async throws -> String {
            let environment: [String: String?] = [
                "HF_ENDPOINT": hub.endpoint, "HF_HUB_CACHE": root.appendingPathComponent(cache).path,
                "HF_HOME": root.appendingPathComponent("home").path, "HF_TOKEN": nil, "HF_HUB_OFFLINE": nil,
            ]
            // On a plain thread: the fake hub serves from the cooperative pool meanwhile.
            return try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread {
                    continuation.resume(with: Result { try underTerminal(["pull", "test/gemma3-tiny"] + extra, environment: environment) })
                }
            }
        }
        let shown = try await pulled([], cache: "a")
        #expect(showsProgress(shown) && shown.contains("model.safetensors"), "\(shown.suffix(600))")
        let quiet = try await pulled(["--json"], cache: "b")
        #expect(!showsProgress(quiet) && !quiet.contains("\u{1B}[2K"), "\(quiet.suffix(600))")
        #expect(quiet.contains("model.safetensors: 1.3 MiB, sha256 verified"), "\(quiet.suffix(600))")
    }

    /// A TCP port on loopback nothing listens on now (bound to port 0, read, closed).
    func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
