import Foundation

/// A token added on top of the base vocabulary (`added_tokens_decoder` in
/// `tokenizer_config.json`), matched in the text before the base model runs.
public struct AddedToken: Sendable, Equatable {
    /// Token id.
    public var id: Int32
    /// The literal text.
    public var content: String
    /// Control tokens (`special`) are skipped when decoding for display.
    public var special: Bool
    /// Strip whitespace on the left of the token when splitting.
    public var lstrip: Bool
    /// Strip whitespace on the right of the token when splitting.
    public var rstrip: Bool

    public init(id: Int32, content: String, special: Bool, lstrip: Bool = false, rstrip: Bool = false) {
        self.id = id
        self.content = content
        self.special = special
        self.lstrip = lstrip
        self.rstrip = rstrip
    }
}

/// The parts of `tokenizer_config.json` (plus `added_tokens.json`) that change tokenization.
public struct TokenizerConfig: Sendable {
    public var addBOSToken: Bool?
    public var addEOSToken: Bool?
    /// HF's Llama `legacy` flag: whether text after an added token gets a dummy-prefix space.
    public var legacy: Bool?
    public var addPrefixSpace: Bool?
    public var bosToken: String?
    public var eosToken: String?
    public var unkToken: String?
    public var padToken: String?
    /// The Jinja chat template source, if any (the `default` one when several are named).
    public var chatTemplate: String?
    public var modelMaxLength: Int?
    public var addedTokens: [AddedToken] = []

    public init() {}

    /// Reads `tokenizer_config.json` and `added_tokens.json` from a checkpoint directory.
    /// Missing files give an empty configuration; malformed ones throw.
    public static func load(directory: URL) throws -> TokenizerConfig {
        try parse(files: TokenizerFiles(directory: directory))
    }

    /// Parses the configuration files of `files`.
    public static func parse(files: TokenizerFiles) throws -> TokenizerConfig {
        var config = TokenizerConfig()
        let configPath = files.origin + "/tokenizer_config.json"
        if let object = try readObject(files.config, path: configPath) {
            config.addBOSToken = object["add_bos_token"] as? Bool
            config.addEOSToken = object["add_eos_token"] as? Bool
            config.legacy = object["legacy"] as? Bool
            config.addPrefixSpace = object["add_prefix_space"] as? Bool
            config.bosToken = tokenText(object["bos_token"])
            config.eosToken = tokenText(object["eos_token"])
            config.unkToken = tokenText(object["unk_token"])
            config.padToken = tokenText(object["pad_token"])
            config.modelMaxLength = (object["model_max_length"] as? NSNumber).flatMap { $0.doubleValue < 1e15 ? $0.intValue : nil }
            if let template = object["chat_template"] as? String {
                config.chatTemplate = template
            } else if let named = object["chat_template"] as? [[String: Any]] {
                let chosen = named.first { ($0["name"] as? String) == "default" } ?? named.first
                config.chatTemplate = chosen?["template"] as? String
            }
            if let decoder = object["added_tokens_decoder"] as? [String: Any] {
                for (key, value) in decoder {
                    guard let id = Int32(key), id >= 0, let entry = value as? [String: Any],
                        let content = entry["content"] as? String, !content.isEmpty
                    else {
                        throw TokenizerError(
                            .invalidConfig, "added_tokens_decoder entry '\(key)' needs an integer id and a content",
                            path: configPath)
                    }
                    config.addedTokens.append(
                        AddedToken(
                            id: id, content: content, special: entry["special"] as? Bool ?? true,
                            lstrip: entry["lstrip"] as? Bool ?? false, rstrip: entry["rstrip"] as? Bool ?? false))
                }
            }
        }
        // Older checkpoints list added tokens only in added_tokens.json.
        let addedPath = files.origin + "/added_tokens.json"
        if let object = try readObject(files.addedTokens, path: addedPath) {
            for (content, value) in object {
                guard let id = (value as? NSNumber)?.int32Value, id >= 0, !content.isEmpty else {
                    throw TokenizerError(.invalidConfig, "token '\(content)' has no integer id", path: addedPath)
                }
                if !config.addedTokens.contains(where: { $0.id == id }) {
                    config.addedTokens.append(AddedToken(id: id, content: content, special: true))
                }
            }
        }
        config.addedTokens.sort { $0.id < $1.id }
        return config
    }

    private static func readObject(_ data: Data?, path: String) throws -> [String: Any]? {
        guard let data else { return nil }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw TokenizerError(.invalidConfig, "not a JSON object", path: path)
        }
        return object
    }

    /// Special tokens appear as a plain string or as `{"content": …}`.
    private static func tokenText(_ value: Any?) -> String? {
        if let s = value as? String { return s }
        if let o = value as? [String: Any] { return o["content"] as? String }
        return nil
    }
}

/// The files a Hugging Face tokenizer is made of, read from a checkpoint directory or
/// from a file that embeds them (HQF).
public struct TokenizerFiles: Sendable {
    /// `tokenizer.model` (SentencePiece), if any.
    public var sentencePieceModel: Data?
    /// `tokenizer.json` (Hugging Face tokenizers), if any.
    public var tokenizerJSON: Data?
    /// `tokenizer_config.json`, if any.
    public var config: Data?
    /// `added_tokens.json`, if any.
    public var addedTokens: Data?
    /// Where they came from, for error messages.
    public var origin: String

    /// The file names, as stored in checkpoints.
    public static let names = ["tokenizer.model", "tokenizer.json", "tokenizer_config.json", "added_tokens.json"]

    public init(sentencePieceModel: Data?, tokenizerJSON: Data? = nil, config: Data?, addedTokens: Data?, origin: String) {
        self.sentencePieceModel = sentencePieceModel
        self.tokenizerJSON = tokenizerJSON
        self.config = config
        self.addedTokens = addedTokens
        self.origin = origin
    }

    /// Reads whichever of the files exist in `directory`.
    public init(directory: URL) {
        func read(_ name: String) -> Data? {
            FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
        }
        self.init(
            sentencePieceModel: read("tokenizer.model"), tokenizerJSON: read("tokenizer.json"),
            config: read("tokenizer_config.json"), addedTokens: read("added_tokens.json"), origin: directory.path)
    }

    /// The files by their checkpoint names (for embedding them elsewhere).
    public var byName: [String: Data] {
        var files: [String: Data] = [:]
        files["tokenizer.model"] = sentencePieceModel
        files["tokenizer.json"] = tokenizerJSON
        files["tokenizer_config.json"] = config
        files["added_tokens.json"] = addedTokens
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
public enum TokenizerLoader {
    /// Picks SentencePiece for `tokenizer.model`, else `BPETokenizer` for `tokenizer.json`
    /// (or what `source` forces); throws `fileNotFound` when the chosen file is missing.
    public static func load(files: TokenizerFiles, source: TokenizerSource = .automatic) throws -> any Tokenizer {
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
