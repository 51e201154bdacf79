import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore

/// What a download reports as it goes (for a progress bar or a log line).
public enum HubProgress: Sendable {
    /// A file is already in the cache (its blob exists with the listed size).
    case cached(path: String, bytes: Int64)
    /// Transfer of a file starts (or resumes from `resumedAt` bytes already on disk).
    case started(path: String, total: Int64, resumedAt: Int64)
    /// `done` of `total` bytes of a file are on disk.
    case advanced(path: String, done: Int64, total: Int64)
    /// A transient failure; the transfer resumes after `delay` seconds.
    case retrying(path: String, attempt: Int, delay: Double, reason: String)
    /// A file was downloaded and verified (`check` says how: sha256 or git blob id).
    case finished(path: String, bytes: Int64, check: String)
}

/// How hard a download tries before it gives up.
public struct RetryPolicy: Sendable {
    /// Attempts per file, the first included.
    public var attempts: Int
    /// The wait before the first retry, doubled for each next one (capped at `maximumDelay`).
    public var initialDelay: Double
    public var maximumDelay: Double

    public init(attempts: Int = 6, initialDelay: Double = 1, maximumDelay: Double = 30) {
        self.attempts = attempts
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// Seconds to wait after failed attempt number `attempt` (from 1).
    func delay(after attempt: Int) -> Double { min(maximumDelay, initialDelay * pow(2, Double(attempt - 1))) }

    /// Whether an error is worth another attempt: network failures, 429 and 5xx answers.
    static func isTransient(_ error: any Error) -> Bool {
        if error is CancellationError { return false }
        if let hub = error as? HubError { return hub.code == .network || hub.code == .server }
        return true  // the HTTP client's own errors: refused, reset, timed out, cut short
    }
}

/// Downloads one file into the cache: into `blobs/{etag}.incomplete` under the blob's lock,
/// resuming with `Range` after a dropped connection (and across runs), retrying transient
/// failures with exponential backoff; then checks the size and the sha256 (LFS files) or git
/// blob id (others) against the tree listing, and only then renames it to `blobs/{etag}` and
/// links it into the snapshot. A mismatch deletes the download and throws.
struct FileDownload: Sendable {
    let api: HubAPI
    let cache: HubCache
    let retry: RetryPolicy
    let progress: @Sendable (HubProgress) -> Void

    func fetch(_ repo: RepoID, commit: String, file: HubFile) async throws {
        let blob = cache.blob(repo, etag: file.etag)
        if blobIsComplete(blob, size: file.size) {
            try cache.link(repo, commit: commit, path: file.path, etag: file.etag)
            progress(.cached(path: file.path, bytes: file.size))
            return
        }
        let lock = try await BlobLock(cache, repo, etag: file.etag)
        defer { withExtendedLifetime(lock) {} }
        if !blobIsComplete(blob, size: file.size) {  // another process may have finished it meanwhile
            let partial = URL(fileURLWithPath: blob.path + ".incomplete")
            try await transfer(repo, commit: commit, file: file, to: partial)
            try verify(partial, file: file, repo: repo)
            try fileSystem("move \(partial.path) to \(blob.path)") {
                if rename(partial.path, blob.path) != 0 { throw HubError(.fileSystem, "cannot rename \(partial.path): \(String(cString: strerror(errno)))") }
                chmod(blob.path, 0o644)
            }
        } else {
            progress(.cached(path: file.path, bytes: file.size))
        }
        try cache.link(repo, commit: commit, path: file.path, etag: file.etag)
    }

    private func blobIsComplete(_ blob: URL, size: Int64) -> Bool {
        var info = stat()
        return stat(blob.path, &info) == 0 && Int64(info.st_size) == size
    }

    /// Brings `partial` to the file's full size.
    private func transfer(_ repo: RepoID, commit: String, file: HubFile, to partial: URL) async throws {
        let fm = FileManager.default
        try fileSystem("create \(partial.path)") {
            try fm.createDirectory(at: partial.deletingLastPathComponent(), withIntermediateDirectories: true)
            if !fm.fileExists(atPath: partial.path), !fm.createFile(atPath: partial.path, contents: nil) {
                throw HubError(.fileSystem, "cannot create \(partial.path)")
            }
        }
        var onDisk = Int64((try? fm.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0)
        if onDisk > file.size {
            truncate(partial.path, 0)
            onDisk = 0
        }
        progress(.started(path: file.path, total: file.size, resumedAt: onDisk))
        var attempt = 1
        while onDisk < file.size || file.size == 0 {
            do {
                onDisk = try await attemptTransfer(repo, commit: commit, file: file, to: partial, from: onDisk)
                if onDisk >= file.size { return }
                throw HubError(.network, "the connection ended after \(onDisk) of \(file.size) bytes of \(repo)/\(file.path)")
            } catch {
                guard RetryPolicy.isTransient(error) else { throw error }
                onDisk = Int64((try? fm.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0)
                guard attempt < retry.attempts else {
                    if let hub = error as? HubError { throw HubError(hub.code, hub.message + " (after \(attempt) attempts)", remedy: "run the same command again: it resumes from the \(onDisk) bytes kept") }
                    throw HubError(.network, "downloading \(repo)/\(file.path) failed after \(attempt) attempts: \(error)",
                        remedy: "check the network and run the same command again: it resumes from the \(onDisk) bytes kept")
                }
                let delay = retry.delay(after: attempt)
                progress(.retrying(path: file.path, attempt: attempt, delay: delay, reason: String(describing: error)))
                try await Task.sleep(for: .milliseconds(Int(delay * 1000)))
                attempt += 1
            }
        }
    }

    /// One GET from `offset`; returns the bytes on disk when the body ended.
    private func attemptTransfer(_ repo: RepoID, commit: String, file: HubFile, to partial: URL, from offset: Int64) async throws -> Int64 {
        let url = api.resolveURL(repo, commit: commit, path: file.path)
        let (response, first, _) = try await api.get(url, range: offset)
        let status = Int(response.status.code)
        var offset = offset
        switch status {
        case 200:
            offset = 0  // the server sent the whole file
        case 206:
            let start = response.headers.first(name: "content-range").flatMap(rangeStart)
            guard start == offset else {
                throw HubError(.invalidResponse, "\(repo)/\(file.path): asked for bytes from \(offset), got a range starting at \(start.map(String.init) ?? "?")")
            }
        case 416 where offset == file.size:
            return offset
        default:
            _ = try? await response.body.collect(upTo: 1 << 20)
            throw api.failure(status: status, headers: first, repo: repo, revision: commit, file: file.path)
        }
        // The hub's own view of the file must be the one the tree listed.
        if let linked = normalizeETag(first.first(name: "x-linked-etag") ?? first.first(name: "etag")),
            isHex(linked, length: 64) || isHex(linked, length: 40), linked != file.etag
        {
            throw HubError(.invalidResponse, "\(repo)/\(file.path): the hub serves etag \(linked), its tree listed \(file.etag)")
        }
        let handle = try fileSystem("open \(partial.path)") { try FileHandle(forWritingTo: partial) }
        defer { try? handle.close() }
        try fileSystem("write \(partial.path)") {
            try handle.truncate(atOffset: UInt64(offset))
            try handle.seekToEnd()
        }
        var lastReport = ContinuousClock.now
        for try await chunk in response.body {
            guard offset + Int64(chunk.readableBytes) <= file.size else {
                unlink(partial.path)
                throw HubError(.sizeMismatch, "\(repo)/\(file.path) is longer than the \(file.size) bytes the hub lists")
            }
            try fileSystem("write \(partial.path)") { try chunk.withUnsafeReadableBytes { try handle.write(contentsOf: $0) } }
            offset += Int64(chunk.readableBytes)
            if ContinuousClock.now - lastReport > .milliseconds(100) {
                lastReport = .now
                progress(.advanced(path: file.path, done: offset, total: file.size))
            }
        }
        progress(.advanced(path: file.path, done: offset, total: file.size))
        return offset
    }

    /// Checks size and digest; deletes the download on a mismatch.
    private func verify(_ partial: URL, file: HubFile, repo: RepoID) throws {
        let (size, digest) = try digestOf(partial, gitBlob: file.sha256 == nil)
        let expected = file.sha256 ?? file.blobID
        let kind = file.sha256 == nil ? "git blob id" : "sha256"
        guard size == file.size, digest == expected else {
            unlink(partial.path)
            if size != file.size {
                throw HubError(.sizeMismatch, "\(repo)/\(file.path) has \(size) bytes, the hub lists \(file.size); the download was deleted",
                    remedy: "run the command again")
            }
            throw HubError(.checksumMismatch,
                "\(repo)/\(file.path) failed verification: its \(kind) is \(digest), the hub lists \(expected); the download was deleted and nothing was kept",
                remedy: "run the command again; if it fails the same way, the file on the hub or a proxy in between is corrupt")
        }
        progress(.finished(path: file.path, bytes: size, check: kind))
    }
}

/// The size and the sha256 of a file, or its git blob id (sha1 of `blob {size}\0` + contents).
func digestOf(_ url: URL, gitBlob: Bool) throws -> (Int64, String) {
    let handle = try fileSystem("read \(url.path)") { try FileHandle(forReadingFrom: url) }
    defer { try? handle.close() }
    var size: Int64 = 0
    var sha256 = SHA256()
    var sha1 = Insecure.SHA1()
    if gitBlob {
        let total = try fileSystem("read \(url.path)") { try handle.seekToEnd() }
        try fileSystem("read \(url.path)") { try handle.seek(toOffset: 0) }
        sha1.update(data: Data("blob \(total)\0".utf8))
    }
    while true {
        let data = try fileSystem("read \(url.path)") { try handle.read(upToCount: 4 << 20) } ?? Data()
        if data.isEmpty { break }
        size += Int64(data.count)
        if gitBlob { sha1.update(data: data) } else { sha256.update(data: data) }
    }
    let digest = gitBlob ? sha1.finalize().map { String(format: "%02x", $0) }.joined() : sha256.finalize().map { String(format: "%02x", $0) }.joined()
    return (size, digest)
}

/// The first byte of a `Content-Range: bytes START-END/TOTAL` header.
func rangeStart(_ header: String) -> Int64? {
    guard header.hasPrefix("bytes ") else { return nil }
    return header.dropFirst(6).split(separator: "-").first.flatMap { Int64($0) }
}
