// An app that answers with a cloud model and falls back to an on-device model when the cloud
// is unreachable, rate-limited or fails mid-answer. Build: swift build --product hearth-fallback-example
import Foundation
import HearthCloud
import HearthLocal
import HearthProviders

/// The part an app writes: one router, one loop over events. `local` is Hearth's
/// `LocalProvider` over a downloaded model (any provider works).
func answer(_ question: String, local: any LanguageModelProvider) async throws -> String {
    let credentials = try CloudCredentials.load()  // OPENAI_API_KEY or ~/.config/hearth/providers.json
    let router = FallbackRouter(
        providers: [OpenAICompatibleProvider.openAI(model: "gpt-4o-mini", credentials: credentials), local],
        policy: .cloudFirst)
    var text = ""
    for try await event in router.stream(ChatRequest(messages: [.system("Be brief."), .user(question)])) {
        switch event {
        case .textDelta(let delta): text += delta; print(delta, terminator: "")
        case .servedBy(let id): print("[\(id)] ", terminator: "")
        case .switchedProvider(let from, let to, let reason): print("\n[\(from) → \(to): \(reason.code)] ", terminator: "")
        default: break
        }
    }
    print()
    return text
}

// The offline fallback: Hearth's engine behind the same protocol, over the default model.
let modelPath = ProcessInfo.processInfo.environment["HEARTH_MODEL"] ?? "models/gemma-3-270m-q4_k_m.gguf"
let local = LocalProvider(configuration: .init(modelPath: modelPath, context: 2048))
_ = try await answer(CommandLine.arguments.dropFirst().joined(separator: " "), local: local)
