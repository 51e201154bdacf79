import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The prompt cache's disk tier (``PromptCacheDisk``): blocks written by one generator are found
/// by the next one of the same model (a restart), checked before use; a corrupt, truncated or
/// foreign file (another model's bytes under the same block name) is removed and rebuilt, never
/// used; another model (here the same checkpoint quantized to q8_0 at load: another identity)
/// never finds the first one's blocks.
@Suite(.serialized) struct PromptCacheDiskTests {
    static let path = Fixtures.checkpoint("gemma3-tiny").path

    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-prompt-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func generator(_ model: TransformerModel, _ root: URL) throws -> Generator {
        try Generator(
            model: model, context: 1024, threads: 2, batch: 64, sequences: 1,
            promptCache: PromptCacheOptions(bytes: 64 << 20, blockTokens: 16, directory: root))
    }

    /// The keys of the first `count` blocks of `prompt` (short factors).
    static func keys(_ generator: Generator, _ prompt: [Int32], count: Int) throws -> [UInt64] {
        let cache = try #require(generator.promptCache)
        var parent = cache.root(longFactors: false)
        var keys: [UInt64] = []
        for i in 0..<count {
            parent = PromptCache.key(parent: parent, tokens: prompt[(i * 16)..<((i + 1) * 16)])
            keys.append(parent)
        }
        return keys
    }

    static func file(_ generator: Generator, _ key: UInt64) throws -> URL {
        try #require(generator.promptCache?.disk).url(for: key)
    }

    static func flush(_ generator: Generator) { generator.promptCache?.disk?.waitForWrites() }

    /// A restart: a new generator of the same model and directory finds the first one's blocks
    /// on disk (all of its 300-token conversation but the last partial block) and continues as a
    /// fresh prefill does.
    @Test func aRestartFindsTheBlocksOnDisk() throws {
        let root = try Self.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        let model = try TransformerModel(path: Self.path)
        let vocab = model.options.vocabSize
        let a = PromptCacheTests.prompt(80, length: 300, vocab: vocab)
        let first = try Self.generator(model, root)
        let turn = try PromptCacheTests.run(first, a, maxTokens: 2)
        Self.flush(first)
        #expect(first.promptCacheStatistics?.diskWrites == 18)

        let restarted = try Self.generator(model, root)
        #expect(restarted.promptCacheDirectory?.path == first.promptCacheDirectory?.path)
        let next = a + turn.tokens + PromptCacheTests.prompt(81, length: 20, vocab: vocab)
        let outcome = try PromptCacheTests.run(restarted, next, maxTokens: 2)
        #expect(outcome.summary?.cachedPromptTokens == 288)
        let statistics = try #require(restarted.promptCacheStatistics)
        #expect(statistics.diskReads == 18 && statistics.diskRejected == 0)
        // Read ahead before the admission, off the scheduler thread; none read by the scheduler.
        #expect(statistics.prefetchedBlocks == 18 && statistics.schedulerDiskReads == 0, "\(statistics)")
        let plain = try Generator(model: model, context: 1024, threads: 2, batch: 64, sequences: 1)
        PromptCacheTests.expectAgreement(outcome, try PromptCacheTests.run(plain, next, maxTokens: 2), tolerance: 2e-3, "restarted")
    }

    /// Block 3's file corrupted (one byte flipped in its rows) and block 5's truncated: the next
    /// process takes blocks 0–2 from disk, refuses block 3 (removed, counted), computes the rest
    /// and continues as a fresh prefill does; the blocks it stores rewrite both files, and the
    /// process after it finds the whole chain.
    @Test func corruptAndTruncatedFilesAreRebuiltNeverUsed() throws {
        let root = try Self.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        let model = try TransformerModel(path: Self.path)
        let vocab = model.options.vocabSize
        let a = PromptCacheTests.prompt(90, length: 300, vocab: vocab)
        let first = try Self.generator(model, root)
        _ = try PromptCacheTests.run(first, a, maxTokens: 1)
        Self.flush(first)
        let keys = try Self.keys(first, a, count: 18)
        let corrupt = try Self.file(first, keys[3]), truncated = try Self.file(first, keys[5])
        var bytes = try Data(contentsOf: corrupt)
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: corrupt)
        let short = try Data(contentsOf: truncated)
        try short.prefix(short.count - 100).write(to: truncated)

        let second = try Self.generator(model, root)
        let next = a + PromptCacheTests.prompt(91, length: 10, vocab: vocab)
        let outcome = try PromptCacheTests.run(second, next, maxTokens: 2)
        #expect(outcome.summary?.cachedPromptTokens == 48, "blocks 0–2 only")
        #expect(second.promptCacheStatistics?.diskRejected == 1)
        #expect(second.promptCacheStatistics?.diskReads == 3)
        let plain = try Generator(model: model, context: 1024, threads: 2, batch: 64, sequences: 1)
        PromptCacheTests.expectAgreement(outcome, try PromptCacheTests.run(plain, next, maxTokens: 2), tolerance: 2e-3, "after a corrupt block")
        Self.flush(second)
        #expect(FileManager.default.fileExists(atPath: corrupt.path), "block 3 written again")
        #expect(try Data(contentsOf: truncated).count == short.count, "block 5 written again whole")

        let third = try Self.generator(model, root)
        let whole = try PromptCacheTests.run(third, next, maxTokens: 1)
        #expect(whole.summary?.cachedPromptTokens == 304)
        #expect(third.promptCacheStatistics?.diskRejected == 0)
    }

    /// Two models, one directory: the same checkpoint quantized to q8_0 at load is another model
    /// (another identity): it finds none of the f32 model's blocks for the same prompt and keeps
    /// its own subdirectory. Its block file put in place of the first model's (same block name,
    /// another model key in its header) is refused and removed, never read into the first model.
    @Test func anotherModelsBlocksAreNeverRead() throws {
        let root = try Self.directory()
        defer { try? FileManager.default.removeItem(at: root) }
        let model = try TransformerModel(path: Self.path)
        let other = try TransformerModel(path: Self.path, quantize: .q8_0)
        let vocab = model.options.vocabSize
        let a = PromptCacheTests.prompt(95, length: 200, vocab: vocab)
        let first = try Self.generator(model, root)
        _ = try PromptCacheTests.run(first, a, maxTokens: 1)
        Self.flush(first)

        let switched = try Self.generator(other, root)
        #expect(switched.promptCacheDirectory?.path != first.promptCacheDirectory?.path)
        let theirs = try PromptCacheTests.run(switched, a + [7, 8], maxTokens: 1)
        #expect(theirs.summary?.cachedPromptTokens == 0)
        #expect(switched.promptCacheStatistics?.diskReads == 0)
        Self.flush(switched)

        // The other model's block 0 under the first model's name for it.
        let key = try Self.keys(first, a, count: 1)[0]
        let target = try Self.file(first, key)
        try FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: try Self.file(switched, key), to: target)
        let again = try Self.generator(model, root)
        let outcome = try PromptCacheTests.run(again, a + [7, 8], maxTokens: 1)
        #expect(outcome.summary?.cachedPromptTokens == 0)
        #expect(again.promptCacheStatistics?.diskRejected == 1)
        let plain = try Generator(model: model, context: 1024, threads: 2, batch: 64, sequences: 1)
        PromptCacheTests.expectAgreement(outcome, try PromptCacheTests.run(plain, a + [7, 8], maxTokens: 1), tolerance: 2e-3, "foreign block")
    }
}
