import Foundation

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
}

/// Pins a registry entry puts on the file it names.
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
        if environment.offline {
            if let model = cached(reference) { return model }
            throw offlineMiss(reference)
        }
        let api = HubAPI(environment: environment, retry: retry)
        let repo = reference.repo
        guard isSafeRevision(reference.revision) else { throw HubError(.invalidReference, "'\(reference.revision)' is not a revision name") }
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
        markUsed(model)
        return model
    }

    /// The model from the cache when it is complete there (no network); else, when
    /// `download` is true and not offline, ``pull(_:expected:)``.
    public func resolve(_ reference: ModelReference, download: Bool = true, expected: ExpectedFile? = nil) async throws -> LocalModel {
        if let model = cached(reference) {
            markUsed(model)
            return model
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
            path: cache.snapshot(repo, commit: commit, path: selection.entry))
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
