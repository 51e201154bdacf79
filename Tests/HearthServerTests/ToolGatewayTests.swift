import Foundation
import HearthLocal
import HearthProviders
import HearthTestSupport
@testable import HearthServer
import Testing

/// Tool calls through the gateway: a `cloud` route whose provider is scripted
/// (``ToolScriptedProvider``: text, then two calls) with the local fixture model as fallback.
/// Every API renders the calls whole and streamed as the official clients reassemble them;
/// the tools reach the provider; usage is counted; the cache and the output filter handle calls.
@Suite(.serialized) struct ToolGatewayTests {
    struct Setup {
        let harness: ServerHarness
        let provider: ToolScriptedProvider

        func stop() async throws { try await harness.stop() }
    }

    static func setup(script: [ChatEvent] = ToolScriptedProvider.twoCalls, filter: [String]? = nil) async throws -> Setup {
        let provider = ToolScriptedProvider(script: script)
        let configuration = GatewayConfiguration(
            clients: [],
            routes: [
                "cloud": .init(name: "cloud", provider: .openai, fallback: ["local"]),
                "local": .init(name: "local", provider: .local),
            ],
            cache: .init(ttlSeconds: 60, maxEntries: 10), contentFilter: try filter.map { try ContentFilter(lines: $0, filterOutput: true) })
        let harness = try await ServerHarness(context: 2048) { local in
            Gateway(
                configuration: configuration, local: local, ledger: try UsageLedger(path: nil), environment: [:], clock: .system,
                providers: ["cloud": provider])
        }
        return Setup(harness: harness, provider: provider)
    }

    static var tools: [[String: Any]] { [
        ["type": "function", "function": ["name": "get_weather", "parameters": ToolServerTests.weatherTool]],
        ["type": "function", "function": ["name": "get_time", "parameters": ["type": "object", "properties": [:]]]],
    ] }

    static func chat(stream: Bool = false, temperature: Double = 0.5, extra: [String: Any] = [:]) -> [String: Any] {
        var body: [String: Any] = [
            "model": "cloud", "messages": [["role": "user", "content": "Weather and time?"]], "temperature": temperature,
            "tools": tools, "tool_choice": "required", "stream": stream,
        ]
        if stream { body["stream_options"] = ["include_usage": true] }
        body.merge(extra) { $1 }
        return body
    }

    static func object(_ text: String) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:] }

    /// The weather call's arguments as an object.
    static let weatherArguments: [String: String] = ["city": "Paris", "unit": "celsius"]

    // MARK: Chat completions

    @Test func chatCompletionsToolCallsWholeAndStreamed() async throws {
        let setup = try await Self.setup()
        try await withCleanup({ try? await setup.stop() }) {
            let whole = try await setup.harness.send("/v1/chat/completions", json: Self.chat())
            #expect(whole.status == 200, "\(whole.body)")
            let choice = (whole.json["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "tool_calls")
            let message = choice?["message"] as? [String: Any]
            #expect(message?["content"] as? String == "Let me check.")
            let calls = message?["tool_calls"] as? [[String: Any]] ?? []
            #expect(calls.count == 2)
            #expect(calls.first?["id"] as? String == "call_w1" && calls.first?["type"] as? String == "function")
            let function = calls.first?["function"] as? [String: Any]
            #expect(function?["name"] as? String == "get_weather")
            #expect(Self.object(function?["arguments"] as? String ?? "") as? [String: String] == Self.weatherArguments)
            #expect(((calls.last?["function"] as? [String: Any])?["arguments"] as? String) == "{}")
            #expect((whole.json["usage"] as? [String: Any])?["completion_tokens"] as? Int == 17)

            // The tools reached the provider.
            let request = try #require(setup.provider.requests.last)
            #expect(request.options.tools.map(\.name) == ["get_weather", "get_time"])
            #expect(request.options.toolChoice == .required)

            // Streamed: reassembled by index as the openai client does.
            let streamed = try await setup.harness.send("/v1/chat/completions", json: Self.chat(stream: true))
            #expect(streamed.status == 200)
            let (payloads, framed) = sseData(streamed.body)
            #expect(framed)
            #expect(payloads.last == "[DONE]")
            var text = ""
            var finish: String?
            var assembled: [Int: (id: String, name: String, arguments: String)] = [:]
            var usage: [String: Any]?
            for payload in payloads where payload != "[DONE]" {
                let chunk = Self.object(payload)
                if let value = chunk["usage"] as? [String: Any] { usage = value }
                guard let choice = (chunk["choices"] as? [[String: Any]])?.first else { continue }
                if let reason = choice["finish_reason"] as? String { finish = reason }
                let delta = choice["delta"] as? [String: Any] ?? [:]
                text += delta["content"] as? String ?? ""
                for call in delta["tool_calls"] as? [[String: Any]] ?? [] {
                    let index = try #require(call["index"] as? Int)
                    let fn = call["function"] as? [String: Any] ?? [:]
                    if let id = call["id"] as? String {
                        #expect(assembled[index] == nil, "a call started twice")
                        #expect(call["type"] as? String == "function")
                        #expect(fn["arguments"] as? String == "")
                        assembled[index] = (id, fn["name"] as? String ?? "", "")
                    } else {
                        #expect(fn["name"] == nil && call["type"] == nil)
                        assembled[index]?.arguments += fn["arguments"] as? String ?? ""
                    }
                }
            }
            #expect(text == "Let me check.")
            #expect(finish == "tool_calls")
            #expect(assembled[0]?.id == "call_w1" && assembled[0]?.name == "get_weather")
            #expect(Self.object(assembled[0]?.arguments ?? "") as? [String: String] == Self.weatherArguments)
            #expect(assembled[1]?.name == "get_time" && assembled[1]?.arguments == "{}")
            #expect(usage?["completion_tokens"] as? Int == 17)
            try await setup.stop()
        }
    }

    // MARK: Anthropic Messages

    @Test func messagesToolUseWholeAndStreamed() async throws {
        let setup = try await Self.setup()
        try await withCleanup({ try? await setup.stop() }) {
            var body: [String: Any] = [
                "model": "cloud", "max_tokens": 64, "messages": [["role": "user", "content": "Weather and time?"]],
                "tools": [["name": "get_weather", "input_schema": ToolServerTests.weatherTool], ["name": "get_time", "input_schema": ["type": "object"]]],
                "tool_choice": ["type": "any", "disable_parallel_tool_use": false],
            ]
            let whole = try await setup.harness.send("/v1/messages", json: body)
            #expect(whole.status == 200, "\(whole.body)")
            #expect(whole.json["stop_reason"] as? String == "tool_use")
            let content = whole.json["content"] as? [[String: Any]] ?? []
            #expect(content.map { $0["type"] as? String } == ["text", "tool_use", "tool_use"])
            #expect(content.first?["text"] as? String == "Let me check.")
            #expect(content[safe: 1]?["id"] as? String == "call_w1" && content[safe: 1]?["name"] as? String == "get_weather")
            #expect(content[safe: 1]?["input"] as? [String: String] == Self.weatherArguments)
            #expect((content[safe: 2]?["input"] as? [String: Any])?.isEmpty == true)
            // The order of the input's keys is the call's.
            #expect(whole.body.contains(#""input":{"city":"Paris","unit":"celsius"}"#), "\(whole.body)")
            #expect(setup.provider.requests.last?.options.toolChoice == .required)

            body["stream"] = true
            let streamed = try await setup.harness.send("/v1/messages", json: body)
            #expect(streamed.status == 200)
            let (payloads, framed) = sseData(streamed.body)
            #expect(framed)
            var blocks: [Int: [String: Any]] = [:]
            var partial: [Int: String] = [:]
            var open: Set<Int> = []
            var stop: String?
            var text = ""
            for payload in payloads {
                let event = Self.object(payload)
                let index = event["index"] as? Int ?? -1
                switch event["type"] as? String {
                case "content_block_start":
                    #expect(blocks[index] == nil && index == blocks.count, "blocks open in order")
                    #expect(open.isEmpty, "one block open at a time")
                    blocks[index] = event["content_block"] as? [String: Any]
                    open.insert(index)
                case "content_block_delta":
                    #expect(open.contains(index))
                    let delta = event["delta"] as? [String: Any] ?? [:]
                    switch delta["type"] as? String {
                    case "text_delta": text += delta["text"] as? String ?? ""
                    case "input_json_delta": partial[index, default: ""] += delta["partial_json"] as? String ?? ""
                    default: Issue.record("unexpected delta \(delta)")
                    }
                case "content_block_stop":
                    #expect(open.remove(index) != nil)
                case "message_delta":
                    stop = (event["delta"] as? [String: Any])?["stop_reason"] as? String
                default: break
                }
            }
            #expect(open.isEmpty)
            #expect(stop == "tool_use")
            #expect(text == "Let me check.")
            #expect(blocks[0]?["type"] as? String == "text")
            #expect(blocks[1]?["type"] as? String == "tool_use" && blocks[1]?["id"] as? String == "call_w1")
            #expect((blocks[1]?["input"] as? [String: Any])?.isEmpty == true)
            #expect(Self.object(partial[1] ?? "") as? [String: String] == Self.weatherArguments)
            #expect(blocks[2]?["name"] as? String == "get_time" && partial[2] == "{}")
            try await setup.stop()
        }
    }

    // MARK: Responses

    @Test func responsesFunctionCallItemsWholeAndStreamed() async throws {
        let setup = try await Self.setup()
        try await withCleanup({ try? await setup.stop() }) {
            var body: [String: Any] = [
                "model": "cloud", "input": "Weather and time?", "tool_choice": ["type": "function", "name": "get_weather"],
                "tools": [
                    ["type": "function", "name": "get_weather", "parameters": ToolServerTests.weatherTool, "strict": true],
                    ["type": "function", "name": "get_time", "parameters": ["type": "object", "properties": [:]]],
                ],
            ]
            let whole = try await setup.harness.send("/v1/responses", json: body)
            #expect(whole.status == 200, "\(whole.body)")
            #expect(whole.json["status"] as? String == "completed")
            let output = whole.json["output"] as? [[String: Any]] ?? []
            #expect(output.map { $0["type"] as? String } == ["message", "function_call", "function_call"])
            let call = output[safe: 1] ?? [:]
            #expect(call["call_id"] as? String == "call_w1" && call["name"] as? String == "get_weather")
            #expect(call["status"] as? String == "completed")
            #expect((call["id"] as? String)?.hasPrefix("fc_") == true)
            #expect(Self.object(call["arguments"] as? String ?? "") as? [String: String] == Self.weatherArguments)
            #expect((whole.json["tool_choice"] as? [String: Any])?["name"] as? String == "get_weather")
            #expect(setup.provider.requests.last?.options.toolChoice == .named("get_weather"))

            body["stream"] = true
            let streamed = try await setup.harness.send("/v1/responses", json: body)
            #expect(streamed.status == 200)
            let (payloads, framed) = sseData(streamed.body)
            #expect(framed)
            var items: [Int: [String: Any]] = [:]
            var arguments: [Int: String] = [:]
            var done: [Int: String] = [:]
            var finished: [Int: [String: Any]] = [:]
            var completed: [String: Any]?
            var sequence = -1
            for payload in payloads {
                let event = Self.object(payload)
                let number = event["sequence_number"] as? Int ?? -1
                #expect(number == sequence + 1)
                sequence = number
                let index = event["output_index"] as? Int ?? -1
                switch event["type"] as? String {
                case "response.output_item.added":
                    #expect(index == items.count)
                    items[index] = event["item"] as? [String: Any]
                case "response.function_call_arguments.delta":
                    #expect(event["item_id"] as? String == items[index]?["id"] as? String)
                    arguments[index, default: ""] += event["delta"] as? String ?? ""
                case "response.function_call_arguments.done":
                    done[index] = event["arguments"] as? String
                case "response.output_item.done":
                    finished[index] = event["item"] as? [String: Any]
                case "response.completed":
                    completed = event["response"] as? [String: Any]
                default: break
                }
            }
            #expect(items[0]?["type"] as? String == "message")
            #expect(items[1]?["type"] as? String == "function_call" && items[1]?["status"] as? String == "in_progress")
            #expect(items[1]?["call_id"] as? String == "call_w1")
            #expect(arguments[1] == done[1])
            #expect(Self.object(arguments[1] ?? "") as? [String: String] == Self.weatherArguments)
            #expect(finished[2]?["arguments"] as? String == "{}" && finished[2]?["status"] as? String == "completed")
            let final = completed?["output"] as? [[String: Any]] ?? []
            #expect(final.map { $0["type"] as? String } == ["message", "function_call", "function_call"])
            #expect(final[safe: 1]?["arguments"] as? String == done[1])
            try await setup.stop()
        }
    }

    /// A call cut by max tokens is reported as cut: `length`, and an `incomplete` item.
    @Test func aCallCutByMaxTokensIsIncomplete() async throws {
        let setup = try await Self.setup(script: [
            .toolCall(.started(index: 0, id: "call_c", name: "get_weather")), .toolCall(.arguments(index: 0, fragment: #"{"ci"#)),
            .finished(.length),
        ])
        try await withCleanup({ try? await setup.stop() }) {
            let chat = try await setup.harness.send("/v1/chat/completions", json: Self.chat())
            #expect(((chat.json["choices"] as? [[String: Any]])?.first?["finish_reason"] as? String) == "length")
            let body: [String: Any] = [
                "model": "cloud", "input": "Weather?", "tools": [["type": "function", "name": "get_weather", "parameters": ToolServerTests.weatherTool]],
            ]
            let whole = try await setup.harness.send("/v1/responses", json: body)
            #expect(whole.json["status"] as? String == "incomplete")
            #expect((whole.json["output"] as? [[String: Any]])?.first?["status"] as? String == "incomplete", "\(whole.body)")
            var streamed = body
            streamed["stream"] = true
            let events = try await setup.harness.send("/v1/responses", json: streamed)
            #expect(events.body.contains(#""type":"response.incomplete""#))
            #expect(events.body.contains(#""arguments":"{\"ci","status":"incomplete""#), "\(events.body)")
            try await setup.stop()
        }
    }

    // MARK: Gateway

    /// Tokens inside calls count when the provider reports no usage; a failed cloud provider
    /// falls back to the local model with the tools; usage reaches the ledger.
    @Test func usageCountsCallsAndFallbackKeepsTheTools() async throws {
        let script = ToolScriptedProvider.twoCalls.filter { if case .usage = $0 { return false } else { return true } }
        let setup = try await Self.setup(script: script)
        try await withCleanup({ try? await setup.stop() }) {
            let reply = try await setup.harness.send("/v1/chat/completions", json: Self.chat())
            #expect(reply.status == 200)
            // One text piece and four argument fragments.
            #expect((reply.json["usage"] as? [String: Any])?["completion_tokens"] as? Int == 5)

            // The local model gets the tools and the choice: a named call, arguments under its schema.
            var failing = Self.chat(extra: [
                "tool_choice": ["type": "function", "function": ["name": "get_weather"]], "max_tokens": 400, "seed": 2, "parallel_tool_calls": false,
                "tools": [["type": "function", "function": ["name": "get_weather", "parameters": ToolServerTests.shortTool]]],
            ])
            failing["messages"] = [["role": "user", "content": "Weather? #fail"]]
            let fallback = try await setup.harness.send("/v1/chat/completions", json: failing)
            #expect(fallback.status == 200, "\(fallback.body)")
            let served = fallback.json["hearth"] as? [String: Any]
            #expect(served?["served_by"] as? String == "local")
            #expect((served?["switched"] as? [[String: Any]])?.first?["from"] as? String == "scripted")
            let choice = (fallback.json["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "tool_calls", "\(fallback.body)")
            let call = ((choice?["message"] as? [String: Any])?["tool_calls"] as? [[String: Any]])?.first?["function"] as? [String: Any]
            #expect(call?["name"] as? String == "get_weather")
            ToolServerTests.checkArguments(call?["arguments"], fallback.body)

            let ledger = try #require(setup.harness.server.gateway.ledger)
            try await ledger.flush()
            let totals = try await ledger.totals(client: nil, from: nil, to: nil)
            #expect(totals.reduce(0) { $0 + $1.completionTokens } >= 5)
            try await setup.stop()
        }
    }

    /// A deterministic tool answer is cached with its calls: a hit replays them (whole and
    /// streamed) with fresh call ids; other tools or another tool choice are another entry.
    @Test func cachedToolAnswersReplayTheirCalls() async throws {
        let setup = try await Self.setup()
        try await withCleanup({ try? await setup.stop() }) {
            // The same bytes each time: a schema's key order is part of the request (and of the key).
            func send(_ path: String, _ body: String) async throws -> ServerHarness.Reply {
                try await setup.harness.send(.POST, path, body: body)
            }
            let chat = String(decoding: try JSONSerialization.data(withJSONObject: Self.chat(temperature: 0)), as: UTF8.self)
            let first = try await send("/v1/chat/completions", chat)
            #expect(first.headers["x-hearth-cache"].first == "miss")
            let second = try await send("/v1/chat/completions", chat)
            #expect(second.headers["x-hearth-cache"].first == "hit")
            #expect(setup.provider.requests.count == 1)
            let calls = ((second.json["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["tool_calls"] as? [[String: Any]] ?? []
            #expect(calls.count == 2)
            let id = calls.first?["id"] as? String ?? ""
            #expect(id.hasPrefix("call_") && id != "call_w1")
            #expect(Self.object((calls.first?["function"] as? [String: Any])?["arguments"] as? String ?? "") as? [String: String] == Self.weatherArguments)
            #expect(((second.json["choices"] as? [[String: Any]])?.first?["finish_reason"] as? String) == "tool_calls")

            let messages = """
                {"model": "cloud", "max_tokens": 64, "temperature": 0, "messages": [{"role": "user", "content": "Weather and time?"}],
                 "tools": [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}], "stream": true}
                """
            #expect(try await send("/v1/messages", messages).status == 200)
            let again = try await send("/v1/messages", messages)
            #expect(again.headers["x-hearth-cache"].first == "hit")
            #expect(again.body.contains("input_json_delta") && again.body.contains(#""stop_reason":"tool_use""#), "\(again.body)")
            #expect(setup.provider.requests.count == 2)

            // Another tool choice, or other tools: not the same answer.
            #expect(chat.contains(#""required""#) && chat.contains("get_time"))
            let auto = chat.replacingOccurrences(of: #""required""#, with: #""auto""#)
            #expect(try await send("/v1/chat/completions", auto).headers["x-hearth-cache"].first == "miss")
            #expect(try await send("/v1/chat/completions", chat.replacingOccurrences(of: "get_time", with: "get_date")).headers["x-hearth-cache"].first == "miss")
            #expect(try await send("/v1/chat/completions", auto).headers["x-hearth-cache"].first == "hit")
            #expect(setup.provider.requests.count == 4)
            try await setup.stop()
        }
    }

    /// The output filter holds a call whole: a call whose arguments match goes out not at all
    /// (the answer ends `content_filter`); the text before it goes out.
    @Test func outputFilterHoldsCallsWhole() async throws {
        let setup = try await Self.setup(filter: ["paris"])
        try await withCleanup({ try? await setup.stop() }) {
            let whole = try await setup.harness.send("/v1/chat/completions", json: Self.chat())
            #expect(whole.status == 200)
            let choice = (whole.json["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "content_filter")
            #expect((choice?["message"] as? [String: Any])?["content"] as? String == "Let me check.")

            let streamed = try await setup.harness.send("/v1/chat/completions", json: Self.chat(stream: true))
            #expect(!streamed.body.contains("get_weather"), "\(streamed.body)")
            #expect(streamed.body.contains(#""finish_reason":"content_filter""#))
            try await setup.stop()

            // A call that passes goes out complete.
            let clean = try await Self.setup(filter: ["forbiddenword"])
            try await withCleanup({ try? await clean.stop() }) {
                let streamedClean = try await clean.harness.send("/v1/chat/completions", json: Self.chat(stream: true))
                #expect(streamedClean.body.contains(#""finish_reason":"tool_calls""#), "\(streamedClean.body)")
                #expect(streamedClean.body.contains("get_time"))
                try await clean.stop()
            }
        }
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
