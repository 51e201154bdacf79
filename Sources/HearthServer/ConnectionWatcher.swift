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
    private let counter: ConnectionCounter
    private var counted = false

    init(counter: ConnectionCounter) { self.counter = counter }

    func handlerAdded(context: ChannelHandlerContext) {
        // Beyond the limit the connection is closed before a byte of it is read.
        if counter.open() {
            lock.withLock { counted = true }
        } else {
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        let wasCounted: Bool = lock.withLock {
            defer { counted = false }
            return counted
        }
        if wasCounted { counter.close() }
    }

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

/// Open connections, shared by every connection's ``ConnectionWatcher``.
final class ConnectionCounter: @unchecked Sendable {
    // `@unchecked Sendable`: `count` is only touched under `lock`.
    let limit: Int
    private let lock = NSLock()
    private var count = 0

    init(limit: Int) { self.limit = limit }

    /// Counts a new connection; false (and not counted) when `limit` are already open.
    func open() -> Bool {
        lock.withLock {
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    /// A counted connection closed.
    func close() { lock.withLock { count -= 1 } }

    /// Connections open now.
    var current: Int { lock.withLock { count } }
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
