import AsyncHTTPClient
import Foundation
import HearthProviders

/// A provider for OpenAI's Responses API (`POST /responses`, streamed), the API OpenAI's
/// reasoning models show their reasoning through.
///
/// Stateless: every request carries the whole conversation as `input` items with `store: false`
/// and asks for `include: ["reasoning.encrypted_content"]`, so each reasoning item comes back
/// with its `id` and encrypted content in a ``HearthProviders/ReasoningPart``; an assistant
/// message's parts (``HearthProviders/ChatMessage/reasoning``) go back as `reasoning` input
/// items before its text and calls, which lets the model continue its reasoning across tool
/// turns. Streamed reasoning summaries (`response.reasoning_summary_text.delta`) or reasoning
/// text (`response.reasoning_text.delta`, as gpt-oss servers send it) come back as
/// ``HearthProviders/ChatEvent/reasoningDelta(_:)``; `output_tokens_details.reasoning_tokens`
/// and `input_tokens_details.cached_tokens` are in the usage.
///
/// Options: ``HearthProviders/ChatOptions/reasoning`` is `reasoning.effort` (off is
/// `none`; a budget alone is the smallest effort whose budget covers it) and `reasoning.summary`
/// `auto` when ``HearthProviders/ReasoningOptions/summary`` is true; `maxTokens` is
/// `max_output_tokens`; tools are flat `function` tools with `tool_choice` and
/// `parallel_tool_calls`; a JSON Schema or JSON mode is `text.format`. The API has no `stop` and
/// no `logit_bias`: a request with either is refused as
/// ``HearthProviders/ProviderError/Code/unsupported(feature:)``; `seed`, the penalties, `top_k`,
/// `min_p` and `repetition_penalty` are not sent. See docs/REASONING.md and docs/PROVIDERS.md.
public struct OpenAIResponsesProvider: LanguageModelProvider {
    /// Everything that identifies and tunes the endpoint.
    public struct Configuration: Sendable {
        /// The provider id for events, errors, routing and the reasoning parts it makes.
        public var id: String
        /// The API base, such as `https://api.openai.com/v1`; `/responses` is appended.
        public var baseURL: String
        /// Sent as `Authorization: Bearer …`.
        public var apiKey: CloudSecret?
        /// Whether the endpoint needs ``apiKey``.
        public var requiresAPIKey: Bool
        /// The model name sent when the request names none.
        public var model: String
        /// Extra headers (organisation, project). Their values are redacted from errors.
        public var headers: [String: String]
        /// `store` (default false: nothing is kept by the provider, the reasoning comes back
        /// encrypted instead).
        public var store: Bool
        /// Ask for `include: ["reasoning.encrypted_content"]` (unless reasoning is off).
        public var includesEncryptedReasoning: Bool
        /// Ask for `reasoning.summary: auto` when the request's
        /// ``HearthProviders/ReasoningOptions/summary`` is nil (default false: OpenAI's own
        /// default, no summary, so no reasoning text). Only for reasoning models: OpenAI refuses
        /// `reasoning` fields on the others.
        public var summaryByDefault: Bool
        /// How a partial answer is continued (the Responses API has no prefill: default an
        /// instruction after the partial text).
        public var continuationStyle: ContinuationStyle
        /// Connect and idle timeouts.
        public var timeouts: CloudTimeouts
        /// Retries before the first byte.
        public var retry: RetryPolicy
        /// Where a rejected key can be fixed, for the error message.
        public var credentialHint: String

        /// Creates a configuration.
        public init(
            id: String = "openai-responses", baseURL: String = "https://api.openai.com/v1", apiKey: CloudSecret?,
            requiresAPIKey: Bool = true, model: String = "gpt-5-mini", headers: [String: String] = [:], store: Bool = false,
            includesEncryptedReasoning: Bool = true, summaryByDefault: Bool = false,
            continuationStyle: ContinuationStyle = .instruction(ContinuationStyle.defaultInstruction),
            timeouts: CloudTimeouts = CloudTimeouts(), retry: RetryPolicy = RetryPolicy(), credentialHint: String? = nil
        ) {
            self.id = id
            self.baseURL = baseURL
            self.apiKey = apiKey
            self.requiresAPIKey = requiresAPIKey
            self.model = model
            self.headers = headers
            self.store = store
            self.includesEncryptedReasoning = includesEncryptedReasoning
            self.summaryByDefault = summaryByDefault
            self.continuationStyle = continuationStyle
            self.timeouts = timeouts
            self.retry = retry
            self.credentialHint =
                credentialHint
                ?? "Set OPENAI_API_KEY, or \"apiKey\" under \"openai\" in ~/.config/hearth/providers.json."
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

    /// OpenAI's Responses API with the `openai` entry's key, base URL and headers
    /// (`OPENAI_API_KEY`, `OPENAI_BASE_URL`); `model` or the entry's model, else `gpt-5-mini`;
    /// `summaryByDefault` as in ``Configuration/summaryByDefault`` (`hearth chat` sets it, to
    /// show the reasoning).
    public static func openAI(
        model: String? = nil, credentials: CloudCredentials, summaryByDefault: Bool = false
    ) -> OpenAIResponsesProvider {
        let entry = credentials["openai"]
        return OpenAIResponsesProvider(
            Configuration(
                baseURL: entry.baseURL ?? "https://api.openai.com/v1", apiKey: entry.apiKey,
                model: model ?? entry.model ?? "gpt-5-mini", headers: entry.headers ?? [:], summaryByDefault: summaryByDefault))
    }

    /// `.unavailable(.unauthorized)` when a required key is missing, else `.available`.
    public var availability: ProviderAvailability {
        get async {
            configuration.keyAvailability
        }
    }

    /// Streams the reply. Throws ``ProviderError`` from the stream.
    public func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        let configuration = configuration
        return configuration.stream(
            client: client, path: "responses", encode: { try OpenAIResponsesWire.requestBody(request, configuration: configuration) }
        ) { response, sink, watchdog, failures in
            try await OpenAIResponsesWire.readReply(response, sink: sink, watchdog: watchdog, failures: failures)
        }
    }
}

extension OpenAIResponsesProvider.Configuration: HTTPProviderSettings {}
