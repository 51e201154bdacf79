import Synchronization

/// The part every HTTP fake shares: its server, and the protocol violations it saw.
public final class FakeHTTPPlumbing: Sendable {
    let server = Mutex<TestHTTPServer?>(nil)
    let problems = Mutex<[String]>([])

    init() {}

    /// Starts the server on `host`:`port` with `handler`.
    func start(host: String, port: Int, _ handler: @escaping TestHTTPServer.Handler) async throws {
        let started = try await TestHTTPServer.start(host: host, port: port, handler)
        server.withLock { $0 = started }
    }

    /// Records that request `index` broke the protocol.
    func violation(_ index: Int, _ problem: String) {
        problems.withLock { $0.append("request \(index): \(problem)") }
    }
}

/// A fake HTTP service on a loopback socket (``FakeOpenAIChat``, ``FakeAnthropicMessages``).
public protocol LoopbackFake: Sendable {
    /// Its server and violations.
    var plumbing: FakeHTTPPlumbing { get }
    /// A fake (not yet listening) whose requests must carry `apiKey`.
    init(apiKey: String)
    /// Answers request number `index` (from 0).
    func serve(_ request: RecordedRequest, index: Int, _ out: RawResponder) async throws -> AfterResponse
}

extension LoopbackFake {
    /// Starts a fake on `host`:`port` (0: any free port).
    public static func start(apiKey: String, host: String = "127.0.0.1", port: Int = 0) async throws -> Self {
        let fake = Self(apiKey: apiKey)
        try await fake.plumbing.start(host: host, port: port) { request, index, out in
            try await fake.serve(request, index: index, out)
        }
        return fake
    }

    /// `http://127.0.0.1:<port>/v1`, a client's base URL.
    public var baseURL: String { plumbing.server.withLock { $0?.baseURL } ?? "" }
    /// The requests received, in order.
    public var requests: [RecordedRequest] { plumbing.server.withLock { $0?.requests } ?? [] }
    /// Requests that broke the protocol, described.
    public var violations: [String] { plumbing.problems.withLock { $0 } }

    /// Stops listening.
    public func stop() async {
        await plumbing.server.withLock { $0 }?.stop()
    }
}
