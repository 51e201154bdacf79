import AsyncHTTPClient
import Foundation
import HearthProviders
import NIOHTTP1

/// Decodes one document of a streamed reply (an event's data, a WebSocket frame). What is not
/// the expected JSON is ``ProviderError/Code/decoding``, quoting its first 300 bytes
/// (redacted); `what` names the piece, such as "A chunk of the reply" or "A Spark frame".
func decodeReplyPiece<T: Decodable>(
    _ type: T.Type, from data: Data, decoder: JSONDecoder, what: String, provider: String, redactor: Redactor
) throws -> T {
    do {
        return try decoder.decode(type, from: data)
    } catch {
        throw ProviderError(
            .decoding, provider: provider,
            message: "\(what) was not the expected JSON: " + redactor(String(decoding: data.prefix(300), as: UTF8.self)),
            underlying: error)
    }
}

extension HTTPFailureMapper {
    /// ``decodeReplyPiece(_:from:decoder:what:provider:redactor:)`` with this provider and redactor.
    func decode<T: Decodable>(_ type: T.Type, from data: Data, decoder: JSONDecoder, what: String) throws -> T {
        try decodeReplyPiece(type, from: data, decoder: decoder, what: what, provider: provider, redactor: redactor)
    }

    /// Throws ``ProviderError/Code/decoding`` unless `contentType` (lowercased) is an event
    /// stream or absent: anything else is usually a proxy's or captive portal's page.
    func requireEventStream(_ contentType: String) throws {
        guard contentType.isEmpty || contentType.contains("text/event-stream") else {
            throw ProviderError(
                .decoding, provider: provider,
                message: "The server answered with \(contentType), not an event stream. A proxy or captive portal "
                    + "may be in the way; check the base URL and the network.")
        }
    }
}

extension HTTPClientResponse {
    /// The `content-type` header, lowercased; empty when there is none.
    var contentType: String { headers.first(name: "content-type")?.lowercased() ?? "" }
}

/// The settings every HTTP provider's configuration has.
protocol HTTPProviderSettings {
    var id: String { get }
    var apiKey: CloudSecret? { get }
    /// Extra headers; their values are redacted from errors like the key.
    var headers: [String: String] { get }
    var timeouts: CloudTimeouts { get }
    var retry: RetryPolicy { get }
}

extension AnthropicProvider.Configuration: HTTPProviderSettings {}
extension DashScopeProvider.Configuration: HTTPProviderSettings {}
extension OpenAICompatibleProvider.Configuration: HTTPProviderSettings {}

/// What the HTTP providers (OpenAI-compatible, Anthropic, DashScope) share around one request:
/// a redactor for the key and the extra headers' values, the retrying runner, the failure
/// mapper, and the POST whose 2xx response the provider's wire format reads.
struct HTTPProviderCall: Sendable {
    let runner: CloudStreamRunner
    let failures: HTTPFailureMapper
    /// The configured extra headers, sent with every request.
    let headers: [String: String]

    init(_ settings: some HTTPProviderSettings, credentialHint: String) {
        headers = settings.headers
        let redactor = Redactor([settings.apiKey?.value] + settings.headers.values.map { $0 })
        runner = CloudStreamRunner(
            provider: settings.id, timeouts: settings.timeouts, retry: settings.retry, redactor: redactor)
        failures = HTTPFailureMapper(provider: settings.id, redactor: redactor, credentialHint: credentialHint)
    }

    /// A stream that throws `error` at once (a request that cannot be encoded).
    func failing(_ error: any Error) -> AsyncThrowingStream<ChatEvent, Error> {
        runner.stream { _, _ in throw error }
    }

    /// A stream that throws ``ProviderError/Code/unauthorized``: `"<missing> <credential hint>"`.
    func missingKey(_ missing: String = "No API key is configured.") -> AsyncThrowingStream<ChatEvent, Error> {
        failing(
            ProviderError(.unauthorized, provider: failures.provider, message: "\(missing) \(failures.credentialHint)"))
    }

    /// POSTs `body` to `url` (JSON in, an event stream asked for) with the configured headers
    /// and then `extra`, and hands each attempt's 2xx response to `read`.
    func post(
        client: HTTPClient, url: String, extra: [(String, String)], body: Data,
        read: @escaping @Sendable (HTTPClientResponse, EventSink, IdleWatchdog, HTTPFailureMapper) async throws -> Void
    ) -> AsyncThrowingStream<ChatEvent, Error> {
        let headers = HTTPHeaders.jsonEventStream(self.headers.map { ($0.key, $0.value) } + extra)
        let post = HTTPStreamingPost(client: client, failures: failures)
        return runner.stream { sink, watchdog in
            let response = try await post.send(url: url, headers: headers, body: body, watchdog: watchdog)
            try await read(response, sink, watchdog, post.failures)
        }
    }
}
