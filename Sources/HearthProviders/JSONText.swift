@_exported import HearthJSON

/// The provider layer's JSON entry points (kept for source compatibility): the value type, the
/// parser and the writer are HearthJSON's `JSON`, re-exported by this module.
///
/// Objects keep their keys in document order (a later duplicate wins on lookup). Nesting is
/// bounded (`JSON.maxDepth`, 512 levels) so hostile input cannot exhaust the stack.
public enum JSONText {
    /// A parsed JSON value: HearthJSON's `JSON`.
    public typealias Value = JSON

    /// Why a text is not JSON: `JSON.SyntaxError`.
    public typealias SyntaxError = JSON.SyntaxError

    /// Parses one JSON document (surrounding whitespace allowed, nothing else after it).
    /// - Throws: ``SyntaxError``.
    public static func parse(_ text: String) throws(SyntaxError) -> Value { try JSON.parse(text) }

    /// Parses JSON from UTF-8 bytes (a request body as received), checking that its strings
    /// are valid UTF-8 (`JSON.SyntaxError.isInvalidUTF8` when one is not).
    /// - Throws: ``SyntaxError``.
    public static func parse(utf8 bytes: [UInt8]) throws(SyntaxError) -> Value { try JSON.parse(utf8: bytes) }
}
