import HearthProviders
import MCP

/// A tool of an MCP server as a Hearth ``HearthProviders/FunctionTool``: pass it to
/// `respond(to:tools:)` beside Swift tools, so the local model (its arguments generated under
/// the server's JSON Schema) and cloud models get the same tools.
///
/// ```swift
/// let toolbox = MCPToolbox(configuration: try MCPConfiguration.load(contentsOf: url))
/// await toolbox.start()
/// let answer = try await provider.respond(to: [.user("What time is it in Tokyo?")], tools: await toolbox.tools())
/// await toolbox.shutdown()
/// ```
///
/// A result the server marks `isError` reaches the model as `Error: …` (so it can correct
/// itself); a server that exits, hangs past the timeout or answers garbage throws
/// ``MCPServerError`` (``HearthProviders/ToolCallError`` `.toolFailed` from `respond`).
public struct MCPTool: HearthProviders.FunctionTool {
    /// The arguments, as the server takes them (any JSON object).
    public typealias Arguments = MCPToolArguments

    /// The name the model calls it by: the server's own tool name, or `server_tool` when that
    /// name is taken by another server's tool or is not 1–64 of `a-z A-Z 0-9 _ -`.
    public let name: String
    /// The server's description of the tool.
    public let description: String
    /// The tool's input schema (JSON text).
    public let parameters: String
    /// The server's name in the file.
    public let server: String
    /// The tool's name on its server.
    public let toolName: String
    /// The server's `readOnlyHint` annotation, when it gave one.
    public var readOnly: Bool? = nil
    let toolbox: MCPToolbox

    /// The definition a request carries.
    public var toolDefinition: ToolDefinition {
        ToolDefinition(name: name, description: description, parameters: parameters)
    }

    /// Calls the tool on its server; an `isError` result comes back as `Error: …`.
    /// - Throws: ``MCPServerError``.
    public func call(arguments: MCPToolArguments) async throws -> String {
        let result = try await toolbox.call(name, values: arguments.values)
        return result.isError ? "Error: \(result.text)" : result.text
    }
}

/// A call's arguments as the MCP SDK's values (decoded from any JSON object).
public struct MCPToolArguments: Decodable, Sendable {
    /// The arguments by name.
    public var values: [String: MCP.Value]

    /// Wraps values.
    public init(values: [String: MCP.Value]) {
        self.values = values
    }

    /// Decodes a JSON object of any shape.
    public init(from decoder: any Decoder) throws {
        guard case .object(let members) = MCPValues.mcp(try JSON(from: decoder)) else {
            throw DecodingError.typeMismatch(
                [String: MCP.Value].self, .init(codingPath: decoder.codingPath, debugDescription: "the arguments must be a JSON object"))
        }
        values = members
    }
}
