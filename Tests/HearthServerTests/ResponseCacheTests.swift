import Foundation
import HearthLocal
import HearthProviders
import Testing

@testable import HearthServer

/// The gateway's response cache on its own: which requests have a key and which keys are the
/// same, the TTL, and the entry and byte bounds (least recently used first, expired before that).
@Suite struct ResponseCacheTests {
    static func job(
        _ options: ChatOptions = ChatOptions(temperature: 0), input: LocalProvider.LocalInput? = nil,
        endpoint: Endpoint = .chatCompletions, stream: Bool = false, logprobs: Int? = nil, choices: Int = 1
    ) -> GenerationJob {
        var job = GenerationJob(
            endpoint: endpoint, input: input ?? .chat([ChatMessage(role: .user, content: "Hi")]), options: options, stream: stream,
            includeUsage: false, logprobs: logprobs, model: "m")
        job.choices = choices
        return job
    }

    static func key(_ job: GenerationJob, route: String = "local", client: String? = "a") -> String? {
        ResponseCache.key(route: route, client: client, job: job)
    }

    static func answer(_ text: String) -> ResponseCache.Answer {
        ResponseCache.Answer(text: text, usage: Usage(promptTokens: 1, completionTokens: 1), reason: .stop, servedBy: "local")
    }

    /// Only deterministic requests have a key: temperature 0 or a seed, no log-probabilities,
    /// one choice.
    @Test func onlyDeterministicRequestsAreCached() {
        #expect(Self.key(Self.job(ChatOptions(temperature: 0))) != nil)
        #expect(Self.key(Self.job(ChatOptions(temperature: 0.7, seed: 3))) != nil)
        #expect(Self.key(Self.job(ChatOptions(temperature: 0.7))) == nil)
        #expect(Self.key(Self.job(ChatOptions())) == nil, "no temperature is the provider's default: sampling")
        #expect(Self.key(Self.job(logprobs: 0)) == nil)
        #expect(Self.key(Self.job(choices: 2)) == nil)
    }

    /// The same request has the same key however often it is built, streamed or not; every
    /// field that changes the answer changes the key.
    @Test func everyFieldThatChangesTheAnswerChangesTheKey() throws {
        let base = ChatOptions(temperature: 0, maxTokens: 16)
        let key = try #require(Self.key(Self.job(base)))
        #expect(Self.key(Self.job(base)) == key)
        #expect(Self.key(Self.job(base, stream: true)) == key, "a streamed and a whole answer share an entry")

        var variants: [(String, String?)] = []
        func vary(_ name: String, _ change: (inout ChatOptions) -> Void) {
            var options = base
            change(&options)
            variants.append((name, Self.key(Self.job(options))))
        }
        vary("temperature") { $0.temperature = 0.5; $0.seed = 2 }
        vary("seed") { $0.seed = 2 }
        vary("top_p") { $0.topP = 0.9 }
        vary("top_k") { $0.topK = 5 }
        vary("min_p") { $0.minP = 0.1 }
        vary("max_tokens") { $0.maxTokens = 17 }
        vary("stop") { $0.stop = ["\n"] }
        vary("repetition_penalty") { $0.repetitionPenalty = 1.1 }
        vary("presence_penalty") { $0.presencePenalty = 0.5 }
        vary("frequency_penalty") { $0.frequencyPenalty = 0.5 }
        vary("json_object") { $0.responseFormat = .jsonObject }
        vary("json_schema") { $0.responseFormat = .jsonSchema(JSONSchemaFormat(name: "s", schema: #"{"type":"object"}"#)) }
        vary("other schema") { $0.responseFormat = .jsonSchema(JSONSchemaFormat(name: "s", schema: #"{"type":"array"}"#)) }
        vary("tools") { $0.tools = [ToolDefinition(name: "f")] }
        vary("tool description") { $0.tools = [ToolDefinition(name: "f", description: "d")] }
        vary("tool_choice required") { $0.tools = [ToolDefinition(name: "f")]; $0.toolChoice = .required }
        vary("a tool named required") { $0.tools = [ToolDefinition(name: "f")]; $0.toolChoice = .named("required") }
        vary("parallel_tool_calls") { $0.parallelToolCalls = false }
        vary("logit_bias") { $0.logitBias = [5: 100] }
        vary("logit_bias value") { $0.logitBias = [5: -100] }
        vary("ignore_eos") { $0.ignoreEOS = true }
        variants.append(("route", Self.key(Self.job(base), route: "cloud")))
        variants.append(("client", Self.key(Self.job(base), client: "b")))
        variants.append(("shared", Self.key(Self.job(base), client: nil)))
        variants.append(("endpoint", Self.key(Self.job(base, endpoint: .messages))))
        variants.append(("content", Self.key(Self.job(base, input: .chat([ChatMessage(role: .user, content: "Hi!")])))))
        variants.append(("role", Self.key(Self.job(base, input: .chat([ChatMessage(role: .system, content: "Hi")])))))
        variants.append(("text input", Self.key(Self.job(base, input: .text("Hi")))))
        let call = ToolCall(id: "call_1", name: "f", arguments: "{}")
        variants.append(
            ("tool call", Self.key(Self.job(base, input: .chat([ChatMessage(role: .assistant, content: "Hi", toolCalls: [call])])))))
        variants.append(
            ("tool result", Self.key(Self.job(base, input: .chat([ChatMessage(role: .tool, content: "Hi", toolCallID: "call_1")])))))
        for (name, variant) in variants {
            #expect(variant != nil && variant != key, "\(name) did not change the key")
        }
        let keys = variants.compactMap(\.1)
        #expect(Set(keys).count == keys.count, "two different requests share a key")
    }

    @Test func entriesExpireAfterTheirTTL() {
        let clock = ManualClock(RateLimiterTests.noon)
        let cache = ResponseCache(.init(ttlSeconds: 10), clock: clock.clock)
        cache.store("k", Self.answer("cached"))
        #expect(cache.lookup("k")?.text == "cached")
        clock.advance(9.5)
        #expect(cache.lookup("k")?.text == "cached", "a lookup does not extend the TTL, and 9.5 s is inside it")
        clock.advance(0.5)
        #expect(cache.lookup("k") == nil)
        #expect(cache.count == 0, "an expired entry is dropped when looked up")
    }

    /// Beyond `maxEntries` the least recently used (looked up or stored) goes first.
    @Test func theLeastRecentlyUsedEntryIsEvicted() {
        let cache = ResponseCache(.init(maxEntries: 2), clock: ManualClock(RateLimiterTests.noon).clock)
        cache.store("a", Self.answer("A"))
        cache.store("b", Self.answer("B"))
        #expect(cache.lookup("a") != nil)
        cache.store("c", Self.answer("C"))
        #expect(cache.count == 2)
        #expect(cache.lookup("b") == nil && cache.lookup("a") != nil && cache.lookup("c") != nil)
    }

    /// Expired entries are dropped before any live one, however recently they were used.
    @Test func expiredEntriesGoBeforeLiveOnes() {
        let clock = ManualClock(RateLimiterTests.noon)
        let cache = ResponseCache(.init(ttlSeconds: 10, maxEntries: 2), clock: clock.clock)
        cache.store("a", Self.answer("A"))  // expires at +10
        clock.advance(5)
        cache.store("b", Self.answer("B"))  // expires at +15
        clock.advance(1)
        #expect(cache.lookup("a") != nil)  // a is now the most recently used
        clock.advance(6)  // +12: a has expired, b has not
        cache.store("c", Self.answer("C"))
        #expect(cache.lookup("b")?.text == "B", "the live, least recently used entry was evicted before the expired one")
        #expect(cache.lookup("c")?.text == "C")
        #expect(cache.count == 2)
    }

    /// The byte bound: an answer larger than it is never stored; beyond it the least recently
    /// used go; replacing an entry counts its bytes once.
    @Test func theByteBoundHolds() {
        let cache = ResponseCache(.init(maxBytes: 10), clock: ManualClock(RateLimiterTests.noon).clock)
        cache.store("big", Self.answer("eleven byte"))
        #expect(cache.lookup("big") == nil && cache.count == 0)
        cache.store("a", Self.answer("123456"))
        cache.store("a", Self.answer("654321"))
        cache.store("b", Self.answer("1234"))
        #expect(cache.count == 2, "six bytes replaced by six, then four: ten in all")
        cache.store("c", Self.answer("1"))
        #expect(cache.lookup("a") == nil && cache.lookup("b") != nil && cache.lookup("c") != nil)
        // Tool calls count too: their name and arguments.
        var withCall = Self.answer("")
        withCall.toolCalls = [ToolCall(id: "x", name: "fn", arguments: #"{"a":12345}"#)]
        #expect(withCall.size == 13)
        cache.store("call", withCall)
        #expect(cache.lookup("call") == nil)
    }
}
