import Foundation
import Hummingbird
import NIOCore

/// Notices that a client went away while its request is being answered, so the server can stop
/// the generation even when it writes nothing until the end (a non-streaming answer) or while the
/// request waits for a sequence slot.
///
/// One instance per connection sits in the channel pipeline (``HearthServer`` adds it through
/// `HTTP1Channel.Configuration.additionalChannelHandlers`). Hummingbird's child channels allow
/// remote half-closure, so a client closing its socket shows up as `ChannelEvent.inputClosed`
/// (end of input, the channel stays active until the server closes it) rather than as an
/// inactive channel; a reset shows up as `channelInactive`. Either marks the connection gone
/// and runs the registered actions once. Like nginx, a client that half-closes its side while
/// waiting for an answer counts as gone: HTTP clients do not do that.
///
/// Events arrive on the channel's event loop; request handlers register from their own tasks,
/// so the state is guarded by a lock. Reads and events pass on untouched.
final class ConnectionWatcher: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // `@unchecked Sendable`: `gone`, `actions` and `nextID` are only touched under `lock`.
    typealias InboundIn = NIOAny

    private let lock = NSLock()
    private var gone = false
    private var actions: [Int: @Sendable () -> Void] = [:]
    private var nextID = 0

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { markGone() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        markGone()
        context.fireChannelInactive()
    }

    /// Whether the client has closed or reset the connection.
    var isGone: Bool { lock.withLock { gone } }

    /// Runs `action` once when the client goes away — at once if it already has (then returns
    /// nil); otherwise returns a key for ``stopObserving(_:)``.
    func observe(_ action: @escaping @Sendable () -> Void) -> Int? {
        let key: Int? = lock.withLock {
            guard !gone else { return nil }
            nextID += 1
            actions[nextID] = action
            return nextID
        }
        if key == nil { action() }
        return key
    }

    /// Forgets an action registered with ``observe(_:)`` (the request has been answered).
    func stopObserving(_ key: Int) {
        _ = lock.withLock { actions.removeValue(forKey: key) }
    }

    private func markGone() {
        let pending: [@Sendable () -> Void] = lock.withLock {
            guard !gone else { return [] }
            gone = true
            defer { actions = [:] }
            return Array(actions.values)
        }
        for action in pending { action() }
    }
}

/// A registration with a connection's ``ConnectionWatcher``; ``end()`` stops it.
struct ConnectionWatch: Sendable {
    private let watcher: ConnectionWatcher?
    private let key: Int?

    fileprivate init(watcher: ConnectionWatcher?, key: Int?) {
        self.watcher = watcher
        self.key = key
    }

    /// Stops watching: the request has been answered (or given up); the connection may serve more.
    func end() {
        if let watcher, let key { watcher.stopObserving(key) }
    }
}

/// The request context of the server's routes: Hummingbird's basic context plus the request's
/// connection, so a generation can learn that its client went away (``ConnectionWatcher``).
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request arrived on.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

extension HearthServer {
    /// Calls `onGone` once if the client of `channel` closes or resets the connection before
    /// the returned watch is ended — at once if it already has.
    func watchConnection(_ channel: any Channel, onGone: @escaping @Sendable () -> Void) async -> ConnectionWatch {
        do {
            let watcher = try await channel.pipeline.handler(type: ConnectionWatcher.self).get()
            return ConnectionWatch(watcher: watcher, key: watcher.observe(onGone))
        } catch {
            // No watcher: the pipeline was torn down (the connection closed) — or it was never
            // added, when only a fully closed channel can be told apart.
            if !channel.isActive { onGone() }
            return ConnectionWatch(watcher: nil, key: nil)
        }
    }
}
