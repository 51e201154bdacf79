import HearthMacros

/// What `respond(to:generating:)` asks the model for: the schema comes from the declaration.
@Structured struct City: Codable {
    @SchemaGuide("The city's name") var name: String
    @SchemaGuide("The country it is in") var country: String
    @SchemaGuide(range: 1...40_000_000) var population: Int
}

/// A tool with typed arguments: its parameters' schema comes from `Arguments`.
struct WeatherTool: FunctionTool {
    @Structured struct Arguments: Codable {
        @SchemaGuide("A city name") var city: String
    }
    let name = "get_weather"
    let description = "The current weather in a city."
    func call(arguments: Arguments) async throws -> String { "18 °C and sunny in \(arguments.city)" }
}
