import Foundation

/// One model found in the cache, for `hearth list`.
public struct CachedModel: Sendable, Equatable {
    /// `org/repo:QUANT` for a GGUF model (`org/repo/file.gguf` when its name has no quant tag),
    /// `org/repo` for a checkpoint.
    public let name: String
    public let repo: RepoID
    public let commit: String
    /// The refs (`main`, tags) that point at this snapshot.
    public let refs: [String]
    public let format: ModelFiles.Format
    public let quant: String?
    /// Bytes on disk (the blobs the model's files link to).
    public let bytes: Int64
    /// The GGUF file (first part) or the snapshot folder.
    public let path: URL
    /// Last use by Hearth or access by another tool (the newest blob access time).
    public let lastUsed: Date?
    /// The model's files, repository-relative.
    public let files: [String]
}

extension HubModels {
    /// Every model in the cache: each GGUF file (or split set) of each snapshot, and each
    /// snapshot that holds a checkpoint (`config.json` and safetensors weights).
    public func installed() -> [CachedModel] {
        var models: [CachedModel] = []
        for repo in cache.repositories() {
            let refs = cache.refs(repo)
            for commit in cache.snapshots(repo) {
                let files = cache.files(repo, commit: commit)
                let pointing = refs.filter { $0.value == commit }.map(\.key).sorted()
                var seen = Set<String>()
                for path in files where path.lowercased().hasSuffix(".gguf") && !path.lowercased().contains("mmproj") {
                    guard let set = try? ModelFiles.splitSet(of: path, among: files, repo: repo), !seen.contains(set[0]) else { continue }
                    seen.insert(set[0])
                    let quant = ModelFiles.quantTag(in: set[0])
                    let name = quant.map { "\(repo.id):\($0)" } ?? "\(repo.id)/\(set[0])"
                    models.append(entry(name, repo, commit, pointing, .gguf, quant, set, path: cache.snapshot(repo, commit: commit, path: set[0])))
                }
                let reference = ModelReference(repo: repo)
                if seen.isEmpty, files.contains("config.json"), (try? ModelFiles.select(reference, among: files)) != nil {
                    models.append(entry(repo.id, repo, commit, pointing, .safetensors, nil, files, path: cache.snapshot(repo, commit: commit)))
                }
            }
        }
        return models
    }

    private func entry(
        _ name: String, _ repo: RepoID, _ commit: String, _ refs: [String], _ format: ModelFiles.Format, _ quant: String?,
        _ files: [String], path: URL
    ) -> CachedModel {
        var bytes: Int64 = 0
        var last: Date?
        for file in files {
            let url = cache.snapshot(repo, commit: commit, path: file)
            bytes += Int64((try? FileManager.default.attributesOfItem(atPath: url.resolvingSymlinksInPath().path)[.size] as? Int) ?? 0)
            if let used = cache.lastUsed(repo, commit: commit, path: file), used > (last ?? .distantPast) { last = used }
        }
        return CachedModel(
            name: name, repo: repo, commit: commit, refs: refs, format: format, quant: quant, bytes: bytes, path: path,
            lastUsed: last, files: files)
    }

    /// Removes a model from the cache: with a quant or file, that model's files from every
    /// snapshot holding them; without, every snapshot of the repository. Then the blobs no
    /// snapshot uses any more, empty snapshots and their refs; the repository folder goes only
    /// when no other download is in progress in it (`HubCache.removeLeftovers(_:)`: partial
    /// downloads and their lock files are kept). Returns what was removed and the bytes freed;
    /// throws `notCached` when nothing matched, `invalidReference` for a name with control
    /// characters.
    public func remove(_ reference: ModelReference) throws -> (removed: [CachedModel], freed: Int64) {
        try Self.validate(reference)
        let matching = installed().filter { model in
            guard model.repo == reference.repo else { return false }
            if let file = reference.file { return model.files.contains(file) }
            if let quant = reference.quant { return model.files.contains { ModelFiles.carries($0, quant: quant) } && model.format == .gguf }
            return true
        }
        guard !matching.isEmpty else {
            throw HubError(.notCached, "\(reference) is not in the hub cache at \(cache.root.path)", remedy: "`hearth list` shows what is there")
        }
        var freed: Int64 = 0
        if reference.quant == nil && reference.file == nil {
            for commit in cache.snapshots(reference.repo) { freed += try cache.remove(reference.repo, commit: commit) }
        } else {
            for model in matching { freed += try cache.remove(model.repo, commit: model.commit, paths: model.files) }
        }
        return (matching, freed)
    }
}
