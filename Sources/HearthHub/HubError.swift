/// What went wrong talking to the Hugging Face hub or its cache, with what to do about it.
/// Messages never contain the access token.
public struct HubError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The kind of failure, for callers that branch on it.
    public enum Code: String, Sendable {
        /// 401/403 without a valid token (a private repository, or no token sent).
        case unauthorized
        /// 401/403 on a gated repository: the account must accept its terms.
        case gated
        /// The repository does not exist (or is private and the token cannot see it).
        case repositoryNotFound
        /// The revision (branch, tag or commit) does not exist.
        case revisionNotFound
        /// The file is not in the repository at that revision.
        case fileNotFound
        /// A downloaded file's sha256 (LFS) or git blob id differs from the one the hub lists.
        case checksumMismatch
        /// A downloaded file's size differs from the one the hub lists.
        case sizeMismatch
        /// Connection refused, reset or timed out, after the retries.
        case network
        /// A 5xx or 429 answer, after the retries, or another unexpected status.
        case server
        /// An answer that is not what the hub sends (bad JSON, a missing header, an unsafe path).
        case invalidResponse
        /// Offline mode (`HF_HUB_OFFLINE`) and the model is not in the cache.
        case notCached
        /// A model name that is neither `org/repo[:QUANT]` nor a short name from the registry.
        case invalidReference
        /// No file in the repository matches the request (quant, format).
        case noMatchingFile
        /// Several files match and the request does not say which.
        case ambiguousFile
        /// Reading or writing the cache failed.
        case fileSystem
    }

    public let code: Code
    /// What happened, naming the repository, revision and file where known.
    public let message: String
    /// What to do about it.
    public let remedy: String?

    public init(_ code: Code, _ message: String, remedy: String? = nil) {
        self.code = code
        self.message = message
        self.remedy = remedy
    }

    public var description: String { remedy.map { "\(message) — \($0)" } ?? message }
}
