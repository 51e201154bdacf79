import Foundation
import HearthProviders

/// The MCP part of a Responses request (`hearth serve --mcp FILE`, docs/MCP.md#hearth-serve):
/// its `{"type": "mcp"}` tools, an MCP `tool_choice`, and the MCP items of its input (the tools
/// already listed, approval requests and the client's answers to them).
struct MCPRequest: Sendable {
    /// One `{"type": "mcp"}` tool of the request.
    struct Server: Sendable {
        /// `server_label`: a server of the operator's file.
        var label: String
        /// `server_url`, when given (it must be the file's URL for that label).
        var url: String?
        /// `allowed_tools` (the list or `{tool_names}`), nil: every tool; `read_only` keeps
        /// the tools annotated read-only.
        var allowed: Set<String>?
        var readOnlyOnly = false
        /// Which tools need the client's approval before they run.
        var approval = Approval.always
        /// Where the tool is in the body (`tools[2]`).
        var field: String
    }

    /// `require_approval`: `always` (OpenAI's default), `never`, or by tool name.
    enum Approval: Sendable {
        case always
        case never
        /// `{"always": {"tool_names"}, "never": {"tool_names"}}`: the named tools as said, the
        /// others need approval.
        case filter(always: Set<String>, never: Set<String>)

        func needed(for tool: String) -> Bool {
            switch self {
            case .always: return true
            case .never: return false
            case .filter(let always, let never): return always.contains(tool) || !never.contains(tool)
            }
        }
    }

    /// An `mcp_approval_request` item of the input (an earlier response's, sent back).
    struct PendingCall: Sendable {
        var id: String
        var label: String
        var name: String
        var arguments: String
    }

    /// An `mcp_approval_response` item: the client's answer to a request.
    struct Answer: Sendable {
        var requestID: String
        var approve: Bool
        var field: String
    }

    var servers: [Server] = []
    /// `tool_choice: {"type": "mcp", "server_label", "name"?}`.
    var choice: (label: String, name: String?)?
    /// Labels whose `mcp_list_tools` item is in the input (not listed again).
    var listed: Set<String> = []
    var pending: [String: PendingCall] = [:]
    var answers: [Answer] = []
    /// Approval requests an `mcp_call` item of the input already ran.
    var done: Set<String> = []

    var isEmpty: Bool { servers.isEmpty && answers.isEmpty && choice == nil }
}

extension RequestParser {
    /// The fields a `{"type": "mcp"}` tool may have (OpenAI's `Mcp` tool param).
    static let mcpToolFields: Set<String> = [
        "type", "server_label", "server_url", "allowed_tools", "require_approval", "headers", "server_description",
        "connector_id", "authorization", "tunnel_id", "allowed_callers", "defer_loading",
    ]

    /// One `{"type": "mcp"}` tool. A request may only name servers of the operator's file: a
    /// connector, a tunnel, an OAuth token or headers of its own are refused here (the
    /// operator's file holds the secrets; a request never overrides them), a label or URL not
    /// in the file when the request runs.
    func mcpTool(_ t: Fields) throws -> MCPRequest.Server {
        try t.refuseUnknown(Self.mcpToolFields)
        for key in ["connector_id", "tunnel_id"] where t.value(key) != nil {
            throw APIError.invalid(
                t.name(key), "'\(t.name(key))': this server reaches only the MCP servers its operator listed (hearth serve --mcp); name one by 'server_label'.")
        }
        for key in ["authorization", "headers"] where t.value(key) != nil {
            if key == "headers", case .object(let pairs) = t.value(key), pairs.isEmpty { continue }
            throw APIError.invalid(
                t.name(key), "'\(t.name(key))' is not accepted: the operator's MCP file sets what is sent to each server; a request cannot add or override it.")
        }
        var server = MCPRequest.Server(label: try requiredString(t, "server_label"), url: try t.string("server_url"), field: t.prefix)
        switch t.value("allowed_tools") {
        case nil: break
        case .array(let items)?: server.allowed = Set(try names(items, at: t.name("allowed_tools")))
        case .object?:
            let filter = try Fields(t.value("allowed_tools") ?? .null, prefix: t.name("allowed_tools"))
            try filter.refuseUnknown(["tool_names", "read_only"])
            if let items = try filter.array("tool_names") { server.allowed = Set(try names(items, at: filter.name("tool_names"))) }
            server.readOnlyOnly = try filter.bool("read_only") ?? false
        case let other?: throw t.wrongType("allowed_tools", "an array of tool names or {\"tool_names\": […]}", other)
        }
        server.approval = try mcpApproval(t)
        _ = try t.string("server_description")
        return server
    }

    /// `require_approval`: `"always"`, `"never"` or `{"always": {"tool_names"}, "never": {"tool_names"}}`.
    private func mcpApproval(_ t: Fields) throws -> MCPRequest.Approval {
        switch t.value("require_approval") {
        case nil, .string("always")?: return .always
        case .string("never")?: return .never
        case .object?:
            let filter = try Fields(t.value("require_approval") ?? .null, prefix: t.name("require_approval"))
            try filter.refuseUnknown(["always", "never"])
            var sets: [Set<String>] = []
            for key in ["always", "never"] {
                guard let value = filter.value(key) else {
                    sets.append([])
                    continue
                }
                let inner = try Fields(value, prefix: filter.name(key))
                try inner.refuseUnknown(["tool_names", "read_only"])
                sets.append(Set(try names(try inner.array("tool_names") ?? [], at: inner.name("tool_names"))))
            }
            return .filter(always: sets[0], never: sets[1])
        case let other?:
            throw APIError.invalid(t.name("require_approval"), "'\(t.name("require_approval"))' must be always, never or {\"always\"|\"never\": {\"tool_names\": […]}}, got \(other.typeName).")
        }
    }

    private func names(_ items: [JSONValue], at field: String) throws -> [String] {
        try items.map {
            guard case .string(let name) = $0 else { throw APIError.invalid(field, "'\(field)' must be an array of tool names.", code: "invalid_type") }
            return name
        }
    }

    /// An MCP item of a Responses `input` (an earlier response's output sent back, or the
    /// client's approval): `mcp_list_tools` notes the server as listed; `mcp_call` becomes the
    /// assistant's call and its result in the conversation; `mcp_approval_request` is held for
    /// its answer; `mcp_approval_response` is the answer.
    func mcpInputItem(
        _ type: String, _ m: Fields, into messages: inout [ChatMessage], origins: inout MessageOrigins, mcp: inout MCPRequest
    ) throws {
        switch type {
        case "mcp_list_tools":
            mcp.listed.insert(try requiredString(m, "server_label"))
        case "mcp_approval_request":
            let id = try requiredString(m, "id")
            mcp.pending[id] = .init(
                id: id, label: try requiredString(m, "server_label"), name: try requiredString(m, "name"),
                arguments: try m.string("arguments") ?? "{}")
        case "mcp_approval_response":
            guard let approve = try m.bool("approve") else {
                throw APIError.invalid(m.name("approve"), "'\(m.name("approve"))' is required: true or false.", code: "missing_field")
            }
            mcp.answers.append(.init(requestID: try requiredString(m, "approval_request_id"), approve: approve, field: m.name("approval_request_id")))
        default:  // mcp_call
            let id = try requiredString(m, "id")
            if let request = try m.string("approval_request_id") { mcp.done.insert(request) }
            let call = ToolCall(id: id, name: try requiredString(m, "name"), arguments: try m.string("arguments") ?? "{}")
            if messages.last?.role == .assistant, let last = messages.indices.last {
                messages[last].toolCalls.append(call)
            } else {
                messages.append(.assistant(toolCalls: [call]))
                origins.add(owner: m.prefix, callID: m.name("id"), calls: m.name("id"))
            }
            var result = try m.string("output") ?? ""
            switch m.value("error") {
            case .string(let text)?: result = "Error: \(text)"
            case .object?: result = "Error: " + ((try? Fields(m.value("error") ?? .null).string("message")) ?? nil ?? "the call failed")
            default: break
            }
            messages.append(.tool(result, callID: id))
            origins.add(owner: m.prefix, callID: m.name("id"), calls: m.name("id"))
        }
    }
}
