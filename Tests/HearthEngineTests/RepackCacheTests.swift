import Foundation
import HearthFormats
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine
@testable import HearthTokenizers

#if canImport(Glibc)
import Glibc
#endif

/// The repack cache (docs/REPACK-CACHE.md) with the real default model (Gemma 3 270M Q4_K_M,
/// whose Q4_K/Q5_K/Q6_K/Q8_0 matrices are rearranged at load): a cached copy is bitwise the
/// fresh one, a changed source or a damaged cache file is never used, and a cache directory
/// that cannot be written still loads.
@Suite(.serialized) struct RepackCacheTests {
    static let model = Fixtures.root.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path

    /// A fresh empty directory, removed by `body`'s end.
    func withTemporaryDirectory(_ body: (URL) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-repack-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try body(dir)
    }

    /// Every matrix of `a` and `b` holds the same bytes in the same layout.
    func expectSameMatrices(_ a: TransformerModel, _ b: TransformerModel, _ what: String) {
        let left = a.weights.namedMatrices(options: a.options), right = b.weights.namedMatrices(options: b.options)
        #expect(left.count == right.count, "\(what): matrix count")
        var differing: [String] = []
        for (l, r) in zip(left, right) {
            let same = l.matrix.dtype == r.matrix.dtype && l.matrix.layout == r.matrix.layout
                && l.matrix.byteCount == r.matrix.byteCount && memcmp(l.matrix.data, r.matrix.data, l.matrix.byteCount) == 0
            if !same { differing.append("\(l.role)") }
        }
        #expect(differing.isEmpty, "\(what): matrices differ: \(differing.prefix(5))")
    }

    /// Loads `path` through `cache`, and waits for the cache file it writes (if any) to be complete.
    func load(_ path: String, _ cache: RepackCache) throws -> TransformerModel {
        let model = try TransformerModel(path: path, threads: 2, repackCache: cache)
        RepackCache.waitForPendingWrites()
        return model
    }

    @Test func cachedRepackIsBitwiseTheFreshOneWithTheSameLogits() throws {
        try withTemporaryDirectory { dir in
            let cache = RepackCache(directory: dir)
            let fresh = try load(Self.model, .disabled)
            #expect(fresh.repackCacheOutcome == .disabled)
            let first = try load(Self.model, cache)
            guard case .written(let path, _) = first.repackCacheOutcome else {
                Issue.record("first load: \(first.repackCacheOutcome)")
                return
            }
            #expect(FileManager.default.fileExists(atPath: path))
            let second = try load(Self.model, cache)
            #expect(second.repackCacheOutcome == .hit(path: path))
            // Nothing left behind but the one cache file.
            let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            #expect(names == [URL(fileURLWithPath: path).lastPathComponent])
            // The mapped matrices are the cache file's, not the GGUF's or fresh memory.
            #expect(second.weights.layers[0].down.owner is MappedFile)
            #expect((second.weights.layers[0].down.owner as? MappedFile)?.path == path)
            expectSameMatrices(fresh, second, "cache hit")
            expectSameMatrices(fresh, first, "cache written")

            let prompt = try fresh.tokenizer.encode("The capital of France is", addSpecialTokens: true)
            let a = try Generator(model: fresh, context: 64, threads: 2, batch: 8, kvType: .f32).logits(for: prompt)
            let b = try Generator(model: second, context: 64, threads: 2, batch: 8, kvType: .f32).logits(for: prompt)
            #expect(a.count == b.count && a.count == prompt.count * fresh.options.vocabSize)
            #expect(a == b, "logits from the cached weights differ from the fresh repack's")
        }
    }

    @Test func aChangedSourceInvalidatesTheCache() throws {
        try withTemporaryDirectory { dir in
            // A copy of the bytes: the test changes the file, and `copyItem` would copy a symlink
            // (a worktree's models/ may link to another checkout's) as a link to the real model.
            let source = dir.appendingPathComponent("model.gguf")
            let real = URL(fileURLWithPath: Self.model).resolvingSymlinksInPath()
            try FileManager.default.copyItem(at: real, to: source)
            var status = stat()
            try #require(
                lstat(source.path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG && status.st_nlink == 1,
                "the copy must be a file of its own before it is changed")
            let cache = RepackCache(directory: dir.appendingPathComponent("cache"))
            let first = try load(source.path, cache)
            guard case .written(let cachePath, _) = first.repackCacheOutcome else {
                Issue.record("first load: \(first.repackCacheOutcome)")
                return
            }
            let hit = try load(source.path, cache).repackCacheOutcome
            #expect(hit == .hit(path: cachePath))

            // 1. Touched: same bytes, new modification time.
            var times = [timespec(tv_sec: 1_600_000_000, tv_nsec: 0), timespec(tv_sec: 1_600_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, source.path, &times, 0) == 0)
            let touched = try load(source.path, cache)
            guard case .written(_, let reason) = touched.repackCacheOutcome else {
                Issue.record("after touch: \(touched.repackCacheOutcome)")
                return
            }
            #expect(reason.contains("changed"), "\(reason)")
            let hitAfterTouch = try load(source.path, cache).repackCacheOutcome
            #expect(hitAfterTouch == .hit(path: cachePath))

            // 2. Bytes in the middle of the tensor data changed, size and modification time
            // put back as they were: the fingerprint's sample there catches it.
            let handle = try FileHandle(forUpdating: source)
            let size = try handle.seekToEnd()
            try handle.seek(toOffset: size / 2)
            let original = try handle.read(upToCount: 16) ?? Data()
            try handle.seek(toOffset: size / 2)
            try handle.write(contentsOf: Data(original.map { $0 ^ 0x5a }))
            try handle.close()
            #expect(utimensat(AT_FDCWD, source.path, &times, 0) == 0)
            let changed = try load(source.path, cache)
            guard case .written(_, let changedReason) = changed.repackCacheOutcome else {
                Issue.record("after a content change: \(changed.repackCacheOutcome)")
                return
            }
            #expect(changedReason.contains("changed"), "\(changedReason)")
            // What is used (and cached) is the changed file's weights.
            let fresh = try load(source.path, .disabled)
            expectSameMatrices(fresh, changed, "rebuilt after a change")
            let again = try load(source.path, cache)
            #expect(again.repackCacheOutcome == .hit(path: cachePath))
            expectSameMatrices(fresh, again, "cache hit after the change")
        }
    }

    /// Damage done to a cache file, and whether it leaves the file's size as it was.
    enum Damage: String, CaseIterable {
        case truncated, empty, garbage, headerByte, tensorByte, dataStartByte, appended
    }

    @Test(arguments: Damage.allCases)
    func aDamagedCacheFileIsRebuiltWithoutACrash(_ damage: Damage) throws {
        try withTemporaryDirectory { dir in
            let cache = RepackCache(directory: dir)
            let fresh = try load(Self.model, .disabled)
            guard case .written(let path, _) = try load(Self.model, cache).repackCacheOutcome else {
                Issue.record("first load did not write the cache")
                return
            }
            let url = URL(fileURLWithPath: path)
            let handle = try FileHandle(forUpdating: url)
            let size = try handle.seekToEnd()
            func flip(at offset: UInt64) throws {
                try handle.seek(toOffset: offset)
                let byte = try handle.read(upToCount: 1) ?? Data([0])
                try handle.seek(toOffset: offset)
                try handle.write(contentsOf: Data([byte[byte.startIndex] ^ 0xff]))
            }
            switch damage {
            case .truncated: try handle.truncate(atOffset: size / 2)
            case .empty: try handle.truncate(atOffset: 0)
            case .garbage:
                try handle.truncate(atOffset: 0)
                try handle.write(contentsOf: Data("not a cache file at all".utf8))
            case .headerByte: try flip(at: 100)  // inside the JSON header
            case .tensorByte: try flip(at: UInt64(2 << 20) + 10)  // the first tensor's first bytes (data start: 2 MiB)
            case .dataStartByte: try flip(at: 32)  // the preamble's data start
            case .appended:
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(repeating: 7, count: 4096))
            }
            try handle.close()
            let damaged = try load(Self.model, cache)
            guard case .written(let rewritten, let reason) = damaged.repackCacheOutcome else {
                Issue.record("\(damage): \(damaged.repackCacheOutcome)")
                return
            }
            #expect(rewritten == path)
            #expect(reason.contains("corrupt"), "\(damage): \(reason)")
            expectSameMatrices(fresh, damaged, "\(damage), rebuilt")
            let repaired = try load(Self.model, cache)
            #expect(repaired.repackCacheOutcome == .hit(path: path))
            expectSameMatrices(fresh, repaired, "\(damage), repaired cache")
        }
    }

    @Test func anUnwritableCacheDirectoryStillLoads() throws {
        try withTemporaryDirectory { dir in
            // A directory below a regular file can be neither created nor written (even by root).
            let file = dir.appendingPathComponent("file")
            try Data("x".utf8).write(to: file)
            let cache = RepackCache(directory: file.appendingPathComponent("cache"))
            let loaded = try load(Self.model, cache)
            guard case .unwritable = loaded.repackCacheOutcome else {
                Issue.record("\(loaded.repackCacheOutcome)")
                return
            }
            expectSameMatrices(try load(Self.model, .disabled), loaded, "in memory")
        }
    }

    @Test func theEnvironmentPicksTheDirectory() {
        #expect(RepackCache(environment: ["HOME": "/home/u"]).directory?.path == "/home/u/.cache/hearth/repack")
        #expect(RepackCache(environment: ["HOME": "/home/u", "XDG_CACHE_HOME": "/c"]).directory?.path == "/c/hearth/repack")
        #expect(RepackCache(environment: ["HOME": "/home/u", "HEARTH_REPACK_CACHE_DIR": "/r"]).directory?.path == "/r")
        for off in ["off", "0", "no", "false", "OFF"] {
            #expect(RepackCache(environment: ["HOME": "/home/u", "HEARTH_REPACK_CACHE": off]).directory == nil)
        }
        #expect(RepackCache(environment: [:]).directory == nil)
    }

    @Test func smallFilesAreNotCached() throws {
        try withTemporaryDirectory { dir in
            let cache = RepackCache(directory: dir, minimumBytes: Int.max)
            let outcome = try load(Self.model, cache).repackCacheOutcome
            #expect(outcome == .notNeeded)
            let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            #expect(names.isEmpty)
        }
    }
}

/// The vocabulary's fast path (`VocabularyTokenizer.spacedBytes`, which made loading Gemma's
/// 262k-token vocabulary faster) gives Foundation's bytes for every token of the default model.
@Suite struct VocabularySpacingTests {
    @Test func spacedBytesAreFoundationsForEveryGemmaToken() throws {
        let gguf = try GGUFFile(path: RepackCacheTests.model)
        let tokens = try gguf.metadata.require("tokenizer.ggml.tokens", gguf.metadata.strings)
        #expect(tokens.count > 200_000)
        var differing: [String] = []
        for token in tokens where VocabularyTokenizer.spacedBytes(token) != Array(token.replacingOccurrences(of: "\u{2581}", with: " ").utf8) {
            differing.append(token)
        }
        #expect(differing.isEmpty, "\(differing.prefix(5))")
        // Cases beside the vocabulary: a combining mark after ▁, ▁ after a non-ASCII letter, ▁ runs.
        for token in ["\u{2581}\u{0301}a", "é\u{2581}x", "\u{2581}\u{2581}", "a\u{2581}", "\u{2581}日本", "—\u{2581}", ""] {
            #expect(VocabularyTokenizer.spacedBytes(token) == Array(token.replacingOccurrences(of: "\u{2581}", with: " ").utf8), "\(token)")
        }
    }
}
