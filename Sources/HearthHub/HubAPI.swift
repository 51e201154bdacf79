import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A file of a repository at one commit, as the hub's tree listing gives it.
public struct HubFile: Sendable, Hashable {
    /// Repository-relative path.
    public let path: String
    /// Size in bytes.
    public let size: Int64
    /// The git blob id (sha1, 40 hex) of a plain file.
    public let blobID: String
    /// The sha256 (64 hex) of an LFS file's contents; nil for a plain file.
    public let sha256: String?

    public init(path: String, size: Int64, blobID: String, sha256: String?) {
        self.path = path
        self.size = size
        self.blobID = blobID
        self.sha256 = sha256
    }

    /// The name of its blob in the cache, as huggingface_hub names it from the `ETag` /
    /// `X-Linked-Etag`: the sha256 of an LFS file, else the git blob id.
    public var etag: String { sha256 ?? blobID }
}

/// The hub's HTTP API, the parts a download needs (paths as in huggingface_hub's `hf_api.py`
/// and `file_download.py`):
///
/// - `GET /api/models/{repo}/revision/{revision}` → `{"sha": commit, …}`
/// - `GET /api/models/{repo}/tree/{commit}?recursive=true` → `[{type, path, size, oid, lfs: {oid, size}}]`,
///   paged by a `Link: <…>; rel="next"` header
/// - `GET /{repo}/resolve/{commit}/{path}` → the file, often through a redirect to a CDN;
///   `X-Repo-Commit`, `ETag`, `X-Linked-Etag`, `X-Linked-Size`; `Range` honoured.
///
/// Errors use the hub's `X-Error-Code` header (`RepoNotFound`, `RevisionNotFound`,
/// `EntryNotFound`, `GatedRepo`) where it is sent.
struct HubAPI: Sendable {
    let environment: HubEnvironment
    let client: HTTPClient
    /// Retries of the metadata calls (file transfers have their own loop, which resumes).
    var retry = RetryPolicy()

    /// One process-wide client: redirects are followed by hand (so the token is not sent to
    /// another host), 10 s to connect, 60 s of silence ends a read.
    static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(60))
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    init(environment: HubEnvironment, retry: RetryPolicy = RetryPolicy(), client: HTTPClient = HubAPI.sharedClient) {
        self.environment = environment
        self.retry = retry
        self.client = client
    }

    /// The commit `revision` points to.
    func commit(_ repo: RepoID, revision: String) async throws -> String {
        let url = "\(environment.endpoint)/api/models/\(repo.id)/revision/\(escape(revision, keepSlash: false))"
        let (_, body) = try await json(url, repo: repo, revision: revision, file: nil)
        struct Info: Decodable { let sha: String? }
        guard let sha = (try? JSONDecoder().decode(Info.self, from: body))?.sha, isCommitHash(sha) else {
            throw HubError(.invalidResponse, "\(url) did not give a commit id (`sha`) for \(repo)@\(revision)",
                remedy: "check that HF_ENDPOINT points at a Hugging Face hub")
        }
        return sha
    }

    /// Every file of the repository at `commit`.
    func tree(_ repo: RepoID, commit: String) async throws -> [HubFile] {
        struct Entry: Decodable {
            struct LFS: Decodable { let oid: String; let size: Int64 }
            let type: String
            let path: String
            let size: Int64?
            let oid: String?
            let lfs: LFS?
        }
        var next: String? = "\(environment.endpoint)/api/models/\(repo.id)/tree/\(commit)?recursive=true"
        var files: [HubFile] = []
        var pages = 0
        while let url = next {
            pages += 1
            guard pages <= 1000 else { throw HubError(.invalidResponse, "the tree listing of \(repo) has more than 1000 pages") }
            let (headers, body) = try await json(url, repo: repo, revision: commit, file: nil)
            let entries: [Entry]
            do { entries = try JSONDecoder().decode([Entry].self, from: body) } catch {
                throw HubError(.invalidResponse, "the tree listing of \(repo)@\(commit) is not the hub's JSON: \(error)")
            }
            for entry in entries where entry.type == "file" {
                guard !containsControlCharacters(entry.path) else {
                    throw HubError(.invalidResponse,
                        "the tree listing of \(repo) has a file name with control characters ('\(printableName(entry.path))'); nothing was downloaded",
                        remedy: "such a name could rewrite what the terminal shows: ask the repository's owner to rename the file")
                }
                guard isSafeRepoPath(entry.path), let oid = entry.oid?.lowercased(), isHex(oid, length: 40) else {
                    throw HubError(.invalidResponse, "the tree listing of \(repo) has an unusable entry '\(printableName(entry.path))'")
                }
                var sha256: String?
                if let lfs = entry.lfs {
                    let sha = lfs.oid.lowercased()
                    guard isHex(sha, length: 64), lfs.size >= 0 else {
                        throw HubError(.invalidResponse, "the tree listing of \(repo) gives '\(printableName(entry.path))' an LFS oid that is not a sha256")
                    }
                    sha256 = sha
                }
                let size = entry.lfs?.size ?? entry.size ?? -1
                guard size >= 0 else { throw HubError(.invalidResponse, "the tree listing of \(repo) gives no size for '\(printableName(entry.path))'") }
                files.append(HubFile(path: entry.path, size: size, blobID: oid, sha256: sha256))
            }
            next = nextPage(headers.first(name: "link"))
        }
        return files
    }

    /// `{endpoint}/{repo}/resolve/{commit}/{path}`.
    func resolveURL(_ repo: RepoID, commit: String, path: String) -> String {
        "\(environment.endpoint)/\(repo.id)/resolve/\(commit)/\(escape(path, keepSlash: true))"
    }

    /// GETs `url`, following up to 5 redirects; the token goes only to the endpoint's host.
    /// Returns the final response (any status) and the first hop's headers.
    func get(_ url: String, range: Int64?) async throws -> (response: HTTPClientResponse, firstHeaders: HTTPHeaders, url: String) {
        var url = url
        var firstHeaders: HTTPHeaders?
        for _ in 0..<6 {
            var request = HTTPClientRequest(url: url)
            request.method = .GET
            request.headers.add(name: "user-agent", value: "hearth")
            request.headers.add(name: "accept-encoding", value: "identity")
            if let token = environment.token, host(of: url) == host(of: environment.endpoint) {
                request.headers.add(name: "authorization", value: "Bearer \(token.value)")
            }
            if let range, range > 0 { request.headers.add(name: "range", value: "bytes=\(range)-") }
            let response = try await client.execute(request, deadline: .now() + .hours(24))
            if firstHeaders == nil { firstHeaders = response.headers }
            let status = Int(response.status.code)
            guard [301, 302, 303, 307, 308].contains(status), let location = response.headers.first(name: "location") else {
                return (response, firstHeaders ?? response.headers, url)
            }
            _ = try? await response.body.collect(upTo: 1 << 20)
            guard let next = URL(string: location, relativeTo: URL(string: url))?.absoluteString,
                next.hasPrefix("http://") || next.hasPrefix("https://")
            else { throw HubError(.invalidResponse, "a redirect from \(url) to an unusable location") }
            url = next
        }
        throw HubError(.invalidResponse, "too many redirects from \(url)")
    }

    /// GETs a JSON document (at most 64 MiB), mapping error statuses to ``HubError``s;
    /// transient failures are retried with backoff.
    private func json(_ url: String, repo: RepoID, revision: String, file: String?) async throws -> (HTTPHeaders, Data) {
        var attempt = 1
        while true {
            do { return try await jsonOnce(url, repo: repo, revision: revision, file: file) } catch {
                guard RetryPolicy.isTransient(error), attempt < retry.attempts else {
                    if let hub = error as? HubError { throw hub }
                    throw HubError(.network, "cannot reach \(environment.endpoint) for \(repo): \(error)",
                        remedy: "check the network and HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use the cache alone")
                }
                try await Task.sleep(for: .milliseconds(Int(retry.delay(after: attempt) * 1000)))
                attempt += 1
            }
        }
    }

    private func jsonOnce(_ url: String, repo: RepoID, revision: String, file: String?) async throws -> (HTTPHeaders, Data) {
        let (response, first, _) = try await get(url, range: nil)
        let status = Int(response.status.code)
        guard status == 200 else {
            _ = try? await response.body.collect(upTo: 1 << 20)
            throw failure(status: status, headers: first, repo: repo, revision: revision, file: file)
        }
        let body = try await response.body.collect(upTo: 64 << 20)
        return (response.headers, Data(body.readableBytesView))
    }

    /// The typed error for a non-success status.
    func failure(status: Int, headers: HTTPHeaders, repo: RepoID, revision: String, file: String?) -> HubError {
        let code = headers.first(name: "x-error-code")
        let tokenNote = environment.token == nil ? "no HF_TOKEN is set" : "the HF_TOKEN given was refused"
        let page = "\(environment.endpoint)/\(repo.id)"
        switch (status, code) {
        case (_, "GatedRepo"):
            return HubError(.gated, "\(repo) is a gated repository (HTTP \(status)); \(tokenNote)",
                remedy: "accept its terms at \(page) with your account, then set HF_TOKEN to an access token of that account")
        case (401, _), (403, _):
            return HubError(.unauthorized, "the hub refused access to \(repo) (HTTP \(status)); \(tokenNote)",
                remedy: "set HF_TOKEN to an access token that can read \(repo) (private and gated repositories need one; gated ones also need their terms accepted at \(page))")
        case (404, "RevisionNotFound"):
            return HubError(.revisionNotFound, "\(repo) has no revision '\(revision)'", remedy: "check --revision")
        case (404, _) where code == "EntryNotFound" || (file != nil && code != "RepoNotFound"):
            return HubError(.fileNotFound, "\(repo) has no file '\(file ?? "")' at revision \(revision)",
                remedy: "list its files at \(page)/tree/\(revision)")
        case (404, _):
            return HubError(.repositoryNotFound, "repository \(repo) not found on \(environment.endpoint)",
                remedy: "check the name; a private repository also needs HF_TOKEN")
        case (429, _), (500..., _):
            return HubError(.server, "the hub answered HTTP \(status) for \(repo)\(file.map { "/" + $0 } ?? "")", remedy: "try again later")
        default:
            return HubError(.server, "the hub answered HTTP \(status) for \(repo)\(file.map { "/" + $0 } ?? "")")
        }
    }
}

/// Percent-escapes a revision or path for a URL (each component; `/` kept for paths).
func escape(_ text: String, keepSlash: Bool) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~" + (keepSlash ? "/" : ""))
    return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
}

/// `scheme://host:port` of a URL, for deciding where the token may go.
func host(of url: String) -> String? {
    guard let parsed = URL(string: url), let host = parsed.host else { return nil }
    return "\(parsed.scheme ?? "")://\(host.lowercased()):\(parsed.port ?? (parsed.scheme == "https" ? 443 : 80))"
}

/// The `rel="next"` URL of a `Link` header.
func nextPage(_ link: String?) -> String? {
    guard let link else { return nil }
    for part in link.split(separator: ",") {
        let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard pieces.count >= 2, pieces.dropFirst().contains(where: { $0 == "rel=\"next\"" || $0 == "rel=next" }) else { continue }
        let target = pieces[0]
        if target.hasPrefix("<"), target.hasSuffix(">") { return String(target.dropFirst().dropLast()) }
    }
    return nil
}

/// An ETag header as huggingface_hub's `_normalize_etag` reads it: `W/` and quotes removed.
func normalizeETag(_ value: String?) -> String? {
    guard var value else { return nil }
    if value.hasPrefix("W/") { value.removeFirst(2) }
    return value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
}
