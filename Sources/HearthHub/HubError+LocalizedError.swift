import Foundation

extension HubError: LocalizedError {
    /// What happened (``message``), as an alert's title shows it. Never the access token.
    public var errorDescription: String? { message }

    /// What to do about it: the error's own ``remedy`` when it has one, else the usual remedy
    /// for its ``code``.
    public var recoverySuggestion: String? { remedy ?? code.usualRemedy }
}

extension HubError.Code {
    /// The usual way out of a failure of this kind, for errors raised without a remedy of their own.
    var usualRemedy: String {
        switch self {
        case .unauthorized: return "Set HF_TOKEN to a Hugging Face access token that can read the repository."
        case .gated: return "Accept the repository's terms on huggingface.co with the account whose token is in HF_TOKEN."
        case .repositoryNotFound: return "Check the repository's name (org/name); a private repository needs HF_TOKEN."
        case .revisionNotFound: return "Check the branch, tag or commit; leave it out for main."
        case .fileNotFound: return "Check the file's name as the repository lists it."
        case .checksumMismatch, .sizeMismatch:
            return "The download was not the file the hub lists (or the registry pins); it was not used. Try again; if it persists, the repository changed."
        case .network: return "Check the network connection (or HF_ENDPOINT) and try again; a model already in the cache loads offline."
        case .server: return "The hub is failing or limiting requests; try again later."
        case .invalidResponse: return "The server at HF_ENDPOINT does not answer as the Hugging Face hub does; check HF_ENDPOINT."
        case .notCached: return "Connect to the network and load the model once to download it, or unset HF_HUB_OFFLINE."
        case .invalidReference: return "Give a model as org/repo[:QUANT], a short name from the registry, or a path."
        case .noMatchingFile: return "Name a quant the repository has (such as Q4_K_M), or a file."
        case .ambiguousFile: return "Name the quant or the file to take."
        case .fileSystem: return "Check that the hub cache folder (HF_HUB_CACHE or HF_HOME) is writable and has free space."
        }
    }
}
