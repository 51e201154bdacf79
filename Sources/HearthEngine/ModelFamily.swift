import HearthFormats
import HearthTokenizers

/// A model family: everything Hearth knows about one architecture, in one file
/// (`Families/<Name>.swift`): its own `config.json` keys (a private `Decodable` struct), how
/// its config and its GGUF metadata map to `DecoderOptions`, its tensor names in both formats,
/// load-time weight fixes and the prompt format for files that ship no chat template.
/// Registered with one line in `ModelFamilies.all`; `docs/adding-a-family.patch` is a whole
/// family added that way.
///
/// Shared steps (the config prelude, GGUF hyperparameters, activation names, LongRoPE's
/// attention factor) live in `Families/FamilySupport.swift`.
package protocol ModelFamily: Sendable {
    /// `architectures` values in config.json this family handles.
    static var architectures: [String] { get }
    /// The GGUF `general.architecture` value this family handles (nil: no GGUF support).
    static var ggufArchitecture: String? { get }
    /// Validates a Hugging Face configuration and derives the forward-pass options: the keys
    /// every family reads are `config`'s properties, the family's own come from
    /// `config.decode(_:)` of a private struct in the family's file.
    static func options(from config: HFConfig) throws -> DecoderOptions
    /// Derives the forward-pass options from GGUF metadata (and tensors such as rope factors).
    static func options(gguf: GGUFFile) throws -> DecoderOptions
    /// The tensor name of a role in this family's Hugging Face checkpoints (nil: none).
    static func tensorName(_ role: TensorRole) -> String?
    /// The tensor name of a role in this family's GGUF files (nil: none).
    static func ggufTensorName(_ role: TensorRole) -> String?
    /// Where the decoder sits in checkpoints of `config`'s architecture: the prefix that replaces
    /// the leading `model.` of ``tensorName(_:)``'s names (Gemma 4's
    /// `Gemma4ForConditionalGeneration` keeps its text decoder under `model.language_model.`
    /// beside vision and audio towers, which are not read); nil: the names as they are.
    static func decoderPrefix(for config: HFConfig) -> String?
    /// Added to every norm weight of a Hugging Face checkpoint at load (Gemma stores w − 1
    /// and multiplies by 1 + w; GGUF files already hold w).
    static var normWeightOffset: Float { get }
    /// The prompt format for checkpoints that ship no chat template (Phi-2: `Instruct: …\nOutput:`).
    static var fallbackChatTemplate: ChatTemplate? { get }
    /// The prompt format for GGUF files that ship no `tokenizer.chat_template`, given the
    /// vocabulary's BOS and EOS texts.
    static func ggufFallbackChatTemplate(bos: String?, eos: String?) -> ChatTemplate?
}

extension ModelFamily {
    package static var ggufArchitecture: String? { nil }
    package static func options(gguf: GGUFFile) throws -> DecoderOptions {
        throw FormatError(
            .unsupportedArchitecture, "GGUF files of this architecture are not supported", path: gguf.file.path,
            key: "general.architecture")
    }
    package static func tensorName(_ role: TensorRole) -> String? { role.huggingFaceName }
    package static func ggufTensorName(_ role: TensorRole) -> String? { role.ggufName }
    package static func decoderPrefix(for config: HFConfig) -> String? { nil }
    package static var normWeightOffset: Float { 0 }
    package static var fallbackChatTemplate: ChatTemplate? { nil }
    package static func ggufFallbackChatTemplate(bos: String?, eos: String?) -> ChatTemplate? { fallbackChatTemplate }
}

/// The registry of model families: the one list a new family is added to.
package enum ModelFamilies {
    /// Every supported family.
    package static let all: [any ModelFamily.Type] = [
        Phi3Family.self,
        Phi2Family.self,
        Gemma3Family.self,
        LlamaFamily.self,
        Qwen2Family.self,
        Qwen3Family.self,
        Gemma4Family.self,
    ]

    /// The family for a configuration (its `architectures`), or a `FormatError` naming them.
    package static func family(for config: HFConfig) throws -> any ModelFamily.Type {
        let names = config.architectures
        for name in names {
            if let family = all.first(where: { $0.architectures.contains(name) }) { return family }
        }
        let supported = all.flatMap { $0.architectures }.joined(separator: ", ")
        throw FormatError(
            .unsupportedArchitecture,
            "unsupported architecture \(names.isEmpty ? "(none given)" : names.joined(separator: ", "))", path: config.path,
            key: "architectures", remedy: "Hearth runs: \(supported)")
    }

    /// The family for a GGUF file (`general.architecture`), or a `FormatError` naming it.
    package static func family(for gguf: GGUFFile) throws -> any ModelFamily.Type {
        let arch = try gguf.metadata.require("general.architecture", gguf.metadata.string)
        guard let family = family(ggufArchitecture: arch) else {
            throw FormatError(
                .unsupportedArchitecture, "unsupported GGUF architecture '\(arch)'", path: gguf.file.path,
                key: "general.architecture",
                remedy: "Hearth runs: \(all.compactMap { $0.ggufArchitecture }.joined(separator: ", "))")
        }
        return family
    }

    /// The family whose GGUF architecture is `name`, if any.
    package static func family(ggufArchitecture name: String) -> (any ModelFamily.Type)? {
        all.first { $0.ggufArchitecture == name }
    }
}
