/// An error from the engine: bad options, a prompt that does not fit, cancellation.
public struct EngineError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Stable error kinds.
    public enum Code: String, Sendable {
        /// The prompt (plus anything requested) does not fit the context window.
        case contextLengthExceeded
        /// An option value is out of range.
        case invalidOption
        /// A token id outside the vocabulary was given.
        case invalidToken
        /// The work was cancelled.
        case cancelled
        /// The model directory lacks something the engine needs.
        case missingComponent
        /// A KV-cache snapshot is corrupt, of another format version, or from another model or cache layout.
        case invalidSnapshot
        /// A saved logits file (`hearth perplexity --save-logits`) is corrupt, truncated or of another format version.
        case invalidLogitsFile
        /// A saved logits file is from another model, vocabulary, text or context than the run it is compared with.
        case logitsFileMismatch
    }

    public var code: Code
    public var message: String
    public var remedy: String?

    public init(_ code: Code, _ message: String, remedy: String? = nil) {
        self.code = code
        self.message = message
        self.remedy = remedy
    }

    public var description: String { message + (remedy.map { ". \($0)" } ?? "") }
}
