import Foundation
import Testing
@testable import HearthTemplates

/// The corpus of real chat templates (Tests/Fixtures/chat-templates, made by
/// scripts/make_template_fixtures.py): for every template and conversation, Hearth's prompt
/// equals, byte for byte, the one transformers' `apply_chat_template` rendered, and where the
/// Python raised, Hearth throws a `TemplateError`.
@Suite struct CorpusTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/chat-templates")

    /// The fixed time the fixtures' `strftime_now` saw (2025-03-07 14:05:09, naive: rendered in UTC here).
    static let now: Date = {
        var c = DateComponents()
        (c.year, c.month, c.day, c.hour, c.minute, c.second) = (2025, 3, 7, 14, 5, 9)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        return calendar.date(from: c) ?? Date(timeIntervalSince1970: 0)
    }()

    struct Case {
        var template: String
        var conversation: String
        var output: String?
        var error: String?
    }

    static func load() throws -> (cases: [Case], conversations: [String: ChatTemplateInput], templates: [String: String]) {
        let text = try String(contentsOf: directory.appendingPathComponent("expected.json"), encoding: .utf8)
        guard case .dict(let root) = try JinjaValue.fromJSON(text) else { throw TemplateError(.type, "expected.json is not an object") }
        var special: [String: String] = [:]
        if case .dict(let d) = root[string: "special_tokens"] ?? JinjaValue.none {
            for (k, v) in d.entries { if case .string(let key) = k, case .string(let value) = v { special[key] = value } }
        }
        var conversations: [String: ChatTemplateInput] = [:]
        if case .list(let convs) = root[string: "conversations"] ?? JinjaValue.none {
            for conv in convs {
                guard case .dict(let d) = conv, case .string(let name) = d[string: "name"] ?? JinjaValue.none,
                    case .list(let messages) = d[string: "messages"] ?? JinjaValue.none
                else { continue }
                var input = ChatTemplateInput(messages: messages, specialTokens: special)
                for (k, v) in d.entries {
                    guard case .string(let key) = k else { continue }
                    switch key {
                    case "name", "messages": break
                    case "tools": if case .list(let t) = v { input.tools = t }
                    case "documents": if case .list(let t) = v { input.documents = t }
                    case "add_generation_prompt": input.addGenerationPrompt = v.isTruthy
                    case "continue_final_message": input.continueFinalMessage = v.isTruthy
                    default: input.extraVariables[key] = v
                    }
                }
                conversations[name] = input
            }
        }
        var cases: [Case] = []
        var templates: [String: String] = [:]
        if case .list(let items) = root[string: "cases"] ?? JinjaValue.none {
            for item in items {
                guard case .dict(let d) = item, case .string(let t) = d[string: "template"] ?? JinjaValue.none,
                    case .string(let c) = d[string: "conversation"] ?? JinjaValue.none
                else { continue }
                var output: String? = nil
                var error: String? = nil
                if case .string(let o) = d[string: "output"] ?? JinjaValue.none { output = o }
                if case .string(let e) = d[string: "error"] ?? JinjaValue.none { error = e }
                cases.append(Case(template: t, conversation: c, output: output, error: error))
                if templates[t] == nil {
                    let url = directory.appendingPathComponent("templates/\(t).jinja")
                    templates[t] = try String(contentsOf: url, encoding: .utf8)
                }
            }
        }
        return (cases, conversations, templates)
    }

    @Test func everyCaseMatchesTransformers() throws {
        let (cases, conversations, sources) = try Self.load()
        #expect(Set(cases.map(\.template)).count >= 40)
        #expect(conversations.count >= 25)
        var compiled: [String: Result<Template, TemplateError>] = [:]
        var failures: [String] = []
        var passed = 0
        for c in cases {
            let template: Result<Template, TemplateError>
            if let t = compiled[c.template] {
                template = t
            } else {
                do { template = .success(try Template(sources[c.template] ?? "")) } catch let e as TemplateError { template = .failure(e) }
                compiled[c.template] = template
            }
            guard let input = conversations[c.conversation] else {
                failures.append("\(c.template) × \(c.conversation): conversation missing")
                continue
            }
            do {
                let output = try template.get().apply(input, now: Self.now, timeZone: TimeZone(identifier: "UTC") ?? .current)
                if let expected = c.output, expected == output {
                    passed += 1
                } else if let expected = c.output {
                    failures.append("\(c.template) × \(c.conversation): output differs\n--- expected\n\(expected)\n--- got\n\(output)")
                } else {
                    failures.append("\(c.template) × \(c.conversation): Python raised \(c.error ?? "?"), Hearth rendered")
                }
            } catch let error as TemplateError {
                if c.error != nil {
                    passed += 1
                } else {
                    failures.append("\(c.template) × \(c.conversation): \(error)")
                }
            }
        }
        print("chat-template corpus: \(passed)/\(cases.count) cases pass (\(Set(cases.map(\.template)).count) templates)")
        if let path = ProcessInfo.processInfo.environment["HEARTH_TEMPLATE_FAILURES"] {
            try? failures.joined(separator: "\n\n=====\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        for f in failures.prefix(5) { Issue.record(Comment(rawValue: f)) }
        #expect(failures.isEmpty, "\(failures.count) of \(cases.count) corpus cases differ from transformers")
    }
}
