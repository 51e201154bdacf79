import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// `logit_bias` changes what the local model generates (a +100 bias makes a token the greedy
/// choice), and malformed biases are 400s naming the field.
@Suite struct LogitBiasTests {
    @Test func aBiasedTokenIsChosenAndBadBiasesAreRefused() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            let pieces = try await harness.send("/tokenize", json: ["content": "zebra", "with_pieces": true])
            let first = try #require((pieces.json["tokens"] as? [[String: Any]])?.first)
            let id = try #require(first["id"] as? Int)
            let piece = try #require(first["piece"] as? String)
            func reply(_ bias: [String: Any]?) async throws -> String {
                var body: [String: Any] = [
                    "model": "tiny", "messages": [["role": "user", "content": "Say something."]], "max_tokens": 1, "temperature": 0,
                ]
                if let bias { body["logit_bias"] = bias }
                let answer = try await harness.send("/v1/chat/completions", json: body)
                #expect(answer.status == 200, "\(answer.body)")
                let message = (answer.json["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any]
                return (message?["content"] as? String) ?? ""
            }
            let plain = try await reply(nil)
            let favoured = try await reply(["\(id)": 100])
            let trimmed = piece.trimmingCharacters(in: .whitespaces)
            #expect(favoured.trimmingCharacters(in: .whitespaces) == trimmed, "\(favoured) vs piece \(piece)")
            #expect(plain.trimmingCharacters(in: .whitespaces) != trimmed, "the unbiased reply is already the piece: the test shows nothing")
            for bad: [String: Any] in [["abc": 1], ["\(id)": 101], ["-1": 1], ["99999999": 1]] {
                let refused = try await harness.send(
                    "/v1/chat/completions",
                    json: ["model": "tiny", "messages": [["role": "user", "content": "x"]], "max_tokens": 1, "logit_bias": bad])
                #expect(refused.status == 400, "\(bad): \(refused.body)")
                #expect(refused.body.contains("logit_bias"), "\(refused.body)")
            }
            try await harness.stop()
        }
    }

    /// `ignore_eos` (llama.cpp's and vLLM's extra): with the end token forced by a +100 bias the
    /// reply ends at once; with `ignore_eos` it runs to `max_tokens` (finish `length`), on both
    /// OpenAI endpoints. Refused on cloud routes (GatewayTests cover the route kinds).
    @Test func ignoreEOSRunsToMaxTokens() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            // The fixture's end token (config.json eos_token_id).
            let config = try JSONSerialization.jsonObject(
                with: Data(contentsOf: Fixtures.checkpoint("phi3-mha").appendingPathComponent("config.json"))) as? [String: Any]
            let eos = try #require(config?["eos_token_id"] as? Int)
            for path in ["/v1/chat/completions", "/v1/completions"] {
                func reply(ignoreEOS: Bool?) async throws -> (reason: String?, tokens: Int?) {
                    var body: [String: Any] = ["model": "tiny", "max_tokens": 6, "temperature": 0, "logit_bias": ["\(eos)": 100]]
                    if path == "/v1/completions" { body["prompt"] = "Once upon a time" } else {
                        body["messages"] = [["role": "user", "content": "Say something."]]
                    }
                    if let ignoreEOS { body["ignore_eos"] = ignoreEOS }
                    let answer = try await harness.send(path, json: body)
                    #expect(answer.status == 200, "\(answer.body)")
                    let choice = (answer.json["choices"] as? [[String: Any]])?.first
                    return (choice?["finish_reason"] as? String, (answer.json["usage"] as? [String: Any])?["completion_tokens"] as? Int)
                }
                let ended = try await reply(ignoreEOS: nil)
                #expect(ended.reason == "stop" && (ended.tokens ?? 99) <= 1, "\(path): \(ended)")
                #expect(try await reply(ignoreEOS: false) == ended, "\(path): false is the default")
                let ran = try await reply(ignoreEOS: true)
                #expect(ran.reason == "length" && ran.tokens == 6, "\(path): \(ran)")
            }
            let bad = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [["role": "user", "content": "x"]], "ignore_eos": "yes"])
            #expect(bad.status == 400 && bad.body.contains("ignore_eos"), "\(bad.body)")
            try await harness.stop()
        }
    }
}
