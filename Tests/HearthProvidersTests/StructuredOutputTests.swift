import Testing

@testable import HearthProviders

/// Response formats in the provider protocol: validation, the JSON reader, and the typed
/// `generate(T.self, schema:prompt:)` over any provider.
@Suite struct StructuredOutputTests {
    static let citySchema = #"{"type":"object","properties":{"name":{"type":"string"},"population":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"mayor":{"type":["string","null"]}},"required":["name","population","tags"]}"#

    struct City: Codable, Equatable {
        var name: String
        var population: Int
        var tags: [String]
        var mayor: String?
        var area: Double?
    }

    // MARK: Validation

    @Test func validFormatsPass() throws {
        for format in [
            ResponseFormat.text, .jsonObject, .jsonSchema(name: "City-2_b", schema: Self.citySchema), .jsonSchema(name: "x", schema: " {} "),
            .regex("[a-z]+"), .grammar("root ::= \"a\""),
        ] {
            try format.validate()
            try ChatOptions(responseFormat: format).validate()
        }
    }

    @Test(arguments: [
        (ResponseFormat.jsonSchema(name: "", schema: "{}"), "response_format.json_schema.name"),
        (.jsonSchema(name: "has space", schema: "{}"), "response_format.json_schema.name"),
        (.jsonSchema(name: String(repeating: "a", count: 65), schema: "{}"), "response_format.json_schema.name"),
        (.jsonSchema(name: "x", schema: #"{"type": "object""#), "response_format.json_schema.schema"),
        (.jsonSchema(name: "x", schema: "[1, 2]"), "response_format.json_schema.schema"),
        (.jsonSchema(name: "x", schema: "{} {}"), "response_format.json_schema.schema"),
        (.regex(""), "response_format.regex"),
        (.grammar("  \n"), "response_format.grammar"),
        (.grammar("root ::= \"a\"", root: ""), "response_format.grammar.root"),
    ])
    func malformedFormatsNameTheirField(_ format: ResponseFormat, _ field: String) {
        #expect {
            try ChatOptions(responseFormat: format).validate()
        } throws: { error in
            (error as? InvalidGenerationOption)?.field == field
        }
    }

    @Test func constrainedFormatIgnoresText() {
        #expect(ChatOptions().constrainedFormat == nil)
        #expect(ChatOptions(responseFormat: .text).constrainedFormat == nil)
        #expect(ChatOptions(responseFormat: .jsonObject).constrainedFormat == .jsonObject)
    }

    @Test func unsupportedIsAFailoverReasonAndNotTransient() {
        let error = ProviderError(.unsupported(feature: "response_format regex"), provider: "openai", message: "no")
        #expect(!error.isTransient)
        #expect(FallbackRouter.defaultFailover(error))
        #expect("\(error.code)" == "unsupported (response_format regex)")
    }

    // MARK: The JSON reader

    @Test func readsJSONKeepingKeyOrderAndDigits() throws {
        let value = try JSONText.parse(#" {"b": [1, -2.5e3, true, null], "a": "é\u00e9\ud83d\ude00\n", "big": 12345678901234567890} "#)
        guard case .object(let pairs) = value else {
            Issue.record("not an object")
            return
        }
        #expect(pairs.map(\.0) == ["b", "a", "big"])
        #expect(value["a"] == .string("éé😀\n"))
        #expect(value["big"] == .number("12345678901234567890"))
        #expect(value["b"] == .array([.number("1"), .number("-2.5e3"), .bool(true), .null]))
    }

    @Test func serializesCompactlyInOrder() throws {
        let text = #"{ "z" : [1, 2.50, {"q\"": "a\u0001\n😀"}], "a": null, "m": false }"#
        #expect(try JSONText.parse(text).serialized == #"{"z":[1,2.50,{"q\"":"a\u0001\n😀"}],"a":null,"m":false}"#)
        #expect(try JSONText.parse(JSONText.parse(text).serialized) == JSONText.parse(text))
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "\"\u{01}\"", "\"\\ud800\"", "nul", "{} x", "-"])
    func refusesWhatIsNotJSON(_ text: String) {
        #expect(throws: JSONText.SyntaxError.self) { try JSONText.parse(text) }
    }

    @Test func boundsNesting() {
        #expect(throws: JSONText.SyntaxError.self) { try JSONText.parse(String(repeating: "[", count: 100_000)) }
        #expect(throws: Never.self) { try JSONText.parse(String(repeating: "[", count: 500) + String(repeating: "]", count: 500)) }
    }

    @Test func decodesCodableTypes() throws {
        let city = try JSONText.decode(City.self, from: #"{"name":"Tokyo","population":1.4e7,"tags":["big"],"mayor":null,"area":2194.07}"#)
        #expect(city == City(name: "Tokyo", population: 14_000_000, tags: ["big"], mayor: nil, area: 2194.07))
        #expect(throws: DecodingError.self) { try JSONText.decode(City.self, from: #"{"name":"Tokyo","population":1.5,"tags":[]}"#) }
        #expect(throws: DecodingError.self) { try JSONText.decode(City.self, from: #"{"name":"Tokyo","tags":[]}"#) }
        #expect(throws: DecodingError.self) { try JSONText.decode(UInt8.self, from: "300") }
        #expect(try JSONText.decode([String: [Int]].self, from: #"{"a":[1,2]}"#) == ["a": [1, 2]])
    }

    // MARK: generate(T.self, schema:prompt:)

    @Test func typedCallSendsTheSchemaAndDecodes() async throws {
        let provider = ScriptedProvider("local") { _ in
            [.text(#"{"name": "Osaka", "#), .text(#""population": 2700000, "tags": ["port"]}"#), .finish(.stop)]
        }
        let city = try await provider.generate(
            City.self, schema: Self.citySchema, prompt: "A city in Japan.", system: "Answer in JSON.",
            options: ChatOptions(temperature: 0.7, maxTokens: 200))
        #expect(city == City(name: "Osaka", population: 2_700_000, tags: ["port"], mayor: nil, area: nil))
        let asked = try #require(provider.lastRequest)
        #expect(asked.messages == [.system("Answer in JSON."), .user("A city in Japan.")])
        #expect(asked.options.temperature == 0.7 && asked.options.maxTokens == 200)
        #expect(asked.options.responseFormat == .jsonSchema(name: "City", schema: Self.citySchema, strict: true))
    }

    @Test func typedCallThroughARouterKeepsTheSchemaOnFailover() async throws {
        let cloud = ScriptedProvider("cloud") { _ in [.fail(ProviderError(.network, provider: "cloud", message: "offline"))] }
        let local = ScriptedProvider("local") { _ in [.text(#"{"name":"Kyoto","population":1,"tags":[]}"#), .finish(.stop)] }
        let router = FallbackRouter(providers: [cloud, local])
        let city = try await router.generate(City.self, schema: Self.citySchema, name: "city", prompt: "A city.")
        #expect(city.name == "Kyoto")
        #expect(local.lastRequest?.options.responseFormat == cloud.lastRequest?.options.responseFormat)
        #expect(local.lastRequest?.options.responseFormat == .jsonSchema(name: "city", schema: Self.citySchema))
    }

    @Test func typedCallErrorsAreTyped() async throws {
        func failure(_ steps: [ScriptedProvider.Step]) async -> StructuredOutputError? {
            let provider = ScriptedProvider("p") { _ in steps }
            do {
                _ = try await provider.generate(City.self, schema: Self.citySchema, prompt: "x")
                return nil
            } catch {
                return error as? StructuredOutputError
            }
        }
        #expect(await failure([.text(#"{"name": "Os"#), .finish(.length)])?.kind == .incomplete)
        #expect(await failure([.text("Sure! Here is a city."), .finish(.stop)])?.kind == .notJSON)
        let mismatch = await failure([.text(#"{"name": "Osaka", "population": "many", "tags": []}"#), .finish(.stop)])
        #expect(mismatch?.kind == .typeMismatch)
        #expect(mismatch?.message.contains("population") == true)
        #expect(mismatch?.text.contains("many") == true && mismatch?.provider == "p")
    }

    @Test func typedCallRefusesAMalformedSchemaWithoutAsking() async throws {
        let provider = ScriptedProvider("p") { _ in [.finish(.stop)] }
        await #expect {
            _ = try await provider.generate(City.self, schema: "{nope", prompt: "x")
        } throws: { error in
            (error as? ProviderError)?.code == .invalidRequest
        }
        #expect(provider.askedCount == 0)
    }

    @Test func schemaNamesComeFromTypeNames() {
        #expect(ScriptedProvider.schemaName(for: City.self) == "City")
        #expect(ScriptedProvider.schemaName(for: [Int].self) == "ArrayInt")
    }
}
