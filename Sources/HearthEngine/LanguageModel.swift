import Foundation
import HearthFormats
import HearthKernels
import HearthTokenizers

/// A loaded model: configuration, weights (memory-mapped), tokenizer and stop tokens.
/// Immutable and shareable; create a `Decoder` (or `Generator`) per conversation.
public final class LanguageModel: Sendable {
    /// Where it was loaded from.
    public let path: URL
    /// The checkpoint's config.json.
    public let config: HFConfig
    /// Forward-pass options derived by the family.
    public let options: DecoderOptions
    /// Family name (`architectures[0]`).
    public let architecture: String
    /// The weights.
    public let weights: ModelWeights
    /// The tokenizer.
    public let tokenizer: any Tokenizer
    /// Token ids that end generation: config.json ∪ generation_config.json ∪ tokenizer config.
    public let eosIDs: Set<Int32>
    /// generation_config.json, if present.
    public let generationConfig: GenerationConfig?
    /// Bytes of weights by storage type.
    public let weightBytesByType: [DType: Int]
    /// Number of parameters.
    public let parameterCount: Int
    /// Seconds the load took.
    public let loadSeconds: Double

    /// Loads a Hugging Face hub-layout checkpoint directory (or the directory of a given
    /// `.safetensors` file).
    public init(path: String) throws {
        let started = Date()
        var url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw FormatError(
                .fileNotFound, "model path does not exist", path: path,
                remedy: "Pass a checkpoint directory with config.json, *.safetensors and tokenizer.model")
        }
        if !isDirectory.boolValue { url = url.deletingLastPathComponent() }
        self.path = url

        let configURL = url.appendingPathComponent("config.json")
        guard FileManager.default.fileExists(atPath: configURL.path) else {
            throw FormatError(
                .fileNotFound, "no config.json in the model directory", path: url.path,
                remedy: "Download the whole checkpoint directory, not only the weights")
        }
        config = try HFConfig.load(from: configURL)
        let family = try ModelFamilies.family(for: config, path: configURL.path)
        architecture = config.architectures?.first ?? "?"
        options = try family.options(from: config)
        let store = try SafetensorsCheckpoint(directory: url)
        weights = try ModelWeights(options: options, store: store) { $0.huggingFaceName }

        let generationURL = url.appendingPathComponent("generation_config.json")
        generationConfig =
            FileManager.default.fileExists(atPath: generationURL.path)
            ? try GenerationConfig.load(from: generationURL) : nil
        tokenizer = try SentencePieceTokenizer(directory: url)
        var eos = tokenizer.eosIDs
        for id in (config.eosTokenId?.values ?? []) + (generationConfig?.eosTokenId?.values ?? []) {
            eos.insert(Int32(truncatingIfNeeded: id))
        }
        eosIDs = eos

        var bytes: [DType: Int] = [:]
        var parameters = 0
        var matrices = [weights.tokenEmbedding]
        if !options.tiedEmbeddings || weights.output.data != weights.tokenEmbedding.data { matrices.append(weights.output) }
        for layer in weights.layers {
            for projections in [layer.qkv, layer.gateUp] {
                switch projections {
                case .fused(let w): matrices.append(w)
                case .separate(let ws): matrices += ws
                }
            }
            matrices += [layer.attnOutput, layer.down]
            parameters += layer.attnNorm.count + layer.ffnNorm.count
        }
        for m in matrices {
            bytes[m.dtype, default: 0] += m.byteCount
            parameters += m.rows * m.cols
        }
        parameters += weights.outputNorm.count
        weightBytesByType = bytes
        parameterCount = parameters
        loadSeconds = Date().timeIntervalSince(started)
    }

    /// The default context: the model's trained length, capped at 4096 to keep the cache small.
    public var defaultContext: Int { min(options.maxContext, 4096) }

    /// Renders a conversation with the checkpoint's chat template and tokenizes it the way
    /// transformers' `apply_chat_template(…, tokenize=True)` does (the template supplies BOS).
    public func chatPrompt(_ messages: [ChatMessage]) throws -> [Int32] {
        guard let template = tokenizer.chatTemplate else {
            throw EngineError(
                .missingComponent, "this checkpoint has no chat template Hearth recognises",
                remedy: "Use --raw to send the prompt as is")
        }
        return try tokenizer.encode(template.render(messages, addGenerationPrompt: true), addSpecialTokens: false)
    }
}
