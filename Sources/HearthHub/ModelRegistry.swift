import Foundation

/// The short-name table in `models/registry.json`: names such as `phi3-mini` mapped to a hub
/// repository and file (or quant), with the file's size and sha256 where they are known.
///
/// ```json
/// {"default": "gemma-3-270m-q4_k_m",
///  "models": [{"name": "phi3-mini", "repo": "microsoft/Phi-3-mini-4k-instruct-gguf", "quant": "q4"}, …]}
/// ```
///
/// An entry without `repo` is a file installed in `models/` by other means (the default
/// model, from PyPI; its `bytes` are checked when it is used). Pinned `bytes` and `sha256` of
/// a hub entry must agree with what the hub lists, else the pull is refused, and with the
/// cached file when the model is already in the cache (``HubModels/verifyPins(_:_:)``);
/// without them the hub's own `lfs.oid` is what the download is checked against. Where the
/// registry is found: ``directory(environment:executable:)``.
public struct ModelRegistry: Sendable, Decodable {
    /// One named model.
    public struct Entry: Sendable, Decodable, Equatable {
        public let name: String
        /// A file in the `models/` folder (the default model's install).
        public let file: String?
        /// The hub repository, `org/name`.
        public let repo: String?
        /// The GGUF quant to take from the repository.
        public let quant: String?
        /// The file in the repository, when pinned (`file` names it in `models/` too).
        public let repoFile: String?
        /// Branch, tag or commit (default `main`).
        public let revision: String?
        /// Pinned size of the repository file, in bytes.
        public let bytes: Int64?
        /// Pinned sha256 of the repository file.
        public let sha256: String?

        enum CodingKeys: String, CodingKey {
            case name, file, repo, quant, revision, bytes, sha256
            case repoFile = "repo_file"
        }

        /// The hub reference this entry stands for, if it has a repository.
        public var reference: ModelReference? {
            guard let repo, let id = RepoID(repo) else { return nil }
            return ModelReference(repo: id, quant: quant, file: repoFile ?? (quant == nil ? file : nil), revision: revision ?? "main")
        }
    }

    /// The default model's name.
    public let `default`: String?
    public let models: [Entry]

    /// Reads a registry file.
    public static func load(_ url: URL) throws -> ModelRegistry {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw HubError(.fileSystem, "cannot read \(url.path)")
        }
        do { return try JSONDecoder().decode(ModelRegistry.self, from: data) } catch {
            throw HubError(.invalidReference, "\(url.path) is not a model registry: \(error)")
        }
    }

    /// The entry named `name`.
    public func entry(_ name: String) -> Entry? { models.first { $0.name == name } }

    /// The folder whose `registry.json` is the registry, by the one documented rule
    /// (docs/MODELS.md, "The registry"):
    /// 1. `HEARTH_MODELS` in `environment`, when set: that folder and nothing else;
    /// 2. otherwise the `models/` folder of the checkout the executable was built in — the
    ///    first `models/registry.json` found walking up from `executable` (its real path,
    ///    links resolved) at most six levels.
    ///
    /// The working directory is never searched: a `models/registry.json` in whatever folder
    /// the program is run from (a cloned repository, a downloads folder) cannot rename short
    /// names to other repositories or swap the default model. Nil when no registry is found.
    public static func directory(environment: [String: String], executable: URL?) -> URL? {
        if let env = environment["HEARTH_MODELS"], !env.isEmpty {
            return URL(fileURLWithPath: env)
        }
        guard let executable, executable.path.hasPrefix("/") else { return nil }
        var dir = executable.resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = dir.appendingPathComponent("models")
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("registry.json").path) { return candidate }
            if dir.path == "/" { break }
            dir.deleteLastPathComponent()
        }
        return nil
    }

    /// The path of `file`, a registry entry's installed file, inside `directory`; nil when
    /// `file` would leave it (absolute, `..`) or holds control characters.
    public static func installedPath(_ file: String, in directory: URL) -> String? {
        let parts = file.split(separator: "/", omittingEmptySubsequences: false)
        guard !file.isEmpty, !file.hasPrefix("/"), !containsControlCharacters(file), !file.contains("\\"),
            !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." })
        else { return nil }
        return directory.appendingPathComponent(file).path
    }
}
