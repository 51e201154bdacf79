import Foundation
import HearthConstraints
import HearthProviders
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthLocal

/// Tool prompts equal the models' own Jinja templates (Tests/Fixtures/tool-prompts.json, from
/// scripts/make_tool_prompt_fixtures.py with jinja2); the call grammars accept the calls each
/// syntax writes and nothing tool-shaped as text; the scanner turns a reply into the same
/// events however it is split, and drops a call that repeats an earlier one.
@Suite struct ToolFormatTests {
    struct Case: Decodable {
        struct Message: Decodable {
            struct Call: Decodable { var id: String; var name: String; var arguments: String }
            var role: String
            var content: String
            var tool_calls: [Call]?
            var tool_call_id: String?
        }
        struct Tool: Decodable { var name: String; var description: String?; var parameters: String }
        var template: String
        var `case`: String
        var bos: String?
        var messages: [Message]
        var tools: [Tool]
        var expected: String
    }

    @Test func promptsEqualTheModelsOwnTemplates() throws {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("tool-prompts.json"))
        let cases = try JSONDecoder().decode([Case].self, from: data)
        #expect(cases.count >= 7)
        for c in cases {
            let format = try #require(ChatTemplate.Format(rawValue: c.template))
            let messages = c.messages.map { m in
                ChatMessage(
                    role: ChatMessage.Role(rawValue: m.role) ?? .user, content: m.content,
                    toolCalls: (m.tool_calls ?? []).map { ToolCall(id: $0.id, name: $0.name, arguments: $0.arguments) },
                    toolCallID: m.tool_call_id)
            }
            let tools = c.tools.map { ToolDefinition(name: $0.name, description: $0.description, parameters: $0.parameters) }
            let (turns, declared) = ToolFormat.forTemplate(format).turns(messages, tools: tools)
            let text = ChatTemplate(format: format, prefix: c.bos ?? "").renderHandWritten(turns, addGenerationPrompt: true, toolsDeclared: declared)
            #expect(text == c.expected, "\(c.template) \(c.case)")
        }
    }

    static let tools = [
        ToolDefinition(
            name: "get_weather",
            parameters: #"{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}"#),
        ToolDefinition(name: "ping"),
    ]

    static func reply(_ format: ToolFormat, _ calls: [ToolCall]) -> String { format.render(calls, after: "") }

    @Test(arguments: ToolFormat.Style.allCases)
    func grammarsAcceptCallsAndKeepTextFromLookingLikeOne(style: ToolFormat.Style) throws {
        let format = ToolFormat(style)
        let paris = ToolCall(id: "a", name: "get_weather", arguments: #"{"city":"Paris"}"#)
        let ping = ToolCall(id: "b", name: "ping", arguments: "{}")
        let one = Array(Self.reply(format, [paris]).utf8)
        let two = Array(Self.reply(format, [paris, ping]).utf8)
        let required = try format.grammar(tools: Self.tools, choice: .required, parallel: true)
        #expect(required.accepts(one))
        #expect(required.accepts(two) == format.allowsParallelCalls)
        #expect(!required.accepts(Array("Hello".utf8)))
        #expect(!required.accepts(Array(Self.reply(format, [ToolCall(id: "c", name: "nope", arguments: "{}")]).utf8)))
        #expect(!required.accepts(Array(Self.reply(format, [ToolCall(id: "c", name: "get_weather", arguments: #"{"town":"x"}"#)]).utf8)))
        let single = try format.grammar(tools: Self.tools, choice: .required, parallel: false)
        #expect(single.accepts(one) && !single.accepts(two))
        let named = try format.grammar(tools: Self.tools, choice: .named("ping"), parallel: true)
        #expect(named.accepts(Array(Self.reply(format, [ping]).utf8)) && !named.accepts(one))
        let auto = try format.grammar(tools: Self.tools, choice: .auto, parallel: true)
        #expect(auto.accepts(one) && auto.accepts(Array("Hello there".utf8)) && auto.accepts([]))
        #expect(!auto.accepts(Array((format.trigger + "oops").utf8)))
        let none = try format.grammar(tools: Self.tools, choice: .disabled, parallel: true)
        #expect(!none.accepts(one) && none.accepts(Array("Hello".utf8)))
    }

    /// The events of a reply fed in pieces.
    static func scan(_ format: ToolFormat, _ pieces: [String]) -> (events: [ToolCallScanner.Output], repeated: Bool) {
        var counter = 0
        var scanner = ToolCallScanner(format: format) {
            counter += 1
            return "id\(counter)"
        }
        var events: [ToolCallScanner.Output] = []
        for piece in pieces { events += scanner.feed(piece) }
        events += scanner.finish()
        return (events, scanner.repeatedCall)
    }

    /// Events with adjacent text and argument fragments merged (splitting differently splits them differently).
    static func merged(_ events: [ToolCallScanner.Output]) -> [ToolCallScanner.Output] {
        var out: [ToolCallScanner.Output] = []
        for event in events {
            switch (out.last, event) {
            case (.text(let a)?, .text(let b)): out[out.count - 1] = .text(a + b)
            case (.call(.arguments(let i, let a))?, .call(.arguments(let j, let b))) where i == j:
                out[out.count - 1] = .call(.arguments(index: i, fragment: a + b))
            default: out.append(event)
            }
        }
        return out
    }

    @Test(arguments: ToolFormat.Style.allCases)
    func scannerEventsDoNotDependOnHowTheReplyIsSplit(style: ToolFormat.Style) {
        let format = ToolFormat(style)
        let calls = [
            ToolCall(id: "", name: "get_weather", arguments: #"{"city": "Pa\"ris}]"}"#),
            ToolCall(id: "", name: "ping", arguments: "{}"),
        ]
        let reply = "\n" + Self.reply(format, format.allowsParallelCalls ? calls : [calls[0]])
        let whole = Self.merged(Self.scan(format, [reply]).events)
        var expected: [ToolCallScanner.Output] = [
            .call(.started(index: 0, id: "id1", name: "get_weather")),
            .call(.arguments(index: 0, fragment: #"{"city": "Pa\"ris}]"}"#)), .call(.finished(index: 0)),
        ]
        if format.allowsParallelCalls {
            expected += [.call(.started(index: 1, id: "id2", name: "ping")), .call(.arguments(index: 1, fragment: "{}")), .call(.finished(index: 1))]
        }
        #expect(whole == expected)
        let characters = Array(reply)
        for cut in 1..<characters.count {
            let pieces = [String(characters[..<cut]), String(characters[cut...])]
            #expect(Self.merged(Self.scan(format, pieces).events) == expected, "split at \(cut)")
        }
        // Text stays text, its leading white space dropped; a lone prefix of the trigger is text too.
        #expect(Self.merged(Self.scan(format, ["  Hel", "lo"]).events) == [.text("Hello")])
        if format.trigger.count > 1 {
            #expect(Self.scan(format, [String(format.trigger.dropLast())]).events == [.text(String(format.trigger.dropLast()))])
        }
    }

    @Test func aRepeatedCallIsDroppedAndEndsTheReply() {
        let format = ToolFormat(.taggedJSON)
        let paris = ToolCall(id: "", name: "get_weather", arguments: #"{"city": "Paris"}"#)
        let rome = ToolCall(id: "", name: "get_weather", arguments: #"{"city": "Rome"}"#)
        let repeated = Self.scan(format, Array(Self.reply(format, [paris, paris, rome])).map { String($0) })
        #expect(repeated.repeated)
        #expect(Self.merged(repeated.events).filter { if case .call(.started) = $0 { true } else { false } }.count == 1)
        // A call that only begins like an earlier one is held back, then released whole.
        let near = ToolCall(id: "", name: "get_weather", arguments: #"{"city": "Paris2"}"#)
        let released = Self.scan(format, Array(Self.reply(format, [paris, near])).map { String($0) })
        #expect(!released.repeated)
        #expect(
            Self.merged(released.events) == [
                .call(.started(index: 0, id: "id1", name: "get_weather")), .call(.arguments(index: 0, fragment: #"{"city": "Paris"}"#)),
                .call(.finished(index: 0)), .call(.started(index: 1, id: "id2", name: "get_weather")),
                .call(.arguments(index: 1, fragment: #"{"city": "Paris2"}"#)), .call(.finished(index: 1)),
            ])
    }
}
