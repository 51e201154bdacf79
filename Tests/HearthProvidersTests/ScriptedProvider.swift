import HearthProviders
import Synchronization

/// A provider that plays a script and records what it was asked, for router tests.
final class ScriptedProvider: LanguageModelProvider {
    enum Step: Sendable {
        case text(String)
        case usage(Usage)
        case finish(FinishReason)
        case state(DialogState)
        case tool(ToolCallEvent)
        case reasoning(String)
        case reasoningEnd(ReasoningPart)
        case fail(ProviderError)
        case failForeign
        /// Waits until cancelled (bounded to 10 s so a broken test cannot hang).
        case hang
    }

    let id: String
    let state: ProviderAvailability
    let script: @Sendable (ChatRequest) -> [Step]
    let requests = Mutex<[ChatRequest]>([])
    let terminations = Mutex<Int>(0)
    let prewarmError: ProviderError?
    let prewarmed = Mutex<Int>(0)

    init(
        _ id: String, availability: ProviderAvailability = .available, prewarmError: ProviderError? = nil,
        script: @escaping @Sendable (ChatRequest) -> [Step]
    ) {
        self.id = id
        self.state = availability
        self.script = script
        self.prewarmError = prewarmError
    }

    /// Answers `text` (split in words) and finishes.
    convenience init(_ id: String, answers text: String, availability: ProviderAvailability = .available) {
        self.init(id, availability: availability) { _ in
            text.split(separator: " ", omittingEmptySubsequences: false).enumerated().map {
                .text(($0.offset == 0 ? "" : " ") + $0.element)
            } + [.finish(.stop)]
        }
    }

    var availability: ProviderAvailability { get async { state } }

    var askedCount: Int { requests.withLock { $0.count } }
    var lastRequest: ChatRequest? { requests.withLock { $0.last } }

    func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        requests.withLock { $0.append(request) }
        let steps = script(request)
        let id = id
        return AsyncThrowingStream { continuation in
            let task = Task {
                continuation.yield(.servedBy(id))
                for step in steps {
                    switch step {
                    case .text(let text): continuation.yield(.textDelta(text))
                    case .usage(let usage): continuation.yield(.usage(usage))
                    case .finish(let reason): continuation.yield(.finished(reason))
                    case .state(let state): continuation.yield(.dialogState(state))
                    case .tool(let step): continuation.yield(.toolCall(step))
                    case .reasoning(let text): continuation.yield(.reasoningDelta(text))
                    case .reasoningEnd(let part): continuation.yield(.reasoningEnded(part))
                    case .fail(let error):
                        continuation.finish(throwing: error)
                        return
                    case .failForeign:
                        continuation.finish(throwing: CocoaLikeError())
                        return
                    case .hang:
                        try? await Task.sleep(for: .seconds(10))
                        continuation.finish(throwing: CancellationError())
                        return
                    }
                    await Task.yield()
                }
                continuation.finish()
            }
            continuation.onTermination = { [self] _ in
                task.cancel()
                terminations.withLock { $0 += 1 }
            }
        }
    }

    func prewarm(_ request: ChatRequest?) async throws {
        prewarmed.withLock { $0 += 1 }
        if let prewarmError { throw prewarmError }
    }
}

struct CocoaLikeError: Error {}

/// What a stream produced: its events and the error that ended it.
struct Collected {
    var events: [ChatEvent] = []
    var error: (any Error)?

    var text: String {
        events.reduce(into: "") { if case .textDelta(let delta) = $1 { $0 += delta } }
    }
    var providerError: ProviderError? { error as? ProviderError }
    var switches: [(from: String, to: String, reason: ProviderError)] {
        events.compactMap { if case .switchedProvider(let from, let to, let reason) = $0 { (from, to, reason) } else { nil } }
    }
    var servedBy: [String] {
        events.compactMap { if case .servedBy(let id) = $0 { id } else { nil } }
    }
    var finish: FinishReason? {
        events.compactMap { if case .finished(let reason) = $0 { reason } else { nil } }.last
    }
    /// A compact trace such as `served:a text:Hi switch:a>b finish:stop`.
    var trace: [String] {
        events.map { event in
            switch event {
            case .servedBy(let id): "served:\(id)"
            case .textDelta(let text): "text:\(text)"
            case .switchedProvider(let from, let to, _): "switch:\(from)>\(to)"
            case .finished(let reason): "finish:\(reason.rawValue)"
            case .usage: "usage"
            case .contextTruncated(let count): "truncated:\(count)"
            case .dialogState(let state): "state:\(state)"
            case .toolCall(let step): "tool:\(step)"
            case .reasoningDelta(let text): "reasoning:\(text)"
            case .reasoningEnded(let part): "reasoning-end:\(part.provider ?? "")"
            }
        }
    }
}

func collect(
    _ stream: AsyncThrowingStream<ChatEvent, Error>, onEvent: (ChatEvent) -> Void = { _ in }
) async -> Collected {
    var collected = Collected()
    do {
        for try await event in stream {
            collected.events.append(event)
            onEvent(event)
        }
    } catch {
        collected.error = error
    }
    return collected
}

func failure(_ code: ProviderError.Code, _ provider: String) -> ProviderError {
    ProviderError(code, provider: provider, message: "scripted \(code)")
}
