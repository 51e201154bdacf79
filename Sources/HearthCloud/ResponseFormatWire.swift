import Foundation
import HearthProviders

/// The structured-output formats an OpenAI-compatible endpoint accepts.
public struct StructuredOutputSupport: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `response_format: {"type": "json_object"}`.
    public static let jsonObject = StructuredOutputSupport(rawValue: 1 << 0)
    /// `response_format: {"type": "json_schema", "json_schema": {name, schema, strict}}`.
    public static let jsonSchema = StructuredOutputSupport(rawValue: 1 << 1)
    /// llama.cpp's `grammar` field (GBNF text whose start rule is `root`).
    public static let gbnfGrammar = StructuredOutputSupport(rawValue: 1 << 2)

    /// What OpenAI's chat completions take: JSON mode and JSON Schema.
    public static let openAI: StructuredOutputSupport = [.jsonObject, .jsonSchema]
    /// Nothing: every non-text format is refused with ``ProviderError/Code/unsupported(feature:)``.
    public static let none: StructuredOutputSupport = []
}

/// Shared pieces of mapping a ``ResponseFormat`` to a cloud API's request body.
enum ResponseFormatWire {
    /// The error for a format a provider's API does not have (raised before any request is sent).
    static func unsupported(_ format: ResponseFormat, provider: String, api: String, hint: String? = nil) -> ProviderError {
        let extra = hint.map { " \($0)" } ?? ""
        return ProviderError(
            .unsupported(feature: "response_format \(format.kind)"), provider: provider,
            message: "\(api) cannot enforce response_format \(format.kind).\(extra) The local model can (FallbackRouter fails over to it).")
    }

    /// Checks a format before it is mapped: a malformed one is ``ProviderError/Code/invalidRequest``.
    static func validated(_ format: ResponseFormat, provider: String) throws -> ResponseFormat {
        do { try format.validate() } catch {
            throw ProviderError(.invalidRequest, provider: provider, message: error.message, underlying: error)
        }
        return format
    }

    /// A stand-in string for a schema inside a body built with `JSONSerialization`, replaced by
    /// the schema's own text afterwards (``splice(_:placeholder:schema:)``), so the schema keeps
    /// its key order — the order a model writes the keys in — which a dictionary would lose.
    static func placeholder() -> String { "hearth-schema-\(UUID().uuidString)" }

    /// Replaces the one JSON string `"placeholder"` in `body` with `schema` (JSON text, already
    /// validated). Throws ``ProviderError/Code/invalidRequest`` if the placeholder is not there exactly once.
    static func splice(_ body: Data, placeholder: String, schema: String, provider: String) throws -> Data {
        let token = Data("\"\(placeholder)\"".utf8)
        guard let range = body.range(of: token), body[range.upperBound...].range(of: token) == nil else {
            throw ProviderError(.invalidRequest, provider: provider, message: "The schema could not be placed in the request body.")
        }
        var spliced = body
        spliced.replaceSubrange(range, with: Data(schema.utf8))
        return spliced
    }
}
