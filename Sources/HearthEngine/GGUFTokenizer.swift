import HearthFormats
import HearthTokenizers

/// Builds a tokenizer from a GGUF file's `tokenizer.ggml.*` metadata.
enum GGUFTokenizer {
    /// Token texts llama.cpp also treats as end of generation.
    static let endOfGenerationTexts = ["<end_of_turn>", "<|end|>", "<|eot_id|>", "<|im_end|>", "<|endoftext|>", "<|eom_id|>"]

    static func make(_ gguf: GGUFFile) throws -> any Tokenizer {
        let md = gguf.metadata
        let model = try md.string("tokenizer.ggml.model") ?? "llama"
        guard model == "llama" else {
            throw FormatError(
                .invalidValue, "tokenizer model '\(model)' is not supported yet (only SentencePiece-style 'llama')",
                path: gguf.file.path, key: "tokenizer.ggml.model")
        }
        let tokens = try md.require("tokenizer.ggml.tokens", md.strings)
        func id(_ key: String) throws -> Int32? { try md.int(key).map { Int32(truncatingIfNeeded: $0) } }
        let bos = try id("tokenizer.ggml.bos_token_id"), eos = try id("tokenizer.ggml.eos_token_id")
        var stops: [Int32] = try [id("tokenizer.ggml.eot_token_id"), id("tokenizer.ggml.eom_token_id")].compactMap { $0 }
        for (i, text) in tokens.enumerated() where endOfGenerationTexts.contains(text) { stops.append(Int32(i)) }
        func text(_ id: Int32?) -> String? { id.flatMap { Int($0) < tokens.count && $0 >= 0 ? tokens[Int($0)] : nil } }
        var template = try md.string("tokenizer.chat_template").flatMap {
            ChatTemplate(jinja: $0, bosToken: text(bos), eosToken: text(eos))
        }
        // Files without a template get their family's known format.
        if template == nil {
            switch try md.string("general.architecture") {
            case "gemma3", "gemma2", "gemma": template = ChatTemplate(format: .gemma, prefix: text(bos) ?? "")
            case "phi3": template = ChatTemplate(format: .phi3, endOfText: text(eos) ?? "")
            case "phi2": template = ChatTemplate(format: .instruct)
            default: break
            }
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
}
