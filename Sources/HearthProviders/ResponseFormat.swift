/// The shape a reply must take: free text, any JSON object, JSON that follows a schema, text
/// that matches a regular expression, or text a grammar derives.
///
/// Every provider either honours it or refuses the request with
/// ``ProviderError/Code/unsupported(feature:)`` — none ignores it. The local model enforces
/// each format token by token (the reply cannot leave the format; a reply cut by `maxTokens`
/// ends with ``FinishReason/length`` and is then incomplete, never closed by invention). Cloud
/// providers map it to their wire format (OpenAI's `response_format`, Anthropic's
/// `output_config.format`, DashScope's `response_format`) where their API has it; see
/// docs/STRUCTURED.md for the table.
public enum ResponseFormat: Sendable, Hashable, Codable {
    /// Free text (the default; the same as no format).
    case text
    /// Any JSON object (OpenAI's `json_object`, "JSON mode").
    case jsonObject
    /// JSON that validates against a JSON Schema (OpenAI's `json_schema`).
    case jsonSchema(JSONSchemaFormat)
    /// Text that matches a regular expression as a whole (ECMAScript syntax, the subset
    /// docs/STRUCTURED.md lists). The local model only.
    case regex(String)
    /// Text derived from rule `root` of a grammar in llama.cpp's GBNF syntax. The local model,
    /// and OpenAI-compatible servers that take GBNF (llama.cpp's `llama-server`).
    case grammar(String, root: String = "root")

    /// The format's wire name: `text`, `json_object`, `json_schema`, `regex` or `grammar`.
    public var kind: String {
        switch self {
        case .text: return "text"
        case .jsonObject: return "json_object"
        case .jsonSchema: return "json_schema"
        case .regex: return "regex"
        case .grammar: return "grammar"
        }
    }

    /// Whether this format constrains the reply at all (everything but ``text``).
    public var isConstrained: Bool { self != .text }

    /// A JSON Schema as a constraint: the schema as JSON text with the name and strictness the
    /// OpenAI API asks for.
    public static func jsonSchema(name: String, schema: String, strict: Bool = true, description: String? = nil)
        -> ResponseFormat
    {
        .jsonSchema(JSONSchemaFormat(name: name, schema: schema, strict: strict, description: description))
    }
}

/// A JSON Schema response format (OpenAI's `response_format.json_schema`).
public struct JSONSchemaFormat: Sendable, Hashable, Codable {
    /// A name for the schema: 1–64 characters of `a-z A-Z 0-9 _ -` (OpenAI's rule; Hearth
    /// applies it everywhere so a request that works locally also works on OpenAI).
    public var name: String
    /// The schema, as JSON text (an object). Kept as text so its property order — the order a
    /// model writes the keys in — survives every hop.
    public var schema: String
    /// OpenAI's `strict`: the schema is enforced exactly. The local model always enforces the
    /// whole schema and refuses a keyword it cannot enforce, whatever this says; cloud
    /// providers pass it on.
    public var strict: Bool
    /// What the schema is for; some APIs show it to the model.
    public var description: String?

    /// Creates a schema format.
    public init(name: String, schema: String, strict: Bool = true, description: String? = nil) {
        self.name = name
        self.schema = schema
        self.strict = strict
        self.description = description
    }
}

extension ResponseFormat {
    /// Checks what can be checked without compiling: a schema name of 1–64 characters of
    /// `a-z A-Z 0-9 _ -`, a schema that is well-formed JSON whose top level is an object, a
    /// non-empty pattern, a non-empty grammar and root rule name. Whether the schema, pattern or
    /// grammar can be enforced is known only when the local model compiles it (its error names
    /// the keyword or position).
    /// - Throws: ``InvalidGenerationOption`` with `field` `response_format` (or a field below it).
    public func validate() throws(InvalidGenerationOption) {
        switch self {
        case .text, .jsonObject:
            return
        case .jsonSchema(let format):
            guard Self.isAPIName(format.name) else {
                throw InvalidGenerationOption(
                    field: "response_format.json_schema.name",
                    message: "response_format.json_schema.name must be 1–64 characters of a-z, A-Z, 0-9, _ and -, got '\(format.name.prefix(80))'")
            }
            let value: JSONText.Value
            do { value = try JSONText.parse(format.schema) } catch {
                throw InvalidGenerationOption(
                    field: "response_format.json_schema.schema",
                    message: "response_format.json_schema.schema is not valid JSON: \(error.message) (at byte \(error.offset))")
            }
            guard case .object = value else {
                throw InvalidGenerationOption(
                    field: "response_format.json_schema.schema",
                    message: "response_format.json_schema.schema must be a JSON object, got \(value.typeName)")
            }
        case .regex(let pattern):
            if pattern.isEmpty {
                throw InvalidGenerationOption(field: "response_format.regex", message: "response_format.regex must not be empty")
            }
        case .grammar(let text, let root):
            if text.allSatisfy(\.isWhitespace) {
                throw InvalidGenerationOption(field: "response_format.grammar", message: "response_format.grammar must not be empty")
            }
            if root.isEmpty {
                throw InvalidGenerationOption(
                    field: "response_format.grammar.root", message: "the grammar's root rule name must not be empty")
            }
        }
    }
}

extension ResponseFormat {
    /// OpenAI's rule for schema and tool names, applied everywhere: 1–64 characters of
    /// `a-z A-Z 0-9 _ -`.
    static func isAPIName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x5F || byte == 0x2D
            }
    }
}
