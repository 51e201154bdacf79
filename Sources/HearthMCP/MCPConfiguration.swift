import Foundation
import HearthProviders

/// One server of an `mcpServers` file: a command to start (stdio) or a URL to reach
/// (streamable HTTP). See docs/MCP.md.
///
/// Its `description` names the server and the command or host, never an environment value, a
/// header value or a URL's query, so it can be logged.
public struct MCPServerConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// How to reach the server.
    public enum Endpoint: Sendable, Hashable {
        /// A program speaking MCP on its stdin and stdout: the command (looked up on `PATH`),
        /// its arguments, and variables added to the small environment it gets.
        case stdio(command: String, arguments: [String], environment: [String: String])
        /// A streamable-HTTP endpoint, with headers sent on every request (tokens, say).
        case http(url: URL, headers: [String: String])
    }

    /// The server's key in `mcpServers`.
    public var name: String
    /// How to reach it.
    public var endpoint: Endpoint
    /// `"disabled": true` in the file: listed but not started until enabled.
    public var disabled: Bool

    /// Creates a server entry.
    public init(name: String, endpoint: Endpoint, disabled: Bool = false) {
        self.name = name
        self.endpoint = endpoint
        self.disabled = disabled
    }

    /// The values that must never reach a log or a message: environment values and header values.
    public var secrets: [String] {
        switch endpoint {
        case .stdio(_, _, let environment): return environment.values.filter { $0.count >= 4 }
        case .http(let url, let headers):
            var values = headers.values.filter { $0.count >= 4 }
            if let query = url.query, !query.isEmpty { values.append(query) }
            if let password = url.password, !password.isEmpty { values.append(password) }
            return values
        }
    }

    /// `name (stdio: command)` or `name (https://host/path)`.
    public var description: String {
        switch endpoint {
        case .stdio(let command, _, _): return "\(name) (stdio: \(URL(fileURLWithPath: command).lastPathComponent))"
        case .http(let url, _): return "\(name) (\(Self.redacted(url)))"
        }
    }

    /// A URL as it may be shown: scheme, host, port and path (no user, password or query).
    public static func redacted(_ url: URL) -> String {
        var components = URLComponents()
        components.scheme = url.scheme
        components.host = url.host
        components.port = url.port
        components.path = url.path
        return components.string ?? "(url)"
    }
}

/// The `mcpServers` file Claude Desktop, LM Studio and Cursor read:
///
/// ```json
/// {"mcpServers": {
///     "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
///     "search": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}}
/// }}
/// ```
public struct MCPConfiguration: Sendable, Hashable {
    /// The servers, in the file's order.
    public var servers: [MCPServerConfiguration]

    /// The most servers a file may list.
    public static let maxServers = 64
    /// The largest file read, in bytes.
    public static let maxFileBytes = 1 << 20

    /// Creates a configuration from its servers.
    public init(servers: [MCPServerConfiguration]) {
        self.servers = servers
    }

    /// Reads a file (see ``parse(_:)``).
    /// - Throws: ``MCPServerError`` `.invalidConfiguration` naming the file by its last path component.
    public static func load(contentsOf url: URL) throws(MCPServerError) -> MCPConfiguration {
        let name = url.lastPathComponent
        let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
        if let size = attributes?[.size] as? Int, size > maxFileBytes {
            throw MCPServerError(.invalidConfiguration, message: "\(name) is larger than \(maxFileBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw MCPServerError(.invalidConfiguration, message: "cannot read the MCP config \(name): no such file or no permission")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw MCPServerError(.invalidConfiguration, message: "\(name) is not UTF-8 text")
        }
        do { return try parse(text) } catch {
            throw MCPServerError(.invalidConfiguration, message: "\(name): \(error.message)")
        }
    }

    /// Parses the JSON text of an `mcpServers` file. Each server has either `command` (with
    /// optional `args` and `env`) or `url` (with optional `headers`); `disabled`, `type` and
    /// keys other programs add are accepted; anything else is an error naming the key.
    /// - Throws: ``MCPServerError`` `.invalidConfiguration`.
    public static func parse(_ text: String) throws(MCPServerError) -> MCPConfiguration {
        let root: JSONText.Value
        do { root = try JSONText.parse(text) } catch {
            throw MCPServerError(.invalidConfiguration, message: "not valid JSON: \(error.message) at byte \(error.offset)")
        }
        guard case .object(let rootPairs) = root else {
            throw MCPServerError(.invalidConfiguration, message: "the file must be a JSON object with \"mcpServers\"")
        }
        // Claude Desktop's key; VS Code's `servers` is accepted too.
        guard let serversValue = rootPairs.last(where: { $0.0 == "mcpServers" || $0.0 == "servers" })?.1 else {
            throw MCPServerError(.invalidConfiguration, message: "no \"mcpServers\" object in the file")
        }
        guard case .object(let entries) = serversValue else {
            throw MCPServerError(.invalidConfiguration, message: "\"mcpServers\" must be an object of servers by name")
        }
        guard entries.count <= maxServers else {
            throw MCPServerError(.invalidConfiguration, message: "\(entries.count) servers; at most \(maxServers)")
        }
        var servers: [MCPServerConfiguration] = []
        var seen: Set<String> = []
        for (name, value) in entries {
            guard !name.isEmpty, name.count <= 64, !name.contains(where: { $0.isWhitespace || $0.isNewline }) else {
                throw MCPServerError(.invalidConfiguration, message: "server names must be 1–64 characters without spaces, got '\(name.prefix(64))'")
            }
            guard seen.insert(name).inserted else {
                throw MCPServerError(.invalidConfiguration, message: "the server \(name) is listed twice")
            }
            servers.append(try server(name, value))
        }
        return MCPConfiguration(servers: servers)
    }

    private static let knownKeys: Set<String> = ["command", "args", "env", "url", "headers", "disabled", "type", "cwd", "timeout", "autoApprove", "alwaysAllow", "description"]

    private static func server(_ name: String, _ value: JSONText.Value) throws(MCPServerError) -> MCPServerConfiguration {
        guard case .object(let pairs) = value else {
            throw MCPServerError(.invalidConfiguration, server: name, message: "must be an object")
        }
        if let unknown = pairs.first(where: { !knownKeys.contains($0.0) }) {
            throw MCPServerError(
                .invalidConfiguration, server: name,
                message: "unknown key \"\(unknown.0.prefix(40))\"; a server has command, args, env or url, headers")
        }
        var disabled = false
        if let flag = value["disabled"] {
            guard case .bool(let b) = flag else {
                throw MCPServerError(.invalidConfiguration, server: name, message: "\"disabled\" must be true or false")
            }
            disabled = b
        }
        switch (value["command"], value["url"]) {
        case (.some(.string(let command)), nil):
            guard !command.isEmpty else { throw MCPServerError(.invalidConfiguration, server: name, message: "\"command\" is empty") }
            if value["headers"] != nil {
                throw MCPServerError(.invalidConfiguration, server: name, message: "\"headers\" goes with \"url\", not \"command\"")
            }
            let arguments = try strings(value["args"], "args", name)
            let environment = try stringMap(value["env"], "env", name)
            return MCPServerConfiguration(
                name: name, endpoint: .stdio(command: command, arguments: arguments, environment: environment), disabled: disabled)
        case (nil, .some(.string(let text))):
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
                url.host != nil
            else {
                throw MCPServerError(.invalidConfiguration, server: name, message: "\"url\" must be an http or https URL")
            }
            if value["args"] != nil || value["env"] != nil {
                throw MCPServerError(.invalidConfiguration, server: name, message: "\"args\" and \"env\" go with \"command\", not \"url\"")
            }
            let headers = try stringMap(value["headers"], "headers", name)
            return MCPServerConfiguration(name: name, endpoint: .http(url: url, headers: headers), disabled: disabled)
        case (nil, nil):
            throw MCPServerError(.invalidConfiguration, server: name, message: "needs \"command\" (a stdio server) or \"url\" (an HTTP server)")
        case (.some, .some):
            throw MCPServerError(.invalidConfiguration, server: name, message: "has both \"command\" and \"url\"; give one")
        default:
            throw MCPServerError(.invalidConfiguration, server: name, message: "\"command\" and \"url\" must be strings")
        }
    }

    private static func strings(_ value: JSONText.Value?, _ key: String, _ server: String) throws(MCPServerError) -> [String] {
        guard let value else { return [] }
        guard case .array(let items) = value else {
            throw MCPServerError(.invalidConfiguration, server: server, message: "\"\(key)\" must be an array of strings")
        }
        var result: [String] = []
        for item in items {
            guard case .string(let text) = item else {
                throw MCPServerError(.invalidConfiguration, server: server, message: "\"\(key)\" must be an array of strings")
            }
            result.append(text)
        }
        return result
    }

    private static func stringMap(_ value: JSONText.Value?, _ key: String, _ server: String) throws(MCPServerError) -> [String: String] {
        guard let value else { return [:] }
        guard case .object(let pairs) = value else {
            throw MCPServerError(.invalidConfiguration, server: server, message: "\"\(key)\" must be an object of strings")
        }
        var result: [String: String] = [:]
        for (name, item) in pairs {
            // The name may be shown; the value never is.
            guard case .string(let text) = item else {
                throw MCPServerError(
                    .invalidConfiguration, server: server, message: "\"\(key)\".\(name.prefix(40)) must be a string")
            }
            result[name] = text
        }
        return result
    }
}
