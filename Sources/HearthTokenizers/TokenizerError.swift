/// An error loading or using a tokenizer: what, where, and what to do.
public struct TokenizerError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Stable error kinds.
    public enum Code: String, Sendable {
        case fileNotFound
        case invalidModel
        case invalidConfig
        case encodingFailed
        case unknownToken
    }

    public var code: Code
    public var message: String
    public var path: String?
    public var remedy: String?

    public init(_ code: Code, _ message: String, path: String? = nil, remedy: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.remedy = remedy
    }

    public var description: String {
        var text = path.map { "\($0): " } ?? ""
        text += message
        if let remedy { text += ". \(remedy)" }
        return text
    }
}
