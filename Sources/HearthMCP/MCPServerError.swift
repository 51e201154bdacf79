/// What went wrong with an MCP server: a typed error whose message says what happened and
/// what to do, never holding an environment value, a header or a URL's query.
public struct MCPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: String, Sendable, Equatable {
        /// The `mcpServers` file is unreadable or malformed.
        case invalidConfiguration
        /// The server's command could not be started (not found, not executable).
        case startFailed
        /// The server could not be reached or refused the connection (HTTP status, network).
        case connectionFailed
        /// The server's process exited (or was killed).
        case serverExited
        /// The server did not answer within the timeout.
        case timedOut
        /// The server wrote something that is not MCP (not JSON-RPC, or a malformed result).
        case protocolError
        /// The server answered a request with a JSON-RPC error.
        case requestFailed
        /// No tool of that name (or its server is disabled or not running).
        case unknownTool
        /// The call's arguments are not a JSON object.
        case invalidArguments
        /// The call was cancelled (Ctrl-C).
        case cancelled
    }

    /// What went wrong.
    public var kind: Kind
    /// The server involved, by its name in the file (nil for file-level problems).
    public var server: String?
    /// What happened, for a person.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, server: String? = nil, message: String) {
        self.kind = kind
        self.server = server
        self.message = message
    }

    /// `MCP server NAME: message` (or the message alone).
    public var description: String { server.map { "MCP server \($0): \(message)" } ?? message }
}
