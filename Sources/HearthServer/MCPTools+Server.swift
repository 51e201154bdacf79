import Foundation
import HTTPTypes
import HearthLocal
import HearthProviders
import Hummingbird
import NIOCore

/// What the server resolved of a request's MCP tools before answering: the servers' listed
/// tools (after `allowed_tools`), the name the model calls each by, and the approved calls to
/// run first (docs/MCP.md#hearth-serve).
struct MCPPlan: Sendable {
    struct Listing: Sendable {
        var server: MCPRequest.Server
        var tools: [MCPHostTool]
        /// Why the server's tools could not be listed (shown in the `mcp_list_tools` item).
        var error: String?
        /// The input already holds this server's `mcp_list_tools` item: not listed again.
        var alreadyListed: Bool
    }

    var host: any MCPToolHost
    var listings: [Listing] = []
    /// The model's name of each tool → its server and its name there.
    var names: [String: (label: String, tool: String)] = [:]
    /// `mcp_approval_response` answers to run (approved) or to tell the model of (denied).
    var answered: [(call: MCPRequest.PendingCall, approve: Bool)] = []
    /// The request's function tools (echoed apart from the MCP ones).
    var functionTools: [ToolDefinition] = []
    var request: MCPRequest

    func approvalNeeded(label: String, tool: String) -> Bool {
        request.servers.first { $0.label == label }?.approval.needed(for: tool) ?? true
    }
}

/// The Responses output items of an answer run with MCP tools, and their stream events
/// (`response.mcp_list_tools.*`, `response.mcp_call_arguments.*`, `response.mcp_call.*`, as the
/// openai SDK's types define them).
struct MCPItems {
    var renderer: ResponseRenderer
    var output: [JSONValue] = []
    private var serial: Int { output.count }
    private var base: String { String(renderer.id.dropFirst(5)) }

    init(renderer: ResponseRenderer) { self.renderer = renderer }

    private mutating func added(_ item: JSONValue) -> Data {
        renderer.event("response.output_item.added", ["output_index": .int(output.count - 1), "item": item])
    }
    private mutating func done(_ index: Int) -> Data {
        renderer.event("response.output_item.done", ["output_index": .int(index), "item": output[index]])
    }
    private mutating func stage(_ type: String, _ index: Int, _ extra: [(String, JSONValue)] = []) -> Data {
        guard case .string(let id)? = Self.field(output[index], "id") else { return Data() }
        return renderer.event(type, .object([("item_id", .string(id)), ("output_index", .int(index))] + extra))
    }

    static func field(_ value: JSONValue, _ key: String) -> JSONValue? {
        guard case .object(let pairs) = value else { return nil }
        return pairs.last { $0.0 == key }?.1
    }

    /// An `mcp_list_tools` item: the tools the model is offered from `label` (or why none).
    mutating func listTools(_ listing: MCPPlan.Listing) -> [Data] {
        let tools: [JSONValue] = listing.tools.map {
            [
                "name": .string($0.name), "description": .string($0.description), "input_schema": ResponseRenderer.schemaValue($0.inputSchema),
                "annotations": $0.readOnly.map { ["read_only": .bool($0)] } ?? .null,
            ]
        }
        let id = "mcpl_\(base)_\(serial)"
        output.append(["id": .string(id), "type": "mcp_list_tools", "server_label": .string(listing.server.label), "tools": [], "error": nil])
        let index = output.count - 1
        var frames = [added(output[index]), stage("response.mcp_list_tools.in_progress", index)]
        output[index] = [
            "id": .string(id), "type": "mcp_list_tools", "server_label": .string(listing.server.label), "tools": .array(tools),
            "error": .optional(listing.error),
        ]
        frames.append(stage(listing.error == nil ? "response.mcp_list_tools.completed" : "response.mcp_list_tools.failed", index))
        frames.append(done(index))
        return frames
    }

    /// Opens an `mcp_call` item (status `in_progress`); ``endCall(_:_:)`` closes it.
    mutating func startCall(label: String, name: String, arguments: String, approvalRequest: String?) -> (Int, [Data]) {
        output.append(callItem(id: "mcp_\(base)_\(serial)", label: label, name: name, arguments: arguments, approvalRequest: approvalRequest))
        let index = output.count - 1
        return (
            index,
            [
                added(output[index]), stage("response.mcp_call_arguments.delta", index, [("delta", .string(arguments))]),
                stage("response.mcp_call_arguments.done", index, [("arguments", .string(arguments))]),
                stage("response.mcp_call.in_progress", index),
            ]
        )
    }

    /// Closes the `mcp_call` item at `index` with the call's result: `output`, or `error`
    /// (`mcp_tool_execution_error` for the tool's own failure, `mcp_protocol_error` for a call
    /// that did not complete) and status `failed`.
    mutating func endCall(_ index: Int, _ result: MCPHostCallResult) -> [Data] {
        var pairs: [(String, JSONValue)] = []
        if case .object(let current) = output[index] { pairs = current }
        func set(_ key: String, _ value: JSONValue) {
            if let at = pairs.firstIndex(where: { $0.0 == key }) { pairs[at].1 = value } else { pairs.append((key, value)) }
        }
        switch result {
        case .output(let text):
            set("output", .string(text))
            set("status", "completed")
        case .toolError(let text):
            set("error", ["type": "mcp_tool_execution_error", "content": [["type": "text", "text": .string(text)]]])
            set("status", "failed")
        case .failed(let code, let message):
            set("error", ["type": "mcp_protocol_error", "code": .int(code), "message": .string(message)])
            set("status", "failed")
        }
        output[index] = .object(pairs)
        var failed = true
        if case .output = result { failed = false }
        return [stage(failed ? "response.mcp_call.failed" : "response.mcp_call.completed", index), done(index)]
    }

    private func callItem(id: String, label: String, name: String, arguments: String, approvalRequest: String?) -> JSONValue {
        [
            "id": .string(id), "type": "mcp_call", "server_label": .string(label), "name": .string(name), "arguments": .string(arguments),
            "output": nil, "error": nil, "status": "in_progress", "approval_request_id": .optional(approvalRequest),
        ]
    }

    /// An `mcp_approval_request` item: the client answers it with an `mcp_approval_response`.
    mutating func approvalRequest(label: String, name: String, arguments: String) -> [Data] {
        output.append([
            "id": .string("mcpr_\(base)_\(serial)"), "type": "mcp_approval_request", "server_label": .string(label), "name": .string(name),
            "arguments": .string(arguments),
        ])
        return [added(output[output.count - 1]), done(output.count - 1)]
    }

    /// A client function tool's call (the client runs it), as the plain Responses answer has it.
    mutating func functionCall(_ call: ToolCall) -> [Data] {
        let item = renderer.functionCallItem(call, index: serial, status: "completed")
        output.append(item)
        let index = output.count - 1
        return [
            added(item),
            renderer.event(
                "response.function_call_arguments.done",
                ["item_id": Self.field(item, "id") ?? .null, "output_index": .int(index), "name": .string(call.name), "arguments": .string(call.arguments)]),
            done(index),
        ]
    }

    /// An assistant message item with `text`.
    mutating func message(_ text: String) -> [Data] {
        let id = "msg_\(base)_\(serial)"
        output.append(renderer.outputItem(text: nil, id: id))
        let index = output.count - 1
        var frames = [
            added(output[index]),
            renderer.event(
                "response.content_part.added",
                ["item_id": .string(id), "output_index": .int(index), "content_index": 0, "part": renderer.outputText("")]),
        ]
        if !text.isEmpty {
            frames.append(
                renderer.event(
                    "response.output_text.delta",
                    ["item_id": .string(id), "output_index": .int(index), "content_index": 0, "delta": .string(text), "logprobs": []]))
        }
        output[index] = renderer.outputItem(text: text, id: id)
        frames.append(
            renderer.event(
                "response.output_text.done",
                ["item_id": .string(id), "output_index": .int(index), "content_index": 0, "text": .string(text), "logprobs": []]))
        frames.append(
            renderer.event(
                "response.content_part.done",
                ["item_id": .string(id), "output_index": .int(index), "content_index": 0, "part": renderer.outputText(text)]))
        frames.append(done(index))
        return frames
    }
}
