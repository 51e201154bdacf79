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

    /// Files of the checkpoint that `hearth quantize` embeds in an HQF file.
    public let tokenizerFiles: TokenizerFiles
    /// config.json as text (HQF embeds it verbatim).
    public let configText: String
    /// generation_config.json as text, if present.
    public let generationConfigText: String?

    /// Loads a model from `path`: a Hugging Face hub-layout checkpoint directory (or the
    /// directory of a given `.safetensors` file), or a Hearth `.hqf` file.
    /// With `quantize`, float weights are quantized in memory at load (q4_0, q4_1 or q8_0).
    public init(path: String, quantize: DType? = nil, threads: Int? = nil,
                progress: (@Sendable (Double) -> Void)? = nil) throws {
        let started = Date()
        var url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw FormatError(
                .fileNotFound, "model path does not exist", path: path,
                remedy: "Pass a checkpoint directory (config.json, *.safetensors, tokenizer.model) or a .hqf file")
        }
        let store: TensorStore
        let isHQF = !isDirectory.boolValue && HQFFile.isHQF(path: url.path)
        if isHQF {
            let hqf = try HQFFile(path: url.path)
            store = hqf
            configText = hqf.header.config
            generationConfigText = hqf.header.generationConfig
            tokenizerFiles = TokenizerFiles(
                sentencePieceModel: try hqf.embeddedFile("tokenizer.model"),
                config: try hqf.embeddedFile("tokenizer_config.json"),
                addedTokens: try hqf.embeddedFile("added_tokens.json"), origin: url.path)
        } else {
            if !isDirectory.boolValue { url = url.deletingLastPathComponent() }
            let configURL = url.appendingPathComponent("config.json")
            guard let configData = FileManager.default.contents(atPath: configURL.path) else {
                throw FormatError(
                    .fileNotFound, "no config.json in the model directory", path: url.path,
                    remedy: "Download the whole checkpoint directory, not only the weights")
            }
            configText = String(decoding: configData, as: UTF8.self)
            generationConfigText = FileManager.default.contents(
                atPath: url.appendingPathComponent("generation_config.json").path
            ).map { String(decoding: $0, as: UTF8.self) }
            tokenizerFiles = TokenizerFiles(directory: url)
            store = try SafetensorsCheckpoint(directory: url)
        }
        self.path = url

        config = try decodeJSON(HFConfig.self, from: Data(configText.utf8), path: url.path + " (config.json)")
        let family = try ModelFamilies.family(for: config, path: url.path)
        architecture = config.architectures?.first ?? "?"
        options = try family.options(from: config)
        // HQF files use the canonical role names and already carry load-time fixes.
        var weights =
            isHQF
            ? try ModelWeights(options: options, store: store) { $0.huggingFaceName }
            : try ModelWeights(options: options, store: store, normOffset: family.normWeightOffset) {
                family.tensorName($0)
            }
        if let quantize {
            let plan = try QuantizationPlan(type: quantize)
            weights = weights.quantized(
                plan: plan, options: options, threads: threads ?? WorkerPool.defaultThreadCount, progress: progress)
        }
        self.weights = weights
        generationConfig = try generationConfigText.map {
            try decodeJSON(GenerationConfig.self, from: Data($0.utf8), path: url.path + " (generation_config.json)")
        }
        tokenizer = try SentencePieceTokenizer(files: tokenizerFiles)
        var eos = tokenizer.eosIDs
        for id in (config.eosTokenId?.values ?? []) + (generationConfig?.eosTokenId?.values ?? []) {
            eos.insert(Int32(truncatingIfNeeded: id))
        }
        eosIDs = eos

        var bytes: [DType: Int] = [:]
        var parameters = 0
        for (_, m) in weights.namedMatrices(options: options) {
            bytes[m.dtype, default: 0] += m.byteCount
            parameters += m.rows * m.cols
        }
        parameters += weights.namedVectors().reduce(0) { $0 + $1.vector.count }
        weightBytesByType = bytes
        parameterCount = parameters
        loadSeconds = Date().timeIntervalSince(started)
    }

    /// Bytes of weights one decode step reads: every matrix once, except the embedding
    /// table, of which one row is read.
    public var weightBytesPerToken: Int {
        weights.namedMatrices(options: options).reduce(0) { total, entry in
            total + (entry.role == .tokenEmbedding && !options.tiedEmbeddings ? 0 : entry.matrix.byteCount)
        } + (options.tiedEmbeddings ? 0 : weights.tokenEmbedding.byteCount / max(1, options.vocabSize))
    }

    /// The default context: the model's trained length, capped at 4096 to keep the cache small.
    public var defaultContext: Int { min(options.maxContext, 4096) }

    /// Renders a conversation with the checkpoint's chat template and tokenizes it the way
    /// transformers' `apply_chat_template(…, tokenize=True)` does (the template supplies BOS).
    public func chatPrompt(_ messages: [ChatTurn]) throws -> [Int32] {
        guard let template = tokenizer.chatTemplate else {
            throw EngineError(
                .missingComponent, "this checkpoint has no chat template Hearth recognises",
                remedy: "Use --raw to send the prompt as is")
        }
        return try tokenizer.encode(template.render(messages, addGenerationPrompt: true), addSpecialTokens: false)
    }
}
