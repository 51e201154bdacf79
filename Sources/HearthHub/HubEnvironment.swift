import Foundation

/// A Hugging Face access token. Its `description` never shows the value, so it cannot leak
/// into logs or error messages by interpolation.
public struct HubToken: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The token itself, for the `Authorization` header only.
    let value: String

    public init?(_ value: String?) {
        guard let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        self.value = trimmed
    }

    public var description: String { "HF_TOKEN(redacted)" }
    public var debugDescription: String { description }
}

/// Where the hub is and where its cache lives, read from the same environment variables the
/// Python `huggingface_hub` package reads (its `constants.py`), so both share one cache:
///
/// - `HF_ENDPOINT` (default `https://huggingface.co`)
/// - `HF_HUB_CACHE`, else `HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`; `HF_HOME` defaults to
///   `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`
/// - `HF_TOKEN`, else `HUGGING_FACE_HUB_TOKEN`, else the file `HF_TOKEN_PATH` (default `$HF_HOME/token`)
/// - `HF_HUB_OFFLINE` (or `TRANSFORMERS_OFFLINE`) set to 1, ON, YES or TRUE: no network at all.
public struct HubEnvironment: Sendable {
    /// The hub's base URL, without a trailing slash.
    public var endpoint: String
    /// The cache root (`…/hub`), holding `models--{org}--{name}` folders.
    public var cacheDirectory: URL
    /// The access token, if any.
    public var token: HubToken?
    /// Offline mode: use the cache alone.
    public var offline: Bool

    public init(endpoint: String, cacheDirectory: URL, token: HubToken? = nil, offline: Bool = false) {
        var endpoint = endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        self.endpoint = endpoint
        self.cacheDirectory = cacheDirectory
        self.token = token
        self.offline = offline
    }

    /// The environment of this process (or the given variables).
    public static func current(_ variables: [String: String] = ProcessInfo.processInfo.environment) -> HubEnvironment {
        func value(_ name: String) -> String? {
            guard let v = variables[name], !v.isEmpty else { return nil }
            return expandHome(v, variables)
        }
        let home = value("HF_HOME")
            ?? ((value("XDG_CACHE_HOME") ?? expandHome("~/.cache", variables)) + "/huggingface")
        let cache = value("HF_HUB_CACHE") ?? value("HUGGINGFACE_HUB_CACHE") ?? home + "/hub"
        var token = HubToken(variables["HF_TOKEN"] ?? variables["HUGGING_FACE_HUB_TOKEN"])
        if token == nil {
            let path = value("HF_TOKEN_PATH") ?? home + "/token"
            token = HubToken(try? String(contentsOfFile: path, encoding: .utf8))
        }
        let truthy: Set<String> = ["1", "ON", "YES", "TRUE"]
        let offline = [variables["HF_HUB_OFFLINE"], variables["TRANSFORMERS_OFFLINE"]]
            .compactMap { $0?.uppercased() }.contains { truthy.contains($0) }
        return HubEnvironment(
            endpoint: variables["HF_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 } ?? "https://huggingface.co",
            cacheDirectory: URL(fileURLWithPath: cache), token: token, offline: offline)
    }

    private static func expandHome(_ path: String, _ variables: [String: String]) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = variables["HOME"] ?? NSHomeDirectory()
        return home + path.dropFirst()
    }
}
