import AsyncHTTPClient
import Foundation
import HearthProviders

/// The Responses API's reply: streamed events (`response.output_item.added`/`.done`,
/// `response.reasoning_summary_text.delta`, `response.reasoning_text.delta`,
/// `response.output_text.delta`, `response.function_call_arguments.delta`,
/// `response.completed`/`.incomplete`/`.failed`, `error`) or one whole `response` object from a
/// server that ignores `stream: true`, mapped to ``HearthProviders/ChatEvent``s.
extension OpenAIResponsesWire {
    /// A piece of text in an output item (`summary_text`, `reasoning_text`, `output_text`,
    /// `refusal`).
    struct TextPiece: Decodable {
        var text: String?
        var refusal: String?
    }

    /// One output item (`reasoning`, `message`, `function_call`; others are skipped).
    struct Item: Decodable {
        var type: String
        var id: String?
        var callId: String?
        var name: String?
        var arguments: String?
        var summary: [TextPiece]?
        var content: [TextPiece]?
        var encryptedContent: String?

        private enum CodingKeys: String, CodingKey {
            case type, id, callId, name, arguments, summary, content, encryptedContent
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            type = try c.decode(String.self, forKey: .type)
            id = try? c.decodeIfPresent(String.self, forKey: .id)
            callId = try? c.decodeIfPresent(String.self, forKey: .callId)
            name = try? c.decodeIfPresent(String.self, forKey: .name)
            arguments = try? c.decodeIfPresent(String.self, forKey: .arguments)
            summary = try? c.decodeIfPresent([TextPiece].self, forKey: .summary)
            content = try? c.decodeIfPresent([TextPiece].self, forKey: .content)
            encryptedContent = try? c.decodeIfPresent(String.self, forKey: .encryptedContent)
        }

        /// A reasoning item's text: its summaries (joined by a blank line), else its content.
        var reasoningText: String {
            let summaries = (summary ?? []).compactMap(\.text).filter { !$0.isEmpty }
            if !summaries.isEmpty { return summaries.joined(separator: "\n\n") }
            return (content ?? []).compactMap(\.text).joined()
        }
    }

    /// The error object of `response.failed` and of an `error` event.
    struct ErrorPayload: Decodable {
        var code: String?
        var message: String?
        var type: String?
    }

    /// `usage`.
    struct UsagePayload: Decodable {
        struct InputDetails: Decodable { var cachedTokens: Int? }
        struct OutputDetails: Decodable { var reasoningTokens: Int? }
        var inputTokens: Int?
        var outputTokens: Int?
        var inputTokensDetails: InputDetails?
        var outputTokensDetails: OutputDetails?
    }

    /// A `response` object (whole, or in `response.completed`/`.incomplete`/`.failed`).
    struct ResponseObject: Decodable {
        struct Incomplete: Decodable { var reason: String? }
        var status: String?
        var output: [Item]?
        var usage: UsagePayload?
        var incompleteDetails: Incomplete?
        var error: ErrorPayload?
    }

    /// One streamed event's data.
    struct Event: Decodable {
        var type: String
        var delta: String?
        var outputIndex: Int?
        var summaryIndex: Int?
        var item: Item?
        var response: ResponseObject?
        // An `error` event's fields (and, in older servers, a nested `error`).
        var code: String?
        var message: String?
        var error: ErrorPayload?
    }

    /// What the stream has said so far.
    struct ReplyState {
        let provider: String
        var calls = StreamedToolCalls()
        var done = false
        /// The output index of the open reasoning item and what it streamed.
        private var reasoningIndex: Int?
        private var reasoningText = ""
        private var reasoningOpen = false
        /// Which kind of delta the open item streams (summary or content): the first wins, so an
        /// item that streams both is not shown twice.
        private var reasoningKind: String?
        private var summaryIndex: Int?
        /// Output indexes of message items whose text streamed, and of calls whose arguments did.
        private var streamedText: Set<Int> = []
        private var streamedArguments: Set<Int> = []

        init(provider: String) {
            self.provider = provider
        }

        /// Handles one event.
        mutating func handle(_ event: Event, sink: EventSink, failures: HTTPFailureMapper) throws {
            let index = event.outputIndex ?? 0
            switch event.type {
            case "response.output_item.added":
                guard let item = event.item else { return }
                if reasoningOpen { endReasoning(id: nil, encrypted: nil, sink: sink) }
                switch item.type {
                case "reasoning":
                    reasoningIndex = index
                case "function_call":
                    try calls.add(wireIndex: index, id: item.callId, name: item.name, arguments: nil, sink: sink, provider: provider)
                default:
                    break
                }
            case "response.reasoning_summary_text.delta":
                addReasoning(event.delta ?? "", kind: "summary", summaryIndex: event.summaryIndex, sink: sink)
            case "response.reasoning_text.delta":
                addReasoning(event.delta ?? "", kind: "content", summaryIndex: nil, sink: sink)
            case "response.output_text.delta", "response.refusal.delta":
                if reasoningOpen { endReasoning(id: nil, encrypted: nil, sink: sink) }
                streamedText.insert(index)
                sink.text(event.delta ?? "")
            case "response.function_call_arguments.delta":
                streamedArguments.insert(index)
                try calls.add(wireIndex: index, id: nil, name: nil, arguments: event.delta ?? "", sink: sink, provider: provider)
            case "response.output_item.done":
                guard let item = event.item else { return }
                try finishItem(item, index: index, sink: sink)
            case "response.completed", "response.incomplete":
                try complete(event.response, sink: sink)
            case "response.failed":
                let error = event.response?.error
                throw failures.streamError(
                    type: error?.type ?? error?.code, code: error?.code, message: error?.message ?? "The response failed.")
            case "error":
                let code = event.code ?? event.error?.code
                throw failures.streamError(
                    type: event.error?.type ?? code, code: code,
                    message: event.message ?? event.error?.message ?? "The server reported an error.")
            default:
                break  // created, in_progress, content_part and *.done text events: nothing new
            }
        }

        /// An item is complete: a reasoning item ends its part with its `id` and
        /// `encrypted_content` (its text sent first when none streamed); a call or message
        /// whose pieces did not stream is sent whole.
        mutating func finishItem(_ item: Item, index: Int, sink: EventSink) throws {
            switch item.type {
            case "reasoning":
                if !reasoningOpen || reasoningIndex != index {
                    if reasoningOpen { endReasoning(id: nil, encrypted: nil, sink: sink) }
                    reasoningIndex = index
                    addReasoning(item.reasoningText, kind: "whole", summaryIndex: nil, sink: sink)
                }
                endReasoning(id: item.id, encrypted: item.encryptedContent, sink: sink, always: true)
            case "function_call":
                guard !streamedArguments.contains(index) else { return }
                streamedArguments.insert(index)
                try calls.add(
                    wireIndex: index, id: item.callId, name: item.name, arguments: item.arguments ?? "", sink: sink, provider: provider)
            case "message":
                guard !streamedText.contains(index) else { return }
                streamedText.insert(index)
                for piece in item.content ?? [] { sink.text(piece.text ?? piece.refusal ?? "") }
            default:
                break
            }
        }

        private mutating func addReasoning(_ delta: String, kind: String, summaryIndex: Int?, sink: EventSink) {
            if reasoningOpen, let known = reasoningKind, known != kind { return }
            reasoningKind = kind
            if let summaryIndex, let previous = self.summaryIndex, summaryIndex != previous, !reasoningText.isEmpty {
                reasoningText += "\n\n"
                sink.reasoning("\n\n")
            }
            if let summaryIndex { self.summaryIndex = summaryIndex }
            reasoningOpen = true
            guard !delta.isEmpty else { return }
            reasoningText += delta
            sink.reasoning(delta)
        }

        /// Ends the open reasoning part; with `always`, a part with no text is sent too (an item
        /// with only encrypted content must still go back on the next turn).
        private mutating func endReasoning(id: String?, encrypted: String?, sink: EventSink, always: Bool = false) {
            defer {
                reasoningOpen = false
                reasoningText = ""
                reasoningKind = nil
                summaryIndex = nil
                reasoningIndex = nil
            }
            guard always || !reasoningText.isEmpty else { return }
            guard !reasoningText.isEmpty || id != nil || encrypted != nil else { return }
            sink.reasoningEnded(ReasoningPart(text: reasoningText, encryptedContent: encrypted, id: id, provider: provider))
        }

        /// The end of the reply: usage (with cached and reasoning tokens) and the finish reason
        /// (`length` for an answer cut at `max_output_tokens`), then the consumer's stream ends.
        mutating func complete(_ response: ResponseObject?, sink: EventSink) throws {
            if reasoningOpen { endReasoning(id: nil, encrypted: nil, sink: sink) }
            try calls.finish(sink: sink, provider: provider)
            done = true
            if let usage = response?.usage, let prompt = usage.inputTokens, let completion = usage.outputTokens {
                var figures = sink.usage(prompt: prompt, completion: completion, cached: usage.inputTokensDetails?.cachedTokens)
                figures.reasoningTokens = usage.outputTokensDetails?.reasoningTokens
                sink.yield(.usage(figures))
            }
            let finish: FinishReason
            if response?.status == "incomplete", response?.incompleteDetails?.reason == "max_output_tokens" {
                finish = .length
            } else {
                finish = calls.count > 0 ? .toolCalls : .stop
            }
            sink.yield(.finished(finish))
            sink.finish()
        }
    }

    static let decoder = JSONDecoder.snakeCase

    /// Reads a 2xx response: an event stream, or one JSON `response` object from servers that
    /// ignore `stream: true`. Anything else is ``ProviderError/Code/decoding``.
    static func readReply(
        _ response: HTTPClientResponse, sink: EventSink, watchdog: IdleWatchdog, failures: HTTPFailureMapper
    ) async throws {
        var state = ReplyState(provider: failures.provider)
        if response.contentType.contains("application/json") {
            let body = try await OpenAIWire.collect(response.body, limit: 16 << 20, watchdog: watchdog, provider: failures.provider)
            let whole = try failures.decode(
                ResponseObject.self, from: Data(body.readableBytesView), decoder: decoder, what: "The response")
            try readWhole(whole, state: &state, sink: sink, failures: failures)
            return
        }
        try failures.requireEventStream(response.contentType)
        try await ServerSentEventParser.read(response.body, watchdog: watchdog, isDone: { state.done }) { event in
            let data = event.data.trimmingCharacters(in: .whitespaces)
            if data.isEmpty || data == "[DONE]" { return }
            let decoded = try failures.decode(Event.self, from: Data(data.utf8), decoder: decoder, what: "An event of the reply")
            try state.handle(decoded, sink: sink, failures: failures)
        }
        if state.done { return }
        throw ProviderError(
            .network, provider: failures.provider, message: "The connection closed before the response was complete.")
    }

    /// A whole `response` object: its items in order, then its status.
    static func readWhole(
        _ whole: ResponseObject, state: inout ReplyState, sink: EventSink, failures: HTTPFailureMapper
    ) throws {
        if whole.status == "failed" {
            throw failures.streamError(
                type: whole.error?.type ?? whole.error?.code, code: whole.error?.code,
                message: whole.error?.message ?? "The response failed.")
        }
        for (index, item) in (whole.output ?? []).enumerated() {
            if item.type == "function_call" {
                try state.handle(
                    Event(type: "response.output_item.added", outputIndex: index, item: item), sink: sink, failures: failures)
            }
            try state.finishItem(item, index: index, sink: sink)
        }
        try state.complete(whole, sink: sink)
    }
}
