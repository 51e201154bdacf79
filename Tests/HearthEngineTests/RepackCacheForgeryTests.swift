import Foundation
import HearthFormats
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

#if canImport(Glibc)
import Glibc
#endif

/// A repack cache file (docs/REPACK-CACHE.md) whose header was forged — huge, negative or
/// inconsistent numbers, with the header checksum recomputed so that it passes — is a miss
/// that names the file as corrupt and is rebuilt, never a trap; and the temporary file a cache
/// write goes through is created exclusively, never through a link planted at its name.
@Suite(.serialized) struct RepackCacheForgeryTests {
    /// A small cache in a fresh directory: a 64 KiB source file and two q8_0 matrices
    /// (32 × 64 each) written as its cache file by `RepackCache.store`.
    final class SmallCache {
        let root: URL
        let source: MappedFile
        let cache: RepackCache
        let url: URL
        let requests: [RepackRequest]
        let fingerprint = "0123456789abcdef"
        /// The two matrices' tiles, one after the other.
        private let storage: UnsafeMutableRawPointer
        private let matrixBytes = DType.q8_0.matrixBytes(rows: 32, cols: 64, layout: .interleaved16) ?? 0

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-repack-forgery-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let sourceURL = root.appendingPathComponent("source.gguf")
            try Data((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: sourceURL)
            source = try MappedFile(path: sourceURL.path)
            cache = RepackCache(directory: root.appendingPathComponent("cache"), minimumBytes: 0)
            guard let url = cache.fileURL(forSource: sourceURL.path) else { throw CocoaError(.fileNoSuchFile) }
            self.url = url
            requests = [
                RepackRequest(sourceOffset: 0, dtype: .q8_0, rows: 32, cols: 64),
                RepackRequest(sourceOffset: 4096, dtype: .q8_0, rows: 32, cols: 64),
            ]
            storage = .allocate(byteCount: 2 * matrixBytes, alignment: 64)
            for i in 0..<2 * matrixBytes { storage.storeBytes(of: UInt8(truncatingIfNeeded: i &* 13 &+ 1), toByteOffset: i, as: UInt8.self) }
        }

        deinit {
            storage.deallocate()
            try? FileManager.default.removeItem(at: root)
        }

        /// The matrices the cache file holds (in `requests` order).
        var matrices: [WeightMatrix] {
            (0..<2).map { i in
                WeightMatrix(rows: 32, cols: 64, dtype: .q8_0, layout: .interleaved16, data: UnsafeRawPointer(storage + i * matrixBytes), owner: nil)
            }
        }

        /// Writes the cache file (in the foreground) and returns its URL.
        @discardableResult
        func store() throws -> URL {
            try cache.store(source: source, fingerprint: fingerprint, requests: requests, matrices: matrices, background: false)
        }

        func lookup() -> Result<(MappedFile, [Int]), RepackCache.Miss> {
            cache.lookup(source: source, fingerprint: fingerprint, requests: requests)
        }
    }

    /// Rewrites the cache file at `url`: its JSON header changed by `change`, and the
    /// preamble's header length and data start replaced when given; the header checksum is
    /// recomputed for the new JSON, so the file passes that check and the loader must judge
    /// the numbers themselves. The file's size is kept.
    static func forge(
        _ url: URL, length forgedLength: UInt64? = nil, dataStart forgedDataStart: UInt64? = nil,
        _ change: (inout RepackCacheHeader) -> Void = { _ in }
    ) throws {
        var file = try Data(contentsOf: url)
        func u64(_ offset: Int) -> UInt64 { file[offset..<offset + 8].enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) } }
        func put(_ value: UInt64, at offset: Int) { for i in 0..<8 { file[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) } }
        let length = Int(u64(16)), dataStart = Int(u64(32))
        var header = try JSONDecoder().decode(RepackCacheHeader.self, from: file[40..<40 + length])
        change(&header)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(header)
        try #require(40 + json.count <= dataStart, "the forged header must fit before the data")
        file.replaceSubrange(40..<dataStart, with: Data(count: dataStart - 40))
        file.replaceSubrange(40..<40 + json.count, with: json)
        var hash = ContentHash()
        json.withUnsafeBytes { hash.add($0) }
        put(forgedLength ?? UInt64(json.count), at: 16)
        put(hash.value, at: 24)
        put(forgedDataStart ?? UInt64(dataStart), at: 32)
        try file.write(to: url)
    }

    /// Forged values, each with its checksum recomputed.
    enum Forgery: String, CaseIterable {
        /// `dataLength` = Int.max: data start + data length overflowed (the trap this fixes).
        case hugeDataLength
        /// `dataLength` just past what fits beside the 2 MiB data start.
        case dataLengthPastIntMax
        case negativeDataLength
        case hugeEntryOffset
        case negativeEntryOffset
        case hugeEntryLength
        case negativeEntryLength
        case entryPastTheData
        /// The preamble's u64 fields at their maximum (negative when taken as Int).
        case hugeHeaderLength
        case hugeDataStart
        /// A 2 MiB-aligned data start near 2^63.
        case alignedHugeDataStart
        case headerLengthTopBit
    }

    @Test(arguments: Forgery.allCases)
    func aForgedHeaderIsACorruptMissNotATrap(_ forgery: Forgery) throws {
        let small = try SmallCache()
        let url = try small.store()
        guard case .success = small.lookup() else {
            Issue.record("the unforged cache file must be a hit: \(small.lookup())")
            return
        }
        switch forgery {
        case .hugeDataLength: try Self.forge(url) { $0.dataLength = Int.max }
        case .dataLengthPastIntMax: try Self.forge(url) { $0.dataLength = Int.max - (2 << 20) + 1 }
        case .negativeDataLength: try Self.forge(url) { $0.dataLength = Int.min }
        case .hugeEntryOffset: try Self.forge(url) { $0.tensors[1].offset = Int.max - 4095 }
        case .negativeEntryOffset: try Self.forge(url) { $0.tensors[1].offset = -4096 }
        case .hugeEntryLength: try Self.forge(url) { $0.tensors[0].length = Int.max }
        case .negativeEntryLength: try Self.forge(url) { $0.tensors[0].length = Int.min }
        case .entryPastTheData: try Self.forge(url) { $0.tensors[1].offset = $0.dataLength }
        case .hugeHeaderLength: try Self.forge(url, length: .max)
        case .hugeDataStart: try Self.forge(url, dataStart: .max)
        case .alignedHugeDataStart: try Self.forge(url, dataStart: (1 << 63) - (2 << 20))
        case .headerLengthTopBit: try Self.forge(url, length: 1 << 63)
        }
        switch small.lookup() {
        case .success: Issue.record("\(forgery): a forged cache file was used")
        case .failure(let miss): #expect(miss.reason.contains("corrupt"), "\(forgery): \(miss.reason)")
        }
        // The next write replaces it with a file that checks out.
        try small.store()
        guard case .success = small.lookup() else {
            Issue.record("\(forgery): the rebuilt cache file must be a hit")
            return
        }
    }

    /// Tensor entries are judged on their own, whatever the rest of the header says: row and
    /// column counts near Int.max (which would overflow the tile-size arithmetic) do not fit.
    @Test func entriesWithHugeShapesDoNotFit() {
        func entry(rows: Int = 32, cols: Int = 64, offset: Int = 0, length: Int = 2176) -> RepackCacheHeader.Entry {
            .init(tensor: RepackRequest(sourceOffset: 0, dtype: .q8_0, rows: rows, cols: cols), offset: offset, length: length, check: "")
        }
        #expect(RepackCache.entryFits(entry(), dataLength: 4096))
        #expect(!RepackCache.entryFits(entry(rows: Int.max), dataLength: Int.max))
        #expect(!RepackCache.entryFits(entry(rows: Int.max - 14), dataLength: Int.max))
        #expect(!RepackCache.entryFits(entry(cols: Int.max - 31), dataLength: Int.max))
        #expect(!RepackCache.entryFits(entry(rows: -16), dataLength: 4096))
        #expect(!RepackCache.entryFits(entry(offset: Int.max - 4095, length: Int.max), dataLength: Int.max))
        #expect(!RepackCache.entryFits(entry(), dataLength: -1))
        #expect(!RepackCache.entryFits(entry(offset: 4096), dataLength: 4096))
        // The sample windows of any length stay inside it.
        for length in [0, 1, 4096, 4097, Int.max / 2, Int.max] {
            for w in RepackCache.sampleWindows(length: length) { #expect(w.lowerBound >= 0 && w.upperBound <= length, "\(length): \(w)") }
        }
    }

    /// A FIFO or a link where the cache file should be is a miss at once (the load neither
    /// waits on the FIFO nor reads through the link), and the next write replaces it.
    @Test func aFIFOOrALinkInPlaceOfTheCacheFileIsAMiss() throws {
        let small = try SmallCache()
        try FileManager.default.createDirectory(at: small.url.deletingLastPathComponent(), withIntermediateDirectories: true)
        #expect(mkfifo(small.url.path, 0o600) == 0)
        guard case .failure(let fifoMiss) = small.lookup() else {
            Issue.record("a FIFO was used as the cache file")
            return
        }
        #expect(fifoMiss.reason.contains("not a regular file"), "\(fifoMiss.reason)")
        unlink(small.url.path)

        // A complete cache file elsewhere, linked in at the cache file's name: not used.
        let real = try small.store()
        let elsewhere = small.root.appendingPathComponent("elsewhere.hrc")
        try FileManager.default.moveItem(at: real, to: elsewhere)
        try FileManager.default.createSymbolicLink(at: small.url, withDestinationURL: elsewhere)
        guard case .failure = small.lookup() else {
            Issue.record("a cache file was read through a link")
            return
        }
        try small.store()
        var info = stat()
        #expect(lstat(small.url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG, "the write replaces the link with a file")
        guard case .success = small.lookup() else {
            Issue.record("the rewritten cache file must be a hit")
            return
        }
    }

    /// Links planted at the temporary file names a cache write will use — this build's
    /// (`.<name>.<pid>.<serial>.tmp`) and earlier builds' (`.<name>.<pid>.tmp`) — pointing at a
    /// file elsewhere and at a path that does not exist: the write creates its own file, the
    /// file a link points to is untouched and the missing one is not created.
    @Test func aLinkPlantedAtTheTemporaryPathIsNotFollowed() throws {
        let small = try SmallCache()
        let fm = FileManager.default
        try fm.createDirectory(at: small.url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let victim = small.root.appendingPathComponent("victim.txt")
        let victimBytes = Data("must stay as it is".utf8)
        try victimBytes.write(to: victim)
        let missing = small.root.appendingPathComponent("created-through-a-link")
        let next = RepackCache.temporarySerial.load(ordering: .relaxed)
        var planted = [small.url.deletingLastPathComponent().appendingPathComponent(".\(small.url.lastPathComponent).\(getpid()).tmp")]
        planted += (next..<next + 4).map { RepackCache.temporaryURL(for: small.url, serial: $0) }
        for (i, link) in planted.enumerated() {
            try fm.createSymbolicLink(at: link, withDestinationURL: i % 2 == 0 ? victim : missing)
        }

        try small.store()
        #expect(try Data(contentsOf: victim) == victimBytes, "the write went through a planted link")
        #expect(!fm.fileExists(atPath: missing.path), "the write created a file through a dangling link")
        for link in planted {
            #expect((try? fm.destinationOfSymbolicLink(atPath: link.path)) != nil, "\(link.lastPathComponent) is still the planted link")
        }
        var info = stat()
        #expect(lstat(small.url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG)
        guard case .success = small.lookup() else {
            Issue.record("the cache file written beside the planted links must be a hit")
            return
        }
        // The temporary file itself is gone (renamed into place); only the planted links remain.
        let temporaries = try fm.contentsOfDirectory(atPath: small.url.deletingLastPathComponent().path).filter { $0.hasSuffix(".tmp") }
        #expect(Set(temporaries) == Set(planted.map(\.lastPathComponent)))
    }

    /// The whole load path with the real default model: a cache file whose data length was
    /// forged to Int.max (checksum recomputed) is reported corrupt and rebuilt, and the
    /// rebuilt file is a hit with the same weights.
    @Test func theDefaultModelRebuildsAForgedCacheFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-repack-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cache = RepackCache(directory: dir)
        func load() throws -> TransformerModel {
            let model = try TransformerModel(path: RepackCacheTests.model, threads: 2, repackCache: cache)
            RepackCache.waitForPendingWrites()
            return model
        }
        guard case .written(let path, _) = try load().repackCacheOutcome else {
            Issue.record("the first load did not write the cache")
            return
        }
        try Self.forge(URL(fileURLWithPath: path)) { $0.dataLength = Int.max }
        let forged = try load()
        guard case .written(let rewritten, let reason) = forged.repackCacheOutcome else {
            Issue.record("forged: \(forged.repackCacheOutcome)")
            return
        }
        #expect(rewritten == path)
        #expect(reason.contains("corrupt"), "\(reason)")
        #expect(try load().repackCacheOutcome == .hit(path: path))
    }
}
