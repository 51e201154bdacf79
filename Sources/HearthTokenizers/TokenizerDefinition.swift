/// `tokenizer.json` (Hugging Face `tokenizers`), decoded into typed parts. Behaviour is chosen
/// from what the file says; a component Hearth does not implement is a
/// `TokenizerError.unsupported` naming its type and key, never a crash.
///
/// The file is read with `JSONDocument` rather than `JSONDecoder`: it is several times faster on
/// a 200k-token vocabulary and compares tokens byte for byte.
package struct TokenizerDefinition: Sendable {
    /// Tokens matched in the text before the model runs (`added_tokens`).
    package var addedTokens: [AddedTokenDefinition]
    /// Rewrites the text between added tokens (`normalizer`), if any.
    package var normalizer: NormalizerDefinition?
    /// Splits text into words (`pre_tokenizer`), if any.
    package var preTokenizer: PreTokenizerDefinition?
    /// The BPE model: vocabulary, merges and options.
    package var model: BPEModelDefinition
    /// Special tokens around a sequence (`post_processor`), if any.
    package var postProcessor: PostProcessorDefinition?
    /// Ids back to text (`decoder`), if any.
    package var decoder: DecoderDefinition?

    /// Assembles a definition from its parts.
    package init(
        addedTokens: [AddedTokenDefinition], normalizer: NormalizerDefinition?, preTokenizer: PreTokenizerDefinition?,
        model: BPEModelDefinition, postProcessor: PostProcessorDefinition?, decoder: DecoderDefinition?
    ) {
        self.addedTokens = addedTokens
        self.normalizer = normalizer
        self.preTokenizer = preTokenizer
        self.model = model
        self.postProcessor = postProcessor
        self.decoder = decoder
    }

    /// Parses the bytes of a tokenizer.json; `path` is used in error messages. Throws
    /// `TokenizerError` (`invalidConfig` for malformed JSON or values, `invalidModel` for an
    /// inconsistent vocabulary, `unsupported` for a component Hearth does not implement).
    package init(json: [UInt8], path: String? = nil) throws {
        let root = try JSONDocument(bytes: json, path: path).root
        guard root.kind == .object else { throw root.typeError("a JSON object") }
        addedTokens = try root.optional("added_tokens").map { list in
            try list.array().map { try AddedTokenDefinition(json: $0) }
        } ?? []
        normalizer = try root.optional("normalizer").map { try NormalizerDefinition(json: $0) }
        preTokenizer = try root.optional("pre_tokenizer").map { try PreTokenizerDefinition(json: $0) }
        model = try BPEModelDefinition(json: try root.required("model"))
        postProcessor = try root.optional("post_processor").map { try PostProcessorDefinition(json: $0) }
        decoder = try root.optional("decoder").map { try DecoderDefinition(json: $0) }
    }
}

/// One entry of `added_tokens`.
package struct AddedTokenDefinition: Sendable, Equatable {
    /// The token's id.
    package var id: Int32
    /// The literal text matched in the input.
    package var content: String
    /// Only match when not inside a word (no `\w` character right before or after).
    package var singleWord: Bool
    /// Absorb the whitespace on the left of a match.
    package var lstrip: Bool
    /// Absorb the whitespace on the right of a match.
    package var rstrip: Bool
    /// Match against the normalized text (true) or the raw text (false).
    package var normalized: Bool
    /// Special tokens are skipped when decoding for display.
    package var special: Bool

    /// An added token; by default a special token matched in the raw text.
    package init(
        id: Int32, content: String, singleWord: Bool = false, lstrip: Bool = false, rstrip: Bool = false,
        normalized: Bool = false, special: Bool = true
    ) {
        self.id = id
        self.content = content
        self.singleWord = singleWord
        self.lstrip = lstrip
        self.rstrip = rstrip
        self.normalized = normalized
        self.special = special
    }

    init(json: JSONValue) throws {
        let id = try json.required("id").int()
        guard id >= 0, id < TokenTable.maxID else { throw json.error("added token id \(id) is out of range") }
        self.id = Int32(id)
        content = try json.required("content").string()
        singleWord = try json.optional("single_word")?.bool() ?? false
        lstrip = try json.optional("lstrip")?.bool() ?? false
        rstrip = try json.optional("rstrip")?.bool() ?? false
        special = try json.optional("special")?.bool() ?? false
        // tokenizers' default: special tokens are not normalized, others are.
        normalized = try json.optional("normalized")?.bool() ?? !special
    }
}

/// A literal string or a regex, as `Split` and `Replace` write them (`{"String": …}` / `{"Regex": …}`).
package enum SplitPattern: Sendable, Equatable {
    /// A literal.
    case string(String)
    /// A regex source (Oniguruma syntax, as tokenizers uses).
    case regex(String)

    init(json: JSONValue) throws {
        if let s = json.optional("String") {
            self = .string(try s.string())
        } else if let r = json.optional("Regex") {
            self = .regex(try r.string())
        } else {
            throw json.error("a pattern needs a \"String\" or a \"Regex\"")
        }
    }
}

/// How `Split` treats the matched delimiters.
package enum SplitBehavior: String, Sendable, Equatable {
    /// Delimiters are dropped.
    case removed = "Removed"
    /// Every delimiter is a piece of its own.
    case isolated = "Isolated"
    /// A delimiter joins the piece before it.
    case mergedWithPrevious = "MergedWithPrevious"
    /// A delimiter joins the piece after it.
    case mergedWithNext = "MergedWithNext"
    /// Consecutive delimiters form one piece.
    case contiguous = "Contiguous"

    init(json: JSONValue) throws {
        let name = try json.string()
        guard let behavior = SplitBehavior(rawValue: name) else {
            throw TokenizerError(
                .unsupported, "unknown split behavior '\(name)'", path: json.document.path, key: json.keyPath)
        }
        self = behavior
    }
}

/// Where `Metaspace` puts its replacement character.
package enum PrependScheme: String, Sendable, Equatable {
    /// Before every piece that does not start with one.
    case always
    /// Only before the piece at the very start of the input.
    case first
    case never
}

/// The `normalizer` section.
package indirect enum NormalizerDefinition: Sendable, Equatable {
    /// Unicode normalization forms.
    case nfc, nfd, nfkc, nfkd
    /// Full Unicode lowercase mapping.
    case lowercase
    /// Prepends the text to every non-empty piece.
    case prepend(String)
    /// Replaces every match of `pattern` with `content`.
    case replace(pattern: SplitPattern, content: String)
    /// Removes leading and/or trailing whitespace.
    case strip(left: Bool, right: Bool)
    /// The steps in order.
    case sequence([NormalizerDefinition])

    init(json: JSONValue) throws {
        let type = try json.required("type").string()
        switch type {
        case "NFC": self = .nfc
        case "NFD": self = .nfd
        case "NFKC": self = .nfkc
        case "NFKD": self = .nfkd
        case "Lowercase": self = .lowercase
        case "Prepend": self = .prepend(try json.required("prepend").string())
        case "Replace":
            self = .replace(
                pattern: try SplitPattern(json: json.required("pattern")), content: try json.required("content").string())
        case "Strip":
            self = .strip(
                left: try json.optional("strip_left")?.bool() ?? true, right: try json.optional("strip_right")?.bool() ?? true)
        case "Sequence":
            self = .sequence(try json.required("normalizers").array().map { try NormalizerDefinition(json: $0) })
        default:
            throw unsupported(json, kind: "normalizer", type: type)
        }
    }
}

/// The `pre_tokenizer` section.
package indirect enum PreTokenizerDefinition: Sendable, Equatable {
    /// Splits on a pattern; with `invert` the pattern matches the pieces instead of the delimiters.
    case split(pattern: SplitPattern, behavior: SplitBehavior, invert: Bool)
    /// GPT-2's byte-level mapping, optionally with its regex split first.
    case byteLevel(addPrefixSpace: Bool, useRegex: Bool)
    /// Spaces become `replacement` (▁); optionally splits before each replacement.
    case metaspace(replacement: Unicode.Scalar, prependScheme: PrependScheme, split: Bool)
    /// Splits digits from the rest: each alone, or in runs.
    case digits(individual: Bool)
    /// `\w+|[^\w\s]+`, whitespace removed.
    case whitespace
    /// Splits on whitespace, removing it.
    case whitespaceSplit
    /// Splits on Unicode and ASCII punctuation.
    case punctuation(SplitBehavior)
    /// The steps in order, each splitting the pieces of the previous.
    case sequence([PreTokenizerDefinition])

    init(json: JSONValue) throws {
        let type = try json.required("type").string()
        switch type {
        case "Split":
            self = .split(
                pattern: try SplitPattern(json: json.required("pattern")),
                behavior: try SplitBehavior(json: json.required("behavior")),
                invert: try json.optional("invert")?.bool() ?? false)
        case "ByteLevel":
            self = .byteLevel(
                addPrefixSpace: try json.optional("add_prefix_space")?.bool() ?? true,
                useRegex: try json.optional("use_regex")?.bool() ?? true)
        case "Metaspace":
            let replacement = try json.optional("replacement")?.string() ?? "\u{2581}"
            guard replacement.unicodeScalars.count == 1, let scalar = replacement.unicodeScalars.first else {
                throw json.error("Metaspace replacement must be one character")
            }
            var scheme = PrependScheme.always
            if let value = json.optional("prepend_scheme") {
                let name = try value.string()
                guard let parsed = PrependScheme(rawValue: name) else {
                    throw TokenizerError(
                        .unsupported, "unknown prepend_scheme '\(name)'", path: json.document.path,
                        key: value.keyPath)
                }
                scheme = parsed
            }
            // Older files: add_prefix_space false means never.
            if try json.optional("add_prefix_space")?.bool() == false { scheme = .never }
            self = .metaspace(replacement: scalar, prependScheme: scheme, split: try json.optional("split")?.bool() ?? true)
        case "Digits":
            self = .digits(individual: try json.optional("individual_digits")?.bool() ?? false)
        case "Whitespace":
            self = .whitespace
        case "WhitespaceSplit":
            self = .whitespaceSplit
        case "Punctuation":
            self = .punctuation(try json.optional("behavior").map { try SplitBehavior(json: $0) } ?? .isolated)
        case "Sequence":
            self = .sequence(try json.required("pretokenizers").array().map { try PreTokenizerDefinition(json: $0) })
        default:
            throw unsupported(json, kind: "pre-tokenizer", type: type)
        }
    }
}

/// The `post_processor` section, as far as it decides which special tokens `encode` adds around
/// a single sequence.
package enum PostProcessorDefinition: Sendable, Equatable {
    /// Ids before and after the sequence (TemplateProcessing, RobertaProcessing, BertProcessing).
    case template(prefix: [Int32], suffix: [Int32])
    /// ByteLevel (offset trimming only): adds nothing.
    case none
    indirect case sequence([PostProcessorDefinition])

    init(json: JSONValue) throws {
        let type = try json.required("type").string()
        switch type {
        case "TemplateProcessing":
            var idsByName: [String: [Int32]] = [:]
            if let specials = json.optional("special_tokens") {
                for (name, entry) in try specials.entries() {
                    idsByName[name] = try entry.required("ids").array().map { value in
                        let id = try value.int()
                        guard id >= 0, id < TokenTable.maxID else { throw value.error("token id \(id) is out of range") }
                        return Int32(id)
                    }
                }
            }
            var prefix: [Int32] = [], suffix: [Int32] = []
            var seenSequence = false
            for piece in try json.required("single").array() {
                if let special = piece.optional("SpecialToken") {
                    let name = try special.required("id").string()
                    guard let ids = idsByName[name] else {
                        throw piece.error("template token '\(name)' is not in special_tokens")
                    }
                    if seenSequence { suffix += ids } else { prefix += ids }
                } else if piece.optional("Sequence") != nil {
                    seenSequence = true
                } else {
                    throw piece.error("a template piece needs SpecialToken or Sequence")
                }
            }
            self = .template(prefix: prefix, suffix: suffix)
        case "RobertaProcessing", "BertProcessing":
            func id(_ key: String) throws -> Int32 {
                let pair = try json.required(key).array()
                guard pair.count == 2 else { throw json.error("\(key) must be [token, id]") }
                let id = try pair[1].int()
                guard id >= 0, id < TokenTable.maxID else { throw pair[1].error("token id \(id) is out of range") }
                return Int32(id)
            }
            self = .template(prefix: [try id("cls")], suffix: [try id("sep")])
        case "ByteLevel":
            self = .none
        case "Sequence":
            self = .sequence(try json.required("processors").array().map { try PostProcessorDefinition(json: $0) })
        default:
            throw unsupported(json, kind: "post-processor", type: type)
        }
    }

    /// The ids added before and after a single sequence.
    var specialTokens: (prefix: [Int32], suffix: [Int32]) {
        switch self {
        case .template(let prefix, let suffix): return (prefix, suffix)
        case .none: return ([], [])
        case .sequence(let steps):
            // Each processor wraps the result of the previous one.
            return steps.reduce(into: ([Int32](), [Int32]())) { acc, step in
                let (p, s) = step.specialTokens
                acc = (p + acc.0, acc.1 + s)
            }
        }
    }
}

/// The `decoder` section.
package indirect enum DecoderDefinition: Sendable, Equatable {
    /// GPT-2's byte-level characters back to bytes.
    case byteLevel
    /// The replacement character back to a space; the first token loses its leading one.
    case metaspace(replacement: Unicode.Scalar, prependScheme: PrependScheme)
    /// `<0xNN>` tokens become that byte.
    case byteFallback
    /// Joins the tokens (later steps see one string).
    case fuse
    /// Removes up to `start` leading and `stop` trailing `content` characters.
    case strip(content: Unicode.Scalar, start: Int, stop: Int)
    /// Replaces every occurrence of `pattern` with `content`.
    case replace(pattern: SplitPattern, content: String)
    /// The steps in order.
    case sequence([DecoderDefinition])

    init(json: JSONValue) throws {
        let type = try json.required("type").string()
        switch type {
        case "ByteLevel": self = .byteLevel
        case "Metaspace":
            let replacement = try json.optional("replacement")?.string() ?? "\u{2581}"
            guard replacement.unicodeScalars.count == 1, let scalar = replacement.unicodeScalars.first else {
                throw json.error("Metaspace replacement must be one character")
            }
            var scheme = PrependScheme(rawValue: try json.optional("prepend_scheme")?.string() ?? "always") ?? .always
            if try json.optional("add_prefix_space")?.bool() == false { scheme = .never }
            self = .metaspace(replacement: scalar, prependScheme: scheme)
        case "ByteFallback": self = .byteFallback
        case "Fuse": self = .fuse
        case "Strip":
            let content = try json.required("content").string()
            guard content.unicodeScalars.count == 1, let scalar = content.unicodeScalars.first else {
                throw json.error("Strip content must be one character")
            }
            let start = try json.optional("start")?.int() ?? 0, stop = try json.optional("stop")?.int() ?? 0
            guard start >= 0, stop >= 0 else { throw json.error("Strip start and stop must not be negative") }
            self = .strip(content: scalar, start: start, stop: stop)
        case "Replace":
            self = .replace(
                pattern: try SplitPattern(json: json.required("pattern")), content: try json.required("content").string())
        case "Sequence":
            self = .sequence(try json.required("decoders").array().map { try DecoderDefinition(json: $0) })
        default:
            throw unsupported(json, kind: "decoder", type: type)
        }
    }
}

func unsupported(_ json: JSONValue, kind: String, type: String) -> TokenizerError {
    TokenizerError(
        .unsupported, "\(kind) type '\(type)' is not supported", path: json.document.path,
        key: json.keyPath.isEmpty ? "type" : json.keyPath + ".type",
        remedy: "Hearth implements BPE tokenizers; please report the file")
}
