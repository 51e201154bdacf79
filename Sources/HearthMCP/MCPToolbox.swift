import Foundation
import HearthProviders
import MCP

/// The servers of one `mcpServers` file, for one session: starts them, offers their tools
/// under names unique across servers, routes calls, lets a server be disabled and enabled, and
/// stops them all with ``shutdown()`` (and, as a last resort, when the process exits).
///
/// A server that fails to start is listed as failed; the others work. See docs/MCP.md.
public actor MCPToolbox {
    /// How a server stands.
    public enum Status: Sendable, Equatable {
        /// Not started (`"disabled": true`, or disabled with `/mcp disable`).
        case stopped
        /// Running, its tools offered.
        case running
        /// It failed to start or died (the error says how).
        case failed(MCPServerError)
    }

    /// One server, as `/mcp` shows it.
    public struct ServerState: Sendable {
        /// The server's name in the file.
        public var name: String
        /// The name and the command or host (never an environment value or a header).
        public var summary: String
        /// Whether its tools are offered.
        public var status: Status
        /// `name version` as the server introduced itself.
        public var serverInfo: String?
        /// Its tools, by the name the model calls them.
        public var tools: [MCPTool]
        /// Its resources and prompts (listed, not offered to the model).
        public var resources: [String]
        public var prompts: [String]
    }

    /// The file's servers.
    public nonisolated let configuration: MCPConfiguration
    /// Timeouts and limits.
    public nonisolated let options: MCPOptions
    private var connections: [String: MCPConnection] = [:]
    private var failures: [String: MCPServerError] = [:]
    private var catalog: [MCPTool] = []

    /// A toolbox for `configuration` (nothing starts before ``start()``).
    public init(configuration: MCPConfiguration, options: MCPOptions = MCPOptions()) {
        self.configuration = configuration
        self.options = options
    }

    /// Starts every server not marked disabled, all at once; returns the ones that failed
    /// (they stay listed as failed, the others work).
    @discardableResult
    public func start() async -> [MCPServerError] {
        let wanted = configuration.servers.filter { !$0.disabled && connections[$0.name] == nil }
        await withTaskGroup(of: (String, MCPConnection?, MCPServerError?).self) { group in
            for server in wanted {
                let options = self.options
                group.addTask {
                    let connection = MCPConnection(configuration: server, options: options)
                    do {
                        try await connection.start()
                        return (server.name, connection, nil)
                    } catch {
                        await connection.stop()
                        return (server.name, nil, Self.typed(error, server: server.name))
                    }
                }
            }
            for await (name, connection, error) in group {
                connections[name] = connection
                failures[name] = error
            }
        }
        await rebuildCatalog()
        return configuration.servers.compactMap { failures[$0.name] }
    }

    /// A connection made elsewhere (tests: an in-memory server), started and added.
    func add(_ connection: MCPConnection) async throws {
        try await connection.start()
        connections[connection.name] = connection
        await rebuildCatalog()
    }

    /// The tools of the running servers (lists a server's tools again when it said they changed).
    public func tools() async -> [MCPTool] {
        var changed = false
        for connection in connections.values where connection.toolsChanged {
            do { try await connection.refreshTools() } catch { failures[connection.name] = Self.typed(error, server: connection.name) }
            changed = true
        }
        if changed { await rebuildCatalog() }
        return catalog
    }

    /// Each server's state, in the file's order (then servers added by hand).
    public func states() async -> [ServerState] {
        var result: [ServerState] = []
        var names = configuration.servers.map(\.name)
        names += connections.keys.filter { !names.contains($0) }.sorted()
        for name in names {
            let summary = configuration.servers.first { $0.name == name }?.description ?? name
            let status: Status
            var info: String?
            var resources: [String] = [], prompts: [String] = []
            if let failure = failures[name] {
                status = .failed(failure)
            } else if let connection = connections[name] {
                status = .running
                info = await connection.serverInfo
                resources = await connection.resources
                prompts = await connection.prompts
            } else {
                status = .stopped
            }
            result.append(
                ServerState(
                    name: name, summary: summary, status: status, serverInfo: info, tools: catalog.filter { $0.server == name },
                    resources: resources, prompts: prompts))
        }
        return result
    }

    /// Enables (starts) or disables (stops) a server; enabling a failed or exited server starts it again.
    /// - Throws: ``MCPServerError`` `.unknownTool` for a name not in the file; the start's error.
    public func setEnabled(_ name: String, _ enabled: Bool) async throws {
        guard let server = configuration.servers.first(where: { $0.name == name }) else {
            throw MCPServerError(
                .unknownTool, message: "no MCP server named \(name); the file lists \(configuration.servers.map(\.name).joined(separator: ", "))")
        }
        if let connection = connections.removeValue(forKey: name) { await connection.stop() }
        failures[name] = nil
        if enabled {
            let connection = MCPConnection(configuration: server, options: options)
            do {
                try await connection.start()
                connections[name] = connection
            } catch {
                await connection.stop()
                let typed = Self.typed(error, server: name)
                failures[name] = typed
                await rebuildCatalog()
                throw typed
            }
        }
        await rebuildCatalog()
    }

    /// What a call returned.
    public struct CallResult: Sendable {
        /// The text the model reads (see docs/MCP.md: text parts, else structured content as JSON).
        public var text: String
        /// The server marked the result as an error (the tool ran and failed).
        public var isError: Bool
        /// The structured content as JSON text, when the server sent it.
        public var structuredContent: String?
    }

    /// Calls the tool the model knows as `name` with `arguments` (JSON text of an object).
    /// - Throws: ``MCPServerError``: `.unknownTool`, `.invalidArguments`, `.timedOut`,
    ///   `.serverExited`, `.protocolError`, `.requestFailed`, `.cancelled`.
    public func call(_ name: String, arguments: String) async throws -> CallResult {
        guard let tool = catalog.first(where: { $0.name == name }) else { throw unknown(name) }
        return try await call(name, values: try MCPValues.arguments(arguments, tool: name, server: tool.server))
    }

    /// Calls the tool the model knows as `name` with arguments already decoded.
    /// - Throws: ``MCPServerError``.
    public func call(_ name: String, values: [String: MCP.Value]) async throws -> CallResult {
        guard let tool = catalog.first(where: { $0.name == name }), let connection = connections[tool.server] else {
            throw unknown(name)
        }
        do {
            let result = try await connection.call(tool: tool.toolName, arguments: values)
            return CallResult(
                text: MCPValues.text(of: result, limit: options.maxResultCharacters), isError: result.isError ?? false,
                structuredContent: result.structuredContent.map { MCPValues.json($0).serialized })
        } catch {
            let typed = Self.typed(error, server: tool.server)
            if typed.kind == .serverExited {
                // Its tools go; `/mcp enable` starts it again.
                connections[tool.server] = nil
                failures[tool.server] = typed
                await connection.stop()
                await rebuildCatalog()
            }
            throw typed
        }
    }

    /// The process ids of the running stdio servers (each its own process group).
    public func processIDs() async -> [Int32] {
        var ids: [Int32] = []
        for connection in connections.values { if let id = await connection.processID { ids.append(id) } }
        return ids
    }

    /// Stops every server (their whole process groups).
    public func shutdown() async {
        let all = Array(connections.values)
        connections = [:]
        catalog = []
        await withTaskGroup(of: Void.self) { group in
            for connection in all { group.addTask { await connection.stop() } }
        }
    }

    /// Kills every running server's process group at once (SIGKILL), from synchronous code: a
    /// signal's handler before `exit`. The same runs at `exit` on its own.
    public static func killAllServers() {
        MCPChildProcess.killAll()
    }

    /// The process groups of every stdio server still running in this process (tests and checks).
    public static var liveProcessGroups: Set<Int32> { Set(MCPChildProcess.liveGroups.map { Int32($0) }) }

    /// Whether a process of the process group `id` is still running (zombies do not count).
    public static func isProcessGroupRunning(_ id: Int32) -> Bool {
        MCPChildProcess.groupIsRunning(pid_t(id))
    }

    private func unknown(_ name: String) -> MCPServerError {
        MCPServerError(
            .unknownTool,
            message: "no MCP tool named \(name)" + (catalog.isEmpty ? " (no server is running)" : "; the tools are \(catalog.map(\.name).joined(separator: ", "))"))
    }

    static func typed(_ error: any Error, server: String) -> MCPServerError {
        (error as? MCPServerError) ?? MCPServerError(.connectionFailed, server: server, message: "\(error)")
    }

    /// Names every running server's tools: its own name when free and valid, else `server_tool`.
    private func rebuildCatalog() async {
        var tools: [MCPTool] = []
        var taken: Set<String> = []
        var names = configuration.servers.map(\.name)
        names += connections.keys.filter { !names.contains($0) }.sorted()
        for server in names {
            guard let connection = connections[server] else { continue }
            for tool in await connection.tools {
                var name = tool.name
                if !Self.isToolName(name) || taken.contains(name) {
                    let base = String((Self.sanitized(server) + "_" + Self.sanitized(tool.name)).prefix(60))
                    name = base
                    var n = 2
                    while taken.contains(name) {
                        name = "\(base)_\(n)"
                        n += 1
                    }
                }
                taken.insert(name)
                let description = [tool.title, tool.description].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ": ")
                var entry = MCPTool(
                    name: name, description: description, parameters: MCPValues.parameters(tool.inputSchema), server: server,
                    toolName: tool.name, toolbox: self)
                entry.readOnly = tool.annotations.readOnlyHint
                tools.append(entry)
            }
        }
        catalog = tools
    }

    /// 1–64 characters of `a-z A-Z 0-9 _ -` (the rule every provider's tool names follow).
    static func isToolName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || $0 == 0x2D }
    }

    private static func sanitized(_ text: String) -> String {
        let mapped = String(text.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
        return mapped.isEmpty ? "tool" : mapped
    }
}
