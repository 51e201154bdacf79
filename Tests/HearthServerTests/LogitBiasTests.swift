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
}
