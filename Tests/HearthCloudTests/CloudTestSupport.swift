import Foundation
import HearthFakeServers
import HearthProviders
import Synchronization

@testable import HearthCloud

/// What a stream produced: its events and the error that ended it.
struct Collected: Sendable {
    var events: [ChatEvent] = []
    var error: (any Error)?

    var text: String {
        events.reduce(into: "") { if case .textDelta(let delta) = $1 { $0 += delta } }
    }
    var providerError: ProviderError? { error as? ProviderError }
    var usage: Usage? {
        events.compactMap { if case .usage(let usage) = $0 { usage } else { nil } }.last
    }
    var finish: FinishReason? {
        events.compactMap { if case .finished(let reason) = $0 { reason } else { nil } }.last
    }
    var switches: [(from: String, to: String, reason: ProviderError)] {
        events.compactMap { if case .switchedProvider(let from, let to, let reason) = $0 { (from, to, reason) } else { nil } }
    }
    var servedBy: [String] {
        events.compactMap { if case .servedBy(let id) = $0 { id } else { nil } }
    }
    var deltas: [String] {
        events.compactMap { if case .textDelta(let text) = $0 { text } else { nil } }
    }
    /// The tool-call events, in order.
    var toolSteps: [ToolCallEvent] {
        events.compactMap { if case .toolCall(let step) = $0 { step } else { nil } }
    }
    /// The tool calls the events reassemble to.
    var toolCalls: [ToolCall] {
        var collector = ToolCallCollector()
        for step in toolSteps { collector.add(step) }
        return collector.calls
    }
}

/// Collects a stream; gives up (and records that) after `limit`, so a broken test cannot hang.
func collect(_ stream: AsyncThrowingStream<ChatEvent, Error>, limit: Duration = .seconds(15)) async -> Collected {
    let box = CollectedBox()
    let finished = await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            do {
                for try await event in stream { box.value.withLock { $0.events.append(event) } }
            } catch {
                box.value.withLock { $0.error = error }
            }
            return true
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
    var result = box.value.withLock { $0 }
    if !finished { result.error = TestTimedOut() }
    return result
}

final class CollectedBox: Sendable {
    let value = Mutex(Collected())
}

struct TestTimedOut: Error {}

/// Short timeouts and quick retries for tests.
let testTimeouts = CloudTimeouts(connect: .seconds(2), idle: .seconds(3))
let quickRetry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(10), maxDelay: .milliseconds(40))

/// A stand-in for the on-device model: answers with a closure of the request and records requests.
final class RecordingProvider: LanguageModelProvider {
    let id: String
    let answer: @Sendable (ChatRequest) -> String
    let requests = Mutex<[ChatRequest]>([])

    init(_ id: String = "local", answer: @escaping @Sendable (ChatRequest) -> String) {
        self.id = id
        self.answer = answer
    }

    var availability: ProviderAvailability { get async { .available } }
    var lastRequest: ChatRequest? { requests.withLock { $0.last } }

    func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        requests.withLock { $0.append(request) }
        let text = answer(request)
        let id = id
        return AsyncThrowingStream { continuation in
            continuation.yield(.servedBy(id))
            for word in text.split(separator: " ", omittingEmptySubsequences: false).enumerated() {
                continuation.yield(.textDelta((word.offset == 0 ? "" : " ") + word.element))
            }
            continuation.yield(.finished(.stop))
            continuation.finish()
        }
    }
}

/// SSE lines for an OpenAI chat-completions stream of `pieces`, ending with a usage chunk and `[DONE]`.
func openAIStream(_ pieces: [String], finish: String = "stop", usage: (Int, Int)? = (12, 5)) -> String {
    var text = ""
    for piece in pieces {
        let chunk: [String: Any] = [
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "gpt-test",
            "choices": [["index": 0, "delta": ["content": piece], "finish_reason": NSNull()]],
        ]
        text += "data: \(jsonString(chunk))\n\n"
    }
    text +=
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"\(finish)\"}]}\n\n"
    if let usage {
        text +=
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":\(usage.0),\"completion_tokens\":\(usage.1),\"total_tokens\":\(usage.0 + usage.1),\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n"
    }
    text += "data: [DONE]\n\n"
    return text
}

func jsonString(_ object: Any) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}
