import ArgumentParser
import Foundation
import HearthMCP
import HearthServer
import Logging

/// `hearth serve --mcp FILE`: the MCP servers a Responses request's `{"type": "mcp"}` tools may
/// name (docs/MCP.md#hearth-serve).
struct ServeMCPOptions: ParsableArguments {
    @Option(
        name: .customLong("mcp"),
        help: "An mcpServers JSON file (the format of hearth chat --mcp): its servers start with the server, and a /v1/responses request may use their tools with {\"type\": \"mcp\", \"server_label\": NAME} (never a server or URL the file does not list). See docs/MCP.md.")
    var file: String?

    @Option(name: .customLong("mcp-timeout"), help: "With --mcp: seconds an MCP server has to answer one tool call (then the call fails and the model goes on).")
    var timeout: Double = 60

    @Option(
        name: .customLong("max-tool-rounds"),
        help: "With --mcp: generations one /v1/responses request may run in its tool loop; the last may not call a tool, so the model answers.")
    var maxToolRounds: Int = 8

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--mcp-timeout takes seconds from 0 to 3600") }
        guard (1...64).contains(maxToolRounds) else { throw ValidationError("--max-tool-rounds takes 1 to 64") }
    }

    /// Reads the file and starts its servers (a server that fails is logged and tried again
    /// when a request names it); nil without --mcp.
    func start(logger: Logger) async throws -> ServeMCPHost? {
        guard let file else { return nil }
        let configuration: MCPConfiguration
        do { configuration = try MCPConfiguration.load(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw ValidationError("--mcp: \(error)")
        }
        let toolbox = MCPToolbox(configuration: configuration, options: MCPOptions(callTimeout: timeout))
        let failures = await toolbox.start()
        for failure in failures { logger.warning("MCP server not started", metadata: ["error": "\(failure)"]) }
        let tools = await toolbox.tools()
        logger.info(
            "MCP servers started",
            metadata: ["tools": "\(tools.count)", "servers": "\(Set(tools.map(\.server)).sorted().joined(separator: ","))"])
        return ServeMCPHost(toolbox: toolbox)
    }
}

/// The operator's MCP servers behind `hearth serve`: HearthMCP's toolbox as the server's
/// ``MCPToolHost``. A server that died is started again when a request next lists or calls its
/// tools (one restart at a time: an actor).
actor ServeMCPHost: MCPToolHost {
    let toolbox: MCPToolbox
    nonisolated let mcpServers: [MCPHostServer]

    init(toolbox: MCPToolbox) {
        self.toolbox = toolbox
        mcpServers = toolbox.configuration.servers.map { server in
            switch server.endpoint {
            case .stdio: return MCPHostServer(label: server.name, url: nil, disabled: server.disabled)
            case .http(let url, _): return MCPHostServer(label: server.name, url: url.absoluteString, disabled: server.disabled)
            }
        }
    }

    func mcpTools(server: String) async throws -> [MCPHostTool] {
        try await running(server).map {
            MCPHostTool(name: $0.toolName, description: $0.description, inputSchema: $0.parameters, readOnly: $0.readOnly)
        }
    }

    func mcpCall(server: String, tool: String, arguments: String) async -> MCPHostCallResult {
        do {
            guard let entry = try await running(server).first(where: { $0.toolName == tool }) else {
                return .failed(code: -32602, message: "MCP server \(server) has no tool \(tool)")
            }
            let result = try await toolbox.call(entry.name, arguments: arguments)
            return result.isError ? .toolError(result.text) : .output(result.text)
        } catch let error as MCPServerError {
            return .failed(code: Self.code(error.kind), message: error.description)
        } catch {
            return .failed(code: -32603, message: "MCP server \(server): the call failed")
        }
    }

    func mcpShutdown() async {
        await toolbox.shutdown()
    }

    /// The server's tools, starting it again first when it failed or died.
    private func running(_ server: String) async throws -> [MCPTool] {
        let state = await toolbox.states().first { $0.name == server }
        if case .failed? = state?.status { try await toolbox.setEnabled(server, true) }
        return await toolbox.tools().filter { $0.server == server }
    }

    /// A JSON-RPC style code for a failed call (-32001 a timeout, -32000 a server that exited).
    static func code(_ kind: MCPServerError.Kind) -> Int {
        switch kind {
        case .timedOut: return -32001
        case .serverExited, .startFailed, .connectionFailed: return -32000
        case .protocolError: return -32700
        case .unknownTool, .invalidArguments: return -32602
        case .cancelled: return -32800
        case .requestFailed, .invalidConfiguration: return -32603
        }
    }
}
