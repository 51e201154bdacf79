import Foundation
import HearthLocal
@testable import HearthServer
import HearthTestSupport
import Hummingbird
import Logging
import NIOHTTP1
import ServiceLifecycle
import Testing

/// Hearth's server hosted by an app (issue 64 item 5): its routes mounted under a prefix on the
/// app's own router, beside the app's route and middleware, served by the app's `Application`
/// in the app's `ServiceGroup`; and ``HearthServer`` itself as a `Service` in a group.
@Suite struct HostedServerTests {
    /// Adds `x-app: yes` to every answer: the app's middleware wraps Hearth's routes too.
    struct AppMiddleware<Context: RequestContext>: RouterMiddleware {
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            var response = try await next(request, context)
            if let name = .init("x-app") as HTTPFields.Element.Name? { response.headers[name] = "yes" }
            return response
        }
    }

    static func provider() -> LocalProvider {
        LocalProvider(
            configuration: .init(
                modelPath: Fixtures.checkpoint("phi3-mha").path, context: 256, threads: 1, batch: 16, parallel: 2,
                promptStyle: .chatTemplate))
    }

    static var quiet: Logger {
        var logger = Logger(label: "test.hosted")
        logger.logLevel = .warning
        return logger
    }

    /// Polls `path` until it answers 200 (the model has loaded), for up to 30 s.
    static func waitForHealth(_ client: ServerHarness.Client, _ path: String) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if (try? await client.send(.GET, path))?.status == 200 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("\(path) never answered 200")
    }

    @Test(.timeLimit(.minutes(1))) func routesMountedUnderAPrefixServeBesideTheAppsOwn() async throws {
        let provider = Self.provider()
        let hearth = HearthServer(provider: provider, options: ServerOptions(apiKey: "hosted-key", alias: "tiny"), logger: Self.quiet)
        let router = Router(context: HearthRequestContext.self)
        router.add(middleware: AppMiddleware())
        router.get("/hello") { _, _ in "Hello from the app" }
        hearth.addRoutes(to: router, atPath: "/ai/")
        let (ports, portsContinuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, server: hearth.httpServer, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in portsContinuation.yield(channel.localAddress?.port ?? 0) }, logger: Self.quiet)
        let group = ServiceGroup(services: [app, hearth.mountedService], logger: Self.quiet)
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        let client = ServerHarness.Client(port: port)
        try await Self.waitForHealth(client, "/ai/health")  // open without the key, as at the root
        #expect(hearth.isReady && hearth.port == nil, "mounted: ready, and no listener of its own")

        // The app's route: no key asked (Hearth's middleware wraps only its own routes).
        let hello = try await client.send(.GET, "/hello")
        #expect(hello.status == 200 && hello.body == "Hello from the app" && hello.headers["x-app"].first == "yes")
        #expect(hello.headers["x-request-id"].isEmpty)
        #expect(try await client.send(.GET, "/health").status == 404, "Hearth's routes are under /ai only")

        // Hearth's routes under /ai: its key, its ids, the app's middleware around them.
        let chat: [String: Any] = ["model": "tiny", "messages": [["role": "user", "content": "Hi"]], "max_tokens": 3]
        let refused = try await client.send("/ai/v1/chat/completions", json: chat)
        #expect(refused.status == 401 && refused.json["error"] != nil, "\(refused.body)")
        let key = [("authorization", "Bearer hosted-key")]
        let answered = try await client.send("/ai/v1/chat/completions", json: chat, headers: key)
        #expect(answered.status == 200, "\(answered.body)")
        #expect(answered.json["object"] as? String == "chat.completion")
        #expect(answered.headers["x-app"].first == "yes" && !answered.headers["x-request-id"].isEmpty)
        let models = try await client.send(.GET, "/ai/v1/models", headers: key)
        #expect(models.status == 200 && models.body.contains("\"tiny\""))
        // The middleware knows the route below the prefix: Anthropic's error shape on /ai/v1/messages,
        // and the large-body limit (not 64 KiB) on /ai/tokenize.
        let messages = try await client.send("/ai/v1/messages", json: ["model": "tiny", "max_tokens": 3, "messages": []])
        #expect(messages.status == 401 && messages.json["type"] as? String == "error", "\(messages.body)")
        let text = String(repeating: "hello world ", count: 8000)  // 96 KB
        let tokenized = try await client.send("/ai/tokenize", json: ["content": text], headers: key)
        #expect(tokenized.status == 200, "\(tokenized.body.prefix(300))")

        // The app's graceful shutdown drains Hearth's requests and unloads the model.
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(!hearth.isReady && !provider.isResident)
    }

    @Test(.timeLimit(.minutes(1))) func theServerIsAServiceInTheAppsGroup() async throws {
        let provider = Self.provider()
        let hearth = HearthServer(provider: provider, options: ServerOptions(port: 0, alias: "tiny"), logger: Self.quiet)
        let group = ServiceGroup(services: [hearth], logger: Self.quiet)
        let running = Task { try await group.run() }
        let deadline = ContinuousClock.now + .seconds(30)
        while hearth.port == nil || !hearth.isReady, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let port = try #require(hearth.port)
        let client = ServerHarness.Client(port: port)
        let chat: [String: Any] = ["model": "tiny", "messages": [["role": "user", "content": "Hi"]], "max_tokens": 3]
        let answered = try await client.send("/v1/chat/completions", json: chat)
        #expect(answered.status == 200 && answered.json["object"] as? String == "chat.completion", "\(answered.body)")
        // The enclosing group's graceful shutdown reaches the server's own group.
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(!hearth.isReady && !provider.isResident)
    }

    @Test func mountPathsAndRoutePaths() {
        #expect(HearthServer.routePath("/ai/v1/models", mountedAt: HearthServer.normalizedMountPath("ai/")) == "/v1/models")
        #expect(HearthServer.routePath("/ai", mountedAt: HearthServer.normalizedMountPath("/ai")) == "/")
        #expect(HearthServer.routePath("/aim/v1/models", mountedAt: HearthServer.normalizedMountPath("/ai")) == "/aim/v1/models")
        #expect(HearthServer.routePath("/v1/models", mountedAt: HearthServer.normalizedMountPath("")) == "/v1/models")
    }
}
