import Foundation
import HTTPTypes
import HearthConstraints
import HearthProviders

/// An error answered as JSON: `{"error":{"message","type","param","code"}}` (OpenAI's shape;
/// `/v1/messages` answers Anthropic's `{"type":"error","error":{…}}` with the same fields).
struct APIError: Error, Sendable {
    /// The HTTP status.
    var status: Int
    /// What went wrong, for a person. Never contains a key or prompt text.
    var message: String
    /// OpenAI's error type (`invalid_request_error`, `authentication_error`, …).
    var type: String
    /// A machine-readable code (`context_length_exceeded`, `model_not_found`, …).
    var code: String?
    /// The request field at fault, when there is one.
    var param: String?
    /// Seconds for a `Retry-After` header.
    var retryAfter: Int?
    /// Further headers of the answer (a 429's `x-ratelimit-*`).
    var headers = HTTPFields()
    /// What the server's log gets beside the fixed message (an upstream's own error text,
    /// keys already redacted); never sent to the client.
    var logDetail: String?

    init(
        status: Int, message: String, type: String, code: String? = nil, param: String? = nil, retryAfter: Int? = nil
    ) {
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.retryAfter = retryAfter
    }

    static func invalid(_ param: String, _ message: String, code: String = "invalid_value") -> APIError {
        APIError(status: 400, message: message, type: "invalid_request_error", code: code, param: param)
    }

    static func unauthorized() -> APIError {
        APIError(
            status: 401, message: "Missing or invalid API key: send Authorization: Bearer <key> (or x-api-key).",
            type: "authentication_error", code: "invalid_api_key")
    }

    static func unavailable(_ message: String, retryAfter: Int) -> APIError {
        APIError(status: 503, message: message, type: "unavailable_error", code: "unavailable", retryAfter: retryAfter)
    }

    /// The OpenAI-shaped body.
    var openAIBody: JSONValue {
        ["error": ["message": .string(message), "type": .string(type), "param": .optional(param), "code": .optional(code)]]
    }

    /// The Anthropic-shaped body (Anthropic's error types, plus `code` and `param`).
    var anthropicBody: JSONValue {
        let kind: String
        switch status {
        case 401: kind = "authentication_error"
        case 404: kind = "not_found_error"
        case 413: kind = "request_too_large"
        case 429: kind = "rate_limit_error"
        case 503: kind = "overloaded_error"
        case 400..<500: kind = "invalid_request_error"
        default: kind = "api_error"
        }
        return [
            "type": "error",
            "error": ["type": .string(kind), "message": .string(message), "code": .optional(code), "param": .optional(param)],
        ]
    }

    /// Maps a provider failure to an HTTP error.
    static func from(_ error: ProviderError) -> APIError {
        switch error.code {
        case .contextLengthExceeded(let tokens, let limit):
            let counts: String
            if let tokens, let limit {
                counts = "This model's maximum context length is \(limit) tokens, but the prompt is \(tokens) tokens "
                    + "(at least one token must remain for the reply). Shorten the prompt or restart the server with a larger --ctx."
            } else {
                counts = error.message
            }
            return APIError(
                status: 400, message: counts, type: "invalid_request_error", code: "context_length_exceeded", param: "messages")
        case .invalidRequest:
            if let constraint = error.underlying as? ConstraintError { return .from(constraint) }
            // A field the provider names (the local model's `tools[1].parameters`): the server maps it to the wire's name.
            if let option = error.underlying as? InvalidGenerationOption {
                return APIError(status: 400, message: error.message, type: "invalid_request_error", code: "invalid_value", param: option.field)
            }
            return APIError(status: 400, message: error.message, type: "invalid_request_error", code: "invalid_value")
        case .unsupported(let feature):
            let format = feature.hasPrefix("response_format")
            return APIError(
                status: 400, message: error.message, type: "invalid_request_error",
                code: format ? "unsupported_response_format" : "unsupported", param: format ? "response_format" : nil)
        case .modelUnavailable:
            return APIError(status: 503, message: error.message, type: "unavailable_error", code: "model_unavailable", retryAfter: 5)
        case .cancelled:
            return APIError(status: 499, message: "The request was cancelled.", type: "cancelled", code: "cancelled")
        case .timeout:
            return APIError(status: 504, message: error.message, type: "timeout_error", code: "timeout")
        default:
            return APIError(status: 500, message: error.message, type: "server_error", code: "internal_error")
        }
    }
}

extension APIError {
    /// What carried a schema, pattern or grammar the local model cannot enforce.
    enum ConstraintSubject: Sendable {
        /// The request's response format, in the field `param` (`response_format`, `text.format`…).
        case responseFormat(param: String)
        /// One tool's parameter schema, in the field `param` (`tools[1].function.parameters`).
        case toolSchema(param: String)
        /// The tools' call format: every tool's call written under its schema, together.
        case toolCalls

        /// The code's noun: `response_format` or `tool_schema`.
        var noun: String {
            if case .responseFormat = self { return "response_format" }
            return "tool_schema"
        }

        var param: String {
            switch self {
            case .responseFormat(let param), .toolSchema(let param): return param
            case .toolCalls: return "tools"
            }
        }

        /// The message's subject.
        var subject: String {
            switch self {
            case .responseFormat: return "The response format"
            case .toolSchema(let param): return "'\(param)': the tool's parameter schema"
            case .toolCalls: return "The tools' call format"
            }
        }
    }

    /// A schema, pattern or grammar the local model cannot enforce: a 400 whose message names
    /// the keyword (a JSON pointer into the schema) or the position in the pattern or grammar,
    /// `param` the field that carried it (`subject`), the code what went wrong and with what
    /// (`unsupported_response_format`, `tool_schema_too_complex`…).
    static func from(_ error: ConstraintError, _ subject: ConstraintSubject = .responseFormat(param: "response_format")) -> APIError {
        let code: String
        let what: String
        let noun = subject.noun
        switch error.kind {
        case .syntax: (code, what) = ("invalid_\(noun)", "does not parse")
        case .unsupported: (code, what) = ("unsupported_\(noun)", "uses what cannot be enforced")
        case .unsatisfiable: (code, what) = ("unsatisfiable_\(noun)", "admits no output")
        case .invalidGrammar: (code, what) = ("invalid_\(noun)", "is not a valid grammar")
        case .tooComplex: (code, what) = ("\(noun)_too_complex", "is too complex to compile")
        }
        let place = error.location.isEmpty ? "" : " at \(error.location)"
        return APIError(
            status: 400, message: "\(subject.subject) \(what)\(place): \(error.message)", type: "invalid_request_error",
            code: code, param: subject.param)
    }

    /// Whether this error is about the request's response format (its `param` then names the field that carried it).
    var concernsResponseFormat: Bool { param == "response_format" && (code?.contains("response_format") ?? false) }
}

/// Typed access to a request object's fields, each failure an ``APIError`` naming the field.
struct Fields {
    let pairs: [(String, JSONValue)]
    let prefix: String

    init(_ value: JSONValue, prefix: String = "") throws {
        guard case .object(let pairs) = value else {
            throw APIError.invalid(prefix.isEmpty ? "body" : prefix, "\(prefix.isEmpty ? "The request body" : prefix) must be a JSON object.", code: "invalid_type")
        }
        self.pairs = pairs
        self.prefix = prefix
    }

    func name(_ key: String) -> String { prefix.isEmpty ? key : "\(prefix).\(key)" }

    /// The value of `key`, nil when missing or `null`.
    func value(_ key: String) -> JSONValue? {
        guard let value = pairs.last(where: { $0.0 == key })?.1, value != .null else { return nil }
        return value
    }

    func wrongType(_ key: String, _ expected: String, _ got: JSONValue) -> APIError {
        .invalid(name(key), "'\(name(key))' must be \(expected), got \(got.typeName).", code: "invalid_type")
    }

    func string(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw wrongType(key, "a string", value) }
        return text
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(key, "a boolean", value) }
        return flag
    }

    func number(_ key: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.doubleValue, number.isFinite else { throw wrongType(key, "a number", value) }
        guard range.contains(number) else {
            throw APIError.invalid(
                name(key), "'\(name(key))' must be between \(Self.format(range.lowerBound)) and \(Self.format(range.upperBound)), got \(Self.format(number)).")
        }
        return number
    }

    func int(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value.doubleValue, number.isFinite, number == number.rounded() else {
            throw wrongType(key, "an integer", value)
        }
        // |number| < 2^62 first: Double(Int.max) rounds up to 2^63, which Int(_:) cannot hold.
        guard abs(number) < 4.6e18, number >= Double(range.lowerBound), number <= Double(range.upperBound) else {
            throw APIError.invalid(
                name(key), "'\(name(key))' must be between \(range.lowerBound) and \(range.upperBound), got \(Self.format(number)).")
        }
        return Int(number)
    }

    func array(_ key: String) throws -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw wrongType(key, "an array", value) }
        return items
    }

    /// A string or an array of strings (OpenAI's `stop`), at most `limit` of them, none empty.
    func stops(_ key: String, limit: Int = 16) throws -> [String] {
        guard let value = value(key) else { return [] }
        let items: [String]
        switch value {
        case .string(let text): items = [text]
        case .array(let values):
            items = try values.enumerated().map { index, item in
                guard case .string(let text) = item else {
                    throw APIError.invalid("\(name(key))[\(index)]", "'\(name(key))[\(index)]' must be a string, got \(item.typeName).", code: "invalid_type")
                }
                return text
            }
        default: throw wrongType(key, "a string or an array of strings", value)
        }
        guard items.count <= limit else { throw APIError.invalid(name(key), "'\(name(key))' takes at most \(limit) strings.") }
        if items.contains(where: \.isEmpty) { throw APIError.invalid(name(key), "'\(name(key))' must not contain an empty string.") }
        return items
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
