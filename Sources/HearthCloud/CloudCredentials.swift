import Foundation
import HearthProviders

/// Credentials and endpoints for the cloud providers, from the environment and a JSON file.
///
/// The environment wins over the file. Variables: `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
/// `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `DEEPSEEK_API_KEY`, `DASHSCOPE_API_KEY` (Qwen in
/// compatible mode, DashScope's native API and Bailian's dialog), `DASHSCOPE_HTTP_BASE_URL`,
/// `DASHSCOPE_WEBSOCKET_BASE_URL`, `BAILIAN_APP_ID`, `BAILIAN_WORKSPACE_ID`,
/// `SPARK_APP_ID`, `SPARK_API_KEY`, `SPARK_API_SECRET`, `SPARK_URL`.
///
/// The file (default `~/.config/hearth/providers.json`, or `$XDG_CONFIG_HOME/hearth/providers.json`)
/// maps provider ids to settings; every field is optional:
///
/// ```json
/// {
///   "openai":    { "apiKey": "sk-…", "model": "gpt-4o-mini" },
///   "deepseek":  { "apiKey": "…", "baseURL": "https://api.deepseek.com/v1", "model": "deepseek-chat" },
///   "anthropic": { "apiKey": "…", "model": "claude-sonnet-4-5" },
///   "spark":     { "appID": "…", "apiKey": "…", "apiSecret": "…",
///                  "url": "wss://spark-api.xf-yun.com/v3.5/chat", "domain": "generalv3.5" },
///   "dashscope": { "apiKey": "sk-…", "model": "qwen-plus" },
///   "bailian":   { "apiKey": "sk-…", "appID": "…", "workspaceID": "llm-…" },
///   "ollama":    { "baseURL": "http://127.0.0.1:11434/v1", "model": "qwen2.5:7b",
///                  "headers": { "X-Team": "mobile" } }
/// }
/// ```
///
/// Keep the file private (`chmod 600`). Values are held as ``CloudSecret``s and never printed.
public struct CloudCredentials: Sendable {
    /// Settings for one provider id.
    public struct Entry: Sendable, Decodable {
        /// API key (OpenAI-compatible, Anthropic, Spark).
        public var apiKey: CloudSecret?
        /// API secret (Spark's HMAC key).
        public var apiSecret: CloudSecret?
        /// Application id (Spark, Bailian's dialog app).
        public var appID: String?
        /// Workspace id (Bailian's `workspace_id`).
        public var workspaceID: String?
        /// Base URL of an HTTP API, such as `https://api.openai.com/v1`.
        public var baseURL: String?
        /// WebSocket URL (Spark, Bailian's dialog).
        public var url: String?
        /// Model name, or Spark's `domain`.
        public var model: String?
        /// Spark's `parameter.chat.domain`.
        public var domain: String?
        /// Extra HTTP headers.
        public var headers: [String: String]?

        /// An empty entry.
        public init(
            apiKey: CloudSecret? = nil, apiSecret: CloudSecret? = nil, appID: String? = nil, workspaceID: String? = nil,
            baseURL: String? = nil, url: String? = nil, model: String? = nil, domain: String? = nil,
            headers: [String: String]? = nil
        ) {
            self.apiKey = apiKey
            self.apiSecret = apiSecret
            self.appID = appID
            self.workspaceID = workspaceID
            self.baseURL = baseURL
            self.url = url
            self.model = model
            self.domain = domain
            self.headers = headers
        }

        private enum CodingKeys: String, CodingKey {
            case apiKey, apiSecret, appID, workspaceID, baseURL, url, model, domain, headers
        }

        /// Decodes an entry; key and secret are read as strings and wrapped at once.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            apiKey = try container.decodeIfPresent(String.self, forKey: .apiKey).map(CloudSecret.init)
            apiSecret = try container.decodeIfPresent(String.self, forKey: .apiSecret).map(CloudSecret.init)
            appID = try container.decodeIfPresent(String.self, forKey: .appID)
            workspaceID = try container.decodeIfPresent(String.self, forKey: .workspaceID)
            baseURL = try container.decodeIfPresent(String.self, forKey: .baseURL)
            url = try container.decodeIfPresent(String.self, forKey: .url)
            model = try container.decodeIfPresent(String.self, forKey: .model)
            domain = try container.decodeIfPresent(String.self, forKey: .domain)
            headers = try container.decodeIfPresent([String: String].self, forKey: .headers)
        }
    }

    /// Settings by provider id.
    public var entries: [String: Entry]

    /// Credentials given directly.
    public init(entries: [String: Entry] = [:]) {
        self.entries = entries
    }

    /// The settings for `id` (an empty entry when there are none).
    public subscript(id: String) -> Entry {
        entries[id] ?? Entry()
    }

    /// The default file: `$XDG_CONFIG_HOME/hearth/providers.json`, else `~/.config/hearth/providers.json`.
    public static func defaultFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("hearth/providers.json")
        }
        let home = environment["HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".config/hearth/providers.json")
    }

    /// The credentials the environment variables alone give (no file read): for a server whose
    /// upstream keys must come only from its own environment.
    public static func environmentOnly(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> CloudCredentials {
        var credentials = CloudCredentials()
        credentials.overlay(environment)
        return credentials
    }

    /// Reads the file (a missing file is fine) and overlays the environment.
    ///
    /// - Throws: ``ProviderError`` with code ``ProviderError/Code/invalidRequest`` and provider
    ///   `"config"` when the file exists but cannot be read or is not the documented JSON.
    ///   The message names the file and the key path, never a value.
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment, file: URL? = nil
    ) throws -> CloudCredentials {
        let url = file ?? defaultFile(environment: environment)
        var credentials = CloudCredentials()
        if FileManager.default.fileExists(atPath: url.path) {
            let data: Data
            do {
                data = try Data(contentsOf: url)
            } catch {
                throw ProviderError(
                    .invalidRequest, provider: "config",
                    message: "Cannot read \(url.path). Check its permissions.", underlying: error)
            }
            do {
                credentials.entries = try JSONDecoder().decode([String: Entry].self, from: data)
            } catch let error as DecodingError {
                throw ProviderError(
                    .invalidRequest, provider: "config",
                    message: "\(url.path) is not valid provider settings (\(Self.describe(error))). "
                        + "It must be a JSON object of provider ids to {apiKey, baseURL, model, …}; see docs/PROVIDERS.md.")
            } catch {
                throw ProviderError(
                    .invalidRequest, provider: "config", message: "\(url.path) is not valid JSON.")
            }
        }
        credentials.overlay(environment)
        return credentials
    }

    /// The environment variables that hold a provider's credentials (what to set when its key
    /// is missing), by provider id.
    public static let credentialVariables: [String: [String]] = [
        "openai": ["OPENAI_API_KEY"], "anthropic": ["ANTHROPIC_API_KEY"], "deepseek": ["DEEPSEEK_API_KEY"],
        "qwen": ["DASHSCOPE_API_KEY"], "dashscope": ["DASHSCOPE_API_KEY"],
        "bailian": ["DASHSCOPE_API_KEY", "BAILIAN_APP_ID"], "spark": ["SPARK_APP_ID", "SPARK_API_KEY", "SPARK_API_SECRET"],
    ]

    /// What to do when provider `id` has no valid credentials: the variables to set, or the
    /// entry in the config file (its path as `defaultFile` resolves it).
    public static func missingCredentialsRemedy(
        for id: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        let variables = credentialVariables[id] ?? []
        let file = defaultFile(environment: environment).path
        let set = variables.isEmpty ? "Set its key" : "Set \(variables.joined(separator: ", "))"
        return "\(set) in the environment, or add an \"\(id)\" entry to \(file) (see docs/PROVIDERS.md)."
    }

    /// Applies the environment variables on top of the file's values.
    mutating func overlay(_ environment: [String: String]) {
        func value(_ name: String) -> String? {
            guard let value = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty
            else { return nil }
            return value
        }
        func set(_ id: String, _ edit: (inout Entry) -> Void) {
            var entry = entries[id] ?? Entry()
            edit(&entry)
            entries[id] = entry
        }
        if let key = value("OPENAI_API_KEY") { set("openai") { $0.apiKey = CloudSecret(key) } }
        if let url = value("OPENAI_BASE_URL") { set("openai") { $0.baseURL = url } }
        if let key = value("ANTHROPIC_API_KEY") { set("anthropic") { $0.apiKey = CloudSecret(key) } }
        if let url = value("ANTHROPIC_BASE_URL") { set("anthropic") { $0.baseURL = url } }
        if let key = value("DEEPSEEK_API_KEY") { set("deepseek") { $0.apiKey = CloudSecret(key) } }
        if let key = value("DASHSCOPE_API_KEY") {
            for id in ["qwen", "dashscope", "bailian"] { set(id) { $0.apiKey = CloudSecret(key) } }
        }
        if let url = value("DASHSCOPE_HTTP_BASE_URL") { set("dashscope") { $0.baseURL = url } }
        if let url = value("DASHSCOPE_WEBSOCKET_BASE_URL") { set("bailian") { $0.url = url } }
        if let id = value("BAILIAN_APP_ID") { set("bailian") { $0.appID = id } }
        if let id = value("BAILIAN_WORKSPACE_ID") { set("bailian") { $0.workspaceID = id } }
        if let id = value("SPARK_APP_ID") { set("spark") { $0.appID = id } }
        if let key = value("SPARK_API_KEY") { set("spark") { $0.apiKey = CloudSecret(key) } }
        if let secret = value("SPARK_API_SECRET") { set("spark") { $0.apiSecret = CloudSecret(secret) } }
        if let url = value("SPARK_URL") { set("spark") { $0.url = url } }
    }

    /// A decoding error's location and kind, without the offending value.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue).joined(separator: ".")
            return keys.isEmpty ? "at the top level" : "at \(keys)"
        }
        switch error {
        case .typeMismatch(let type, let context): return "expected \(type) \(path(context))"
        case .valueNotFound(let type, let context): return "missing \(type) \(path(context))"
        case .keyNotFound(let key, let context): return "missing key \(key.stringValue) \(path(context))"
        case .dataCorrupted(let context): return "malformed JSON \(path(context))"
        @unknown default: return "unexpected content"
        }
    }
}
