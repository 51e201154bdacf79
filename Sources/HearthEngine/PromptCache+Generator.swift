import Foundation

extension Generator {
    /// What the prompt cache has done and holds (nil when this generator has none). Answers at
    /// once, also while a step runs.
    package var promptCacheStatistics: PromptCacheStatistics? { promptCache?.currentStatistics }

    /// Where the prompt cache's disk tier keeps this model's blocks (nil without one).
    package var promptCacheDirectory: URL? { promptCache?.disk?.directory }

    /// The prompt cache `options` ask for over `cache` (nil when off), with its disk tier
    /// keyed to `model`'s file(s), identity and this cache's layout and type. A disk tier whose
    /// directory cannot be made, or whose model files cannot be read to key it, is left out
    /// (memory only; a debug log line says why).
    /// - Throws: `EngineError` `.invalidOption` for a block size out of range.
    static func makePromptCache(_ options: PromptCacheOptions, model: TransformerModel, cache: KVCache) throws -> PromptCache? {
        guard options.isEnabled else { return nil }
        guard (1...4096).contains(options.blockTokens) else {
            throw EngineError(.invalidOption, "prompt cache blocks must be 1 to 4096 tokens, got \(options.blockTokens)")
        }
        var disk: PromptCacheDisk?
        if let root = options.directory {
            let layout = PromptCache.Layout(cache: cache, blockTokens: options.blockTokens)
            if let key = PromptCacheDisk.key(
                forModel: model.path, identity: identity(of: model), kvType: cache.type, layout: layout)
            {
                disk = PromptCacheDisk(
                    root: root, name: model.path.deletingPathExtension().lastPathComponent, modelKey: key,
                    budget: options.diskBytes, pendingLimit: max(256 << 20, options.bytes / 4))
            } else {
                PromptCacheDisk.logger.debug("prompt cache disk tier not used: the model's files cannot be read to key it")
            }
        }
        return PromptCache(options: options, cache: cache, disk: disk)
    }
}

extension Generator {
    /// Between the chunks of a long prompt, on a model with sliding-window layers: stores the
    /// blocks slot `s` has computed so far, with their window rows, before the next chunk drops
    /// the oldest of those rows. A request's end stores only the window rows its slot still
    /// holds (the last window's worth), so without this a prompt that shares only an earlier
    /// part of this one — the system prompt of another sub-agent, a conversation forked further
    /// back than a window — could not be restored there (a restore at m needs the window rows
    /// of the W − 1 positions before m). Blocks the cache holds already cost only their hashing.
    /// `ropeLength` is the length the slot's keys were computed for (LongRoPE's factor family).
    func keepWindowRows(slot s: Int, ropeLength: Int) {
        guard let promptCache, !promptCache.layout.windowLayers.isEmpty else { return }
        let held = min(slots[s].tokens.count, decoder.cache.counts[s])
        promptCache.store(
            slots[s].tokens.prefix(held), cache: decoder.cache, sequence: s,
            longFactors: decoder.usesLongFactors(length: ropeLength))
    }
}

extension Generator {
    /// ``modelIdentity`` computed from the model alone (the same recipe: architecture, decoder
    /// options, parameter count, bytes per weight type), for use before the generator exists.
    static func identity(of model: TransformerModel) -> UInt64 {
        var text = "\(model.architecture)|\(model.options)|\(model.parameterCount)"
        for (type, bytes) in model.weightBytesByType.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            text += "|\(type.rawValue)=\(bytes)"
        }
        return snapshotChecksum(Data(text.utf8))
    }
}
