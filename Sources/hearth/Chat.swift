import ArgumentParser
import Foundation
import HearthLocal
import HearthProviders

#if canImport(Glibc)
import Glibc
#endif

/// `hearth chat`: the interactive chat REPL (see docs/CHAT.md).
struct Chat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Chat with a local model (or a cloud provider) in the terminal; type /help inside.",
        discussion: """
            With no --model, uses the default model from models/registry.json. When stdin is not a \
            terminal, reads one message per line (or \"\"\" blocks) and writes only the answers to stdout.
            Chats are saved as they go under ~/.local/share/hearth/chats (or $HEARTH_HOME/chats).
            """)

    @OptionGroup var source: ModelOption

    @Option(name: .long, help: "Who answers: local, openai, openai-responses (OpenAI's Responses API, with reasoning summaries), anthropic, spark, deepseek, qwen, dashscope (Qwen's native API) or bailian (Bailian's real-time dialog); cloud keys from the environment or ~/.config/hearth/providers.json.")
    var provider: String = "local"

    @Option(name: .long, help: "System prompt: instructions for the whole conversation.")
    var system: String?

    @OptionGroup var sampling: SamplingFlags
    @OptionGroup var speculation: SpeculativeOption
    @OptionGroup var activation: ActivationOption

    @OptionGroup var length: MaxTokensOption

    @OptionGroup var context: ContextOption
    @OptionGroup var workers: ThreadsOption

    @Flag(help: "How to prompt a local model: --base (a plain User:/Assistant: dialogue, for models without instruction tuning) or --instruct (the model's chat template); by default the model's metadata decides.")
    var promptStyle: PromptStyleFlag?

    enum PromptStyleFlag: String, EnumerableFlag {
        case base, instruct
    }

    @OptionGroup var template: ChatTemplateOption
    @OptionGroup var batching: BatchOption
    @OptionGroup var kv: KVTypeOption
    @OptionGroup var promptCache: PromptCacheOption
    @OptionGroup var mcpOptions: ChatMCPOptions

    @Option(name: .long, help: "Directory for saved chats (default: $HEARTH_HOME/chats or ~/.local/share/hearth/chats).")
    var sessionsDir: String?

    @Flag(name: .long, help: "Continue a saved chat: the one named, or the most recent.")
    var resume = false

    @Argument(help: "Name of the chat (default: chat-<date>-<time>); with --resume, the chat to continue.")
    var name: String?

    func validate() throws {
        if let name { try ChatStore.validate(name: name) }
        if !ChatProviders.names.contains(provider) {
            throw ValidationError("--provider takes one of: \(ChatProviders.names.joined(separator: ", "))")
        }
    }

    func run() throws {
        let output = ChatOutput(interactive: isatty(STDIN_FILENO) != 0)
        let store = ChatStore(directory: ChatStore.directory(override: sessionsDir))
        var messages: [ChatMessage] = []
        var sessionName = name ?? Self.defaultName()
        if resume {
            guard let resumed = name ?? store.latestSession() else {
                throw ValidationError("no saved chats in \(store.directory.path) to resume")
            }
            sessionName = resumed
            do { messages = try store.read(session: resumed) } catch { throw ValidationError("\(error)") }
        }
        if let system {
            messages.removeAll { $0.role == .system }
            messages.insert(.system(system), at: 0)
        }
        var options = sampling.generationOptions
        options.maxTokens = length.maxTokens  // unset: the chat's own cap

        let modelPath: String?
        if source.model != nil {
            modelPath = try source.path()
        } else if provider == "local" {
            modelPath = try ModelNames.path(nil)  // the default model, pulled on first use
        } else if case .local(let path)? = try? DefaultModel.target() {
            modelPath = path  // the cloud's fallback: the default model if it is here, never a download
        } else {
            modelPath = nil
        }
        let style: LocalProvider.PromptStyle
        switch promptStyle {
        case .base: style = .dialogue
        case .instruct: style = .chatTemplate
        case nil: style = .automatic
        }
        let draftPath = try speculation.draftPath()
        let local = modelPath.map {
            var configuration = LocalProvider.Configuration(
                modelPath: $0, context: context.ctx, threads: workers.threads, batch: batching.batch, promptStyle: style,
                endsRepetitiveReplies: true)
            configuration.speculative = speculation.mode
            configuration.draftModelPath = draftPath
            configuration.activationPrecision = activation.precision
            configuration.repackCache = source.repackCache
            configuration.kvType = kv.kvType
            configuration.promptCache = promptCache.options
            configuration.chatTemplate = template.chatTemplate
            return configuration
        }
        let session = ChatSession(
            output: output, store: store, name: sessionName, messages: messages, options: options, local: local)
        session.mcp = try mcpOptions.make()
        defer { session.mcp?.shutdown() }  // no server outlives the chat (and at exit, `atexit` kills what is left)
        try session.start(provider: provider, resumed: resume)
        session.loop()
    }

    static func defaultName() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return "chat-" + formatter.string(from: Date())
    }
}
