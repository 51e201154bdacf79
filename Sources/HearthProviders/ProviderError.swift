/// The one error every provider throws.
///
/// It says which provider failed (``provider``), what kind of failure it was (``code``, which
/// the router and apps switch on), what a person can do about it (``message``) and what caused
/// it (``underlying``). Messages never contain credentials: cloud providers redact their keys
/// from anything a server echoes back.
public struct ProviderError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: Sendable, Equatable {
        /// Credentials are missing, wrong, expired or lack permission (HTTP 401/403).
        case unauthorized
        /// Too many requests or tokens (HTTP 429); `retryAfter` is the server's hint in seconds.
        case rateLimited(retryAfter: Double?)
        /// The conversation does not fit the model's context window; counts when known.
        case contextLengthExceeded(tokens: Int?, limit: Int?)
        /// The request was malformed or refused as such (HTTP 400, 404 for unknown routes, 422).
        case invalidRequest
        /// The server failed (HTTP 5xx, or a provider's own server-side error code).
        case server(status: Int)
        /// The connection could not be made or broke.
        case network
        /// Connecting took too long, or the server went silent for longer than the idle timeout.
        case timeout
        /// The request was cancelled by its consumer.
        case cancelled
        /// The response could not be understood (not the provider's wire format).
        case decoding
        /// The model does not exist, is not loaded, or cannot run here.
        case modelUnavailable
        /// The provider cannot do what the request asks (a response format its API lacks, such
        /// as a regular expression sent to a cloud API); `feature` names it, e.g.
        /// `response_format regex`. Raised before anything is sent, never by ignoring the ask.
        case unsupported(feature: String)
    }

    /// The kind of failure.
    public var code: Code
    /// The ``LanguageModelProvider/id`` of the provider that failed.
    public var provider: String
    /// What happened and what to do about it, for a person. Never contains a credential.
    public var message: String
    /// The error that caused this one, if any.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, provider: String, message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.provider = provider
        self.message = message
        self.underlying = underlying
    }

    /// `provider: code: message (underlying)`.
    public var description: String {
        var text = "\(provider): \(code): \(message)"
        if let underlying { text += " (cause: \(underlying))" }
        return text
    }
}

extension ProviderError.Code: CustomStringConvertible {
    /// A short name with the code's values, such as `rate limited (retry after 2s)`.
    public var description: String {
        switch self {
        case .unauthorized: return "unauthorized"
        case .rateLimited(let retryAfter):
            guard let retryAfter else { return "rate limited" }
            return "rate limited (retry after \(Self.seconds(retryAfter)))"
        case .contextLengthExceeded(let tokens, let limit):
            switch (tokens, limit) {
            case let (tokens?, limit?): return "context length exceeded (\(tokens) tokens, limit \(limit))"
            case let (nil, limit?): return "context length exceeded (limit \(limit))"
            case let (tokens?, nil): return "context length exceeded (\(tokens) tokens)"
            case (nil, nil): return "context length exceeded"
            }
        case .invalidRequest: return "invalid request"
        case .server(let status): return "server error \(status)"
        case .network: return "network error"
        case .timeout: return "timeout"
        case .cancelled: return "cancelled"
        case .decoding: return "undecodable response"
        case .modelUnavailable: return "model unavailable"
        case .unsupported(let feature): return "unsupported (\(feature))"
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value))s" : "\(value)s"
    }
}

extension ProviderError {
    /// Whether trying again (here or on another provider) may succeed: network errors,
    /// timeouts, 5xx, rate limits and unavailable models. Bad credentials, bad requests,
    /// context overflow and cancellation will fail the same way again.
    public var isTransient: Bool {
        switch code {
        case .network, .timeout, .rateLimited, .modelUnavailable: return true
        case .server(let status): return status >= 500 || status == 408
        case .unauthorized, .contextLengthExceeded, .invalidRequest, .cancelled, .decoding, .unsupported: return false
        }
    }

    /// Wraps any error as a `ProviderError` of `provider`: a `ProviderError` is returned as is,
    /// `CancellationError` becomes ``Code/cancelled``, anything else ``Code/modelUnavailable``
    /// (a provider that throws a foreign error is treated as unable to serve).
    public static func wrapping(_ error: any Error, provider: String) -> ProviderError {
        if let error = error as? ProviderError { return error }
        if error is CancellationError {
            return ProviderError(.cancelled, provider: provider, message: "The request was cancelled.", underlying: error)
        }
        return ProviderError(
            .modelUnavailable, provider: provider,
            message: "The provider failed with an error that is not a ProviderError: \(error).", underlying: error)
    }
}
