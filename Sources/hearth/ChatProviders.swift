import Foundation
import HearthCloud
import HearthLocal
import HearthProviders

/// The providers `hearth chat` can talk to, made on demand (the local model loads once and
/// stays loaded when the chat switches to a cloud provider and back).
enum ChatProviders {
    static let names = ["local", "openai", "openai-responses", "anthropic", "spark", "deepseek", "qwen", "dashscope", "bailian"]

    /// Makes a cloud provider from the environment and ~/.config/hearth/providers.json.
    static func cloud(_ name: String) throws -> any LanguageModelProvider {
        let credentials = try CloudCredentials.load()
        switch name {
        case "openai": return OpenAICompatibleProvider.openAI(credentials: credentials)
        case "openai-responses": return OpenAIResponsesProvider.openAI(credentials: credentials, summaryByDefault: true)
        case "deepseek": return OpenAICompatibleProvider.deepSeek(credentials: credentials)
        case "qwen": return OpenAICompatibleProvider.qwen(credentials: credentials)
        case "anthropic": return AnthropicProvider.fromCredentials(credentials)
        case "spark": return SparkProvider.fromCredentials(credentials)
        case "dashscope": return DashScopeProvider.qwen(credentials: credentials)
        case "bailian": return BailianDialogProvider.fromCredentials(credentials)
        default: throw ChatError("unknown provider \"\(name)\"; choose one of: \(names.joined(separator: ", "))")
        }
    }
}
