import Foundation
import HearthTestSupport
import Testing

/// `hearth chat --mcp` with stdin piped, against a stdio MCP server written in sh (it answers
/// initialize, tools/list and tools/call, and notes each call in a file): a forced call runs
/// with --yes and its result is shown; without --yes or --allow-tool it is not run; the flags
/// are checked. (The REPL in a terminal, with real servers from PyPI: scripts/check-mcp.sh.)
@Suite struct ChatMCPCLITests {
    static let server = #"""
        getid() { printf '%s' "$1" | sed 's/.*"id":\("[^"]*"\).*/\1/'; }
        read -r l; echo '{"jsonrpc":"2.0","id":'"$(getid "$l")"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}'
        while read -r l; do
          case "$l" in
            *tools*list*) echo '{"jsonrpc":"2.0","id":'"$(getid "$l")"',"result":{"tools":[{"name":"pick","description":"Pick a digit.","inputSchema":{"type":"object","properties":{"x":{"type":"integer","minimum":0,"maximum":9}},"required":["x"],"additionalProperties":false}}]}}' ;;
            *tools*call*) echo called >> "$CALLS"; echo '{"jsonrpc":"2.0","id":'"$(getid "$l")"',"result":{"content":[{"type":"text","text":"SHELL-RESULT"}]}}' ;;
          esac
        done
        """#

    /// A scratch folder with the server script and an mcpServers file naming it.
    static func scratch() throws -> (dir: URL, config: URL, calls: URL) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-mcp-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let script = dir.appendingPathComponent("server.sh")
        try server.write(to: script, atomically: true, encoding: .utf8)
        let calls = dir.appendingPathComponent("calls")
        let config = dir.appendingPathComponent("mcp.json")
        try #"{"mcpServers": {"sh": {"command": "/bin/sh", "args": ["\#(script.path)"], "env": {"CALLS": "\#(calls.path)"}}}}"#
            .write(to: config, atomically: true, encoding: .utf8)
        return (dir, config, calls)
    }

    static func chat(_ config: URL, _ dir: URL, _ extra: [String], maxTokens: Int = 120) throws -> CLITests.Result {
        try CLITests().hearth(
            [
                "chat", "--model", Fixtures.checkpoint("phi3-mha").path, "--ctx", "1024", "--threads", "2",
                "--sessions-dir", dir.appendingPathComponent("chats").path, "--mcp", config.path, "--tool-choice", "pick",
                "--max-tool-rounds", "1", "--max-tokens", String(maxTokens), "--temperature", "0",
            ] + extra, stdin: Data("pick one\n".utf8))
    }

    @Test func aForcedCallRunsWithYesAndItsResultIsShown() throws {
        let (dir, config, calls) = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Self.chat(config, dir, ["--yes"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("mcp: 1 tool from sh"), "\(result.stderr)")
        #expect(result.stderr.contains("tool call: pick (sh)"))
        #expect(result.stderr.contains("result: SHELL-RESULT"))
        #expect((try? String(contentsOf: calls, encoding: .utf8)) == "called\n")
    }

    @Test func withoutConfirmationACallIsNotRun() throws {
        let (dir, config, calls) = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Self.chat(config, dir, [])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("pick needs confirmation: pass --yes or --allow-tool pick"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: calls.path))
        // The allow list is confirmation enough.
        let allowed = try Self.chat(config, dir, ["--allow-tool", "pick"])
        #expect(allowed.stderr.contains("result: SHELL-RESULT"), "\(allowed.stderr)")
    }

    /// A reply cut by max_tokens inside its call has cut arguments: the call is not run (it ran
    /// with `{}` before).
    @Test func aCallCutByMaxTokensIsNotRun() throws {
        let (dir, config, calls) = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try Self.chat(config, dir, ["--yes"], maxTokens: 30)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("the reply ran out of tokens in the call to pick; not run"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: calls.path))
    }

    @Test func theFlagsAreChecked() throws {
        let cli = CLITests()
        let yes = try cli.hearth(["chat", "--yes"])
        #expect(yes.status != 0 && yes.stderr.contains("go with --mcp FILE"), "\(yes.stderr)")
        let missing = try cli.hearth(["chat", "--model", Fixtures.checkpoint("phi3-mha").path, "--mcp", "/nonexistent/hearth-mcp.json"])
        #expect(missing.status != 0 && missing.stderr.contains("cannot read the MCP config hearth-mcp.json"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("/nonexistent"))
    }
}
