import Foundation
import Testing

/// The chat template over HTTP (issue 58, items 2–4): `POST /apply-template` returns the
/// prompt a chat request renders to; `chat_template_kwargs` reach the template (and are a 400
/// when they are not an object); a template that raises is a 400 naming its message while the
/// server stays healthy; `GET /props` says which template renders.
@Suite(.serialized) struct TemplateServerTests {
    /// A template that shows what it was given: roles and contents, earlier calls, documents,
    /// an extra variable and `enable_thinking`; it raises on the message `boom`.
    static let template = """
        {%- for m in messages %}[{{ m.role }}]{{ m.content }}{% if m.tool_calls %}(calls {{ m.tool_calls | map(attribute='function') | map(attribute='name') | join(',') }}){% endif %}\
        {%- if m.content == 'boom' %}{{ raise_exception('no booms here') }}{% endif %}{% endfor %}\
        {%- if documents %}(docs {{ documents | length }}){% endif %}{% if flavour is defined %}(flavour {{ flavour }}){% endif %}\
        {%- if enable_thinking is defined %}(thinking {{ enable_thinking }}){% endif %}{% if add_generation_prompt %}[assistant]{% endif %}
        """

    static func harness() async throws -> (ServerHarness, String) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-template-\(UUID().uuidString).jinja")
        try template.write(to: url, atomically: true, encoding: .utf8)
        return (try await ServerHarness(chatTemplate: url.path), url.path)
    }

    @Test func applyTemplateReturnsThePrompt() async throws {
        let (server, path) = try await Self.harness()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reply = try await server.send(
            "/apply-template",
            json: ["model": "tiny", "messages": [["role": "system", "content": "Be brief."], ["role": "user", "content": "Hi"]]])
        #expect(reply.status == 200, "\(reply.body)")
        #expect(reply.json["prompt"] as? String == "[system]Be brief.[user]Hi[assistant]")
        // `model` may be left out (the server's local model); reasoning off reaches a template that reads enable_thinking.
        let off = try await server.send(
            "/apply-template", json: ["messages": [["role": "user", "content": "Hi"]], "reasoning_effort": "none"])
        #expect(off.json["prompt"] as? String == "[user]Hi(thinking False)[assistant]", "\(off.body)")
        // vLLM's prompt endings: no generation prompt; the final assistant message left open.
        let bare = try await server.send(
            "/apply-template", json: ["messages": [["role": "user", "content": "Hi"]], "add_generation_prompt": false])
        #expect(bare.json["prompt"] as? String == "[user]Hi", "\(bare.body)")
        let prefill: [[String: Any]] = [["role": "user", "content": "Hi"], ["role": "assistant", "content": "Sure, "]]
        let open = try await server.send("/apply-template", json: ["messages": prefill, "continue_final_message": true])
        #expect(open.json["prompt"] as? String == "[user]Hi[assistant]Sure, ", "\(open.body)")
        let both = try await server.send(
            "/apply-template", json: ["messages": prefill, "continue_final_message": true, "add_generation_prompt": true])
        #expect(both.status == 400, "\(both.body)")
        // Fields /v1/chat/completions refuses are refused here too.
        let unknown = try await server.send("/apply-template", json: ["messages": [["role": "user", "content": "Hi"]], "nope": 1])
        #expect(unknown.status == 400)
        try await server.stop()
    }

    @Test func chatTemplateKwargsReachTheTemplate() async throws {
        let (server, path) = try await Self.harness()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let body: [String: Any] = [
            "model": "tiny", "messages": [["role": "user", "content": "Hi"]],
            "chat_template_kwargs": ["flavour": "mint", "documents": [["title": "a", "text": "b"]]],
        ]
        let prompt = try await server.send("/apply-template", json: body)
        #expect(prompt.json["prompt"] as? String == "[user]Hi(docs 1)(flavour mint)[assistant]", "\(prompt.body)")
        // The same field on a completion is honoured: the prompt's length is what the template wrote.
        var chat = body
        chat["max_tokens"] = 1
        let answered = try await server.send("/v1/chat/completions", json: chat)
        #expect(answered.status == 200, "\(answered.body)")
        var plain = chat
        plain["chat_template_kwargs"] = nil
        let without = try await server.send("/v1/chat/completions", json: plain)
        let usage = (answered.json["usage"] as? [String: Any])?["prompt_tokens"] as? Int ?? 0
        let plainUsage = (without.json["usage"] as? [String: Any])?["prompt_tokens"] as? Int ?? 0
        #expect(usage > plainUsage, "kwargs did not change the prompt: \(usage) vs \(plainUsage)")
        // vLLM's top-level `documents` is the template's `documents` too; given twice, a 400.
        var topLevel = body
        topLevel["chat_template_kwargs"] = ["flavour": "mint"]
        topLevel["documents"] = [["title": "a", "text": "b"]]
        let same = try await server.send("/apply-template", json: topLevel)
        #expect(same.json["prompt"] as? String == "[user]Hi(docs 1)(flavour mint)[assistant]", "\(same.body)")
        var twice = body
        twice["documents"] = [["title": "a", "text": "b"]]
        let refusedTwice = try await server.send("/v1/chat/completions", json: twice)
        #expect(refusedTwice.status == 400 && refusedTwice.body.contains("documents"), "\(refusedTwice.body)")
        var notObjects = plain
        notObjects["documents"] = ["just text"]
        #expect(try await server.send("/v1/chat/completions", json: notObjects).status == 400)
        var wrong = body
        wrong["chat_template_kwargs"] = [1, 2]
        let refused = try await server.send("/v1/chat/completions", json: wrong)
        #expect(refused.status == 400)
        #expect(((refused.json["error"] as? [String: Any])?["param"] as? String) == "chat_template_kwargs", "\(refused.body)")
        try await server.stop()
    }

    @Test func aTemplateErrorIsA400AndTheServerStaysHealthy() async throws {
        let (server, path) = try await Self.harness()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let boom = try await server.send("/v1/chat/completions", json: ["model": "tiny", "messages": [["role": "user", "content": "boom"]]])
        #expect(boom.status == 400, "\(boom.body)")
        let message = (boom.json["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.contains("no booms here"), "\(boom.body)")
        let applied = try await server.send("/apply-template", json: ["messages": [["role": "user", "content": "boom"]]])
        #expect(applied.status == 400 && applied.body.contains("no booms here"), "\(applied.body)")
        #expect(try await server.send(.GET, "/health").status == 200)
        let fine = try await server.send(
            "/v1/chat/completions", json: ["model": "tiny", "messages": [["role": "user", "content": "fine"]], "max_tokens": 1])
        #expect(fine.status == 200, "\(fine.body)")
        let props = try await server.send(.GET, "/props")
        #expect(props.status == 200)
        #expect((props.json["chat_template_renderer"] as? String)?.hasPrefix("jinja (file hearth-template-") == true, "\(props.body)")
        #expect((props.json["chat_template"] as? String)?.contains("no booms here") == true)
        try await server.stop()
    }
}
