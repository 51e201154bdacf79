import ArgumentParser
import Foundation
import HearthLocal
import HearthKernels
import HearthServer
import Logging

/// `hearth serve`: the OpenAI- and Anthropic-compatible HTTP server (docs/SERVER.md).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a model over HTTP with the OpenAI and Anthropic APIs (chat, completions, messages, metrics).",
        discussion: """
            Binds to loopback unless --host says otherwise and prints the URL once the model is loaded. \
            SIGTERM or SIGINT drains: /health turns 503, new requests get 503, in-flight requests get \
            --grace seconds to finish, then the server exits 0. The sampling flags (--temperature,             --top-k, --top-p, --min-p, --repeat-penalty, --seed) and --max-tokens are defaults for             requests that leave the field out, as llama-server's are. Every option can also come \
            from the environment: HEARTH_ and its long name in upper case with - as _ \
            (HEARTH_PORT=8080, HEARTH_CTX=8192, HEARTH_NO_WEB_UI=1; a repeatable option's values \
            separated by commas); the command line wins. HEARTH_API_KEY is the key (after \
            --api-key-file and --api-key); --models has no variable (HEARTH_MODELS says where the \
            model registry is). See docs/SERVER.md.
            """)

    // `--model` as every command declares it (`ModelOption.help`), but repeatable.
    @Option(name: [.customShort("m"), .long], help: ArgumentHelp(ModelOption.help + " Repeat to serve several: each request's `model` picks one by that name (a path by its file name without extension)."))
    var model: [String] = []

    @Option(name: .long, help: "Serve every .gguf and .hqf file and checkpoint folder in this directory too, each under its name without extension.")
    var models: String?

    @Option(name: .long, help: "With several models: how many are in memory at once, those requests still use included; a request for another unloads the least recently used that nothing uses, or waits for one (models load on first use).")
    var maxLoaded: Int = 3

    @Option(name: .long, help: "Address to bind; 127.0.0.1 (loopback) unless you mean to expose the server.")
    var host: String = "127.0.0.1"

    @Option(name: .long, help: "TCP port to listen on (0 picks a free port; the printed URL shows it).")
    var port: Int = 8080

    @Option(name: .long, help: "Require this key on every route but /health and /live (Authorization: Bearer KEY or x-api-key). Visible in `ps`: prefer --api-key-file or HEARTH_API_KEY.")
    var apiKey: String?

    @Option(name: .long, help: "Read the API key from this file (first line; surrounding whitespace ignored).")
    var apiKeyFile: String?

    @Option(name: .long, help: "Requests decoded at once (sequence slots, each with its own KV cache of --ctx tokens).")
    var parallel: Int = 4

    @OptionGroup var context: ContextOption
    @OptionGroup var workers: ThreadsOption
    @OptionGroup var batching: BatchOption
    @OptionGroup var kv: KVTypeOption
    @OptionGroup var speculation: SpeculativeOption
    @OptionGroup var activation: ActivationOption
    @OptionGroup var promptCache: PromptCacheOption
    var ctx: Int? { context.ctx }
    var threads: Int? { workers.threads }

    @Option(name: .long, help: "Requests that may wait for a free slot beyond the running ones; more are refused with 503 and Retry-After.")
    var maxQueue: Int = 64

    @Option(name: .long, help: "The model name clients send and GET /v1/models lists (default: the model file's name without extension).")
    var alias: String?

    @Option(name: .long, help: "Largest request body in bytes (larger ones get 413).")
    var maxBodyBytes: Int = 4 << 20

    @Option(name: .long, help: "Seconds a single generation may take before it is stopped.")
    var requestTimeout: Double = 600

    @Option(name: .long, help: "Seconds in-flight requests get to finish after SIGTERM/SIGINT before they are cancelled.")
    var grace: Double = 30

    @Option(name: .long, help: "Seconds a connection may stay silent, and the time allowed to send a request body.")
    var idleTimeout: Double = 30

    @Option(name: .long, help: "Seconds one write of a streamed answer may wait for a client that does not read; then the connection is closed and the request's slot released.")
    var writeTimeout: Double = 30

    @Option(name: .long, help: "Open connections at most; further ones are closed as soon as they are accepted.")
    var maxConnections: Int = 1024

    @Option(name: .long, help: "Requests to cloud routes (--config) in flight at once, a pool of their own beside the local model's slots.")
    var maxCloudInFlight: Int = 64

    @Option(name: .long, help: "Tokens one /v1/embeddings request may have, all inputs together; more is refused with 400.")
    var maxEmbeddingTokens: Int = 16384

    @Option(name: .long, help: "Tokens one /tokenize answer or /detokenize request may have; more is refused with 400 (the text is also bounded at 1 MiB, the answer at 8 MiB).")
    var maxTokenizeTokens: Int = 131_072

    @Option(name: .long, help: "Prompt tokens a decode step may spend on new requests while others are generating (at most --batch): more admits a burst of new requests sooner (time to first token); 32 keeps running streams' pace steadier (inter-token latency).")
    var prefillWhileDecoding: Int = 128

    @Option(name: .long, help: "How conversations become prompts: automatic (base models get the User:/Assistant: dialogue and its stop rules, instruction-tuned models their chat template), chat-template or dialogue.")
    var promptStyle: ServePromptStyle = .automatic

    @Option(name: .customLong("chat-template"), help: ArgumentHelp(ChatTemplateOption.help + " Given once, it applies to every model; repeated, the Nth goes with the Nth --model.", valueName: "file|name"))
    var chatTemplate: [String] = []

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(name: .long, help: "Log lines on stderr: text (swift-log's key=value lines) or json (one object per line: time, level, logger, message, and the metadata: a request's id, status, model, tokens, timings). Prompts and keys are never logged.")
    var logFormat: LogFormat = .text

    @Option(name: .long, help: ArgumentHelp("Export each generation request's spans (request, prepare, queue, prefill, decode, settle; model, route, tokens, finish reason — never prompts or keys) over OTLP/HTTP (JSON) to this collector, e.g. http://localhost:4318 (/v1/traces is appended). Without it, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT configure it; OTEL_SERVICE_NAME names the service (default hearth). A request's traceparent header is honoured.", valueName: "url"))
    var otelEndpoint: String?

    @Flag(name: .long, help: "Cut structured output at max_tokens (finish_reason length) instead of steering its last tokens so the answer ends complete and valid; a request's finish_in_budget overrides it.")
    var noFinishInBudget = false

    @Option(name: .long, help: "Also listen on this port (same routes), for apps that assume Ollama's 11434.")
    var ollamaPort: Int?

    @Flag(name: .long, help: "Do not serve the chat page at / and /chat (the APIs stay).")
    var noWebUI = false

    @OptionGroup var sampling: SamplingFlags

    @Option(name: [.customShort("n"), .long], help: "Most tokens a reply may have when the request sets no max_tokens (default: until the model stops or the context fills).")
    var maxTokens: Int?

    @Option(name: .long, help: "Run as a gateway configured by this JSON file: client keys, HMAC signatures, rate limits, token quotas, usage in SQLite, response cache, content filter, cloud routes with local fallback (docs/SERVER.md#gateway). Replaces --api-key.")
    var config: String?

    @OptionGroup var mcp: ServeMCPOptions

    func validate() throws {
        if apiKey != nil && apiKeyFile != nil { throw ValidationError("give --api-key or --api-key-file, not both") }
        if let otelEndpoint, TracingOptions.redacted(otelEndpoint) == nil {
            throw ValidationError("--otel-endpoint takes an http:// or https:// URL, such as http://localhost:4318")
        }
        if config != nil && (apiKey != nil || apiKeyFile != nil) {
            throw ValidationError("--config declares the clients' keys; do not give --api-key or --api-key-file with it")
        }
        if !(0...65535).contains(port) { throw ValidationError("--port must be between 0 and 65535") }
        if let ollamaPort, !(0...65535).contains(ollamaPort) || (ollamaPort == port && port != 0) {
            throw ValidationError("--ollama-port must be between 0 and 65535 and differ from --port")
        }
        if !(1...256).contains(parallel) { throw ValidationError("--parallel must be between 1 and 256") }
        if parallel > batching.batch { throw ValidationError("--parallel must be at most --batch (each step holds a token of every running request)") }
        if !(0...100_000).contains(maxQueue) { throw ValidationError("--max-queue must be between 0 and 100000") }
        if maxBodyBytes < 1024 { throw ValidationError("--max-body-bytes must be at least 1024") }
        if !(requestTimeout > 0) || !(grace >= 0) || !(idleTimeout > 0) || !(writeTimeout > 0) {
            throw ValidationError("--request-timeout, --idle-timeout and --write-timeout must be positive, --grace at least 0")
        }
        if !(1...batching.batch).contains(prefillWhileDecoding) {
            throw ValidationError("--prefill-while-decoding must be between 1 and --batch (\(batching.batch))")
        }
        if maxConnections < 1 || maxCloudInFlight < 1 { throw ValidationError("--max-connections and --max-cloud-in-flight must be at least 1") }
        if !(1...10_000_000).contains(maxEmbeddingTokens) || !(1...10_000_000).contains(maxTokenizeTokens) {
            throw ValidationError("--max-embedding-tokens and --max-tokenize-tokens must be between 1 and 10000000")
        }
        if Logger.Level(rawValue: logLevel) == nil { throw ValidationError("--log-level takes trace, debug, info, notice, warning, error or critical") }
        if let alias, alias.isEmpty || alias.count > 256 { throw ValidationError("--alias must be 1 to 256 characters") }
        if alias != nil && (model.count > 1 || models != nil) {
            throw ValidationError("--alias names the one model; with several, each is named by its --model value")
        }
        if !(1...64).contains(maxLoaded) { throw ValidationError("--max-loaded must be between 1 and 64") }
        if chatTemplate.count > 1 && chatTemplate.count != model.count {
            throw ValidationError("--chat-template is given once (for every model) or once per --model, in the same order")
        }
        if let maxTokens, maxTokens < 1 { throw ValidationError("--max-tokens must be ≥ 1") }
        if chatTemplate.contains(where: \.isEmpty) { throw ValidationError("--chat-template needs a file or a name") }
    }

    /// The models to serve, in order: each `--model`, then each model in `--models DIR`.
    func servedModels() throws -> [(name: String, text: String)] {
        var list = model.map { (name: $0, text: $0) }
        if let models {
            let dir = URL(fileURLWithPath: models)
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else {
                throw ValidationError("cannot read --models \(models)")
            }
            for entry in entries.sorted() where !entry.hasPrefix(".") {
                let url = dir.appendingPathComponent(entry)
                var isDirectory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
                let isModel = isDirectory.boolValue
                    ? FileManager.default.fileExists(atPath: url.appendingPathComponent("config.json").path)
                    : ["gguf", "hqf"].contains(url.pathExtension.lowercased())
                // Of a split GGUF set, the first part stands for the set.
                if isModel, !entry.contains("-of-") || entry.contains("-00001-of-") { list.append((name: url.path, text: url.path)) }
            }
        }
        return list
    }

    func key() throws -> String? {
        if let apiKeyFile {
            guard let text = try? String(contentsOfFile: apiKeyFile, encoding: .utf8) else {
                throw ValidationError("cannot read --api-key-file \(apiKeyFile)")
            }
            let key = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard !key.isEmpty else { throw ValidationError("--api-key-file \(apiKeyFile) is empty") }
            return key
        }
        if let apiKey {
            guard !apiKey.isEmpty else { throw ValidationError("--api-key is empty") }
            return apiKey
        }
        if let env = ProcessInfo.processInfo.environment["HEARTH_API_KEY"], !env.isEmpty { return env }
        return nil
    }

    func run() async throws {
        // One bootstrap: --log-level and --log-format reach every logger (the server's, the
        // repack cache's, the prompt cache's disk tier).
        let level = Logger.Level(rawValue: logLevel) ?? .info
        logFormat.bootstrap(level: level)
        var logger = Logger(label: "hearth.serve")
        logger.logLevel = level
        var configuration: GatewayConfiguration?
        if let config {
            do { configuration = try GatewayConfiguration.load(file: config) } catch {
                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
        // A gateway whose routes are all cloud providers starts without a model.
        let needsModel = configuration.map { $0.routes.values.contains { $0.provider == .local } } ?? true
        var provider: LocalProvider?
        var name = alias ?? "hearth"
        // Several models: one provider each, named as given, sharing one residency limit.
        var localModels: [(name: String, provider: LocalProvider)] = []
        let named = try servedModels()
        if speculation.draftModel != nil && named.count > 1 {
            throw ValidationError("--draft-model drafts for one model: serve it with one --model")
        }
        let residency = named.count > 1 ? ModelResidency(maxLoaded: maxLoaded) : nil
        let loads = ServeLoadProgress(logger: logger, format: logFormat)
        if needsModel || !named.isEmpty {
            let requested: [(name: String?, text: String?)] = named.isEmpty ? [(nil, nil)] : named.map { ($0.name, $0.text) }
            for (index, (given, text)) in requested.enumerated() {
                let path = try await ModelNames.resolvedPath(text)
                var settings = LocalProvider.Configuration(
                    modelPath: path, context: ctx, threads: threads, batch: batching.batch, parallel: parallel,
                    promptStyle: promptStyle.style)
                settings.prefillWhileDecoding = prefillWhileDecoding
                settings.kvType = kv.kvType
                settings.speculative = speculation.mode
                settings.draftModelPath = try speculation.draftPath()
                settings.activationPrecision = activation.precision
                settings.residency = residency
                settings.promptCache = promptCache.options
                settings.finishInBudget = !noFinishInBudget
                settings.defaults = sampling.generationOptions
                settings.defaults.maxTokens = maxTokens
                settings.chatTemplate = chatTemplate.count == 1 ? chatTemplate[0] : (index < chatTemplate.count ? chatTemplate[index] : nil)
                let modelName = alias ?? given.flatMap { ModelNames.isPath($0) ? nil : $0 }
                    ?? URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
                settings.name = modelName  // errors name the model as clients know it, never its path
                settings.loadObserver = loads.observer(for: modelName)
                if localModels.contains(where: { $0.name == modelName }) {
                    throw ValidationError("two models would be served as \(modelName): give them distinct names")
                }
                localModels.append((modelName, LocalProvider(configuration: settings)))
            }
            name = localModels.first?.name ?? name
            provider = localModels.first?.provider
        }
        let others = Dictionary(localModels.dropFirst().map { ($0.name, $0.provider) }, uniquingKeysWith: { a, _ in a })
        var gateway: Gateway?
        if let configuration {
            let all = Dictionary(localModels.map { ($0.name, $0.provider) }, uniquingKeysWith: { a, _ in a })
            do { gateway = try Gateway(configuration: configuration, local: provider, localModels: all) } catch {
                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                throw ExitCode(1)
            }
            if provider == nil { name = configuration.routes.keys.sorted().joined(separator: ", ") }
        }
        var options = try serverOptions(alias: name, gateway: gateway, logger: logger)
        // MCP servers start with the server and stop with it (ServeMCP.swift).
        let mcpHost = try await mcp.start(logger: logger)
        options.mcp = mcpHost
        options.maxToolRounds = mcp.maxToolRounds
        let server = HearthServer(local: provider, options: options, logger: logger, gateway: gateway, models: others)
        try await serve(server, name: name, others: others.keys.sorted(), mcpHost: mcpHost)
    }

    /// Runs the server until SIGTERM/SIGINT, printing where it serves; then stops the MCP servers.
    func serve(_ server: HearthServer, name: String, others: [String], mcpHost: ServeMCPHost?) async throws {
        let served = ([name] + others).joined(separator: ", ")
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        do {
            try await server.run { port in
                emit("Hearth is serving \(served) at http://\(host):\(port)/v1 (OpenAI and Anthropic APIs; /health, /metrics)\n")
                let second = ollamaPort.map { server.ollamaPort ?? $0 }
                var more = "Ollama's API at http://\(host):\(port)/api" + (second.map { " and on port \($0)" } ?? "")
                if !noWebUI { more += "; chat page at http://\(host):\(port)/" }
                emit(more + "\n")
            }
        } catch {
            await mcpHost?.mcpShutdown()
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(1)
        }
        await mcpHost?.mcpShutdown()  // no MCP server outlives the server
        emit("Hearth server stopped.\n")
    }

    /// The server's options from the flags (the key only without a gateway; spans when an
    /// OTLP endpoint is configured).
    func serverOptions(alias name: String, gateway: Gateway?, logger: Logger) throws -> ServerOptions {
        var options = ServerOptions(
            host: host, port: port, apiKey: gateway == nil ? try key() : nil, maxQueue: maxQueue, alias: name,
            maxBodyBytes: maxBodyBytes, requestTimeout: requestTimeout, drainGrace: grace, idleTimeout: idleTimeout,
            writeTimeout: writeTimeout, maxConnections: maxConnections, maxCloudInFlight: maxCloudInFlight)
        options.maxEmbeddingTokens = maxEmbeddingTokens
        options.maxTokenizeTokens = maxTokenizeTokens
        options.webUI = !noWebUI
        options.ollamaPort = ollamaPort
        options.modelStore = HubModelStore()  // Ollama's /api/pull and /api/delete
        options.buildInfo = [("version", hearthVersion), ("commit", buildCommit), ("kernel_level", KernelLevel.current.rawValue)]
        let environment = ProcessInfo.processInfo.environment
        if let endpoint = TracingOptions.endpoint(option: otelEndpoint, environment: environment) {
            var tracing = TracingOptions(endpoint: endpoint)
            if let service = environment["OTEL_SERVICE_NAME"], !service.isEmpty { tracing.serviceName = service }
            options.tracing = tracing
            logger.info("exporting spans", metadata: ["endpoint": "\(TracingOptions.redacted(endpoint) ?? "(not a URL)")"])
        }
        return options
    }
}

/// `--prompt-style` values.
enum ServePromptStyle: String, ExpressibleByArgument, CaseIterable {
    case automatic
    case chatTemplate = "chat-template"
    case dialogue

    var style: LocalProvider.PromptStyle {
        switch self {
        case .automatic: return .automatic
        case .chatTemplate: return .chatTemplate
        case .dialogue: return .dialogue
        }
    }
}
