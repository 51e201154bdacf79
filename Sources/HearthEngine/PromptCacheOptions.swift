import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a ``Generator`` keeps the keys and values of prompts beyond its sequence slots (the
/// prompt cache, docs/PROMPT-CACHE.md): a budget of host memory, the block size, and an
/// optional directory where blocks outlive the process.
public struct PromptCacheOptions: Sendable, Equatable {
    /// Bytes of KV blocks the cache may keep in memory; 0 turns the prompt cache off (the disk
    /// tier too: blocks reach the disk through memory).
    public var bytes: Int
    /// Tokens per block: a prompt is found again in whole blocks, so up to this many tokens
    /// less than what a block chain holds are recomputed (default ``defaultBlockTokens``).
    public var blockTokens: Int
    /// The disk tier's directory (nil: memory only). Blocks are written there as they are
    /// stored in memory, and read back (checked) when memory no longer holds them — after a
    /// restart too. One subdirectory per model file and KV layout.
    public var directory: URL?
    /// Bytes the disk tier may hold for one model (the oldest blocks are removed beyond it).
    public var diskBytes: Int

    /// 64 tokens: small enough that a prompt loses little to rounding (at most 63 tokens are
    /// recomputed), large enough that a block of a small model is a sizeable copy (Gemma 3
    /// 270M, f16: 1.2 MB with its window layers) and a 16k-token prompt is 256 blocks.
    public static let defaultBlockTokens = 64

    /// The disk tier's budget when none is given: 16 GiB.
    public static let defaultDiskBytes = 16 << 30

    /// The memory budget when none is given: a quarter of the machine's physical memory, at
    /// most 8 GiB (llama-server's `--cache-ram` default). A budget is a ceiling, not an
    /// allocation: the cache holds only what finished requests left.
    public static var defaultBytes: Int {
        let physical = Int(clamping: ProcessInfo.processInfo.physicalMemory)
        return min(8 << 30, max(256 << 20, physical / 4))
    }

    /// The default cache: ``defaultBytes`` of memory, no disk tier.
    public static var automatic: PromptCacheOptions { PromptCacheOptions(bytes: defaultBytes) }

    /// No prompt cache.
    public static let disabled = PromptCacheOptions(bytes: 0)

    /// A cache of `bytes` in memory (0: off), blocks of `blockTokens` tokens, and a disk tier in
    /// `directory` of at most `diskBytes` (nil: none).
    public init(
        bytes: Int, blockTokens: Int = PromptCacheOptions.defaultBlockTokens, directory: URL? = nil,
        diskBytes: Int = PromptCacheOptions.defaultDiskBytes
    ) {
        self.bytes = bytes
        self.blockTokens = blockTokens
        self.directory = directory
        self.diskBytes = diskBytes
    }

    /// Whether a cache is kept at all.
    public var isEnabled: Bool { bytes > 0 }
}

/// What a prompt cache has done since its generator was created (counters) and holds now.
package struct PromptCacheStatistics: Sendable, Equatable {
    /// Requests whose prompt prefix came from the prompt cache (longer than any slot held).
    package var hits = 0
    /// Requests whose prompt (at least one block long) was found nowhere: neither a slot nor
    /// the cache held any of it, so it was computed from its first token.
    package var misses = 0
    /// Prompt tokens served from the cache (the sum of the hits' prefixes).
    package var hitTokens = 0
    /// Bytes of KV rows held in memory now.
    package var bytes = 0
    /// Blocks held in memory now.
    package var blocks = 0
    /// The memory budget in bytes.
    package var budget = 0
    /// Parts of blocks removed to stay within the budget (a block's window-layer rows count
    /// apart from the block).
    package var evictions = 0
    /// Bytes those evictions freed.
    package var evictedBytes = 0
    /// Blocks read back from the disk tier (checked) because memory no longer held them.
    package var diskReads = 0
    /// Of those, blocks read ahead of a request's admission, off the scheduler thread (a
    /// request whose prompt may continue a chain on disk waits for its read while the running
    /// sequences keep decoding).
    package var prefetchedBlocks = 0
    /// Of those, blocks read by the scheduler itself while admitting a request (a block evicted
    /// again between its read-ahead and the admission): running sequences waited for these.
    package var schedulerDiskReads = 0
    /// Blocks written to the disk tier.
    package var diskWrites = 0
    /// Disk files refused and removed: corrupt, truncated or another model's (never used).
    package var diskRejected = 0
    /// Bytes the disk tier holds for this model now.
    package var diskBytes = 0

    package init() {}
}
