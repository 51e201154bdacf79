import AsyncHTTPClient
import Foundation
import HearthProviders
import NIOCore
import NIOHTTP1

/// A provider for any server that speaks OpenAI's `POST /chat/completions` with streaming:
/// OpenAI, DeepSeek, Qwen's compatible mode, Ollama, llama.cpp's server, vLLM, TGI, LM Studio.
///
/// It streams with `stream: true` and `stream_options.include_usage`, reads the server-sent
/// events (`data:` lines, `[DONE]`), and maps HTTP and in-stream errors to ``ProviderError``.
/// Presets such as ``openAI(model:credentials:)`` and ``ollama(model:baseURL:)`` fill in the
/// base URL and the server's dialect. Tools go out as `tools`/`tool_choice`/`parallel_tool_calls`
/// and streamed `delta.tool_calls` come back as ``HearthProviders/ChatEvent/toolCall(_:)``
/// events (see docs/TOOLS-cloud.md). Reasoning (`reasoning_content`, or its alias `reasoning`,
/// as DeepSeek, Qwen, vLLM and llama.cpp's server stream it) comes back as
/// ``HearthProviders/ChatEvent/reasoningDelta(_:)`` and ``HearthProviders/ChatEvent/reasoningEnded(_:)``
/// (see docs/REASONING.md). See docs/PROVIDERS.md.
public struct OpenAICompatibleProvider: LanguageModelProvider {
    /// Everything that identifies and tunes one endpoint.
    public struct Configuration: Sendable {
        /// The provider id for events, errors and routing.
        public var id: String
        /// The API base, such as `https://api.openai.com/v1`; `/chat/completions` is appended.
        public var baseURL: String
        /// Sent as `Authorization: Bearer …`; `nil` for local servers that need none.
        public var apiKey: CloudSecret?
        /// Whether the endpoint needs ``apiKey`` (false for local servers).
        public var requiresAPIKey: Bool
        /// The model name sent when the request names none.
        public var model: String
        /// The model name `POST /embeddings` sends when the ``EmbeddingRequest`` names none
        /// (`nil`: ``model``, for servers that embed with the model they chat with).
        public var embeddingModel: String?
        /// Extra headers (organisation, project, gateway keys). Their values are redacted from errors.
        public var headers: [String: String]
        /// The JSON key for the token limit: `max_tokens`, or `max_completion_tokens` (OpenAI's newer models).
        public var maxTokensField: String
        /// Send `top_k`, `min_p` and `repetition_penalty` (vLLM, llama.cpp, Ollama accept them;
        /// OpenAI rejects unknown fields, so it is off there).
        public var sendsExtendedSampling: Bool
        /// Ask for a final usage chunk with `stream_options.include_usage`.
        public var includeUsage: Bool
        /// How a partial answer is continued (see ``ContinuationStyle``).
        public var continuationStyle: ContinuationStyle
        /// Connect and idle timeouts.
        public var timeouts: CloudTimeouts
        /// Retries before the first byte.
        public var retry: RetryPolicy
        /// Where a rejected key can be fixed, for the error message.
        public var credentialHint: String
        /// The response formats the endpoint enforces (default: OpenAI's `json_object` and
        /// `json_schema`); a request with any other format is refused with
        /// ``HearthProviders/ProviderError/Code/unsupported(feature:)`` before it is sent.
        public var structuredOutput: StructuredOutputSupport
        /// The tool-calling features the endpoint honours (default: all of OpenAI's); a request
        /// that needs another is refused with
        /// ``HearthProviders/ProviderError/Code/unsupported(feature:)`` before it is sent.
        public var toolCalling: ToolCallingSupport
        /// How the endpoint takes ``HearthProviders/ChatOptions/reasoning`` (default:
        /// OpenAI's `reasoning_effort`). Its reasoning comes back as `reasoning_content` (or
        /// `reasoning`) whatever the dialect; see docs/REASONING.md.
        public var reasoningDialect: ReasoningDialect

        /// Creates a configuration; the defaults suit a generic OpenAI-compatible server.
        public init(
            id: String = "openai-compatible", baseURL: String, apiKey: CloudSecret? = nil, requiresAPIKey: Bool = false,
            model: String, headers: [String: String] = [:], maxTokensField: String = "max_tokens",
            sendsExtendedSampling: Bool = false, includeUsage: Bool = true,
            continuationStyle: ContinuationStyle = .trailingAssistantMessage, timeouts: CloudTimeouts = CloudTimeouts(),
            retry: RetryPolicy = RetryPolicy(), credentialHint: String? = nil, embeddingModel: String? = nil,
            structuredOutput: StructuredOutputSupport = .openAI, toolCalling: ToolCallingSupport = .openAI,
            reasoningDialect: ReasoningDialect = .openAI
        ) {
            self.reasoningDialect = reasoningDialect
            self.structuredOutput = structuredOutput
            self.toolCalling = toolCalling
            self.id = id
            self.baseURL = baseURL
            self.apiKey = apiKey
            self.requiresAPIKey = requiresAPIKey
            self.model = model
            self.embeddingModel = embeddingModel
            self.headers = headers
            self.maxTokensField = maxTokensField
            self.sendsExtendedSampling = sendsExtendedSampling
            self.includeUsage = includeUsage
            self.continuationStyle = continuationStyle
            self.timeouts = timeouts
            self.retry = retry
            self.credentialHint =
                credentialHint
                ?? "Check the API key configured for \"\(id)\" in ~/.config/hearth/providers.json or the environment."
        }
    }

    /// This provider's settings.
    public let configuration: Configuration
    let client: HTTPClient  // internal: OpenAICompatibleProvider+Embeddings.swift posts with it too

    /// The provider id.
    public var id: String { configuration.id }

    /// Creates a provider. `httpClient` defaults to a process-wide client with
    /// `configuration.timeouts.connect`; pass your own to control pooling, proxies or TLS
    /// (its connect timeout then applies, and you shut it down).
    public init(_ configuration: Configuration, httpClient: HTTPClient? = nil) {
        self.configuration = configuration
        self.client = httpClient ?? SharedHTTPClients.client(connectTimeout: configuration.timeouts.connect)
    }

    /// `.unavailable(.unauthorized)` when a required key is missing; otherwise `.available`
    /// (reachability is not probed: a failed request is cheaper and the router handles it).
    public var availability: ProviderAvailability {
        get async {
            configuration.keyAvailability
        }
    }

    /// Streams the reply. Throws ``ProviderError`` from the stream.
    public func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        let configuration = configuration
        return configuration.stream(
            client: client, path: "chat/completions", encode: { try OpenAIWire.requestBody(request, configuration: configuration) }
        ) { response, sink, watchdog, failures in
            try await OpenAIWire.readReply(response, sink: sink, watchdog: watchdog, failures: failures)
        }
    }
}
