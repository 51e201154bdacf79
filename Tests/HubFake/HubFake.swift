import ArgumentParser
import Foundation
import HearthFakeServers

/// `hub-fake`: the fake Hugging Face hub (``FakeHub``) as a program, for scripts/check-hub.sh
/// (huggingface_hub pointed at it with HF_ENDPOINT) and the CLI tests. Prints its endpoint on
/// the first line, then one line per request it served.
@main
struct HubFake: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub-fake", abstract: "A fake Hugging Face hub on loopback serving directories as model repositories.")

    @Option(name: .long, help: "A repository: ORG/NAME=DIRECTORY (repeatable).")
    var repo: [String] = []

    @Option(name: .long, help: "Make a repository gated: ORG/NAME=TOKEN (requests without `Authorization: Bearer TOKEN` get 401 GatedRepo).")
    var gated: [String] = []

    @Option(name: .long, help: "TCP port on 127.0.0.1 (0 picks a free one).")
    var port: Int = 0

    func run() async throws {
        func pairs(_ values: [String], _ flag: String) throws -> [(String, String)] {
            try values.map { value in
                guard let eq = value.firstIndex(of: "=") else { throw ValidationError("\(flag) takes ORG/NAME=VALUE, got \(value)") }
                return (String(value[..<eq]), String(value[value.index(after: eq)...]))
            }
        }
        var repositories: [String: URL] = [:]
        for (id, dir) in try pairs(repo, "--repo") { repositories[id] = URL(fileURLWithPath: dir) }
        let tokens = Dictionary(try pairs(gated, "--gated"), uniquingKeysWith: { _, b in b })
        let hub = try await FakeHub.start(repositories: repositories, gated: tokens, port: port)
        FileHandle.standardOutput.write(Data((hub.endpoint + "\n").utf8))
        var reported = 0
        while true {
            try await Task.sleep(for: .milliseconds(100))
            let requests = hub.requests
            while reported < requests.count {
                let request = requests[reported]
                let auth = request.headers.first(name: "authorization") == nil ? "no" : "yes"
                let line = "\(request.method) \(request.uri) range=\(request.headers.first(name: "range") ?? "-") auth=\(auth)\n"
                FileHandle.standardOutput.write(Data(line.utf8))
                reported += 1
            }
        }
    }
}
