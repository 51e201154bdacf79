// A stand-in for Apple's FoundationModels framework: its public top-level type names, empty,
// so that scripts/check-foundationmodels-names.sh can compile a file importing "FoundationModels"
// beside Hearth's modules on any platform and list the names that become ambiguous.
// Names from Apple's documentation (developer.apple.com/documentation/foundationmodels):
// the iOS/macOS 26 API, and the iOS/macOS 27 additions marked below.

public final class SystemLanguageModel {}
public final class LanguageModelSession {}
public struct Instructions {}
public struct Prompt {}
public struct Transcript {}
public struct GenerationOptions {}
public protocol Tool {}
public protocol Generable {}
public struct GenerationGuide<Value> {}
public struct GeneratedContent {}
public struct GenerationID {}
public struct GenerationSchema {}
public struct DynamicGenerationSchema {}
public protocol ConvertibleFromGeneratedContent {}
public protocol ConvertibleToGeneratedContent {}
public protocol InstructionsRepresentable {}
public protocol PromptRepresentable {}
@resultBuilder public struct InstructionsBuilder { public static func buildBlock() -> Int { 0 } }
@resultBuilder public struct PromptBuilder { public static func buildBlock() -> Int { 0 } }
public struct LanguageModelFeedbackAttachment {}
/// In the first betas of the 26 SDK (a tool's result type); later replaced by `PromptRepresentable`.
public struct ToolOutput {}
// iOS/macOS 27: bring-your-own-model providers.
public protocol LanguageModel {}
public protocol LanguageModelExecutor {}
public struct LanguageModelExecutorGenerationChannel {}
public struct ContextOptions {}
public final class PrivateCloudComputeLanguageModel {}
public struct ImageReference {}
