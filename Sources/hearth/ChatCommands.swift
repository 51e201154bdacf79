import Foundation
import HearthLocal
import HearthProviders

/// The slash commands.
extension ChatSession {
    static let help = """
        /help                 this list
        /reset                forget the conversation (keeps the system prompt)
        /system TEXT          set the system prompt (no TEXT: show it)
        /set NAME VALUE       temperature, top_p, top_k, min_p, repetition_penalty, max_tokens or seed ("default" clears it)
        /think on|off|N       let the model reason (N: a budget in tokens; also low, medium, high, default)
        /show                 model, the values replies run with, context used
        /show prompt          the prompt the last turn was rendered to (chat template applied)
        /history              the conversation so far
        /retry                regenerate the last answer
        /save NAME            save the conversation and its KV cache (resumes without re-processing)
        /load NAME            load a saved conversation
        /provider NAME        switch to local, openai, anthropic, spark, deepseek, qwen, dashscope or bailian
        /mcp                  MCP servers and their tools (--mcp FILE); /mcp enable|disable SERVER, /mcp choice auto|required|none|TOOL
        /quit                 leave (Ctrl-D or Ctrl-C on an empty line also do)
        Multi-line input: end lines with \\ or wrap them in \"\"\" … \"\"\".
        """

    /// Runs a slash command; returns false to leave the chat.
    func command(_ line: String) -> Bool {
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        let name = parts[0].lowercased()
        let argument = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        switch name {
        case "/quit", "/exit", "/bye", "/q": return false
        case "/help", "/?": output.info(Self.help)
        case "/reset":
            messages.removeAll { $0.role != .system }
            lastUsage = nil
            persist()
            output.note("conversation cleared")
        case "/system":
            if argument.isEmpty {
                output.info(messages.first { $0.role == .system }?.content ?? "(no system prompt)")
            } else {
                messages.removeAll { $0.role == .system }
                messages.insert(.system(argument), at: 0)
                persist()
                output.note("system prompt set")
            }
        case "/set": set(argument)
        case "/think": think(argument)
        case "/show": argument.lowercased() == "prompt" ? showPrompt() : show()
        case "/history":
            if messages.isEmpty { output.info("(empty)") }
            for message in messages { output.info("\(message.role.rawValue): \(message.content)") }
        case "/retry":
            guard let last = messages.last, last.role == .assistant else {
                output.error("nothing to retry")
                return true
            }
            messages.removeLast()
            let before = messages
            turn(user: nil)
            if messages == before { messages.append(last) }  // the retry failed: keep the old answer
        case "/mcp": mcpCommand(argument)
        case "/save": save(argument)
        case "/load": load(argument)
        case "/provider":
            if argument.isEmpty {
                output.info("provider: \(providerName) (choices: \(ChatProviders.names.joined(separator: ", ")))")
            } else {
                do {
                    try switchProvider(to: argument.lowercased())
                    output.note("now answering: \(providerName)")
                    if provider is LocalProvider { reprocess() }
                } catch {
                    output.error("\(error)")
                }
            }
        default: output.error("unknown command \(name); /help lists them")
        }
        return true
    }

    /// `/set NAME VALUE`: parsed here, checked by `ChatOptions.validate()` — the same
    /// check `LocalProvider` and the server apply, so what the REPL accepts the engine runs.
    func set(_ argument: String) {
        let parts = argument.split(separator: " ").map(String.init)
        let usage = "temperature, top_p, top_k, min_p, repetition_penalty, max_tokens or seed"
        guard parts.count == 2 else {
            output.error("usage: /set \(usage.replacingOccurrences(of: ", ", with: "|").replacingOccurrences(of: " or ", with: "|")) VALUE")
            return
        }
        let key = parts[0].lowercased().replacingOccurrences(of: "-", with: "_")
        let text = parts[1]
        let clear = text == "default"
        var changed = options
        let double = Double(text), int = Int(text)
        let numeric: Bool
        switch key {
        case "temperature": changed.temperature = double; numeric = double != nil
        case "top_p": changed.topP = double; numeric = double != nil
        case "top_k": changed.topK = int; numeric = int != nil
        case "min_p": changed.minP = double; numeric = double != nil
        case "repetition_penalty", "repeat_penalty": changed.repetitionPenalty = double; numeric = double != nil
        case "max_tokens": changed.maxTokens = int; numeric = int != nil
        case "seed": changed.seed = int; numeric = int != nil
        default:
            output.error("unknown setting \(key); use \(usage)")
            return
        }
        guard clear || numeric else {
            output.error("\(key) takes a \(["top_k", "max_tokens", "seed"].contains(key) ? "whole number" : "number") or \"default\"")
            return
        }
        do { try changed.validate() } catch {
            output.error(error.message)
            return
        }
        options = changed
        output.note("\(key) = \(clear ? "default" : text)")
    }

    /// `/think on|off|N|low|medium|high|minimal|default`: sets ``ChatOptions/reasoning``
    /// (N: a budget of N reasoning tokens, 0 the same as off); no argument shows it.
    func think(_ argument: String) {
        let word = argument.lowercased()
        var changed = options
        switch word {
        case "": output.info("think: \(Self.describe(options.reasoning))"); return
        case "on": changed.reasoning = ReasoningOptions()
        case "off", "0": changed.reasoning = .off
        case "default": changed.reasoning = nil
        default:
            if let effort = ReasoningEffort(rawValue: word) {
                changed.reasoning = .effort(effort)
            } else if let budget = Int(word), budget > 0 {
                changed.reasoning = .budget(budget)
            } else {
                output.error("usage: /think on|off|N (a budget in tokens)|minimal|low|medium|high|default")
                return
            }
        }
        do { try changed.validate() } catch {
            output.error(error.message)
            return
        }
        options = changed
        output.note("think: \(Self.describe(changed.reasoning))")
    }

    /// How `/think` and `/show` name reasoning options.
    static func describe(_ reasoning: ReasoningOptions?) -> String {
        guard let reasoning else { return "provider default" }
        guard reasoning.enabled else { return "off" }
        if let budget = reasoning.budgetTokens { return "on, budget \(budget) tokens" }
        if let effort = reasoning.effort { return "on, effort \(effort.rawValue)" }
        return "on"
    }

    /// `/show`: every value a turn runs with, the model's or provider's defaults resolved.
    func show() {
        func number(_ v: Double?) -> String { v.map { String(format: "%g", $0) } ?? "provider default" }
        func source(_ set: Any?) -> String { set == nil ? "" : " (set)" }
        var lines = ["provider: \(providerName)"]
        if let path = localSettings?.modelPath { lines.append("local model: \(path)") }
        if let summary = local?.loadedModelSummary { lines.append("  \(summary)") }
        if provider is LocalProvider, let reason = local?.dialogueReason {
            lines.append("  prompt: User:/Assistant: dialogue (\(reason))")
        } else if provider is LocalProvider, let renderer = local?.promptRenderer {
            lines.append("  prompt: rendered by \(renderer) (/show prompt prints the last one)")
        }
        let sent = requestOptions
        let effective = provider is LocalProvider ? (local?.effectiveOptions(sent) ?? sent) : sent
        lines.append(
            "temperature \(number(effective.temperature))\(source(options.temperature)) · top_p \(number(effective.topP))\(source(options.topP))"
                + " · top_k \(effective.topK.map(String.init) ?? "provider default")\(source(options.topK))"
                + " · min_p \(number(effective.minP))\(source(options.minP))")
        lines.append(
            "repetition_penalty \(number(effective.repetitionPenalty))\(source(options.repetitionPenalty))"
                + " · max_tokens \(effective.maxTokens.map(String.init) ?? "none")\(source(options.maxTokens))"
                + " · seed \(effective.seed.map(String.init) ?? "random")\(source(options.seed))"
                + (provider is LocalProvider ? " · replies that repeat a line a third time are ended" : ""))
        lines.append("think: \(Self.describe(options.reasoning))")
        // As the stats line counts it: the last turn's prompt and reply (the KV cache holds all
        // but the reply's last token); before any turn, what the cache holds.
        let cached = provider is LocalProvider ? local?.cachedTokenCount : nil
        let used = lastUsage.map { $0.promptTokens + $0.completionTokens } ?? cached
        lines.append("context: \(used.map(String.init) ?? "unknown") tokens used of \(contextLimit.map(String.init) ?? "the provider's limit")"
            + (cached.map { " (\($0) in the KV cache)" } ?? ""))
        lines.append("messages: \(messages.count) · chat \(name) → \(store.sessionURL(name).path)")
        output.info(lines.joined(separator: "\n"))
    }

    /// `/show prompt`: the text the local model was given for the last turn — the chat template
    /// applied, special tokens written as text (before any turn: what the conversation so far
    /// renders to). Cloud providers render their own prompts: there is nothing to show.
    func showPrompt() {
        guard let local, provider is LocalProvider else {
            output.error("/show prompt shows a local model's prompt; the provider \(providerName) renders its own")
            return
        }
        let request = lastRequest ?? ChatRequest(messages: messages, options: requestOptions, allowTruncation: true)
        do {
            let text = try blocking { try await local.promptText(request) }
            output.info("prompt (\(local.promptRenderer ?? "chat template")):\n\(text)")
        } catch {
            output.error("\(error)")
        }
    }

    private func save(_ argument: String) {
        do {
            try ChatStore.validate(name: argument)
            let start = DispatchTime.now()
            var snapshot: Data?
            if let local, provider is LocalProvider { snapshot = try blocking { try await local.snapshot() } }
            let saved = ConversationFile(
                conversation: .init(
                    messages: messages, options: options, provider: providerName, model: localSettings?.modelPath, savedAt: Date()),
                snapshot: snapshot)
            let data = try saved.encoded()
            try store.ensureDirectory()
            try ChatStore.atomicWrite(data, to: store.savedURL(argument))
            var note = "saved \(argument): \(messages.count) messages"
            if let snapshot {
                note += String(
                    format: ", KV cache %.1f MB → %.1f MB zstd", Double(snapshot.count) / 1e6, Double(data.count) / 1e6)
            }
            output.note(note + String(format: " in %.0f ms", Self.seconds(since: start) * 1000))
        } catch {
            output.error("could not save: \(error)")
        }
    }

    private func load(_ argument: String) {
        let start = DispatchTime.now()
        let saved: ConversationFile
        do {
            try ChatStore.validate(name: argument)
            let url = store.savedURL(argument)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw ChatError("no saved chat \(argument) in \(store.directory.path)")
            }
            // A snapshot larger than the whole cache could hold is refused before decompressing.
            let limit = max(1 << 20, (local?.loadedContext ?? 4096) * 1 << 20)
            saved = try ConversationFile.decode(data, maxSnapshotBytes: limit)
        } catch {
            output.error("could not load: \(error)")
            return
        }
        messages = saved.conversation.messages
        options = saved.conversation.options
        lastUsage = nil
        persist()
        output.note("loaded \(argument): \(messages.count) messages")
        guard let local, provider is LocalProvider else { return }
        var problem = saved.snapshotProblem
        if let snapshot = saved.snapshot {
            do {
                try blocking { try await local.restore(snapshot) }
                output.note(
                    String(
                        format: "restored the KV cache (%d tokens) in %.0f ms; nothing to re-process",
                        local.cachedTokenCount, Self.seconds(since: start) * 1000))
                return
            } catch let error as ProviderError {
                problem = error.message
            } catch {
                problem = "\(error)"
            }
        }
        output.note("KV snapshot refused: \(problem ?? "none saved"); re-processing the conversation")
        reprocess()
    }
}
