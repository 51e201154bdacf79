import Foundation
import MCP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One MCP server, running: its process (stdio) or connection (HTTP), the SDK's client, and
/// what it offers. Every request is bounded by a timeout and fails at once, with a typed
/// ``MCPServerError``, when the process exits or the server writes something that is not MCP.
public actor MCPConnection {
    /// The server's entry in the file.
    public nonisolated let configuration: MCPServerConfiguration
    private let options: MCPOptions
    private var client: Client?
    private var process: MCPChildProcess?
    private let health = TransportHealth()
    private let listChanged = ListChangedFlag()
    private var preparedTransport: (any Transport)?

    /// The server's tools, as last listed (every page).
    public private(set) var tools: [MCP.Tool] = []
    /// The server's resources (`name (uri)`), first page, when it offers resources.
    public private(set) var resources: [String] = []
    /// The server's prompts by name, first page, when it offers prompts.
    public private(set) var prompts: [String] = []
    /// `name version` as the server introduced itself.
    public private(set) var serverInfo: String?

    /// The server's name in the file.
    public nonisolated var name: String { configuration.name }

    /// A connection to the server `configuration` names (not started: see ``start()``).
    public init(configuration: MCPServerConfiguration, options: MCPOptions = MCPOptions()) {
        self.configuration = configuration
        self.options = options
    }

    /// A connection over a transport already made (tests: the SDK's in-memory transport).
    init(name: String, transport: any Transport, options: MCPOptions) {
        configuration = MCPServerConfiguration(name: name, endpoint: .stdio(command: "(in memory)", arguments: [], environment: [:]))
        self.options = options
        preparedTransport = transport
    }

    /// The process id of a stdio server (its process group too), while it runs.
    public var processID: Int32? { process.map { Int32($0.pid) } }

    /// Whether the server's tool list changed since it was last listed (it sent
    /// `notifications/tools/list_changed`).
    public nonisolated var toolsChanged: Bool { listChanged.isSet }

    /// Starts the server (or connects), initializes the session and lists its tools, resources and prompts.
    /// - Throws: ``MCPServerError``.
    public func start() async throws {
        let transport: any Transport
        if let preparedTransport {
            transport = preparedTransport
        } else {
            switch configuration.endpoint {
            case .stdio(let command, let arguments, let environment):
                let process = try MCPChildProcess(command: command, arguments: arguments, environment: environment, server: name)
                self.process = process
                transport = MCPPipeTransport(process: process)
            case .http(let url, let headers):
                let session = URLSessionConfiguration.default
                session.timeoutIntervalForRequest = max(options.callTimeout, options.startTimeout) + 5
                transport = HTTPClientTransport(
                    endpoint: url, configuration: session, streaming: false,
                    requestModifier: { request in
                        var request = request
                        for (field, value) in headers { request.setValue(value, forHTTPHeaderField: field) }
                        return request
                    })
            }
        }
        let checked = MCPCheckedTransport(transport, health: health, server: name, secrets: configuration.secrets)
        let client = Client(name: "hearth", version: "1.0")
        self.client = client
        let flag = listChanged
        await client.onNotification(ToolListChangedNotification.self) { _ in flag.set(true) }
        let initialized = try await guarded("starting the server (MCP initialize)", timeout: options.startTimeout) {
            try await client.connect(transport: checked)
        }
        serverInfo = "\(initialized.serverInfo.name) \(initialized.serverInfo.version)"
        try await refreshTools()
        if initialized.capabilities.resources != nil {
            let page = try? await guarded("listing resources", timeout: options.callTimeout) { try await client.listResources() }
            resources = (page?.resources ?? []).prefix(100).map { "\($0.name) (\($0.uri))" }
        }
        if initialized.capabilities.prompts != nil {
            let page = try? await guarded("listing prompts", timeout: options.callTimeout) { try await client.listPrompts() }
            prompts = (page?.prompts ?? []).prefix(100).map(\.name)
        }
    }

    /// Lists the server's tools again, following `nextCursor` through every page (at most
    /// ``MCPOptions/maxToolsPerServer`` tools).
    /// - Throws: ``MCPServerError``.
    public func refreshTools() async throws {
        let client = try running()
        listChanged.set(false)
        var all: [MCP.Tool] = []
        var cursor: String?
        var seenCursors: Set<String> = []
        repeat {
            let after = cursor
            let page = try await guarded("listing tools", timeout: options.callTimeout) { try await client.listTools(cursor: after) }
            all += page.tools
            guard all.count <= options.maxToolsPerServer else {
                throw MCPServerError(.protocolError, server: name, message: "lists more than \(options.maxToolsPerServer) tools")
            }
            cursor = page.nextCursor
            if let next = cursor, !seenCursors.insert(next).inserted {
                throw MCPServerError(.protocolError, server: name, message: "repeats the tool-list cursor \"\(next.prefix(40))\"")
            }
        } while cursor != nil
        tools = all
    }

    /// Calls `tool` with `arguments`; a call still running after ``MCPOptions/callTimeout`` is
    /// cancelled (`notifications/cancelled`) and reported.
    /// - Throws: ``MCPServerError`` (`.timedOut`, `.serverExited`, `.protocolError`, `.requestFailed`…).
    ///   A result with `isError` is not thrown: it is the tool's answer.
    public func call(tool: String, arguments: [String: MCP.Value]) async throws -> CallTool.Result {
        let client = try running()
        let context: RequestContext<CallTool.Result>
        do {
            context = try await client.send(CallTool.request(.init(name: tool, arguments: arguments)))
        } catch {
            throw mapped(error, doing: "calling \(tool)")
        }
        let id = context.requestID
        return try await guarded(
            "the call to \(tool)", timeout: options.callTimeout,
            onGiveUp: { _ = try? await client.cancelRequest(id, reason: "hearth gave up on the call") }
        ) { try await context.value }
    }

    /// Ends the session and stops the server's process group (see ``MCPChildProcess/terminate(grace:)``).
    public func stop() async {
        if let client {
            _ = try? await withDeadline(seconds: 0.5, server: name, what: "disconnecting", failure: { nil }) {
                await client.disconnect()
            }
        }
        if let process {
            // On a thread of its own: it waits (up to a few seconds for a server that ignores
            // its stdin closing and SIGTERM), which must not hold one of the few cooperative threads.
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    process.terminate()
                    done.resume()
                }
            }
        }
        client = nil
        process = nil
    }

    /// Kills the server's process group at once (tests; a server that must go now).
    func killProcess() {
        process?.kill()
    }

    private func running() throws -> Client {
        if let exit = process?.exitDescription { throw exited(exit) }
        guard let client else { throw MCPServerError(.serverExited, server: name, message: "is not running") }
        return client
    }

    private func exited(_ how: String) -> MCPServerError {
        var message = "the server \(how)"
        if let lines = process?.stderrLines(3, redacting: configuration.secrets), !lines.isEmpty {
            message += "; its last words on stderr: " + lines.joined(separator: " | ")
        }
        return MCPServerError(.serverExited, server: name, message: message + " (/mcp enable \(name) starts it again)")
    }

    /// Runs one request under the deadline, the exit watch and the garbage watch.
    private func guarded<T: Sendable>(
        _ what: String, timeout: Double, onGiveUp: @escaping @Sendable () async -> Void = {},
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let health = self.health, process = self.process, name = self.name
        let secrets = configuration.secrets
        do {
            return try await withDeadline(
                seconds: timeout, server: name, what: what,
                failure: {
                    if let how = process?.exitDescription {
                        var message = "the server \(how) during \(what)"
                        let lines = process?.stderrLines(3, redacting: secrets) ?? []
                        if !lines.isEmpty { message += "; its last words on stderr: " + lines.joined(separator: " | ") }
                        return MCPServerError(.serverExited, server: name, message: message)
                    }
                    return health.problem
                }, onGiveUp: onGiveUp, operation)
        } catch {
            throw mapped(error, doing: what)
        }
    }

    private func mapped(_ error: any Error, doing what: String) -> MCPServerError {
        if let error = error as? MCPServerError { return error }
        if let problem = health.problem { return problem }
        if let process {
            // A lost connection is most often the server exiting: the reaper may not have seen
            // the exit yet, so give it a moment before calling it a connection failure.
            if process.exitDescription == nil, let lost = error as? MCPError, case .connectionClosed = lost {
                process.waitForExit(0.5)
            }
            if let how = process.exitDescription { return exited(how) }
        }
        var message: String
        let kind: MCPServerError.Kind
        if let error = error as? MCPError {
            switch error {
            case .connectionClosed, .transportError:
                kind = .connectionFailed
                message = "the connection failed during \(what): \(error.errorDescription ?? "\(error)")"
            default:
                kind = .requestFailed
                message = "\(what) failed: \(error.errorDescription ?? "\(error)")"
            }
        } else if error is CancellationError {
            kind = .cancelled
            message = "\(what) was cancelled"
        } else {
            kind = .connectionFailed
            message = "\(what) failed: \(error)"
        }
        for secret in configuration.secrets where !secret.isEmpty { message = message.replacingOccurrences(of: secret, with: "***") }
        return MCPServerError(kind, server: name, message: message)
    }
}

/// Limits and timeouts for MCP servers.
public struct MCPOptions: Sendable, Hashable {
    /// Seconds a server has to start and answer `initialize` (default 30: `uvx` may install first).
    public var startTimeout: Double
    /// Seconds a tool call (or a listing) may take (default 60).
    public var callTimeout: Double
    /// The most tools one server may list (default 500).
    public var maxToolsPerServer: Int
    /// The most characters of a result the model reads (default 32,768; the rest is cut with a note).
    public var maxResultCharacters: Int

    /// Creates options.
    public init(startTimeout: Double = 30, callTimeout: Double = 60, maxToolsPerServer: Int = 500, maxResultCharacters: Int = 32_768) {
        self.startTimeout = startTimeout
        self.callTimeout = callTimeout
        self.maxToolsPerServer = maxToolsPerServer
        self.maxResultCharacters = maxResultCharacters
    }
}

/// A flag set from the SDK's notification handler. `@unchecked Sendable`: guarded by `lock`.
final class ListChangedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set(_ flag: Bool) { lock.withLock { value = flag } }
}
