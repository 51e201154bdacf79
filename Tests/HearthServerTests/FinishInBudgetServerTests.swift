import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// Structured answers end complete within `max_tokens` through the server (issue 59): on a
/// random-weight model that wanders inside an open string, every answer with the rule is valid
/// JSON with `finish_reason` `stop` and says in `usage.budget_shaped_tokens` that the budget
/// shaped it; `finish_in_budget: false` keeps the cut (`length`).
@Suite(.serialized) struct FinishInBudgetServerTests {
    static var schema: [String: Any] { [
        "type": "object", "properties": ["note": ["type": "string"]], "required": ["note"], "additionalProperties": false,
    ] }

    @Test func structuredAnswersEndCompleteWithinMaxTokens() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            var cutWithout = 0
            for seed in 1...4 {
                for rule in [true, false] {
                    var body: [String: Any] = [
                        "model": "tiny", "messages": [["role": "user", "content": "Write a note as JSON."]], "temperature": 1.0,
                        "seed": seed, "max_tokens": 24,
                        "response_format": ["type": "json_schema", "json_schema": ["name": "note", "schema": Self.schema]],
                    ]
                    if !rule { body["finish_in_budget"] = false }
                    let reply = try await harness.send("/v1/chat/completions", json: body)
                    #expect(reply.status == 200, "\(reply.body)")
                    let choice = (reply.json["choices"] as? [[String: Any]])?.first
                    let text = (choice?["message"] as? [String: Any])?["content"] as? String ?? ""
                    let usage = reply.json["usage"] as? [String: Any]
                    if rule {
                        #expect(choice?["finish_reason"] as? String == "stop", "seed \(seed): \(text)")
                        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
                        #expect(object?["note"] is String, "seed \(seed): \(text)")
                        if choice?["finish_reason"] as? String == "stop", let shaped = usage?["budget_shaped_tokens"] as? Int {
                            #expect(shaped > 0)
                        }
                    } else {
                        #expect(usage?["budget_shaped_tokens"] == nil)
                        cutWithout += choice?["finish_reason"] as? String == "length" ? 1 : 0
                    }
                }
            }
            #expect(cutWithout > 0, "the model wanders: without the rule some answers are cut")
            #expect(try await harness.metric("hearth_budget_shaped_answers_total") ?? 0 > 0)
            try await harness.stop()
        }
    }
}
