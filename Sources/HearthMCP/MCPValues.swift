import Foundation
import HearthProviders
import MCP

/// Conversions between the SDK's `Value`, Hearth's ``JSONText/Value`` and the text a model reads.
enum MCPValues {
    /// A value as Hearth's JSON (object keys sorted: the SDK keeps objects in dictionaries, so
    /// the document order is already gone; sorting makes the schema the model sees stable).
    static func json(_ value: MCP.Value) -> JSONText.Value {
        switch value {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return .number(JSON.Number(number))
        case .double(let number): return JSON.Number(text: String(number)).map(JSON.number) ?? .null
        case .string(let text): return .string(text)
        case .data(let mimeType, let data):
            return .string("data:\(mimeType ?? "application/octet-stream");base64,\(data.base64EncodedString())")
        case .array(let items): return .array(items.map(json))
        case .object(let members): return .object(members.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) })
        }
    }

    /// Hearth's JSON as the SDK's value (a number without a fraction or exponent that fits is an `int`).
    static func mcp(_ value: JSONText.Value) -> MCP.Value {
        switch value {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .number(let number):
            if let integer = Int(number.text) { return .int(integer) }
            return .double(number.double)
        case .string(let text): return .string(text)
        case .array(let items): return .array(items.map(mcp))
        case .object(let pairs):
            var members: [String: MCP.Value] = [:]
            for (key, item) in pairs { members[key] = mcp(item) }
            return .object(members)
        }
    }

    /// A call's arguments (JSON text of an object; empty text is `{}`) as the SDK's arguments.
    /// - Throws: ``MCPServerError`` `.invalidArguments`.
    static func arguments(_ text: String, tool: String, server: String?) throws(MCPServerError) -> [String: MCP.Value] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return [:] }
        let value: JSONText.Value
        do { value = try JSONText.parse(trimmed) } catch {
            throw MCPServerError(
                .invalidArguments, server: server, message: "the arguments for \(tool) are not JSON: \(error.message)")
        }
        guard case .object = value, case .object(let members) = mcp(value) else {
            throw MCPServerError(
                .invalidArguments, server: server, message: "the arguments for \(tool) must be a JSON object, got \(value.typeName)")
        }
        return members
    }

    /// An MCP tool's input schema as a tool definition's parameters: a JSON object with
    /// `"type": "object"` (added when the server left it out).
    static func parameters(_ schema: MCP.Value) -> String {
        guard case .object(var members) = schema else { return ToolDefinition.noParameters }
        if members["type"] == nil { members["type"] = .string("object") }
        return json(.object(members)).serialized
    }

    /// The text the model reads for a result: its text parts (an image, audio or a resource
    /// link as a bracketed note), or its structured content as JSON when it has no text; cut at
    /// `limit` characters with a note saying so.
    static func text(of result: CallTool.Result, limit: Int) -> String {
        var parts: [String] = []
        for item in result.content {
            switch item {
            case .text(let text, _, _): parts.append(text)
            case .image(_, let mimeType, _, _): parts.append("[an image (\(mimeType)) the model cannot see]")
            case .audio(_, let mimeType, _, _): parts.append("[audio (\(mimeType)) the model cannot hear]")
            case .resource(let resource, _, _): parts.append(resource.text ?? "[resource \(resource.uri)]")
            case .resourceLink(let uri, let name, _, _, _, _): parts.append("[resource \(name): \(uri)]")
            }
        }
        if parts.isEmpty, let structured = result.structuredContent { parts.append(json(structured).serialized) }
        var text = parts.joined(separator: "\n")
        if text.isEmpty { text = "(no content)" }
        if text.count > limit { text = String(text.prefix(limit)) + "\n[cut at \(limit) characters]" }
        return text
    }
}
