import Foundation
import HTTPTypes
import HearthLocal
import HearthProviders
import Hummingbird
import NIOCore

/// `POST /v1/responses` with `{"type": "mcp"}` tools (`hearth serve --mcp FILE`,
/// docs/MCP.md#hearth-serve): the tool loop runs in the server. The servers' tools are listed
/// (`mcp_list_tools`), offered to the model beside the request's function tools, and each call
/// the model makes runs on its server (`mcp_call`, its output fed back) until the model answers,
/// within ``ServerOptions/maxToolRounds`` generations; a call that needs approval ends the
/// response with an `mcp_approval_request` item, which the client answers with an
/// `mcp_approval_response` input item on its next request. A server's failure (the tool's
/// `isError`, a timeout, a server that died) is the `mcp_call` item's `error`, and the model
/// goes on.
extension HearthServer {
    /// Resolves the request's MCP tools against the operator's servers and adds them to the job's
    /// tools. Throws a 400 for a label not in the file, a `server_url` that is not the file's, an
    /// MCP tool choice or approval that names nothing of the request, and when the server has no
    /// `--mcp` file.
    func mcpPlan(_ job: inout GenerationJob, _ request: MCPRequest) async throws -> MCPPlan {
        let first = request.servers.first?.field ?? request.answers.first?.field ?? "tool_choice"
        guard let host = options.mcp else {
            throw APIError.invalid(first, "'\(first)': this server has no MCP servers configured (start it with hearth serve --mcp FILE).")
        }
        var plan = MCPPlan(host: host, functionTools: job.options.tools, request: request)
        var seen: Set<String> = []
        for server in request.servers {
            let field = server.field + ".server_label"
            guard seen.insert(server.label).inserted else {
                throw APIError.invalid(field, "'\(field)': the MCP server '\(server.label.prefix(64))' is named twice.")
            }
            guard let known = host.mcpServers.first(where: { $0.label == server.label && !$0.disabled }) else {
                let labels = host.mcpServers.filter { !$0.disabled }.map(\.label).joined(separator: ", ")
                throw APIError.invalid(
                    field, "'\(field)' is '\(server.label.prefix(64))', which is not an MCP server of this server's file; it lists: \(labels).")
            }
            if let url = server.url, Self.trimmed(url) != known.url.map(Self.trimmed) {
                // The configured URL is never echoed: its query may hold a token.
                throw APIError.invalid(
                    server.field + ".server_url",
                    "'\(server.field).server_url' is not the URL this server's MCP file gives for '\(server.label)'; leave it out (the label names the server).")
            }
        }
        try await list(&plan, request: request, functionNames: Set(job.options.tools.map(\.name)))
        job.options.tools += plan.listings.flatMap { listing in
            listing.tools.compactMap { tool in
                plan.names.first { $0.value.label == listing.server.label && $0.value.tool == tool.name }.map {
                    ToolDefinition(name: $0.key, description: tool.description, parameters: tool.inputSchema)
                }
            }
        }
        if job.options.tools.count > RequestLimits.maxTools {
            throw APIError.invalid("tools", "the request's tools and its MCP servers' tools are \(job.options.tools.count); at most \(RequestLimits.maxTools) are allowed per request.")
        }
        if let choice = request.choice {
            guard request.servers.contains(where: { $0.label == choice.label }) else {
                throw APIError.invalid("tool_choice.server_label", "'tool_choice.server_label' names '\(choice.label.prefix(64))', which is not one of the request's MCP tools.")
            }
            if let name = choice.name {
                guard let model = plan.names.first(where: { $0.value == (choice.label, name) })?.key else {
                    throw APIError.invalid("tool_choice.name", "'tool_choice.name': the MCP server '\(choice.label)' offers no tool '\(name.prefix(64))' (after allowed_tools).")
                }
                job.options.toolChoice = .named(model)
            } else {
                job.options.toolChoice = .required
            }
        }
        for answer in request.answers where !request.done.contains(answer.requestID) {
            guard let pending = request.pending[answer.requestID], request.servers.contains(where: { $0.label == pending.label }) else {
                throw APIError.invalid(
                    answer.field,
                    "'\(answer.field)' answers no mcp_approval_request of the input for one of the request's MCP servers (this server keeps no responses: send the request item back in 'input').")
            }
            plan.answered.append((pending, answer.approve))
        }
        return plan
    }

    /// Lists each server's tools (a failure is the listing's error), keeps those `allowed_tools`
    /// allows, and names each for the model: its own name when free, else `label_name`.
    private func list(_ plan: inout MCPPlan, request: MCPRequest, functionNames: Set<String>) async throws {
        var taken = functionNames
        for server in request.servers {
            var listing = MCPPlan.Listing(server: server, tools: [], error: nil, alreadyListed: request.listed.contains(server.label))
            do {
                listing.tools = try await plan.host.mcpTools(server: server.label).filter { tool in
                    (server.allowed?.contains(tool.name) ?? true) && (!server.readOnlyOnly || tool.readOnly == true)
                }
            } catch {
                listing.error = "\(error)"
            }
            for tool in listing.tools {
                var name = tool.name
                if !Self.isToolName(name) || taken.contains(name) {
                    name = String((Self.sanitized(server.label) + "_" + Self.sanitized(tool.name)).prefix(64))
                    var n = 2
                    while taken.contains(name) {
                        name = String(name.prefix(60)) + "_\(n)"
                        n += 1
                    }
                }
                taken.insert(name)
                plan.names[name] = (server.label, tool.name)
            }
            plan.listings.append(listing)
        }
    }

    static func trimmed(_ url: String) -> String {
        url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    static func isToolName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-") }
    }

    static func sanitized(_ text: String) -> String {
        let mapped = String(text.unicodeScalars.map { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-") ? Character($0) : "_" })
        return mapped.isEmpty ? "tool" : mapped
    }

    /// Answers a Responses request that has MCP tools: the plan first (its 400s before any
    /// work), then the tool loop, whole or streamed.
    func respondWithMCP(
        _ job: GenerationJob, _ request: MCPRequest, route: Gateway.ModelRoute, client: GatewayConfiguration.Client,
        call: GenerationCall, context: ServerRequestContext, headers: HTTPFields
    ) async throws -> Response {
        var job = job
        let plan = try await mcpPlan(&job, request)
        var echoJob = job
        echoJob.options.tools = plan.functionTools
        if request.choice != nil { echoJob.options.toolChoice = nil }
        let renderer = ResponseRenderer(job: echoJob, requestID: call.requestID, reportsProvider: false)
        let loop = MCPLoop(server: self, plan: plan, job: job, route: route, client: client, call: call, channel: context.channel)
        guard job.stream else {
            var items = MCPItems(renderer: renderer)
            let result = await loop.run(&items) { _ in }
            if let error = result.error {
                return Self.errorResponse(error, endpoint: .responses, requestID: call.requestID, extra: headers)
            }
            var headers = headers
            Self.set(&headers, "x-request-id", call.requestID)
            return Self.json(200, Self.mcpResponse(items, plan: plan, result: result), headers: headers)
        }
        var streamHeaders = Self.sseHeaders(call.requestID)
        streamHeaders.append(contentsOf: headers)
        return Response(
            status: .ok, headers: streamHeaders,
            body: ResponseBody { writer in
                var items = MCPItems(renderer: renderer)
                var gone = false
                func send(_ frames: [Data]) async {
                    guard !gone, !frames.isEmpty else { return }
                    var buffer = ByteBuffer()
                    for frame in frames { buffer.writeBytes(frame) }
                    do { try await writer.write(buffer) } catch { gone = true }
                }
                await send(Self.mcpStart(&items.renderer, plan: plan))
                let result = await loop.run(&items) { frames in await send(frames) }
                if let error = result.error {
                    await send([items.renderer.streamError(error, text: "")])
                } else {
                    let response = Self.mcpResponse(items, plan: plan, result: result)
                    let done = result.reason == .length ? "response.incomplete" : "response.completed"
                    await send([items.renderer.event(done, ["response": response])])
                }
                try? await writer.finish(nil)
            })
    }

    /// `response.created` and `response.in_progress`, with the MCP tools echoed.
    static func mcpStart(_ renderer: inout ResponseRenderer, plan: MCPPlan) -> [Data] {
        let response = echo(renderer.responseObject(status: "in_progress", output: [], usage: nil), renderer: renderer, plan: plan)
        return [renderer.event("response.created", ["response": response]), renderer.event("response.in_progress", ["response": response])]
    }

    /// The response object: its output items, the usage of every generation, the tools echoed.
    static func mcpResponse(_ items: MCPItems, plan: MCPPlan, result: MCPLoop.Result) -> JSONValue {
        var response = items.renderer.responseObject(status: "completed", output: items.output, usage: result.usage)
        if result.reason == .length { response = items.renderer.incomplete(response, reason: "max_output_tokens") }
        return echo(response, renderer: items.renderer, plan: plan)
    }

    /// The response's `tools` with the request's MCP tools after its function tools, and an MCP `tool_choice`.
    static func echo(_ response: JSONValue, renderer: ResponseRenderer, plan: MCPPlan) -> JSONValue {
        var tools: [JSONValue] = []
        if case .array(let functions) = renderer.responsesTools { tools = functions }
        for server in plan.request.servers {
            let approval: JSONValue
            switch server.approval {
            case .always: approval = "always"
            case .never: approval = "never"
            case .filter(let always, let never):
                approval = ["always": ["tool_names": .array(always.sorted().map { .string($0) })], "never": ["tool_names": .array(never.sorted().map { .string($0) })]]
            }
            tools.append([
                "type": "mcp", "server_label": .string(server.label), "server_url": .optional(server.url),
                "allowed_tools": server.allowed.map { .array($0.sorted().map { .string($0) }) } ?? .null, "require_approval": approval,
                "headers": nil, "server_description": nil,
            ])
        }
        var result = renderer.replacing(response, "tools", .array(tools))
        if let choice = plan.request.choice {
            result = renderer.replacing(result, "tool_choice", ["type": "mcp", "server_label": .string(choice.label), "name": .optional(choice.name)])
        }
        return result
    }
}

/// The server's tool loop for one request: approved calls first, then generations, each call the
/// model makes run on its MCP server and fed back, until the model answers, a call needs
/// approval, a client function is called, or the rounds run out (the last round may not call).
struct MCPLoop: Sendable {
    let server: HearthServer
    let plan: MCPPlan
    let job: GenerationJob
    let route: Gateway.ModelRoute
    let client: GatewayConfiguration.Client
    let call: GenerationCall
    /// The client's connection: a client that leaves stops the generation under way (and so the loop).
    let channel: any Channel

    struct Result: Sendable {
        var usage = Usage(promptTokens: 0, completionTokens: 0)
        var reason = FinishReason.stop
        var error: APIError?
    }

    func run(_ items: inout MCPItems, send: (_ frames: [Data]) async -> Void) async -> Result {
        var result = Result()
        var messages: [ChatMessage] = []
        if case .chat(let given) = job.input { messages = given }
        for listing in plan.listings where !listing.alreadyListed { await send(items.listTools(listing)) }
        var ran = false
        // Answers to approval requests: run the approved calls, tell the model of the denied ones.
        for (pending, approve) in plan.answered {
            let toolCall = ToolCall(id: "mcp_call_\(pending.id)", name: pending.name, arguments: pending.arguments)
            messages.append(.assistant(toolCalls: [toolCall]))
            guard approve else {
                messages.append(.tool("Error: the user did not approve this call to \(pending.name).", callID: toolCall.id))
                continue
            }
            let text = await runCall(label: pending.label, tool: pending.name, arguments: pending.arguments, approval: pending.id, &items, send)
            messages.append(.tool(text, callID: toolCall.id))
            ran = true
        }
        let rounds = server.options.maxToolRounds
        for round in 0...rounds {
            var roundJob = job
            roundJob.input = .chat(messages)
            if round == rounds {
                roundJob.options.toolChoice = ToolChoice.disabled  // no calls left: the model answers
            } else if ran, roundJob.options.toolChoice != nil, roundJob.options.toolChoice != ToolChoice.disabled {
                roundJob.options.toolChoice = .auto  // a forced call has run: the model may now answer
            }
            let outcome = await server.mcpRound(roundJob, route: route, client: client, call: call, channel: channel)
            result.usage.promptTokens += outcome.usage.promptTokens
            result.usage.completionTokens += outcome.usage.completionTokens
            if let error = outcome.error {
                result.error = error
                return result
            }
            result.reason = outcome.reason
            let calls = outcome.toolCalls.calls
            if !outcome.text.isEmpty || calls.isEmpty { await send(items.message(outcome.text)) }
            if calls.isEmpty { return result }
            var stop = false
            var assistant = ChatMessage.assistant(outcome.text, toolCalls: [])
            var results: [ChatMessage] = []
            for (index, toolCall) in calls.enumerated() {
                guard let target = plan.names[toolCall.name] else {
                    await send(items.functionCall(toolCall))  // the client's own function: it runs it
                    stop = true
                    continue
                }
                guard outcome.toolCalls.finished.contains(index) else { continue }  // cut by max tokens: not run
                if plan.approvalNeeded(label: target.label, tool: target.tool) {
                    await send(items.approvalRequest(label: target.label, name: target.tool, arguments: toolCall.arguments))
                    stop = true
                    continue
                }
                assistant.toolCalls.append(toolCall)
                results.append(.tool(await runCall(label: target.label, tool: target.tool, arguments: toolCall.arguments, approval: nil, &items, send), callID: toolCall.id))
                ran = true
            }
            if stop || assistant.toolCalls.isEmpty { return result }
            messages.append(assistant)
            messages += results
        }
        return result
    }

    /// Runs one call on its server: the `mcp_call` item's events, and the text the model reads.
    private func runCall(
        label: String, tool: String, arguments: String, approval: String?, _ items: inout MCPItems, _ send: ([Data]) async -> Void
    ) async -> String {
        let (index, frames) = items.startCall(label: label, name: tool, arguments: arguments, approvalRequest: approval)
        await send(frames)
        let result = await plan.host.mcpCall(server: label, tool: tool, arguments: arguments)
        await send(items.endCall(index, result))
        switch result {
        case .output(let text): return text
        case .toolError(let text): return "Error: \(text)"
        case .failed(_, let message): return "Error: \(message)"
        }
    }
}

extension HearthServer {
    /// One generation of the tool loop, admitted, timed and recorded like any request (its
    /// quota reserved, its usage settled); nothing streamed.
    func mcpRound(_ job: GenerationJob, route: Gateway.ModelRoute, client: GatewayConfiguration.Client, call: GenerationCall, channel: any Channel)
        async -> RouteOutcome
    {
        var call = call
        let stream = RouteStream()
        let lease: SlotLease
        do {
            let (reservation, _) = try gateway.limiter.reserve(client, prompt: Self.promptEstimate(job), reply: job.options.maxTokens)
            call.reservation = reservation
            lease = try admit(route, client: client) {
                stream.cancel(ProviderError(.cancelled, provider: "gateway", message: "The server is shutting down."))
            }
        } catch {
            let failure = RouteOutcome(failure: Self.gatewayAPIError(error), after: RouteOutcome())
            await record(failure, call: call)
            return failure
        }
        let watch = await watchConnection(channel) { stream.cancel(ClientGone()) }
        let timeout = options.requestTimeout
        let deadline = Task {
            try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
            stream.cancel(ProviderError(.timeout, provider: "gateway", message: "The request took longer than \(Int(timeout)) seconds."))
        }
        defer {
            watch.end()
            deadline.cancel()
            lease.end()
        }
        do {
            let admission = localAdmission(client: client.name).map { [marks = call.stageMarks] in marks.timing($0) }
            _ = try await stream.start(route, job: job, admission: admission)
        } catch {
            stream.cancel(CancellationError())
            let failure = RouteOutcome(failure: Self.gatewayAPIError(error), after: RouteOutcome())
            await record(failure, call: call)
            return failure
        }
        let filter = gateway.configuration.contentFilter.flatMap { $0.filterOutput ? $0 : nil }
        return await drive(stream, filter: filter, started: call.started, emit: { _ in }, settle: { [call] outcome in await self.record(outcome, call: call) })
    }
}
