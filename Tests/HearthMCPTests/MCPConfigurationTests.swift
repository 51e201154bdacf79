import Foundation
import HearthProviders
import MCP
import Testing

@testable import HearthMCP

/// The `mcpServers` file: what it accepts, what it refuses, and that secrets never show.
@Suite struct MCPConfigurationTests {
    @Test func readsStdioAndHTTPServersInOrder() throws {
        let configuration = try MCPConfiguration.parse(
            #"""
            {"mcpServers": {
              "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "env": {"TOKEN": "s3cret-value"}},
              "search": {"url": "https://mcp.example.com/mcp?key=qwerty123", "headers": {"Authorization": "Bearer abcdef123"}, "type": "http"},
              "off": {"command": "x", "disabled": true}
            }}
            """#)
        #expect(configuration.servers.map(\.name) == ["time", "search", "off"])
        #expect(
            configuration.servers[0].endpoint
                == .stdio(command: "mcp-server-time", arguments: ["--local-timezone", "UTC"], environment: ["TOKEN": "s3cret-value"]))
        guard case .http(let url, let headers) = configuration.servers[1].endpoint else {
            Issue.record("not http")
            return
        }
        #expect(url.host == "mcp.example.com")
        #expect(headers == ["Authorization": "Bearer abcdef123"])
        #expect(configuration.servers[2].disabled)
        // Descriptions name the command or host, never an env value, a header or the query.
        let shown = configuration.servers.map(\.description).joined(separator: " ")
        #expect(shown.contains("mcp-server-time") && shown.contains("mcp.example.com/mcp"))
        for secret in ["s3cret-value", "abcdef123", "qwerty123"] { #expect(!shown.contains(secret)) }
        #expect(configuration.servers[1].secrets.contains("key=qwerty123"))
    }

    @Test(arguments: [
        (#"[]"#, "JSON object"),
        (#"{"servers2": {}}"#, "no \"mcpServers\""),
        (#"{"mcpServers": {"a": {}}}"#, "needs \"command\""),
        (#"{"mcpServers": {"a": {"command": "x", "url": "http://h/"}}}"#, "both"),
        (#"{"mcpServers": {"a": {"command": "x", "bogus": 1}}}"#, "unknown key \"bogus\""),
        (#"{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}"#, "\"env\".K must be a string"),
        (#"{"mcpServers": {"a": {"url": "file:///etc/passwd"}}}"#, "http or https"),
        (#"{"mcpServers": {"a": {"url": "http://h/", "env": {}}}}"#, "go with \"command\""),
        (#"{"mcpServers": {"a b": {"command": "x"}}}"#, "without spaces"),
        (#"{"mcpServers": "#, "not valid JSON"),
    ])
    func refusesMalformedFiles(text: String, expected: String) {
        do {
            _ = try MCPConfiguration.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.kind == .invalidConfiguration)
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }

    @Test func aMissingFileNamesOnlyItsLastComponent() {
        do {
            _ = try MCPConfiguration.load(contentsOf: URL(fileURLWithPath: "/nonexistent/dir/mcp.json"))
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.message.contains("mcp.json") && !error.message.contains("/nonexistent"))
        }
    }
}

/// Values between the SDK, Hearth's JSON and the model's text.
@Suite struct MCPValuesTests {
    @Test func argumentsKeepNestedStructureAndNumberKinds() throws {
        let values = try MCPValues.arguments(#"{"trip": {"city": "Oslo", "stops": [{"name": "a", "hours": 2}, {"name": "b", "hours": 1.5}]}, "n": null}"#, tool: "t", server: nil)
        #expect(
            values == [
                "trip": .object([
                    "city": .string("Oslo"),
                    "stops": .array([.object(["name": .string("a"), "hours": .int(2)]), .object(["name": .string("b"), "hours": .double(1.5)])]),
                ]),
                "n": .null,
            ])
        #expect(try MCPValues.arguments("  ", tool: "t", server: nil).isEmpty)
        #expect(throws: MCPServerError.self) { try MCPValues.arguments("[1]", tool: "t", server: nil) }
        #expect(throws: MCPServerError.self) { try MCPValues.arguments("{", tool: "t", server: nil) }
    }

    /// The path `respond(to:tools:)` takes: the FunctionTool protocol decodes `Arguments` with
    /// HearthProviders' own JSON decoder, whose unkeyed container advances even on a failed decode.
    @Test func toolArgumentsDecodeThroughHearthsDecoder() throws {
        let decoded = try JSONText.decode(MCPToolArguments.self, from: #"{"a": [1, "x", true, null, [2.5], {"b": {}}], "c": -3}"#)
        #expect(
            decoded.values == [
                "a": .array([.int(1), .string("x"), .bool(true), .null, .array([.double(2.5)]), .object(["b": .object([:])])]),
                "c": .int(-3),
            ])
        #expect(throws: (any Error).self) { try JSONText.decode(MCPToolArguments.self, from: "[1]") }
    }

    @Test func parametersAreAnObjectSchemaWithSortedKeys() throws {
        let schema = MCP.Value.object(["properties": .object(["b": .object(["type": .string("integer")]), "a": .object([:])])])
        #expect(MCPValues.parameters(schema) == #"{"properties":{"a":{},"b":{"type":"integer"}},"type":"object"}"#)
        #expect(MCPValues.parameters(.string("x")) == ToolDefinition.noParameters)
    }

    @Test func resultTextPrefersTextThenStructuredContentAndIsCut() {
        let text = CallTool.Result(content: [.text(text: "one", annotations: nil, _meta: nil), .image(data: "AAAA", mimeType: "image/png", annotations: nil, _meta: nil)])
        #expect(MCPValues.text(of: text, limit: 100) == "one\n[an image (image/png) the model cannot see]")
        let structured = CallTool.Result(content: [], structuredContent: .object(["t": .int(1)]))
        #expect(MCPValues.text(of: structured, limit: 100) == #"{"t":1}"#)
        #expect(MCPValues.text(of: CallTool.Result(), limit: 100) == "(no content)")
        let long = CallTool.Result(content: [.text(text: String(repeating: "x", count: 50), annotations: nil, _meta: nil)])
        #expect(MCPValues.text(of: long, limit: 10) == String(repeating: "x", count: 10) + "\n[cut at 10 characters]")
    }

    @Test func sseBodiesYieldTheirDataAndGarbageIsNotJSON() {
        let body = Data("event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\nevent: message\ndata: {\"a\":\ndata: 1}\n\n".utf8)
        let messages = MCPCheckedTransport.messages(in: body).map { String(decoding: $0, as: UTF8.self) }
        #expect(messages == [#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "{\"a\":\n1}"])
        #expect(MCPCheckedTransport.messages(in: Data("{\"x\":1}".utf8)).count == 1)
        #expect(MCPCheckedTransport.isJSONMessage(Data("{\"x\":1}".utf8)))
        #expect(!MCPCheckedTransport.isJSONMessage(Data("Starting server on port 8000".utf8)))
        #expect(!MCPCheckedTransport.isJSONMessage(Data("{not json".utf8)))
    }
}
