import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A model in the hub cache, ready to load.
public struct LocalModel: Sendable, Equatable {
    public let repo: RepoID
    public let commit: String
    public let format: ModelFiles.Format
    /// The quant tag of a GGUF model, when its name has one.
    public let quant: String?
    /// Repository-relative files, in the snapshot.
    public let files: [String]
    /// What to load: the GGUF file (the first part of a split set) or the snapshot folder.
    public let path: URL
    /// The repository-relative file `path` is (nil when it is the snapshot folder): the file
    /// a registry entry's pins apply to.
    public let entry: String?
}

/// Pins a registry entry puts on the file it names: checked against the hub's listing before
/// a download, and against the cache when the model is already there
/// (``HubModels/verifyPins(_:_:)``).
public struct ExpectedFile: Sendable {
    public let bytes: Int64?
    public let sha256: String?
    public init(bytes: Int64?, sha256: String?) {
        self.bytes = bytes
        self.sha256 = sha256
    }
}

/// Fetches models from the hub into the shared cache and finds them there.
public struct HubModels: Sendable {
    public let environment: HubEnvironment
    public var retry: RetryPolicy
    /// Called as files are checked, fetched and verified.
    public var progress: @Sendable (HubProgress) -> Void

    public init(environment: HubEnvironment = .current(), retry: RetryPolicy = RetryPolicy(), progress: @escaping @Sendable (HubProgress) -> Void = { _ in }) {
        self.environment = environment
        self.retry = retry
        self.progress = progress
    }

    public var cache: HubCache { HubCache(root: environment.cacheDirectory) }

    /// Asks the hub for the revision's commit and files, and fetches what is missing, each
    /// file verified before it is linked into the snapshot. In offline mode, the cache alone.
    public func pull(_ reference: ModelReference, expected: ExpectedFile? = nil) async throws -> LocalModel {
        try Self.validate(reference)
        if environment.offline {
            if let model = cached(reference) {
                try verifyPins(model, expected)
                return model
            }
            throw offlineMiss(reference)
        }
        let api = HubAPI(environment: environment, retry: retry)
        let repo = reference.repo
        let commit = try await api.commit(repo, revision: reference.revision)
        let tree = try await api.tree(repo, commit: commit)
        let byPath = Dictionary(tree.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        var selection = try ModelFiles.select(reference, among: tree.map(\.path))
        try cache.setRef(repo, revision: reference.revision, commit: commit)
        let download = FileDownload(api: api, cache: cache, retry: retry, progress: progress)

        func fetch(_ path: String) async throws {
            guard let file = byPath[path] else {
                throw HubError(.fileNotFound, "\(repo) has no file '\(path)' at \(commit)")
            }
            if let expected, path == selection.entry {
                if let bytes = expected.bytes, bytes != file.size {
                    throw HubError(.sizeMismatch, "\(repo)/\(path) is listed with \(file.size) bytes, the registry pins \(bytes)", remedy: "the repository changed: update models/registry.json")
                }
                if let sha = expected.sha256, sha != file.sha256 {
                    throw HubError(.checksumMismatch, "\(repo)/\(path) is listed with sha256 \(file.sha256 ?? "none"), the registry pins \(sha)", remedy: "the repository changed: update models/registry.json")
                }
            }
            try await download.fetch(repo, commit: commit, file: file)
        }
        for path in selection.files { try await fetch(path) }
        if selection.format == .safetensors, selection.files.contains("model.safetensors.index.json") {
            let index = try readIndex(cache.snapshot(repo, commit: commit, path: "model.safetensors.index.json"))
            let complete = try selection.withShards(from: index, available: tree.map(\.path))
            for path in complete.files where !selection.files.contains(path) { try await fetch(path) }
            selection = complete
        }
        let model = localModel(repo, commit: commit, selection)
        try verifyPins(model, expected)
        markUsed(model)
        return model
    }

    /// The model from the cache when it is complete there (no network) and its file agrees
    /// with the registry's pins (`expected`); else, when `download` is true and not offline,
    /// ``pull(_:expected:)`` (which fetches the pinned file, or refuses a hub that lists another).
    /// Offline, a cached file that disagrees with its pins is an error (`sizeMismatch`,
    /// `checksumMismatch`), never used.
    public func resolve(_ reference: ModelReference, download: Bool = true, expected: ExpectedFile? = nil) async throws -> LocalModel {
        try Self.validate(reference)
        if let model = cached(reference) {
            do {
                try verifyPins(model, expected)
                markUsed(model)
                return model
            } catch let error as HubError where download && !environment.offline && [.sizeMismatch, .checksumMismatch].contains(error.code) {
                return try await pull(reference, expected: expected)
            }
        }
        guard download, !environment.offline else { throw offlineMiss(reference) }
        return try await pull(reference, expected: expected)
    }

    /// The model when the cache holds all its files at the reference's revision.
    public func cached(_ reference: ModelReference) -> LocalModel? {
        guard let commit = cache.commit(reference.repo, revision: reference.revision) else { return nil }
        let files = cache.files(reference.repo, commit: commit)
        guard var selection = try? ModelFiles.select(reference, among: files) else { return nil }
        if selection.format == .safetensors, selection.files.contains("model.safetensors.index.json") {
            guard let index = try? readIndex(cache.snapshot(reference.repo, commit: commit, path: "model.safetensors.index.json")),
                let complete = try? selection.withShards(from: index, available: files)
            else { return nil }
            selection = complete
        }
        guard selection.files.allSatisfy(files.contains) else { return nil }
        return localModel(reference.repo, commit: commit, selection)
    }

    private func localModel(_ repo: RepoID, commit: String, _ selection: ModelFiles) -> LocalModel {
        LocalModel(
            repo: repo, commit: commit, format: selection.format, quant: selection.quant, files: selection.files,
            path: cache.snapshot(repo, commit: commit, path: selection.entry), entry: selection.entry)
    }

    /// Refuses a reference with a part no hub name has, before it reaches a path, a URL or a
    /// message: a revision that is not a branch, tag or commit name (control characters
    /// included), a `file` that is not a safe repository path, a quant tag with control
    /// characters. Throws `HubError(.invalidReference)`, the part shown escaped.
    public static func validate(_ reference: ModelReference) throws {
        guard isSafeRevision(reference.revision) else {
            throw HubError(.invalidReference, "'\(printableName(reference.revision))' is not a revision name", remedy: "give a branch, tag or commit id")
        }
        if let file = reference.file, !isSafeRepoPath(file) {
            throw HubError(.invalidReference, "'\(printableName(file))' is not a file path in a repository",
                remedy: "give the path as the repository lists it, without control characters, `..` or a leading `/`")
        }
        if let quant = reference.quant, quant.isEmpty || containsControlCharacters(quant) {
            throw HubError(.invalidReference, "'\(printableName(quant))' is not a quant tag", remedy: "give a tag such as Q4_K_M")
        }
    }

    /// Checks the file a model loads against the registry's pins (`expected`: size, sha256),
    /// for a model found in the cache as for one just pulled. The size is the file's; the
    /// sha256 is its blob's name when the snapshot links to a blob named by a sha256 (blobs
    /// are content-addressed: a download is checked against that name before it is renamed to
    /// it), else the file is hashed. Nothing to check without pins or for a snapshot folder.
    /// Throws `HubError(.sizeMismatch)` or `HubError(.checksumMismatch)` naming both values.
    public func verifyPins(_ model: LocalModel, _ expected: ExpectedFile?) throws {
        guard let expected, expected.bytes != nil || expected.sha256 != nil, let entry = model.entry else { return }
        let what = "the cached \(model.repo)/\(entry) (commit \(model.commit.prefix(7)))"
        let remedy = "pull it again with the hub reachable to fetch the pinned file, or update models/registry.json if its pin is out of date"
        var info = stat()
        guard stat(model.path.path, &info) == 0 else {
            throw HubError(.fileSystem, "cannot read \(what): \(String(cString: strerror(errno)))")
        }
        if let bytes = expected.bytes, Int64(info.st_size) != bytes {
            throw HubError(.sizeMismatch, "\(what) has \(info.st_size) bytes, the registry pins \(bytes)", remedy: remedy)
        }
        if let pinned = expected.sha256?.lowercased() {
            let actual: String
            if let blob = cache.blobName(model.repo, commit: model.commit, path: entry), isHex(blob, length: 64) {
                actual = blob
            } else {
                actual = try digestOf(model.path, gitBlob: false).1
            }
            guard actual == pinned else {
                throw HubError(.checksumMismatch, "\(what) has sha256 \(actual), the registry pins \(pinned)", remedy: remedy)
            }
        }
    }

    private func markUsed(_ model: LocalModel) {
        for path in model.files { cache.touch(model.repo, commit: model.commit, path: path) }
    }

    private func offlineMiss(_ reference: ModelReference) -> HubError {
        let why = environment.offline ? "HF_HUB_OFFLINE is set and " : ""
        return HubError(.notCached, "\(why)\(reference) is not in the hub cache at \(cache.root.path)",
            remedy: environment.offline ? "unset HF_HUB_OFFLINE and run `hearth pull \(reference)`" : "run `hearth pull \(reference)`")
    }

    private func readIndex(_ url: URL) throws -> [String: String] {
        struct Index: Decodable { let weight_map: [String: String] }
        guard let data = FileManager.default.contents(atPath: url.path),
            let index = try? JSONDecoder().decode(Index.self, from: data)
        else { throw HubError(.invalidResponse, "\(url.path) is not a safetensors index (no weight_map)") }
        return index.weight_map
    }
}
