/// Which files of a repository make the model a reference names, decided from a file list
/// (the hub's tree, or a cached snapshot's files).
public struct ModelFiles: Sendable, Equatable {
    /// How the model is stored.
    public enum Format: String, Sendable { case gguf, safetensors }

    public let format: Format
    /// Files to fetch, repository-relative. For a sharded safetensors checkpoint this holds the
    /// index; the shards it names are added by `withShards(from:)`.
    public let files: [String]
    /// What to load: the GGUF file (the first of a split set), or nil for the snapshot folder.
    public let entry: String?
    /// The quant tag the GGUF file carries, when known.
    public let quant: String?

    /// Files every checkpoint wants beside its weights, when the repository has them.
    static let checkpointMetadata = [
        "config.json", "generation_config.json", "tokenizer.model", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json", "added_tokens.json",
    ]
    /// The quant picked when a GGUF repository is named without one.
    public static let defaultQuant = "Q4_K_M"

    /// Picks the files of `reference` among `paths`.
    public static func select(_ reference: ModelReference, among paths: [String]) throws -> ModelFiles {
        let ggufs = paths.filter { $0.lowercased().hasSuffix(".gguf") && !$0.lowercased().contains("mmproj") }
        if let file = reference.file {
            guard paths.contains(file) else {
                throw HubError(.fileNotFound, "\(reference.repo) has no file '\(file)'", remedy: "the GGUF files there: \(list(ggufs))")
            }
            if file.lowercased().hasSuffix(".gguf") {
                let set = try splitSet(of: file, among: ggufs, repo: reference.repo)
                return ModelFiles(format: .gguf, files: set, entry: set[0], quant: quantTag(in: file) ?? reference.quant?.uppercased())
            }
            return ModelFiles(format: .safetensors, files: [file], entry: file, quant: nil)
        }
        if let quant = reference.quant {
            let matching = ggufs.filter { carries($0, quant: quant) }
            guard !matching.isEmpty else {
                throw HubError(.noMatchingFile, "\(reference.repo) has no GGUF file carrying '\(quant)' in its name",
                    remedy: ggufs.isEmpty ? "it has no GGUF files" : "its GGUF files: \(list(ggufs))")
            }
            return try gguf(matching, quant: quant, repo: reference.repo)
        }
        if !ggufs.isEmpty {
            let preferred = ggufs.filter { carries($0, quant: defaultQuant) }
            if !preferred.isEmpty { return try gguf(preferred, quant: defaultQuant, repo: reference.repo) }
            return try gguf(ggufs, quant: nil, repo: reference.repo)
        }
        let metadata = checkpointMetadata.filter(paths.contains)
        guard paths.contains("config.json") else {
            throw HubError(.noMatchingFile, "\(reference.repo) has neither GGUF files nor a config.json of a checkpoint")
        }
        if paths.contains("model.safetensors.index.json") {
            return ModelFiles(format: .safetensors, files: metadata + ["model.safetensors.index.json"], entry: nil, quant: nil)
        }
        let weights = paths.filter { !$0.contains("/") && $0.hasSuffix(".safetensors") }
        guard !weights.isEmpty else {
            throw HubError(.noMatchingFile, "\(reference.repo) has a config.json but no .safetensors weights at its root")
        }
        return ModelFiles(format: .safetensors, files: metadata + weights.sorted(), entry: nil, quant: nil)
    }

    /// A sharded checkpoint's files with the shards its index names (`weight_map` values).
    public func withShards(from index: [String: String], available paths: [String]? = nil) throws -> ModelFiles {
        let shards = Set(index.values).sorted()
        for shard in shards {
            guard isSafeRepoPath(shard) else { throw HubError(.invalidResponse, "model.safetensors.index.json names an unsafe path '\(shard)'") }
            if let paths, !paths.contains(shard) {
                throw HubError(.fileNotFound, "model.safetensors.index.json names '\(shard)', which the repository does not have")
            }
        }
        return ModelFiles(format: format, files: files + shards.filter { !files.contains($0) }, entry: entry, quant: quant)
    }

    /// One model among GGUF candidates: a single file, or one complete split set.
    private static func gguf(_ candidates: [String], quant: String?, repo: RepoID) throws -> ModelFiles {
        var groups: [String: [String]] = [:]
        for path in candidates { groups[splitPrefix(path)?.prefix ?? path, default: []].append(path) }
        guard groups.count == 1, let only = groups.values.first else {
            throw HubError(.ambiguousFile, "\(repo) has several GGUF models\(quant.map { " carrying '\($0)'" } ?? ""): \(list(groups.keys.sorted()))",
                remedy: quant == nil ? "name one by its quant (\(repo):Q8_0, …) or with --file" : "name one with --file")
        }
        let set = try splitSet(of: only.sorted()[0], among: candidates, repo: repo)
        return ModelFiles(format: .gguf, files: set, entry: set[0], quant: quantTag(in: set[0]) ?? quant?.uppercased())
    }

    /// `name-00001-of-00003.gguf` → (`name`, 1, 3).
    static func splitPrefix(_ path: String) -> (prefix: String, index: Int, count: Int)? {
        guard path.lowercased().hasSuffix(".gguf") else { return nil }
        let stem = path.dropLast(5)
        let parts = stem.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[parts.count - 2] == "of",
            let index = Int(parts[parts.count - 3]), let count = Int(parts[parts.count - 1]),
            parts[parts.count - 3].count == 5, parts[parts.count - 1].count == 5, (1...count).contains(index)
        else { return nil }
        return (parts.dropLast(3).joined(separator: "-"), index, count)
    }

    /// All files of the split set `path` belongs to, in order (or `[path]`), checked complete.
    static func splitSet(of path: String, among paths: [String], repo: RepoID) throws -> [String] {
        guard let split = splitPrefix(path) else { return [path] }
        func padded(_ n: Int) -> String { String(repeating: "0", count: max(0, 5 - String(n).count)) + String(n) }
        let extensionPart = String(path.suffix(5))  // `.gguf` as the repository spells it
        let set = (1...split.count).map { split.prefix + "-" + padded($0) + "-of-" + padded(split.count) + extensionPart }
        let missing = set.filter { !paths.contains($0) }
        guard missing.isEmpty else {
            throw HubError(.fileNotFound, "\(repo) lacks parts of the split GGUF \(split.prefix): \(list(missing))")
        }
        return set
    }

    /// Whether a file name carries a quant tag, case-insensitively, as a whole word: `Q4_K`
    /// is not found in `Q4_K_M`, nor `Q4_0` in `IQ4_0`.
    static func carries(_ path: String, quant: String) -> Bool {
        let name = Array(path.uppercased().utf8)
        let tag = Array(quant.uppercased().utf8)
        guard !tag.isEmpty, name.count >= tag.count else { return false }
        func isWordByte(_ byte: UInt8) -> Bool { (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || byte == 95 }
        for start in 0...(name.count - tag.count) where Array(name[start..<start + tag.count]) == tag {
            let before = start == 0 ? nil : name[start - 1]
            let after = start + tag.count < name.count ? name[start + tag.count] : nil
            if before.map(isWordByte) != true && after.map(isWordByte) != true { return true }
        }
        return false
    }

    /// The quant tag in a GGUF file name (`…-Q4_K_M.gguf` → `Q4_K_M`), if it has a usual one.
    public static func quantTag(in path: String) -> String? {
        let name = (path.split(separator: "/").last.map(String.init) ?? path)
        let stem = splitPrefix(name)?.prefix ?? String(name.dropLast(name.lowercased().hasSuffix(".gguf") ? 5 : 0))
        let words = stem.split(whereSeparator: { $0 == "-" || $0 == "." })
        for word in words.reversed() {
            let upper = word.uppercased()
            if upper.hasPrefix("Q") || upper.hasPrefix("IQ") || ["F16", "BF16", "F32"].contains(upper),
                upper.count <= 10, upper.dropFirst().first?.isNumber == true || upper.hasPrefix("IQ") || upper.hasPrefix("BF") || upper.hasPrefix("F")
            {
                return upper
            }
        }
        return nil
    }

    private static func list(_ names: [String]) -> String {
        names.isEmpty ? "none" : names.prefix(20).joined(separator: ", ") + (names.count > 20 ? ", …" : "")
    }
}
