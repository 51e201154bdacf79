import Foundation
import HearthEngine

/// The prompt cache's figures as a server reports them (``LocalProvider/promptCacheStatistics``),
/// without the engine's types.
public struct LocalPromptCacheStatistics: Sendable, Equatable {
    /// Requests whose prompt prefix came from the prompt cache.
    public var hits: Int
    /// Requests whose prompt was found nowhere (neither a slot nor the cache held any of it).
    public var misses: Int
    /// Prompt tokens served from the cache.
    public var hitTokens: Int
    /// Bytes of KV rows held in memory now, and the budget.
    public var bytes: Int
    public var budget: Int
    /// Blocks held in memory now.
    public var blocks: Int
    /// Block parts evicted to stay within the budget, and the bytes they freed.
    public var evictions: Int
    public var evictedBytes: Int
    /// Disk tier: blocks read back, blocks written, files refused (corrupt, truncated or
    /// another model's), bytes held.
    public var diskReads: Int
    public var diskWrites: Int
    public var diskRejected: Int
    public var diskBytes: Int

    /// All zero (tests).
    init() { self.init(PromptCacheStatistics()) }

    init(_ s: PromptCacheStatistics) {
        hits = s.hits
        misses = s.misses
        hitTokens = s.hitTokens
        bytes = s.bytes
        budget = s.budget
        blocks = s.blocks
        evictions = s.evictions
        evictedBytes = s.evictedBytes
        diskReads = s.diskReads
        diskWrites = s.diskWrites
        diskRejected = s.diskRejected
        diskBytes = s.diskBytes
    }
}

extension LocalProvider {
    /// What the loaded model's prompt cache has done and holds (nil before the model has loaded,
    /// or when the cache is off). The counters start again when the model is reloaded.
    public var promptCacheStatistics: LocalPromptCacheStatistics? {
        generatorIfLoaded?.promptCacheStatistics.map(LocalPromptCacheStatistics.init)
    }
}
