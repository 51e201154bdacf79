import Foundation
import HearthProviders

/// The Spark chat protocol: one request frame (`header`/`parameter`/`payload`), then answer
/// frames whose `header.status` goes 0 → 1 … → 2 (last), with a non-zero `header.code` on error.
enum SparkWire {
    /// The request frame's JSON.
    ///
    /// Spark takes `temperature` in (0, 1] and `top_k` in 1...6; values outside are clamped
    /// (0 becomes 0.01, the closest Spark has to greedy). Other options have no Spark field.
    static func requestBody(_ request: ChatRequest, configuration: SparkProvider.Configuration, appID: String)
        throws -> Data
    {
        var chat: [String: Any] = ["domain": configuration.domain]
        let options = request.options
        // Spark's WebSocket protocol has no function calling (iFlytek points function calls to
        // its HTTP API): tools are refused, never dropped; `tool_choice` none is honoured as is.
        try ToolWire.refuseTools(request, provider: configuration.id, api: "iFlytek Spark's WebSocket API")
        try ToolWire.refuseLogitBias(request, provider: configuration.id, api: "iFlytek Spark's WebSocket API")
        if let format = options.constrainedFormat {
            // Spark's chat protocol has no structured-output field: refused, never dropped.
            throw ResponseFormatWire.unsupported(format, provider: configuration.id, api: "iFlytek Spark")
        }
        if let value = options.temperature { chat["temperature"] = min(1, max(0.01, value)) }
        if let value = options.maxTokens { chat["max_tokens"] = value }
        if let value = options.topK { chat["top_k"] = min(6, max(1, value)) }
        let text = request.continuedMessages.map { ["role": $0.role.rawValue, "content": $0.content] }
        let body: [String: Any] = [
            "header": ["app_id": appID, "uid": configuration.uid],
            "parameter": ["chat": chat],
            "payload": ["message": ["text": text]],
        ]
        return try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// One answer frame (only the fields used).
    struct Frame: Decodable {
        struct Header: Decodable {
            var code: Int
            var message: String?
            var sid: String?
            var status: Int?
        }
        struct Payload: Decodable {
            struct Choices: Decodable {
                struct Text: Decodable {
                    var content: String?
                }
                var status: Int?
                var text: [Text]?
            }
            struct UsageWrapper: Decodable {
                struct Counts: Decodable {
                    var promptTokens: Int?
                    var completionTokens: Int?
                }
                var text: Counts?
            }
            var choices: Choices?
            var usage: UsageWrapper?
        }
        var header: Header
        var payload: Payload?
    }

    static let decoder = JSONDecoder.snakeCase

    /// The error for a frame with a non-zero `header.code`, after Spark's documented codes.
    static func error(code: Int, message: String?, sid: String?, provider: String, redactor: Redactor) -> ProviderError {
        let said = message.map { " Spark said: \($0)" } ?? ""
        let session = sid.map { " (sid \($0))" } ?? ""
        let mapped: ProviderError.Code
        let advice: String
        switch code {
        case 10907:
            mapped = .contextLengthExceeded(tokens: nil, limit: nil)
            advice = "The conversation is longer than Spark accepts (code 10907). Shorten it, or set allowTruncation."
        case 11200, 10015, 10016:
            mapped = .unauthorized
            advice = "Spark refused this app (code \(code)): it lacks access to this model version or its licence "
                + "is used up. Check SPARK_APP_ID and the app's services in the iFlytek console."
        case 11201, 11202, 11203, 10006, 10007:
            mapped = .rateLimited(retryAfter: nil)
            advice = "Spark's rate or concurrency limit was hit (code \(code)); retry later."
        case 10003, 10004, 10005, 10163:
            mapped = .invalidRequest
            advice = "Spark refused the request's format or parameters (code \(code)). Check the domain and options."
        case 10013, 10014, 10019:
            mapped = .invalidRequest
            advice = "Spark's content review blocked the \(code == 10014 ? "answer" : "question") (code \(code))."
        case 10008, 10110:
            mapped = .server(status: 503)
            advice = "Spark is busy (code \(code)); retry later or use another provider."
        default:
            mapped = .server(status: 500)
            advice = "Spark failed (code \(code)); retry later or use another provider."
        }
        let details = HTTPErrorDetails(
            status: 200, type: nil, code: String(code), message: message.map { redactor($0) }, bodyExcerpt: "")
        return ProviderError(mapped, provider: provider, message: redactor(advice + said + session), underlying: details)
    }
}
