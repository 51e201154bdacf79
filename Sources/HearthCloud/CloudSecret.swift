/// A credential (API key, API secret). It prints, dumps and reflects as `<redacted>`, so it
/// cannot leak into logs or error messages by string interpolation.
public struct CloudSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The credential itself; only the providers read it, to sign or authorise requests.
    let value: String

    /// Wraps a credential. Load it from the environment or the config file
    /// (``CloudCredentials``) rather than writing it in source code.
    public init(_ value: String) {
        self.value = value
    }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }
    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }
    /// No children, so `dump` shows nothing either.
    public var customMirror: Mirror { Mirror(self, children: []) }
}

/// Replaces credentials in text that came back from a server (error bodies can echo them).
struct Redactor: Sendable {
    /// Values to hide; very short ones are ignored (they would blank out ordinary words).
    let secrets: [String]

    init(_ secrets: [String?]) {
        self.secrets = secrets.compactMap { $0 }.filter { $0.count >= 6 }.sorted { $0.count > $1.count }
    }

    /// `text` with every occurrence of a secret replaced by `[redacted]`.
    func callAsFunction(_ text: String) -> String {
        var result = text
        for secret in secrets where result.contains(secret) {
            result = result.replacingOccurrences(of: secret, with: "[redacted]")
        }
        return result
    }
}
