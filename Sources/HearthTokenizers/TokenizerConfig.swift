import Foundation

/// A token added on top of the base vocabulary (`added_tokens_decoder` in
/// `tokenizer_config.json`), matched in the text before the base model runs.
package struct AddedToken: Sendable, Equatable {
    /// Token id.
    package var id: Int32
    /// The literal text.
    package var content: String
    /// Control tokens (`special`) are skipped when decoding for display.
    package var special: Bool
    /// Strip whitespace on the left of the token when splitting.
    package var lstrip: Bool
    /// Strip whitespace on the right of the token when splitting.
    package var rstrip: Bool

    package init(id: Int32, content: String, special: Bool, lstrip: Bool = false, rstrip: Bool = false) {
        self.id = id
        self.content = content
        self.special = special
        self.lstrip = lstrip
        self.rstrip = rstrip
    }
}

/// The parts of `tokenizer_config.json` (plus `added_tokens.json`) that change tokenization.
package struct TokenizerConfig: Sendable {
    package var addBOSToken: Bool?
    package var addEOSToken: Bool?
    /// HF's Llama `legacy` flag: whether text after an added token gets a dummy-prefix space.
    package var legacy: Bool?
    package var addPrefixSpace: Bool?
    package var bosToken: String?
    package var eosToken: String?
    package var unkToken: String?
    package var padToken: String?
    /// The Jinja chat template source, if any (the `default` one when several are named);
    /// `chat_template.jinja` beside the config takes precedence, as in transformers.
    package var chatTemplate: String?
    /// Every named chat template (`chat_template` as a list of `{"name", "template"}`, e.g.
    /// `default`, `tool_use`, `rag`), by name; empty for a single unnamed template.
    package var namedChatTemplates: [String: String] = [:]
    /// Where ``chatTemplate`` came from: `chat_template.jinja` or `tokenizer_config.json`.
    package var chatTemplateOrigin = "tokenizer_config.json"
    package var modelMaxLength: Int?
    package var addedTokens: [AddedToken] = []

    package init() {}

    /// Reads `tokenizer_config.json` and `added_tokens.json` from a checkpoint directory.
    /// Missing files give an empty configuration; malformed ones throw.
    package static func load(directory: URL) throws -> TokenizerConfig {
        try parse(files: TokenizerFiles(directory: directory))
    }

    /// Parses the configuration files of `files` (with `JSONDecoder`, which keeps `true` and
    /// `1` apart; `JSONSerialization`'s NSNumbers do not on Linux). Values of the wrong type
    /// in fields Hearth only reads as hints are ignored; malformed files and added tokens throw.
    package static func parse(files: TokenizerFiles) throws -> TokenizerConfig {
        var config = TokenizerConfig()
        let configPath = files.origin + "/tokenizer_config.json"
        if let file = try decode(ConfigFile.self, files.config, path: configPath) {
            config.addBOSToken = file.addBOSToken
            config.addEOSToken = file.addEOSToken
            config.legacy = file.legacy
            config.addPrefixSpace = file.addPrefixSpace
            config.bosToken = file.bosToken
            config.eosToken = file.eosToken
            config.unkToken = file.unkToken
            config.padToken = file.padToken
            config.modelMaxLength = file.modelMaxLength
            config.chatTemplate = file.chatTemplate
            config.namedChatTemplates = file.namedChatTemplates
            for (key, entry) in file.addedTokensDecoder ?? [:] {
                guard let id = Int32(key), id >= 0, let content = entry.content, !content.isEmpty else {
                    throw TokenizerError(
                        .invalidConfig, "added_tokens_decoder entry '\(key)' needs an integer id and a content",
                        path: configPath)
                }
                config.addedTokens.append(
                    AddedToken(
                        id: id, content: content, special: entry.special ?? true, lstrip: entry.lstrip ?? false,
                        rstrip: entry.rstrip ?? false))
            }
        }
        // Older checkpoints list added tokens only in added_tokens.json.
        let addedPath = files.origin + "/added_tokens.json"
        if let object = try decode([String: Lenient<Int32>].self, files.addedTokens, path: addedPath) {
            for (content, value) in object {
                guard let id = value.value, id >= 0, !content.isEmpty else {
                    throw TokenizerError(.invalidConfig, "token '\(content)' has no integer id", path: addedPath)
                }
                if !config.addedTokens.contains(where: { $0.id == id }) {
                    config.addedTokens.append(AddedToken(id: id, content: content, special: true))
                }
            }
        }
        config.addedTokens.sort { $0.id < $1.id }
        // transformers reads `chat_template.jinja` in preference to the config's template.
        if let jinja = files.chatTemplateJinja {
            config.chatTemplate = String(decoding: jinja, as: UTF8.self)
            config.chatTemplateOrigin = "chat_template.jinja"
        }
        return config
    }

    /// The checkpoint's own chat template (``chatTemplate``), compiled, with the special tokens
    /// this configuration names; nil when it has none.
    package var ownChatTemplate: ChatTemplate? {
        guard let chatTemplate else { return nil }
        var special: [String: String] = [:]
        special["bos_token"] = bosToken
        special["eos_token"] = eosToken
        special["unk_token"] = unkToken
        special["pad_token"] = padToken
        return ChatTemplate(
            ownTemplate: chatTemplate, origin: chatTemplateOrigin, specialTokens: special,
            variants: namedChatTemplates.filter { $0.key != "default" })
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ data: Data?, path: String) throws -> T? {
        guard let data else { return nil }
        do { return try JSONDecoder().decode(T.self, from: data) } catch {
            throw TokenizerError(.invalidConfig, "not a JSON object of the expected shape (\(error))", path: path)
        }
    }

    /// `tokenizer_config.json` as far as Hearth reads it.
    private struct ConfigFile: Decodable {
        var addBOSToken, addEOSToken, legacy, addPrefixSpace: Bool?
        var bosToken, eosToken, unkToken, padToken: String?
        var modelMaxLength: Int?
        var chatTemplate: String?
        var namedChatTemplates: [String: String] = [:]
        var addedTokensDecoder: [String: AddedTokenEntry]?

        enum CodingKeys: String, CodingKey {
            case addBOSToken = "add_bos_token", addEOSToken = "add_eos_token", legacy
            case addPrefixSpace = "add_prefix_space"
            case bosToken = "bos_token", eosToken = "eos_token", unkToken = "unk_token", padToken = "pad_token"
            case modelMaxLength = "model_max_length", chatTemplate = "chat_template"
            case addedTokensDecoder = "added_tokens_decoder"
        }

        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            func flag(_ key: CodingKeys) -> Bool? { (try? c.decodeIfPresent(Lenient<Bool>.self, forKey: key))?.value }
            func token(_ key: CodingKeys) -> String? { (try? c.decodeIfPresent(TokenText.self, forKey: key))?.text }
            addBOSToken = flag(.addBOSToken)
            addEOSToken = flag(.addEOSToken)
            legacy = flag(.legacy)
            addPrefixSpace = flag(.addPrefixSpace)
            bosToken = token(.bosToken)
            eosToken = token(.eosToken)
            unkToken = token(.unkToken)
            padToken = token(.padToken)
            // Often 1e30 ("no limit"): only lengths below 1e15 count.
            let length = (try? c.decodeIfPresent(Lenient<Double>.self, forKey: .modelMaxLength))?.value
            modelMaxLength = length.flatMap { $0 >= 0 && $0 < 1e15 ? Int($0) : nil }
            if let template = (try? c.decodeIfPresent(Lenient<String>.self, forKey: .chatTemplate))?.value {
                chatTemplate = template
            } else if let named = try? c.decodeIfPresent([NamedTemplate].self, forKey: .chatTemplate) {
                chatTemplate = (named.first { $0.name == "default" } ?? named.first)?.template
                for entry in named {
                    if let name = entry.name, let template = entry.template { namedChatTemplates[name] = template }
                }
            }
            addedTokensDecoder = try c.decodeIfPresent([String: AddedTokenEntry].self, forKey: .addedTokensDecoder)
        }
    }

    private struct AddedTokenEntry: Decodable {
        var content: String?
        var special, lstrip, rstrip: Bool?

        enum CodingKeys: String, CodingKey { case content, special, lstrip, rstrip }

        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            content = (try? c.decodeIfPresent(Lenient<String>.self, forKey: .content))?.value
            special = (try? c.decodeIfPresent(Lenient<Bool>.self, forKey: .special))?.value
            lstrip = (try? c.decodeIfPresent(Lenient<Bool>.self, forKey: .lstrip))?.value
            rstrip = (try? c.decodeIfPresent(Lenient<Bool>.self, forKey: .rstrip))?.value
        }
    }

    private struct NamedTemplate: Decodable {
        var name: String?
        var template: String?
    }

    /// Special tokens appear as a plain string or as `{"content": …}`.
    private struct TokenText: Decodable {
        var text: String?

        private enum CodingKeys: String, CodingKey { case content }

        init(from decoder: Decoder) throws {
            if let s = try? decoder.singleValueContainer().decode(String.self) {
                text = s
            } else {
                text = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .content)
            }
        }
    }

    /// A value of the expected type, or nil when the file has another type there.
    private struct Lenient<T: Decodable>: Decodable {
        var value: T?

        init(from decoder: Decoder) throws { value = try? decoder.singleValueContainer().decode(T.self) }
    }
}

/// The files a Hugging Face tokenizer is made of, read from a checkpoint directory or
/// from a file that embeds them (HQF).
package struct TokenizerFiles: Sendable {
    /// `tokenizer.model` (SentencePiece), if any.
    package var sentencePieceModel: Data?
    /// `tokenizer.json` (Hugging Face tokenizers), if any.
    package var tokenizerJSON: Data?
    /// `tokenizer_config.json`, if any.
    package var config: Data?
    /// `added_tokens.json`, if any.
    package var addedTokens: Data?
    /// `chat_template.jinja` (the chat template as a file of its own, transformers ≥ 4.50), if any.
    package var chatTemplateJinja: Data?
    /// Where they came from, for error messages.
    package var origin: String

    /// The file names, as stored in checkpoints.
    package static let names = ["tokenizer.model", "tokenizer.json", "tokenizer_config.json", "added_tokens.json"]

    package init(
        sentencePieceModel: Data?, tokenizerJSON: Data? = nil, config: Data?, addedTokens: Data?, chatTemplateJinja: Data? = nil,
        origin: String
    ) {
        self.chatTemplateJinja = chatTemplateJinja
        self.sentencePieceModel = sentencePieceModel
        self.tokenizerJSON = tokenizerJSON
        self.config = config
        self.addedTokens = addedTokens
        self.origin = origin
    }

    /// Reads whichever of the files exist in `directory`.
    package init(directory: URL) {
        func read(_ name: String) -> Data? {
            FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
        }
        self.init(
            sentencePieceModel: read("tokenizer.model"), tokenizerJSON: read("tokenizer.json"),
            config: read("tokenizer_config.json"), addedTokens: read("added_tokens.json"),
            chatTemplateJinja: read("chat_template.jinja"), origin: directory.path)
    }

    /// The files by their checkpoint names (for embedding them elsewhere).
    package var byName: [String: Data] {
        var files: [String: Data] = [:]
        files["tokenizer.model"] = sentencePieceModel
        files["tokenizer.json"] = tokenizerJSON
        files["tokenizer_config.json"] = config
        files["added_tokens.json"] = addedTokens
        files["chat_template.jinja"] = chatTemplateJinja
        return files
    }
}

/// Which tokenizer file to use when a checkpoint has several.
public enum TokenizerSource: String, Sendable, CaseIterable {
    /// `tokenizer.model` (SentencePiece) when present, else `tokenizer.json`.
    case automatic
    /// `tokenizer.model` through libsentencepiece.
    case sentencePiece
    /// `tokenizer.json` through `BPETokenizer`.
    case tokenizerJSON
}

/// Builds the tokenizer of a checkpoint from its files.
package enum TokenizerLoader {
    /// Picks SentencePiece for `tokenizer.model`, else `BPETokenizer` for `tokenizer.json`
    /// (or what `source` forces); throws `fileNotFound` when the chosen file is missing.
    package static func load(files: TokenizerFiles, source: TokenizerSource = .automatic) throws -> any Tokenizer {
        switch source {
        case .sentencePiece:
            return try SentencePieceTokenizer(files: files)
        case .tokenizerJSON:
            return try BPETokenizer(files: files)
        case .automatic:
            if files.sentencePieceModel != nil { return try SentencePieceTokenizer(files: files) }
            if files.tokenizerJSON != nil { return try BPETokenizer(files: files) }
            throw TokenizerError(
                .fileNotFound, "no tokenizer.model or tokenizer.json", path: files.origin,
                remedy: "Download the checkpoint's tokenizer files next to config.json")
        }
    }
}
