import Foundation
import HearthProviders
import NIOSSL

/// Alibaba Cloud Bailian's real-time multimodal dialog (百炼 实时多模交互), in text mode, over
/// its WebSocket (`wss://dashscope.aliyuncs.com/api-ws/v1/inference`).
///
/// One provider instance is one dialog: the first request opens the connection and sends
/// `Start`; each request then sends one `RequestToRespond` (`type: "prompt"`, the last user
/// message) on the same connection, and the server keeps the history under the dialog's
/// `dialog_id`, which is carried across turns and, when the connection is gone (dropped, idle,
/// failed), into the `Start` of the next one. Answers arrive as `RespondingContent` frames whose
/// `text` is the whole answer so far; they stream as exact deltas, and `finished` (or
/// `RespondingEnded`) ends the stream. The server's states arrive as
/// ``HearthProviders/ChatEvent/dialogState(_:)`` events. Cancelling a stream sends
/// `RequestToSpeak`, which interrupts the answer; the next request works as usual. Heartbeats
/// keep an idle connection open. Errors (`Error` events, `task-failed`, header status codes,
/// close codes, refused handshakes) are ``ProviderError``s carrying the service's code and message.
///
/// System messages and earlier turns of the request are not sent (the app's configuration in
/// the Bailian console holds the prompt, and the server holds the history). A continuation is
/// best effort: the question is asked again and only the part of the new answer after the
/// already-shown text is streamed when it starts with it.
public final class BailianDialogProvider: LanguageModelProvider {
    /// Everything that identifies and tunes the dialog.
    public struct Configuration: Sendable {
        /// The provider id for events, errors and routing.
        public var id: String
        /// The WebSocket URL (the SDK's `DASHSCOPE_WEBSOCKET_BASE_URL` overrides it).
        public var url: String
        /// The DashScope API key, sent as `Authorization: Bearer …` on the handshake.
        public var apiKey: CloudSecret?
        /// The multimodal-dialog app's id (`app_id`, from the console's "My apps").
        public var appID: String?
        /// The workspace id (`workspace_id`); sent when set.
        public var workspaceID: String?
        /// `client_info.user_id`: the end user, for the app's per-user features (at most 36 characters).
        public var userID: String
        /// A dialog to continue (a `dialog_id` the service gave earlier); `nil` starts a new one.
        public var dialogID: String?
        /// How often to send `HeartBeat` on an open connection (the service drops one it has been
        /// silent on for 60 s, and answers heartbeats).
        public var heartbeatInterval: Duration
        /// How long an interrupted answer may take to return to Listening before the connection
        /// is dropped and the next request reconnects.
        public var recoveryTimeout: Duration
        /// Connect and idle timeouts.
        public var timeouts: CloudTimeouts
        /// Retries before the first text (a retry reconnects and continues the dialog).
        public var retry: RetryPolicy

        /// Creates a configuration.
        public init(
            id: String = "bailian", url: String = BailianDialogProvider.defaultURL, apiKey: CloudSecret?, appID: String?,
            workspaceID: String? = nil, userID: String = "hearth", dialogID: String? = nil,
            heartbeatInterval: Duration = .seconds(50), recoveryTimeout: Duration = .seconds(5),
            timeouts: CloudTimeouts = CloudTimeouts(), retry: RetryPolicy = RetryPolicy()
        ) {
            self.id = id
            self.url = url
            self.apiKey = apiKey
            self.appID = appID
            self.workspaceID = workspaceID
            self.userID = userID
            self.dialogID = dialogID
            self.heartbeatInterval = heartbeatInterval
            self.recoveryTimeout = recoveryTimeout
            self.timeouts = timeouts
            self.retry = retry
        }
    }

    /// `wss://dashscope.aliyuncs.com/api-ws/v1/inference`.
    public static let defaultURL = "wss://dashscope.aliyuncs.com/api-ws/v1/inference"

    /// This provider's settings.
    public let configuration: Configuration
    private let session: BailianDialogSession?

    /// The provider id.
    public var id: String { configuration.id }

    /// Creates a provider (no connection is opened until the first request).
    public init(_ configuration: Configuration) {
        self.configuration = configuration
        let redactor = Redactor([configuration.apiKey?.value])
        if let endpoint = WebSocketEndpoint(configuration.url), let key = configuration.apiKey,
            let appID = configuration.appID
        {
            let tls = endpoint.tls ? try? NIOSSLContext(configuration: .makeClientConfiguration()) : nil
            session = BailianDialogSession(
                settings: .init(
                    endpoint: endpoint, apiKey: key.value, appID: appID, workspaceID: configuration.workspaceID,
                    userID: configuration.userID, connectTimeout: configuration.timeouts.connect,
                    heartbeatInterval: configuration.heartbeatInterval, recoveryTimeout: configuration.recoveryTimeout,
                    failures: HTTPFailureMapper(provider: configuration.id, redactor: redactor, credentialHint: Self.credentialHint)),
                dialogID: configuration.dialogID, tls: tls)
        } else {
            session = nil
        }
    }

    deinit {
        if let session { Task { await session.close() } }
    }

    /// Bailian with `DASHSCOPE_API_KEY`, `BAILIAN_APP_ID`, `BAILIAN_WORKSPACE_ID` and
    /// `DASHSCOPE_WEBSOCKET_BASE_URL`, or the config file's `bailian` entry (`apiKey`, `appID`,
    /// `workspaceID`, `url`; the key may also come from the `dashscope` or `qwen` entry).
    public static func fromCredentials(_ credentials: CloudCredentials) -> BailianDialogProvider {
        let entry = credentials["bailian"]
        return BailianDialogProvider(
            Configuration(
                url: entry.url ?? defaultURL,
                apiKey: entry.apiKey ?? credentials["dashscope"].apiKey ?? credentials["qwen"].apiKey, appID: entry.appID,
                workspaceID: entry.workspaceID))
    }

    static let credentialHint =
        "Set DASHSCOPE_API_KEY, BAILIAN_APP_ID and BAILIAN_WORKSPACE_ID, or \"apiKey\", \"appID\" and \"workspaceID\" "
        + "under \"bailian\" in ~/.config/hearth/providers.json."

    /// `.unavailable(.unauthorized)` unless the key and app id are set.
    public var availability: ProviderAvailability {
        get async { configuration.apiKey == nil || configuration.appID == nil ? .unavailable(.unauthorized) : .available }
    }

    /// The id of this provider's dialog, once the service has given one (pass it as
    /// ``Configuration/dialogID`` to continue the dialog later).
    public var dialogID: String? {
        get async { await session?.dialogID ?? configuration.dialogID }
    }

    /// Closes the dialog's connection (`Stop`); a later request reconnects and continues the dialog.
    public func close() async {
        await session?.close()
    }

    /// Streams the answer to the last user message. Throws ``ProviderError`` from the stream.
    public func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        let configuration = configuration
        let runner = CloudStreamRunner(
            provider: configuration.id, timeouts: configuration.timeouts, retry: configuration.retry,
            redactor: Redactor([configuration.apiKey?.value]))
        guard configuration.apiKey != nil, configuration.appID != nil else {
            let error = ProviderError(
                .unauthorized, provider: configuration.id,
                message: "Bailian credentials are missing (an API key and an app id are needed). \(Self.credentialHint)")
            return runner.stream { _, _ in throw error }
        }
        guard let session else {
            let error = ProviderError(
                .invalidRequest, provider: configuration.id,
                message: "\(configuration.url) is not a ws:// or wss:// URL. Check DASHSCOPE_WEBSOCKET_BASE_URL.")
            return runner.stream { _, _ in throw error }
        }
        if let format = request.options.constrainedFormat {
            // The realtime dialog protocol carries a prompt only: a response format is refused, never dropped.
            let error = ResponseFormatWire.unsupported(format, provider: configuration.id, api: "Bailian's realtime dialog")
            return runner.stream { _, _ in throw error }
        }
        do {
            // The dialog protocol carries a prompt only: tools are refused, never dropped.
            try ToolWire.refuseTools(request, provider: configuration.id, api: "Bailian's realtime dialog")
            try ToolWire.refuseLogitBias(request, provider: configuration.id, api: "Bailian's realtime dialog")
        } catch {
            return runner.stream { _, _ in throw error }
        }
        guard let prompt = request.messages.last(where: { $0.role == .user })?.content else {
            let error = ProviderError(
                .invalidRequest, provider: configuration.id, message: "The request has no user message to send to the dialog.")
            return runner.stream { _, _ in throw error }
        }
        let continuation = request.continuation
        return runner.stream { sink, watchdog in
            try await BailianDialogTurn(session: session, prompt: prompt, continuation: continuation)
                .run(sink: sink, watchdog: watchdog)
        }
    }
}

/// One request's turn in the dialog.
struct BailianDialogTurn: Sendable {
    let session: BailianDialogSession
    let prompt: String
    let continuation: String?

    /// Takes the dialog, makes sure it is connected and listening, asks, and streams the answer.
    func run(sink: EventSink, watchdog: IdleWatchdog) async throws {
        try await session.acquire()
        do {
            try await converse(sink: sink, watchdog: watchdog)
        } catch {
            // Clean up outside this (possibly cancelled) task; the next turn waits for it.
            let session = session
            if Task.isCancelled || error is CancellationError {
                Task { await session.recover() }
            } else {
                Task { await session.discard() }
            }
            throw error
        }
        await session.release()
    }

    private func converse(sink: EventSink, watchdog: IdleWatchdog) async throws {
        let (events, connected, state) = await session.subscribe(watchdog)
        var inbox = events.makeAsyncIterator()
        if !connected { try await session.connect() }
        var listening = connected && state == .listening
        while !listening {
            switch try await next(&inbox) {
            case .state(let new):
                sink.yield(.dialogState(new))
                listening = new == .listening
            case .failure(let error), .fatal(let error): throw error
            default: continue
            }
        }
        try await session.requestToRespond(prompt)
        var text = CumulativeText(continuation: continuation)
        while true {
            switch try await next(&inbox) {
            case .state(let new):
                sink.yield(.dialogState(new))
            case .content(let cumulative, let finished):
                sink.text(text.delta(for: cumulative, final: finished))
                if finished { return complete(sink) }
            case .respondingEnded:
                return complete(sink)
            case .failure(let error), .fatal(let error):
                throw error
            default:
                continue
            }
        }
    }

    /// The next event; a closed connection throws its error, a cancelled wait `CancellationError`.
    private func next(_ inbox: inout AsyncStream<BailianDialogSession.Incoming>.Iterator) async throws
        -> BailianDialogWire.Event
    {
        guard let incoming = await inbox.next() else { throw CancellationError() }
        switch incoming {
        case .event(let event): return event
        case .closed(let error): throw error
        }
    }

    private func complete(_ sink: EventSink) {
        sink.yield(.finished(.stop))
        sink.finish()
    }
}
