import ArgumentParser
import Foundation
import HearthFakeServers

#if canImport(Glibc)
import Glibc
#endif

/// `dashscope-fake`: the fake Bailian dialog and DashScope generation servers the tests use,
/// runnable on their own (scripts/check-dashscope-fakes.sh drives them with the official SDK;
/// the CLI tests point `hearth chat` at them).
@main
struct DashScopeFake: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashscope-fake",
        abstract: "Fake Bailian dialog (WebSocket), DashScope text-generation (SSE), OpenAI chat and responses, and Anthropic messages servers on loopback.",
        discussion: """
            Prints one JSON line, {"websocket": URL, "http": URL, "openai": URL, "anthropic": URL, "responses": URL}, \
            with the values for DASHSCOPE_WEBSOCKET_BASE_URL and DASHSCOPE_HTTP_BASE_URL and the \
            OpenAI chat, Anthropic and OpenAI Responses base URLs (same API key), then serves until it gets \
            SIGTERM or SIGINT, or --lifetime passes. On the way out it prints the protocol \
            violations it saw to stderr and exits 3 if there were any. Prompts pick scenarios \
            by keyword: #slow #error #silent #drop #close #task-failed #449 #429 #429-once \
            #overflow #500 #length.
            """)

    @Option(help: "Address to listen on (loopback only).")
    var host = "127.0.0.1"

    @Option(help: "Port of the dialog WebSocket server (0: any free port).")
    var dialogPort = 0

    @Option(help: "Port of the text-generation HTTP server (0: any free port).")
    var httpPort = 0

    @Option(help: "The API key clients must send as Authorization: Bearer KEY.")
    var apiKey = "sk-fake-dashscope-key"

    @Option(help: "The app_id the dialog's Start must carry.")
    var appID = "fake-app"

    @Option(help: "The workspace_id the dialog's Start must carry (default: not checked).")
    var workspaceID: String?

    @Option(help: "A JSON file of prompts to answers (other prompts get a default answer).")
    var answers: String?

    @Option(help: "Seconds without a frame from the dialog server before it drops the connection (the service: 60).")
    var silenceLimit: Double = 60

    @Option(help: "Milliseconds between answer frames and network chunks.")
    var pauseMs: Int = 3

    @Option(help: "Seconds to serve before stopping by itself.")
    var lifetime: Double = 600

    func validate() throws {
        guard ["127.0.0.1", "::1", "localhost"].contains(host) else { throw ValidationError("--host must be a loopback address") }
        guard (0...65535).contains(dialogPort), (0...65535).contains(httpPort) else { throw ValidationError("ports are 0...65535") }
        guard silenceLimit > 0, lifetime > 0, pauseMs >= 0 else { throw ValidationError("times must be positive") }
    }

    func run() async throws {
        let book: FakeAnswers
        do {
            book = try answers.map { try FakeAnswers.load(URL(fileURLWithPath: $0)) } ?? FakeAnswers()
        } catch {
            throw ValidationError("cannot read --answers \(answers ?? ""): \(error)")
        }
        let dialog = try await FakeBailianDialog.start(
            .init(
                apiKey: apiKey, appID: appID, workspaceID: workspaceID, answers: book,
                silenceLimit: .milliseconds(Int(silenceLimit * 1000)), pause: .milliseconds(pauseMs)),
            host: host, port: dialogPort)
        let generation = try await FakeDashScopeGeneration.start(
            .init(apiKey: apiKey, answers: book, pause: .milliseconds(pauseMs)), host: host, port: httpPort)
        let openAI = try await FakeOpenAIChat.start(apiKey: apiKey, host: host)
        let anthropic = try await FakeAnthropicMessages.start(apiKey: apiKey, host: host)
        let responses = try await FakeOpenAIResponses.start(apiKey: apiKey, host: host)
        let urls = #"{"websocket":"\#(dialog.url)","http":"\#(generation.baseURL)","openai":"\#(openAI.baseURL)","anthropic":"\#(anthropic.baseURL)","responses":"\#(responses.baseURL)"}"#
        FileHandle.standardOutput.write(Data(urls.utf8 + [10]))

        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let (stop, stopping) = AsyncStream.makeStream(of: Void.self)
        let sources = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: .main) }
        for source in sources {
            source.setEventHandler { stopping.yield() }
            source.resume()
        }
        defer { withExtendedLifetime(sources) {} }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in stop { return } }
            group.addTask { try? await Task.sleep(for: .milliseconds(Int(lifetime * 1000))) }
            await group.next()
            group.cancelAll()
        }
        // No graceful stop: clients may hold connections open, and the process ends here anyway.
        let violations = dialog.violations + generation.violations + openAI.violations.map { "openai: \($0)" }
            + anthropic.violations.map { "anthropic: \($0)" } + responses.violations.map { "responses: \($0)" }
        for violation in violations { FileHandle.standardError.write(Data("violation: \(violation)\n".utf8)) }
        FileHandle.standardError.write(
            Data("dashscope-fake: \(dialog.records.count) dialog directives, \(generation.requests.count) generation requests, \(openAI.requests.count) openai and \(anthropic.requests.count) anthropic and \(responses.requests.count) responses requests, \(violations.count) violations\n".utf8))
        if !violations.isEmpty { throw ExitCode(3) }
    }
}
