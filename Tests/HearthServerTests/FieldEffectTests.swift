import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// Every honoured request field changes the answer (each check fails if the server ignored
/// the field), and fields no endpoint defines are refused by name. The audit table in
/// docs/SERVER.md ("Request fields") cites these tests.
@Suite struct FieldEffectTests {
    static var conversation: [[String: Any]] { [["role": "user", "content": "Write about the sea."]] }

    /// The reply text of a chat, text completion, Anthropic message or Responses request.
    static func reply(_ harness: ServerHarness, _ path: String, _ fields: [String: Any]) async throws -> (text: String, json: [String: Any]) {
        var body: [String: Any] = ["model": "tiny"]
        switch path {
        case "/v1/completions": body["prompt"] = "The sea is"
        case "/v1/responses": body["input"] = "Write about the sea."
        default: body["messages"] = conversation
        }
        body[path == "/v1/responses" ? "max_output_tokens" : "max_tokens"] = 12
        for (key, value) in fields { body[key] = value }
        let answer = try await harness.send(path, json: body)
        #expect(answer.status == 200, "\(path) \(fields): \(answer.body)")
        let json = answer.json
        if let choice = (json["choices"] as? [[String: Any]])?.first {
            return (((choice["message"] as? [String: Any])?["content"] as? String) ?? (choice["text"] as? String) ?? "", json)
        }
        if let blocks = json["content"] as? [[String: Any]] {
            return (blocks.compactMap { $0["text"] as? String }.joined(), json)
        }
        let output = json["output"] as? [[String: Any]] ?? []
        let parts = output.flatMap { $0["content"] as? [[String: Any]] ?? [] }
        return (parts.compactMap { $0["text"] as? String }.joined(), json)
    }

    /// Greedy tokens two runs must agree on: those before the first step whose two best tokens
    /// are within 0.01 nats (there a cached prefix or another kernel level's summation order may
    /// decide, and everything after depends on it). Chat's count serves the Anthropic and
    /// Responses requests too (the same conversation renders the same prompt).
    static func clearGreedyTokens(_ harness: ServerHarness, completions: Bool) async throws -> Int {
        let path = completions ? "/v1/completions" : "/v1/chat/completions"
        let fields: [String: Any] = completions ? ["temperature": 0, "logprobs": 2] : ["temperature": 0, "logprobs": true, "top_logprobs": 2]
        let logprobs = ((try await reply(harness, path, fields).json["choices"] as? [[String: Any]])?.first?["logprobs"]) as? [String: Any]
        let best: [[Double]]
        if completions {
            best = (logprobs?["top_logprobs"] as? [[String: Double]] ?? []).map { $0.values.sorted(by: >) }
        } else {
            best = (logprobs?["content"] as? [[String: Any]] ?? []).map { entry in
                (entry["top_logprobs"] as? [[String: Any]] ?? []).compactMap { $0["logprob"] as? Double }
            }
        }
        let clear = best.firstIndex { $0.count < 2 || $0[0] - $0[1] < 0.01 } ?? best.count
        #expect(clear >= 2, "\(path): too few clear greedy tokens to compare (\(clear))")
        return max(1, clear)
    }

    /// The length field of `path` set to `count`.
    static func limit(_ path: String, _ count: Int) -> [String: Any] {
        [path == "/v1/responses" ? "max_output_tokens" : "max_tokens": count]
    }

    /// Fields that narrow sampling to the most likely token: with them a temperature-1 reply is
    /// the greedy one (without them it is a random draw, which is not, over 12 tokens of these
    /// random-weight models). (`min_p` < 1 keeps the near-ties these flat distributions have:
    /// it is shown by the seeded draws below.)
    static var greedyMakers: [(path: String, field: String, value: Any)] { [
        ("/v1/chat/completions", "temperature", 0), ("/v1/chat/completions", "top_p", 1e-6),
        ("/v1/chat/completions", "top_k", 1),
        ("/v1/completions", "temperature", 0), ("/v1/completions", "top_p", 1e-6), ("/v1/completions", "top_k", 1),
        ("/v1/messages", "temperature", 0), ("/v1/messages", "top_p", 1e-6), ("/v1/messages", "top_k", 1),
        ("/v1/responses", "temperature", 0), ("/v1/responses", "top_p", 1e-6),
    ] }

    /// Fields that change a seeded temperature-1 draw (chat and text completions take `seed`).
    static var drawChangers: [(field: String, value: Any)] { [
        ("seed", 4), ("presence_penalty", 2), ("frequency_penalty", 2), ("repetition_penalty", 3), ("temperature", 1.8),
        ("top_p", 0.5), ("top_k", 3), ("min_p", 0.2),
    ] }

    @Test func samplingFieldsChangeTheReply() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            // The greedy reply of each API over its clear tokens (the same conversation renders the same prompt).
            let chatClear = try await Self.clearGreedyTokens(harness, completions: false)
            let completionsClear = try await Self.clearGreedyTokens(harness, completions: true)
            func clear(_ path: String) -> Int { path == "/v1/completions" ? completionsClear : chatClear }
            var greedy: [String: String] = [:]
            for path in ["/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/responses"] {
                var fields = Self.limit(path, clear(path))
                fields["temperature"] = 0
                greedy[path] = try await Self.reply(harness, path, fields).text
            }
            #expect(greedy["/v1/chat/completions"] == greedy["/v1/messages"] && greedy["/v1/messages"] == greedy["/v1/responses"])
            for (path, field, value) in Self.greedyMakers {
                var fields = Self.limit(path, clear(path))
                fields["temperature"] = 1
                fields[field] = value
                let text = try await Self.reply(harness, path, fields).text
                #expect(text == greedy[path], "\(path) \(field)=\(value) did not make the reply greedy")
            }
            for path in ["/v1/chat/completions", "/v1/completions"] {
                let base: [String: Any] = ["temperature": 1, "seed": 3]
                let drawn = try await Self.reply(harness, path, base).text
                #expect(try await Self.reply(harness, path, base).text == drawn, "\(path): a seeded draw repeats")
                var short = Self.limit(path, clear(path))
                short.merge(base) { $1 }
                let shortDraw = try await Self.reply(harness, path, short).text
                #expect(shortDraw != greedy[path], "\(path): the seeded draw is the greedy reply: the greedy checks above show nothing")
                for (field, value) in Self.drawChangers {
                    var fields = base
                    fields[field] = value
                    let text = try await Self.reply(harness, path, fields).text
                    #expect(text != drawn, "\(path) \(field)=\(value) left the seeded draw unchanged")
                }
            }
            try await harness.stop()
        }
    }

    @Test func lengthAndStopFieldsCutTheReply() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            let chatClear = try await Self.clearGreedyTokens(harness, completions: false)
            let completionsClear = try await Self.clearGreedyTokens(harness, completions: true)
            for path in ["/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/responses"] {
                // The greedy reply over its clear tokens: the stop string is taken from them, so the
                // reply it cuts is made of tokens every run agrees on.
                var greedyFields = Self.limit(path, path == "/v1/completions" ? completionsClear : chatClear)
                greedyFields["temperature"] = 0
                let full = try await Self.reply(harness, path, greedyFields)
                // Length: the limit field gives that many tokens.
                let limitField = path == "/v1/responses" ? "max_output_tokens" : "max_tokens"
                let short = try await Self.reply(harness, path, ["temperature": 0, limitField: 3]).json
                let usage = short["usage"] as? [String: Any]
                #expect((usage?["completion_tokens"] ?? usage?["output_tokens"]) as? Int == 3, "\(path) \(limitField): \(short)")
                if path == "/v1/chat/completions" || path == "/v1/completions" {
                    let other = try await Self.reply(harness, path, ["temperature": 0, "max_completion_tokens": 4]).json
                    #expect((other["usage"] as? [String: Any])?["completion_tokens"] as? Int == 4, "\(path) max_completion_tokens")
                }
                // Stop strings: the reply ends before the first occurrence (not included).
                guard path != "/v1/responses" else { continue }  // the Responses API has no stop field
                // The clear reply's last character: the reply ends before its first occurrence.
                guard full.text.count >= 2, let last = full.text.last else {
                    Issue.record("\(path): the greedy reply is too short to cut: '\(full.text)'")
                    continue
                }
                let stop = String(last)
                let stopField = path == "/v1/messages" ? "stop_sequences" : "stop"
                let cut = try await Self.reply(harness, path, ["temperature": 0, stopField: [stop]]).text
                let expected = full.text.components(separatedBy: stop).first ?? ""
                #expect(cut == expected, "\(path) \(stopField) '\(stop)': '\(cut)' from '\(full.text)'")
            }
            try await harness.stop()
        }
    }

    @Test func promptFieldsChangeThePrompt() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            // Anthropic `system`, Responses `instructions`: the prompt grows by the system turn.
            let plain = try await Self.reply(harness, "/v1/messages", ["temperature": 0]).json
            let withSystem = try await Self.reply(harness, "/v1/messages", ["temperature": 0, "system": "You are a poet."]).json
            let tokens = { (json: [String: Any]) in (json["usage"] as? [String: Any])?["input_tokens"] as? Int ?? 0 }
            #expect(tokens(withSystem) > tokens(plain))
            let responsesPlain = try await Self.reply(harness, "/v1/responses", ["temperature": 0]).json
            let responsesInstructed = try await Self.reply(harness, "/v1/responses", ["temperature": 0, "instructions": "You are a poet."]).json
            #expect(tokens(responsesInstructed) > tokens(responsesPlain))
            #expect(responsesInstructed["instructions"] as? String == "You are a poet.")
            // Responses `metadata` is echoed; `store`, `include` and `truncation` take only what this server does.
            let tagged = try await Self.reply(harness, "/v1/responses", ["temperature": 0, "metadata": ["topic": "sea"], "store": false, "include": [], "truncation": "disabled"]).json
            #expect((tagged["metadata"] as? [String: String]) == ["topic": "sea"])
            for (field, value) in [("store", true), ("include", ["everything"]), ("truncation", "auto"), ("metadata", ["k": 1])] as [(String, Any)] {
                let refused = try await harness.send("/v1/responses", json: ["model": "tiny", "input": "Hi", field: value])
                #expect(refused.status == 400, "\(field): \(refused.body)")
                #expect(((refused.json["error"] as? [String: Any])?["param"] as? String)?.hasPrefix(field) == true, "\(refused.body)")
            }
            let stored = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": Self.conversation, "store": true])
            #expect(stored.status == 400 && stored.body.contains("store"), "\(stored.body)")
            try await harness.stop()
        }
    }

    /// `/tokenize`'s `add_special` adds the BOS token, `prompt` is `content`'s other name, and
    /// `/detokenize` turns the ids back into the text; fields taken only for what this server
    /// does (`echo: false`) or refused outright (`suffix`, Responses `background: true`) say so by name.
    @Test func tokenizeFieldsAndRefusedValues() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            func ids(_ body: [String: Any]) async throws -> [Int] {
                try await harness.send("/tokenize", json: body).json["tokens"] as? [Int] ?? []
            }
            let plain = try await ids(["content": "Hello there"])
            let special = try await ids(["content": "Hello there", "add_special": true])
            #expect(special.count == plain.count + 1 && Array(special.dropFirst()) == plain, "\(special) vs \(plain)")
            #expect(try await ids(["prompt": "Hello there"]) == plain)
            // SentencePiece encodes a leading "▁" word boundary; decoding may give it back as a space.
            let text = try await harness.send("/detokenize", json: ["tokens": plain, "model": "tiny"]).json["content"] as? String
            #expect(text == "Hello there" || text == " Hello there", "\(text ?? "nil")")
            let otherModel = try await harness.send("/tokenize", json: ["content": "Hi", "model": "other"])
            #expect(otherModel.status == 404, "\(otherModel.body)")
            let otherDetokenize = try await harness.send("/detokenize", json: ["tokens": plain, "model": "other"])
            #expect(otherDetokenize.status == 404, "\(otherDetokenize.body)")
            let echoed = try await harness.send("/v1/completions", json: ["model": "tiny", "prompt": "Hi", "max_tokens": 2, "echo": false])
            #expect(echoed.status == 200, "\(echoed.body)")
            let refusals: [(String, [String: Any])] = [
                ("/v1/completions", ["model": "tiny", "prompt": "Hi", "echo": true]),
                ("/v1/completions", ["model": "tiny", "prompt": "Hi", "suffix": "end"]),
                ("/v1/responses", ["model": "tiny", "input": "Hi", "background": true]),
            ]
            for (path, body) in refusals {
                let refused = try await harness.send(path, json: body)
                let field = body.keys.first { !["model", "prompt", "input"].contains($0) } ?? ""
                #expect(refused.status == 400 && (refused.json["error"] as? [String: Any])?["param"] as? String == field, "\(refused.body)")
            }
            try await harness.stop()
        }
    }

    /// Text completions stream as SSE; `stream_options.include_usage` adds one usage chunk.
    @Test func completionsStreamWithAndWithoutUsage() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            let body: [String: Any] = ["model": "tiny", "prompt": "The sea is", "max_tokens": 4, "temperature": 0, "stream": true]
            var withUsage = body
            withUsage["stream_options"] = ["include_usage": true]
            for (request, usageChunks) in [(body, 0), (withUsage, 1)] {
                let reply = try await harness.send("/v1/completions", json: request)
                let (payloads, wellFramed) = sseData(reply.body)
                #expect(reply.status == 200 && wellFramed && payloads.last == "[DONE]", "\(reply.body)")
                let chunks = payloads.dropLast().map(parse)
                let text = chunks.compactMap { (($0["choices"] as? [[String: Any]])?.first?["text"] as? String) }.joined()
                #expect(text == (try await Self.reply(harness, "/v1/completions", ["temperature": 0, "max_tokens": 4]).text))
                #expect(chunks.filter { $0["usage"] is [String: Any] }.count == usageChunks, "\(reply.body)")
            }
            try await harness.stop()
        }
    }

    /// A field no endpoint defines is a 400 naming it, in each API's words; a null one is absent.
    @Test func unknownFieldsAreRefusedByName() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            let requests: [(String, [String: Any])] = [
                ("/v1/chat/completions", ["model": "tiny", "messages": Self.conversation, "max_tokens": 2]),
                ("/v1/completions", ["model": "tiny", "prompt": "Hi", "max_tokens": 2]),
                ("/v1/messages", ["model": "tiny", "messages": Self.conversation, "max_tokens": 2]),
                ("/v1/messages/count_tokens", ["model": "tiny", "messages": Self.conversation]),
                ("/v1/responses", ["model": "tiny", "input": "Hi", "max_output_tokens": 2]),
                ("/v1/embeddings", ["model": "tiny", "input": "Hi"]),
                ("/tokenize", ["content": "Hi"]),
                ("/detokenize", ["tokens": [5]]),
            ]
            for (path, body) in requests {
                var withNull = body
                withNull["user"] = NSNull()
                let accepted = try await harness.send(path, json: withNull)
                #expect(accepted.status == 200, "\(path) with a null field: \(accepted.body)")
                // `user` is defined by the OpenAI APIs (a hint there), by no Anthropic or llama.cpp one.
                for field in (path.hasPrefix("/v1/messages") || !path.hasPrefix("/v1/") ? ["user", "frobnicate"] : ["frobnicate"]) {
                    var bad = body
                    bad[field] = "x"
                    let refused = try await harness.send(path, json: bad)
                    #expect(refused.status == 400, "\(path) \(field): \(refused.body)")
                    let error = refused.json["error"] as? [String: Any]
                    #expect(error?["param"] as? String == field, "\(path): \(refused.body)")
                    #expect(error?["code"] as? String == "unknown_parameter", "\(path): \(refused.body)")
                    let wording = path.hasPrefix("/v1/messages") ? "Extra inputs are not permitted" : "Unrecognized request argument"
                    #expect((error?["message"] as? String)?.contains(wording) == true, "\(path): \(refused.body)")
                }
            }
            // Nested objects' fields too: a chat message's, stream_options'.
            let obfuscated = try await harness.send(
                "/v1/chat/completions",
                json: ["model": "tiny", "messages": Self.conversation, "stream": true, "stream_options": ["include_everything": true]])
            #expect(obfuscated.status == 400 && obfuscated.body.contains("stream_options.include_everything"), "\(obfuscated.body)")
            let named = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [["role": "user", "content": "Hi", "nickname": "ann"]]])
            #expect(named.status == 400 && (named.json["error"] as? [String: Any])?["param"] as? String == "messages[0].nickname", "\(named.body)")
            try await harness.stop()
        }
    }
}
