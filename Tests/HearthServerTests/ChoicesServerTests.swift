import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// `n` > 1 on chat and text completions: one prompt, several choices (choice `i` sampled with
/// `seed + i`), each with its index, whole and streamed; usage counts the prompt once.
@Suite struct ChoicesServerTests {
    static func chat(_ n: Int?, seed: Int, stream: Bool = false) -> [String: Any] {
        var body: [String: Any] = [
            "model": "tiny", "messages": [["role": "user", "content": "Tell me a story."]], "max_tokens": 8, "temperature": 1,
            "seed": seed, "logprobs": true, "stream": stream,
        ]
        if let n { body["n"] = n }
        if stream { body["stream_options"] = ["include_usage": true] }
        return body
    }

    static func texts(_ json: [String: Any]) -> [Int: String] {
        var texts: [Int: String] = [:]
        for choice in json["choices"] as? [[String: Any]] ?? [] {
            let index = choice["index"] as? Int ?? -1
            texts[index] = ((choice["message"] as? [String: Any])?["content"] as? String) ?? (choice["text"] as? String) ?? ""
        }
        return texts
    }

    @Test func chatChoicesWholeAndStreamed() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            let single = try await harness.send("/v1/chat/completions", json: Self.chat(nil, seed: 6))
            #expect(single.status == 200, "\(single.body)")
            let singleUsage = try #require(single.json["usage"] as? [String: Any])
            let promptTokens = try #require(singleUsage["prompt_tokens"] as? Int)

            let answer = try await harness.send("/v1/chat/completions", json: Self.chat(3, seed: 5))
            #expect(answer.status == 200, "\(answer.body)")
            let choices = try #require(answer.json["choices"] as? [[String: Any]])
            #expect(choices.map { $0["index"] as? Int } == [0, 1, 2])
            let texts = Self.texts(answer.json)
            // Choice 1 of seed 5 is the single reply of seed 6.
            #expect(texts[1] == Self.texts(single.json)[0], "\(texts) vs \(single.body)")
            #expect(Set(texts.values).count > 1, "three choices, one text: \(texts)")
            let usage = try #require(answer.json["usage"] as? [String: Any])
            #expect(usage["prompt_tokens"] as? Int == promptTokens, "the prompt is counted once")
            let generated = choices.reduce(0) { $0 + ((($1["logprobs"] as? [String: Any])?["content"] as? [Any])?.count ?? 0) }
            #expect(usage["completion_tokens"] as? Int == generated)
            #expect(choices.allSatisfy { ($0["finish_reason"] as? String) != nil })

            // Streamed: every chunk names its choice; each choice ends once; usage once at the end.
            let streamed = try await harness.send("/v1/chat/completions", json: Self.chat(3, seed: 5, stream: true))
            #expect(streamed.status == 200)
            let (payloads, wellFramed) = sseData(streamed.body)
            #expect(wellFramed && payloads.last == "[DONE]")
            var streamedTexts: [Int: String] = [:]
            var finishes: [Int: Int] = [:]
            var usages: [[String: Any]] = []
            for payload in payloads.dropLast() {
                let chunk = parse(payload)
                if let chunkUsage = chunk["usage"] as? [String: Any] { usages.append(chunkUsage) }
                for choice in chunk["choices"] as? [[String: Any]] ?? [] {
                    let index = try #require(choice["index"] as? Int)
                    let delta = choice["delta"] as? [String: Any]
                    streamedTexts[index, default: ""] += (delta?["content"] as? String) ?? ""
                    if choice["finish_reason"] as? String != nil { finishes[index, default: 0] += 1 }
                }
            }
            #expect(streamedTexts == texts)
            #expect(finishes == [0: 1, 1: 1, 2: 1])
            #expect(usages.count == 1)
            #expect(usages.first?["prompt_tokens"] as? Int == promptTokens)
            #expect(usages.first?["completion_tokens"] as? Int == generated)
            try await harness.stop()
        }
    }

    @Test func completionChoicesAndRefusals() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            let body: [String: Any] = ["model": "tiny", "prompt": "Once upon a time", "max_tokens": 6, "temperature": 1, "seed": 11, "n": 2]
            let answer = try await harness.send("/v1/completions", json: body)
            #expect(answer.status == 200, "\(answer.body)")
            #expect((answer.json["choices"] as? [[String: Any]])?.map { $0["index"] as? Int } == [0, 1])
            var second = body
            second["n"] = 1
            second["seed"] = 12
            let alone = try await harness.send("/v1/completions", json: second)
            #expect(Self.texts(answer.json)[1] == Self.texts(alone.json)[0])

            for (field, value) in [("n", 0), ("n", 9), ("best_of", 2)] {
                var bad = body
                bad[field] = value
                let refused = try await harness.send("/v1/completions", json: bad)
                #expect(refused.status == 400, "\(field) \(value): \(refused.body)")
                #expect((refused.json["error"] as? [String: Any])?["param"] as? String == field, "\(refused.body)")
            }
            var chatBad = Self.chat(9, seed: 1)
            chatBad["n"] = 9
            let refused = try await harness.send("/v1/chat/completions", json: chatBad)
            #expect(refused.status == 400 && refused.body.contains("\"n\""), "\(refused.body)")
            try await harness.stop()
        }
    }
}
