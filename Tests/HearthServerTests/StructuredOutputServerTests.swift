import Foundation
import HearthLocal
import HearthProviders
import HearthServer
import HearthTestSupport
import Testing

/// Structured output through `hearth serve` on a random-weight fixture model over real loopback
/// sockets: whatever the model would say, the answer follows the schema, pattern or grammar;
/// a cut answer says `length`; a schema the engine cannot enforce is a 400 naming the keyword.
@Suite(.serialized) struct StructuredOutputServerTests {
    static var person: [String: Any] { [
        "type": "object",
        "properties": [
            "name": ["type": "string", "minLength": 1, "maxLength": 8],
            "age": ["type": "integer", "minimum": 0, "maximum": 120],
            "member": ["type": "boolean"],
            "tags": ["type": "array", "items": ["enum": ["red", "green", "blue"]], "maxItems": 3],
        ],
        "required": ["name", "age", "member", "tags"],
        "additionalProperties": false,
    ] }

    static func chat(_ extra: [String: Any], maxTokens: Int = 200, seed: Int = 1) -> [String: Any] {
        var body: [String: Any] = [
            "model": "tiny", "messages": [["role": "user", "content": "Describe a person as JSON."]], "temperature": 1.0,
            "seed": seed, "max_tokens": maxTokens,
        ]
        body.merge(extra) { $1 }
        return body
    }

    static func schemaFormat(_ schema: [String: Any]) -> [String: Any] {
        ["response_format": ["type": "json_schema", "json_schema": ["name": "person", "schema": schema, "strict": true]]]
    }

    static func object(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    static func checkPerson(_ text: String) {
        guard let value = object(text) else {
            Issue.record("not a JSON object: \(text)")
            return
        }
        #expect(Set(value.keys) == ["name", "age", "member", "tags"], "\(text)")
        let name = value["name"] as? String
        #expect(name.map { (1...8).contains($0.count) } == true, "\(text)")
        let age = value["age"] as? Int
        #expect(age.map { (0...120).contains($0) } == true, "\(text)")
        #expect(value["member"] is Bool, "\(text)")
        let tags = value["tags"] as? [String]
        #expect(tags.map { $0.count <= 3 && Set($0).isSubset(of: ["red", "green", "blue"]) } == true, "\(text)")
    }

    @Test func schemaConstrainedChatAnswersFollowTheSchema() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            for seed in 1...3 {
                let reply = try await harness.send("/v1/chat/completions", json: Self.chat(Self.schemaFormat(Self.person), seed: seed))
                #expect(reply.status == 200, "\(reply.body)")
                let choice = (reply.json["choices"] as? [[String: Any]])?.first
                #expect(choice?["finish_reason"] as? String == "stop")
                let content = (choice?["message"] as? [String: Any])?["content"] as? String ?? ""
                Self.checkPerson(content)
            }
            try await harness.stop()
        }
    }

    @Test func streamedSchemaAnswerFollowsTheSchema() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            var body = Self.chat(Self.schemaFormat(Self.person), seed: 4)
            body["stream"] = true
            let reply = try await harness.send("/v1/chat/completions", json: body)
            #expect(reply.status == 200)
            let (payloads, framed) = sseData(reply.body)
            #expect(framed)
            var text = ""
            var finish: String?
            for payload in payloads where payload != "[DONE]" {
                guard let chunk = Self.object(payload), let choice = (chunk["choices"] as? [[String: Any]])?.first else { continue }
                text += ((choice["delta"] as? [String: Any])?["content"] as? String) ?? ""
                if let reason = choice["finish_reason"] as? String { finish = reason }
            }
            #expect(finish == "stop")
            Self.checkPerson(text)
            try await harness.stop()
        }
    }

    @Test func jsonModeAnswersAnObject() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let reply = try await harness.send(
                "/v1/chat/completions", json: Self.chat(["response_format": ["type": "json_object"]], maxTokens: 400, seed: 2))
            #expect(reply.status == 200, "\(reply.body)")
            let choice = (reply.json["choices"] as? [[String: Any]])?.first
            let content = (choice?["message"] as? [String: Any])?["content"] as? String ?? ""
            if choice?["finish_reason"] as? String == "stop" {
                #expect(Self.object(content) != nil, "\(content)")
            } else {
                #expect(content.hasPrefix("{") || content.trimmingCharacters(in: .whitespaces).hasPrefix("{"))
            }
            try await harness.stop()
        }
    }

    @Test func maxTokensCutsAnObjectWithLengthAndNoMadeUpClosing() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let reply = try await harness.send("/v1/chat/completions", json: Self.chat(Self.schemaFormat(Self.person), maxTokens: 3))
            #expect(reply.status == 200)
            let choice = (reply.json["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "length")
            let content = (choice?["message"] as? [String: Any])?["content"] as? String ?? ""
            #expect(Self.object(content) == nil, "a cut answer must not be closed: \(content)")
            #expect((reply.json["usage"] as? [String: Any])?["completion_tokens"] as? Int == 3)
            try await harness.stop()
        }
    }

    @Test func completionsTakeLlamaServersJSONSchemaAndGrammarFields() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let array: [String: Any] = ["type": "array", "items": ["type": "integer", "minimum": 0, "maximum": 9], "minItems": 1, "maxItems": 3]
            let schemaReply = try await harness.send(
                "/v1/completions",
                json: ["model": "tiny", "prompt": "Numbers:", "json_schema": array, "max_tokens": 60, "temperature": 1.0, "seed": 3])
            #expect(schemaReply.status == 200, "\(schemaReply.body)")
            let choice = (schemaReply.json["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "stop")
            let numbers = (try? JSONSerialization.jsonObject(with: Data(((choice?["text"] as? String) ?? "").utf8))) as? [Int]
            #expect(numbers.map { (1...3).contains($0.count) && $0.allSatisfy { (0...9).contains($0) } } == true)

            for seed in 1...3 {
                let grammarReply = try await harness.send(
                    "/v1/completions",
                    json: [
                        "model": "tiny", "prompt": "Answer:", "grammar": #"root ::= ("yes" | "no") "!" [0-9]{2}"#, "max_tokens": 20,
                        "temperature": 1.0, "seed": seed,
                    ])
                #expect(grammarReply.status == 200, "\(grammarReply.body)")
                let text = ((grammarReply.json["choices"] as? [[String: Any]])?.first?["text"] as? String) ?? ""
                #expect(text.wholeMatch(of: /(yes|no)![0-9]{2}/) != nil, "\(text)")
            }
            try await harness.stop()
        }
    }

    @Test func responsesHonourTextFormatAndEchoIt() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let reply = try await harness.send(
                "/v1/responses",
                json: [
                    "model": "tiny", "input": "A person, as JSON.", "max_output_tokens": 200, "temperature": 1.0,
                    "text": ["format": ["type": "json_schema", "name": "person", "schema": Self.person, "strict": true]],
                ])
            #expect(reply.status == 200, "\(reply.body)")
            #expect(reply.json["status"] as? String == "completed")
            let output = (reply.json["output"] as? [[String: Any]])?.first
            let text = ((output?["content"] as? [[String: Any]])?.first?["text"] as? String) ?? ""
            Self.checkPerson(text)
            let format = (reply.json["text"] as? [String: Any])?["format"] as? [String: Any]
            #expect(format?["type"] as? String == "json_schema" && format?["name"] as? String == "person")
            try await harness.stop()
        }
    }

    @Test func anthropicMessagesHonourOutputConfigFormat() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let reply = try await harness.send(
                "/v1/messages",
                json: [
                    "model": "tiny", "max_tokens": 200, "temperature": 1.0, "messages": [["role": "user", "content": "A person."]],
                    "output_config": ["format": ["type": "json_schema", "schema": Self.person]],
                ])
            #expect(reply.status == 200, "\(reply.body)")
            #expect(reply.json["stop_reason"] as? String == "end_turn")
            let text = ((reply.json["content"] as? [[String: Any]])?.first?["text"] as? String) ?? ""
            Self.checkPerson(text)
            try await harness.stop()
        }
    }

    @Test func badFormatsAre400sNamingTheFieldKeywordOrPosition() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            func refusal(_ body: [String: Any], path: String = "/v1/chat/completions") async throws -> (param: String?, code: String?, message: String) {
                let reply = try await harness.send(path, json: body)
                #expect(reply.status == 400, "\(reply.body)")
                let error = reply.json["error"] as? [String: Any]
                return (error?["param"] as? String, error?["code"] as? String, error?["message"] as? String ?? "")
            }
            // Shapes the parser refuses.
            #expect(try await refusal(Self.chat(["response_format": ["type": "xml"]])).param == "response_format.type")
            #expect(
                try await refusal(Self.chat(["response_format": ["type": "json_schema", "json_schema": ["name": "x"]]])).param
                    == "response_format.json_schema.schema")
            #expect(
                try await refusal(Self.chat(["response_format": ["type": "json_schema", "json_schema": ["name": "a b", "schema": [:]]]])).param
                    == "response_format.json_schema.name")
            #expect(try await refusal(Self.chat(["response_format": ["type": "json_object"], "grammar": "root ::= \"a\""])).param == "grammar")
            #expect(try await refusal(Self.chat(["json_schema": [1, 2]])).param == "json_schema")
            #expect(
                try await refusal(["model": "tiny", "input": "x", "text": ["format": ["type": "yaml"]]], path: "/v1/responses").param
                    == "text.format.type")

            // A keyword that cannot be enforced: named with its path, never dropped.
            let unsupported = try await refusal(
                Self.chat(Self.schemaFormat(["type": "object", "properties": ["a": ["type": "string", "not": ["const": "x"]]]])))
            #expect(unsupported.param == "response_format.json_schema.schema")
            #expect(unsupported.code == "unsupported_response_format")
            #expect(unsupported.message.contains("/properties/a"), "\(unsupported.message)")

            // Schemas no output can meet.
            let empty = try await refusal(Self.chat(Self.schemaFormat(["enum": [Any]()])))
            #expect(empty.code == "unsatisfiable_response_format" && empty.param == "response_format.json_schema.schema")
            let items = try await refusal(Self.chat(["json_schema": ["type": "array", "minItems": 3, "maxItems": 1]]))
            #expect(items.code == "unsatisfiable_response_format" && items.param == "json_schema")
            #expect(items.message.contains("minItems") || items.message.contains("maxItems"), "\(items.message)")

            // A grammar that does not parse, named by position; one that names an undefined rule.
            let syntax = try await refusal(["model": "tiny", "prompt": "x", "grammar": "root ::= \"unterminated"], path: "/v1/completions")
            #expect(syntax.param == "grammar" && syntax.code == "invalid_response_format")
            let undefined = try await refusal(["model": "tiny", "prompt": "x", "grammar": "root ::= missing"], path: "/v1/completions")
            #expect(undefined.param == "grammar" && undefined.message.contains("missing"))

            // A streamed request is refused before its stream starts.
            var streamed = Self.chat(Self.schemaFormat(["enum": [Any]()]))
            streamed["stream"] = true
            #expect(try await refusal(streamed).code == "unsatisfiable_response_format")

            // Nothing was admitted for any of them.
            #expect(try await harness.metric("hearth_requests_admitted") == 0)
            try await harness.stop()
        }
    }
}
