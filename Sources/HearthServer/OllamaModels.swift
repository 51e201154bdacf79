import Crypto
import Foundation
import HearthLocal
import HTTPTypes
import Hummingbird
import NIOCore

/// Where `/api/pull` fetches models and `/api/delete` removes them: `hearth serve` passes the
/// Hugging Face hub cache (through Hearth's hub client, as `hearth pull` and `hearth rm` use
/// it); without one, both routes answer 501.
public protocol ModelStore: Sendable {
    /// Downloads `name` (`ORG/REPO[:QUANT]` or a short name) into the store, verified, calling
    /// `progress` as files start, advance and finish.
    /// - Throws: ``ModelStoreError`` (its message is safe to show a client).
    func pull(_ name: String, progress: @escaping @Sendable (ModelStoreProgress) -> Void) async throws
    /// Removes `name` from the store.
    /// - Returns: false when the store does not have it.
    /// - Throws: ``ModelStoreError``.
    func delete(_ name: String) throws -> Bool
}

/// One step of a pull, as Ollama streams it: a file (its digest) with bytes done of total.
public struct ModelStoreProgress: Sendable, Equatable {
    /// A file of the model (its name in the repository).
    public var file: String
    /// Bytes of the file on disk.
    public var completed: Int64
    /// The file's size in bytes.
    public var total: Int64

    /// Creates a progress step.
    public init(file: String, completed: Int64, total: Int64) {
        self.file = file
        self.completed = completed
        self.total = total
    }
}

/// A store's failure, worded for the client (never a path or a token).
public struct ModelStoreError: Error, Sendable, CustomStringConvertible {
    /// HTTP status: 404 for a model the hub does not have, 400 for a bad name, 502 for the hub failing.
    public var status: Int
    /// What happened and what to do.
    public var message: String

    /// Creates an error.
    public init(status: Int, message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { message }
}

/// Bounds the pulls one server runs at once (each holds a connection to the hub and writes to disk).
final class OllamaPullGate: @unchecked Sendable {
    // `@unchecked Sendable`: `running` is only touched under `lock`.
    static let shared = OllamaPullGate()
    /// Pulls in flight at most; more are refused with 503.
    static let limit = 2
    private let lock = NSLock()
    private var running = 0

    func enter() -> Bool {
        lock.withLock {
            guard running < Self.limit else { return false }
            running += 1
            return true
        }
    }

    func leave() { lock.withLock { running -= 1 } }
}

extension HearthServer {
    /// What Ollama's listings say about a served model.
    struct OllamaModelFacts {
        var name: String
        var size: Int64 = 0
        var digest: String
        var modified = Date()
        var format = "gguf"
        var family = "unknown"
        var parameterSize = ""
        var quant = ""
        var context: Int?
        var loaded = false
        var local = false

        var details: JSONValue {
            [
                "parent_model": "", "format": .string(format), "family": .string(family), "families": [.string(family)],
                "parameter_size": .string(parameterSize), "quantization_level": .string(quant),
            ]
        }
    }

    /// The facts of a served model (a local one from its file and, once loaded, the model itself).
    func ollamaFacts(_ name: String) -> OllamaModelFacts {
        var facts = OllamaModelFacts(name: name, digest: Self.digest(name))
        guard let route = gateway.routes[name] else { return facts }
        guard case .local(let provider) = route.target else {
            facts.format = "cloud"
            facts.family = "cloud"
            return facts
        }
        facts.local = true
        let path = provider.configuration.modelPath
        let url = URL(fileURLWithPath: path)
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? NSNumber, (attributes?[.type] as? FileAttributeType) != .typeDirectory {
            facts.size = size.int64Value
        } else if let entries = try? FileManager.default.contentsOfDirectory(atPath: path) {
            facts.size = entries.reduce(Int64(0)) { total, entry in
                let item = (try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent(entry).path))?[.size] as? NSNumber
                return total + (item?.int64Value ?? 0)
            }
            facts.format = "safetensors"
        }
        if let modified = attributes?[.modificationDate] as? Date { facts.modified = modified }
        facts.digest = Self.digest("\(name)|\(url.lastPathComponent)|\(facts.size)|\(facts.modified.timeIntervalSince1970)")
        if url.pathExtension.lowercased() == "hqf" { facts.format = "hqf" }
        let file = url.deletingPathExtension().lastPathComponent
        facts.family = file.split(separator: "-").first.map { String($0).lowercased() } ?? "unknown"
        facts.quant = Self.firstMatch(file, #"(?i)(iq\d_[a-z]+|q\d_k(_[sml])?|q\d_\d|bf16|f16|f32)"#)?.uppercased() ?? ""
        facts.parameterSize = Self.firstMatch(file, #"(?i)(?<![a-z0-9])\d+(\.\d+)?[mb](?![a-z])"#)?.uppercased() ?? ""
        if let summary = provider.loadedModelSummary {
            facts.loaded = true
            let parts = summary.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if let architecture = parts.first { facts.family = architecture.lowercased() }
            if let parameters = parts.last, parameters.hasSuffix("parameters") {
                facts.parameterSize = parameters.replacingOccurrences(of: " parameters", with: "")
            }
        }
        facts.context = provider.loadedContext ?? provider.configuration.context
        return facts
    }

    static func firstMatch(_ text: String, _ pattern: String) -> String? {
        guard let regex = try? NSRegularExpression(pattern: pattern),
            let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
            let range = Range(match.range, in: text)
        else { return nil }
        return String(text[range])
    }

    /// A stable 64-hex-digit id for a model (Ollama lists a sha256 digest).
    static func digest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// `GET /api/tags`: the models the caller may use.
    func ollamaTags(_ context: ServerRequestContext) -> Response {
        let client = (context.caller ?? GatewayAuthenticator.anonymous).client
        let models: [JSONValue] = gateway.allowed(client).map { name in
            let facts = ollamaFacts(name)
            return [
                "name": .string(name), "model": .string(name), "modified_at": .string(OllamaReply.timestamp(facts.modified)),
                "size": .number(Double(facts.size)), "digest": .string(facts.digest), "details": facts.details,
            ]
        }
        return Self.json(200, ["models": .array(models)])
    }

    /// `GET /api/ps`: the local models in memory now.
    func ollamaPS(_ context: ServerRequestContext) -> Response {
        let client = (context.caller ?? GatewayAuthenticator.anonymous).client
        let expires = OllamaReply.timestamp(Date().addingTimeInterval(365 * 86400))
        let models: [JSONValue] = gateway.allowed(client).compactMap { name in
            let facts = ollamaFacts(name)
            guard facts.local, facts.loaded else { return nil }
            return [
                "name": .string(name), "model": .string(name), "size": .number(Double(facts.size)), "digest": .string(facts.digest),
                "details": facts.details, "expires_at": .string(expires), "size_vram": 0, "context_length": .int(facts.context ?? 0),
            ]
        }
        return Self.json(200, ["models": .array(models)])
    }

    /// The `model` (or legacy `name`) of a model-management request.
    static func ollamaModelName(_ body: Data) throws -> String {
        let value = try ollamaBody(body)
        guard case .object(let pairs) = value else { throw OllamaError.invalid("invalid request body") }
        let f = OllamaObject(pairs, prefix: "")
        guard let name = try f.string("model") ?? f.string("name"), !name.isEmpty else { throw OllamaError.invalid("model is required") }
        return name
    }

    /// `POST /api/show`: a served model's details, parameters and capabilities.
    func ollamaShow(_ context: ServerRequestContext) async -> Response {
        let client = (context.caller ?? GatewayAuthenticator.anonymous).client
        let name: String
        do { name = try Self.ollamaModelName(context.body) } catch let error as OllamaError { return error.response } catch {
            return Self.ollamaError(400, "invalid request body")
        }
        guard gateway.routes[name] != nil, gateway.allowed(client).contains(name) else {
            return Self.ollamaError(404, "model '\(name.prefix(200))' not found")
        }
        let facts = ollamaFacts(name)
        var info: [(String, JSONValue)] = [("general.architecture", .string(facts.family))]
        if let context = facts.context { info.append(("\(facts.family).context_length", .int(context))) }
        var capabilities: [JSONValue] = ["completion"]
        if facts.local { capabilities += ["tools", "embedding"] }
        return Self.json(
            200,
            [
                "modelfile": .string("# served by hearth serve\nFROM \(name)\n"), "parameters": "", "template": "",
                "details": facts.details, "model_info": .object(info), "capabilities": .array(capabilities),
                "modified_at": .string(OllamaReply.timestamp(facts.modified)), "license": "",
            ])
    }

    /// `POST /api/embed` and the legacy `POST /api/embeddings`: run as `/v1/embeddings`.
    func ollamaEmbed(_ request: Request, _ context: ServerRequestContext, legacy: Bool) async -> Response {
        let started = ContinuousClock.now
        var inner = context
        let model: String
        do {
            let value = try Self.ollamaBody(context.body)
            guard case .object(let pairs) = value else { throw OllamaError.invalid("invalid request body") }
            let f = OllamaObject(pairs, prefix: "")
            guard let name = try f.string("model"), !name.isEmpty else { throw OllamaError.invalid("model is required") }
            model = name
            var out: [(String, JSONValue)] = [("model", .string(name))]
            if legacy {
                guard let prompt = try f.string("prompt"), !prompt.isEmpty else {
                    // Ollama answers an empty prompt with an empty embedding.
                    return Self.json(200, ["embedding": []])
                }
                out.append(("input", .string(prompt)))
            } else {
                switch f.value("input") {
                case .string(let text)?: out.append(("input", .string(text)))
                case .array(let items)?:
                    guard items.allSatisfy({ if case .string = $0 { true } else { false } }) else {
                        throw OllamaError.invalid("input must be a string or a list of strings")
                    }
                    if items.isEmpty { return Self.json(200, ["model": .string(name), "embeddings": []]) }
                    out.append(("input", .array(items)))
                default: throw OllamaError.invalid("input is required: a string or a list of strings")
                }
                if let dimensions = try f.int("dimensions") { out.append(("dimensions", .int(dimensions))) }
                _ = try f.bool("truncate")  // a hint: inputs past the context are refused rather than cut
            }
            if let options = f.value("options"), options != .null {
                guard case .object = options else { throw OllamaError.invalid("options must be an object") }
            }
            inner.body = JSONValue.object(out).serialized()
        } catch let error as OllamaError {
            return error.response
        } catch {
            return Self.ollamaError(400, "invalid request body")
        }
        let response: Response
        do { response = try await embeddings(inner) } catch { return Self.ollamaErrorResponse(Self.gatewayAPIError(error)) }
        let data = await Self.collect(response.body)
        guard response.status == .ok, let value = try? RequestParser.json(data), case .array(let items)? = value["data"] else {
            return Self.ollamaError(
                response.status == .ok ? 500 : Int(response.status.code), OllamaTranslation.errorMessage(data) ?? "embedding failed")
        }
        let vectors = items.map { $0["embedding"] ?? [] }
        var headers = HTTPFields()
        if let served = HTTPField.Name("x-hearth-served-by"), let value = response.headers[served] { headers[served] = value }
        if legacy { return Self.json(200, ["embedding": vectors.first ?? []], headers: headers) }
        let tokens = value["usage"]?["prompt_tokens"] ?? 0
        let elapsed = ContinuousClock.now - started
        let ns = Int(elapsed.components.seconds) * 1_000_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000)
        return Self.json(
            200,
            [
                "model": .string(model), "embeddings": .array(vectors), "total_duration": .int(ns), "load_duration": 0,
                "prompt_eval_count": tokens,
            ], headers: headers)
    }

    /// Pull and delete write to the server's disk: with `--config`, only admin clients may.
    func ollamaMayManage(_ context: ServerRequestContext) -> Response? {
        let client = (context.caller ?? GatewayAuthenticator.anonymous).client
        guard !configured || client.admin else { return Self.ollamaError(403, "only an admin key may pull or delete models on this server") }
        guard options.modelStore != nil else { return Self.ollamaError(501, "this server has no model store to pull into or delete from") }
        return nil
    }

    /// `POST /api/pull`: the model fetched through Hearth's hub client into the hub cache
    /// (where `hearth serve --model ORG/REPO:QUANT` finds it); progress streamed as Ollama
    /// streams it (`pulling manifest`, `pulling <digest>` with total/completed, `verifying sha256
    /// digest`, `writing manifest`, `success`).
    func ollamaPull(_ context: ServerRequestContext) async -> Response {
        if let refusal = ollamaMayManage(context) { return refusal }
        let name: String
        let stream: Bool
        do {
            name = try Self.ollamaModelName(context.body)
            guard case .object(let pairs) = try Self.ollamaBody(context.body) else { throw OllamaError.invalid("invalid request body") }
            let f = OllamaObject(pairs, prefix: "")
            stream = try f.bool("stream") ?? true
            if try f.bool("insecure") == true { throw OllamaError.invalid("insecure: this server verifies every file it pulls") }
        } catch let error as OllamaError {
            return error.response
        } catch {
            return Self.ollamaError(400, "invalid request body")
        }
        guard let store = options.modelStore else { return Self.ollamaError(501, "no model store") }
        guard OllamaPullGate.shared.enter() else {
            return Self.ollamaError(503, "\(OllamaPullGate.limit) pulls are running on this server; retry when one has finished")
        }
        let (steps, sink) = AsyncStream<JSONValue>.makeStream()
        let work = Task {
            defer { OllamaPullGate.shared.leave() }
            sink.yield(["status": "pulling manifest"])
            do {
                try await store.pull(name) { step in
                    sink.yield([
                        "status": .string("pulling \(Self.digest(step.file).prefix(12))"), "digest": .string("sha256:\(Self.digest(step.file))"),
                        "total": .number(Double(step.total)), "completed": .number(Double(step.completed)),
                    ])
                }
                for status in ["verifying sha256 digest", "writing manifest", "success"] { sink.yield(["status": .string(status)]) }
            } catch let error as ModelStoreError {
                sink.yield(["error": .string(error.message), "status_code": .int(error.status)])
            } catch {
                sink.yield(["error": "the pull failed", "status_code": 500])
            }
            sink.finish()
        }
        guard stream else {
            var last: JSONValue = ["status": "success"]
            for await step in steps { last = step }
            if case .string(let message)? = last["error"] {
                let status: Int = if let code = last["status_code"]?.doubleValue { Int(code) } else { 500 }
                return Self.ollamaError(status, message)
            }
            return Self.json(200, ["status": "success"])
        }
        return Response(
            status: .ok, headers: [.contentType: "application/x-ndjson"],
            body: ResponseBody { writer in
                do {
                    for await step in steps {
                        var buffer = ByteBuffer()
                        var line = step
                        if case .object(let pairs) = step { line = .object(pairs.filter { $0.0 != "status_code" }) }
                        Self.appendLine(line, to: &buffer)
                        try await writer.write(buffer)
                    }
                    try await writer.finish(nil)
                } catch {
                    work.cancel()
                }
            })
    }

    /// `DELETE /api/delete`: the model removed from the hub cache.
    func ollamaDelete(_ context: ServerRequestContext) async -> Response {
        if let refusal = ollamaMayManage(context) { return refusal }
        let name: String
        do { name = try Self.ollamaModelName(context.body) } catch let error as OllamaError { return error.response } catch {
            return Self.ollamaError(400, "invalid request body")
        }
        guard let store = options.modelStore else { return Self.ollamaError(501, "no model store") }
        do {
            guard try store.delete(name) else { return Self.ollamaError(404, "model '\(name.prefix(200))' not found") }
            return Response(status: .ok)
        } catch let error as ModelStoreError {
            return Self.ollamaError(error.status, error.message)
        } catch {
            return Self.ollamaError(500, "the model could not be deleted")
        }
    }
}
