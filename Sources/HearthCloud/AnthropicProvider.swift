import AsyncHTTPClient
import Foundation
import HearthProviders
import NIOCore
import NIOHTTP1

/// Anthropic's Messages API (`POST /v1/messages` with `stream: true`).
///
/// System messages are joined into the top-level `system` field; the key goes in `x-api-key`
/// with `anthropic-version`. A partial answer (``HearthProviders/ChatRequest/continuation``) is
/// sent as a final assistant message, which Claude continues natively. Events handled:
/// `message_start`, `content_block_start/delta/stop`, `message_delta`, `message_stop`, `ping`, `error`.
/// Tools go out as `tools`/`tool_choice`, calls and results as `tool_use`/`tool_result` blocks;
/// streamed `tool_use` blocks (`input_json_delta`) come back as
/// ``HearthProviders/ChatEvent/toolCall(_:)`` events (see docs/TOOLS-cloud.md). Reasoning options
/// go out as `thinking` (`enabled` with `budget_tokens`, or `disabled`); streamed `thinking`
/// blocks (`thinking_delta`, `signature_delta`) and `redacted_thinking` blocks come back as
/// reasoning events, and an assistant message's signed parts are sent back as blocks before its
/// `tool_use` blocks, so a tool round trip with thinking continues (see docs/REASONING.md).
public struct AnthropicProvider: LanguageModelProvider {
    /// Everything that identifies and tunes the endpoint.
    public struct Configuration: Sendable {
        /// The provider id for events, errors and routing.
        public var id: String
        /// The API base; `/messages` is appended.
        public var baseURL: String
        /// Sent as `x-api-key`.
        public var apiKey: CloudSecret?
        /// The model name sent when the request names none.
        public var model: String
        /// The `anthropic-version` header.
        public var version: String
        /// `max_tokens` when the request sets none (the API requires one).
        public var defaultMaxTokens: Int
        /// Extra headers (such as `anthropic-beta`). Their values are redacted from errors.
        public var headers: [String: String]
        /// Connect and idle timeouts.
        public var timeouts: CloudTimeouts
        /// Retries before the first byte.
        public var retry: RetryPolicy

        /// Creates a configuration.
        public init(
            id: String = "anthropic", baseURL: String = "https://api.anthropic.com/v1", apiKey: CloudSecret?,
            model: String = "claude-sonnet-4-5", version: String = "2023-06-01", defaultMaxTokens: Int = 4096,
            headers: [String: String] = [:], timeouts: CloudTimeouts = CloudTimeouts(), retry: RetryPolicy = RetryPolicy()
        ) {
            self.id = id
            self.baseURL = baseURL
            self.apiKey = apiKey
            self.model = model
            self.version = version
            self.defaultMaxTokens = defaultMaxTokens
            self.headers = headers
            self.timeouts = timeouts
            self.retry = retry
        }
    }

    /// This provider's settings.
    public let configuration: Configuration
    private let client: HTTPClient

    /// The provider id.
    public var id: String { configuration.id }

    /// Creates a provider; `httpClient` as for ``OpenAICompatibleProvider/init(_:httpClient:)``.
    public init(_ configuration: Configuration, httpClient: HTTPClient? = nil) {
        self.configuration = configuration
        self.client = httpClient ?? SharedHTTPClients.client(connectTimeout: configuration.timeouts.connect)
    }

    /// Anthropic with the key from `ANTHROPIC_API_KEY` or the config file's `anthropic` entry.
    public static func fromCredentials(_ credentials: CloudCredentials, model: String? = nil) -> AnthropicProvider {
        let entry = credentials["anthropic"]
        var configuration = Configuration(apiKey: entry.apiKey, headers: entry.headers ?? [:])
        if let baseURL = entry.baseURL { configuration.baseURL = baseURL }
        if let model = model ?? entry.model { configuration.model = model }
        return AnthropicProvider(configuration)
    }

    /// `.unavailable(.unauthorized)` without a key, else `.available`.
    public var availability: ProviderAvailability {
        get async { configuration.apiKey == nil ? .unavailable(.unauthorized) : .available }
    }

    static let credentialHint = "Set ANTHROPIC_API_KEY, or \"apiKey\" under \"anthropic\" in ~/.config/hearth/providers.json."

    /// Streams the reply. Throws ``ProviderError`` from the stream.
    public func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        let configuration = configuration
        let call = HTTPProviderCall(configuration, credentialHint: Self.credentialHint)
        guard let key = configuration.apiKey else { return call.missingKey() }
        let prepared: AnthropicWire.PreparedRequest
        do {
            prepared = try AnthropicWire.requestBody(request, configuration: configuration)
        } catch {
            return call.failing(error)
        }
        return call.post(
            client: client, url: joinURL(configuration.baseURL, "messages"),
            extra: [("x-api-key", key.value), ("anthropic-version", configuration.version)], body: prepared.body
        ) { response, sink, watchdog, failures in
            try await AnthropicWire.readReply(
                response, sink: sink, watchdog: watchdog, failures: failures,
                trimLeadingWhitespace: prepared.trimmedTrailingWhitespace)
        }
    }
}
