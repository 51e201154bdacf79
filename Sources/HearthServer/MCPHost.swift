import Foundation

/// The MCP servers an operator lists for `hearth serve --mcp FILE` (docs/MCP.md#hearth-serve):
/// what a Responses request's `{"type": "mcp", "server_label": …}` tools may name. The CLI
/// implements it over HearthMCP's toolbox; the server never starts a process or reaches a URL
/// itself, so a request can only use what the operator listed.
public protocol MCPToolHost: Sendable {
    /// The servers of the operator's file, in its order.
    var mcpServers: [MCPHostServer] { get }
    /// Lists a server's tools, starting it again first when it died.
    /// - Throws: an error whose description may be shown to the client (never a secret).
    func mcpTools(server: String) async throws -> [MCPHostTool]
    /// Calls tool `tool` (its name on the server) of `server` with `arguments` (JSON text of an
    /// object), within the host's timeout; never throws: a failure is a result.
    func mcpCall(server: String, tool: String, arguments: String) async -> MCPHostCallResult
    /// Stops every server (their whole process groups).
    func mcpShutdown() async
}

/// One server of the operator's file, as a request may name it.
public struct MCPHostServer: Sendable, Hashable {
    /// Its key in `mcpServers`: the request's `server_label`.
    public var label: String
    /// Its URL exactly as the file gives it (streamable HTTP), nil for a stdio server: a request's
    /// `server_url` must equal it. Never shown (its query may hold a token).
    public var url: String?
    /// `"disabled": true` in the file: not offered.
    public var disabled: Bool

    /// Creates a server entry.
    public init(label: String, url: String?, disabled: Bool = false) {
        self.label = label
        self.url = url
        self.disabled = disabled
    }
}

/// One tool of a server, as `mcp_list_tools` lists it.
public struct MCPHostTool: Sendable, Hashable {
    /// Its name on the server.
    public var name: String
    /// The server's description of it.
    public var description: String
    /// Its input schema (JSON text of an object).
    public var inputSchema: String
    /// The server marked it read-only (`annotations.readOnlyHint`), when it said.
    public var readOnly: Bool?

    /// Creates a tool entry.
    public init(name: String, description: String, inputSchema: String, readOnly: Bool? = nil) {
        self.name = name
        self.description = description
        self.inputSchema = inputSchema
        self.readOnly = readOnly
    }
}

/// What a call gave: its output, the tool's own error (`isError`), or a failure of the call
/// itself (a timeout, a server that died or wrote garbage) with a JSON-RPC style code.
public enum MCPHostCallResult: Sendable, Hashable {
    /// The tool's result, as text.
    case output(String)
    /// The tool ran and failed (`isError: true`), with its text.
    case toolError(String)
    /// The call did not complete: a code (JSON-RPC's, or -32001 for a timeout, -32000 for a
    /// server that exited) and a message safe to show.
    case failed(code: Int, message: String)
}
