import Foundation
import HearthProviders
import NIOCore
import NIOSSL
import NIOWebSocket

/// One Bailian dialog behind a ``BailianDialogProvider``: its WebSocket connection (opened on
/// the first turn, reopened with the same `dialog_id` when it is gone), the dialog id, the
/// server's state, heartbeats, and the one-turn-at-a-time lock.
///
/// A reader task per connection decodes every frame, keeps the state, answers the end of an
/// answer with `LocalRespondingStarted` and `LocalRespondingEnded` (nothing to play in text
/// mode, so the server goes back to Listening), and passes events to the turn that holds the
/// lock. A turn that was cancelled hands the lock to a recovery that sends `RequestToSpeak`
/// (barge-in) and waits for Listening; a turn that failed drops the connection.
actor BailianDialogSession {
    /// Fixed settings, from the provider's configuration.
    struct Settings: Sendable {
        var endpoint: WebSocketEndpoint
        var apiKey: String
        var appID: String
        var workspaceID: String?
        var userID: String
        var connectTimeout: Duration
        var heartbeatInterval: Duration
        var recoveryTimeout: Duration
        var failures: HTTPFailureMapper
    }

    /// What a turn receives.
    enum Incoming: Sendable {
        case event(BailianDialogWire.Event)
        /// The connection ended, with why.
        case closed(ProviderError)
    }

    private struct Link {
        let number: Int
        let taskID: String
        let channel: any Channel
        let outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>
        var heartbeat: Task<Void, Never>?
    }

    let settings: Settings
    private let tls: NIOSSLContext?
    private(set) var dialogID: String?
    private var state: DialogState?
    private var link: Link?
    private var connections = 0
    /// The connection whose frames count (set before its reader starts, cleared when it goes).
    private var active: Int?
    /// A RequestToRespond was sent and its answer has not ended.
    private var answering = false
    /// Why the current connection is ending (a fatal frame or close frame read before the socket closed).
    private var ending: ProviderError?
    private var subscriber: AsyncStream<Incoming>.Continuation?
    private var watchdog: IdleWatchdog?
    /// The current answer was interrupted: its end needs no LocalResponding directives.
    private var interrupted = false
    private var busy = false
    private var waiters: [(id: Int, continuation: CheckedContinuation<Void, Error>)] = []
    private var nextWaiter = 0

    init(settings: Settings, dialogID: String?, tls: NIOSSLContext?) {
        self.settings = settings
        self.dialogID = dialogID
        self.tls = tls
    }

    // MARK: The turn lock

    /// Waits until no other turn (or recovery) holds the dialog. Throws `CancellationError`.
    func acquire() async throws {
        guard busy else {
            busy = true
            return
        }
        nextWaiter += 1
        let id = nextWaiter
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters.append((id, continuation))
                }
            }
        } onCancel: {
            Task { await self.abandonWait(id) }
        }
    }

    /// Lets the next waiting turn in.
    func release() {
        subscriber?.finish()
        subscriber = nil
        watchdog = nil
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().continuation.resume()
        }
    }

    private func abandonWait(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(throwing: CancellationError())
    }

    // MARK: Turns

    /// Starts receiving this session's events (for the lock holder); `watchdog` is touched by
    /// every frame but heartbeats. Returns the events, whether a connection is open, and the
    /// server's last state.
    func subscribe(_ watchdog: IdleWatchdog?) -> (AsyncStream<Incoming>, connected: Bool, state: DialogState?) {
        subscriber?.finish()
        let (stream, continuation) = AsyncStream.makeStream(of: Incoming.self)
        subscriber = continuation
        self.watchdog = watchdog
        return (stream, link != nil, state)
    }

    /// Opens a connection and sends `Start` (with the dialog id, when there is one).
    func connect() async throws {
        if settings.endpoint.tls && tls == nil {
            throw ProviderError(
                .network, provider: settings.failures.provider,
                message: "TLS is not available on this system, so wss:// cannot be used.")
        }
        let handshake = try await WebSocketConnector.connect(
            settings.endpoint, connectTimeout: settings.connectTimeout, tls: tls,
            headers: [("Authorization", "Bearer \(settings.apiKey)")])
        watchdog?.touch()
        switch handshake {
        case .rejected(let channel):
            let refusal = try await WebSocketConnector.refusal(channel, watchdog: watchdog ?? IdleWatchdog())
            throw settings.failures.error(status: refusal.status, retryAfter: refusal.retryAfter, body: refusal.body)
        case .upgraded(let channel):
            connections += 1
            let number = connections
            active = number
            let outbound = try await withCheckedThrowingContinuation {
                (ready: CheckedContinuation<NIOAsyncChannelOutboundWriter<WebSocketFrame>, Error>) in
                Task { await self.read(channel, number: number, ready: ready) }
            }
            let taskID = UUID().uuidString.lowercased()
            link = Link(number: number, taskID: taskID, channel: channel.channel, outbound: outbound)
            state = nil
            ending = nil
            link?.heartbeat = Task { await self.beat(number) }
            try await send(
                BailianDialogWire.start(
                    taskID: taskID, appID: settings.appID, workspaceID: settings.workspaceID, dialogID: dialogID,
                    userID: settings.userID))
        }
    }

    /// Sends `RequestToRespond` for `text`.
    func requestToRespond(_ text: String) async throws {
        guard let link else { throw closedError() }
        interrupted = false
        answering = true
        try await send(BailianDialogWire.requestToRespond(taskID: link.taskID, dialogID: dialogID, text: text))
    }

    /// After a cancelled turn (the lock still held): barge in with `RequestToSpeak` and wait,
    /// at most the recovery timeout, for the server to listen again; otherwise drop the
    /// connection. Releases the lock.
    func recover() async {
        defer { release() }
        guard let link, answering || state != .listening else { return }
        let (events, _, _) = subscribe(nil)
        interrupted = true
        answering = false
        do {
            try await send(BailianDialogWire.directive("RequestToSpeak", taskID: link.taskID, dialogID: dialogID))
        } catch {
            return await drop()
        }
        let listening = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await incoming in events {
                    switch incoming {
                    case .event(.state(let state)) where state == .listening: return true
                    case .closed: return false
                    default: continue
                    }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: self.settings.recoveryTimeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !listening { await drop() }
    }

    /// After a failed turn: drops the connection (the next turn reconnects with the dialog id).
    /// Releases the lock.
    func discard() async {
        await drop()
        release()
    }

    /// Ends the dialog's connection politely (`Stop`), keeping the dialog id.
    func close() async {
        await drop()
    }

    private func drop() async {
        guard let current = link else { return }
        link = nil
        active = nil
        answering = false
        current.heartbeat?.cancel()
        try? await current.outbound.write(frame(BailianDialogWire.directive("Stop", taskID: current.taskID, dialogID: dialogID)))
        try? await current.channel.close()
    }

    // MARK: Connection

    private func frame(_ data: Data) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: data))
    }

    private func send(_ data: Data) async throws {
        guard let link else { throw closedError() }
        try await link.outbound.write(frame(data))
    }

    private func closedError() -> ProviderError {
        ending ?? ProviderError(
            .network, provider: settings.failures.provider,
            message: "The Bailian dialog connection closed. The request can be retried (the dialog continues).")
    }

    /// Reads one connection's frames until it closes.
    private nonisolated func read(
        _ channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, number: Int,
        ready: CheckedContinuation<NIOAsyncChannelOutboundWriter<WebSocketFrame>, Error>
    ) async {
        var failure: (any Error)?
        do {
            try await channel.executeThenClose { inbound, outbound in
                ready.resume(returning: outbound)
                for try await frame in inbound {
                    guard await self.received(frame, on: number, outbound: outbound) else { break }
                }
            }
        } catch {
            failure = error
        }
        await ended(number, failure)
    }

    /// Handles one frame; false when the connection is to be closed.
    private func received(
        _ frame: WebSocketFrame, on number: Int, outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>
    ) async -> Bool {
        guard active == number else { return false }
        switch frame.opcode {
        case .binary:
            watchdog?.touch()  // audio: ignored in text mode, but the server is alive
            return true
        case .ping:
            try? await outbound.write(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData))
            return true
        case .connectionClose:
            var data = frame.unmaskedData
            let code = data.readInteger(as: UInt16.self)
            let reason = data.readString(length: data.readableBytes) ?? ""
            ending = ending ?? BailianDialogWire.closed(code: code, reason: reason, failures: settings.failures)
            var echo = ByteBuffer()
            echo.writeInteger(code ?? 1000)
            try? await outbound.write(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: echo))
            return false
        case .text:
            break
        default:
            return true
        }
        let event: BailianDialogWire.Event
        do {
            event = try BailianDialogWire.event(Data(frame.unmaskedData.readableBytesView), failures: settings.failures)
        } catch {
            ending = error as? ProviderError
            return false
        }
        if case .heartBeat = event {} else { watchdog?.touch() }
        switch event {
        case .started(let id):
            if let id { dialogID = id }
        case .state(let new):
            state = new
        case .respondingEnded where !interrupted:
            answering = false
            // Nothing to play in text mode: report playback as started and ended at once.
            for name in ["LocalRespondingStarted", "LocalRespondingEnded"] {
                try? await send(BailianDialogWire.directive(name, taskID: link?.taskID ?? "", dialogID: dialogID))
            }
        case .failure:
            answering = false
        case .fatal(let error):
            ending = error
            return false
        default:
            break
        }
        subscriber?.yield(.event(event))
        return true
    }

    private func ended(_ number: Int, _ failure: (any Error)?) {
        guard active == number else { return }
        active = nil
        answering = false
        let error = ending ?? failure.map { TransportErrors.classify($0, provider: settings.failures.provider, timeouts: CloudTimeouts()) }
            ?? closedError()
        ending = error
        link?.heartbeat?.cancel()
        link = nil
        state = nil
        subscriber?.yield(.closed(error))
    }

    /// Sends `HeartBeat` every interval while connection `number` lives (the service drops a
    /// connection it has had nothing to say on for 60 s; it answers heartbeats).
    private func beat(_ number: Int) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.heartbeatInterval)
            guard !Task.isCancelled, let link, link.number == number else { return }
            try? await send(BailianDialogWire.directive("HeartBeat", taskID: link.taskID, dialogID: dialogID))
        }
    }
}
