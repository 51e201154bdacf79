import Foundation
import HearthConstraints
import HearthServer
import HearthTestSupport
import Testing

/// Issue 55's grammar and schema reproductions against a real server on loopback: each ends in
/// a 400 that names the bound, and the server keeps answering (before, the rule chains ended
/// the process with SIGSEGV and the patterns took gigabytes).
@Suite(.serialized) struct CompileBoundsServerTests {
    /// `aN ::= aN+1 "x" | "y"` for `count` rules, in either order.
    static func chain(_ count: Int, deepestFirst: Bool) -> String {
        var lines = (0..<count - 1).map { "a\($0) ::= a\($0 + 1) \"x\" | \"y\"" }
        lines.append("a\(count - 1) ::= \"y\"")
        if deepestFirst { lines.reverse() }
        return "root ::= a0\n" + lines.joined(separator: "\n")
    }

    @Test func hostileGrammarsAndSchemasAreRefusedAndTheServerLives() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            func error(_ reply: ServerHarness.Reply) -> [String: Any] { reply.json["error"] as? [String: Any] ?? [:] }
            for deepestFirst in [false, true] {
                let chat = try await harness.send(
                    "/v1/chat/completions",
                    json: [
                        "model": "tiny", "messages": [["role": "user", "content": "hi"]], "max_tokens": 4,
                        "grammar": Self.chain(40_000, deepestFirst: deepestFirst),
                    ])
                #expect(chat.status == 400, "\(chat.body.prefix(300))")
                #expect(error(chat)["param"] as? String == "grammar")
                #expect(error(chat)["code"] as? String == "response_format_too_complex")
                #expect((error(chat)["message"] as? String)?.contains("more than \(CompileBudget.standard.maxRules) rules") == true)
                let completion = try await harness.send(
                    "/v1/completions",
                    json: ["model": "tiny", "prompt": "x", "max_tokens": 4, "grammar": Self.chain(100_000, deepestFirst: deepestFirst)])
                #expect(completion.status == 400, "\(completion.body.prefix(300))")
                #expect(error(completion)["code"] as? String == "response_format_too_complex")
            }
            // Nine 4096×48 patterns: refused by the symbol budget, naming the part.
            var properties: [String: Any] = [:]
            for i in 0..<9 { properties["p\(i)"] = ["type": "string", "pattern": "^([a-z]{4096}){48}$"] }
            let schema: [String: Any] = ["type": "object", "properties": properties]
            let patterns = try await harness.send(
                "/v1/chat/completions",
                json: [
                    "model": "tiny", "messages": [["role": "user", "content": "hi"]], "max_tokens": 4,
                    "response_format": ["type": "json_schema", "json_schema": ["name": "p", "schema": schema]],
                ])
            #expect(patterns.status == 400, "\(patterns.body.prefix(300))")
            #expect((error(patterns)["message"] as? String)?.contains("/properties/p") == true, "\(patterns.body.prefix(300))")
            // More tools than a request may offer.
            let tools = (0...RequestLimits.maxTools).map { i in
                ["type": "function", "function": ["name": "t\(i)", "parameters": ["type": "object"]]] as [String: Any]
            }
            let many = try await harness.send(
                "/v1/chat/completions",
                json: ["model": "tiny", "messages": [["role": "user", "content": "hi"]], "max_tokens": 4, "tools": tools])
            #expect(many.status == 400)
            #expect(error(many)["param"] as? String == "tools")
            // Still alive, and still answering under a grammar.
            let live = try await harness.send(.GET, "/live")
            #expect(live.status == 200)
            let ok = try await harness.send(
                "/v1/completions",
                json: ["model": "tiny", "prompt": "x", "max_tokens": 8, "grammar": #"root ::= ("yes" | "no") "!""#])
            #expect(ok.status == 200, "\(ok.body.prefix(300))")
            try await harness.stop()
        }
    }
}
