/// A provider that tries an ordered list of providers and fails over between them.
///
/// Typical use: a cloud provider first and the on-device model last, so the app keeps
/// answering when the network is down, the cloud is overloaded or rate-limits it:
///
/// ```swift
/// let router = FallbackRouter(providers: [cloud, local], policy: .cloudFirst)
/// for try await event in router.stream(ChatRequest(messages: [.user("Hi")])) { … }
/// ```
///
/// **Order.** ``Policy/cloudFirst`` tries `providers` in the given order;
/// ``Policy/localFirst`` tries them in reverse (the list is written cloud first, local last).
/// A `taskRoutes` entry for the request's ``ChatRequest/task`` moves that provider to the front.
/// Providers whose ``LanguageModelProvider/availability`` is `.unavailable` are skipped.
///
/// **Failover.** A failure for which `shouldFailOver` returns `true` (by default: network error,
/// timeout, 5xx, 429, model unavailable, undecodable response, a feature the provider does not
/// have — see ``defaultFailover(_:)``)
/// moves on to the next provider; anything else (bad key, bad request, context overflow,
/// cancellation) is thrown to the consumer, as is the last provider's failure.
///
/// **Mid-stream.** If a provider fails after it has streamed text, the router emits
/// ``ChatEvent/switchedProvider(from:to:reason:)`` and asks the next provider for the same
/// messages with ``ChatRequest/continuation`` set to the text streamed so far; that provider
/// streams only what follows, so the consumer sees one continuous answer.
///
/// **Tool calls.** Every provider gets the request's tools unchanged. A reply's tool-call
/// events are held back until that reply is complete (text still streams live); if the
/// provider fails first, its calls are dropped and the next provider makes them anew, so the
/// consumer never receives half a call or the same call twice.
///
/// **Events.** Each provider's output is preceded by ``ChatEvent/servedBy(_:)`` with its id
/// (so in the common case the first event is `.servedBy`); each failover is announced by
/// ``ChatEvent/switchedProvider(from:to:reason:)`` before the next provider's output.
///
/// **Structure.** Every provider gets the request's ``ChatOptions/responseFormat``
/// unchanged, the local model too: a reply that must follow a schema still follows it after a
/// failover, and one continued mid-answer continues under the same constraint.
public struct FallbackRouter: LanguageModelProvider {
    /// Which end of the provider list to start from.
    public enum Policy: Sendable, Equatable {
        /// Try providers in the order given (cloud providers first, local model last).
        case cloudFirst
        /// Try providers in reverse order (the local model first, then the cloud providers).
        case localFirst
    }

    /// This router's id, used in events and errors.
    public let id: String
    /// The providers, in the order given (cloud first, by convention).
    public let providers: [any LanguageModelProvider]
    /// Where to start in ``providers``.
    public let policy: Policy
    /// Providers (by id) that take requests of a given kind first; unknown ids are ignored.
    public let taskRoutes: [TaskKind: String]
    /// Decides whether an error moves on to the next provider.
    public let shouldFailOver: @Sendable (ProviderError) -> Bool

    /// Creates a router.
    /// - Parameters:
    ///   - id: the router's id (default `"router"`).
    ///   - providers: the providers, cloud first and local last by convention.
    ///   - policy: ``Policy/cloudFirst`` (default) or ``Policy/localFirst``.
    ///   - taskRoutes: provider ids that take requests of a ``TaskKind`` first.
    ///   - shouldFailOver: which errors move on to the next provider (default ``defaultFailover(_:)``).
    public init(
        id: String = "router", providers: [any LanguageModelProvider], policy: Policy = .cloudFirst,
        taskRoutes: [TaskKind: String] = [:],
        shouldFailOver: @escaping @Sendable (ProviderError) -> Bool = FallbackRouter.defaultFailover
    ) {
        self.id = id
        self.providers = providers
        self.policy = policy
        self.taskRoutes = taskRoutes
        self.shouldFailOver = shouldFailOver
    }

    /// The default failover rule: network errors, timeouts, 5xx (and 408), 429, unavailable models,
    /// undecodable responses (a captive portal's HTML page, a proxy's error page), and features
    /// a provider lacks (``ProviderError/Code/unsupported(feature:)``: a regular expression or a
    /// grammar a cloud API cannot enforce goes on to the local model, which can).
    @Sendable public static func defaultFailover(_ error: ProviderError) -> Bool {
        if case .unsupported = error.code { return true }
        return error.isTransient || error.code == .decoding
    }

    /// The providers in the order they will be tried for `request`.
    public func order(for request: ChatRequest) -> [any LanguageModelProvider] {
        var ordered: [any LanguageModelProvider] = policy == .cloudFirst ? providers : providers.reversed()
        if let task = request.task, let routed = taskRoutes[task],
            let index = ordered.firstIndex(where: { $0.id == routed })
        {
            let provider = ordered.remove(at: index)
            ordered.insert(provider, at: 0)
        }
        return ordered
    }

    /// Available when any provider is; otherwise the first provider's reason.
    public var availability: ProviderAvailability {
        get async {
            var first: ProviderAvailability?
            for provider in providers {
                let state = await provider.availability
                if state == .available { return .available }
                if first == nil { first = state }
            }
            return first ?? .unavailable(.other("the router has no providers"))
        }
    }

    /// Prewarms every provider in order, so the fallback is ready before it is needed.
    /// Failures of some providers are ignored; throws the first error only if all failed.
    public func prewarm(_ request: ChatRequest?) async throws {
        var firstError: (any Error)?
        var anySucceeded = false
        for provider in order(for: request ?? ChatRequest(messages: [])) {
            do {
                try await provider.prewarm(request)
                anySucceeded = true
            } catch {
                if firstError == nil { firstError = error }
            }
        }
        if !anySucceeded, let firstError { throw ProviderError.wrapping(firstError, provider: id) }
    }
}
