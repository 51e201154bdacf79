import Foundation

/// A BPE tokenizer from a Hugging Face `tokenizer.json` (GPT-2/Phi-2 byte-level BPE, o200k
/// Phi-4-mini, Llama 3, Llama-2-style Metaspace + byte fallback, …) or from a GGUF `gpt2`
/// vocabulary, giving the ids HF `tokenizers` gives.
///
/// Encoding: added tokens are found in the raw text (then, for `normalized` ones, in the
/// normalized text), the pieces between them are normalized, pre-tokenized into words, and each
/// word is merged by `BPEModel`; the post-processor's special tokens go around the result.
/// Decoding goes token by token through `bytes(of:)`, so `StreamingDetokenizer` works as for
/// SentencePiece.
///
/// BOS/EOS: `encode(_:addSpecialTokens: true)` adds what tokenizer.json's `post_processor`
/// says, as transformers 5 does (it ignores `add_bos_token` when a tokenizer.json exists);
/// `tokenizer_config.json` names the BOS/EOS tokens and supplies the chat template.
package final class BPETokenizer: Tokenizer {
    /// One past the largest id (vocabulary, added and post-processor tokens).
    package let vocabularySize: Int
    /// `bos_token` of tokenizer_config.json, else the post-processor's first token.
    package let bosID: Int32?
    /// Whether the post-processor puts BOS first.
    package let addsBOS: Bool
    /// `eos_token` of tokenizer_config.json (GGUF: EOS plus end-of-turn tokens).
    package let eosIDs: Set<Int32>
    /// The recognised chat template of tokenizer_config.json (or the GGUF file).
    package let chatTemplate: ChatTemplate?
    /// "bpe-byte-level, o200k split (tokenizer.json)", "bpe, byte fallback (tokenizer.json)", …
    package let kind: String
    /// True for Llama-style decoders that drop the first token's leading space.
    package var decoderStripsLeadingSpace: Bool { decoder.stripsLeadingSpace }

    /// The typed tokenizer.json this was built from (nil for GGUF vocabularies).
    package let definition: TokenizerDefinition?
    /// Ids added before and after a sequence by `encode(_:addSpecialTokens: true)`.
    package let prefixIDs: [Int32]
    package let suffixIDs: [Int32]

    private let model: BPEModel
    private let normalizer: Normalizer?
    private let preTokenizer: PreTokenizer
    private let decoder: TokenDecoder
    /// Added tokens matched in the raw text, and those matched after normalization.
    private let rawAdded: AddedVocabulary
    private let normalizedAdded: AddedVocabulary
    private let addedByContent: [String: Int32]
    private let specialIDs: Set<Int32>
    /// Control tokens are only matched with `parseSpecial` (GGUF); tokenizer.json matches them always.
    private let controlTokensNeedParseSpecial: Bool
    /// Decoded bytes of every id, in one arena: `tokenBytes[tokenStarts[id]..<tokenStarts[id + 1]]`.
    private let tokenBytes: [UInt8]
    private let tokenStarts: [Int32]
    /// Ids that are tokens (gaps in a vocabulary and padding ids are not).
    private let hasBytes: [Bool]

    /// Loads `tokenizer.json` (required), `tokenizer_config.json` and `added_tokens.json` from `directory`.
    package convenience init(directory: URL) throws {
        try self.init(files: TokenizerFiles(directory: directory))
    }

    /// Builds the tokenizer from a checkpoint's files; `tokenizerJSON` must be present.
    package convenience init(files: TokenizerFiles) throws {
        let path = files.origin + "/tokenizer.json"
        guard let json = files.tokenizerJSON else {
            throw TokenizerError(
                .fileNotFound, "no tokenizer.json", path: files.origin,
                remedy: "Download the checkpoint's tokenizer.json next to config.json")
        }
        let definition = try TokenizerDefinition(json: [UInt8](json), path: path)
        try self.init(definition: definition, config: try TokenizerConfig.parse(files: files), path: path)
    }

    /// Builds the tokenizer from a parsed tokenizer.json and the checkpoint's tokenizer config.
    package convenience init(definition: TokenizerDefinition, config: TokenizerConfig, path: String? = nil) throws {
        let model = try BPEModel(definition.model, path: path)
        let preTokenizer = try PreTokenizer(definition.preTokenizer, path: path)
        let (prefix, suffix) = definition.postProcessor?.specialTokens ?? ([], [])
        var byContent: [String: Int32] = [:]
        for token in definition.addedTokens { byContent[token.content] = token.id }
        func lookup(_ text: String) -> Int32? { byContent[text] ?? model.definition.id(of: text) }
        let bosID = config.bosToken.flatMap(lookup) ?? prefix.first
        var kind = preTokenizer.isByteLevel ? "bpe-byte-level" : "bpe"
        if definition.model.byteFallback { kind += ", byte fallback" }
        if let pattern = preTokenizer.patternName { kind += ", \(pattern) split" }
        try self.init(
            Parts(
                model: model, normalizer: try definition.normalizer.map { try Normalizer($0, path: path) },
                preTokenizer: preTokenizer, decoder: try TokenDecoder(definition.decoder, path: path),
                added: definition.addedTokens.map { ($0, false) }, prefix: prefix, suffix: suffix, bosID: bosID,
                eosIDs: Set(config.eosToken.flatMap(lookup).map { [$0] } ?? []),
                chatTemplate: config.ownChatTemplate,
                kind: kind, definition: definition, controlTokensNeedParseSpecial: false, addedTokensDecodeRaw: false),
            path: path)
    }

    /// A byte-level BPE tokenizer from a GGUF `gpt2` vocabulary (see `GGUFTokenizer` in HearthEngine),
    /// following llama.cpp.
    ///
    /// - Parameters:
    ///   - model: vocabulary and merges.
    ///   - splitPatterns: the pre-tokenizer regexes for `tokenizer.ggml.pre`, applied in turn.
    ///   - controlTokens, userDefinedTokens: ids of GGUF token types 3 and 4. User-defined tokens
    ///     are always matched in the text; control tokens only with `parseSpecial`. Both decode
    ///     to their text as written.
    package convenience init(
        ggufModel model: BPEModelDefinition, splitPatterns: [String], controlTokens: [Int32], userDefinedTokens: [Int32],
        bos: Int32?, eos: Int32?, addBOS: Bool, addEOS: Bool, extraStopTokens: [Int32], chatTemplate: ChatTemplate?,
        kind: String, path: String? = nil
    ) throws {
        var matchers: [SplitMatcher] = []
        for (i, source) in splitPatterns.enumerated() {
            if let known = KnownSplitPattern(regex: source) {
                matchers.append(.known(known))
            } else {
                matchers.append(.regex(try RegexMatcher(source, path: path, key: "tokenizer.ggml.pre[\(i)]")))
            }
        }
        let added = Self.addedTokens(model, control: controlTokens, userDefined: userDefinedTokens)
        var stops = Set(extraStopTokens)
        if let eos { stops.insert(eos) }
        try self.init(
            Parts(
                model: try BPEModel(model, path: path), normalizer: nil, preTokenizer: PreTokenizer(byteLevelWith: matchers),
                decoder: .byteLevel, added: added, prefix: addBOS ? bos.map { [$0] } ?? [] : [],
                suffix: addEOS ? eos.map { [$0] } ?? [] : [], bosID: bos, eosIDs: stops, chatTemplate: chatTemplate,
                kind: kind, definition: nil, controlTokensNeedParseSpecial: true, addedTokensDecodeRaw: true),
            path: path)
    }

    /// A GGUF vocabulary's control tokens (special: matched only when special tokens are parsed)
    /// and user-defined tokens (always matched) as added tokens.
    static func addedTokens(
        _ model: BPEModelDefinition, control: [Int32], userDefined: [Int32]
    ) -> [(AddedTokenDefinition, Bool)] {
        var added: [(AddedTokenDefinition, Bool)] = []
        for id in control {
            guard let text = model.token(id), !text.isEmpty else { continue }
            added.append((AddedTokenDefinition(id: id, content: text, normalized: false, special: true), true))
        }
        for id in userDefined {
            guard let text = model.token(id), !text.isEmpty else { continue }
            added.append((AddedTokenDefinition(id: id, content: text, normalized: false, special: false), false))
        }
        return added
    }

    /// A tokenizer from a GGUF `gemma4` vocabulary (llama.cpp's `tokenizer.ggml.model = "gemma4"`,
    /// see `GGUFTokenizer` in HearthEngine), following llama.cpp: every space becomes `▁`, the text
    /// splits into runs of non-newlines and runs of newlines (a run of newlines that is itself a
    /// token is that token), each run is merged by rank over its UTF-8 characters (no byte-level
    /// alphabet), and pieces missing from the vocabulary become their `<0xNN>` byte tokens.
    /// Decoding turns `▁` back into spaces and byte tokens into their bytes.
    ///
    /// - Parameters: as ``init(ggufModel:splitPatterns:controlTokens:userDefinedTokens:bos:eos:addBOS:addEOS:extraStopTokens:chatTemplate:kind:path:)``;
    ///   `model`'s byte-fallback and newline-run options are set here.
    package convenience init(
        gemma4Model model: BPEModelDefinition, controlTokens: [Int32], userDefinedTokens: [Int32],
        bos: Int32?, eos: Int32?, addBOS: Bool, addEOS: Bool, extraStopTokens: [Int32], chatTemplate: ChatTemplate?,
        path: String? = nil
    ) throws {
        var model = model
        model.byteFallback = true
        model.wholeNewlineRuns = true
        let added = Self.addedTokens(model, control: controlTokens, userDefined: userDefinedTokens)
        var stops = Set(extraStopTokens)
        if let eos { stops.insert(eos) }
        let split = PreTokenizerDefinition.split(pattern: .regex("[^\\n]+|[\\n]+"), behavior: .isolated, invert: false)
        let decoder = DecoderDefinition.sequence([.replace(pattern: .string("\u{2581}"), content: " "), .byteFallback, .fuse])
        try self.init(
            Parts(
                model: try BPEModel(model, path: path),
                normalizer: try Normalizer(.replace(pattern: .string(" "), content: "\u{2581}"), path: path),
                preTokenizer: try PreTokenizer(split, path: path), decoder: try TokenDecoder(decoder, path: path),
                added: added, prefix: addBOS ? bos.map { [$0] } ?? [] : [],
                suffix: addEOS ? eos.map { [$0] } ?? [] : [], bosID: bos, eosIDs: stops, chatTemplate: chatTemplate,
                kind: "bpe, byte fallback (gguf gemma4)", definition: nil, controlTokensNeedParseSpecial: true,
                addedTokensDecodeRaw: true),
            path: path)
    }

    private struct Parts {
        var model: BPEModel
        var normalizer: Normalizer?
        var preTokenizer: PreTokenizer
        var decoder: TokenDecoder
        /// Added tokens, each with "only matched when parsing special tokens".
        var added: [(AddedTokenDefinition, Bool)]
        var prefix: [Int32]
        var suffix: [Int32]
        var bosID: Int32?
        var eosIDs: Set<Int32>
        var chatTemplate: ChatTemplate?
        var kind: String
        var definition: TokenizerDefinition?
        var controlTokensNeedParseSpecial: Bool
        /// llama.cpp writes added tokens as they are; tokenizers runs them through the decoder.
        var addedTokensDecodeRaw: Bool
    }

    private init(_ parts: Parts, path: String?) throws {
        model = parts.model
        normalizer = parts.normalizer
        preTokenizer = parts.preTokenizer
        decoder = parts.decoder
        definition = parts.definition
        kind = parts.kind
        chatTemplate = parts.chatTemplate
        controlTokensNeedParseSpecial = parts.controlTokensNeedParseSpecial
        prefixIDs = parts.prefix
        suffixIDs = parts.suffix
        bosID = parts.bosID
        addsBOS = parts.bosID.map { parts.prefix.contains($0) } ?? false
        eosIDs = parts.eosIDs

        // Added tokens: raw ones match the input, `normalized` ones the normalized text.
        var raw: [AddedVocabulary.Entry] = [], normalized: [AddedVocabulary.Entry] = []
        var byContent: [String: Int32] = [:]
        var special = Set<Int32>()
        for (token, controlOnly) in parts.added where !token.content.isEmpty {
            byContent[token.content] = token.id
            if token.special { special.insert(token.id) }
            let scalars = Array(token.content.unicodeScalars)
            if token.normalized {
                let normalizedScalars = parts.normalizer?.normalize(scalars) ?? scalars
                normalized.append(.init(scalars: normalizedScalars, definition: token, onlyWhenParsingSpecial: controlOnly))
            } else {
                raw.append(.init(scalars: scalars, definition: token, onlyWhenParsingSpecial: controlOnly))
            }
        }
        rawAdded = AddedVocabulary(raw)
        normalizedAdded = AddedVocabulary(normalized)
        addedByContent = byContent
        specialIDs = special

        for id in parts.prefix + parts.suffix where id < 0 || Int(id) >= TokenTable.maxID {
            throw TokenizerError(.invalidModel, "post-processor token id \(id) is out of range", path: path)
        }
        let bound = max(
            parts.model.definition.vocabularyBound, parts.added.map { Int($0.0.id) + 1 }.max() ?? 0,
            (parts.prefix + parts.suffix).map { Int($0) + 1 }.max() ?? 0)
        vocabularySize = bound

        // Decode every token once: added tokens by their content, the rest from the vocabulary.
        var contentByID: [Int32: [UInt8]] = [:]
        for (token, _) in parts.added { contentByID[token.id] = Array(token.content.utf8) }
        var arena: [UInt8] = []
        arena.reserveCapacity(bound * 4)
        var starts = [Int32](repeating: 0, count: bound + 1)
        var present = [Bool](repeating: false, count: bound)
        for id in 0..<bound {
            starts[id] = Int32(arena.count)
            if let content = contentByID[Int32(id)] {
                arena.append(contentsOf: parts.addedTokensDecodeRaw ? content : parts.decoder.decode(content[...]))
                present[id] = true
            } else if let token = parts.model.definition.vocabulary.bytes(of: Int32(id)) {
                arena.append(contentsOf: parts.decoder.decode(token))
                present[id] = true
            }
        }
        starts[bound] = Int32(arena.count)
        tokenBytes = arena
        tokenStarts = starts
        hasBytes = present
    }

    // MARK: - Tokenizer

    /// Encodes text as tokenizers does; GGUF vocabularies match control tokens written in the
    /// text only when `addSpecialTokens` is false (chat templates), like `VocabularyTokenizer`.
    package func encode(_ text: String, addSpecialTokens: Bool) throws -> [Int32] {
        try encode(text, addSpecialTokens: addSpecialTokens, parseSpecial: !addSpecialTokens)
    }

    /// Encodes with explicit control over matching control tokens written in the text. Only GGUF
    /// vocabularies distinguish: tokenizer.json tokenizers always match their special tokens, as
    /// tokenizers does.
    package func encode(_ text: String, addSpecialTokens: Bool, parseSpecial: Bool) throws -> [Int32] {
        let parse = controlTokensNeedParseSpecial ? parseSpecial : true
        var ids: [Int32] = []
        if addSpecialTokens { ids += prefixIDs }
        let scalars = Array(text.unicodeScalars)
        for segment in rawAdded.split(scalars, parseSpecial: parse) {
            switch segment {
            case .token(let id):
                ids.append(id)
            case .text(let range):
                var piece = Array(scalars[range])
                if let normalizer { piece = normalizer.normalize(piece) }
                let atStart = range.lowerBound == 0
                for inner in normalizedAdded.split(piece, parseSpecial: parse) {
                    switch inner {
                    case .token(let id):
                        ids.append(id)
                    case .text(let r):
                        let input = Piece(scalars: piece[r], atStart: atStart && r.lowerBound == 0)
                        for word in preTokenizer.split(input) { model.tokenize(word.scalars, into: &ids) }
                    }
                }
            }
        }
        if addSpecialTokens { ids += suffixIDs }
        return ids
    }

    /// The bytes of a token after the decoder's per-token steps; nil for ids that are not tokens.
    package func bytes(of id: Int32) -> [UInt8]? {
        guard id >= 0, Int(id) < vocabularySize, hasBytes[Int(id)] else { return nil }
        return Array(tokenBytes[Int(tokenStarts[Int(id)])..<Int(tokenStarts[Int(id) + 1])])
    }

    /// Whether `id` is an added token marked `special` (GGUF: control or unknown).
    package func isSpecial(_ id: Int32) -> Bool { specialIDs.contains(id) }

    /// The id of an added token's content or of a vocabulary entry (as written in the vocabulary).
    package func id(of token: String) -> Int32? {
        addedByContent[token] ?? model.definition.id(of: token)
    }

    /// The token as written in the vocabulary (byte-level characters for GPT-2-style models).
    package func token(_ id: Int32) -> String? {
        if let (content, _) = addedByContent.first(where: { $0.value == id }) { return content }
        return model.definition.token(id)
    }
}
