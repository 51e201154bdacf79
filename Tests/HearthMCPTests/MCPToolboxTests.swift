import Foundation
import HearthProviders
import MCP
import Testing

@testable import HearthMCP

#if canImport(Glibc)
import Glibc
#endif

/// Servers in memory (the SDK's own `Server`): paging, list-changed notifications, naming
/// across servers, results and timeouts.
@Suite struct MCPToolboxTests {
    static func tool(_ name: String) -> MCP.Tool {
        MCP.Tool(
            name: name, description: "the \(name) tool",
            inputSchema: .object(["type": .string("object"), "properties": .object(["x": .object(["type": .string("integer")])])]))
    }

    /// A server whose tools come in pages of two, and whose `calls` answer as the closure says.
    static func server(
        _ name: String, tools: @escaping @Sendable () -> [MCP.Tool],
        call: @escaping @Sendable (CallTool.Parameters) async throws -> CallTool.Result
    ) async throws -> (Server, MCPConnection) {
        let (clientSide, serverSide) = await InMemoryTransport.createConnectedPair()
        let server = Server(name: name, version: "1.0", capabilities: .init(tools: .init(listChanged: true)))
        await server.withMethodHandler(ListTools.self) { parameters in
            let all = tools()
            let start = Int(parameters.cursor ?? "0") ?? 0
            let end = min(all.count, start + 2)
            return ListTools.Result(tools: Array(all[start..<end]), nextCursor: end < all.count ? String(end) : nil)
        }
        await server.withMethodHandler(CallTool.self, handler: call)
        try await server.start(transport: serverSide)
        return (server, MCPConnection(name: name, transport: clientSide, options: MCPOptions(startTimeout: 5, callTimeout: 0.5)))
    }

    @Test func listsEveryPageNamesToolsUniquelyAndRoutesCalls() async throws {
        let (_, first) = try await Self.server("alpha", tools: { ["a", "b", "c", "shared", "bad.name"].map(Self.tool) }) { parameters in
            CallTool.Result(content: [.text(text: "alpha ran \(parameters.name) with \(parameters.arguments?["x"] ?? .null)", annotations: nil, _meta: nil)])
        }
        let (_, second) = try await Self.server("beta", tools: { [Self.tool("shared")] }) { parameters in
            CallTool.Result(content: [.text(text: "beta failed", annotations: nil, _meta: nil)], isError: true)
        }
        let toolbox = MCPToolbox(configuration: MCPConfiguration(servers: []), options: MCPOptions(callTimeout: 0.5))
        try await toolbox.add(first)
        try await toolbox.add(second)
        let names = await toolbox.tools().map(\.name)
        #expect(names == ["a", "b", "c", "shared", "alpha_bad_name", "beta_shared"])
        let ran = try await toolbox.call("alpha_bad_name", arguments: #"{"x": 7}"#)
        #expect(ran.text == "alpha ran bad.name with 7" && !ran.isError)
        let failed = try await toolbox.call("beta_shared", arguments: "{}")
        #expect(failed.isError && failed.text == "beta failed")
        await #expect(throws: MCPServerError.self) { try await toolbox.call("nope", arguments: "{}") }
        // The FunctionTool conformance: an isError result is the model's to read.
        let tool = try #require(await toolbox.tools().first { $0.name == "beta_shared" })
        #expect(try await tool.call(json: "{}") == "Error: beta failed")
        #expect(tool.toolDefinition.parameters.contains(#""type":"object""#))
        await toolbox.shutdown()
    }

    @Test func aListChangedNotificationRefreshesTheTools() async throws {
        let names = Locked(["one"])
        let (server, connection) = try await Self.server("live", tools: { names.value.map(Self.tool) }) { _ in CallTool.Result() }
        let toolbox = MCPToolbox(configuration: MCPConfiguration(servers: []))
        try await toolbox.add(connection)
        #expect(await toolbox.tools().map(\.name) == ["one"])
        names.value = ["one", "two"]
        try await server.notify(ToolListChangedNotification.message())
        for _ in 0..<100 where !connection.toolsChanged { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(await toolbox.tools().map(\.name) == ["one", "two"])
        await toolbox.shutdown()
    }

    @Test func aCallPastTheTimeoutIsATypedErrorAndTheNextCallWorks() async throws {
        let (_, connection) = try await Self.server("slow", tools: { [Self.tool("wait"), Self.tool("quick")] }) { parameters in
            if parameters.name == "wait" { try await Task.sleep(nanoseconds: 5_000_000_000) }
            return CallTool.Result(content: [.text(text: "done", annotations: nil, _meta: nil)])
        }
        let toolbox = MCPToolbox(configuration: MCPConfiguration(servers: []), options: MCPOptions(callTimeout: 0.5))
        try await toolbox.add(connection)
        let start = Date()
        do {
            _ = try await toolbox.call("wait", arguments: "{}")
            Issue.record("no timeout")
        } catch let error as MCPServerError {
            #expect(error.kind == .timedOut)
            #expect(error.description.contains("did not finish within 0.5 s"))
        }
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(try await toolbox.call("quick", arguments: "{}").text == "done")
        await toolbox.shutdown()
    }
}

/// Real processes: servers that die, hang, write garbage or are missing; nothing outlives the toolbox.
@Suite(.serialized) struct MCPProcessTests {
    static func toolbox(_ command: String, _ arguments: [String], env: [String: String] = [:], start: Double = 2) -> MCPToolbox {
        MCPToolbox(
            configuration: MCPConfiguration(servers: [
                MCPServerConfiguration(name: "s", endpoint: .stdio(command: command, arguments: arguments, environment: env))
            ]),
            options: MCPOptions(startTimeout: start, callTimeout: 1))
    }

    static func failure(_ toolbox: MCPToolbox) async -> MCPServerError? {
        let errors = await toolbox.start()
        return errors.first
    }

    @Test func aServerThatExitsIsReportedWithItsStderrSecretsMasked() async throws {
        let toolbox = Self.toolbox("/bin/sh", ["-c", "echo \"token is $API_TOKEN\" >&2; exit 3"], env: ["API_TOKEN": "tok-12345678"])
        let start = Date()
        let error = try #require(await Self.failure(toolbox))
        #expect(error.kind == .serverExited, "\(error)")
        #expect(error.message.contains("exited with status 3"))
        #expect(error.message.contains("token is ***"), "\(error.message)")
        #expect(!error.description.contains("tok-12345678"))
        #expect(Date().timeIntervalSince(start) < 2)
        #expect(MCPToolbox.liveProcessGroups.isEmpty)
    }

    @Test func garbageOnStdoutIsAProtocolErrorAtOnce() async throws {
        let toolbox = Self.toolbox("/bin/sh", ["-c", "echo 'Listening on port 8000'; sleep 30"], start: 5)
        let start = Date()
        let error = try #require(await Self.failure(toolbox))
        #expect(error.kind == .protocolError, "\(error)")
        #expect(error.message.contains("Listening on port 8000"))
        #expect(Date().timeIntervalSince(start) < 3)
        await toolbox.shutdown()
        #expect(MCPToolbox.liveProcessGroups.isEmpty)
    }

    @Test func aServerThatNeverAnswersTimesOutAndIsStopped() async throws {
        let toolbox = Self.toolbox("/bin/sh", ["-c", "sleep 30 & sleep 30"], start: 0.5)
        let error = try #require(await Self.failure(toolbox))
        #expect(error.kind == .timedOut, "\(error)")
        // The failed start stopped the whole group: the shell and its background sleep.
        #expect(MCPToolbox.liveProcessGroups.isEmpty)
    }

    @Test func aMissingCommandIsAStartError() async throws {
        let toolbox = Self.toolbox("hearth-no-such-mcp-server", [])
        let error = try #require(await Self.failure(toolbox))
        #expect(error.kind == .startFailed, "\(error)")
        #expect(error.message.contains("is it installed"))
    }

    /// A stdio "server" that answers initialize and tools/list, then is killed: the process
    /// group is gone after shutdown, and its `sleep` child too.
    @Test func shutdownLeavesNoProcess() async throws {
        let script = #"""
            read line; id=$(printf '%s' "$line" | sed 's/.*"id":\("[^"]*"\).*/\1/')
            echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}'
            read line; read line; id=$(printf '%s' "$line" | sed 's/.*"id":\("[^"]*"\).*/\1/')
            echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}'
            sleep 60 & wait
            """#
        let toolbox = Self.toolbox("/bin/sh", ["-c", script], start: 5)
        let errors = await toolbox.start()
        #expect(errors.isEmpty, "\(errors)")
        #expect(await toolbox.tools().map(\.name) == ["t"])
        let groups = await toolbox.processIDs()
        #expect(groups.count == 1)
        await toolbox.shutdown()
        for group in groups { #expect(!MCPToolbox.isProcessGroupRunning(group), "the process group \(group) still runs") }
        #expect(MCPToolbox.liveProcessGroups.isEmpty)
    }
}

/// A value shared with a server's handlers. `@unchecked Sendable`: guarded by `lock`.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// `respond(to:tools:)` with MCP tools beside a Swift tool, on a scripted provider: the model
/// calls the MCP tool with nested arguments, reads its result, and answers.
@Suite struct MCPRespondTests {
    struct Scripted: LanguageModelProvider {
        let id = "scripted"
        let seen = Locked<[ChatRequest]>([])
        var availability: ProviderAvailability { .available }
        func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
            seen.value.append(request)
            let first = !request.messages.contains { $0.role == .tool }
            return AsyncThrowingStream { continuation in
                if first {
                    continuation.yield(.toolCall(.started(index: 0, id: "call_1", name: "plan")))
                    continuation.yield(.toolCall(.arguments(index: 0, fragment: #"{"trip": {"stops": [{"h": 2}, {"h": 3}]}}"#)))
                    continuation.yield(.toolCall(.finished(index: 0)))
                    continuation.yield(.finished(.toolCalls))
                } else {
                    continuation.yield(.textDelta("done: " + (request.messages.last?.content ?? "")))
                    continuation.yield(.finished(.stop))
                }
                continuation.finish()
            }
        }
    }

    struct Echo: HearthProviders.FunctionTool {
        struct Arguments: Decodable, Sendable { var text: String }
        let name = "echo"
        let description = "Echoes."
        let parameters = #"{"type": "object", "properties": {"text": {"type": "string"}}}"#
        func call(arguments: Arguments) async throws -> String { arguments.text }
    }

    @Test func mcpToolsWorkBesideSwiftToolsInRespond() async throws {
        let (_, connection) = try await MCPToolboxTests.server("planner", tools: { [MCPToolboxTests.tool("plan")] }) { parameters in
            let stops = parameters.arguments?["trip"]?.objectValue?["stops"]?.arrayValue ?? []
            let hours = stops.compactMap { $0.objectValue?["h"]?.intValue }.reduce(0, +)
            return CallTool.Result(content: [.text(text: "\(stops.count) stops, \(hours) h", annotations: nil, _meta: nil)])
        }
        let toolbox = MCPToolbox(configuration: MCPConfiguration(servers: []))
        try await toolbox.add(connection)
        let provider = Scripted()
        let tools: [any HearthProviders.FunctionTool] = await toolbox.tools() + [Echo()]
        let answer = try await provider.respond(to: [.user("plan")], tools: tools)
        #expect(answer.response.text == "done: 2 stops, 5 h")
        #expect(answer.calls.map(\.result) == ["2 stops, 5 h"])
        #expect(provider.seen.value.first?.options.tools.map(\.name) == ["plan", "echo"])
        await toolbox.shutdown()
    }
}
