import AsyncHTTPClient
import Foundation
import HearthProviders
import NIOCore
import NIOHTTP1

/// Qwen through DashScope's native text-generation API (the one many Chinese backends use):
/// `POST {base}/services/aigc/text-generation/generation` with `X-DashScope-SSE: enable`.
///
/// The reply is an event stream of `event:result` documents whose
/// `output.choices[0].message.content` is the next piece (`incremental_output: true`, the
/// default) or the whole text so far (turned into deltas here), with `finish_reason` `"null"`
/// (a string) until the last one and `usage.input_tokens`/`output_tokens`; there is no
/// `[DONE]`. Errors are `{code, message, request_id}` bodies (`Retry-After` on 429 is honoured)
/// or, mid-stream, `event:error`. Tools go out as `parameters.tools`/`tool_choice`/
/// `parallel_tool_calls`; streamed `message.tool_calls` pieces come back as
/// ``HearthProviders/ChatEvent/toolCall(_:)`` events (see docs/TOOLS-cloud.md). Reasoning options go
/// out as `parameters.enable_thinking`/`thinking_budget`, and `message.reasoning_content` comes
/// back as reasoning events (see docs/REASONING.md). See docs/PROVIDERS.md.
public struct DashScopeProvider: LanguageModelProvider {
    /// A Qwen model name, with the common ones as presets.
    public struct Model: Sendable, Hashable, ExpressibleByStringLiteral {
        /// The name DashScope knows it by.
        public var name: String

        /// Any model name DashScope serves.
        public init(_ name: String) {
            self.name = name
        }

        /// A model name written as a string literal.
        public init(stringLiteral name: String) {
            self.name = name
        }

        /// Qwen-Turbo: fast and cheap.
        public static let turbo = Model("qwen-turbo")
        /// Qwen-Flash: the successor of Turbo.
        public static let flash = Model("qwen-flash")
        /// Qwen-Plus: balanced (the default).
        public static let plus = Model("qwen-plus")
        /// Qwen-Max: the strongest.
        public static let max = Model("qwen-max")
        /// Qwen-Long: very long documents.
        public static let long = Model("qwen-long")
        /// Qwen3-Coder-Plus: code.
        public static let coder = Model("qwen3-coder-plus")
    }

    /// Everything that identifies and tunes the endpoint.
    public struct Configuration: Sendable {
        /// The provider id for events, errors and routing.
        public var id: String
        /// The API base, such as `https://dashscope.aliyuncs.com/api/v1`.
        public var baseURL: String
        /// Sent as `Authorization: Bearer …`.
        public var apiKey: CloudSecret?
        /// The model name sent when the request names none.
        public var model: String
        /// `incremental_output`: pieces (true) or the whole text so far (false) in each event.
        public var incrementalOutput: Bool
        /// Extra headers (such as `X-DashScope-WorkSpace`). Their values are redacted from errors.
        public var headers: [String: String]
        /// Connect and idle timeouts.
        public var timeouts: CloudTimeouts
        /// Retries before the first byte.
        public var retry: RetryPolicy

        /// Creates a configuration (default: Qwen-Plus on the Beijing endpoint, incremental output).
        public init(
            id: String = "dashscope", baseURL: String = DashScopeProvider.defaultBaseURL, apiKey: CloudSecret?,
            model: Model = .plus, incrementalOutput: Bool = true, headers: [String: String] = [:],
            timeouts: CloudTimeouts = CloudTimeouts(), retry: RetryPolicy = RetryPolicy()
        ) {
            self.id = id
            self.baseURL = baseURL
            self.apiKey = apiKey
            self.model = model.name
            self.incrementalOutput = incrementalOutput
            self.headers = headers
            self.timeouts = timeouts
            self.retry = retry
        }
    }

    /// `https://dashscope.aliyuncs.com/api/v1` (the SDK's `DASHSCOPE_HTTP_BASE_URL` overrides it).
    public static let defaultBaseURL = "https://dashscope.aliyuncs.com/api/v1"

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

    /// Qwen `model` with the key from `DASHSCOPE_API_KEY` or the config file (the `dashscope`
    /// entry, else `qwen`'s or `bailian`'s key) and the base URL from `DASHSCOPE_HTTP_BASE_URL`
    /// or the entry's `baseURL`.
    public static func qwen(_ model: Model? = nil, credentials: CloudCredentials) -> DashScopeProvider {
        let entry = credentials["dashscope"]
        var configuration = Configuration(
            apiKey: entry.apiKey ?? credentials["qwen"].apiKey ?? credentials["bailian"].apiKey,
            model: model ?? entry.model.map { Model($0) } ?? .plus, headers: entry.headers ?? [:])
        if let baseURL = entry.baseURL { configuration.baseURL = baseURL }
        return DashScopeProvider(configuration)
    }

    static let credentialHint =
        "Set DASHSCOPE_API_KEY, or \"apiKey\" under \"dashscope\" in ~/.config/hearth/providers.json."

    /// `.unavailable(.unauthorized)` without a key, else `.available`.
    public var availability: ProviderAvailability {
        get async { configuration.apiKey == nil ? .unavailable(.unauthorized) : .available }
    }

    /// Streams the reply. Throws ``ProviderError`` from the stream.
    public func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        let configuration = configuration
        let call = HTTPProviderCall(configuration, credentialHint: Self.credentialHint)
        guard let key = configuration.apiKey else { return call.missingKey("No DashScope API key is configured.") }
        let body: Data
        do {
            body = try DashScopeWire.requestBody(request, configuration: configuration)
        } catch {
            return call.failing(error)
        }
        let incremental = DashScopeWire.incrementalOutput(request, configuration: configuration)
        return call.post(
            client: client, url: joinURL(configuration.baseURL, "services/aigc/text-generation/generation"),
            extra: [("authorization", "Bearer \(key.value)"), ("x-dashscope-sse", "enable")], body: body
        ) { response, sink, watchdog, failures in
            try await DashScopeWire.readReply(
                response, incremental: incremental, sink: sink, watchdog: watchdog, failures: failures)
        }
    }
}
