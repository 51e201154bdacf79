import Foundation
import HearthProviders

/// What an HTTP error response said, kept as a ``ProviderError``'s underlying cause.
/// The body excerpt has credentials redacted.
public struct HTTPErrorDetails: Error, Sendable, CustomStringConvertible {
    /// The HTTP status code.
    public var status: Int
    /// The provider's error type (`invalid_request_error`, `overloaded_error`…), when given.
    public var type: String?
    /// The provider's error code (`context_length_exceeded`, `insufficient_quota`…), when given.
    public var code: String?
    /// The server's message, redacted.
    public var message: String?
    /// The start of the response body (at most 2 000 characters), redacted.
    public var bodyExcerpt: String

    /// Whether this is a 429 for an exhausted quota or balance rather than a rate: waiting will not help.
    var isQuotaExhausted: Bool {
        let words = [code, type, message].compactMap { $0?.lowercased() }
        return words.contains { $0.contains("insufficient_quota") || $0.contains("quota exceeded") || $0.contains("billing") }
    }

    /// `HTTP 400 invalid_request_error: message`.
    public var description: String {
        var text = "HTTP \(status)"
        if let type { text += " \(type)" }
        if let code, code != type { text += " (\(code))" }
        if let message { text += ": \(message)" } else if !bodyExcerpt.isEmpty { text += ": \(bodyExcerpt)" }
        return text
    }
}

/// Turns non-2xx responses into ``ProviderError``s.
struct HTTPFailureMapper: Sendable {
    let provider: String
    let redactor: Redactor
    /// What to tell the user to check when credentials are rejected, such as
    /// "Check OPENAI_API_KEY (or \"apiKey\" under \"openai\" in ~/.config/hearth/providers.json)."
    let credentialHint: String

    /// The error for `status` with `body`; `retryAfter` is the parsed `Retry-After` header.
    func error(status: Int, retryAfter: Double?, body: String) -> ProviderError {
        let details = Self.details(status: status, body: redactor(body))
        let said = details.message.map { message in
            " The server said" + (details.code.map { " (\($0))" } ?? "") + ": \(message)"
        } ?? ""
        let code: ProviderError.Code
        let advice: String
        switch status {
        case 401, 403:
            code = .unauthorized
            advice = "The server rejected the credentials (HTTP \(status)). \(credentialHint)"
        case 429:
            code = .rateLimited(retryAfter: retryAfter)
            advice =
                details.isQuotaExhausted
                ? "The account's quota or balance is exhausted (HTTP 429). Check the plan and billing."
                : "Too many requests (HTTP 429)" + (retryAfter.map { "; retry after \($0) s." } ?? "; retry later.")
        case 408:
            code = .timeout
            advice = "The server timed out waiting for the request (HTTP 408)."
        case 404 where Self.mentionsModel(details):
            code = .modelUnavailable
            advice = "The model was not found (HTTP 404). Check the model name and that the account can use it."
        case 404:
            code = .invalidRequest
            advice = "The endpoint was not found (HTTP 404). Check the base URL (it usually ends in /v1)."
        case 500...:
            code = .server(status: status)
            advice = "The server failed (HTTP \(status)); the request can be retried or sent elsewhere."
        default:
            if let context = Self.contextOverflow(details) {
                code = context
                advice = "The conversation is longer than the model's context window (HTTP \(status)). "
                    + "Shorten it, or set allowTruncation on the request."
            } else {
                code = .invalidRequest
                advice = "The server refused the request (HTTP \(status)). Check the model name and options."
            }
        }
        return ProviderError(code, provider: provider, message: redactor(advice + said), underlying: details)
    }

    /// The error for an error object that arrived inside an event stream (after a 200).
    func streamError(type: String?, code: String?, message: String?, status: Int? = nil) -> ProviderError {
        let kind = (type ?? code ?? "").lowercased()
        let mappedStatus: Int
        switch kind {
        case _ where kind.contains("auth") || kind.contains("permission"): mappedStatus = 401
        case _ where kind.contains("rate_limit"): mappedStatus = 429
        case _ where kind.contains("overloaded"): mappedStatus = 529
        case _ where kind.contains("not_found"): mappedStatus = 404
        case _ where kind.contains("invalid_request") || kind.contains("context") || kind.contains("exceed"):
            mappedStatus = 400
        default: mappedStatus = status ?? 500
        }
        var object: [String: Any] = [:]
        if let type { object["type"] = type }
        if let code { object["code"] = code }
        if let message { object["message"] = message }
        let body = (try? JSONSerialization.data(withJSONObject: ["error": object])).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return error(status: mappedStatus, retryAfter: nil, body: body)
    }

    /// Reads the common error body shapes: OpenAI `{"error":{"message","type","code"}}`,
    /// Anthropic `{"type":"error","error":{"type","message"}}`, Ollama `{"error":"…"}`,
    /// llama.cpp (`n_prompt_tokens`, `n_ctx`), FastAPI `{"detail":"…"}`, plain `{"message":"…"}`.
    static func details(status: Int, body: String) -> HTTPErrorDetails {
        var details = HTTPErrorDetails(status: status, bodyExcerpt: String(body.prefix(2000)))
        guard let data = body.data(using: .utf8),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else {
            let trimmed = body.trimmingCharacters(in: .whitespacesAndNewlines)
            if !trimmed.isEmpty, !trimmed.hasPrefix("<") { details.message = String(trimmed.prefix(500)) }
            return details
        }
        var object = root
        if let error = root["error"] as? [String: Any] {
            object = error
        } else if let error = root["error"] as? String {
            details.message = error
        }
        details.message = details.message ?? (object["message"] as? String) ?? (root["detail"] as? String)
            ?? (root["message"] as? String)
        details.type = object["type"] as? String
        details.code = (object["code"] as? String) ?? (object["code"] as? Int).map(String.init)
        if let tokens = object["n_prompt_tokens"] as? Int, let limit = object["n_ctx"] as? Int {
            details.code = details.code ?? "exceed_context_size_error"
            details.message = (details.message ?? "") + " (\(tokens) tokens, context \(limit))"
        }
        return details
    }

    static func mentionsModel(_ details: HTTPErrorDetails) -> Bool {
        let text = [details.code, details.type, details.message].compactMap { $0?.lowercased() }.joined(separator: " ")
        return text.contains("model")
    }

    /// ``ProviderError/Code/contextLengthExceeded(tokens:limit:)`` with whatever counts the
    /// message gives, or `nil` when the error is not about the context window.
    static func contextOverflow(_ details: HTTPErrorDetails) -> ProviderError.Code? {
        let code = (details.code ?? "").lowercased()
        let type = (details.type ?? "").lowercased()
        let message = (details.message ?? details.bodyExcerpt).lowercased()
        let phrases = [
            "context length", "context_length", "context window", "prompt is too long", "maximum context",
            "context size", "too many tokens", "exceeds the context", "input is too long", "range of input length",
        ]
        guard code.contains("context_length") || type.contains("exceed_context") || code.contains("exceed_context")
            || phrases.contains(where: message.contains)
        else { return nil }
        let (tokens, limit) = contextCounts(in: message)
        return .contextLengthExceeded(tokens: tokens, limit: limit)
    }

    /// Token counts in the usual overflow messages:
    /// OpenAI/vLLM/DeepSeek "maximum context length is 8192 tokens. However, your messages
    /// resulted in 9000 tokens", Anthropic "prompt is too long: 208310 tokens > 200000 maximum",
    /// llama.cpp (as rewritten by ``details(status:body:)``) "(9000 tokens, context 8192)",
    /// DashScope "Range of input length should be [1, 30720]" (the limit only).
    static func contextCounts(in message: String) -> (tokens: Int?, limit: Int?) {
        func number(after marker: String) -> Int? {
            guard let range = message.range(of: marker) else { return nil }
            let digits = message[range.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }
            return Int(digits)
        }
        func number(before marker: String) -> Int? {
            guard let range = message.range(of: marker) else { return nil }
            let head = message[..<range.lowerBound].reversed().drop { $0 == " " }.prefix { $0.isNumber }
            return Int(String(head.reversed()))
        }
        if let limit = number(after: "maximum context length is") {
            let tokens = number(after: "resulted in") ?? number(after: "you requested") ?? number(after: "requested")
            return (tokens, limit)
        }
        if let tokens = number(after: "prompt is too long:"), let limit = number(before: "maximum") {
            return (tokens, limit)
        }
        if let limit = number(after: "tokens, context "), let tokens = number(before: " tokens, context") {
            return (tokens, limit)
        }
        if message.contains("range of input length"), let limit = number(before: "]") {
            return (nil, limit)
        }
        return (nil, nil)
    }
}

/// Parses a `Retry-After` header: delay-seconds, or an HTTP date. Negative or past values are 0.
func parseRetryAfter(_ value: String?, now: Date = Date()) -> Double? {
    guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
    if let seconds = Double(value), seconds.isFinite { return max(0, seconds) }
    guard let date = HTTPDate.parse(value) else { return nil }
    return max(0, date.timeIntervalSince(now))
}

/// RFC 1123 dates (`Fri, 05 May 2023 10:43:39 GMT`), as HTTP headers and Spark's signature use.
enum HTTPDate {
    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }

    static func format(_ date: Date) -> String { formatter().string(from: date) }
    static func parse(_ text: String) -> Date? { formatter().date(from: text) }
}
