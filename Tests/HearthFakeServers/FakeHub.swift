import Crypto
import Foundation
import NIOHTTP1
import Synchronization

/// A fake Hugging Face hub on loopback HTTP, serving directories as model repositories the way
/// the real hub does (the paths and headers huggingface_hub's `hf_api.py` and
/// `file_download.py` use):
///
/// - `GET /api/models/{repo}/revision/{rev}` → `{"id", "sha", "siblings"}`
/// - `GET /api/models/{repo}/tree/{rev}?recursive=true` → `[{type, oid, size, path, lfs: {oid, size, pointerSize}}]`,
///   `pageSize` entries a page with a `Link: <…>; rel="next"` header
/// - `GET|HEAD /{repo}/resolve/{rev}/{path}` → a plain file directly (`ETag` = git blob id), an
///   LFS file (`.gguf`, `.safetensors`, `.bin`, `.model`, or 1 MiB and more) by a 302 to
///   `http://localhost:{port}/cdn/{sha256}` — another host than `127.0.0.1`, as the real CDN
///   is — with `X-Linked-Etag` (the sha256) and `X-Linked-Size`; both with `X-Repo-Commit`
/// - `GET|HEAD /cdn/{sha256}` → the LFS contents; `Range: bytes=N-` answered with 206
/// - errors with the hub's `X-Error-Code`: `RepoNotFound`, `RevisionNotFound`, `EntryNotFound`,
///   `GatedRepo` (401 without the repository's token).
///
/// Faults for tests: drop a file's connection after some bytes (once), flip a byte of a file,
/// answer the first N requests with 503.
public final class FakeHub: Sendable {
    /// One file of a repository.
    public struct File: Sendable {
        public let path: String
        public let source: URL
        public let size: Int
        /// sha256 of the contents, for LFS files.
        public let sha256: String?
        /// The git blob id: of the contents, or of the LFS pointer file.
        public let oid: String
        public var isLFS: Bool { sha256 != nil }
    }

    /// A repository: its files at one commit, on branch `main`.
    public struct Repository: Sendable {
        public let id: String
        public let commit: String
        public let files: [File]
        /// The token a client must send (`Authorization: Bearer …`), for a gated repository.
        public var gatedToken: String?
    }

    /// Injected failures.
    public struct Faults: Sendable {
        /// Close the connection after this many body bytes of the file (LFS: on the CDN), once per path.
        public var dropAfter: [String: Int] = [:]
        /// Serve these files with one byte changed (every time).
        public var corrupt: Set<String> = []
        /// Answer this many of the next requests with 503.
        public var unavailable = 0
        public init() {}
    }

    private let server: TestHTTPServer
    private let state: Mutex<(repos: [String: Repository], faults: Faults, dropped: Set<String>)>
    /// Entries per page of a tree listing.
    public let pageSize: Int

    /// `http://127.0.0.1:{port}`: what `HF_ENDPOINT` is set to.
    public var endpoint: String { "http://127.0.0.1:\(server.port)" }
    public var port: Int { server.port }
    /// The requests received, in order.
    public var requests: [RecordedRequest] { server.requests }

    /// Sets the faults for the next requests.
    public func setFaults(_ faults: Faults) { state.withLock { $0.faults = faults; $0.dropped = [] } }

    /// The repository `id`.
    public func repository(_ id: String) -> Repository? { state.withLock { $0.repos[id] } }

    private init(server: TestHTTPServer, repos: [String: Repository], pageSize: Int) {
        self.server = server
        self.state = Mutex((repos, Faults(), []))
        self.pageSize = pageSize
    }

    /// Starts a hub serving each directory as the repository named by its key (`org/name`).
    /// Files are read from disk on each request; their hashes are computed once, here.
    public static func start(
        repositories: [String: URL], gated: [String: String] = [:], port: Int = 0, pageSize: Int = 50
    ) async throws -> FakeHub {
        var repos: [String: Repository] = [:]
        for (id, directory) in repositories {
            repos[id] = try repository(id, directory: directory, gatedToken: gated[id])
        }
        let box = Box()
        let server = try await TestHTTPServer.start(port: port) { request, _, out in
            guard let hub = box.hub.withLock({ $0 }) else { return .close }
            return try await hub.serve(request, out)
        }
        let hub = FakeHub(server: server, repos: repos, pageSize: pageSize)
        box.hub.withLock { $0 = hub }
        return hub
    }

    private final class Box: Sendable { let hub = Mutex<FakeHub?>(nil) }

    /// Stops listening.
    public func stop() async { await server.stop() }

    /// Reads a directory (recursively, following symlinks) into a repository.
    static func repository(_ id: String, directory: URL, gatedToken: String?) throws -> Repository {
        let fm = FileManager.default
        guard let walker = fm.enumerator(atPath: directory.path) else { throw CocoaError(.fileReadNoSuchFile) }
        var files: [File] = []
        while let path = walker.nextObject() as? String {
            let url = directory.appendingPathComponent(path)
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: url.resolvingSymlinksInPath().path, isDirectory: &isDirectory), !isDirectory.boolValue,
                !path.split(separator: "/").contains(where: { $0.hasPrefix(".") })
            else { continue }
            let size = (try fm.attributesOfItem(atPath: url.resolvingSymlinksInPath().path)[.size] as? Int) ?? 0
            let lfs = ["gguf", "safetensors", "bin", "model"].contains(url.pathExtension) || size >= 1 << 20
            let (sha256, contentOID) = try digests(url)
            if lfs {
                let pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:\(sha256)\nsize \(size)\n"
                files.append(File(path: path, source: url, size: size, sha256: sha256, oid: gitBlobID(Data(pointer.utf8))))
            } else {
                files.append(File(path: path, source: url, size: size, sha256: nil, oid: contentOID))
            }
        }
        files.sort { $0.path < $1.path }
        var commitHash = Insecure.SHA1()
        commitHash.update(data: Data(id.utf8))
        for file in files { commitHash.update(data: Data((file.path + file.oid).utf8)) }
        return Repository(id: id, commit: hex(commitHash.finalize()), files: files, gatedToken: gatedToken)
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 { digest.map { String(format: "%02x", $0) }.joined() }

    /// The git blob id of `data`: sha1 of `blob {size}\0` and the bytes.
    public static func gitBlobID(_ data: Data) -> String {
        var sha1 = Insecure.SHA1()
        sha1.update(data: Data("blob \(data.count)\0".utf8))
        sha1.update(data: data)
        return hex(sha1.finalize())
    }

    /// sha256 and git blob id of a file, read in pieces.
    static func digests(_ url: URL) throws -> (String, String) {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: 0)
        var sha256 = SHA256()
        var sha1 = Insecure.SHA1()
        sha1.update(data: Data("blob \(size)\0".utf8))
        while let data = try handle.read(upToCount: 4 << 20), !data.isEmpty {
            sha256.update(data: data)
            sha1.update(data: data)
        }
        return (hex(sha256.finalize()), hex(sha1.finalize()))
    }

    // MARK: - Serving

    private func serve(_ request: RecordedRequest, _ out: RawResponder) async throws -> AfterResponse {
        let unavailable = state.withLock { state -> Bool in
            guard state.faults.unavailable > 0 else { return false }
            state.faults.unavailable -= 1
            return true
        }
        if unavailable {
            try await out.respond(503, "Service Unavailable", body: "{\"error\":\"try again\"}")
            return .close
        }
        let (path, query) = split(request.uri)
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        // /api/models/{org}/{name}/revision/{rev} and /tree/{rev}
        if parts.count >= 6, parts[0] == "api", parts[1] == "models" {
            let repoID = parts[2] + "/" + parts[3]
            guard let repo = try await authorized(repoID, request, out) else { return .close }
            let revision = parts[5...].joined(separator: "/").removingPercentEncoding ?? ""
            guard revision == "main" || revision == repo.commit else {
                try await error(out, 404, "RevisionNotFound", "Invalid rev id: \(revision)")
                return .close
            }
            switch parts[4] {
            case "revision":
                let siblings = repo.files.map { ["rfilename": $0.path] }
                try await json(out, ["id": repo.id, "sha": repo.commit, "siblings": siblings], headers: [])
            case "tree":
                try await tree(repo, revision: revision, query: query, out)
            default:
                try await error(out, 404, nil, "Not Found")
            }
            return .close
        }
        // /cdn/{sha256}
        if parts.count == 2, parts[0] == "cdn" {
            let file = state.withLock { $0.repos.values.flatMap(\.files).first { $0.sha256 == parts[1] } }
            guard let file else {
                try await error(out, 404, nil, "Not Found")
                return .close
            }
            return try await content(file, request, out, headers: [("ETag", "\"\(parts[1])\"")])
        }
        // /{org}/{name}/resolve/{rev}/{path…}
        if parts.count >= 5, parts[2] == "resolve" {
            let repoID = parts[0] + "/" + parts[1]
            guard let repo = try await authorized(repoID, request, out) else { return .close }
            let revision = parts[3].removingPercentEncoding ?? ""
            guard revision == "main" || revision == repo.commit else {
                try await error(out, 404, "RevisionNotFound", "Invalid rev id: \(revision)")
                return .close
            }
            let filePath = parts[4...].joined(separator: "/").removingPercentEncoding ?? ""
            guard let file = repo.files.first(where: { $0.path == filePath }) else {
                try await error(out, 404, "EntryNotFound", "\(filePath) does not exist on \"\(revision)\"", headers: [("X-Repo-Commit", repo.commit)])
                return .close
            }
            if let sha = file.sha256 {
                let body = "Found. Redirecting to http://localhost:\(port)/cdn/\(sha)"
                try await out.respond(302, "Found", headers: [
                    ("Location", "http://localhost:\(port)/cdn/\(sha)"), ("X-Repo-Commit", repo.commit),
                    ("ETag", "\"\(file.oid)\""), ("X-Linked-Etag", "\"\(sha)\""), ("X-Linked-Size", "\(file.size)"),
                ], body: request.method == "HEAD" ? "" : body)
                return .close
            }
            return try await content(file, request, out, headers: [("ETag", "\"\(file.oid)\""), ("X-Repo-Commit", repo.commit)])
        }
        try await error(out, 404, nil, "Not Found")
        return .close
    }

    /// The repository when it exists and the request may see it; else answers and returns nil.
    private func authorized(_ id: String, _ request: RecordedRequest, _ out: RawResponder) async throws -> Repository? {
        guard let repo = repository(id) else {
            try await error(out, 404, "RepoNotFound", "Repository not found")
            return nil
        }
        if let token = repo.gatedToken, request.headers.first(name: "authorization") != "Bearer \(token)" {
            try await error(out, 401, "GatedRepo", "Access to model \(id) is restricted. You must have access to it and be authenticated to access it. Please log in.")
            return nil
        }
        return repo
    }

    private func tree(_ repo: Repository, revision: String, query: [String: String], _ out: RawResponder) async throws {
        var entries: [[String: Any]] = []
        var directories = Set<String>()
        for file in repo.files {
            var dir = (file.path as NSString).deletingLastPathComponent
            while !dir.isEmpty, query["recursive"] == "true" {
                directories.insert(dir)
                dir = (dir as NSString).deletingLastPathComponent
            }
            if query["recursive"] != "true" && file.path.contains("/") { continue }
            var entry: [String: Any] = ["type": "file", "oid": file.oid, "size": file.size, "path": file.path]
            if let sha = file.sha256 { entry["lfs"] = ["oid": sha, "size": file.size, "pointerSize": 134] }
            entries.append(entry)
        }
        for dir in directories.sorted() {
            entries.append(["type": "directory", "oid": String(repeating: "0", count: 40), "size": 0, "path": dir])
        }
        let start = Int(query["cursor"] ?? "0") ?? 0
        let page = Array(entries.dropFirst(start).prefix(pageSize))
        var headers: [(String, String)] = []
        if start + pageSize < entries.count {
            headers.append(("Link", "<\(endpoint)/api/models/\(repo.id)/tree/\(revision)?recursive=\(query["recursive"] ?? "false")&cursor=\(start + pageSize)>; rel=\"next\""))
        }
        try await json(out, page, headers: headers)
    }

    /// A file's contents, honouring `Range: bytes=N-` and the faults.
    private func content(_ file: File, _ request: RecordedRequest, _ out: RawResponder, headers: [(String, String)]) async throws -> AfterResponse {
        var start = 0
        if let range = request.headers.first(name: "range"), range.hasPrefix("bytes="), let dash = range.firstIndex(of: "-"),
            let from = Int(range[range.index(range.startIndex, offsetBy: 6)..<dash])
        {
            guard from < file.size || file.size == 0 else {
                try await out.respond(416, "Range Not Satisfiable", headers: [("Content-Range", "bytes */\(file.size)")], body: "")
                return .close
            }
            start = from
        }
        var head = headers + [("Accept-Ranges", "bytes"), ("Content-Length", "\(file.size - start)"), ("Content-Type", "application/octet-stream")]
        if start > 0 { head.append(("Content-Range", "bytes \(start)-\(file.size - 1)/\(file.size)")) }
        try await out.head(start > 0 ? 206 : 200, start > 0 ? "Partial Content" : "OK", headers: head, chunked: false)
        if request.method == "HEAD" { return .close }
        let (dropAt, corrupt) = state.withLock { state -> (Int?, Bool) in
            var drop: Int?
            if let after = state.faults.dropAfter[file.path], !state.dropped.contains(file.path), after > start {
                state.dropped.insert(file.path)
                drop = after
            }
            return (drop, state.faults.corrupt.contains(file.path))
        }
        let handle = try FileHandle(forReadingFrom: file.source)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(start))
        var offset = start
        let flipAt = file.size / 2
        while offset < file.size {
            var count = min(1 << 20, file.size - offset)
            if let dropAt { count = min(count, dropAt - offset) }
            guard count > 0, var bytes = try handle.read(upToCount: count).map(Array.init), !bytes.isEmpty else { break }
            if corrupt, (offset..<offset + bytes.count).contains(flipAt) { bytes[flipAt - offset] ^= 0x01 }
            try await out.send(bytes)
            offset += bytes.count
            if let dropAt, offset >= dropAt { return .close }  // mid-body: the client sees the connection end
        }
        // Closing at once could drop bytes still queued for the socket: let the client, which
        // was told `Connection: close`, end the connection once it has read the whole body.
        return .waitForClientClose
    }

    private func json(_ out: RawResponder, _ value: Any, headers: [(String, String)]) async throws {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
        try await out.respond(200, "OK", headers: headers + [("Content-Type", "application/json")], body: String(decoding: data, as: UTF8.self))
    }

    private func error(_ out: RawResponder, _ status: Int, _ code: String?, _ message: String, headers: [(String, String)] = []) async throws {
        var all = headers + [("Content-Type", "application/json"), ("X-Error-Message", message)]
        if let code { all.append(("X-Error-Code", code)) }
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["error": message]), as: UTF8.self)
        try await out.respond(status, status == 401 ? "Unauthorized" : status == 404 ? "Not Found" : "Error", headers: all, body: body)
    }

    private func split(_ uri: String) -> (String, [String: String]) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, [:]) }
        var query: [String: String] = [:]
        for pair in uri[uri.index(after: mark)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            query[String(kv[0])] = kv.count > 1 ? String(kv[1]).removingPercentEncoding : ""
        }
        return (String(uri[..<mark]), query)
    }
}
