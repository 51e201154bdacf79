// The ten-line app (issue 64): a model by name, a streamed reply, a typed value, a typed tool.
// The types are in Types.swift. Run: swift run hearth-ten-line-app [model name or path]
import HearthLocal
import HearthMacros

let model = try await LocalProvider.load(CommandLine.arguments.dropFirst().first ?? "gemma-3-270m-q4_k_m")
let session = ChatSession(provider: model, instructions: "You are a brief travel guide.", tools: [WeatherTool()], options: ChatOptions(temperature: 0, maxTokens: 40))
for try await case .textDelta(let text) in session.streamResponse(to: "Greet a traveller in one sentence.") { print(text, terminator: "") }
let city = try await session.respond(to: "Name a famous city in Italy.", generating: City.self)
print("\nCity: \(city.name), \(city.country), population \(city.population)")
let answer = try await session.respond(to: "What is the weather in \(city.name)?", options: ChatOptions(temperature: 0, maxTokens: 40, toolChoice: .named("get_weather")))
print("Tool: \(answer.toolCalls.map(\.result).joined(separator: "; "))\nAnswer: \(answer.text)")
