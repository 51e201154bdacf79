import Foundation
import HearthLocal
import Testing

@testable import HearthServer

/// Several local models in one server: each a route of its own, and gateway `local` routes
/// naming one by `model` (the served models' names), checked when the gateway is built.
@Suite struct ServedModelsTests {
    func provider(_ name: String) -> LocalProvider {
        LocalProvider(configuration: .init(modelPath: "/nonexistent/\(name).gguf"))  // never loaded here
    }

    @Test func plainServerRoutesEveryModelByName() {
        let a = provider("a"), b = provider("b"), c = provider("c")
        let gateway = Gateway.plain(alias: "a", apiKey: nil, local: a, others: ["b": b, "c": c])
        #expect(gateway.routeNames == ["a", "b", "c"])
        for (name, expected) in [("a", a), ("b", b), ("c", c)] {
            guard case .local(let served)? = gateway.routes[name]?.target else {
                Issue.record("\(name) is not a local route")
                continue
            }
            #expect(served === expected)
        }
    }

    @Test func gatewayLocalRoutesNameServedModels() throws {
        let a = provider("a"), b = provider("b")
        let database = "served-models-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent(database)) }
        let clients = #""clients": [{"name": "app", "key_sha256": "0000000000000000000000000000000000000000000000000000000000000000"}], "usage_db": ""#
            + database + "\""
        let config = "{" + clients + #", "models": {"small": {"provider": "local", "model": "b"}, "default": {"provider": "local"}}}"#
        let directory = FileManager.default.temporaryDirectory
        let configuration = try GatewayConfiguration.parse(Data(config.utf8), directory: directory, environment: [:])
        let gateway = try Gateway(configuration: configuration, local: a, localModels: ["a": a, "b": b], environment: [:])
        guard case .local(let small)? = gateway.routes["small"]?.target, case .local(let fallback)? = gateway.routes["default"]?.target else {
            Issue.record("local routes expected")
            return
        }
        #expect(small === b && fallback === a)

        let unknown = "{" + clients + #", "models": {"small": {"provider": "local", "model": "phi4-mini"}}}"#
        let error = #expect(throws: GatewayConfigurationError.self) {
            try Gateway(
                configuration: try GatewayConfiguration.parse(Data(unknown.utf8), directory: directory, environment: [:]),
                local: a, localModels: ["a": a, "b": b], environment: [:])
        }
        #expect(error?.key == "models.small.model" && error?.message.contains("phi4-mini") == true && error?.message.contains("a, b") == true)
    }
}
