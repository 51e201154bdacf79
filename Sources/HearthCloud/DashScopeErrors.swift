import Foundation
import HearthProviders

/// DashScope's in-band errors — an `event:error` in a generation stream, a dialog's `task-failed`
/// header, header `status_code` or `Error` event — as ``ProviderError``s with the service's code
/// and message. HTTP errors before a stream go through ``HTTPFailureMapper`` as for every provider.
enum DashScopeErrors {
    /// The HTTP status DashScope documents for an error `code` (`InvalidApiKey` 401,
    /// `Throttling.*` 429, `InternalError.*` 500…); unknown codes count as 500.
    static func status(forCode code: String) -> Int {
        let table: [(String, Int)] = [
            ("InvalidParameter", 400), ("InvalidApiKey", 401), ("AccessDenied", 403), ("Arrearage", 403),
            ("BillingAuth", 403), ("Throttling", 429), ("TooManyInterrupt", 429), ("ModelNotFound", 404),
            ("NotFound", 404), ("Timeout", 408), ("TimeOut", 408), ("DataInspection", 400), ("BadRequest", 400),
            ("InvalidURL", 400), ("AppConfigError", 400), ("DirectiveNotSupported", 400), ("ServiceUnavailable", 503),
            ("ModelUnavailable", 503), ("ModelServingError", 503), ("Internal", 500), ("SystemError", 500),
        ]
        return table.first { code.contains($0.0) }?.1 ?? 500
    }

    /// The status for the dialog's numeric codes (its error-code page): 433 billing → 403,
    /// 444 client audio timeout → 408, 449 too many interrupts → 429, other 4xx → 400, 5xx as is.
    static func status(forDialogCode code: Int) -> Int {
        switch code {
        case 401, 403, 404, 408, 429: return code
        case 433: return 403
        case 444: return 408
        case 449: return 429
        case 400..<500: return 400
        case 500..<600: return code
        default: return 500
        }
    }

    /// The error for an in-band failure: `code` (the service's name for it), its `message`, and
    /// `reference` (request or dialog id) for Alibaba Cloud's support.
    static func error(
        status: Int, code: String?, message: String?, reference: String?, service: String, failures: HTTPFailureMapper
    ) -> ProviderError {
        var object: [String: String] = [:]
        if let code { object["code"] = code }
        if let message { object["message"] = message }
        let body = (try? JSONSerialization.data(withJSONObject: object)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        var mapped = failures.error(status: status, retryAfter: nil, body: body)
        let name = code.map { "\($0), \(status)" } ?? "\(status)"
        let advice: String
        switch mapped.code {
        case .unauthorized: advice = "\(service) refused the credentials or the app (\(name)). \(failures.credentialHint)"
        case .rateLimited: advice = "\(service) is limiting this account's requests (\(name)); retry later."
        case .timeout: advice = "\(service) timed out (\(name)); the request can be retried."
        case .server: advice = "\(service) failed (\(name)); retry, or use another provider."
        case .contextLengthExceeded:
            advice = "The conversation is longer than the model accepts (\(name)). Shorten it, or set allowTruncation."
        case .modelUnavailable: advice = "\(service) cannot serve this model (\(name)). Check the model name."
        default: advice = "\(service) refused the request (\(name)). Check the model, app and options."
        }
        let said = message.map { " The server said: \($0)" } ?? ""
        let ref = reference.map { " (\($0))" } ?? ""
        mapped.message = failures.redactor(advice + said + ref)
        return mapped
    }
}
