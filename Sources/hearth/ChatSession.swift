import Foundation
import HearthCloud
import HearthLocal
import HearthProviders

/// One chat: the conversation, its options, who answers, and where it is saved.
/// Lives on the main thread; replies stream on a task (`TurnRunner`) that signals can cancel.
final class ChatSession {
    let output: ChatOutput
    let store: ChatStore
    let name: String
    var messages: [ChatMessage]
    var options: ChatOptions
    /// How to make the local provider (nil: no local model was given or installed).
    let localSettings: LocalProvider.Configuration?
    var local: LocalProvider?
    var provider: (any LanguageModelProvider)?
    let runner = TurnRunner()
    let editor: LineEditor
    private var signals: ChatSignals?
    /// What the session file holds (to append only the new messages when possible).
    private var persisted: [ChatMessage] = []
    var lastUsage: Usage?
    /// The last turn's request (`/show prompt` renders it).
    var lastRequest: ChatRequest?
    /// Tools from MCP servers (`--mcp FILE`), nil without.
    var mcp: ChatMCP?

    init(
        output: ChatOutput, store: ChatStore, name: String, messages: [ChatMessage], options: ChatOptions,
        local: LocalProvider.Configuration?
    ) {
        self.output = output
        self.store = store
        self.name = name
        self.messages = messages
        self.options = options
        localSettings = local
        editor = LineEditor(history: messages.filter { $0.role == .user }.map(\.content))
    }

    var providerName: String { provider?.id ?? "none" }

    /// The reply cap of the chat when `max_tokens` is not set: replies end even when a small
    /// model would run on until the context fills.
    static let replyCap = 512
    /// The chat's repetition penalty for local models when `repetition_penalty` is not set
    /// (mild: 1 is off). Replies that repeat themselves anyway are ended by `RepetitionGuard`.
    static let localRepetitionPenalty = 1.1

    /// The options a turn sends: what the user set, else the chat's defaults (the reply cap,
    /// and for local models the mild repetition penalty); the rest is the provider's default.
    var requestOptions: ChatOptions {
        var o = options
        o.maxTokens = o.maxTokens ?? Self.replyCap
        if provider is LocalProvider { o.repetitionPenalty = o.repetitionPenalty ?? Self.localRepetitionPenalty }
        return o
    }

    /// Installs signal handling, makes the provider (loading a local model behind a spinner)
    /// and, for a resumed chat, processes the conversation so the next turn starts at once.
    func start(provider name: String, resumed: Bool) throws {
        signals = ChatSignals(runner: runner, output: output)
        persisted = resumed ? messages : []
        do { try switchProvider(to: name) } catch { throw ChatError("\(error)") }
        if resumed {
            output.note("resumed \(self.name): \(messages.count) messages")
            if self.provider is LocalProvider { reprocess() }
        }
        if output.interactive {
            var banner = "hearth chat · \(providerName)"
            if let summary = local?.loadedModelSummary, self.provider is LocalProvider { banner += " · \(summary)" }
            if let context = contextLimit { banner += " · context \(context)" }
            output.note(banner + " · /help for commands, Ctrl-D to quit")
        }
        noteDialogueMode()
        mcp?.start(output: output)
        if !resumed, messages.contains(where: { $0.role == .system }) { persist() }
    }

    /// One line when the local model gets the base-model dialogue prompt.
    func noteDialogueMode() {
        guard provider is LocalProvider, let reason = local?.dialogueReason else { return }
        output.note(
            "base model: \(reason); prompting it as a plain User:/Assistant: dialogue (--instruct uses the chat template). "
                + "For real answers, pass --model with an instruction-tuned model (e.g. gemma-3-270m-it).")
    }

    /// The context window of the answering model, when known.
    var contextLimit: Int? { provider is LocalProvider ? local?.loadedContext : nil }

    /// Reads and handles input until /quit, Ctrl-D, Ctrl-C on an empty line, or end of input.
    func loop() {
        while let input = readMessage() {
            let trimmed = input.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            if output.interactive { editor.remember(input) }
            if trimmed.hasPrefix("/") {
                if !command(trimmed) { return }
            } else {
                turn(user: input)
            }
        }
    }

    /// One message: a line, a `"""` block, or lines joined by trailing backslashes. Nil at the end.
    func readMessage() -> String? {
        guard var line = readLine(prompt: output.styled ? "\u{1B}[1m>>> \u{1B}[0m" : ">>> ") else { return nil }
        if line.trimmingCharacters(in: .whitespaces).hasPrefix("\"\"\"") {
            var text = String(line.trimmingCharacters(in: .whitespaces).dropFirst(3))
            if text.hasSuffix("\"\"\"") { return String(text.dropLast(3)) }
            var lines = text.isEmpty ? [] : [text]
            while let next = readLine(prompt: "... ") {
                if next.trimmingCharacters(in: .whitespaces).hasSuffix("\"\"\"") {
                    text = String(next.trimmingCharacters(in: .whitespaces).dropLast(3))
                    if !text.isEmpty { lines.append(text) }
                    break
                }
                lines.append(next)
            }
            return lines.joined(separator: "\n")
        }
        var lines: [String] = []
        while line.hasSuffix("\\") {
            lines.append(String(line.dropLast()))
            guard let next = readLine(prompt: "... ") else { break }
            line = next
        }
        if !line.hasSuffix("\\") { lines.append(line) }
        return lines.joined(separator: "\n")
    }

    private func readLine(prompt: String) -> String? {
        guard output.interactive else { return Swift.readLine(strippingNewline: true) }
        switch editor.read(prompt: prompt) {
        case .line(let line): return line
        case .interrupt, .endOfInput: return nil
        }
    }

    // MARK: turns

    /// Sends `user` (or, for `/retry`, the conversation as it is) and streams the reply.
    func turn(user: String?) {
        guard let provider else {
            output.error("no provider; use /provider NAME")
            return
        }
        var pending = messages
        if let user { pending.append(.user(user)) }
        // With MCP tools: each reply that calls tools is followed by the calls' results and
        // another reply, until one answers in text (after `maxRounds` replies with calls, or a
        // declined call, the next reply may not call tools).
        var round = 0
        var choice = mcp?.choice
        var result: TurnResult
        repeat {
            var options = requestOptions
            if let mcp {
                let tools = mcp.refresh()
                if !tools.isEmpty {
                    options.tools = tools
                    if case .named(let name)? = choice, !tools.contains(where: { $0.name == name }) { choice = nil }
                    options.toolChoice = round >= mcp.maxRounds ? .disabled : choice
                }
            }
            let request = ChatRequest(messages: pending, options: options, allowTruncation: true)
            lastRequest = request
            let spinner = output.spinner("thinking", after: 0.25)
            result = runner.run(request, on: provider, output: output, spinner: spinner)
            if !result.text.isEmpty { output.answer("\n") }

            if result.droppedMessages > 0 {
                var dropped = 0
                while dropped < result.droppedMessages, let index = pending.firstIndex(where: { $0.role != .system }) {
                    pending.remove(at: index)
                    dropped += 1
                }
                output.note("context full: dropped the \(dropped) oldest message\(dropped == 1 ? "" : "s") (system prompt kept)")
            }
            if let error = result.error {
                output.error(error.message)
                if case .contextLengthExceeded = error.code { output.note("try /reset, or a larger --ctx") }
                return
            }
            if result.cancelled {
                output.note(result.text.isEmpty ? "interrupted (nothing kept)" : "interrupted (the partial answer is kept)")
                if result.text.isEmpty { return }
            }
            var calls: [ToolCall] = result.cancelled ? [] : result.toolCalls.calls.enumerated().filter { result.toolCalls.finished.contains($0.offset) }.map(\.element)
            if result.finishReason == .length, let last = calls.last, (try? JSONText.parse(last.arguments)) == nil {
                // The reply ran out of tokens inside the call: its arguments are cut, so it is not run.
                output.error("the reply ran out of tokens in the call to \(last.name); not run (raise max_tokens with /set)")
                calls.removeLast()
            }
            pending.append(ChatMessage(role: .assistant, content: result.text, toolCalls: calls, reasoning: result.reasoning))
            guard let mcp, !calls.isEmpty else { break }
            let ran = runToolCalls(calls, mcp: mcp)
            pending += ran.messages
            round += 1
            choice = ran.declined ? .disabled : .auto
        } while true
        messages = pending
        persist()
        lastUsage = result.usage
        output.note(stats(result))
    }

    /// `42 tokens · first token 0.21 s · 35.1 tok/s · context 610/4096 · prompt 568 (520 cached)`.
    func stats(_ result: TurnResult) -> String {
        var parts: [String] = []
        if let usage = result.usage {
            parts.append("\(usage.completionTokens) tokens")
            if let thinking = usage.reasoningTokens, thinking > 0 { parts.append("\(thinking) thinking") }
            if let ttft = usage.timeToFirstToken ?? result.timeToFirstText { parts.append(String(format: "first token %.2f s", ttft)) }
            if let speed = usage.tokensPerSecond { parts.append(String(format: "%.1f tok/s", speed)) }
            let used = usage.promptTokens + usage.completionTokens
            parts.append("context \(used)/\(contextLimit.map(String.init) ?? "?")")
            parts.append("prompt \(usage.promptTokens) (\(usage.cachedPromptTokens ?? 0) cached)")
        } else {
            parts.append(String(format: "%.2f s", result.seconds))
        }
        if let served = result.servedBy, served != providerName { parts.append("served by \(served)") }
        return parts.joined(separator: " · ")
    }

    /// Writes the session file: appends when only new messages were added, else rewrites it.
    func persist() {
        do {
            if persisted.count <= messages.count, Array(messages.prefix(persisted.count)) == persisted,
                FileManager.default.fileExists(atPath: store.sessionURL(name).path)
            {
                let new = Array(messages.dropFirst(persisted.count))
                if !new.isEmpty { try store.append(session: name, messages: new) }
            } else {
                try store.rewrite(session: name, messages: messages)
            }
            persisted = messages
        } catch {
            output.error("could not save the chat: \(error)")
        }
    }

    // MARK: providers

    /// Makes `name` the answering provider (loading the local model if needed).
    func switchProvider(to name: String) throws {
        if name == "local" {
            let local = try loadLocal()
            provider = local
            return
        }
        let cloud = try ChatProviders.cloud(name)
        if case .unavailable(let reason) = blockingAvailability(cloud) {
            var message = "\(name) is unavailable: \(reason)"
            if case .unauthorized = reason { message += ". " + CloudCredentials.missingCredentialsRemedy(for: name) }
            throw ChatError(message)
        }
        provider = cloud
    }

    private func loadLocal() throws -> LocalProvider {
        if let local { return local }
        guard let configuration = localSettings else {
            throw ChatError("no local model: pass --model PATH or install the default with scripts/fetch-default-model.sh")
        }
        let local = LocalProvider(configuration: configuration)
        let spinner = output.spinner("loading \(URL(fileURLWithPath: configuration.modelPath).lastPathComponent)")
        defer { spinner.stop() }
        try blocking { try await local.prewarm(nil) }
        self.local = local
        return local
    }

    private func blockingAvailability(_ provider: any LanguageModelProvider) -> ProviderAvailability {
        (try? blocking { await provider.availability }) ?? .available
    }

    /// Prefills the conversation into the local cache (after /load without a usable snapshot, or --resume).
    func reprocess() {
        guard let local, provider is LocalProvider, messages.contains(where: { $0.role != .system }) else { return }
        let request = ChatRequest(messages: messages, options: requestOptions, allowTruncation: true)
        let spinner = output.spinner("processing the conversation")
        let start = DispatchTime.now()
        do {
            try blocking { try await local.prewarm(request) }
            spinner.stop()
            output.note(
                String(format: "processed the conversation (%d tokens) in %.2f s", local.cachedTokenCount, Self.seconds(since: start)))
        } catch {
            spinner.stop()
            output.error("could not process the conversation: \(error)")
        }
    }

    static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }
}

/// Runs async work to completion from synchronous code (the main thread waits on a semaphore;
/// the work runs on the cooperative pool, never on the main thread).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let result = box.result else { throw ChatError("internal: no result") }
    return try result.get()
}

/// `@unchecked Sendable`: written once by the task before it signals, read after the wait.
private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}
