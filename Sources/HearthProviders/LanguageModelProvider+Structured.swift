/// A structured reply that could not be turned into the value asked for.
public struct StructuredOutputError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: String, Sendable, Equatable {
        /// The reply was cut by the token limit (``FinishReason/length``) before the JSON was
        /// complete: raise `maxTokens`.
        case incomplete
        /// The reply is not JSON (a provider that honoured the format never gives this; a
        /// schema the local model enforces cannot).
        case notJSON
        /// The reply is JSON but does not fit the type: the schema and the type disagree (a
        /// key the type needs is optional in the schema, a number where the type has a string).
        case typeMismatch
    }

    /// What went wrong.
    public var kind: Kind
    /// What, where, and what to do, for a person.
    public var message: String
    /// The reply text as the provider gave it.
    public var text: String
    /// The provider that answered.
    public var provider: String

    /// Creates the error.
    public init(_ kind: Kind, message: String, text: String, provider: String) {
        self.kind = kind
        self.message = message
        self.text = text
        self.provider = provider
    }

    public var description: String { "\(provider): \(kind.rawValue): \(message)" }
}

extension LanguageModelProvider {
    /// Asks for a reply that follows `schema` and decodes it into `T`:
    ///
    /// ```swift
    /// struct City: Codable { var name: String; var country: String; var population: Int }
    /// let city = try await provider.generate(City.self, schema: """
    ///     {"type": "object", "properties": {"name": {"type": "string"}, "country": {"type": "string"},
    ///      "population": {"type": "integer", "minimum": 0}}, "required": ["name", "country", "population"],
    ///      "additionalProperties": false}
    ///     """, prompt: "The largest city in Japan, as JSON.")
    /// ```
    ///
    /// Works with every provider that honours ``ResponseFormat/jsonSchema(_:)``: the local
    /// model enforces the schema token by token; cloud providers send it as their API's
    /// structured-output field. The schema should describe `T` (its required keys, its types);
    /// a model does not see the schema unless the prompt shows it, so say what you want.
    /// - Parameters:
    ///   - type: the `Decodable` type of the reply.
    ///   - schema: a JSON Schema as JSON text (an object).
    ///   - name: the schema's name (1–64 of `a-z A-Z 0-9 _ -`; default: the type's name).
    ///   - prompt: the user message.
    ///   - system: an optional system message before it.
    ///   - options: sampling and length options; their `responseFormat` is replaced by the schema.
    /// - Throws: ``ProviderError`` from the provider (``ProviderError/Code/unsupported(feature:)``
    ///   when it has no structured output, ``ProviderError/Code/invalidRequest`` for a schema it
    ///   cannot enforce), ``StructuredOutputError`` when the reply cannot become a `T`.
    public func generate<T: Decodable>(
        _ type: T.Type, schema: String, name: String? = nil, prompt: String, system: String? = nil,
        options: ChatOptions = ChatOptions()
    ) async throws -> T {
        var messages: [ChatMessage] = []
        if let system { messages.append(.system(system)) }
        messages.append(.user(prompt))
        return try await generate(type, schema: schema, name: name, messages: messages, options: options)
    }

    /// ``generate(_:schema:name:prompt:system:options:)`` for a whole conversation.
    public func generate<T: Decodable>(
        _ type: T.Type, schema: String, name: String? = nil, messages: [ChatMessage],
        options: ChatOptions = ChatOptions()
    ) async throws -> T {
        var options = options
        options.responseFormat = .jsonSchema(
            JSONSchemaFormat(name: name ?? Self.schemaName(for: type), schema: schema, strict: true))
        do { try options.validate() } catch {
            throw ProviderError(.invalidRequest, provider: id, message: error.message, underlying: error)
        }
        let response = try await complete(ChatRequest(messages: messages, options: options))
        return try Self.decodeReply(type, response)
    }

    /// Decodes a structured reply, or says why it cannot be decoded.
    static func decodeReply<T: Decodable>(_ type: T.Type, _ response: ChatResponse) throws -> T {
        if response.finishReason == .length {
            throw StructuredOutputError(
                .incomplete,
                message: "the reply was cut at the token limit before the JSON was complete (\(response.text.utf8.count) bytes); raise maxTokens",
                text: response.text, provider: response.provider)
        }
        do {
            return try JSONText.decode(type, from: response.text)
        } catch let error as JSONText.SyntaxError {
            throw StructuredOutputError(
                .notJSON, message: "the reply is not JSON: \(error)", text: response.text, provider: response.provider)
        } catch let error as DecodingError {
            throw StructuredOutputError(
                .typeMismatch, message: "the reply does not fit \(type): \(Self.describe(error))", text: response.text,
                provider: response.provider)
        } catch {
            throw StructuredOutputError(
                .typeMismatch, message: "the reply does not fit \(type): \(error)", text: response.text, provider: response.provider)
        }
    }

    /// A schema name from a type's name: its characters outside `a-z A-Z 0-9 _ -` dropped, at
    /// most 64, `response` when nothing is left.
    static func schemaName<T>(for type: T.Type) -> String {
        let kept = String(describing: type).unicodeScalars.filter { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-")
        }
        let name = String(String.UnicodeScalarView(kept).prefix(64))
        return name.isEmpty ? "response" : name
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.isEmpty ? "the top level" : keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(context.debugDescription) at \(path(context.codingPath))"
        case .keyNotFound(let key, let context):
            return "no key '\(key.stringValue)' at \(path(context.codingPath)) (make it required in the schema, or optional in the type)"
        @unknown default:
            return "\(error)"
        }
    }
}
