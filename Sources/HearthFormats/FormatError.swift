/// An error reading a model file or its metadata: what went wrong, where (file, tensor or
/// key) and what to do about it.
public struct FormatError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of problem this is; stable for programs to match on.
    public enum Code: String, Sendable {
        case fileNotFound
        case ioError
        case truncated
        case invalidHeader
        case invalidJSON
        case missingKey
        case invalidValue
        case unsupportedDType
        case offsetOutOfBounds
        case sizeMismatch
        case overlappingTensors
        case missingTensor
        case shapeMismatch
        case unsupportedArchitecture
    }

    /// The kind of problem.
    public var code: Code
    /// A sentence describing the problem.
    public var message: String
    /// The file involved, if any.
    public var path: String?
    /// The tensor name or JSON key involved, if any.
    public var key: String?
    /// What the user can do about it.
    public var remedy: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, path: String? = nil, key: String? = nil, remedy: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.key = key
        self.remedy = remedy
    }

    public var description: String {
        var text = ""
        if let path { text += "\(path): " }
        text += message
        if let key { text += " (at '\(key)')" }
        if let remedy { text += ". \(remedy)" }
        return text
    }
}
