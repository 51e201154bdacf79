import ArgumentParser
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The commands ollama users type: `run` (pull if needed, then chat), `show` (a model by name
// described) and `ps` (what a running server has loaded).

/// `hearth run NAME [PROMPT] [OPTIONS…]`: ollama's `run`.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Chat with a model by name, pulling it first if it is not here (ollama's run); with a prompt, answer it once and exit.",
        discussion: """
            hearth run phi4-mini starts `hearth chat --model phi4-mini`; hearth run phi4-mini "Why is the sky \
            blue?" -n 64 runs `hearth generate`. Options after the name (and prompt) go to chat or generate.
            """)

    @Argument(help: "The model: a short name from the registry, ORG/REPO[:QUANT] (pulled into the hub cache if missing), or a path.")
    var model: String

    @Argument(
        parsing: .captureForPassthrough,
        help: "A prompt to answer once instead of chatting, then options for chat or generate (e.g. -n 64, --temperature 0).")
    var rest: [String] = []

    /// The prompt (the first word after the name, unless it is an option) and the options.
    var split: (prompt: String?, options: [String]) {
        guard let first = rest.first, !first.hasPrefix("-") else { return (nil, rest) }
        return (first, Array(rest.dropFirst()))
    }

    func run() throws {
        let (prompt, options) = split
        if let prompt {
            var generate = try Generate.parse(["--model", model, prompt] + options)
            try generate.run()
        } else {
            var chat = try Chat.parse(["--model", model] + options)
            try chat.run()
        }
    }
}

/// `hearth show NAME`: `inspect` for a model given by name, as ollama's `show`.
struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Describe a model given by name or path (inspect's sibling, as ollama's show), pulling it first if it is not here.")

    @Argument(help: "The model: a short name from the registry, ORG/REPO[:QUANT] or a path.")
    var model: String

    @Flag(name: .long, help: "Print one JSON object (inspect's keys) instead of text.")
    var json = false

    func run() throws {
        var inspect = try Inspect.parse(["--model", model] + (json ? ["--json"] : []))
        try inspect.run()
    }
}

/// `hearth ps`: the models a running `hearth serve` has in memory (its `GET /api/ps`).
struct PS: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ps",
        abstract: "List the models a running hearth serve has loaded (name, size, context), as ollama's ps.")

    @Option(name: .long, help: "The server's address (default: http://$HEARTH_HOST:$HEARTH_PORT, else http://127.0.0.1:8080).")
    var url: String?

    @Flag(name: .long, help: "Print the server's answer as JSON.")
    var json = false

    /// The server's base URL.
    var base: String {
        if let url { return url.hasSuffix("/") ? String(url.dropLast()) : url }
        let environment = ProcessInfo.processInfo.environment
        let host = environment["HEARTH_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1"
        let port = environment["HEARTH_PORT"].flatMap { $0.isEmpty ? nil : $0 } ?? "8080"
        return "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    func run() throws {
        try reportingErrors {
            guard let url = URL(string: base + "/api/ps"), url.scheme == "http" || url.scheme == "https" else {
                throw ValidationError("--url must be an http(s) URL")
            }
            var request = URLRequest(url: url, timeoutInterval: 10)
            if let key = ProcessInfo.processInfo.environment["HEARTH_API_KEY"], !key.isEmpty {
                request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
            }
            let (data, response): (Data, URLResponse)
            let prepared = request
            do { (data, response) = try blocking { try await URLSession.shared.data(for: prepared) } } catch {
                throw ValidationError("no hearth serve answered at \(base) (\(error.localizedDescription)); give --url")
            }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard status == 200 else {
                throw ValidationError("\(base)/api/ps answered HTTP \(status)\(status == 401 ? " (set HEARTH_API_KEY)" : "")")
            }
            struct Answer: Decodable {
                struct Model: Decodable { let name: String, size: Int64?, context_length: Int? }
                let models: [Model]
            }
            guard let answer = try? JSONDecoder().decode(Answer.self, from: data) else {
                throw ValidationError("\(base)/api/ps did not answer with a list of models")
            }
            if json {
                emit(String(decoding: data, as: UTF8.self) + "\n")
                return
            }
            let rows = [("NAME", "SIZE", "CONTEXT")] + answer.models.map { model in
                (model.name, model.size.map { ByteCountFormatter.string(fromByteCount: $0, countStyle: .file) } ?? "-",
                 model.context_length.map(String.init) ?? "-")
            }
            let width = rows.map(\.0.count).max() ?? 4
            for row in rows {
                emit(row.0.padding(toLength: width + 3, withPad: " ", startingAt: 0) + row.1.padding(toLength: 12, withPad: " ", startingAt: 0) + row.2 + "\n")
            }
        }
    }
}
