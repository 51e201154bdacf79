// An app with its own Hummingbird server that also serves Hearth's OpenAI- and Anthropic-compatible
// API, under /ai, beside its own routes. Build: swift build --product hearth-server-in-app-example
// Run: hearth-server-in-app-example [MODEL] (or HEARTH_MODEL; PORT, default 8080, 0 picks a free one)
import Foundation
import HearthLocal
import HearthServer
import Hummingbird
import Logging
import ServiceLifecycle

let environment = ProcessInfo.processInfo.environment
let modelPath = CommandLine.arguments.dropFirst().first ?? environment["HEARTH_MODEL"] ?? "models/gemma-3-270m-q4_k_m.gguf"
let port = environment["PORT"].flatMap { Int($0) } ?? 8080
let logger = Logger(label: "server-in-app")

// Hearth's server over a local model, served as "gemma"; it binds no socket of its own here.
let model = LocalProvider(configuration: .init(modelPath: modelPath, context: 2048))
let hearth = HearthServer(provider: model, options: ServerOptions(alias: "gemma"), logger: logger)

// The app's router: its own middleware and route, and Hearth's routes under /ai
// (/ai/v1/chat/completions, /ai/v1/messages, /ai/v1/responses, /ai/v1/models, /ai/health, …).
let router = Router(context: HearthRequestContext.self)
router.add(middleware: LogRequestsMiddleware(.info))
router.get("/hello") { _, _ in "Hello from the app\n" }
hearth.addRoutes(to: router, atPath: "ai")

let app = Application(
    router: router, server: hearth.httpServer,
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { channel in
        let url = "http://127.0.0.1:\(channel.localAddress?.port ?? port)"
        FileHandle.standardOutput.write(Data("Serving \(url)/hello and Hearth's API at \(url)/ai/v1\n".utf8))
    },
    logger: logger)

// Hearth's service loads the model and, on SIGTERM, drains its requests and unloads the model;
// it comes after the app because services stop in reverse order.
let group = ServiceGroup(services: [app, hearth.mountedService], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
try await group.run()
FileHandle.standardOutput.write(Data("Stopped.\n".utf8))
