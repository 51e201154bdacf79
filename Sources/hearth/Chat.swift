import ArgumentParser
import Foundation
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

    @Option(name: .long, help: "Path to a local model (default: the model named in models/registry.json).")
    var model: String?

    @Option(name: .long, help: "Who answers: local, openai, anthropic, spark, deepseek, qwen, dashscope (Qwen's native API) or bailian (Bailian's real-time dialog); cloud keys from the environment or ~/.config/hearth/providers.json.")
    var provider: String = "local"

    @Option(name: .long, help: "System prompt: instructions for the whole conversation.")
    var system: String?

    @Option(name: .long, help: "Sampling temperature; 0 is greedy (default: the model's or provider's).")
    var temperature: Double?

    @Option(name: .long, help: "Nucleus sampling: keep the most likely tokens up to this total probability.")
    var topP: Double?

    @Option(name: .long, help: "Sample only among the K most likely tokens.")
    var topK: Int?

    @Option(name: .long, help: "Drop tokens less likely than this fraction of the most likely one.")
    var minP: Double?

    @Option(name: .long, help: "Maximum tokens per reply (default: until the model stops or the context fills).")
    var maxTokens: Int?

    @Option(name: .long, help: "Random seed, for reproducible sampling.")
    var seed: Int?

    @Option(name: .long, help: "Context size in tokens for the local model (default: the model's, at most 4096).")
    var ctx: Int?

    @Option(name: [.customShort("t"), .long], help: "Worker threads for the local model (default: all cores).")
    var threads: Int?

    @Option(name: .long, help: "Prompt tokens per prefill batch; Ctrl-C is noticed between batches.")
    var batch: Int = 64

    @Option(name: .long, help: "Directory for saved chats (default: $HEARTH_HOME/chats or ~/.local/share/hearth/chats).")
    var sessionsDir: String?

    @Flag(name: .long, help: "Continue a saved chat: the one named, or the most recent.")
    var resume = false

    @Argument(help: "Name of the chat (default: chat-<date>-<time>); with --resume, the chat to continue.")
    var name: String?

    func validate() throws {
        if let temperature, !(0...100).contains(temperature) { throw ValidationError("--temperature must be between 0 and 100") }
        if let topP, !(topP > 0 && topP <= 1) { throw ValidationError("--top-p must be in (0, 1]") }
        if let topK, topK < 0 { throw ValidationError("--top-k must be ≥ 0") }
        if let minP, !(0...1).contains(minP) { throw ValidationError("--min-p must be between 0 and 1") }
        if let maxTokens, maxTokens < 1 { throw ValidationError("--max-tokens must be ≥ 1") }
        if let ctx, ctx < 16 { throw ValidationError("--ctx must be at least 16") }
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512") }
        if batch < 1 || batch > 4096 { throw ValidationError("--batch must be between 1 and 4096") }
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
        var options = GenerationOptions()
        options.temperature = temperature
        options.topP = topP
        options.topK = topK
        options.minP = minP
        options.maxTokens = maxTokens
        options.seed = seed

        let modelPath: String?
        if let model {
            modelPath = model
        } else if provider == "local" {
            modelPath = try DefaultModel.path()
        } else {
            modelPath = try? DefaultModel.path()
        }
        let local = ChatProviders.Local(path: modelPath, context: ctx, threads: threads, batch: batch)
        let session = ChatSession(
            output: output, store: store, name: sessionName, messages: messages, options: options, local: local)
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
