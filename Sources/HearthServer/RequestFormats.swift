import Foundation
import HearthProviders

/// The response format of a request, as each API spells it.
///
/// - Chat and legacy completions: OpenAI's `response_format` — `{"type": "text"}`,
///   `{"type": "json_object"}`, `{"type": "json_schema", "json_schema": {"name", "schema",
///   "strict", "description"}}` — plus llama-server's extensions: `response_format`
///   `{"type": "json_object", "schema": {…}}`, and the top-level `json_schema` (a schema) and
///   `grammar` (GBNF text) fields.
/// - Responses: `text.format` — `{"type": "text"}`, `{"type": "json_object"}`,
///   `{"type": "json_schema", "name", "schema", "strict", "description"}`.
/// - Anthropic Messages: `output_config.format` `{"type": "json_schema", "schema"}` (and the
///   beta's top-level `output_format` of the same shape).
///
/// Each parser returns the format and the request field it came from, the `param` of any error
/// the format later causes (an invalid schema is a 400 naming that field and the keyword).
extension RequestParser {
    /// A parsed format and the field that carried it.
    typealias ParsedFormat = (format: ResponseFormat, param: String)

    /// `response_format`, `json_schema` and `grammar` of a chat or completions body; at most one
    /// of them may ask for structure.
    func openAIFormat(_ f: Fields) throws -> ParsedFormat? {
        var found: [ParsedFormat] = []
        if let value = f.value("response_format") {
            let r = try Fields(value, prefix: "response_format")
            switch try r.string("type") {
            case "text"?: break
            case "json_object"?:
                // llama-server: a json_object with a schema is that schema.
                if let schema = r.value("schema") {
                    found.append((.jsonSchema(name: "response", schema: try schemaText(schema, r.name("schema")), strict: true), "response_format.schema"))
                } else {
                    found.append((.jsonObject, "response_format"))
                }
            case "json_schema"?:
                guard let inner = r.value("json_schema") else {
                    throw APIError.invalid(r.name("json_schema"), "'response_format.json_schema' is required for type json_schema.", code: "missing_field")
                }
                let s = try Fields(inner, prefix: "response_format.json_schema")
                found.append((try schemaFormat(s), "response_format.json_schema.schema"))
            case nil:
                throw APIError.invalid(r.name("type"), "'response_format.type' is required: text, json_object or json_schema.", code: "missing_field")
            case let other?:
                throw APIError.invalid(
                    r.name("type"), "'response_format.type' must be text, json_object or json_schema, got '\(other.prefix(40))'.")
            }
        }
        if let schema = f.value("json_schema") {
            found.append((.jsonSchema(name: "response", schema: try schemaText(schema, "json_schema"), strict: true), "json_schema"))
        }
        if let grammar = try f.string("grammar"), !grammar.isEmpty {
            found.append((.grammar(grammar), "grammar"))
        }
        guard found.count <= 1 else {
            throw APIError.invalid(
                found[1].param, "Ask for one structure at a time: '\(found[0].param)' and '\(found[1].param)' are both set.")
        }
        return try checked(found.first)
    }

    /// `text.format` of a Responses body.
    func responsesFormat(_ f: Fields) throws -> ParsedFormat? {
        guard let text = f.value("text") else { return nil }
        let t = try Fields(text, prefix: "text")
        guard let format = t.value("format") else { return nil }
        let r = try Fields(format, prefix: "text.format")
        switch try r.string("type") {
        case "text"?: return nil
        case "json_object"?: return try checked((.jsonObject, "text.format"))
        case "json_schema"?: return try checked((try schemaFormat(r), "text.format.schema"))
        case nil: throw APIError.invalid(r.name("type"), "'text.format.type' is required: text, json_object or json_schema.", code: "missing_field")
        case let other?:
            throw APIError.invalid(r.name("type"), "'text.format.type' must be text, json_object or json_schema, got '\(other.prefix(40))'.")
        }
    }

    /// `output_config.format` (or the beta's `output_format`) of an Anthropic Messages body.
    func anthropicFormat(_ f: Fields) throws -> ParsedFormat? {
        var candidates: [(JSONValue, String)] = []
        if let config = f.value("output_config") {
            let c = try Fields(config, prefix: "output_config")
            if let format = c.value("format") { candidates.append((format, "output_config.format")) }
        }
        if let format = f.value("output_format") { candidates.append((format, "output_format")) }
        guard let (value, param) = candidates.first else { return nil }
        guard candidates.count == 1 else {
            throw APIError.invalid("output_format", "Send 'output_config.format' or the beta's 'output_format', not both.")
        }
        let r = try Fields(value, prefix: param)
        guard try r.string("type") == "json_schema" else {
            throw APIError.invalid(r.name("type"), "'\(r.name("type"))' must be json_schema.")
        }
        guard let schema = r.value("schema") else {
            throw APIError.invalid(r.name("schema"), "'\(r.name("schema"))' is required.", code: "missing_field")
        }
        return try checked((.jsonSchema(name: "response", schema: try schemaText(schema, r.name("schema")), strict: true), r.name("schema")))
    }

    /// OpenAI's `{name, schema, strict, description}` (the `json_schema` object of chat, or
    /// `text.format` itself in the Responses API). The name defaults to `response`.
    private func schemaFormat(_ s: Fields) throws -> ResponseFormat {
        guard let schema = s.value("schema") else {
            throw APIError.invalid(s.name("schema"), "'\(s.name("schema"))' is required: the JSON Schema the reply must follow.", code: "missing_field")
        }
        return .jsonSchema(
            name: try s.string("name") ?? "response", schema: try schemaText(schema, s.name("schema")),
            strict: try s.bool("strict") ?? false, description: try s.string("description"))
    }

    /// A schema value as JSON text, keys in the order they were sent — the order the model
    /// writes them in. Only objects (and `true`, any JSON value, which becomes `{}`) are
    /// schemas here.
    private func schemaText(_ value: JSONValue, _ param: String) throws -> String {
        switch value {
        case .object:
            return value.serialized
        case .bool(true): return "{}"
        default:
            throw APIError.invalid(param, "'\(param)' must be a JSON Schema object, got \(value.typeName).", code: "invalid_type")
        }
    }

    /// The provider layer's check of the format (name, well-formed schema), as a 400 naming the field.
    private func checked(_ parsed: ParsedFormat?) throws -> ParsedFormat? {
        guard let parsed else { return nil }
        do { try parsed.format.validate() } catch {
            let param = error.field.hasSuffix(".name") ? parsed.param.replacingOccurrences(of: ".schema", with: ".name") : parsed.param
            throw APIError.invalid(param, "'\(param)': \(error.message).")
        }
        return parsed
    }
}
