/// An error loading or using a tokenizer: what, where, and what to do.
public struct TokenizerError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Stable error kinds.
    public enum Code: String, Sendable {
        case fileNotFound
        case invalidModel
        case invalidConfig
        case encodingFailed
        case unknownToken
        /// The file is valid but uses a component Hearth does not implement (a pre-tokenizer
        /// type, a regex, a model type); `key` names where it appears.
        case unsupported
    }

    public var code: Code
    public var message: String
    public var path: String?
    /// The JSON key path (`pre_tokenizer.pretokenizers[0].type`) or metadata key involved, if any.
    public var key: String?
    public var remedy: String?

    public init(_ code: Code, _ message: String, path: String? = nil, key: String? = nil, remedy: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.key = key
        self.remedy = remedy
    }

    public var description: String {
        var text = path.map { "\($0): " } ?? ""
        text += message
        if let key { text += " (at '\(key)')" }
        if let remedy { text += ". \(remedy)" }
        return text
    }
}
