/// A hub model repository id, `org/name` (or a legacy single `name`), checked so it can be used
/// in URLs and as the cache folder `models--org--name`.
public struct RepoID: Sendable, Hashable, CustomStringConvertible, Comparable {
    /// `org/name`.
    public let id: String

    /// Accepts the hub's rules: one or two parts of letters, digits, `-`, `_` and `.`, no `--`
    /// or `..`, not starting or ending with `-` or `.`, at most 96 characters each.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return nil }
        for part in parts {
            guard !part.isEmpty, part.count <= 96, !part.contains("--"), !part.contains(".."),
                let first = part.first, let last = part.last,
                first != "-", first != ".", last != "-", last != ".",
                part.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
            else { return nil }
        }
        id = text
    }

    /// The cache folder name, as huggingface_hub's `repo_folder_name` makes it.
    public var folderName: String { "models--" + id.replacingOccurrences(of: "/", with: "--") }

    /// The repository for a cache folder name, or nil if it is not a model folder.
    public init?(folderName: String) {
        guard folderName.hasPrefix("models--") else { return nil }
        self.init(String(folderName.dropFirst("models--".count)).replacingOccurrences(of: "--", with: "/"))
    }

    public var description: String { id }
    public static func < (a: RepoID, b: RepoID) -> Bool { a.id < b.id }
}

/// What a user names: `org/repo` (a safetensors checkpoint or the repository's only GGUF),
/// `org/repo:QUANT` (the GGUF file whose name carries the quant), optionally prefixed `hf.co/`
/// or `huggingface.co/` as Ollama and llama.cpp write them; or a short name from
/// `models/registry.json` (see ``ModelRegistry``).
public struct ModelReference: Sendable, Hashable, CustomStringConvertible {
    public var repo: RepoID
    /// The quant tag (`Q4_K_M`), matched case-insensitively against GGUF file names.
    public var quant: String?
    /// An exact file in the repository (`--file`, or a registry entry's `file`).
    public var file: String?
    /// Branch, tag or commit; `main` by default.
    public var revision: String

    public init(repo: RepoID, quant: String? = nil, file: String? = nil, revision: String = "main") {
        self.repo = repo
        self.quant = quant
        self.file = file
        self.revision = revision
    }

    /// Parses `org/repo[:QUANT]`; nil if the text is not of that shape (a local path, say).
    public init?(parsing text: String) {
        var text = Substring(text)
        for prefix in ["https://huggingface.co/", "huggingface.co/", "hf.co/"] where text.hasPrefix(prefix) {
            text = text.dropFirst(prefix.count)
        }
        var quant: String?
        if let colon = text.lastIndex(of: ":") {
            let tag = text[text.index(after: colon)...]
            guard !tag.isEmpty, tag.count <= 64, tag.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") })
            else { return nil }
            quant = String(tag)
            text = text[..<colon]
        }
        // A name must have an org: a bare word is more likely a file or a short name.
        guard text.contains("/"), let repo = RepoID(String(text)) else { return nil }
        self.init(repo: repo, quant: quant)
    }

    /// `org/repo:QUANT` (or `org/repo`, or `org/repo/file` when a file was named).
    public var description: String {
        if let file { return "\(repo.id)/\(file)" }
        return quant.map { "\(repo.id):\($0)" } ?? repo.id
    }
}

/// True for a 40-hex-digit git commit id.
func isCommitHash(_ text: String) -> Bool {
    text.utf8.count == 40 && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
}

/// True for a lowercase hex string of `length` characters (a sha256 or git blob id).
func isHex(_ text: String, length: Int) -> Bool {
    text.utf8.count == length && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
}

/// A revision name safe as a file name under `refs/` (branches may contain `/`; `..` may not)
/// and on a terminal (no control characters).
func isSafeRevision(_ text: String) -> Bool {
    !text.isEmpty && text.count <= 256 && !text.hasPrefix("/") && !text.hasSuffix("/")
        && !text.split(separator: "/", omittingEmptySubsequences: false).contains { $0.isEmpty || $0 == "." || $0 == ".." }
        && text.allSatisfy { $0.isASCII && !$0.isWhitespace && $0 != "\\" && $0 != "\0" }
        && !containsControlCharacters(text)
}

/// A repository-relative path safe to create under a snapshot and to print: no absolute
/// path, no `..`, no empty or `.` component, no NUL or backslash, no control characters.
func isSafeRepoPath(_ path: String) -> Bool {
    !path.isEmpty && path.utf8.count <= 1024 && !path.hasPrefix("/")
        && !path.split(separator: "/", omittingEmptySubsequences: false).contains { $0.isEmpty || $0 == "." || $0 == ".." }
        && !path.contains("\0") && !path.contains("\\") && !containsControlCharacters(path)
}

/// Whether a Unicode scalar would act on a terminal or reorder what is shown instead of
/// being shown: the C0 and C1 controls and DEL (a newline, an escape sequence, `CSI`), the
/// line and paragraph separators, and the bidirectional formatting controls (which can make
/// a name read as another).
func isControlScalar(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F: return true
    case 0x2028, 0x2029: return true
    case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x061C: return true
    default: return false
    }
}

/// Whether `text` holds a character `isControlScalar(_:)` refuses.
public func containsControlCharacters(_ text: String) -> Bool {
    text.unicodeScalars.contains(where: isControlScalar)
}

/// `text` with each control character (`isControlScalar(_:)`) written as `\u{XX}`, for
/// messages and terminal output that must show a name they refuse without acting on it.
public func printableName(_ text: String) -> String {
    guard containsControlCharacters(text) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
        if isControlScalar(scalar) {
            out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}
