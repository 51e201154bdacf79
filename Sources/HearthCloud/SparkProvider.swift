import Foundation
import HearthProviders
import NIOCore
import NIOHTTP1
import NIOSSL
import NIOWebSocket

/// iFlytek Spark (星火) over its WebSocket chat API.
///
/// Each request opens `wss://spark-api.xf-yun.com/<version>/chat` with an HMAC-SHA256-signed URL
/// (see docs/PROVIDERS.md), sends one `header`/`parameter`/`payload` frame and streams
/// `payload.choices.text[].content` until `header.status == 2`. A non-zero `header.code` is
/// mapped to a ``ProviderError`` code; a refused handshake (bad signature, clock skew) is
/// ``ProviderError/Code/unauthorized``.
///
/// Spark has no assistant prefill: a partial answer is sent as a final assistant message and
/// Spark may restart the answer rather than continue it (best effort).
public struct SparkProvider: LanguageModelProvider {
    /// Spark model versions: the URL path and the matching `domain`.
    public struct Version: Sendable, Equatable {
        /// The WebSocket URL.
        public var url: String
        /// `parameter.chat.domain`.
        public var domain: String

        /// Creates a version.
        public init(url: String, domain: String) {
            self.url = url
            self.domain = domain
        }

        /// Spark Lite.
        public static let lite = Version(url: "wss://spark-api.xf-yun.com/v1.1/chat", domain: "lite")
        /// Spark Pro.
        public static let pro = Version(url: "wss://spark-api.xf-yun.com/v3.1/chat", domain: "generalv3")
        /// Spark Max (v3.5).
        public static let max = Version(url: "wss://spark-api.xf-yun.com/v3.5/chat", domain: "generalv3.5")
        /// Spark 4.0 Ultra.
        public static let ultra = Version(url: "wss://spark-api.xf-yun.com/v4.0/chat", domain: "4.0Ultra")
    }

    /// Everything that identifies and tunes the endpoint.
    public struct Configuration: Sendable {
        /// The provider id for events, errors and routing.
        public var id: String
        /// The WebSocket URL (`wss://…/v3.5/chat`).
        public var url: String
        /// `parameter.chat.domain`, matching the URL's version.
        public var domain: String
        /// The application id (`header.app_id`).
        public var appID: String?
        /// The API key named in the signature.
        public var apiKey: CloudSecret?
        /// The API secret the signature is computed with.
        public var apiSecret: CloudSecret?
        /// `header.uid`, an end-user id for Spark's accounting.
        public var uid: String
        /// Connect and idle timeouts.
        public var timeouts: CloudTimeouts
        /// Retries before the first byte.
        public var retry: RetryPolicy

        /// Creates a configuration (default version: Spark Max, v3.5).
        public init(
            id: String = "spark", version: Version = .max, appID: String?, apiKey: CloudSecret?,
            apiSecret: CloudSecret?, uid: String = "hearth", timeouts: CloudTimeouts = CloudTimeouts(),
            retry: RetryPolicy = RetryPolicy()
        ) {
            self.id = id
            self.url = version.url
            self.domain = version.domain
            self.appID = appID
            self.apiKey = apiKey
            self.apiSecret = apiSecret
            self.uid = uid
            self.timeouts = timeouts
            self.retry = retry
        }
    }

    /// This provider's settings.
    public let configuration: Configuration
    private let tls: NIOSSLContext?
    /// The clock the signature's date comes from (tests pin it).
    let now: @Sendable () -> Date

    /// The provider id.
    public var id: String { configuration.id }

    /// Creates a provider.
    public init(_ configuration: Configuration) {
        self.init(configuration, now: { Date() })
    }

    init(_ configuration: Configuration, now: @escaping @Sendable () -> Date) {
        self.configuration = configuration
        self.tls = try? NIOSSLContext(configuration: .makeClientConfiguration())
        self.now = now
    }

    /// Spark with `SPARK_APP_ID`, `SPARK_API_KEY`, `SPARK_API_SECRET` (and `SPARK_URL`) or the
    /// config file's `spark` entry (`url` and `domain` choose the version).
    public static func fromCredentials(_ credentials: CloudCredentials, version: Version = .max) -> SparkProvider {
        let entry = credentials["spark"]
        var configuration = Configuration(
            version: version, appID: entry.appID, apiKey: entry.apiKey, apiSecret: entry.apiSecret)
        if let url = entry.url { configuration.url = url }
        if let domain = entry.domain ?? entry.model { configuration.domain = domain }
        return SparkProvider(configuration)
    }

    static let credentialHint =
        "Set SPARK_APP_ID, SPARK_API_KEY and SPARK_API_SECRET, or \"appID\", \"apiKey\" and \"apiSecret\" under "
        + "\"spark\" in ~/.config/hearth/providers.json."

    /// `.unavailable(.unauthorized)` unless app id, key and secret are all set.
    public var availability: ProviderAvailability {
        get async {
            configuration.appID == nil || configuration.apiKey == nil || configuration.apiSecret == nil
                ? .unavailable(.unauthorized) : .available
        }
    }

    /// Streams the reply. Throws ``ProviderError`` from the stream.
    public func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        let configuration = configuration
        let redactor = Redactor([configuration.apiKey?.value, configuration.apiSecret?.value])
        let runner = CloudStreamRunner(
            provider: configuration.id, timeouts: configuration.timeouts, retry: configuration.retry, redactor: redactor)
        guard let appID = configuration.appID, let key = configuration.apiKey, let secret = configuration.apiSecret
        else {
            let error = ProviderError(
                .unauthorized, provider: configuration.id, message: "Spark credentials are missing. \(Self.credentialHint)")
            return runner.stream { _, _ in throw error }
        }
        guard let endpoint = WebSocketEndpoint(configuration.url) else {
            let error = ProviderError(
                .invalidRequest, provider: configuration.id,
                message: "\(configuration.url) is not a ws:// or wss:// URL. Check the Spark URL.")
            return runner.stream { _, _ in throw error }
        }
        let body: Data
        do {
            body = try SparkWire.requestBody(request, configuration: configuration, appID: appID)
        } catch {
            return runner.stream { _, _ in throw error }
        }
        let session = SparkSession(
            provider: configuration.id, endpoint: endpoint, apiKey: key.value,
            apiSecret: secret.value, body: body, maxTokens: request.options.maxTokens, tls: tls,
            connectTimeout: configuration.timeouts.connect, redactor: redactor, now: now)
        return runner.stream { sink, watchdog in try await session.run(sink: sink, watchdog: watchdog) }
    }
}
