import Foundation
import HearthLocal
import HearthProviders
import HearthTestSupport
import MCP
import Testing

@testable import HearthMCP

/// An app's offline fallback gets the same MCP tools: `LocalProvider.respond(to:tools:)` with
/// an MCP tool whose schema is nested, the call forced by name. Whatever the weights (a
/// random-weight fixture), the arguments the server receives follow the schema, because the
/// local model generates them under it.
@Suite struct MCPLocalProviderTests {
    static let schema: MCP.Value = .object([
        "type": .string("object"),
        "properties": .object([
            "trip": .object([
                "type": .string("object"),
                "properties": .object([
                    "stops": .object([
                        "type": .string("array"), "minItems": .int(1), "maxItems": .int(3),
                        "items": .object([
                            "type": .string("object"),
                            "properties": .object(["h": .object(["type": .string("integer"), "minimum": .int(1), "maximum": .int(9)])]),
                            "required": .array([.string("h")]), "additionalProperties": .bool(false),
                        ]),
                    ])
                ]),
                "required": .array([.string("stops")]), "additionalProperties": .bool(false),
            ])
        ]),
        "required": .array([.string("trip")]), "additionalProperties": .bool(false),
    ])

    @Test func theLocalModelCallsAnMCPToolUnderItsSchema() async throws {
        let received = Locked<[[String: MCP.Value]]>([])
        let (_, connection) = try await MCPToolboxTests.server(
            "planner", tools: { [MCP.Tool(name: "plan", description: "Plan a trip.", inputSchema: Self.schema)] }
        ) { parameters in
            received.value.append(parameters.arguments ?? [:])
            return CallTool.Result(content: [.text(text: "PLANNED", annotations: nil, _meta: nil)])
        }
        let toolbox = MCPToolbox(configuration: MCPConfiguration(servers: []), options: MCPOptions(callTimeout: 5))
        try await toolbox.add(connection)
        let provider = LocalProvider(
            configuration: .init(modelPath: Fixtures.checkpoint("phi3-mha").path, context: 1024, threads: 2, batch: 8))
        let options = ChatOptions(temperature: 0, maxTokens: 200, toolChoice: .named("plan"))
        do {
            let answer = try await provider.respond(to: [.user("Plan a trip.")], tools: await toolbox.tools(), options: options, maxRounds: 2)
            #expect(answer.calls.first?.result == "PLANNED")
        } catch let error as ToolCallError where error.kind == .tooManyRounds {
            // Random weights may keep calling after the forced round; the first call is what counts.
        }
        let first = try #require(received.value.first, "the MCP server received no call")
        let stops = try #require(first["trip"]?.objectValue?["stops"]?.arrayValue)
        #expect((1...3).contains(stops.count))
        for stop in stops {
            let hours = try #require(stop.objectValue?["h"]?.intValue, "\(stop)")
            #expect((1...9).contains(hours))
        }
        await toolbox.shutdown()
    }
}
