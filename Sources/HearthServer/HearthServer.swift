import Foundation
import HearthLocal
import HearthProviders
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// Settings of ``HearthServer``.
public struct ServerOptions: Sendable {
    /// Address to bind (loopback unless told otherwise).
    public var host: String
    /// TCP port; 0 picks a free one (see ``HearthServer/port``).
    public var port: Int
    /// When set, every route but `/health` and `/live` needs `Authorization: Bearer <key>` (or `x-api-key`).
    public var apiKey: String?
    /// Generation requests that may wait for a sequence slot beyond those running; more get 503 + Retry-After.
    public var maxQueue: Int
    /// The model name clients use (`GET /v1/models`, the `model` field).
    public var alias: String
    /// Largest request body in bytes; larger ones get 413.
    public var maxBodyBytes: Int
    /// Seconds a generation may take before it is stopped (its stream ends with an error).
    public var requestTimeout: Double
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT before they are cancelled.
    public var drainGrace: Double
    /// Seconds a connection may stay silent (no bytes in or out) before it is closed; also the
    /// time allowed to receive a whole request body (slow senders are cut off).
    public var idleTimeout: Double

    /// Creates options.
    public init(
        host: String = "127.0.0.1", port: Int = 8080, apiKey: String? = nil, maxQueue: Int = 64, alias: String = "hearth",
        maxBodyBytes: Int = 4 << 20, requestTimeout: Double = 600, drainGrace: Double = 30, idleTimeout: Double = 30
    ) {
        self.host = host
        self.port = port
        self.apiKey = apiKey
        self.maxQueue = maxQueue
        self.alias = alias
        self.maxBodyBytes = maxBodyBytes
        self.requestTimeout = requestTimeout
        self.drainGrace = drainGrace
        self.idleTimeout = idleTimeout
    }
}

/// An OpenAI- and Anthropic-compatible HTTP server over a ``LocalProvider`` (docs/SERVER.md).
///
/// `run` binds, loads the model (``/health`` answers 503 until it has), serves, and on
/// graceful shutdown (SIGTERM/SIGINT, or ``shutdown()``) drains: `/health` turns 503, new
/// generation requests get 503, in-flight ones get ``ServerOptions/drainGrace`` seconds to
/// finish and are then cancelled, and `run` returns.
public final class HearthServer: @unchecked Sendable {
    // `@unchecked Sendable`: mutable state is only touched under `lock`.
    enum Phase: Sendable { case loading, ready, draining, failed(String) }

    let provider: LocalProvider
    let options: ServerOptions
    let logger: Logger
    /// Keys, signatures, limits, usage, cache, filter and model routes (`--config`); nil = the plain server.
    let gateway: Gateway?
    let metrics = ServerMetrics()
    let lock = NSLock()
    var phase = Phase.loading
    var inFlight = 0
    var nextRequest = 0
    var cancellers: [Int: @Sendable () -> Void] = [:]
    var boundPort: Int?
    var serviceGroup: ServiceGroup?
    var pendingShutdown = false
    var announced = false
    var onReady: (@Sendable (Int) -> Void)?
    var context = 0

    /// Creates a server; nothing happens until ``run(gracefulShutdownSignals:onReady:)``.
    /// With a `gateway`, its clients and model routes replace ``ServerOptions/apiKey`` and the
    /// single alias (docs/SERVER.md#gateway).
    public init(
        provider: LocalProvider, options: ServerOptions, logger: Logger = Logger(label: "hearth.serve"), gateway: Gateway? = nil
    ) {
        self.provider = provider
        self.options = options
        self.logger = logger
        self.gateway = gateway
    }

    /// The bound port once listening (useful with port 0).
    public var port: Int? { lock.withLock { boundPort } }

    /// Whether the model has loaded and the server is not draining.
    public var isReady: Bool { lock.withLock { if case .ready = phase { return true } else { return false } } }

    /// Generation requests admitted and not finished.
    public var inFlightCount: Int { lock.withLock { inFlight } }

    /// Starts a graceful shutdown (as SIGTERM does).
    public func shutdown() async {
        let group: ServiceGroup? = lock.withLock {
            if serviceGroup == nil { pendingShutdown = true }
            return serviceGroup
        }
        await group?.triggerGracefulShutdown()
    }

    /// Binds, loads the model and serves until graceful shutdown; `onReady` gets the port once
    /// both the socket listens and the model is loaded.
    /// - Throws: when the address cannot be bound or the model cannot be loaded.
    public func run(gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint], onReady: @escaping @Sendable (Int) -> Void = { _ in })
        async throws
    {
        lock.withLock { self.onReady = onReady }
        let router = Router(context: ServerRequestContext.self)
        routes(router)
        let bindLogger = logger
        let app = Application(
            router: router,
            server: .http1(
                configuration: .init(
                    // One per connection (the argument is evaluated for each): tells a request
                    // handler that its client went away (ConnectionWatcher).
                    additionalChannelHandlers: [ConnectionWatcher()],
                    idleTimeout: .milliseconds(Int64(options.idleTimeout * 1000)))),
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: "hearth"),
            onServerRunning: { [self] channel in
                let port = channel.localAddress?.port ?? options.port
                lock.withLock { boundPort = port }
                announceIfReady()
            },
            logger: bindLogger)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: app), .init(service: LifecycleService(server: self))],
                gracefulShutdownSignals: gracefulShutdownSignals, logger: bindLogger))
        let shutdownEarly = lock.withLock {
            serviceGroup = group
            return pendingShutdown
        }
        if shutdownEarly { await group.triggerGracefulShutdown() }
        try await group.run()
        if case .failed(let message) = lock.withLock({ phase }) {
            throw ProviderError(.modelUnavailable, provider: provider.id, message: message)
        }
    }

    func announceIfReady() {
        let ready: (Int, @Sendable (Int) -> Void)? = lock.withLock {
            guard !announced, case .ready = phase, let port = boundPort, let onReady else { return nil }
            announced = true
            return (port, onReady)
        }
        if let (port, callback) = ready { callback(port) }
    }

    /// Loads the model, then waits for graceful shutdown and drains.
    struct LifecycleService: Service {
        let server: HearthServer

        func run() async throws {
            do {
                try await server.provider.prewarm(nil)
                server.lock.withLock {
                    server.context = server.provider.loadedContext ?? 0
                    if case .loading = server.phase { server.phase = .ready }
                }
                server.logger.info("model loaded", metadata: ["context": "\(server.context)", "parallel": "\(server.provider.parallelSequences)"])
                server.announceIfReady()
            } catch {
                let message = (error as? ProviderError)?.message ?? "\(error)"
                server.lock.withLock { server.phase = .failed(message) }
                server.logger.error("the model could not be loaded: \(message)")
                throw error
            }
            try? await gracefulShutdown()
            await server.drain()
        }
    }

    /// Refuses new work, waits up to the grace period for in-flight requests, then cancels the rest.
    func drain() async {
        let count: Int = lock.withLock {
            phase = .draining
            return inFlight
        }
        logger.info("draining", metadata: ["in_flight": "\(count)", "grace_seconds": "\(options.drainGrace)"])
        let deadline = ContinuousClock.now + .milliseconds(Int64(options.drainGrace * 1000))
        while lock.withLock({ inFlight }) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let remaining = lock.withLock { Array(cancellers.values) }
        if !remaining.isEmpty { logger.warning("grace period over: cancelling \(remaining.count) request(s)") }
        for cancel in remaining { cancel() }
        let cutoff = ContinuousClock.now + .seconds(5)
        while lock.withLock({ inFlight }) > 0, ContinuousClock.now < cutoff {
            try? await Task.sleep(for: .milliseconds(20))
        }
        logger.info("drained")
    }

    // MARK: Admission

    func newRequestID() -> (Int, String) {
        let n = lock.withLock {
            nextRequest += 1
            return nextRequest
        }
        return (n, String(format: "%08x%04x", n, UInt16.random(in: 0...UInt16.max)))
    }

    /// Admits a generation request or explains why not (503 while loading/draining or when the queue is full).
    func admit() throws {
        try lock.withLock {
            switch phase {
            case .loading:
                metrics.rejected.increment()
                throw APIError.unavailable("Loading model", retryAfter: 5)
            case .draining:
                metrics.rejected.increment()
                throw APIError.unavailable("The server is shutting down.", retryAfter: 5)
            case .failed(let message):
                throw APIError(status: 503, message: message, type: "unavailable_error", code: "model_unavailable")
            case .ready:
                break
            }
            let capacity = provider.parallelSequences + options.maxQueue
            guard inFlight < capacity else {
                metrics.rejected.increment()
                throw APIError(
                    status: 503,
                    message: "The server is at capacity (\(provider.parallelSequences) running, \(options.maxQueue) queued); retry later.",
                    type: "unavailable_error", code: "queue_full", retryAfter: 1)
            }
            inFlight += 1
            metrics.admitted.set(to: Double(inFlight))
        }
    }

    func release(_ number: Int) {
        lock.withLock {
            inFlight -= 1
            cancellers[number] = nil
            metrics.admitted.set(to: Double(inFlight))
        }
    }

    func register(_ number: Int, cancel: @escaping @Sendable () -> Void) {
        lock.withLock { cancellers[number] = cancel }
    }

    /// Constant-time comparison of the presented key with the configured one.
    func authorized(_ request: Request) -> Bool {
        guard let expected = options.apiKey else { return true }
        var presented: String?
        if let value = request.headers[.authorization] {
            let prefix = "Bearer "
            if value.count > prefix.count, value.lowercased().hasPrefix("bearer ") {
                presented = String(value.dropFirst(prefix.count))
            }
        }
        if presented == nil, let name = HTTPField.Name("x-api-key") { presented = request.headers[name] }
        guard let presented else { return false }
        return Self.constantTimeEqual(Array(presented.utf8), Array(expected.utf8))
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        if a.count != b.count { difference |= 1 }
        let n = max(a.count, b.count)
        for i in 0..<n {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            difference |= x ^ y
        }
        return difference == 0
    }
}
