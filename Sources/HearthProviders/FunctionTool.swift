/// A function an app lets the model call, with typed arguments and an async body.
///
/// ```swift
/// struct Weather: FunctionTool {
///     struct Arguments: Decodable, Sendable { var city: String }
///     let name = "get_weather"
///     let description = "The current weather in a city."
///     let parameters = #"{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}"#
///     func call(arguments: Arguments) async throws -> String { "18 °C and sunny in \(arguments.city)" }
/// }
/// let answer = try await provider.respond(to: [.user("Weather in Paris?")], tools: [Weather()])
/// print(answer.response.text)
/// ```
///
/// ``parameters`` is the JSON Schema of `Arguments`: the local model generates every call under
/// it (so the arguments always decode when the schema and the type agree); cloud models get
/// it as their API's tool definition. When `Arguments` is a ``StructuredOutput`` (`@Structured`
/// in HearthMacros), ``parameters`` comes from its derived schema and need not be written.
/// `Output` is what the model reads back (``FunctionToolOutput``:
/// a `String` as is, a ``JSONText/Value`` as JSON; encode other values to JSON text yourself).
public protocol FunctionTool: Sendable {
    /// The arguments the model passes, decoded from its JSON.
    associatedtype Arguments: Decodable & Sendable
    /// What the call returns.
    associatedtype Output: FunctionToolOutput

    /// The name the model calls it by (1–64 of `a-z A-Z 0-9 _ -`).
    var name: String { get }
    /// What the tool does and when to use it; the model reads it.
    var description: String { get }
    /// The JSON Schema of ``Arguments`` (JSON text, `"type": "object"`).
    var parameters: String { get }

    /// Runs the tool.
    func call(arguments: Arguments) async throws -> Output
}

extension FunctionTool where Arguments: StructuredOutput {
    /// The JSON Schema of ``Arguments`` (``StructuredOutput/jsonSchema``, which `@Structured`
    /// derives from the type): a tool whose arguments are a structured type need not write it.
    public var parameters: String { Arguments.jsonSchemaText }
}

extension FunctionTool {
    /// The definition a request carries.
    public var definition: ToolDefinition {
        ToolDefinition(name: name, description: description, parameters: parameters)
    }

    /// Decodes `arguments` (JSON text), runs the tool and renders its output for the model.
    /// - Throws: ``ToolCallError`` `.invalidArguments` when the JSON does not decode into
    ///   ``Arguments``; `.toolFailed` wrapping what ``call(arguments:)`` threw.
    public func call(json arguments: String) async throws -> String {
        let decoded: Arguments
        do {
            decoded = try JSONText.decode(Arguments.self, from: arguments.isEmpty ? "{}" : arguments)
        } catch {
            throw ToolCallError(.invalidArguments, tool: name, message: "the arguments do not fit \(Arguments.self): \(error)")
        }
        let output: Output
        do { output = try await call(arguments: decoded) } catch {
            throw ToolCallError(.toolFailed, tool: name, message: "\(error)", underlying: error)
        }
        return output.toolOutputText
    }
}

/// What a ``FunctionTool`` returns: text the model reads as the call's result.
public protocol FunctionToolOutput: Sendable {
    /// The result as the model reads it.
    var toolOutputText: String { get }
}

extension String: FunctionToolOutput {
    /// The string itself.
    public var toolOutputText: String { self }
}

extension JSONText.Value: FunctionToolOutput {
    /// The value as compact JSON.
    public var toolOutputText: String { serialized }
}

/// A tool call that could not be completed by ``LanguageModelProvider/respond(to:tools:options:maxRounds:)``.
public struct ToolCallError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: String, Sendable, Equatable {
        /// The model's arguments do not decode into the tool's `Arguments` (the schema and the
        /// type disagree, or a cloud model wrote arguments outside the schema).
        case invalidArguments
        /// The tool's own `call(arguments:)` threw (``ToolCallError/underlying`` is its error).
        case toolFailed
        /// The model was still calling tools after the allowed number of rounds.
        case tooManyRounds
    }

    /// What went wrong.
    public var kind: Kind
    /// The tool involved (empty for `.tooManyRounds`).
    public var tool: String
    /// What happened, for a person.
    public var message: String
    /// The error the tool threw, for `.toolFailed`.
    public var underlying: (any Error & Sendable)?

    /// Creates the error.
    public init(_ kind: Kind, tool: String, message: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.tool = tool
        self.message = message
        self.underlying = underlying
    }

    public var description: String { tool.isEmpty ? "\(kind.rawValue): \(message)" : "\(tool): \(kind.rawValue): \(message)" }
}

/// What ``LanguageModelProvider/respond(to:tools:options:maxRounds:)`` ends with.
public struct ToolConversation: Sendable {
    /// The model's final answer (the reply that called no tool).
    public var response: ChatResponse
    /// The conversation: the messages given, then each round's assistant message with its calls
    /// and the tool results, then the final answer — ready to continue.
    public var messages: [ChatMessage]
    /// Every call the model made, with what the tool returned, in order.
    public var calls: [(call: ToolCall, result: String)]
}

extension LanguageModelProvider {
    /// Lets the model call `tools` until it answers: each round sends the conversation with the
    /// tools, runs the calls the reply makes (in order), appends their results as
    /// ``ChatMessage/Role/tool`` messages and asks again; the first reply without calls ends it.
    ///
    /// `options.toolChoice` applies to the first round only (`required` or a named tool would
    /// otherwise force a call forever); later rounds use ``ToolChoice/auto``.
    /// - Parameters:
    ///   - messages: the conversation so far.
    ///   - tools: the tools the model may call (their names must be unique).
    ///   - options: sampling, length and tool options (`tools` is replaced by `tools`' definitions).
    ///   - maxRounds: the most model replies that may call tools before ``ToolCallError/Kind/tooManyRounds``.
    /// - Throws: ``ProviderError`` from the provider; ``ToolCallError`` when a tool fails or the
    ///   rounds run out. Arguments that do not decode are not thrown: the model reads the error
    ///   as the call's result and may correct itself.
    public func respond(
        to messages: [ChatMessage], tools: [any FunctionTool], options: ChatOptions = ChatOptions(), maxRounds: Int = 8
    ) async throws -> ToolConversation {
        var transcript = messages
        var options = options
        options.tools = tools.map(\.definition)
        do { try options.validate() } catch {
            throw ProviderError(.invalidRequest, provider: id, message: error.message, underlying: error)
        }
        var made: [(call: ToolCall, result: String)] = []
        for _ in 0..<max(1, maxRounds) {
            let response = try await complete(ChatRequest(messages: transcript, options: options))
            transcript.append(response.assistantMessage)  // with its reasoning, for the next round
            guard !response.toolCalls.isEmpty else {
                return ToolConversation(response: response, messages: transcript, calls: made)
            }
            for call in response.toolCalls {
                let result: String
                if let tool = tools.first(where: { $0.name == call.name }) {
                    do {
                        result = try await tool.call(json: call.arguments)
                    } catch let error as ToolCallError where error.kind == .invalidArguments {
                        result = "Error: \(error.message). Call \(call.name) again with arguments that follow its schema."
                    }
                } else {
                    result = "Error: there is no tool named \(call.name); the tools are \(tools.map(\.name).joined(separator: ", "))."
                }
                made.append((call, result))
                transcript.append(.tool(result, callID: call.id))
            }
            options.toolChoice = .auto
        }
        throw ToolCallError(
            .tooManyRounds, tool: "", message: "the model was still calling tools after \(max(1, maxRounds)) rounds")
    }
}
