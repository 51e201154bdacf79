import Foundation
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// LocalProvider enforces response formats on a random-weight fixture model: the typed call
/// decodes, sequences decoded together each keep their own constraint, a continued partial
/// answer finishes under the schema, and a continuation that cannot begin the format is refused.
@Suite struct LocalProviderStructuredTests {
    struct Reading: Codable, Equatable {
        var sensor: String
        var value: Int
        var ok: Bool
    }

    static let schema = #"{"type":"object","properties":{"sensor":{"enum":["a1","b2","c3"]},"value":{"type":"integer","minimum":-50,"maximum":50},"ok":{"type":"boolean"}},"required":["sensor","value","ok"],"additionalProperties":false}"#

    @Test func typedCallDecodesWhateverTheWeights() async throws {
        let provider = try LocalProviderTests.provider(context: 256, parallel: 3)
        try await withThrowingTaskGroup(of: Reading.self) { group in
            for seed in 1...3 {
                group.addTask {
                    try await provider.generate(
                        Reading.self, schema: Self.schema, prompt: "A reading.",
                        options: ChatOptions(temperature: 1.0, maxTokens: 80, seed: seed))
                }
            }
            for try await reading in group {
                #expect(["a1", "b2", "c3"].contains(reading.sensor) && (-50...50).contains(reading.value))
            }
        }
    }

    @Test func formatsRunSideBySideEachWithItsOwnConstraint() async throws {
        let provider = try LocalProviderTests.provider(context: 256, parallel: 3)
        let formats: [ResponseFormat] = [.jsonSchema(name: "r", schema: Self.schema), .regex("[0-9]{4}"), .text]
        let replies = try await withThrowingTaskGroup(of: (Int, ChatResponse).self) { group in
            for (index, format) in formats.enumerated() {
                group.addTask {
                    // Room for a random model's whitespace between tokens (bounded per gap, not per answer).
                    let options = ChatOptions(temperature: 1.0, maxTokens: 200, seed: 5, responseFormat: format)
                    return (index, try await provider.complete(ChatRequest(messages: [.user("go")], options: options)))
                }
            }
            var replies: [Int: ChatResponse] = [:]
            for try await (index, reply) in group { replies[index] = reply }
            return replies
        }
        let json = try #require(replies[0])
        #expect(json.finishReason == .stop, "\(json.text)")
        #expect((try? JSONText.decode(Reading.self, from: json.text)) != nil, "\(json.text)")
        let digits = try #require(replies[1])
        #expect(digits.finishReason == .stop && digits.text.wholeMatch(of: /[0-9]{4}/) != nil, "\(digits.text)")
    }

    @Test func continuationFinishesUnderTheSchemaOrIsRefused() async throws {
        let provider = try LocalProviderTests.provider(context: 256)
        let format = ResponseFormat.jsonSchema(name: "r", schema: Self.schema)
        let options = ChatOptions(temperature: 1.0, maxTokens: 60, seed: 3, responseFormat: format)
        let partial = #"{"sensor":"b2","value":"#
        let rest = try await provider.complete(ChatRequest(messages: [.user("go")], options: options, continuation: partial))
        let whole = try JSONText.decode(Reading.self, from: partial + rest.text)
        #expect(whole.sensor == "b2")

        await #expect {
            _ = try await provider.complete(ChatRequest(messages: [.user("go")], options: options, continuation: #"{"colour":"#))
        } throws: { error in
            (error as? ProviderError)?.code == .invalidRequest
        }
    }

    @Test func cutAnswersSayLength() async throws {
        let provider = try LocalProviderTests.provider(context: 256)
        let options = ChatOptions(
            temperature: 1.0, maxTokens: 4, seed: 1, responseFormat: .jsonSchema(name: "r", schema: Self.schema))
        let reply = try await provider.complete(ChatRequest(messages: [.user("go")], options: options))
        #expect(reply.finishReason == .length)
        await #expect(throws: StructuredOutputError.self) {
            _ = try await provider.generate(Reading.self, schema: Self.schema, prompt: "go", options: options)
        }
    }
}
