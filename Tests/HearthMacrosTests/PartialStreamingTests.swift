import HearthMacros
import Synchronization
import Testing

@testable import HearthProviders

/// Streaming partially generated values: the JSON prefix closed where it stops, decoded into
/// the macro's all-optional `Partial`, through a scripted provider.
@Suite struct PartialStreamingTests {
    @Test(arguments: [
        (#"{"#, #"{}"#),
        (#"{"na"#, #"{}"#),
        (#"{"name":"#, #"{}"#),
        (#"{"name":"Par"#, #"{"name":"Par"}"#),
        (#"{"name":"Paris","#, #"{"name":"Paris"}"#),
        (#"{"name":"Paris","population":21"#, #"{"name":"Paris"}"#),
        (#"{"name":"Paris","population":2100000,"landmarks":["Lou"#, #"{"name":"Paris","population":2100000,"landmarks":["Lou"]}"#),
        (#"{"a":["x",{"b":tru"#, #"{"a":["x",{}]}"#),
        (#"{"a":"tab\"#, #"{"a":"tab"}"#),
        (#"{"a":"caf\u00"#, #"{"a":"caf"}"#),
        (#"{"a":"q\\"#, #"{"a":"q\\"}"#),
        (#"{"a":{"b":[1,2]}}"#, #"{"a":{"b":[1,2]}}"#),
    ])
    func closesAPrefix(prefix: String, closed: String) {
        #expect(JSONPrefix.closed(prefix) == closed)
    }

    @Test func nothingOpenYet() {
        #expect(JSONPrefix.closed("") == nil)
        #expect(JSONPrefix.closed("  ") == nil)
    }

    @Test func partialDecodesWhatIsThere() throws {
        let partial = try JSONText.decode(City.Partial.self, from: #"{"name":"Par","landmarks":["Louvre","Eif"]}"#)
        #expect(partial.name == "Par" && partial.country == nil && partial.population == nil)
        #expect(partial.landmarks == ["Louvre", "Eif"])
        // A nested value's partial, and array items up to the first that does not decode yet.
        let drawing = try JSONText.decode(Drawing.Partial.self, from: #"{"title":"Sun","shapes":[{"circle":{"radius":2}},{"point":{"_0":1}}]}"#)
        #expect(drawing.title == "Sun" && drawing.shapes == [.circle(radius: 2)])
        let person = try JSONText.decode(Person.Partial.self, from: #"{"name":"Ada","address":{"street":"Main"}}"#)
        #expect(person.address?.street == "Main" && person.address?.zip == nil && person.age == nil)
        // A value of the wrong type is nil, not an error.
        #expect(try JSONText.decode(Ticket.Partial.self, from: #"{"priority":"hi","done":true}"#).priority == nil)
    }

    /// A provider that streams a fixed reply in small pieces.
    struct Scripted: LanguageModelProvider {
        let reply: String
        var id: String { "scripted" }
        var availability: ProviderAvailability { .available }
        func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
            let pieces = stride(from: 0, to: reply.count, by: 3).map { start in
                String(reply.dropFirst(start).prefix(3))
            }
            return AsyncThrowingStream { continuation in
                continuation.yield(.servedBy(id))
                for piece in pieces { continuation.yield(.textDelta(piece)) }
                continuation.yield(.finished(.stop))
                continuation.finish()
            }
        }
    }

    @Test func streamsTheValueAsItFillsIn() async throws {
        let json = #"{"name":"Lima","country":"Peru","population":10000000,"landmarks":["Plaza Mayor"]}"#
        let session = ChatSession(provider: Scripted(reply: json))
        var names: [String?] = []
        var last: ChatSession.StructuredUpdate<City>?
        for try await update in session.streamResponse(to: "A city in Peru.", generating: City.self) {
            names.append(update.partial.name)
            last = update
        }
        let final = try #require(last)
        #expect(final.value == City(name: "Lima", country: "Peru", population: 10_000_000, landmarks: ["Plaza Mayor"]))
        #expect(final.partial.population == 10_000_000 && final.response?.text == json)
        // The name grew a piece at a time before the rest came.
        #expect(names.count > 3 && names[0] == nil)
        #expect(names.contains("Lim") && names.contains("Lima"))
        #expect(session.transcript.messages.last?.content == json)
    }

    @Test func respondGeneratingSendsTheSchemaAndDecodes() async throws {
        struct Recording: LanguageModelProvider {
            let seen = Box()
            var id: String { "recording" }
            var availability: ProviderAvailability { .available }
            func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
                seen.set(request)
                return AsyncThrowingStream { continuation in
                    continuation.yield(.textDelta(#"{"circle":{"radius":2.5}}"#))
                    continuation.finish()
                }
            }
        }
        let provider = Recording()
        // The session's tools stay out of a structured turn (the local model refuses both at once).
        let session = ChatSession(provider: provider, tools: [Echo()])
        let shape = try await session.respond(to: "A shape.", generating: Shape.self, includeSchemaInPrompt: false)
        #expect(shape == .circle(radius: 2.5))
        let request = try #require(provider.seen.get())
        guard case .jsonSchema(let format)? = request.options.responseFormat else {
            Issue.record("no schema in the request")
            return
        }
        #expect(format.name == "Shape" && format.strict)
        #expect(try JSONText.parse(format.schema) == Shape.jsonSchema)
        #expect(request.messages.last?.content == "A shape.")
        #expect(request.options.tools.isEmpty)
    }

    @Test func aCutReplyIsAnIncompleteError() async throws {
        struct Cut: LanguageModelProvider {
            var id: String { "cut" }
            var availability: ProviderAvailability { .available }
            func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
                AsyncThrowingStream { continuation in
                    continuation.yield(.textDelta(#"{"name":"Li"#))
                    continuation.yield(.finished(.length))
                    continuation.finish()
                }
            }
        }
        await #expect(throws: StructuredOutputError.self) {
            _ = try await ChatSession(provider: Cut()).respond(to: "A city.", generating: City.self)
        }
    }
}

/// A request seen by a test provider.
final class Box: Sendable {
    private let value = Mutex<ChatRequest?>(nil)
    func set(_ request: ChatRequest) { value.withLock { $0 = request } }
    func get() -> ChatRequest? { value.withLock { $0 } }
}

/// A tool with structured arguments (extension macros need a type at file scope).
struct Echo: FunctionTool {
    @Structured struct Arguments: Codable { var text: String }
    let name = "echo"
    let description = "Echoes."
    func call(arguments: Arguments) async throws -> String { arguments.text }
}
