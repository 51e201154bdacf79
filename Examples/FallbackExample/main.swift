// An app that answers with a cloud model and falls back to an on-device model when the cloud
// is unreachable, rate-limited or fails mid-answer. Build: swift build --product hearth-fallback-example
import HearthCloud
import HearthProviders

/// The part an app writes: one router, one loop over events. `local` is any provider — in an
/// app, Hearth's `LocalProvider` over a downloaded model.
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

/// A stand-in for the on-device model so the example runs anywhere (it echoes the question).
struct EchoProvider: LanguageModelProvider {
    let id = "local"
    var availability: ProviderAvailability { get async { .available } }
    func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        AsyncThrowingStream { continuation in
            continuation.yield(.textDelta("(offline) You asked: \(request.messages.last?.content ?? "")"))
            continuation.yield(.finished(.stop))
            continuation.finish()
        }
    }
}

_ = try await answer(CommandLine.arguments.dropFirst().joined(separator: " "), local: EchoProvider())
