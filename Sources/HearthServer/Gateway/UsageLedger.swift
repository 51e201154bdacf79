import Foundation
import GRDB

/// Usage per client, model and UTC day in SQLite (through GRDB), one transaction per request.
///
/// Each finished request adds one row to `requests` and its counts to the `usage` totals in
/// the same transaction, so the file is consistent after a crash or `kill -9` at any moment:
/// a request is either wholly recorded or not at all (only the one in flight can be lost),
/// and the totals always equal the sum of the rows. The file is in WAL mode.
///
/// Refused requests (no tokens: a 4xx before any work) are not a transaction each: they are
/// held in memory and written in batches (``recordRefusal(_:at:)``, ``flush()``), every
/// `refusalBatch` refusals or when usage is read, and at shutdown; a `kill -9` loses at most
/// the refusals of the last batch. Rows of `requests` older than the retention are pruned
/// (the `usage` totals are kept).
final class UsageLedger: @unchecked Sendable {
    // `@unchecked Sendable`: `pending` and `lastPrune` are only touched under `lock`.
    let writer: any DatabaseWriter
    /// Days of `requests` rows kept (nil: all).
    let retentionDays: Int?
    /// Refusals held before they are written in one transaction.
    let refusalBatch = 64
    private let lock = NSLock()
    private var pending: [(Entry, Date)] = []
    private var lastPrune = ""

    /// One request's figures.
    struct Entry: Sendable {
        var requestID: String
        var day: String
        var client: String
        var model: String
        var servedBy: String
        var status: Int
        var promptTokens = 0
        var cachedTokens = 0
        var completionTokens = 0
        var cacheHit = false
    }

    /// Totals of one client and model (over the days asked for).
    struct Totals: Sendable {
        var client: String
        var model: String
        var requests: Int
        var errors: Int
        var cacheHits: Int
        var promptTokens: Int
        var cachedTokens: Int
        var completionTokens: Int
    }

    /// Opens (creating if needed) the ledger at `path`, or an in-memory one when `path` is nil.
    /// - Throws: ``GatewayConfigurationError`` naming `usage_db` when the file cannot be opened.
    init(path: String?, retentionDays: Int? = nil) throws {
        self.retentionDays = retentionDays
        do {
            if let path {
                var configuration = Configuration()
                configuration.busyMode = .timeout(5)
                writer = try DatabasePool(path: path, configuration: configuration)
            } else {
                writer = try DatabaseQueue()
            }
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE usage (
                            day TEXT NOT NULL, client TEXT NOT NULL, model TEXT NOT NULL,
                            requests INTEGER NOT NULL, errors INTEGER NOT NULL, cache_hits INTEGER NOT NULL,
                            prompt_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
                            PRIMARY KEY (day, client, model));
                        CREATE TABLE requests (
                            id TEXT NOT NULL, at REAL NOT NULL, day TEXT NOT NULL, client TEXT NOT NULL, model TEXT NOT NULL,
                            served_by TEXT NOT NULL, status INTEGER NOT NULL, cache_hit INTEGER NOT NULL,
                            prompt_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL);
                        CREATE INDEX requests_day_client ON requests (day, client);
                        """)
            }
            try migrator.migrate(writer)
        } catch {
            throw GatewayConfigurationError(
                file: "", key: "usage_db",
                message: "the usage database \(path ?? "(memory)") cannot be opened or created (\(Self.describe(error))).")
        }
    }

    /// A name a client sent, fit for a log line: printable ASCII only (anything else as `?`),
    /// at most 100 characters; an empty name is `-`.
    static func safeName(_ name: String) -> String {
        guard !name.isEmpty else { return "-" }
        return String(String.UnicodeScalarView(name.unicodeScalars.prefix(100).map { (0x21...0x7E).contains($0.value) ? $0 : "?" }))
    }

    static func describe(_ error: Error) -> String {
        if let error = error as? DatabaseError { return "SQLite error \(error.resultCode.rawValue): \(error.message ?? "")" }
        return "\(type(of: error))"
    }

    /// Records one request: a row and the totals, in one transaction (with any refusals held).
    func record(_ entry: Entry, at date: Date) async throws {
        let held = lock.withLock {
            defer { pending = [] }
            return pending
        }
        try await write(held + [(entry, date)])
        try await pruneIfDue(date)
    }

    /// Holds a refused request (a 4xx with no tokens) to be written with the next batch.
    func recordRefusal(_ entry: Entry, at date: Date) async throws {
        let batch: [(Entry, Date)] = lock.withLock {
            pending.append((entry, date))
            guard pending.count >= refusalBatch else { return [] }
            defer { pending = [] }
            return pending
        }
        if !batch.isEmpty { try await write(batch) }
    }

    /// Writes the refusals held (before usage is read, and at shutdown).
    func flush() async throws {
        let held = lock.withLock {
            defer { pending = [] }
            return pending
        }
        if !held.isEmpty { try await write(held) }
    }

    /// Refusals held in memory now.
    var pendingCount: Int { lock.withLock { pending.count } }

    /// Rows and totals for `entries`, in one transaction.
    private func write(_ entries: [(Entry, Date)]) async throws {
        try await writer.write { db in
            for (entry, date) in entries {
                let error = entry.status == 200 ? 0 : 1
                try db.execute(
                    sql: """
                        INSERT INTO requests (id, at, day, client, model, served_by, status, cache_hit, prompt_tokens, cached_tokens, completion_tokens)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        entry.requestID, date.timeIntervalSince1970, entry.day, entry.client, entry.model, entry.servedBy,
                        entry.status, entry.cacheHit ? 1 : 0, entry.promptTokens, entry.cachedTokens, entry.completionTokens,
                    ])
                try db.execute(
                    sql: """
                        INSERT INTO usage (day, client, model, requests, errors, cache_hits, prompt_tokens, cached_tokens, completion_tokens)
                        VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)
                        ON CONFLICT (day, client, model) DO UPDATE SET
                            requests = requests + 1, errors = errors + excluded.errors, cache_hits = cache_hits + excluded.cache_hits,
                            prompt_tokens = prompt_tokens + excluded.prompt_tokens,
                            cached_tokens = cached_tokens + excluded.cached_tokens,
                            completion_tokens = completion_tokens + excluded.completion_tokens
                        """,
                    arguments: [
                        entry.day, entry.client, entry.model, error, entry.cacheHit ? 1 : 0, entry.promptTokens, entry.cachedTokens,
                        entry.completionTokens,
                    ])
            }
        }
    }

    /// Deletes `requests` rows older than the retention, once per UTC day.
    func pruneIfDue(_ date: Date) async throws {
        guard let days = retentionDays else { return }
        let today = RateLimiter.day(date)
        let due: Bool = lock.withLock {
            defer { lastPrune = today }
            return lastPrune != today
        }
        guard due else { return }
        let cutoff = date.timeIntervalSince1970 - Double(days) * 86400
        _ = try await writer.write { db in try db.execute(sql: "DELETE FROM requests WHERE at < ?", arguments: [cutoff]) }
    }

    /// Prompt plus completion tokens per client on `day`.
    func tokensUsed(on day: String) throws -> [String: Int] {
        try writer.read { db in
            var result: [String: Int] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT client, SUM(prompt_tokens + completion_tokens) AS used FROM usage WHERE day = ? GROUP BY client",
                arguments: [day])
            {
                let client: String = row["client"]
                let used: Int = row["used"]
                result[client] = used
            }
            return result
        }
    }

    /// Totals per client and model; only `client`'s when given, only days in `from...to` when given.
    func totals(client: String?, from: String?, to: String?) async throws -> [Totals] {
        try await writer.read { db in
            var conditions: [String] = []
            var arguments: StatementArguments = []
            if let client {
                conditions.append("client = ?")
                arguments += [client]
            }
            if let from {
                conditions.append("day >= ?")
                arguments += [from]
            }
            if let to {
                conditions.append("day <= ?")
                arguments += [to]
            }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT client, model, SUM(requests) AS requests, SUM(errors) AS errors, SUM(cache_hits) AS cache_hits,
                        SUM(prompt_tokens) AS prompt_tokens, SUM(cached_tokens) AS cached_tokens,
                        SUM(completion_tokens) AS completion_tokens
                    FROM usage \(filter) GROUP BY client, model ORDER BY client, model
                    """, arguments: arguments)
            return rows.map { row in
                Totals(
                    client: row["client"], model: row["model"], requests: row["requests"], errors: row["errors"],
                    cacheHits: row["cache_hits"], promptTokens: row["prompt_tokens"], cachedTokens: row["cached_tokens"],
                    completionTokens: row["completion_tokens"])
            }
        }
    }
}
