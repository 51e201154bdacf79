// The only Foundation import of HearthProviders: `LocalizedError` lives there, and it is what a
// SwiftUI alert (and `error.localizedDescription`) reads. Nothing else here uses Foundation.
import Foundation

extension ProviderError: LocalizedError {
    /// What happened, for a person (``message``; a sentence for the ``code`` when the message is
    /// empty). Never the ``underlying`` error's text, which may quote a server's reply, and so
    /// never a credential.
    public var errorDescription: String? {
        let trimmed = message.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? code.sentence(provider: provider) : trimmed
    }

    /// What to do about it, by ``code``.
    public var recoverySuggestion: String? { code.recoverySuggestion }

    /// Why it failed in a few words (the ``code``'s short name, such as `rate limited (retry after 2s)`).
    public var failureReason: String? { code.description }
}

extension ProviderError.Code {
    /// A sentence saying what happened, for errors raised without a message.
    func sentence(provider: String) -> String {
        let who = provider.isEmpty ? "The provider" : "The provider '\(provider)'"
        switch self {
        case .unauthorized: return "\(who) refused the credentials."
        case .rateLimited: return "\(who) is limiting requests."
        case .contextLengthExceeded: return "The conversation is longer than the model's context window."
        case .invalidRequest: return "\(who) refused the request as invalid."
        case .server(let status): return "\(who) failed with a server error (HTTP \(status))."
        case .network: return "\(who) could not be reached."
        case .timeout: return "\(who) took too long to answer."
        case .cancelled: return "The request was cancelled."
        case .decoding: return "\(who) sent an answer that could not be read."
        case .modelUnavailable: return "The model is not available."
        case .unsupported(let feature): return "\(who) cannot do \(feature)."
        }
    }

    /// What a person can do about a failure of this kind.
    public var recoverySuggestion: String {
        switch self {
        case .unauthorized:
            return "Check the API key: it may be missing, mistyped, expired, or without access to this model."
        case .rateLimited(let retryAfter):
            if let retryAfter, retryAfter > 0 {
                let seconds = retryAfter == retryAfter.rounded() ? "\(Int(retryAfter))" : "\(retryAfter)"
                return "Wait \(seconds) seconds and try again, or use another provider."
            }
            return "Wait a moment and try again, or use another provider."
        case .contextLengthExceeded:
            return "Start a new conversation or drop its earlier turns, shorten the message, or ask for a shorter reply."
        case .invalidRequest:
            return "Change the request as the message says; sending it again unchanged fails the same way."
        case .server:
            return "Try again later, or use another provider."
        case .network:
            return "Check the network connection and try again; the on-device model works without one."
        case .timeout:
            return "Try again; if it keeps happening, allow a longer timeout or use another provider."
        case .cancelled:
            return "Send the request again if it was not meant to stop."
        case .decoding:
            return "Check the provider's address and model name: the server does not answer in the API's format."
        case .modelUnavailable:
            return "Check that the model is downloaded and fits in memory, or choose another model or provider."
        case .unsupported(let feature):
            return "Leave out \(feature), or send the request to a provider that supports it."
        }
    }
}

extension ToolCallError: LocalizedError {
    /// What went wrong, naming the tool (``description``).
    public var errorDescription: String? { description }

    /// What to do about it, by ``kind``.
    public var recoverySuggestion: String? {
        switch kind {
        case .invalidArguments: return "Make the tool's parameters schema and its Arguments type agree."
        case .toolFailed: return "See the tool's own error; the conversation can continue once the tool works."
        case .tooManyRounds: return "Allow more rounds, or give the model tools it can finish with."
        }
    }
}

extension InvalidGenerationOption: LocalizedError {
    /// What is wrong and what is accepted (``message``).
    public var errorDescription: String? { message }
    /// Which option to change.
    public var recoverySuggestion: String? { "Change the option \(field) to an accepted value." }
}
