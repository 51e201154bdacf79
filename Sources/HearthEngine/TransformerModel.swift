import Foundation
import HearthFormats
import HearthKernels
import HearthTemplates
import HearthTokenizers

/// A loaded model: configuration, weights (memory-mapped), tokenizer and stop tokens.
/// Immutable and shareable; create a `Decoder` (or `Generator`) per conversation.
public final class TransformerModel: Sendable {
    /// Where it was loaded from.
    public let path: URL
    /// The checkpoint's config.json (HQF: the one it embeds). GGUF files have none: this is
    /// then an empty configuration with only `architectures` (`general.architecture`); read
    /// `options` for the dimensions.
    package let config: HFConfig
    /// Forward-pass options derived by the family.
    package let options: DecoderOptions
    /// Family name (`architectures[0]`).
    public let architecture: String
    /// The weights.
    package let weights: ModelWeights
    /// The tokenizer.
    public let tokenizer: any Tokenizer
    /// The vocabulary as structured output sees it, and compiled constraints (built on first use).
    let constraintStore = ConstraintStore()
    /// The prompt format: the `chatTemplate` the load was given (`--chat-template`), else the
    /// checkpoint's own Jinja template (rendered by HearthTemplates), else the family's
    /// hand-written fallback (Phi-2's `Instruct: …\nOutput:`, Gemma's turns), else nil.
    package let chatTemplate: ChatTemplate?
    /// The model's name as its files give it (GGUF `general.name`/`general.finetune`, else the
    /// file or directory name).
    public let name: String
    /// Why this looks like a base model (no instruction tuning), or nil when it looks
    /// instruction-tuned: a model whose files carry a chat template, or whose name says
    /// `it`, `instruct`, `chat`… is taken as tuned. A base model answers best to a plain
    /// dialogue (``dialogueTemplate``) rather than a chat template it was never trained on.
    package let baseModelReason: String?
    /// The completion-style prompt for base models (`ChatTemplate.Format.dialogue`), starting
    /// with BOS when the tokenizer adds one.
    package let dialogueTemplate: ChatTemplate
    /// Token ids that end generation: config.json ∪ generation_config.json ∪ tokenizer config.
    public let eosIDs: Set<Int32>
    /// generation_config.json, if present.
    package let generationConfig: GenerationConfig?
    /// Bytes of weights by storage type.
    package let weightBytesByType: [DType: Int]
    /// Number of parameters.
    public let parameterCount: Int
    /// Seconds the load took.
    public let loadSeconds: Double
    /// What the load did with the repack cache (GGUF files; `.notNeeded` for other formats).
    package let repackCacheOutcome: RepackCache.Outcome
    /// Where a GGUF load's time went, phase by phase (empty for other formats): `open`
    /// (mapping and header), `tensors` (tensor views, norms and biases converted to f32),
    /// `repack` (rearranging into the kernels' layout, or checking and mapping the repack
    /// cache), `tokenizer`; in seconds.
    package let loadPhases: [(name: String, seconds: Double)]

    /// Files of the checkpoint that `hearth quantize` embeds in an HQF file.
    package let tokenizerFiles: TokenizerFiles
    /// config.json as text (HQF embeds it verbatim).
    package let configText: String
    /// generation_config.json as text, if present.
    package let generationConfigText: String?
    /// How a checkpoint's own quantization was loaded (MLX: parameters, f16 exactness), if it has one.
    public let quantizationSummary: String?

    /// What a loader produces; `init(parts:)` stores it.
    private struct Parts {
        var path: URL, config: HFConfig, configText: String, generationConfigText: String?
        var architecture: String, options: DecoderOptions, weights: ModelWeights
        var tokenizer: any Tokenizer, tokenizerFiles: TokenizerFiles
        var extraStopTokens: [Int] = []
        var fallbackChatTemplate: ChatTemplate? = nil
        /// The model's name as its files give it (GGUF `general.name` and `general.finetune`,
        /// else the file or directory name), for telling base from instruction-tuned models.
        var name: String
        /// Whether the files carry a chat template of their own (nil: the tokenizer's template is).
        var ownChatTemplate: Bool? = nil
        /// What the load did with the repack cache.
        var repackOutcome: RepackCache.Outcome = .notNeeded
        /// Seconds per load phase (GGUF).
        var phases: [(name: String, seconds: Double)] = []
        /// `--chat-template FILE|NAME` (``TransformerModel/chatTemplate(override:own:tokenizer:)``).
        var chatTemplateOverride: String? = nil
    }

    private init(parts: Parts, started: Date) throws {
        path = parts.path
        config = parts.config
        configText = parts.configText
        generationConfigText = parts.generationConfigText
        architecture = parts.architecture
        options = parts.options
        weights = parts.weights
        tokenizer = parts.tokenizer
        let own = parts.tokenizer.chatTemplate ?? parts.fallbackChatTemplate
        chatTemplate = try parts.chatTemplateOverride.map { try Self.chatTemplate(override: $0, own: own, tokenizer: parts.tokenizer) } ?? own
        name = parts.name
        baseModelReason = Self.baseModelReason(
            name: parts.name,
            hasOwnTemplate: parts.chatTemplateOverride != nil || (parts.ownChatTemplate ?? (parts.tokenizer.chatTemplate != nil)))
        let bosText = parts.tokenizer.bosID.flatMap { parts.tokenizer.bytes(of: $0) }.map { String(decoding: $0, as: UTF8.self) }
        dialogueTemplate = ChatTemplate(format: .dialogue, prefix: parts.tokenizer.addsBOS ? (bosText ?? "") : "")
        tokenizerFiles = parts.tokenizerFiles
        quantizationSummary = MLXTiles.summary(of: parts.weights.namedMatrices(options: parts.options).map(\.matrix))
        generationConfig = try parts.generationConfigText.map {
            try decodeJSON(GenerationConfig.self, from: Data($0.utf8), path: parts.path.path + " (generation_config.json)")
        }
        var eos = parts.tokenizer.eosIDs
        for id in (parts.config.eosTokenId?.values ?? []) + (generationConfig?.eosTokenId?.values ?? []) + parts.extraStopTokens {
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
        repackCacheOutcome = parts.repackOutcome
        loadPhases = parts.phases
        loadSeconds = Date().timeIntervalSince(started)
        // The format parsers' and the tokenizer builder's temporaries are freed by now: hand
        // their heap pages back rather than keep them resident for the life of the process.
        releaseFreeHeapMemory()
    }

    /// Loads a model from `path`: a Hugging Face hub-layout checkpoint directory (or the
    /// directory of a given `.safetensors` file), a Hearth `.hqf` file, or a GGUF file.
    /// With `quantize`, float weights are quantized in memory at load (q4_0, q4_1 or q8_0).
    /// `tokenizer` picks the tokenizer file of a checkpoint or HQF file: by default
    /// `tokenizer.model` (SentencePiece) when present, else `tokenizer.json`; GGUF files always
    /// use their own vocabulary. GGUF weights rearranged into the kernels' layout are kept in
    /// `repackCache` (default: the environment's, see ``RepackCache/init(environment:)``), so
    /// a second load of the same unchanged file maps them instead of rearranging them.
    ///
    /// `chatTemplate` overrides the checkpoint's prompt format (`--chat-template`): a named
    /// template of the file (`tool_use`, `rag`…; `default` is the file's own), a hand-written
    /// format (`chatml`, `gemma`, `llama3`, `phi3`, `phi4-mini`, `instruct`), or the path of a
    /// Jinja file. It throws `EngineError` `.invalidOption` when it names nothing, or when the
    /// file's template does not compile (with the `TemplateError`'s line and column).
    public convenience init(
        path: String, quantize: DType? = nil, threads: Int? = nil, progress: (@Sendable (Double) -> Void)? = nil,
        tokenizer: TokenizerSource = .automatic, repackCache: RepackCache = .default, chatTemplate: String? = nil
    ) throws {
        let started = Date()
        let url = URL(fileURLWithPath: path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw FormatError(
                .fileNotFound, "model path does not exist", path: path,
                remedy: "Pass a checkpoint directory (config.json, *.safetensors, tokenizer.model), a .hqf or a .gguf file")
        }
        var parts: Parts
        if !isDirectory.boolValue && GGUFFile.isGGUF(path: url.path) {
            // The first part of a split set (`…-00001-of-0000N.gguf`) brings the other parts.
            if GGUFSplit.partPaths(first: url.path).map({ $0.count > 1 }) == true {
                let split = try GGUFSplit(path: url.path)
                parts = try Self.loadGGUF(split.first, store: split, cache: .disabled)
            } else {
                let gguf = try GGUFFile(path: url.path)
                let opened = Date().timeIntervalSince(started)
                parts = try Self.loadGGUF(gguf, store: gguf, cache: repackCache)
                parts.phases.insert(("open", opened), at: 0)
            }
        } else if !isDirectory.boolValue && HQFFile.isHQF(path: url.path) {
            parts = try Self.loadHQF(try HQFFile(path: url.path), tokenizer: tokenizer)
        } else if isDirectory.boolValue || Self.looksLikeSafetensors(url) {
            parts = try Self.loadCheckpoint(
                isDirectory.boolValue ? url : url.deletingLastPathComponent(), tokenizer: tokenizer,
                threads: threads ?? WorkerPool.defaultThreadCount)
        } else {
            throw FormatError(
                .invalidHeader,
                "is neither a GGUF, an HQF nor a safetensors file, nor a checkpoint directory (first bytes: \(Self.firstBytes(url)))",
                path: path,
                remedy: "Pass a .gguf file, a .hqf file from `hearth quantize`, or a Hugging Face checkpoint directory "
                    + "(config.json, *.safetensors, tokenizer files)")
        }
        if let quantize {
            let plan = try QuantizationPlan(type: quantize)
            parts.weights = parts.weights.quantized(
                plan: plan, options: parts.options, threads: threads ?? WorkerPool.defaultThreadCount, progress: progress)
        }
        parts.chatTemplateOverride = chatTemplate
        try self.init(parts: parts, started: started)
    }

    /// A `.safetensors` file (by name), or one whose header starts like one: an 8-byte
    /// little-endian length, then `{`.
    private static func looksLikeSafetensors(_ url: URL) -> Bool {
        if url.pathExtension == "safetensors" { return true }
        guard let handle = try? FileHandle(forReadingFrom: url), let head = try? handle.read(upToCount: 9) else { return false }
        try? handle.close()
        return head.count == 9 && head[head.startIndex + 8] == UInt8(ascii: "{")
    }

    /// The first 16 bytes of a file in hex and as text, for errors about unknown files.
    private static func firstBytes(_ url: URL) -> String {
        guard let handle = try? FileHandle(forReadingFrom: url), let head = try? handle.read(upToCount: 16), !head.isEmpty
        else { return "none: the file is empty or unreadable" }
        try? handle.close()
        let hex = head.map { String(format: "%02x", $0) }.joined(separator: " ")
        let text = String(head.map { (0x20..<0x7f).contains($0) ? Character(UnicodeScalar($0)) : "." })
        return "\(hex) \"\(text)\""
    }

    /// A Hugging Face checkpoint directory.
    private static func loadCheckpoint(_ url: URL, tokenizer source: TokenizerSource, threads: Int) throws -> Parts {
        let configURL = url.appendingPathComponent("config.json")
        guard let configData = FileManager.default.contents(atPath: configURL.path) else {
            throw FormatError(
                .fileNotFound, "no config.json in the model directory", path: url.path,
                remedy: "Download the whole checkpoint directory, not only the weights")
        }
        let configText = String(decoding: configData, as: UTF8.self)
        let config = try HFConfig(json: configData, path: configURL.path)
        let family = try ModelFamilies.family(for: config)
        let options = try family.options(from: config)
        // MLX-quantized checkpoints (config.json `quantization`) come through MLXCheckpoint.
        let store = try MLXCheckpoint.store(
            for: try SafetensorsCheckpoint(directory: url), configJSON: configData, path: configURL.path, threads: threads)
        let prefix = family.decoderPrefix(for: config)
        let weights = try ModelWeights(options: options, store: store, normOffset: family.normWeightOffset) { role in
            guard let name = family.tensorName(role) else { return nil }
            if let prefix, name.hasPrefix("model.") { return prefix + name.dropFirst("model.".count) }
            return name
        }
        let files = TokenizerFiles(directory: url)
        return Parts(
            path: url, config: config, configText: configText,
            generationConfigText: FileManager.default.contents(
                atPath: url.appendingPathComponent("generation_config.json").path
            ).map { String(decoding: $0, as: UTF8.self) },
            architecture: config.architectures.first ?? "?", options: options, weights: weights,
            tokenizer: try TokenizerLoader.load(files: files, source: source), tokenizerFiles: files,
            fallbackChatTemplate: family.fallbackChatTemplate, name: url.lastPathComponent)
    }

    /// A Hearth `.hqf` file: canonical tensor names, load-time fixes already applied.
    private static func loadHQF(_ hqf: HQFFile, tokenizer source: TokenizerSource) throws -> Parts {
        let url = URL(fileURLWithPath: hqf.file.path)
        let config = try HFConfig(json: Data(hqf.header.config.utf8), path: url.path + " (config.json)")
        let family = try ModelFamilies.family(for: config)
        let options = try family.options(from: config)
        let weights = try ModelWeights(options: options, store: hqf) { $0.huggingFaceName }
        let files = TokenizerFiles(
            sentencePieceModel: try hqf.embeddedFile("tokenizer.model"),
            tokenizerJSON: try hqf.embeddedFile("tokenizer.json"),
            config: try hqf.embeddedFile("tokenizer_config.json"),
            addedTokens: try hqf.embeddedFile("added_tokens.json"), chatTemplateJinja: try hqf.embeddedFile("chat_template.jinja"),
            origin: url.path)
        return Parts(
            path: url, config: config, configText: hqf.header.config, generationConfigText: hqf.header.generationConfig,
            architecture: config.architectures.first ?? "?", options: options, weights: weights,
            tokenizer: try TokenizerLoader.load(files: files, source: source), tokenizerFiles: files,
            fallbackChatTemplate: family.fallbackChatTemplate, name: url.deletingPathExtension().lastPathComponent)
    }

    /// A GGUF file: family from `general.architecture`, tokenizer from its vocabulary.
    /// Block-type tensors with a kernel layout (q4_0/q4_1/q8_0, q5_0/q5_1, q4_K/q5_K/q6_K) are
    /// rearranged (losslessly) into it, or mapped from `cache` when it holds them for this
    /// file (single files only: `store` is `gguf`); the other types are used in place.
    private static func loadGGUF(_ gguf: GGUFFile, store: any TensorStore, cache: RepackCache) throws -> Parts {
        let family = try ModelFamilies.family(for: gguf)
        let options = try family.options(gguf: gguf)
        let config = HFConfig(architectures: [try gguf.metadata.string("general.architecture") ?? "?"])
        var clock = Date()
        var phases: [(name: String, seconds: Double)] = []
        func lap(_ name: String) {
            let now = Date()
            phases.append((name, now.timeIntervalSince(clock)))
            clock = now
        }
        let weights = try ModelWeights(options: options, store: store) { family.ggufTensorName($0) }
        lap("tensors")
        let repacked = weights.repackedForKernels(
            options: options, source: (store as? GGUFFile) === gguf ? gguf.file : nil, cache: cache)
        lap("repack")
        let tokenizer = try GGUFTokenizer.make(gguf)
        lap("tokenizer")
        // What the load read from the mapping (header, vocabulary, norms — copied out — and,
        // without the cache, the matrices it rearranged) is not read again: hand those pages
        // back so they stop counting towards the process's memory. Matrices still used in
        // place (f16, q2_K/q3_K) are read from the file again when first used.
        gguf.file.dropPages(at: 0, count: gguf.file.size)
        return Parts(
            path: URL(fileURLWithPath: gguf.file.path), config: config, configText: "", generationConfigText: nil,
            architecture: config.architectures.first ?? "?", options: options,
            weights: repacked.weights, tokenizer: tokenizer,
            tokenizerFiles: TokenizerFiles(sentencePieceModel: nil, config: nil, addedTokens: nil, origin: gguf.file.path),
            name: [try gguf.metadata.string("general.name"), try gguf.metadata.string("general.finetune")]
                .compactMap { $0 }.joined(separator: " ").nonEmpty
                ?? URL(fileURLWithPath: gguf.file.path).deletingPathExtension().lastPathComponent,
            ownChatTemplate: try gguf.metadata.string("tokenizer.chat_template") != nil, repackOutcome: repacked.outcome,
            phases: phases)
    }

    /// Name parts that mark an instruction-tuned model (`gemma-3-270m-it`, `Phi-3-mini-instruct`…).
    static let instructionMarkers: Set<String> = ["it", "instruct", "chat", "sft", "dpo", "rlhf", "assistant", "tuned"]

    static func baseModelReason(name: String, hasOwnTemplate: Bool) -> String? {
        if hasOwnTemplate { return nil }
        let words = name.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init)
        if words.contains(where: { instructionMarkers.contains($0) }) { return nil }
        return "its files carry no chat template and its name (\(name)) does not say it is instruction-tuned"
    }

    /// Bytes of weights one decode step reads: every matrix once, except the embedding
    /// table, of which one row is read.
    package var weightBytesPerToken: Int {
        weights.namedMatrices(options: options).reduce(0) { total, entry in
            total + (entry.role == .tokenEmbedding && !options.tiedEmbeddings ? 0 : entry.matrix.byteCount)
        } + (options.tiedEmbeddings ? 0 : weights.tokenEmbedding.byteCount / max(1, options.vocabSize))
    }

    /// The default context: the model's trained length, capped at 4096 to keep the cache small.
    public var defaultContext: Int { min(options.maxContext, 4096) }

    /// Renders a conversation with the checkpoint's chat template and tokenizes it the way
    /// transformers' `apply_chat_template(…, tokenize=True)` does (the template supplies BOS).
    /// With `dialogue`, renders the base-model dialogue (``dialogueTemplate``) instead.
    package func chatPrompt(_ messages: [ChatTurn], dialogue: Bool = false) throws -> [Int32] {
        try tokenizer.encode(chatPromptText(messages, dialogue: dialogue), addSpecialTokens: false)
    }

    /// The text ``chatPrompt(_:dialogue:)`` encodes (special tokens written as text): the chat
    /// template, or with `dialogue` the base-model dialogue, rendered with the generation prompt.
    /// - Throws: `EngineError` `.missingComponent` when the checkpoint has no template Hearth knows.
    /// `toolsDeclared`: the turns describe tools (see `ChatTemplate.render`).
    package func chatPromptText(_ messages: [ChatTurn], dialogue: Bool = false, toolsDeclared: Bool = false) throws -> String {
        guard let template = dialogue ? dialogueTemplate : chatTemplate else {
            throw EngineError(
                .missingComponent, "this checkpoint has no chat template Hearth recognises",
                remedy: "Use --raw to send the prompt as is")
        }
        do {
            return try template.render(messages, addGenerationPrompt: true, toolsDeclared: toolsDeclared)
        } catch let error as TemplateError {
            throw Self.templateFailure(error, template)
        }
    }

    /// The prompt text of a structured conversation (tool calls, tool results, reasoning,
    /// `tools`, `documents`, extra variables) rendered by the chat template
    /// (``ChatTemplate/render(_:now:)``); BOS and the other special tokens come from the tokenizer.
    /// - Throws: `EngineError` `.missingComponent` without a template, `.invalidOption` naming the
    ///   template's error (``templateFailure(_:_:)``).
    package func chatPromptText(_ input: ChatTemplateInput) throws -> String {
        guard var template = chatTemplate else {
            throw EngineError(
                .missingComponent, "this checkpoint has no chat template Hearth recognises",
                remedy: "Use --raw to send the prompt as is, or --chat-template to name one")
        }
        // With tools, a file's `tool_use` template renders (as transformers picks it).
        if input.tools != nil, let toolUse = template.toolUseJinja, toolUse.compileError == nil { template.jinja = toolUse }
        do { return try template.render(input) } catch let error as TemplateError { throw Self.templateFailure(error, template) }
    }

    /// A template's failure as the engine's error: `.invalidOption` (the conversation or the
    /// template is at fault, never the process), naming the template and the `TemplateError`.
    static func templateFailure(_ error: TemplateError, _ template: ChatTemplate) -> EngineError {
        EngineError(.invalidOption, "the chat template (\(template.rendererDescription)) failed: \(error)")
    }

    /// The template `--chat-template spec` names (see ``init(path:quantize:threads:progress:tokenizer:repackCache:chatTemplate:)``).
    static func chatTemplate(override spec: String, own: ChatTemplate?, tokenizer: any Tokenizer) throws -> ChatTemplate {
        func text(_ id: Int32?) -> String? { id.flatMap { tokenizer.bytes(of: $0) }.map { String(decoding: $0, as: UTF8.self) } }
        var special = own?.jinja?.specialTokens ?? [:]
        if special.isEmpty {
            special["bos_token"] = text(tokenizer.bosID)
            special["eos_token"] = text(tokenizer.eosIDs.min())
        }
        func compiled(_ source: String, origin: String) throws -> ChatTemplate {
            var template = ChatTemplate(ownTemplate: source, origin: origin, specialTokens: special, variants: own?.variants ?? [:])
            template.toolUseJinja = nil  // the template asked for renders every conversation
            if let error = template.jinja?.compileError {
                throw EngineError(.invalidOption, "--chat-template \(origin): the template does not compile: \(error)")
            }
            return template
        }
        let looksLikePath = spec.contains("/") || spec.hasSuffix(".jinja")
        if !looksLikePath {
            if spec == "default", let own, own.jinja != nil { return own }
            if let source = own?.variants[spec] { return try compiled(source, origin: "named template '\(spec)'") }
            if let format = ChatTemplate.Format(rawValue: spec), format != .jinja, format != .dialogue {
                let bos = special["bos_token"] ?? "", eos = special["eos_token"] ?? ""
                switch format {
                case .gemma, .llama3: return ChatTemplate(format: format, prefix: bos)
                case .phi3, .phi4Mini: return ChatTemplate(format: format, endOfText: eos)
                default: return ChatTemplate(format: format)
                }
            }
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: spec, isDirectory: &isDirectory), !isDirectory.boolValue {
            guard let data = FileManager.default.contents(atPath: spec) else {
                throw EngineError(.invalidOption, "--chat-template: the file \(URL(fileURLWithPath: spec).lastPathComponent) cannot be read")
            }
            return try compiled(String(decoding: data, as: UTF8.self), origin: "file \(URL(fileURLWithPath: spec).lastPathComponent)")
        }
        let names = (["default"] + (own?.variants.keys.sorted() ?? []) + ["chatml", "gemma", "llama3", "phi3", "phi4-mini", "instruct"])
        throw EngineError(
            .invalidOption, "--chat-template '\(spec.prefix(80))' is neither a file nor a template name",
            remedy: "Pass the path of a Jinja file or one of: \(names.joined(separator: ", "))")
    }
}

extension String {
    /// Nil for the empty string.
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
