import Crypto
import Foundation

/// iFlytek's HMAC-SHA256 URL signature for the Spark WebSocket API.
///
/// 1. `origin = "host: <host>\ndate: <RFC 1123 date>\nGET <path> HTTP/1.1"`
/// 2. `signature = base64(HMAC-SHA256(key: apiSecret, origin))`
/// 3. `authorization = base64("api_key=\"<apiKey>\", algorithm=\"hmac-sha256\", headers=\"host date request-line\", signature=\"<signature>\"")`
/// 4. the URL gets `?authorization=…&date=…&host=…`, each percent-encoded.
///
/// The server rejects dates more than 300 s from its clock, so the machine's clock matters.
enum SparkSigner {
    /// The signature (step 2).
    static func signature(host: String, date: String, path: String, apiSecret: String) -> String {
        let origin = "host: \(host)\ndate: \(date)\nGET \(path) HTTP/1.1"
        let key = SymmetricKey(data: Data(apiSecret.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Data(origin.utf8), using: key)
        return Data(mac).base64EncodedString()
    }

    /// The `authorization` query value (step 3).
    static func authorization(apiKey: String, signature: String) -> String {
        let origin =
            "api_key=\"\(apiKey)\", algorithm=\"hmac-sha256\", headers=\"host date request-line\", signature=\"\(signature)\""
        return Data(origin.utf8).base64EncodedString()
    }

    /// The query `authorization=…&date=…&host=…` for a request to `endpoint` made at `date`.
    static func signedQuery(endpoint: WebSocketEndpoint, apiKey: String, apiSecret: String, date: Date) -> String {
        let dateText = HTTPDate.format(date)
        let signature = signature(host: endpoint.host, date: dateText, path: endpoint.path, apiSecret: apiSecret)
        return [
            ("authorization", authorization(apiKey: apiKey, signature: signature)),
            ("date", dateText),
            ("host", endpoint.host),
        ].map { "\($0.0)=\(percentEncode($0.1))" }.joined(separator: "&")
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters (so `+`, `/`, `=`, `,`
    /// and spaces in base64 and dates survive the trip).
    static func percentEncode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return result
    }
}
