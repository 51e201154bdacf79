import Crypto
import Foundation

/// A configuration problem: which file, which key, what is wrong and what to do.
///
/// Messages name keys and environment variables, never their values: a key, secret or token
/// in the file or the environment never appears in an error.
public struct GatewayConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The configuration file (empty when the configuration was given as data).
    public var file: String
    /// The key path at fault, such as `clients[1].key_env` (empty for the whole file).
    public var key: String
    /// What is wrong and how to fix it.
    public var message: String

    /// Creates an error.
    public init(file: String, key: String, message: String) {
        self.file = file
        self.key = key
        self.message = message
    }

    /// `FILE: KEY: MESSAGE`.
    public var description: String {
        [file, key, message].filter { !$0.isEmpty }.joined(separator: ": ")
    }
}

/// A secret held in memory (an HMAC key, a token-signing key). It prints as `<redacted>`, so
/// it cannot reach a log or an error by string interpolation.
public struct GatewaySecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret's bytes.
    let bytes: [UInt8]

    /// Wraps a secret's text (UTF-8).
    public init(_ text: String) { bytes = Array(text.utf8) }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }
    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }
    /// No children, so `dump` shows nothing either.
    public var customMirror: Mirror { Mirror(self, children: []) }

    var key: SymmetricKey { SymmetricKey(data: bytes) }
}

/// The gateway's settings, as read from `hearth serve --config FILE` (docs/SERVER.md#gateway).
///
/// Secrets are never in the file: client keys are stored as their SHA-256 (`key_sha256`) or
/// read from an environment variable (`key_env`), HMAC secrets and the token-signing key come
/// from environment variables, and cloud providers read their keys from the server's
/// environment (`OPENAI_API_KEY`, …).
public struct GatewayConfiguration: Sendable {
    /// An app or person allowed to call the server.
    public struct Client: Sendable {
        /// The client's name (usage records, logs, `GET /v1/usage`).
        public var name: String
        /// SHA-256 of the client's API key.
        public var keyDigest: [UInt8]
        /// When set, every request must carry `x-timestamp` and `x-signature` made with this secret.
        public var hmacSecret: GatewaySecret?
        /// Requests per minute (sliding 60-second window); nil = unlimited.
        public var requestsPerMinute: Int?
        /// Prompt plus completion tokens per UTC day; nil = unlimited.
        public var tokensPerDay: Int?
        /// The model routes this client may use; nil = all.
        public var models: [String]?
        /// Admins see every client's usage.
        public var admin: Bool
        /// Generation requests of this client in flight at once; nil = no limit beyond the pools'.
        public var maxInFlight: Int?
        /// The largest `max_tokens` this client may ask for (and the reply length assumed when it
        /// asks for none); nil = the route's own limit.
        public var maxTokens: Int?

        /// Creates a client.
        public init(
            name: String, keyDigest: [UInt8], hmacSecret: GatewaySecret? = nil, requestsPerMinute: Int? = nil,
            tokensPerDay: Int? = nil, models: [String]? = nil, admin: Bool = false, maxInFlight: Int? = nil, maxTokens: Int? = nil
        ) {
            self.maxInFlight = maxInFlight
            self.maxTokens = maxTokens
            self.name = name
            self.keyDigest = keyDigest
            self.hmacSecret = hmacSecret
            self.requestsPerMinute = requestsPerMinute
            self.tokensPerDay = tokensPerDay
            self.models = models
            self.admin = admin
        }
    }

    /// Which provider answers a model route.
    public enum ProviderKind: String, Sendable, CaseIterable {
        /// The model `hearth serve` loaded.
        case local
        /// OpenAI (`OPENAI_API_KEY`, `OPENAI_BASE_URL`).
        case openai
        /// OpenAI's Responses API (`OPENAI_API_KEY`, `OPENAI_BASE_URL`): reasoning items with
        /// summaries and encrypted content, sent back on the next turn (docs/REASONING.md).
        case openaiResponses = "openai-responses"
        /// Anthropic (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`).
        case anthropic
        /// DeepSeek (`DEEPSEEK_API_KEY`).
        case deepseek
        /// Qwen in DashScope's OpenAI-compatible mode (`DASHSCOPE_API_KEY`).
        case qwen
        /// DashScope's native API (`DASHSCOPE_API_KEY`, `DASHSCOPE_HTTP_BASE_URL`).
        case dashscope
        /// iFlytek Spark (`SPARK_APP_ID`, `SPARK_API_KEY`, `SPARK_API_SECRET`, `SPARK_URL`).
        case spark
    }

    /// A public model name and what serves it.
    public struct Route: Sendable {
        /// The name clients put in `model`.
        public var name: String
        /// The provider that answers first.
        public var provider: ProviderKind
        /// The upstream model name (cloud providers; default: the provider's own default).
        public var model: String?
        /// Routes (by name) whose providers answer, in order, when this one fails.
        public var fallback: [String]
        /// Seconds an upstream may stay silent before the route fails over (cloud providers).
        public var timeoutSeconds: Double
        /// Attempts at the upstream before failing over (1 = no retry).
        public var attempts: Int

        /// Creates a route.
        public init(
            name: String, provider: ProviderKind, model: String? = nil, fallback: [String] = [], timeoutSeconds: Double = 30,
            attempts: Int = 1
        ) {
            self.name = name
            self.provider = provider
            self.model = model
            self.fallback = fallback
            self.timeoutSeconds = timeoutSeconds
            self.attempts = attempts
        }
    }

    /// The exact-match response cache.
    public struct Cache: Sendable {
        /// Seconds an answer stays valid.
        public var ttlSeconds: Double
        /// Answers kept at most (least recently used go first).
        public var maxEntries: Int
        /// Bytes of answer text kept at most (least recently used go first).
        public var maxBytes: Int
        /// One cache for every client; by default each client has its own, so a hit never tells
        /// one client what another asked.
        public var shared: Bool

        /// Creates cache settings.
        public init(ttlSeconds: Double = 3600, maxEntries: Int = 1000, maxBytes: Int = 64 << 20, shared: Bool = false) {
            self.ttlSeconds = ttlSeconds
            self.maxEntries = maxEntries
            self.maxBytes = maxBytes
            self.shared = shared
        }
    }

    /// Clients, in file order.
    public var clients: [Client]
    /// Model routes by public name.
    public var routes: [String: Route]
    /// The response cache; nil = off.
    public var cache: Cache?
    /// The content filter; nil = off.
    public var contentFilter: ContentFilter?
    /// The SQLite file for usage records; nil = kept in memory only.
    public var usageDatabase: String?
    /// Days of per-request usage rows kept (the daily totals are kept forever); nil = all.
    public var usageRetentionDays: Int?
    /// Origins browsers may call from (`*` for any); empty = no CORS headers.
    public var corsOrigins: [String]
    /// Lifetime of tokens from `POST /v1/auth/token`, in seconds.
    public var tokenTTLSeconds: Int
    /// How far `x-timestamp` may be from the server's clock, in seconds.
    public var signatureWindowSeconds: Int
    /// The key that signs tokens (from `token_secret_env`), so tokens survive restarts and
    /// work across replicas; nil = a random key per process.
    public var tokenSecret: GatewaySecret?

    /// Creates a configuration.
    public init(
        clients: [Client], routes: [String: Route], cache: Cache? = nil, contentFilter: ContentFilter? = nil,
        usageDatabase: String? = nil, corsOrigins: [String] = [], tokenTTLSeconds: Int = 900, signatureWindowSeconds: Int = 300,
        tokenSecret: GatewaySecret? = nil, usageRetentionDays: Int? = nil
    ) {
        self.usageRetentionDays = usageRetentionDays
        self.clients = clients
        self.routes = routes
        self.cache = cache
        self.contentFilter = contentFilter
        self.usageDatabase = usageDatabase
        self.corsOrigins = corsOrigins
        self.tokenTTLSeconds = tokenTTLSeconds
        self.signatureWindowSeconds = signatureWindowSeconds
        self.tokenSecret = tokenSecret
    }

    /// Reads a configuration file. Relative paths in it (`usage_db`, `content_filter.file`) are
    /// resolved against the file's directory.
    /// - Throws: ``GatewayConfigurationError`` naming the file and the key at fault.
    public static func load(file: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> GatewayConfiguration
    {
        let url = URL(fileURLWithPath: file)
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw GatewayConfigurationError(file: file, key: "", message: "cannot be read; check the path and its permissions.")
        }
        return try parse(data, file: file, directory: url.deletingLastPathComponent(), environment: environment)
    }

    /// Parses a configuration (the JSON of docs/SERVER.md#gateway).
    /// - Throws: ``GatewayConfigurationError`` naming the key at fault.
    public static func parse(
        _ data: Data, file: String = "", directory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> GatewayConfiguration {
        var reader = ConfigReader(file: file, directory: directory, environment: environment)
        return try reader.read(data)
    }
}

/// Reads the JSON with an error per key; never puts a value that may be secret in a message.
struct ConfigReader {
    let file: String
    let directory: URL
    let environment: [String: String]

    func fail(_ key: String, _ message: String) -> GatewayConfigurationError {
        GatewayConfigurationError(file: file, key: key, message: message)
    }

    func object(_ value: JSONValue, _ key: String, allowed: Set<String>) throws -> [String: JSONValue] {
        guard case .object(let pairs) = value else { throw fail(key, "must be a JSON object, got \(value.typeName).") }
        var result: [String: JSONValue] = [:]
        for (name, item) in pairs {
            guard allowed.contains(name) else {
                throw fail(
                    key.isEmpty ? name : "\(key).\(name)",
                    "is not a known key here; the keys are \(allowed.sorted().joined(separator: ", ")).")
            }
            result[name] = item
        }
        return result
    }

    func string(_ value: JSONValue?, _ key: String) throws -> String? {
        guard let value, value != .null else { return nil }
        guard case .string(let text) = value else { throw fail(key, "must be a string, got \(value.typeName).") }
        return text
    }

    func int(_ value: JSONValue?, _ key: String, min: Int) throws -> Int? {
        guard let value, value != .null else { return nil }
        guard let number = value.doubleValue, number.isFinite, number == number.rounded(), abs(number) < 1e15 else {
            throw fail(key, "must be an integer, got \(value.typeName == "number" ? "a fraction" : value.typeName).")
        }
        guard Int(number) >= min else { throw fail(key, "must be at least \(min).") }
        return Int(number)
    }

    func number(_ value: JSONValue?, _ key: String, above: Double) throws -> Double? {
        guard let value, value != .null else { return nil }
        guard let number = value.doubleValue, number.isFinite else { throw fail(key, "must be a number, got \(value.typeName).") }
        guard number > above else { throw fail(key, "must be greater than \(Fields.format(above)).") }
        return number
    }

    func bool(_ value: JSONValue?, _ key: String) throws -> Bool? {
        guard let value, value != .null else { return nil }
        guard case .bool(let flag) = value else { throw fail(key, "must be true or false, got \(value.typeName).") }
        return flag
    }

    func strings(_ value: JSONValue?, _ key: String) throws -> [String]? {
        guard let value, value != .null else { return nil }
        guard case .array(let items) = value else { throw fail(key, "must be an array of strings, got \(value.typeName).") }
        return try items.enumerated().map { index, item in
            guard case .string(let text) = item, !text.isEmpty else { throw fail("\(key)[\(index)]", "must be a non-empty string.") }
            return text
        }
    }

    /// The value of an environment variable named at `key`; the message names the variable only.
    func secret(_ variable: String, _ key: String) throws -> String {
        guard !variable.isEmpty else { throw fail(key, "must name an environment variable.") }
        guard let value = environment[variable], !value.isEmpty else {
            throw fail(key, "names the environment variable \(variable), which is not set (or empty) in the server's environment.")
        }
        return value
    }

    func path(_ text: String) -> String {
        text.hasPrefix("/") ? text : directory.appendingPathComponent(text).path
    }

    mutating func read(_ data: Data) throws -> GatewayConfiguration {
        let root: JSONValue
        do { root = try JSONValue.parse(utf8: Array(data)) } catch {
            throw fail("", "is not valid JSON.")
        }
        let top = try object(
            root, "",
            allowed: [
                "clients", "models", "cache", "content_filter", "usage_db", "cors_origins", "token_ttl_seconds",
                "signature_window_seconds", "token_secret_env", "usage_retention_days",
            ])
        guard case .object(let modelPairs)? = top["models"], !modelPairs.isEmpty else {
            throw fail("models", "is required: an object of public model names to routes, such as {\"local\": {\"provider\": \"local\"}}.")
        }
        var routes: [String: GatewayConfiguration.Route] = [:]
        for (name, value) in modelPairs {
            routes[name] = try route(name, value)
        }
        for route in routes.values {
            for (index, target) in route.fallback.enumerated() {
                let key = "models.\(route.name).fallback[\(index)]"
                guard routes[target] != nil else { throw fail(key, "names '\(target)', which is not a model in 'models'.") }
                guard target != route.name else { throw fail(key, "names the route itself.") }
            }
        }
        guard case .array(let clientItems)? = top["clients"], !clientItems.isEmpty else {
            throw fail("clients", "is required: an array of clients, each with a name and a key (key_sha256 or key_env).")
        }
        var clients: [GatewayConfiguration.Client] = []
        for (index, item) in clientItems.enumerated() {
            let client = try self.client(item, "clients[\(index)]", routes: routes)
            if clients.contains(where: { $0.name == client.name }) {
                throw fail("clients[\(index)].name", "'\(client.name)' is used by another client; names must be unique.")
            }
            if clients.contains(where: { $0.keyDigest == client.keyDigest }) {
                throw fail("clients[\(index)]", "has the same key as another client; every client needs its own key.")
            }
            clients.append(client)
        }
        var cache: GatewayConfiguration.Cache?
        if let value = top["cache"], value != .null {
            let c = try object(value, "cache", allowed: ["ttl_seconds", "max_entries", "max_bytes", "shared"])
            cache = GatewayConfiguration.Cache(
                ttlSeconds: try number(c["ttl_seconds"], "cache.ttl_seconds", above: 0) ?? 3600,
                maxEntries: try int(c["max_entries"], "cache.max_entries", min: 1) ?? 1000,
                maxBytes: try int(c["max_bytes"], "cache.max_bytes", min: 1) ?? 64 << 20,
                shared: try bool(c["shared"], "cache.shared") ?? false)
        }
        var filter: ContentFilter?
        if let value = top["content_filter"], value != .null {
            let f = try object(value, "content_filter", allowed: ["file", "output", "window"])
            guard let file = try string(f["file"], "content_filter.file"), !file.isEmpty else {
                throw fail("content_filter.file", "is required: a file of blocked words and regexes, one per line.")
            }
            do {
                filter = try ContentFilter(file: path(file), filterOutput: try bool(f["output"], "content_filter.output") ?? false)
            } catch let error as ContentFilter.LoadError {
                throw fail("content_filter.file", error.message)
            }
            if let window = try int(f["window"], "content_filter.window", min: 1) { filter?.window = window }
        }
        var tokenSecret: GatewaySecret?
        if let variable = try string(top["token_secret_env"], "token_secret_env") {
            let value = try secret(variable, "token_secret_env")
            guard value.utf8.count >= 32 else {
                throw fail("token_secret_env", "names \(variable), whose value is shorter than 32 bytes; use a long random value.")
            }
            tokenSecret = GatewaySecret(value)
        }
        var origins = try strings(top["cors_origins"], "cors_origins") ?? []
        origins = origins.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        return GatewayConfiguration(
            clients: clients, routes: routes, cache: cache, contentFilter: filter,
            usageDatabase: try string(top["usage_db"], "usage_db").map(path), corsOrigins: origins,
            tokenTTLSeconds: try tokenTTL(top["token_ttl_seconds"]),
            signatureWindowSeconds: try int(top["signature_window_seconds"], "signature_window_seconds", min: 1) ?? 300,
            tokenSecret: tokenSecret,
            usageRetentionDays: try int(top["usage_retention_days"], "usage_retention_days", min: 1))
    }

    /// `token_ttl_seconds`: 1 s to a day (a leaked token must not outlive a day).
    func tokenTTL(_ value: JSONValue?) throws -> Int {
        let seconds = try int(value, "token_ttl_seconds", min: 1) ?? 900
        guard seconds <= 86400 else { throw fail("token_ttl_seconds", "must be at most 86400 (a day); got \(seconds).") }
        return seconds
    }

    func route(_ name: String, _ value: JSONValue) throws -> GatewayConfiguration.Route {
        let key = "models.\(name)"
        guard !name.isEmpty, name.count <= 256 else { throw fail(key, "a model name must be 1 to 256 characters.") }
        let r = try object(value, key, allowed: ["provider", "model", "fallback", "timeout_seconds", "attempts"])
        let kinds = GatewayConfiguration.ProviderKind.allCases.map(\.rawValue).joined(separator: ", ")
        guard let providerName = try string(r["provider"], "\(key).provider") else {
            throw fail("\(key).provider", "is required: one of \(kinds).")
        }
        guard let provider = GatewayConfiguration.ProviderKind(rawValue: providerName) else {
            throw fail("\(key).provider", "'\(providerName.prefix(40))' is not a provider; use one of \(kinds).")
        }
        // For the local provider, `model` names one of the models `hearth serve` serves (checked
        // when the gateway is built); without it, the first.
        let model = try string(r["model"], "\(key).model")
        return GatewayConfiguration.Route(
            name: name, provider: provider, model: model, fallback: try strings(r["fallback"], "\(key).fallback") ?? [],
            timeoutSeconds: try number(r["timeout_seconds"], "\(key).timeout_seconds", above: 0) ?? 30,
            attempts: try int(r["attempts"], "\(key).attempts", min: 1) ?? 1)
    }

    func client(_ value: JSONValue, _ key: String, routes: [String: GatewayConfiguration.Route]) throws
        -> GatewayConfiguration.Client
    {
        let c = try object(
            value, key,
            allowed: [
                "name", "key_sha256", "key_env", "hmac_secret_env", "requests_per_minute", "tokens_per_day", "models", "admin",
                "max_in_flight", "max_tokens",
            ])
        guard let name = try string(c["name"], "\(key).name"), !name.isEmpty, name.count <= 128 else {
            throw fail("\(key).name", "is required: 1 to 128 characters.")
        }
        let hashed = try string(c["key_sha256"], "\(key).key_sha256")
        let variable = try string(c["key_env"], "\(key).key_env")
        let digest: [UInt8]
        switch (hashed, variable) {
        case (let hex?, nil):
            guard let bytes = Hex.decode(hex), bytes.count == 32 else {
                throw fail("\(key).key_sha256", "must be 64 hexadecimal characters (the SHA-256 of the key: `printf %s KEY | sha256sum`).")
            }
            digest = bytes
        case (nil, let variable?):
            let value = try secret(variable, "\(key).key_env")
            guard value.utf8.count >= 16 else {
                throw fail("\(key).key_env", "names \(variable), whose value is shorter than 16 characters; use a long random key.")
            }
            digest = Array(SHA256.hash(data: Array(value.utf8)))
        case (.some, .some):
            throw fail(key, "give key_sha256 or key_env, not both.")
        case (nil, nil):
            throw fail(key, "needs a key: key_sha256 (the key's SHA-256 in hex) or key_env (an environment variable holding it).")
        }
        var hmacSecret: GatewaySecret?
        if let variable = try string(c["hmac_secret_env"], "\(key).hmac_secret_env") {
            hmacSecret = GatewaySecret(try secret(variable, "\(key).hmac_secret_env"))
        }
        let models = try strings(c["models"], "\(key).models")
        for (index, model) in (models ?? []).enumerated() where routes[model] == nil {
            throw fail("\(key).models[\(index)]", "names '\(model.prefix(256))', which is not a model in 'models'.")
        }
        return GatewayConfiguration.Client(
            name: name, keyDigest: digest, hmacSecret: hmacSecret,
            requestsPerMinute: try int(c["requests_per_minute"], "\(key).requests_per_minute", min: 1),
            tokensPerDay: try int(c["tokens_per_day"], "\(key).tokens_per_day", min: 1), models: models,
            admin: try bool(c["admin"], "\(key).admin") ?? false,
            maxInFlight: try int(c["max_in_flight"], "\(key).max_in_flight", min: 1),
            maxTokens: try int(c["max_tokens"], "\(key).max_tokens", min: 1))
    }
}

/// Hexadecimal text.
enum Hex {
    static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes of an even-length hex string (either case), nil when it is not one.
    static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = nibble(chars[index]), let low = nibble(chars[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
