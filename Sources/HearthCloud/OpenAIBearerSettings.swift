import AsyncHTTPClient
import Foundation
import HearthProviders

/// The settings of a provider that sends its key as `Authorization: Bearer` and may run
/// without one (both OpenAI APIs: Chat Completions and Responses, against OpenAI or a local
/// server that needs no key).
protocol OpenAIBearerSettings: HTTPProviderSettings {
    /// The API's base URL; the endpoint's path is joined to it.
    var baseURL: String { get }
    /// Whether a request without a key is refused before it is sent.
    var requiresAPIKey: Bool { get }
    /// What the user does to supply a key, appended to ``ProviderError/Code/unauthorized``.
    var credentialHint: String { get }
}

extension OpenAIBearerSettings {
    /// `.unavailable(.unauthorized)` when a required key is missing; otherwise `.available`
    /// (reachability is not probed: a failed request is cheaper and the router handles it).
    var keyAvailability: ProviderAvailability {
        requiresAPIKey && apiKey == nil ? .unavailable(.unauthorized) : .available
    }

    /// One streamed request: the body from `encode` (its error is the stream's error), then a
    /// missing required key refused, then a POST to `path` under ``baseURL`` with the bearer
    /// key (when there is one), whose 2xx response `read` turns into events.
    func stream(
        client: HTTPClient, path: String, encode: () throws -> Data,
        read: @escaping @Sendable (HTTPClientResponse, EventSink, IdleWatchdog, HTTPFailureMapper) async throws -> Void
    ) -> AsyncThrowingStream<ChatEvent, Error> {
        let call = HTTPProviderCall(self, credentialHint: credentialHint)
        let body: Data
        do {
            body = try encode()
        } catch {
            return call.failing(error)
        }
        if requiresAPIKey && apiKey == nil { return call.missingKey() }
        let authorization = apiKey.map { [("authorization", "Bearer \($0.value)")] } ?? []
        return call.post(client: client, url: joinURL(baseURL, path), extra: authorization, body: body, read: read)
    }
}

extension OpenAICompatibleProvider.Configuration: OpenAIBearerSettings {}
extension OpenAIResponsesProvider.Configuration: OpenAIBearerSettings {}
