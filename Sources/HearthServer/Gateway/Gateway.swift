import Crypto
import Foundation
import HearthCloud
import HearthLocal
import HearthProviders
import Logging

/// `hearth serve --config FILE`: the server as a backend gateway for apps (docs/SERVER.md#gateway).
///
/// It authenticates clients (API keys stored as SHA-256, HMAC-signed requests, short-lived
/// tokens), enforces per-client requests per minute and tokens per day before any work,
/// records usage per client and model in SQLite, answers repeated deterministic requests
/// from a cache, filters content, and serves each public model name from the local model, a
/// cloud provider, or a cloud provider with the local model as fallback (``FallbackRouter``,
/// failing over mid-answer too).
public final class Gateway: Sendable {
    /// What serves a model route.
    enum Target: Sendable {
        /// The local model, with the server's full feature set (raw completions, log-probabilities).
        case local(LocalProvider)
        /// A cloud provider, alone or followed by fallbacks.
        case router(FallbackRouter)
    }

    /// A public model name and what serves it.
    struct ModelRoute: Sendable {
        let name: String
        let target: Target
        /// The provider ids, first to last.
        let chain: [String]

        /// Whether the local model alone serves the route.
        var isLocal: Bool {
            if case .local = target { return true }
            return false
        }
    }

    /// The settings this gateway was made from.
    public let configuration: GatewayConfiguration
    let clock: GatewayClock
    let authenticator: GatewayAuthenticator
    let limiter: RateLimiter
    /// Usage per client and model; nil for the plain server (`hearth serve` without `--config`).
    let ledger: UsageLedger?
    /// The model `hearth serve` loaded; nil when every route is a cloud provider.
    let local: LocalProvider?
    /// Every local model the server serves, by name (`hearth serve --model A --model B`);
    /// a `local` route's `model` names one of them.
    let localModels: [String: LocalProvider]
    let cache: ResponseCache?
    let routes: [String: ModelRoute]
    /// Route names in a stable order (`GET /v1/models`).
    let routeNames: [String]

    /// Builds the gateway: opens the usage database, makes the cloud providers (their keys and
    /// base URLs from `environment`, as HearthCloud reads them) and the routes.
    /// - Parameters:
    ///   - configuration: the parsed `--config` file.
    ///   - local: the server's local model (the `local` provider of every route); nil when no
    ///     route names the local provider, so a gateway of cloud routes starts without a model.
    ///   - environment: where cloud keys come from (the server's environment).
    ///   - clock: the time for limits, signatures, tokens and the cache (tests move it by hand).
    /// - Throws: ``GatewayConfigurationError`` when the usage database cannot be opened, or a
    ///   route names the local provider and there is no local model.
    ///   - localModels: every local model the server serves, by name, when it serves several;
    ///     a `local` route's `model` picks one (without it, the route gets `local`).
    public convenience init(
        configuration: GatewayConfiguration, local: LocalProvider?, localModels: [String: LocalProvider] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment, clock: GatewayClock = .system
    ) throws {
        if local == nil, let name = configuration.routes.values.filter({ $0.provider == .local }).map(\.name).sorted().first {
            throw GatewayConfigurationError(
                file: "", key: "models.\(name).provider",
                message: "names the local model, but the server has none; start it with --model (or route only to cloud providers).")
        }
        for route in configuration.routes.values.sorted(by: { $0.name < $1.name }) where route.provider == .local {
            if let model = route.model, localModels[model] == nil {
                throw GatewayConfigurationError(
                    file: "", key: "models.\(route.name).model",
                    message: "names '\(model.prefix(80))', which this server does not serve; serve it with --model (served: \(localModels.keys.sorted().joined(separator: ", "))).")
            }
        }
        let ledger = try UsageLedger(path: configuration.usageDatabase, retentionDays: configuration.usageRetentionDays)
        self.init(
            configuration: configuration, local: local, ledger: ledger, environment: environment, clock: clock, localModels: localModels)
    }

    /// The plain server (`hearth serve` without `--config`): one local route named `alias`,
    /// `apiKey` as its one client (none: every request is anonymous), no limits, no ledger.
    /// `others` are further local models, each a route of its own name.
    static func plain(alias: String, apiKey: String?, local: LocalProvider?, others: [String: LocalProvider] = [:]) -> Gateway {
        let clients = apiKey.map { [GatewayConfiguration.Client(name: "default", keyDigest: Array(SHA256.hash(data: Array($0.utf8))))] }
        var routes = local == nil ? [:] : [alias: GatewayConfiguration.Route(name: alias, provider: .local)]
        for name in others.keys where name != alias { routes[name] = GatewayConfiguration.Route(name: name, provider: .local, model: name) }
        let configuration = GatewayConfiguration(clients: clients ?? [], routes: routes)
        return Gateway(configuration: configuration, local: local, ledger: nil, environment: [:], clock: .system, localModels: others)
    }

    /// Builds the gateway from parsed parts. `providers` serve the routes of those names in
    /// place of the provider their configuration names (the tests' scripted upstreams); the
    /// route's fallbacks stay as configured.
    init(
        configuration: GatewayConfiguration, local: LocalProvider?, ledger: UsageLedger?, environment: [String: String],
        clock: GatewayClock, providers: [String: any LanguageModelProvider] = [:], localModels: [String: LocalProvider] = [:]
    ) {
        self.configuration = configuration
        self.clock = clock
        self.local = local
        self.localModels = localModels
        self.ledger = ledger
        authenticator = GatewayAuthenticator(configuration: configuration, clock: clock)
        limiter = RateLimiter(clock: clock)
        cache = configuration.cache.map { ResponseCache($0, clock: clock) }
        let today = RateLimiter.day(clock.now())
        for (client, used) in (try? ledger?.tokensUsed(on: today)) ?? [:] {
            limiter.seed(client: client, day: today, used: used)
        }
        // Keys only from the server's environment (no providers.json).
        let credentials = CloudCredentials.environmentOnly(environment)
        var routes: [String: ModelRoute] = [:]
        // A local route's model: the served model it names, else the server's first.
        func localModel(_ route: GatewayConfiguration.Route) -> LocalProvider? { route.model.flatMap { localModels[$0] } ?? local }
        for (name, route) in configuration.routes {
            if route.provider == .local, route.fallback.isEmpty, let model = localModel(route) {
                routes[name] = ModelRoute(name: name, target: .local(model), chain: [model.id])
                continue
            }
            var chain: [any LanguageModelProvider] = []
            for next in [route] + route.fallback.compactMap({ configuration.routes[$0] }) {
                guard let provider = providers[next.name] ?? Self.provider(next, credentials: credentials, local: localModel(next)) else { continue }
                if !chain.contains(where: { $0.id == provider.id }) { chain.append(provider) }
            }
            routes[name] = ModelRoute(
                name: name, target: .router(FallbackRouter(id: name, providers: chain)), chain: chain.map(\.id))
        }
        self.routes = routes
        routeNames = routes.keys.sorted()
    }

    /// The provider a route names first, with the route's timeout and attempts.
    static func provider(_ route: GatewayConfiguration.Route, credentials: CloudCredentials, local: LocalProvider?)
        -> (any LanguageModelProvider)?
    {
        let timeouts = CloudTimeouts(connect: .seconds(min(10, route.timeoutSeconds)), idle: .milliseconds(Int64(route.timeoutSeconds * 1000)))
        let retry = RetryPolicy(maxAttempts: route.attempts)
        switch route.provider {
        case .local:
            return local
        case .openai, .deepseek, .qwen:
            let preset: OpenAICompatibleProvider
            switch route.provider {
            case .deepseek: preset = .deepSeek(model: route.model, credentials: credentials)
            case .qwen: preset = .qwen(model: route.model, credentials: credentials)
            default: preset = .openAI(model: route.model, credentials: credentials)
            }
            var settings = preset.configuration
            settings.timeouts = timeouts
            settings.retry = retry
            return OpenAICompatibleProvider(settings)
        case .openaiResponses:
            var settings = OpenAIResponsesProvider.openAI(model: route.model, credentials: credentials).configuration
            settings.timeouts = timeouts
            settings.retry = retry
            return OpenAIResponsesProvider(settings)
        case .anthropic:
            var settings = AnthropicProvider.fromCredentials(credentials, model: route.model).configuration
            settings.timeouts = timeouts
            settings.retry = retry
            return AnthropicProvider(settings)
        case .dashscope:
            var settings = DashScopeProvider.qwen(route.model.map { DashScopeProvider.Model($0) }, credentials: credentials).configuration
            settings.timeouts = timeouts
            settings.retry = retry
            return DashScopeProvider(settings)
        case .spark:
            var settings = SparkProvider.fromCredentials(credentials).configuration
            if let model = route.model { settings.domain = model }
            settings.timeouts = timeouts
            settings.retry = retry
            return SparkProvider(settings)
        }
    }

    /// The route for `model` if the client may use it.
    /// - Throws: ``APIError`` 404 `model_not_found`, or 403 `model_not_allowed`.
    func route(_ model: String, for client: GatewayConfiguration.Client) throws -> ModelRoute {
        guard let route = routes[model] else {
            throw APIError(
                status: 404,
                message: "The model '\(model.prefix(200))' does not exist; this server serves \(allowed(client).joined(separator: ", ")) (see GET /v1/models).",
                type: "invalid_request_error", code: "model_not_found", param: "model")
        }
        if let models = client.models, !models.contains(model) {
            throw APIError(
                status: 403, message: "Client '\(client.name)' may not use the model '\(model)'.", type: "permission_error",
                code: "model_not_allowed", param: "model")
        }
        return route
    }

    /// The routes a client may use.
    func allowed(_ client: GatewayConfiguration.Client) -> [String] {
        routeNames.filter { client.models?.contains($0) ?? true }
    }
}
