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
    /// Seconds one write of a streamed answer may wait for a client that does not read before
    /// the connection is closed and the request's slot released.
    public var writeTimeout: Double
    /// Open connections at most; further ones are closed as soon as they are accepted.
    public var maxConnections: Int
    /// Requests to cloud routes in flight at once (their own pool: they never take the local
    /// model's slots); more get 503 + Retry-After.
    public var maxCloudInFlight: Int
    /// Tokens one `/v1/embeddings` request may have, all inputs together; more is a 400 naming
    /// the bound (`--max-embedding-tokens`).
    public var maxEmbeddingTokens = 16384
    /// Bytes of text one `/tokenize` request may have; more is a 400 naming the bound.
    public var maxTokenizeBytes = 1 << 20
    /// Tokens one `/tokenize` answer (or `/detokenize` request) may have; more is a 400 naming
    /// the bound (`--max-tokenize-tokens`).
    public var maxTokenizeTokens = 131_072
    /// Bytes one `/tokenize` or `/detokenize` answer may have; more is a 400 naming the bound.
    public var maxTokenizeResponseBytes = 8 << 20
    /// Serve the chat page at `/` and `/chat` (`--no-web-ui` turns it off).
    public var webUI = true
    /// Where Ollama's `/api/pull` and `/api/delete` fetch and remove models (nil: both answer 501).
    public var modelStore: (any ModelStore)?
    /// A second port serving the same routes (`--ollama-port 11434`, for apps that assume
    /// Ollama's port); 0 picks a free one (``HearthServer/ollamaPort``); nil: none.
    public var ollamaPort: Int?
    /// The labels of `/metrics`' `hearth_build_info` series (`hearth serve` gives `version`,
    /// `commit` and `kernel_level`); empty: no such series.
    public var buildInfo: [(String, String)] = []
    /// When set, each generation request's spans (request, prepare, queue, prefill, decode, settle) are
    /// exported over OTLP/HTTP (`hearth serve --otel-endpoint`, docs/SERVER.md#tracing).
    public var tracing: TracingOptions?
    /// The operator's MCP servers (`hearth serve --mcp FILE`): what a Responses request's
    /// `{"type": "mcp"}` tools may name (docs/MCP.md#hearth-serve); nil: such tools are a 400.
    public var mcp: (any MCPToolHost)?
    /// Generations one Responses request with MCP tools may run (its tool loop; default 8): the
    /// last may not call a tool, so the model answers.
    public var maxToolRounds = 8
    /// Faults a test injects at the pipeline's stages (nil: none). Tests only.
    package var faults: FaultInjector?

    /// Creates options.
    public init(
        host: String = "127.0.0.1", port: Int = 8080, apiKey: String? = nil, maxQueue: Int = 64, alias: String = "hearth",
        maxBodyBytes: Int = 4 << 20, requestTimeout: Double = 600, drainGrace: Double = 30, idleTimeout: Double = 30,
        writeTimeout: Double = 30, maxConnections: Int = 1024, maxCloudInFlight: Int = 64
    ) {
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
        self.maxCloudInFlight = maxCloudInFlight
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

/// An OpenAI- and Anthropic-compatible HTTP server over the provider protocol (docs/SERVER.md).
///
/// One request pipeline serves both the plain server and the gateway: the plain server is a
/// ``Gateway`` with one local route (named ``ServerOptions/alias``) and ``ServerOptions/apiKey``
/// as its one client. `run` binds, loads the local model if there is one (``/health`` answers 503
/// until it has), serves, and on graceful shutdown (SIGTERM/SIGINT, or ``shutdown()``) drains:
/// `/health` turns 503, new generation requests get 503, in-flight ones get
/// ``ServerOptions/drainGrace`` seconds to finish and are then cancelled, and `run` returns.
///
/// An app hosts it in its own process either as a `Service` with its own listener (``run()``)
/// or mounted in its own Hummingbird application (``addRoutes(to:atPath:)`` and
/// ``mountedService``); docs/SWIFT-API.md shows both.
public final class HearthServer: @unchecked Sendable {
    // `@unchecked Sendable`: mutable state is only touched under `lock`.
    enum Phase: Sendable { case loading, ready, draining, failed(String) }

    /// The local model (nil: a gateway of cloud routes only).
    let local: LocalProvider?
    let options: ServerOptions
    let logger: Logger
    /// Clients, signatures, limits, usage, cache, filter and model routes.
    let gateway: Gateway
    /// Started with `--config` (the token and usage routes exist).
    let configured: Bool
    let metrics = ServerMetrics()
    let connections: ConnectionCounter
    /// Local requests held until the model has a slot for them, released fairly between clients
    /// (nil without a local model).
    let localQueue: FairQueue?
    let lock = NSLock()
    var phase = Phase.loading
    /// Admitted generation requests per pool and per client.
    var admitted = (local: 0, cloud: 0)
    var admittedByClient: [String: Int] = [:]
    var cancellers: [Int: @Sendable () -> Void] = [:]
    var nextLease = 0
    var boundPort: Int?
    var ollamaBoundPort: Int?
    var serviceGroup: ServiceGroup?
    var pendingShutdown = false
    var announced = false
    var onReady: (@Sendable (Int) -> Void)?
    var context = 0
    /// Spans of generation requests and their exporter (``ServerOptions/tracing``).
    let tracer: HearthTracer?
    let traceExporter: OTLPTraceExporter?

    /// Creates a server over a local model; nothing happens until ``run(gracefulShutdownSignals:onReady:)``.
    /// With a `gateway`, its clients and model routes replace ``ServerOptions/apiKey`` and the
    /// single alias (docs/SERVER.md#gateway).
    public convenience init(
        provider: LocalProvider, options: ServerOptions, logger: Logger = Logger(label: "hearth.serve"), gateway: Gateway? = nil
    ) {
        self.init(local: provider, options: options, logger: logger, gateway: gateway)
    }

    /// Creates a server; `local` may be nil only with a `gateway` whose routes are all cloud
    /// providers (it then starts without loading a model).
    ///
    /// `models` are further local models, each served under its own name beside
    /// ``ServerOptions/alias`` (`hearth serve --model A --model B`; with a gateway, its `local`
    /// routes name them). They load on first use; give them a shared ``ModelResidency`` to bound
    /// how many stay loaded.
    public init(
        local: LocalProvider?, options: ServerOptions, logger: Logger = Logger(label: "hearth.serve"), gateway: Gateway?,
        models: [String: LocalProvider] = [:]
    ) {
        self.local = local ?? gateway?.local
        self.options = options
        self.logger = logger
        configured = gateway != nil
        if let gateway {
            self.gateway = gateway
        } else if let local {
            self.gateway = Gateway.plain(alias: options.alias, apiKey: options.apiKey, local: local, others: models)
        } else {
            // Neither a model nor routes: a server with no model routes (every generation is a 404).
            self.gateway = Gateway.plain(alias: options.alias, apiKey: options.apiKey, local: nil)
        }
        connections = ConnectionCounter(limit: options.maxConnections)
        localQueue = self.local.map { FairQueue(slots: $0.parallelSequences) }
        if self.local == nil { phase = .ready }
        metrics.recordBuildInfo(options.buildInfo)
        traceExporter = options.tracing.map { OTLPTraceExporter(options: $0, logger: logger) }
        tracer = traceExporter.map { HearthTracer(sink: $0) }
    }

    /// The bound port once listening (useful with port 0).
    public var port: Int? { lock.withLock { boundPort } }
    /// The second port (``ServerOptions/ollamaPort``) once bound.
    public var ollamaPort: Int? { lock.withLock { ollamaBoundPort } }

    /// Whether the model has loaded and the server is not draining.
    public var isReady: Bool { lock.withLock { if case .ready = phase { return true } else { return false } } }

    /// Generation requests admitted and not finished (local and cloud routes).
    public var inFlightCount: Int { lock.withLock { admitted.local + admitted.cloud } }

    /// The local models' load, summed, for the server-wide gauges; each model's own (loaded,
    /// running, waiting, KV-cache use) goes to the per-model gauges as it is read.
    func localModelLoad() -> (running: Int, waiting: Int, kvCacheUsage: Double) {
        var models: [(String, LocalProvider)] = []
        for name in gateway.routeNames {
            if let route = gateway.routes[name], case .local(let provider) = route.target,
                !models.contains(where: { $0.1 === provider })
            {
                models.append((name, provider))
            }
        }
        if models.isEmpty, let local { models = [(options.alias, local)] }
        var total = (running: 0, waiting: 0, kvCacheUsage: 0.0)
        for (name, provider) in models {
            let load = provider.schedulerLoad ?? (0, 0)
            let usage = provider.kvCacheUsage ?? 0
            metrics.recordModel(name, loaded: provider.isResident, running: load.running, waiting: load.waiting, kvCacheUsage: usage)
            if let storage = provider.kvCacheStorage {
                metrics.recordKVStorage(name, type: storage.type, bytes: storage.bytes, bytesPerToken: storage.bytesPerToken)
            }
            if let promptCache = provider.promptCacheStatistics { metrics.recordPromptCache(name, promptCache) }
            if let steps = provider.stepStatistics { metrics.recordSteps(name, steps) }
            total.running += load.running
            total.waiting += load.waiting
            total.kvCacheUsage = max(total.kvCacheUsage, usage)
        }
        return total
    }

    /// Starts a graceful shutdown (as SIGTERM does).
    public func shutdown() async {
        let group: ServiceGroup? = lock.withLock {
            if serviceGroup == nil { pendingShutdown = true }
            return serviceGroup
        }
        await group?.triggerGracefulShutdown()
    }

    /// Binds, loads the model and serves until graceful shutdown; `onReady` gets the port once
    /// both the socket listens and the model is loaded. `hearth serve`'s way: the server's own
    /// `ServiceGroup`, which shuts down gracefully on `gracefulShutdownSignals` (or when a group
    /// this runs in does). The same parts as ``addRoutes(to:atPath:)``, ``httpServer`` and
    /// ``mountedService``.
    /// - Throws: when the address cannot be bound or the model cannot be loaded.
    public func run(gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint], onReady: @escaping @Sendable (Int) -> Void = { _ in })
        async throws
    {
        lock.withLock { self.onReady = onReady }
        // Hearth's middleware on the router itself (not a group): an unknown path, too, is
        // authenticated first and answered with a JSON 404.
        let router = Router(context: HearthRequestContext.self)
        routes(router)
        var listeners: [any Service] = [
            Application(
                router: router, server: httpServer,
                configuration: .init(address: .hostname(options.host, port: options.port), serverName: "hearth"),
                onServerRunning: { [self] channel in
                    let port = channel.localAddress?.port ?? options.port
                    lock.withLock { boundPort = port }
                    announceIfReady()
                },
                logger: logger)
        ]
        if let second = options.ollamaPort {
            // The same router on Ollama's port: one pipeline, two listeners.
            listeners.append(
                Application(
                    router: router, server: httpServer,
                    configuration: .init(address: .hostname(options.host, port: second), serverName: "hearth"),
                    onServerRunning: { [self] channel in lock.withLock { ollamaBoundPort = channel.localAddress?.port ?? second } },
                    logger: logger))
        }
        try await runGroup(modelServices(listeners: listeners), signals: gracefulShutdownSignals)
    }

    func announceIfReady() {
        let ready: (Int, @Sendable (Int) -> Void)? = lock.withLock {
            guard !announced, case .ready = phase, let port = boundPort, let onReady else { return nil }
            announced = true
            return (port, onReady)
        }
        if let (port, callback) = ready { callback(port) }
    }

    /// Loads the model (when there is one), then waits for graceful shutdown, drains and unloads
    /// the local models.
    struct LifecycleService: Service {
        let server: HearthServer

        func run() async throws {
            if let local = server.local {
                do {
                    try await local.prewarm(nil)
                    server.lock.withLock {
                        server.context = local.loadedContext ?? 0
                        if case .loading = server.phase { server.phase = .ready }
                    }
                    server.logger.info("model loaded", metadata: ["context": "\(server.context)", "parallel": "\(local.parallelSequences)"])
                } catch {
                    let message = (error as? ProviderError)?.message ?? "\(error)"
                    server.lock.withLock { server.phase = .failed(message) }
                    server.logger.error("the model could not be loaded: \(message)")
                    throw error
                }
            }
            server.announceIfReady()
            try? await gracefulShutdown()
            await server.drain()
            do { try await server.gateway.ledger?.flush() } catch {
                server.logger.error("usage not recorded at shutdown", metadata: ["error": "\(UsageLedger.describe(error))"])
            }
            // The models' memory goes back with the server (an app's process lives on).
            for provider in server.localProviders { provider.unload() }
        }
    }

    /// Refuses new work, waits up to the grace period for in-flight requests, then cancels the rest.
    func drain() async {
        let count: Int = lock.withLock {
            phase = .draining
            return admitted.local + admitted.cloud
        }
        logger.info("draining", metadata: ["in_flight": "\(count)", "grace_seconds": "\(options.drainGrace)"])
        let deadline = ContinuousClock.now + .milliseconds(Int64(options.drainGrace * 1000))
        while inFlightCount > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let remaining = lock.withLock { Array(cancellers.values) }
        if !remaining.isEmpty { logger.warning("grace period over: cancelling \(remaining.count) request(s)") }
        for cancel in remaining { cancel() }
        let cutoff = ContinuousClock.now + .seconds(5)
        while inFlightCount > 0, ContinuousClock.now < cutoff {
            try? await Task.sleep(for: .milliseconds(20))
        }
        logger.info("drained")
    }

    /// A random request id (12 bytes of hex): ids say nothing about how many requests came before.
    static func newRequestID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<3).map { _ in String(format: "%08x", UInt32.random(in: 0...UInt32.max, using: &generator)) }.joined()
    }

    func requireReady() throws {
        switch lock.withLock({ phase }) {
        case .ready: return
        case .loading: throw APIError.unavailable("Loading model", retryAfter: 5)
        case .draining: throw APIError.unavailable("The server is shutting down.", retryAfter: 5)
        case .failed: throw APIError(status: 503, message: "The model could not be loaded.", type: "unavailable_error", code: "model_unavailable")
        }
    }
}
