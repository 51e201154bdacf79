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
/// model, from PyPI). Pinned `bytes` and `sha256` must agree with what the hub lists, else
/// the pull is refused; without them the hub's own `lfs.oid` is what the download is checked
/// against.
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
}
