import Crypto
import Foundation
import HearthProviders

/// Exact-match answers for deterministic requests (temperature 0, or a fixed seed), kept for a
/// TTL, at most `maxEntries` of them (the least recently used are dropped first).
///
/// The key is the SHA-256 of the normalised request: the route, the endpoint, the messages or
/// prompt (tool calls and tool results included), every sampling option and the tools (their
/// definitions, the tool choice, parallel calls), but not `stream` — a streamed and a whole
/// answer to the same request share an entry, and a hit is replayed in the form asked for. An
/// answer that calls tools is cached like text; a hit replays its calls with fresh call ids.
final class ResponseCache: @unchecked Sendable {
    // `@unchecked Sendable`: `entries` and `order` are only touched under `lock`.
    struct Answer: Sendable {
        var text: String
        /// The answer's tool calls (empty for a text answer).
        var toolCalls: [ToolCall] = []
        var usage: Usage
        var reason: FinishReason
        var servedBy: String
        /// The answer's reasoning parts (replayed before its text).
        var reasoning: [ReasoningPart] = []

        /// Bytes held: the text, the calls' names and arguments, the reasoning.
        var size: Int {
            text.utf8.count + toolCalls.reduce(0) { $0 + $1.name.utf8.count + $1.arguments.utf8.count }
                + reasoning.reduce(0) { $0 + $1.text.utf8.count + ($1.signature?.utf8.count ?? 0) + ($1.encryptedContent?.utf8.count ?? 0) }
        }
    }

    private struct Entry {
        var answer: Answer
        var expires: Date
        var used: UInt64
    }

    let ttl: Double
    let maxEntries: Int
    let maxBytes: Int
    /// Whether clients share entries (see ``GatewayConfiguration/Cache/shared``).
    let shared: Bool
    private var bytes = 0
    private let clock: GatewayClock
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]
    private var tick: UInt64 = 0

    init(_ settings: GatewayConfiguration.Cache, clock: GatewayClock) {
        ttl = settings.ttlSeconds
        maxEntries = settings.maxEntries
        maxBytes = settings.maxBytes
        shared = settings.shared
        self.clock = clock
    }

    /// Entries held now (expired ones included until they are looked up or evicted).
    var count: Int { lock.withLock { entries.count } }

    /// The cache key of a job on a route for a client (nil when the cache is shared between
    /// clients), or nil when the request is not deterministic.
    static func key(route: String, client: String?, job: GenerationJob) -> String? {
        let options = job.options
        // Several choices (n > 1) are asked for their variety: never served from the cache.
        guard options.temperature == 0 || options.seed != nil, job.logprobs == nil, job.choices == 1 else { return nil }
        var input: JSONValue
        switch job.input {
        case .chat(let messages):
            input = [
                "chat": .array(
                    messages.map { message in
                        [
                            .string(message.role.rawValue), .string(message.content), .optional(message.toolCallID),
                            .array(message.toolCalls.map { [.string($0.id), .string($0.name), .string($0.arguments)] }),
                            // Reasoning sent back changes what a cloud (and its signature checks) answers.
                            .array(message.reasoning.map { [.string($0.text), .optional($0.signature), .optional($0.encryptedContent), .optional($0.redactedData)] }),
                        ]
                    })
            ]
        case .text(let text):
            input = ["text": .string(text)]
        }
        func number(_ value: Double?) -> JSONValue { value.map { .number($0) } ?? .null }
        func integer(_ value: Int?) -> JSONValue { value.map { .int($0) } ?? .null }
        let normalised: JSONValue = [
            "route": .string(route), "client": .optional(client), "endpoint": .string(job.endpoint.rawValue), "input": input,
            "temperature": number(options.temperature), "top_p": number(options.topP), "top_k": integer(options.topK),
            "min_p": number(options.minP), "max_tokens": integer(options.maxTokens),
            "stop": .array(options.stop.map { .string($0) }), "seed": integer(options.seed),
            "repetition_penalty": number(options.repetitionPenalty), "presence_penalty": number(options.presencePenalty),
            "frequency_penalty": number(options.frequencyPenalty),
            "logit_bias": .array(options.logitBias.sorted { $0.key < $1.key }.map { [integer(Int($0.key)), number($0.value)] }),
            "ignore_eos": options.ignoreEOS.map { .bool($0) } ?? .null,
            // A JSON answer is not a text answer: the format (schema text included) is part of the key.
            "response_format": options.constrainedFormat.map { .string(String(describing: $0)) } ?? .null,
            // Tools change the answer: their definitions (schema text as sent), the choice, parallel calls.
            "tools": .array(
                options.tools.map { [.string($0.name), .optional($0.description), .string($0.parameters), $0.strict.map { .bool($0) } ?? .null] }),
            // Variables of the chat template change the prompt.
            "chat_template_kwargs": .optional(options.chatTemplateKwargs),
            "tool_choice": .optional(options.toolChoice?.caseKey), "parallel_tool_calls": options.parallelToolCalls.map { .bool($0) } ?? .null,
            // Reasoning on or off, its effort and budget change the answer (and whether it has reasoning).
            "reasoning": options.reasoning.map { r in
                [.bool(r.enabled), .optional(r.effort?.rawValue), integer(r.budgetTokens), r.summary.map { .bool($0) } ?? .null]
            } ?? .null,
        ]
        // Sorted keys: the encoder's object order is not stable from one value to the next.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(normalised) else { return nil }
        return Hex.encode(SHA256.hash(data: data))
    }

    /// The answer stored under `key`, when present and not expired.
    func lookup(_ key: String) -> Answer? {
        let now = clock.now()
        return lock.withLock {
            guard var entry = entries[key] else { return nil }
            guard entry.expires > now else {
                bytes -= entry.answer.size
                entries[key] = nil
                return nil
            }
            tick += 1
            entry.used = tick
            entries[key] = entry
            return entry.answer
        }
    }

    /// Stores an answer, evicting expired entries and then the least recently used beyond the bound.
    func store(_ key: String, _ answer: Answer) {
        let now = clock.now()
        lock.withLock {
            tick += 1
            if let old = entries.removeValue(forKey: key) { bytes -= old.answer.size }
            guard answer.size <= maxBytes else { return }
            entries[key] = Entry(answer: answer, expires: now.addingTimeInterval(ttl), used: tick)
            bytes += answer.size
            guard entries.count > maxEntries || bytes > maxBytes else { return }
            for (key, entry) in entries where entry.expires <= now {
                bytes -= entry.answer.size
                entries[key] = nil
            }
            while entries.count > maxEntries || bytes > maxBytes, let oldest = entries.min(by: { $0.value.used < $1.value.used }) {
                bytes -= oldest.value.answer.size
                entries[oldest.key] = nil
            }
        }
    }
}

extension ToolChoice {
    /// The choice as one string for the cache key (`auto`, `none`, `required`, `named:NAME`:
    /// a tool called `required` is not the choice `required`).
    var caseKey: String {
        switch self {
        case .named(let name): return "named:" + name
        default: return description
        }
    }
}
