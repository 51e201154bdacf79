import HearthFormats
import HearthTokenizers

/// A model family: maps a checkpoint's configuration to `DecoderOptions`. One file per
/// family, registered with one line in `ModelFamilies.all`.
public protocol ModelFamily: Sendable {
    /// `architectures` values in config.json this family handles.
    static var architectures: [String] { get }
    /// Validates the configuration and derives the forward-pass options.
    static func options(from config: HFConfig) throws -> DecoderOptions
    /// The tensor name of a role in this family's Hugging Face checkpoints (nil: none).
    static func tensorName(_ role: TensorRole) -> String?
    /// Added to every norm weight at load (Gemma stores w − 1 and multiplies by 1 + w).
    static var normWeightOffset: Float { get }
    /// The prompt format for checkpoints that ship no chat template (Phi-2: `Instruct: …\nOutput:`).
    static var fallbackChatTemplate: ChatTemplate? { get }
}

extension ModelFamily {
    public static func tensorName(_ role: TensorRole) -> String? { role.huggingFaceName }
    public static var normWeightOffset: Float { 0 }
    public static var fallbackChatTemplate: ChatTemplate? { nil }
}

/// The registry of model families.
public enum ModelFamilies {
    /// Every supported family.
    public static let all: [any ModelFamily.Type] = [
        Phi3Family.self,
        Phi2Family.self,
        Gemma3Family.self,
        LlamaFamily.self,
    ]

    /// The family for a configuration, or a `FormatError` naming the architecture.
    public static func family(for config: HFConfig, path: String) throws -> any ModelFamily.Type {
        let names = config.architectures ?? []
        for name in names {
            if let family = all.first(where: { $0.architectures.contains(name) }) { return family }
        }
        let supported = all.flatMap { $0.architectures }.joined(separator: ", ")
        throw FormatError(
            .unsupportedArchitecture,
            "unsupported architecture \(names.isEmpty ? "(none given)" : names.joined(separator: ", "))", path: path,
            key: "architectures", remedy: "Hearth runs: \(supported)")
    }
}

/// Reads a required positive integer from a configuration, with a clear error.
func required(_ value: Int?, _ key: String, path: String = "config.json") throws -> Int {
    guard let value else { throw FormatError(.missingKey, "missing required value", path: path, key: key) }
    guard value > 0 else {
        throw FormatError(.invalidValue, "must be a positive integer, got \(value)", path: path, key: key)
    }
    return value
}
