import HearthFormats
import HearthTokenizers

/// Builds a tokenizer from a GGUF file's `tokenizer.ggml.*` metadata: SentencePiece-style
/// `llama` vocabularies and GPT-2-style byte-level BPE (`gpt2`), following llama.cpp.
enum GGUFTokenizer {
    /// Token texts llama.cpp also treats as end of generation.
    static let endOfGenerationTexts = ["<end_of_turn>", "<|end|>", "<|eot_id|>", "<|im_end|>", "<|endoftext|>", "<|eom_id|>"]

    static func make(_ gguf: GGUFFile) throws -> any Tokenizer {
        let md = gguf.metadata
        let model = try md.string("tokenizer.ggml.model") ?? "llama"
        guard model == "llama" || model == "gpt2" || model == "gemma4" else {
            throw FormatError(
                .invalidValue,
                "tokenizer model '\(model)' is not supported (only SentencePiece-style 'llama', byte-level BPE 'gpt2' and Gemma 4's 'gemma4')",
                path: gguf.file.path, key: "tokenizer.ggml.model")
        }
        let tokens = try md.require("tokenizer.ggml.tokens", md.strings)
        func id(_ key: String) throws -> Int32? {
            guard let value = try md.int(key) else { return nil }
            guard value >= 0, value < tokens.count else {
                throw FormatError(
                    .invalidValue, "token id \(value) is outside the vocabulary (\(tokens.count))", path: gguf.file.path,
                    key: key)
            }
            return Int32(value)
        }
        let bos = try id("tokenizer.ggml.bos_token_id"), eos = try id("tokenizer.ggml.eos_token_id")
        var stops: [Int32] = try [id("tokenizer.ggml.eot_token_id"), id("tokenizer.ggml.eom_token_id")].compactMap { $0 }
        let endTexts = Set(endOfGenerationTexts)
        for (i, text) in tokens.enumerated() where endTexts.contains(text) { stops.append(Int32(i)) }
        func text(_ id: Int32?) -> String? { id.flatMap { Int($0) < tokens.count && $0 >= 0 ? tokens[Int($0)] : nil } }
        var special: [String: String] = [:]
        special["bos_token"] = text(bos)
        special["eos_token"] = text(eos)
        special["unk_token"] = text(try id("tokenizer.ggml.unknown_token_id"))
        special["pad_token"] = text(try id("tokenizer.ggml.padding_token_id"))
        // Named variants: `tokenizer.chat_template.<name>` (llama.cpp's convert script writes them).
        var variants: [String: String] = [:]
        let variantPrefix = "tokenizer.chat_template."
        for key in md.keys where key.hasPrefix(variantPrefix) {
            if let source = try? md.string(key) { variants[String(key.dropFirst(variantPrefix.count))] = source }
        }
        var template = try md.string("tokenizer.chat_template").map {
            ChatTemplate(ownTemplate: $0, origin: "GGUF tokenizer.chat_template", specialTokens: special, variants: variants)
        }
        // Files without a template get their family's known format.
        if template == nil, let arch = try md.string("general.architecture") {
            template = ModelFamilies.family(ggufArchitecture: arch)?.ggufFallbackChatTemplate(bos: text(bos), eos: text(eos))
        }
        if model == "gpt2" || model == "gemma4" {
            return try mergesBPE(gguf, model: model, tokens: tokens, bos: bos, eos: eos, stops: stops, template: template)
        }
        do {
            return try VocabularyTokenizer(
                tokens: tokens, scores: try md.floats("tokenizer.ggml.scores"), types: try md.int32s("tokenizer.ggml.token_type"),
                bos: bos, eos: eos, unknown: try id("tokenizer.ggml.unknown_token_id"),
                addBOS: try md.bool("tokenizer.ggml.add_bos_token") ?? true,
                addEOS: try md.bool("tokenizer.ggml.add_eos_token") ?? false,
                addSpacePrefix: try md.bool("tokenizer.ggml.add_space_prefix") ?? true,
                extraStopTokens: stops, chatTemplate: template)
        } catch let error as TokenizerError {
            throw FormatError(.invalidValue, error.message, path: gguf.file.path, key: "tokenizer.ggml.tokens")
        }
    }

    /// `tokenizer.ggml.model == "gpt2"`: tokens, merges, token types and the `pre` pre-tokenizer;
    /// `"gemma4"`: tokens, merges and token types, BPE over `▁`-escaped UTF-8 with byte fallback
    /// (llama.cpp always adds BOS for these: its `add_bos_token` is overridden to true).
    private static func mergesBPE(
        _ gguf: GGUFFile, model kind: String, tokens: [String], bos: Int32?, eos: Int32?, stops: [Int32],
        template: ChatTemplate?
    ) throws -> any Tokenizer {
        let md = gguf.metadata
        let merges = try md.require("tokenizer.ggml.merges", md.strings)
        let types = try md.int32s("tokenizer.ggml.token_type") ?? []
        guard types.isEmpty || types.count == tokens.count else {
            throw FormatError(
                .invalidValue, "\(types.count) token types for \(tokens.count) tokens", path: gguf.file.path,
                key: "tokenizer.ggml.token_type")
        }
        // Unknown (2) and control (3) tokens are matched only when parsing special tokens; user-defined (4) always.
        var control: [Int32] = [], userDefined: [Int32] = []
        for (i, type) in types.enumerated() {
            switch type {
            case 2, 3: control.append(Int32(i))
            case 4: userDefined.append(Int32(i))
            default: break
            }
        }
        if kind == "gemma4" {
            do {
                return try BPETokenizer(
                    gemma4Model: try BPEModelDefinition(tokens: tokens, merges: merges, path: gguf.file.path),
                    controlTokens: control, userDefinedTokens: userDefined, bos: bos, eos: eos, addBOS: true,
                    addEOS: try md.bool("tokenizer.ggml.add_eos_token") ?? false, extraStopTokens: stops,
                    chatTemplate: template, path: gguf.file.path)
            } catch let error as TokenizerError {
                throw FormatError(
                    .invalidValue, error.message, path: gguf.file.path, key: error.key ?? "tokenizer.ggml.tokens",
                    remedy: error.remedy)
            }
        }
        // As llama.cpp: a missing `pre` means its "default" regexes.
        let preName = try md.string("tokenizer.ggml.pre") ?? "default"
        guard let pre = PreTokenizerName(preName) else {
            throw FormatError(
                .invalidValue, "pre-tokenizer '\(preName)' is not supported", path: gguf.file.path,
                key: "tokenizer.ggml.pre", remedy: "Supported: \(PreTokenizerName.supportedNames.joined(separator: ", "))")
        }
        do {
            let model = try BPEModelDefinition(
                tokens: tokens, merges: merges, ignoreMerges: pre.ignoresMerges, path: gguf.file.path)
            return try BPETokenizer(
                ggufModel: model, splitPatterns: pre.patterns, controlTokens: control, userDefinedTokens: userDefined,
                bos: bos, eos: eos, addBOS: try md.bool("tokenizer.ggml.add_bos_token") ?? pre.addsBOS,
                addEOS: try md.bool("tokenizer.ggml.add_eos_token") ?? false, extraStopTokens: stops,
                chatTemplate: template, kind: "bpe-byte-level (gguf gpt2, pre \(preName))", path: gguf.file.path)
        } catch let error as TokenizerError {
            throw FormatError(
                .invalidValue, error.message, path: gguf.file.path, key: error.key ?? "tokenizer.ggml.tokens",
                remedy: error.remedy)
        }
    }
}

/// llama.cpp's `tokenizer.ggml.pre` names and the pre-tokenizer regexes each stands for
/// (facts from llama.cpp's `llama-vocab.cpp`; the scanners are Hearth's own).
struct PreTokenizerName {
    let patterns: [String]
    /// llama.cpp sets `ignore_merges` for Llama 3-style vocabularies.
    let ignoresMerges: Bool
    /// The `add_bos` default when the file does not say.
    let addsBOS: Bool

    private static let gpt2Names: Set = [
        "gpt-2", "phi-2", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "gigachat", "mellum", "modern-bert", "a.x-4.0",
        "mpt", "olmo",
    ]
    private static let llama3Names: Set = ["llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"]
    private static let llama3RegexOnlyNames: Set = ["dbrx", "smaug-bpe"]
    private static let o200kNames: Set = ["gpt-4o", "llama4", "kanana2"]
    private static let qwen2Names: Set = ["qwen2", "deepseek-r1-qwen"]

    static var supportedNames: [String] {
        (["default"] + gpt2Names + llama3Names + llama3RegexOnlyNames + o200kNames + qwen2Names).sorted()
    }

    init?(_ name: String) {
        switch name {
        case "default":
            // llama.cpp's fallback: punctuation runs, the GPT-2 regex, digit runs, then groups of three ASCII digits.
            patterns = [#"[\p{P}\$\+<=>\^~\|]+"#, KnownPatternSource.gpt2, #"\p{N}+"#, "[0-9][0-9][0-9]"]
            ignoresMerges = false
            addsBOS = false
        case _ where Self.gpt2Names.contains(name):
            (patterns, ignoresMerges, addsBOS) = ([KnownPatternSource.gpt2], false, false)
        case _ where Self.llama3Names.contains(name):
            (patterns, ignoresMerges, addsBOS) = ([KnownPatternSource.llama3], true, true)
        case _ where Self.llama3RegexOnlyNames.contains(name):
            (patterns, ignoresMerges, addsBOS) = ([KnownPatternSource.llama3], false, false)
        case _ where Self.o200kNames.contains(name):
            (patterns, ignoresMerges, addsBOS) = ([KnownPatternSource.o200k], false, false)
        case _ where Self.qwen2Names.contains(name):
            (patterns, ignoresMerges, addsBOS) = ([KnownPatternSource.qwen2], false, false)
        default:
            return nil
        }
    }
}
