import Foundation
import HearthJSON

/// The server's name for HearthJSON's ``JSON`` (kept for source compatibility): requests are
/// parsed into it once, by the byte parser, so every field can be checked by name and type
/// (`1` is not a Bool, `"1"` not a number) and schemas and tool inputs keep the client's key
/// order and digits; responses are built from it so their shape (including explicit `null`s
/// and key order) matches the API they copy.
package typealias JSONValue = JSON

extension JSON {
    /// The value as compact JSON (``JSON/serialized``) in UTF-8: keys in the order they were
    /// built or sent, numbers as written (built from a `Double`: whole values below 9e15 as
    /// integers), non-finite ones as the strings `Infinity`, `-Infinity` and `NaN`.
    func serialized() -> Data { Data(serialized.utf8) }

    /// An integer as a JSON number.
    static func int(_ value: Int) -> JSON { .number(JSON.Number(value)) }
    /// An optional string, `null` when nil.
    static func optional(_ value: String?) -> JSON { value.map { .string($0) } ?? .null }
}
