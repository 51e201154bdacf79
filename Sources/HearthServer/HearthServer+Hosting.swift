import HearthLocal
import HearthProviders
import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle
import UnixSignals

/// Hosting Hearth's server in an app's own process (docs/SWIFT-API.md#the-server-in-your-app).
///
/// Two ways, one set of parts — `hearth serve` is built from the same ones:
/// - **Its own listener**: ``HearthServer`` is a `Service`; put it in the app's `ServiceGroup`
///   and it binds ``ServerOptions/host``:``ServerOptions/port``, loads the model and, when the
///   group shuts down gracefully, drains as `hearth serve` does on SIGTERM.
/// - **Mounted** in the app's Hummingbird application: ``addRoutes(to:atPath:)`` puts every
///   route (`/v1/chat/completions`, `/v1/messages`, `/v1/responses`, `/v1/embeddings`,
///   `/v1/models`, `/health`, `/metrics`, Ollama's `/api/…`, …) on the app's router, and
///   ``mountedService`` — in the same `ServiceGroup` as the app's `Application` — loads the
///   model, drains and unloads.
extension HearthServer: Service {
    /// Serves on its own listener (and ``ServerOptions/ollamaPort``'s) inside the caller's
    /// `ServiceGroup`: binds, loads the model (`/health` answers 503 until it has), serves, and on
    /// the group's graceful shutdown (or ``shutdown()``) drains — new generation requests get
    /// 503, in-flight ones get ``ServerOptions/drainGrace`` seconds, then are cancelled — unloads
    /// the local models and returns. It handles no signals itself: the group does. Runs once.
    /// - Throws: when the address cannot be bound or the model cannot be loaded.
    public func run() async throws {
        try await run(gracefulShutdownSignals: [], onReady: { _ in })
    }

    /// Adds every route of Hearth's server, behind its own middleware (request ids and JSON
    /// errors in each API's shape, CORS, authentication by ``ServerOptions/apiKey`` or the
    /// gateway's clients, rate limits), to `router` under `path` — e.g. `"ai"` for
    /// `/ai/v1/chat/completions`, `""` for the root.
    ///
    /// The routes go into a group of their own, so Hearth's middleware wraps only them: the app's
    /// routes are not asked for Hearth's key, and middleware the app added to `router` before this
    /// call wraps Hearth's routes too. Run ``mountedService`` beside the `Application` that serves
    /// `router`, or every generation answers 503 "Loading model". The chat page (`/`, `/chat`) is
    /// served only at the root (it calls the API there). Give the `Application` ``httpServer`` so
    /// a generation stops when its client goes away and ``ServerOptions/maxConnections`` holds.
    /// Call this once per server.
    /// - Parameters:
    ///   - router: The app's router over ``HearthRequestContext`` (or a group of it that adds no
    ///     path of its own: Hearth's middleware matches routes by the path below `path`).
    ///   - path: The whole prefix of Hearth's paths; leading and trailing slashes are optional.
    public func addRoutes(to router: some RouterMethods<HearthRequestContext>, atPath path: String = "") {
        let mount = Self.normalizedMountPath(path)
        routes(router.group(RouterPath(mount)), mountPath: mount)
    }

    /// The `Service` behind routes mounted with ``addRoutes(to:atPath:)``: loads the local model
    /// when the group starts (`/health` turns 200), exports spans when
    /// ``ServerOptions/tracing`` is set, and on the group's graceful shutdown drains in-flight
    /// requests as `hearth serve` does, then unloads the local models and returns. It binds
    /// nothing: the app's `Application` serves the routes.
    ///
    /// Place it after the `Application` in the `ServiceGroup`'s services: services stop in
    /// reverse order, so Hearth drains its requests before the HTTP server stops. When the model
    /// cannot be loaded it throws, which (by default) ends the group, as `hearth serve` exits.
    /// Run it once.
    public var mountedService: some Service { MountedService(server: self) }

    /// The HTTP/1.1 server of an `Application` that serves Hearth's routes, as `hearth serve`
    /// uses: a per-connection handler that tells a generation its client went away (so it stops
    /// and frees its slot) and closes connections beyond ``ServerOptions/maxConnections``, and
    /// ``ServerOptions/idleTimeout``.
    public var httpServer: HTTPServerBuilder {
        let counter = connections
        return .http1(
            configuration: .init(
                // One per connection (the argument is evaluated for each).
                additionalChannelHandlers: [ConnectionWatcher(counter: counter)],
                idleTimeout: .milliseconds(Int64(options.idleTimeout * 1000))))
    }

    /// `path` as a router prefix: "" for the root, else one leading slash and none trailing.
    static func normalizedMountPath(_ path: String) -> String {
        let trimmed = path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        return trimmed.isEmpty ? "" : "/" + trimmed
    }

    /// `path` below `mount` ("/ai/v1/models" below "/ai" is "/v1/models"; `mount` itself is "/").
    static func routePath(_ path: String, mountedAt mount: String) -> String {
        guard !mount.isEmpty else { return path }
        if path == mount { return "/" }
        if path.hasPrefix(mount), path.dropFirst(mount.count).first == "/" { return String(path.dropFirst(mount.count)) }
        return path
    }

    /// The services that load, drain and unload the local models and export spans — the part of
    /// the server that is not a listener. With a listener (``run(gracefulShutdownSignals:onReady:)``)
    /// they surround the `Application`s: the exporter first (it stops last, so the spans of
    /// drained requests are sent), the lifecycle last (it drains first).
    func modelServices(listeners: [any Service]) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        var services = listeners.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }
        services.append(.init(service: LifecycleService(server: self)))
        if let traceExporter { services.insert(.init(service: traceExporter), at: 0) }
        return services
    }

    /// Runs `services` in a group of the server's own (so ``shutdown()`` reaches them), which
    /// shuts down gracefully on `signals` or when the enclosing group does.
    func runGroup(_ services: [ServiceGroupConfiguration.ServiceConfiguration], signals: [UnixSignal]) async throws {
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: signals, logger: logger))
        let shutdownEarly = lock.withLock {
            serviceGroup = group
            return pendingShutdown
        }
        if shutdownEarly { await group.triggerGracefulShutdown() }
        try await group.run()
        if case .failed(let message) = lock.withLock({ phase }) {
            throw ProviderError(.modelUnavailable, provider: local?.id ?? "local", message: message)
        }
    }

    /// The local models this server serves (the main one and each routed one), once each.
    var localProviders: [LocalProvider] {
        var providers: [LocalProvider] = local.map { [$0] } ?? []
        for name in gateway.routeNames {
            if let route = gateway.routes[name], case .local(let provider) = route.target, !providers.contains(where: { $0 === provider }) {
                providers.append(provider)
            }
        }
        return providers
    }

    /// ``mountedService``: the server's model services without a listener.
    struct MountedService: Service {
        let server: HearthServer

        func run() async throws {
            try await server.runGroup(server.modelServices(listeners: []), signals: [])
        }
    }
}
