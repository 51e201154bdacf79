import ArgumentParser
import Foundation
import Logging

/// `--log-format`: how `hearth serve` writes its log lines on stderr.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    /// swift-log's standard stream format: time, level, label, message, `key=value` metadata.
    case text
    /// One JSON object per line: `time`, `level`, `logger`, `message`, then the metadata's keys
    /// (a request's `id` among them), for log collectors.
    case json

    /// Bootstraps swift-log once for the process: every logger — the server's and the engine's
    /// (the repack cache, the prompt cache's disk tier) — writes in this format at `level`.
    func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            switch self {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            case .json:
                return JSONLogHandler(label: label, logLevel: level)
            }
        }
    }
}

/// A swift-log handler writing one JSON object per line to stderr.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Serialises writes from concurrent requests so lines never interleave.
    private static let lock = NSLock()

    func log(event: LogEvent) {
        let now = Date()
        var object: [String: Any] = ["level": event.level.rawValue, "logger": label, "message": "\(event.message)"]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) where object[key] == nil && key != "time" {
            object[key] = Self.plain(value)
        }
        Self.lock.lock()
        defer { Self.lock.unlock() }
        object["time"] = Self.formatter.string(from: now)  // one formatter, used under the lock
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        FileHandle.standardError.write(data + Data("\n".utf8))
    }

    /// A metadata value as JSON: strings, arrays and objects as they are.
    static func plain(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): return text
        case .stringConvertible(let convertible): return "\(convertible)"
        case .array(let items): return items.map(plain)
        case .dictionary(let pairs): return pairs.mapValues(plain)
        }
    }

    /// ISO 8601 in UTC with milliseconds; used only under `lock`.
    nonisolated(unsafe) private static let formatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
