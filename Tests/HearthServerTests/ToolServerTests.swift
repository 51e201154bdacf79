import Foundation
import HearthLocal
import HearthProviders
import HearthTestSupport
@testable import HearthServer
import Testing

/// A provider that answers every request with the same scripted events (a reply with text and
/// two tool calls unless told otherwise) and records the requests it got. A request whose last
/// message contains `#fail` fails before any event (the router then falls back).
final class ToolScriptedProvider: LanguageModelProvider, @unchecked Sendable {
    // `@unchecked Sendable`: `requests` is only touched under `lock`; `script` is immutable.
    let id = "scripted"
    let script: [ChatEvent]
    private let lock = NSLock()
    private var received: [ChatRequest] = []

    static let weatherCall = ToolCall(id: "call_w1", name: "get_weather", arguments: #"{"city": "Paris", "unit": "celsius"}"#)
    static let timeCall = ToolCall(id: "call_t2", name: "get_time", arguments: "{}")

    /// Text, then the weather call in three fragments, then the time call in one.
    static let twoCalls: [ChatEvent] = [
        .textDelta("Let me check."),
        .toolCall(.started(index: 0, id: "call_w1", name: "get_weather")),
        .toolCall(.arguments(index: 0, fragment: #"{"city": "#)),
        .toolCall(.arguments(index: 0, fragment: #""Paris", "unit""#)),
        .toolCall(.arguments(index: 0, fragment: #": "celsius"}"#)),
        .toolCall(.finished(index: 0)),
        .toolCall(.started(index: 1, id: "call_t2", name: "get_time")),
        .toolCall(.arguments(index: 1, fragment: "{}")),
        .toolCall(.finished(index: 1)),
        .usage(Usage(promptTokens: 31, completionTokens: 17)),
        .finished(.toolCalls),
    ]

    init(script: [ChatEvent] = ToolScriptedProvider.twoCalls) { self.script = script }

    var requests: [ChatRequest] { lock.withLock { received } }
    var availability: ProviderAvailability { get async { .available } }

    func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        lock.withLock { received.append(request) }
        let script = script
        let fails = request.messages.last?.content.contains("#fail") ?? false
        return AsyncThrowingStream { continuation in
            if fails {
                continuation.finish(throwing: ProviderError(.server(status: 500), provider: "scripted", message: "scripted failure"))
                return
            }
            for event in script { continuation.yield(event) }
            continuation.finish()
        }
    }
}

/// Tool calling through `hearth serve` on real loopback sockets: every API's tool fields parsed
/// into the provider protocol and refused by field when wrong; tool calls rendered whole and
/// streamed in each API's shape (through a gateway route whose provider is scripted); the
/// gateway forwarding tools, caching tool answers and filtering calls whole; usage counted.
@Suite(.serialized) struct ToolServerTests {
    static var weatherTool: [String: Any] { [
        "type": "object",
        "properties": ["city": ["type": "string"], "unit": ["enum": ["celsius", "fahrenheit"]]],
        "required": ["city", "unit"], "additionalProperties": false,
    ] }

    static func chatTools(_ extra: [String: Any] = [:], names: [String] = ["get_weather", "get_time"]) -> [String: Any] {
        var body: [String: Any] = [
            "model": "tiny", "messages": [["role": "user", "content": "Weather and time in Paris?"]], "max_tokens": 8, "temperature": 0,
            "tools": names.map { ["type": "function", "function": ["name": $0, "description": "A tool.", "parameters": weatherTool]] },
        ]
        body.merge(extra) { $1 }
        return body
    }

    static func refusal(_ harness: ServerHarness, _ path: String, _ body: [String: Any]) async throws -> (param: String?, code: String?, message: String) {
        let reply = try await harness.send(path, json: body)
        #expect(reply.status == 400, "\(reply.body)")
        let error = reply.json["error"] as? [String: Any]
        return (error?["param"] as? String, error?["code"] as? String, error?["message"] as? String ?? "")
    }

    // MARK: Bad input

    @Test func badToolInputIs400NamingTheFieldInEveryAPI() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let chat = "/v1/chat/completions"
            // A named tool that does not exist; duplicate names; a malformed schema; an unenforceable one.
            let unknown = try await Self.refusal(harness, chat, Self.chatTools(["tool_choice": ["type": "function", "function": ["name": "nope"]]]))
            #expect(unknown.param == "tool_choice.function.name")
            #expect(unknown.message.contains("nope"), "\(unknown.message)")
            let twice = try await Self.refusal(harness, chat, Self.chatTools(names: ["get_weather", "get_weather"]))
            #expect(twice.param == "tools[1].function.name")
            #expect(twice.message.contains("tools[1].function.name"), "\(twice.message)")
            var malformed = Self.chatTools()
            malformed["tools"] = [["type": "function", "function": ["name": "f", "parameters": ["type": "string"]]]]
            #expect(try await Self.refusal(harness, chat, malformed).param == "tools[0].function.parameters.type")
            malformed["tools"] = [["type": "function", "function": ["name": "f", "parameters": "not a schema"]]]
            #expect(try await Self.refusal(harness, chat, malformed).param == "tools[0].function.parameters")
            var unenforceable = Self.chatTools()
            unenforceable["tools"] = [
                ["type": "function", "function": ["name": "ok", "parameters": Self.weatherTool]],
                ["type": "function", "function": ["name": "f", "parameters": ["type": "object", "properties": ["a": ["type": "string", "not": ["const": "x"]]]]]],
            ]
            let unsupported = try await Self.refusal(harness, chat, unenforceable)
            #expect(unsupported.param == "tools[1].function.parameters")
            #expect(unsupported.code == "unsupported_tool_schema")
            #expect(unsupported.message.contains("/properties/a"), "\(unsupported.message)")
            unenforceable["stream"] = true
            #expect(try await Self.refusal(harness, chat, unenforceable).code == "unsupported_tool_schema")
            // A tool result answering no call; a call id used twice; a bad role; a hosted tool type.
            var orphan = Self.chatTools()
            orphan["messages"] = [["role": "user", "content": "hi"], ["role": "tool", "tool_call_id": "call_x", "content": "42"]]
            let result = try await Self.refusal(harness, chat, orphan)
            #expect(result.param == "messages[1].tool_call_id")
            #expect(result.message.contains("call_x"), "\(result.message)")
            orphan["messages"] = [["role": "user", "content": "hi"], ["role": "tool", "content": "42"]]
            #expect(try await Self.refusal(harness, chat, orphan).param == "messages[1].tool_call_id")
            #expect(try await Self.refusal(harness, chat, Self.chatTools(["tool_choice": "sometimes"])).param == "tool_choice")
            #expect(try await Self.refusal(harness, chat, Self.chatTools(["tool_choice": "required", "tools": [Any]()])).param == "tool_choice")
            var custom = Self.chatTools()
            custom["tools"] = [["type": "custom", "custom": ["name": "x"]]]
            #expect(try await Self.refusal(harness, chat, custom).param == "tools[0].type")
            #expect(try await Self.refusal(harness, "/v1/completions", ["model": "tiny", "prompt": "x", "tools": [Any]()]).param == "tools")

            // Anthropic Messages.
            let anthropicTools: [[String: Any]] = [["name": "get_weather", "input_schema": Self.weatherTool], ["name": "get_time", "input_schema": ["type": "object"]]]
            func messages(_ extra: [String: Any]) -> [String: Any] {
                var body: [String: Any] = ["model": "tiny", "max_tokens": 8, "messages": [["role": "user", "content": "hi"]], "tools": anthropicTools]
                body.merge(extra) { $1 }
                return body
            }
            #expect(try await Self.refusal(harness, "/v1/messages", messages(["tool_choice": ["type": "tool", "name": "nope"]])).param == "tool_choice.name")
            #expect(try await Self.refusal(harness, "/v1/messages", messages(["tool_choice": ["type": "maybe"]])).param == "tool_choice.type")
            #expect(
                try await Self.refusal(harness, "/v1/messages", messages(["tools": [anthropicTools[0], anthropicTools[0]]])).param == "tools[1].name")
            #expect(try await Self.refusal(harness, "/v1/messages", messages(["tools": [["name": "x"]]])).param == "tools[0].input_schema")
            let schema = try await Self.refusal(
                harness, "/v1/messages", messages(["tools": [["name": "x", "input_schema": ["type": "object", "properties": ["a": ["not": ["const": 1]]]]]]]))
            #expect(schema.param == "tools[0].input_schema" && schema.code == "unsupported_tool_schema")
            let toolResult = try await Self.refusal(
                harness, "/v1/messages",
                messages([
                    "messages": [
                        ["role": "user", "content": "hi"],
                        ["role": "assistant", "content": [["type": "tool_use", "id": "toolu_1", "name": "get_time", "input": [:]]]],
                        ["role": "user", "content": [["type": "tool_result", "tool_use_id": "toolu_1", "content": "noon"], ["type": "tool_result", "tool_use_id": "toolu_9", "content": "?"]]],
                    ]
                ]))
            #expect(toolResult.param == "messages[2].content[1].tool_use_id", "\(toolResult.message)")
            #expect(toolResult.message.contains("toolu_9"), "\(toolResult.message)")
            #expect(
                try await Self.refusal(
                    harness, "/v1/messages",
                    messages(["messages": [["role": "user", "content": [["type": "tool_use", "id": "t", "name": "get_time", "input": [:]]]]]])
                ).param == "messages[0].content[0].type")

            // Responses.
            func responses(_ extra: [String: Any]) -> [String: Any] {
                var body: [String: Any] = [
                    "model": "tiny", "input": "hi", "max_output_tokens": 8,
                    "tools": [["type": "function", "name": "get_weather", "parameters": Self.weatherTool]],
                ]
                body.merge(extra) { $1 }
                return body
            }
            #expect(try await Self.refusal(harness, "/v1/responses", responses(["tool_choice": ["type": "function", "name": "nope"]])).param == "tool_choice.name")
            #expect(try await Self.refusal(harness, "/v1/responses", responses(["tools": [["type": "web_search"]]])).param == "tools[0].type")
            let output = try await Self.refusal(
                harness, "/v1/responses",
                responses(["input": [["role": "user", "content": "hi"], ["type": "function_call_output", "call_id": "call_zz", "output": "1"]]]))
            #expect(output.param == "input[1].call_id", "\(output.message)")
            #expect(
                try await Self.refusal(harness, "/v1/responses", responses(["input": [["type": "web_search_call", "id": "ws_1"]]])).param
                    == "input[0].type")

            // Nothing was admitted for any of them, and the server still answers.
            #expect(try await harness.metric("hearth_requests_admitted") == 0)
            #expect(try await harness.send(.GET, "/health").status == 200)
            let fine = try await harness.send(chat, json: ["model": "tiny", "messages": [["role": "user", "content": "hi"]], "max_tokens": 2])
            #expect(fine.status == 200)
            try await harness.stop()
        }
    }

    /// Valid tool conversations — calls in history (content null), their results, tool_choice
    /// none — are accepted by every API on the local model.
    @Test func toolConversationsAreAcceptedInEveryAPI() async throws {
        let harness = try await ServerHarness(context: 2048)
        try await withCleanup({ try? await harness.stop() }) {
            var chat = Self.chatTools(["tool_choice": "none", "parallel_tool_calls": false])
            chat["messages"] = [
                ["role": "user", "content": "Weather in Paris?"],
                [
                    "role": "assistant", "content": NSNull(),
                    "tool_calls": [["id": "call_1", "type": "function", "function": ["name": "get_weather", "arguments": #"{"city":"Paris","unit":"celsius"}"#]]],
                ],
                ["role": "tool", "tool_call_id": "call_1", "content": "18 C"],
            ]
            let reply = try await harness.send("/v1/chat/completions", json: chat)
            #expect(reply.status == 200, "\(reply.body)")
            let choice = (reply.json["choices"] as? [[String: Any]])?.first
            #expect((choice?["message"] as? [String: Any])?["tool_calls"] == nil)

            let messages: [String: Any] = [
                "model": "tiny", "max_tokens": 4, "tool_choice": ["type": "none"],
                "tools": [["name": "get_weather", "description": "Weather.", "input_schema": Self.weatherTool]],
                "messages": [
                    ["role": "user", "content": "Weather in Paris?"],
                    [
                        "role": "assistant",
                        "content": [["type": "text", "text": "Checking."], ["type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": ["city": "Paris", "unit": "celsius"]]],
                    ],
                    ["role": "user", "content": [["type": "tool_result", "tool_use_id": "toolu_1", "content": [["type": "text", "text": "18 C"]]], ["type": "text", "text": "Thanks"]]],
                ],
            ]
            let anthropic = try await harness.send("/v1/messages", json: messages)
            #expect(anthropic.status == 200, "\(anthropic.body)")

            let responses: [String: Any] = [
                "model": "tiny", "max_output_tokens": 4, "tool_choice": "none", "parallel_tool_calls": true,
                "tools": [["type": "function", "name": "get_weather", "parameters": Self.weatherTool, "strict": true]],
                "input": [
                    ["role": "user", "content": "Weather in Paris?"],
                    ["type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": #"{"city":"Paris","unit":"celsius"}"#],
                    ["type": "function_call_output", "call_id": "call_1", "output": "18 C"],
                ],
            ]
            let response = try await harness.send("/v1/responses", json: responses)
            #expect(response.status == 200, "\(response.body)")
            #expect(response.json["tool_choice"] as? String == "none")
            let echoed = (response.json["tools"] as? [[String: Any]])?.first
            #expect(echoed?["name"] as? String == "get_weather")
            #expect(((echoed?["parameters"] as? [String: Any])?["required"] as? [String]) == ["city", "unit"])
            try await harness.stop()
        }
    }

    /// A short schema: a call is a few dozen tokens.
    static var shortTool: [String: Any] { [
        "type": "object",
        "properties": ["city": ["type": "string", "minLength": 1, "maxLength": 8], "unit": ["enum": ["celsius", "fahrenheit"]]],
        "required": ["city", "unit"], "additionalProperties": false,
    ] }

    /// A call's arguments follow `shortTool`.
    static func checkArguments(_ arguments: Any?, _ context: String) {
        let value = (arguments as? [String: Any]) ?? (arguments as? String).flatMap { parse($0) as [String: Any]? }
        guard let value, Set(value.keys) == ["city", "unit"] else {
            Issue.record("arguments do not follow the schema: \(String(describing: arguments)) in \(context)")
            return
        }
        #expect((value["city"] as? String).map { (1...8).contains($0.count) } == true, "\(context)")
        #expect(["celsius", "fahrenheit"].contains(value["unit"] as? String ?? ""), "\(context)")
    }

    /// The local (random-weight) model under `tool_choice` required or named: every API's
    /// answer is calls whose arguments follow the schema, whole and streamed, nothing of them
    /// in the text; tokens counted.
    @Test func localModelCallsToolsInEveryAPI() async throws {
        let harness = try await ServerHarness(context: 2048)
        try await withCleanup({ try? await harness.stop() }) {
            let tools: [[String: Any]] = [
                ["type": "function", "function": ["name": "get_weather", "description": "Weather.", "parameters": Self.shortTool]],
                ["type": "function", "function": ["name": "get_time", "parameters": ["type": "object", "properties": [:], "additionalProperties": false]]],
            ]
            let base: [String: Any] = [
                "model": "tiny", "messages": [["role": "user", "content": "Weather in Paris?"]], "max_tokens": 400, "temperature": 1.0, "seed": 3,
                "parallel_tool_calls": false, "tools": tools, "tool_choice": ["type": "function", "function": ["name": "get_weather"]],
            ]
            let whole = try await harness.send("/v1/chat/completions", json: base)
            #expect(whole.status == 200, "\(whole.body)")
            let choice = (whole.json["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "tool_calls", "\(whole.body)")
            let message = choice?["message"] as? [String: Any]
            let calls = message?["tool_calls"] as? [[String: Any]] ?? []
            #expect(!calls.isEmpty, "\(whole.body)")
            for call in calls {
                let function = call["function"] as? [String: Any]
                #expect(function?["name"] as? String == "get_weather")
                #expect((call["id"] as? String)?.isEmpty == false)
                Self.checkArguments(function?["arguments"], whole.body)
            }
            #expect(((whole.json["usage"] as? [String: Any])?["completion_tokens"] as? Int ?? 0) > 0)

            var streamed = base
            streamed["stream"] = true
            streamed["tool_choice"] = "required"
            let reply = try await harness.send("/v1/chat/completions", json: streamed)
            var content = ""
            var finish: String?
            var arguments: [Int: String] = [:]
            var names: [Int: String] = [:]
            for payload in sseData(reply.body).payloads where payload != "[DONE]" {
                guard let choice = (parse(payload)["choices"] as? [[String: Any]])?.first else { continue }
                finish = choice["finish_reason"] as? String ?? finish
                let delta = choice["delta"] as? [String: Any] ?? [:]
                content += delta["content"] as? String ?? ""
                for call in delta["tool_calls"] as? [[String: Any]] ?? [] {
                    let index = call["index"] as? Int ?? -1
                    let function = call["function"] as? [String: Any] ?? [:]
                    if let name = function["name"] as? String { names[index] = name }
                    arguments[index, default: ""] += function["arguments"] as? String ?? ""
                }
            }
            #expect(finish == "tool_calls", "\(reply.body)")
            #expect(content.isEmpty, "a call leaked into the content: \(content)")
            #expect(!names.isEmpty)
            for (index, name) in names {
                #expect(["get_weather", "get_time"].contains(name))
                if name == "get_weather" { Self.checkArguments(arguments[index], reply.body) } else { #expect(parse(arguments[index] ?? "").isEmpty) }
            }

            let anthropic: [String: Any] = [
                "model": "tiny", "max_tokens": 400, "temperature": 1.0, "top_k": 40, "stream": true,
                "messages": [["role": "user", "content": "Weather in Paris?"]],
                "tools": [["name": "get_weather", "input_schema": Self.shortTool]], "tool_choice": ["type": "any", "disable_parallel_tool_use": true],
            ]
            let events = try await harness.send("/v1/messages", json: anthropic)
            var partial = ""
            var stop: String?
            for payload in sseData(events.body).payloads {
                let event = parse(payload)
                if let delta = event["delta"] as? [String: Any] {
                    partial += delta["partial_json"] as? String ?? ""
                    stop = delta["stop_reason"] as? String ?? stop
                    #expect(delta["type"] as? String != "text_delta", "text in a forced call: \(payload)")
                }
            }
            #expect(stop == "tool_use", "\(events.body)")
            Self.checkArguments(partial, events.body)

            let responses: [String: Any] = [
                "model": "tiny", "max_output_tokens": 400, "input": "Weather in Paris?", "tool_choice": "required", "temperature": 0,
                "parallel_tool_calls": false,
                "tools": [["type": "function", "name": "get_weather", "parameters": Self.shortTool]],
            ]
            let response = try await harness.send("/v1/responses", json: responses)
            let items = (response.json["output"] as? [[String: Any]] ?? []).filter { $0["type"] as? String == "function_call" }
            #expect(!items.isEmpty, "\(response.body)")
            for item in items { Self.checkArguments(item["arguments"], response.body) }
            try await harness.stop()
        }
    }

    /// The parser maps each API's tool fields onto the provider protocol (key order of schemas
    /// and inputs kept).
    @Test func eachAPIsToolsMapOntoTheProtocol() throws {
        func parse(_ endpoint: Endpoint, _ body: String) throws -> GenerationJob {
            let data = Data(body.utf8)
            let parser = RequestParser(alias: "m", maxTokensLimit: 100, body: data)
            let json = try RequestParser.json(data)
            switch endpoint {
            case .chatCompletions: return try parser.chat(json)
            case .messages: return try parser.messages(json)
            default: return try parser.responses(json)
            }
        }
        let schema = #"{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z","a"]}"#
        let chat = try parse(
            .chatCompletions,
            #"{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"z\":\"1\"}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r"}]}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":\#(schema),"strict":true}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false}"#)
        #expect(chat.options.tools == [ToolDefinition(name: "f", description: "d", parameters: schema, strict: true)])
        #expect(chat.options.toolChoice == .named("f"))
        #expect(chat.options.parallelToolCalls == false)
        guard case .chat(let messages) = chat.input else { throw ServerHarness.HarnessError("not a chat") }
        #expect(messages == [.user("q"), .assistant(toolCalls: [ToolCall(id: "c1", name: "f", arguments: #"{"z":"1"}"#)]), .tool("r", callID: "c1")])

        let anthropic = try parse(
            .messages,
            #"{"model":"m","max_tokens":5,"system":"s","tools":[{"name":"f","input_schema":\#(schema)}],"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"t"},{"type":"tool_use","id":"u1","name":"f","input":{"z":"1","a":2}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":"r","is_error":true},{"type":"text","text":"more"}]}]}"#)
        #expect(anthropic.options.tools.first?.parameters == schema)
        #expect(anthropic.options.toolChoice == .required)
        #expect(anthropic.options.parallelToolCalls == false)
        guard case .chat(let turns) = anthropic.input else { throw ServerHarness.HarnessError("not a chat") }
        #expect(
            turns == [
                .system("s"), .user("q"), .assistant("t", toolCalls: [ToolCall(id: "u1", name: "f", arguments: #"{"z":"1","a":2}"#)]),
                .tool("Error: r", callID: "u1"), .user("more"),
            ])

        let responses = try parse(
            .responses,
            #"{"model":"m","instructions":"i","tools":[{"type":"function","name":"f","parameters":\#(schema)}],"tool_choice":"required","input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"r1"},{"type":"function_call_output","call_id":"c2","output":"r2"}]}"#)
        #expect(responses.options.toolChoice == .required)
        guard case .chat(let items) = responses.input else { throw ServerHarness.HarnessError("not a chat") }
        #expect(
            items == [
                .system("i"), .user("q"),
                .assistant(toolCalls: [ToolCall(id: "c1", name: "f", arguments: "{}"), ToolCall(id: "c2", name: "f", arguments: "{}")]),
                .tool("r1", callID: "c1"), .tool("r2", callID: "c2"),
            ])
    }
}
