import Foundation
import HearthTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `hearth serve --mcp FILE` (docs/MCP.md#hearth-serve): the real binary on a fixture model, a
/// stdio MCP server written in sh with three tools — `pick` (answers SHELL-RESULT and notes the
/// call in a file), `fail` (an `isError` result) and `die` (writes the env secret to stderr and
/// exits) — and Responses requests with `{"type": "mcp"}` tools, each call forced by an MCP
/// `tool_choice`. (The official openai client against real PyPI servers: scripts/check-mcp.sh.)
@Suite(.serialized) struct ServeMCPCLITests {
    static let secret = "ENV-SECRET-7a1c9e"

    static let server = #"""
        getid() { printf '%s' "$1" | sed 's/.*"id":\("[^"]*"\).*/\1/'; }
        read -r l; echo '{"jsonrpc":"2.0","id":'"$(getid "$l")"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}'
        S='{"type":"object","properties":{"x":{"type":"integer","minimum":0,"maximum":9}},"required":["x"],"additionalProperties":false}'
        while read -r l; do
          # The SDK's JSON keys come in any order: a call is told by its tool's name alone.
          case "$l" in
            *'"name":"fail"'*) echo '{"jsonrpc":"2.0","id":'"$(getid "$l")"',"result":{"content":[{"type":"text","text":"FAILED-ON-PURPOSE"}],"isError":true}}' ;;
            *'"name":"die"'*) echo "dying with $TOKEN" >&2; exit 3 ;;
            *tools*list*) echo '{"jsonrpc":"2.0","id":'"$(getid "$l")"',"result":{"tools":[{"name":"pick","description":"Pick a digit.","inputSchema":'"$S"'},{"name":"fail","description":"Fails.","inputSchema":'"$S"'},{"name":"die","description":"Exits.","inputSchema":'"$S"'}]}}' ;;
            *tools*call*) echo called >> "$CALLS"; echo '{"jsonrpc":"2.0","id":'"$(getid "$l")"',"result":{"content":[{"type":"text","text":"SHELL-RESULT"}]}}' ;;
          esac
        done
        """#

    /// A scratch folder with the server script, its calls file and an mcpServers file naming it
    /// (`sh`, with the secret in its env) and an HTTP server (`web`, never started: a URL to compare).
    static func scratch() throws -> (dir: URL, config: URL, calls: URL) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-serve-mcp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let script = dir.appendingPathComponent("server.sh")
        try server.write(to: script, atomically: true, encoding: .utf8)
        let calls = dir.appendingPathComponent("calls")
        let config = dir.appendingPathComponent("mcp.json")
        try #"""
            {"mcpServers": {"sh": {"command": "/bin/sh", "args": ["\#(script.path)"], "env": {"CALLS": "\#(calls.path)", "TOKEN": "\#(secret)"}},
                            "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer \#(secret)"}, "disabled": true}}}
            """#.write(to: config, atomically: true, encoding: .utf8)
        return (dir, config, calls)
    }

    static func serve(_ config: URL?) throws -> ServeProcess {
        try ServeProcess.start(
            [
                "--model", Fixtures.checkpoint("phi3-mha").path, "--port", "0", "--ctx", "1024", "--parallel", "1", "--threads", "2",
                "--alias", "tiny", "--max-tool-rounds", "1", "--mcp-timeout", "5",
            ] + (config.map { ["--mcp", $0.path] } ?? []))
    }

    static func post(_ server: ServeProcess, _ body: [String: Any]) async throws -> (Int, [String: Any], String) {
        var request = URLRequest(url: try #require(URL(string: server.base + "/v1/responses")))
        request.httpMethod = "POST"
        request.httpBody = try JSONSerialization.data(withJSONObject: ["model": "tiny", "max_output_tokens": 80, "temperature": 0].merging(body) { $1 })
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.timeoutInterval = 120
        let (data, response) = try await URLSession.shared.data(for: request)
        let text = String(decoding: data, as: UTF8.self)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:], text)
    }

    static func mcp(_ label: String = "sh", _ extra: [String: Any] = [:]) -> [String: Any] {
        ["type": "mcp", "server_label": label].merging(extra) { $1 }
    }

    static func forced(_ name: String) -> [String: Any] { ["type": "mcp", "server_label": "sh", "name": name] }

    static func items(_ body: [String: Any], _ type: String) -> [[String: Any]] {
        ((body["output"] as? [[String: Any]]) ?? []).filter { $0["type"] as? String == type }
    }

    static func param(_ body: [String: Any]) -> String? { (body["error"] as? [String: Any])?["param"] as? String }

    /// The process ids whose parent is `pid` (from /proc).
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { id in
            guard let stat = try? String(contentsOfFile: "/proc/\(id)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && Int32(fields[1]) == pid
        }
    }

    /// Whether `pid` runs (a zombie does not count).
    static func running(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return false }
        return !stat[stat.index(after: close)...].hasPrefix(" Z")
    }

    /// What a request may not name is a 400 naming the field; the file's secrets appear nowhere.
    @Test func whatTheFileDoesNotListIsRefused() async throws {
        let (dir, config, _) = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try Self.serve(config)
        defer { if server.process.isRunning { server.process.terminate() } }
        let cases: [([String: Any], String)] = [
            (Self.mcp("elsewhere"), "tools[0].server_label"),
            (Self.mcp("web"), "tools[0].server_label"),  // disabled in the file
            (Self.mcp("sh", ["server_url": "https://mcp.example.com/mcp"]), "tools[0].server_url"),
            (Self.mcp("sh", ["connector_id": "connector_gmail"]), "tools[0].connector_id"),
            (Self.mcp("sh", ["headers": ["Authorization": "Bearer mine"]]), "tools[0].headers"),
            (Self.mcp("sh", ["authorization": "token"]), "tools[0].authorization"),
        ]
        for (tool, field) in cases {
            let (status, body, text) = try await Self.post(server, ["input": "hi", "tools": [tool]])
            #expect(status == 400 && Self.param(body) == field, "\(field): \(text)")
            #expect(!text.contains(Self.secret) && !text.contains("127.0.0.1:9"))
        }
        let (status, body, _) = try await Self.post(server, ["input": "hi", "tools": [Self.mcp()], "tool_choice": Self.forced("nope")])
        #expect(status == 400 && Self.param(body) == "tool_choice.name")
        let log = server.stop()
        #expect(!log.contains(Self.secret))
    }

    @Test func withoutMCPAnMCPToolIsRefused() async throws {
        let server = try Self.serve(nil)
        defer { server.stop() }
        let (status, body, text) = try await Self.post(server, ["input": "hi", "tools": [Self.mcp()]])
        #expect(status == 400 && Self.param(body) == "tools[0]", "\(text)")
        #expect(text.contains("no MCP servers configured"))
    }

    /// `allowed_tools` (both forms) filters the listing; `never` runs the forced call at once and
    /// its output is fed back before the answer; `fail`'s isError is the item's error and the
    /// model goes on; `die` is a failed call and the next request starts the server again; after
    /// SIGTERM no server process is left; the env secret never reaches a response or the log.
    @Test func callsRunInTheServersToolLoop() async throws {
        let (dir, config, calls) = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try Self.serve(config)
        defer { if server.process.isRunning { server.process.terminate() } }
        var texts: [String] = []

        var (status, body, text) = try await Self.post(
            server, ["input": "pick", "tools": [Self.mcp("sh", ["allowed_tools": ["pick"], "require_approval": "never"])], "tool_choice": Self.forced("pick")])
        texts.append(text)
        #expect(status == 200, "\(text)")
        let listed = Self.items(body, "mcp_list_tools").first?["tools"] as? [[String: Any]]
        #expect(listed?.compactMap { $0["name"] as? String } == ["pick"])
        let call = Self.items(body, "mcp_call").first
        #expect(call?["output"] as? String == "SHELL-RESULT" && call?["status"] as? String == "completed", "\(text)")
        #expect((body["output"] as? [[String: Any]])?.last?["type"] as? String == "message")
        #expect((try? String(contentsOf: calls, encoding: .utf8)) == "called\n")

        (status, body, text) = try await Self.post(
            server,
            ["input": "fail", "tools": [Self.mcp("sh", ["allowed_tools": ["tool_names": ["fail", "die"]], "require_approval": ["never": ["tool_names": ["fail", "die"]]]])], "tool_choice": Self.forced("fail")])
        texts.append(text)
        #expect(Self.items(body, "mcp_list_tools").first.flatMap { ($0["tools"] as? [[String: Any]])?.compactMap { $0["name"] as? String } } == ["fail", "die"])
        let failed = Self.items(body, "mcp_call").first
        let error = failed?["error"] as? [String: Any]
        #expect(status == 200 && failed?["status"] as? String == "failed" && error?["type"] as? String == "mcp_tool_execution_error", "\(text)")
        #expect(text.contains("FAILED-ON-PURPOSE") && (body["output"] as? [[String: Any]])?.last?["type"] as? String == "message")

        let before = Self.children(of: server.process.processIdentifier)
        #expect(before.count == 1)
        (status, body, text) = try await Self.post(
            server, ["input": "die", "tools": [Self.mcp("sh", ["require_approval": "never"])], "tool_choice": Self.forced("die")])
        texts.append(text)
        let died = Self.items(body, "mcp_call").first?["error"] as? [String: Any]
        #expect(status == 200 && died?["type"] as? String == "mcp_protocol_error" && died?["code"] as? Int == -32000, "\(text)")
        // The next request starts the server again.
        (status, body, text) = try await Self.post(
            server, ["input": "pick", "tools": [Self.mcp("sh", ["require_approval": "never"])], "tool_choice": Self.forced("pick")])
        texts.append(text)
        #expect(Self.items(body, "mcp_call").first?["output"] as? String == "SHELL-RESULT", "\(text)")
        let after = Self.children(of: server.process.processIdentifier)
        #expect(after.count == 1 && after != before)

        let log = server.stop()
        #expect(server.process.terminationStatus == 0)
        for pid in after { #expect(!Self.running(pid), "the MCP server \(pid) outlived hearth serve") }
        #expect(!log.contains(Self.secret) && !texts.contains { $0.contains(Self.secret) }, "the env secret leaked")
    }

    /// Streamed: the MCP events in OpenAI's order, each frame's `sequence_number` one more than the last.
    @Test func streamedEventsComeInOrder() async throws {
        let (dir, config, _) = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try Self.serve(config)
        defer { server.stop() }
        let (status, _, text) = try await Self.post(
            server, ["input": "pick", "stream": true, "tools": [Self.mcp("sh", ["require_approval": "never"])], "tool_choice": Self.forced("pick")])
        #expect(status == 200)
        let events = text.split(separator: "\n").filter { $0.hasPrefix("event: ") }.map { String($0.dropFirst(7)) }
        let wanted = [
            "response.created", "response.in_progress", "response.output_item.added", "response.mcp_list_tools.in_progress",
            "response.mcp_list_tools.completed", "response.output_item.done", "response.output_item.added", "response.mcp_call_arguments.delta",
            "response.mcp_call_arguments.done", "response.mcp_call.in_progress", "response.mcp_call.completed", "response.output_item.done",
            "response.output_item.added", "response.content_part.added",
        ]
        #expect(Array(events.prefix(wanted.count)) == wanted, "\(events)")
        #expect(events.last == "response.completed" || events.last == "response.incomplete", "\(events)")
        let numbers = text.split(separator: "\n").filter { $0.hasPrefix("data: ") }.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.dropFirst(6).utf8)) as? [String: Any])?["sequence_number"] as? Int
        }
        #expect(numbers == Array(0..<numbers.count) && numbers.count == events.count)
        #expect(text.contains("SHELL-RESULT"))
    }

    /// `require_approval` left out (OpenAI's default, always): the response ends with an
    /// `mcp_approval_request` and nothing runs; the next request carries the request back with an
    /// `mcp_approval_response` and the call runs, naming its approval. A denial runs nothing.
    @Test func approvalRoundTrip() async throws {
        let (dir, config, calls) = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try Self.serve(config)
        defer { server.stop() }
        let tools = [Self.mcp("sh", ["allowed_tools": ["pick"]])]
        let (_, first, text) = try await Self.post(server, ["input": "pick", "tools": tools, "tool_choice": Self.forced("pick")])
        let request = try #require(Self.items(first, "mcp_approval_request").first, "\(text)")
        #expect(request["name"] as? String == "pick" && Self.items(first, "mcp_call").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: calls.path))
        let id = try #require(request["id"] as? String)
        let history: [Any] = [["role": "user", "content": "pick"]] + ((first["output"] as? [[String: Any]]) ?? [])

        let denied = try await Self.post(
            server, ["input": history + [["type": "mcp_approval_response", "approval_request_id": id, "approve": false]], "tools": tools])
        #expect(denied.0 == 200 && Self.items(denied.1, "mcp_call").isEmpty, "\(denied.2)")
        #expect(!FileManager.default.fileExists(atPath: calls.path))

        let (status, second, text2) = try await Self.post(
            server, ["input": history + [["type": "mcp_approval_response", "approval_request_id": id, "approve": true]], "tools": tools])
        let call = Self.items(second, "mcp_call").first
        #expect(status == 200 && call?["approval_request_id"] as? String == id && call?["output"] as? String == "SHELL-RESULT", "\(text2)")
        #expect(Self.items(second, "mcp_list_tools").isEmpty, "listed in the input: not listed again")
        #expect((try? String(contentsOf: calls, encoding: .utf8)) == "called\n")

        let unknown = try await Self.post(
            server, ["input": [["role": "user", "content": "hi"], ["type": "mcp_approval_response", "approval_request_id": "mcpr_nowhere", "approve": true]] as [Any], "tools": tools])
        #expect(unknown.0 == 400 && Self.param(unknown.1) == "input[1].approval_request_id", "\(unknown.2)")
    }
}
