import Foundation
import HearthFormats
import HearthKernels
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The prompt cache's disk tier (``PromptCacheOptions/directory``): every block the memory tier
/// stores is also written to a file of its own, and a block memory lacks is read back from its
/// file — after a restart too (docs/PROMPT-CACHE.md).
///
/// **Keyed to the model.** Files live in `<directory>/<model name>-<model key>/`, where the model
/// key hashes what makes rows valid: the model file as the repack cache keys it (device, inode,
/// size and modification time, and a hash of sampled windows of its bytes; each file of a
/// checkpoint directory), the architecture and weights' identity (``Generator/modelIdentity``),
/// the KV type and layout (layers, row bytes, which layers slide, the window, the block size).
/// Another model, a changed file or another `--kv-type` never finds these files.
///
/// **Never trusted unchecked.** A file is `<block key>.hpcb`:
///
/// | bytes | field |
/// |---|---|
/// | 8 | magic `HRTHPCB1` |
/// | 4 | format version (1) |
/// | 4 | flags (bit 0: the window part follows the full part) |
/// | 8 × 3 | model key, block key, parent block key |
/// | 4 × 5 | block index, block tokens, row bytes, full layers, window layers |
/// | 4 | reserved (0) |
/// | 4 × B | the block's tokens |
/// | … | full-layer rows, then (flag) window-layer rows, as ``PromptCache/Block`` holds them |
/// | 8 | checksum: ``ContentHash`` of the header, the tokens and each part |
///
/// A read opens the file without following links or waiting on a FIFO, requires a regular file
/// of exactly the size this layout gives, compares every header field with what the lookup
/// expects (model key, block key, parent, index, layout, tokens) and the checksum over the
/// whole mapped file. Anything else — corrupt, truncated, another model's, another version's —
/// is removed and counted (``PromptCacheStatistics/diskRejected``), and the block is computed
/// and written again; its bytes are never used.
///
/// **Writes** run on a background thread per stored chain: a temporary created exclusively
/// (`O_CREAT | O_EXCL | O_NOFOLLOW`) under a per-write serial name, renamed into place when
/// complete, so a reader never sees a partial file. The process waits for them at exit. Beyond
/// ``PromptCacheOptions/diskBytes`` the least recently used files (written or read) are removed.
///
/// `@unchecked Sendable`: the index and statistics are touched only under `lock`; the
/// directory and keys are constants.
final class PromptCacheDisk: @unchecked Sendable {
    /// This model's directory.
    let directory: URL
    let modelKey: UInt64
    let budget: Int
    private let lock = NSLock()
    /// The files held: bytes and last use.
    private var files: [UInt64: (bytes: Int, used: Int64)] = [:]
    private var total = 0
    private var reads = 0, writes = 0, rejected = 0
    /// Bytes of writes queued or running (a limit keeps a slow disk from holding evicted rows).
    private var pendingBytes = 0
    private let pendingLimit: Int

    static let magic = Array("HRTHPCB1".utf8)
    static let version: UInt32 = 1
    static let headerBytes = 64
    static let suffix = ".hpcb"
    static let logger = Logger(label: "hearth.prompt-cache")

    /// The disk tier in `root` for the model keyed `modelKey` (files in `<root>/<name>-<key>/`),
    /// holding at most `budget` bytes; nil (with a debug log line) when the directory cannot
    /// be made.
    init?(root: URL, name: String, modelKey: UInt64, budget: Int, pendingLimit: Int) {
        let safe = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" }.prefix(80))
        directory = root.appendingPathComponent("\(safe)-\(Self.hex(modelKey))")
        self.modelKey = modelKey
        self.budget = max(0, budget)
        self.pendingLimit = max(64 << 20, pendingLimit)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            Self.logger.debug("prompt cache disk tier not used: cannot create its directory (\(error.localizedDescription))")
            return nil
        }
        scan()
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    func url(for key: UInt64) -> URL { directory.appendingPathComponent(Self.hex(key) + Self.suffix) }

    /// Indexes the files already there (their modification time orders their use) and removes
    /// temporaries left by processes that no longer run.
    private func scan() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names {
            let path = directory.appendingPathComponent(name).path
            if name.hasPrefix("."), name.hasSuffix(".tmp") {
                // `.<key>.hpcb.<pid>.<serial>.tmp`
                let parts = name.split(separator: ".")
                if parts.count >= 5, let pid = Int32(parts[parts.count - 3]), pid > 0, pid != getpid(),
                    kill(pid, 0) != 0 && errno == ESRCH
                {
                    unlink(path)
                }
                continue
            }
            guard name.hasSuffix(Self.suffix), name.count == 16 + Self.suffix.count,
                let key = UInt64(name.prefix(16), radix: 16)
            else { continue }
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            #if canImport(Darwin)
            let modified = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
            #else
            let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            #endif
            files[key] = (Int(info.st_size), modified)
            total += Int(info.st_size)
        }
    }

    /// Now, in nanoseconds since the epoch (file use times).
    private static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// Bytes of a block file of `layout`, with or without the window part.
    static func fileBytes(_ layout: PromptCache.Layout, window: Bool) -> Int {
        headerBytes + 4 * layout.blockTokens + layout.fullBytes + (window ? layout.windowBytes : 0) + 8
    }

    /// The 64-byte header of a block.
    func header(key: UInt64, parent: UInt64, index: Int, window: Bool, layout: PromptCache.Layout) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.headerBytes)
        bytes.withUnsafeMutableBytes { p in
            Self.magic.withUnsafeBytes { p.copyMemory(from: $0) }
            p.storeBytes(of: Self.version.littleEndian, toByteOffset: 8, as: UInt32.self)
            p.storeBytes(of: UInt32(window ? 1 : 0).littleEndian, toByteOffset: 12, as: UInt32.self)
            p.storeBytes(of: modelKey.littleEndian, toByteOffset: 16, as: UInt64.self)
            p.storeBytes(of: key.littleEndian, toByteOffset: 24, as: UInt64.self)
            p.storeBytes(of: parent.littleEndian, toByteOffset: 32, as: UInt64.self)
            p.storeBytes(of: UInt32(truncatingIfNeeded: index).littleEndian, toByteOffset: 40, as: UInt32.self)
            p.storeBytes(of: UInt32(truncatingIfNeeded: layout.blockTokens).littleEndian, toByteOffset: 44, as: UInt32.self)
            p.storeBytes(of: UInt32(truncatingIfNeeded: layout.rowBytes).littleEndian, toByteOffset: 48, as: UInt32.self)
            p.storeBytes(of: UInt32(truncatingIfNeeded: layout.fullLayers.count).littleEndian, toByteOffset: 52, as: UInt32.self)
            p.storeBytes(of: UInt32(truncatingIfNeeded: layout.windowLayers.count).littleEndian, toByteOffset: 56, as: UInt32.self)
        }
        return bytes
    }

    /// The checksum of a block file's parts (each hashed as its own run of bytes).
    static func checksum(_ parts: [UnsafeRawBufferPointer]) -> UInt64 {
        var hash = ContentHash()
        for part in parts { hash.add(part) }
        return hash.value
    }

    // MARK: - Reading

    /// The block keyed `key` (following `parent`, at `index`, holding `tokens`) from its file, if
    /// the file checks out; a file that does not is removed and counted, and nil returned.
    func read(key: UInt64, parent: UInt64, index: Int, tokens: ArraySlice<Int32>, layout: PromptCache.Layout) -> PromptCache.Block? {
        guard lock.withLock({ files[key] != nil }) else { return nil }
        let path = url(for: key).path
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { forget(key) } else { reject(key, path: path, "cannot be opened") }
            return nil
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            reject(key, path: path, "is not a regular file")
            return nil
        }
        let size = Int(info.st_size)
        let withWindow = Self.fileBytes(layout, window: true), without = Self.fileBytes(layout, window: false)
        guard size == without || (size == withWindow && !layout.windowLayers.isEmpty) else {
            reject(key, path: path, "has \(size) bytes, not a block's")
            return nil
        }
        let hasWindow = size == withWindow && withWindow != without
        guard let mapping = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), mapping != MAP_FAILED else {
            reject(key, path: path, "cannot be mapped")
            return nil
        }
        defer { munmap(mapping, size) }
        let base = UnsafeRawPointer(mapping)
        let expected = header(key: key, parent: parent, index: index, window: hasWindow, layout: layout)
        guard memcmp(base, expected, Self.headerBytes) == 0 else {
            reject(key, path: path, "is another model's, another version's or another block's")
            return nil
        }
        let tokenBytes = 4 * layout.blockTokens
        var offset = Self.headerBytes
        let stored = (0..<layout.blockTokens).map {
            Int32(bitPattern: UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset + 4 * $0, as: UInt32.self)))
        }
        guard stored.elementsEqual(tokens) else {
            reject(key, path: path, "holds other tokens")
            return nil
        }
        offset += tokenBytes
        let fullStart = offset
        offset += layout.fullBytes
        let windowStart = offset
        if hasWindow { offset += layout.windowBytes }
        var parts = [
            UnsafeRawBufferPointer(start: base, count: Self.headerBytes),
            UnsafeRawBufferPointer(start: base + Self.headerBytes, count: tokenBytes),
            UnsafeRawBufferPointer(start: base + fullStart, count: layout.fullBytes),
        ]
        if hasWindow { parts.append(UnsafeRawBufferPointer(start: base + windowStart, count: layout.windowBytes)) }
        let sum = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        guard Self.checksum(parts) == sum else {
            reject(key, path: path, "fails its checksum")
            return nil
        }
        let block = PromptCache.Block(key: key, parent: parent, index: index, tokens: Array(tokens), layout: layout)
        block.full.pointer.copyMemory(from: base + fullStart, byteCount: layout.fullBytes)
        if hasWindow { block.addWindow().copyMemory(from: base + windowStart, byteCount: layout.windowBytes) }
        // Used now: the last to be removed for room (on disk too, for the next process).
        _ = futimens(fd, nil)
        lock.withLock {
            reads += 1
            files[key]?.used = Self.now()
        }
        return block
    }

    private func forget(_ key: UInt64) {
        lock.withLock {
            if let entry = files.removeValue(forKey: key) { total -= entry.bytes }
        }
    }

    /// Removes a file that did not check out (it is written again when its block is next stored).
    private func reject(_ key: UInt64, path: String, _ why: String) {
        Self.logger.debug("prompt cache block file removed: it \(why)")
        unlink(path)
        lock.withLock {
            rejected += 1
            if let entry = files.removeValue(forKey: key) { total -= entry.bytes }
        }
    }

    // MARK: - Writing

    /// Writes `blocks` (as they are now) on a background thread, each to its own file. Skipped
    /// when more than the pending limit is already being written.
    func write(_ blocks: [PromptCache.Block], layout: PromptCache.Layout) {
        guard !blocks.isEmpty else { return }
        let jobs = blocks.map { block in
            (key: block.key, parent: block.parent, index: block.index, tokens: block.tokens, full: block.full, window: block.window)
        }
        let bytes = jobs.reduce(0) { $0 + Self.fileBytes(layout, window: $1.window != nil) }
        let accepted = lock.withLock {
            guard pendingBytes + bytes <= pendingLimit else { return false }
            pendingBytes += bytes
            return true
        }
        guard accepted else {
            Self.logger.debug("prompt cache blocks not written: the disk is behind")
            return
        }
        PendingWrites.shared.start(name: "hearth.prompt-cache") { [self] in
            for job in jobs {
                let header = self.header(key: job.key, parent: job.parent, index: job.index, window: job.window != nil, layout: layout)
                self.writeFile(key: job.key, header: header, tokens: job.tokens, full: job.full, window: job.window)
            }
            lock.withLock { pendingBytes -= bytes }
        }
    }

    /// Writes one block file: a temporary, renamed into place when complete.
    private func writeFile(key: UInt64, header: [UInt8], tokens: [Int32], full: PromptCache.Rows, window: PromptCache.Rows?) {
        let target = url(for: key)
        guard let (fd, temporary) = Self.createTemporary(for: target) else {
            Self.logger.debug("prompt cache block not written: cannot create a temporary file (\(String(cString: strerror(errno))))")
            return
        }
        var published = false
        defer {
            close(fd)
            if !published { unlink(temporary.path) }
        }
        let littleEndianTokens = tokens.map { UInt32(bitPattern: $0).littleEndian }
        let ok = header.withUnsafeBytes { h in
            littleEndianTokens.withUnsafeBytes { t in
                var parts = [h, t, UnsafeRawBufferPointer(start: full.pointer, count: full.count)]
                if let window { parts.append(UnsafeRawBufferPointer(start: window.pointer, count: window.count)) }
                let sum = Self.checksum(parts).littleEndian
                var offset = 0
                for part in parts where !part.isEmpty {
                    guard let base = part.baseAddress, RepackCache.writeFully(fd, base, count: part.count, at: offset) else {
                        return false
                    }
                    offset += part.count
                }
                return withUnsafeBytes(of: sum) { RepackCache.writeFully(fd, $0, at: offset) }
            }
        }
        guard ok else {
            Self.logger.debug("prompt cache block not written: \(String(cString: strerror(errno)))")
            return
        }
        guard rename(temporary.path, target.path) == 0 else {
            Self.logger.debug("prompt cache block not written: cannot rename it into place (\(String(cString: strerror(errno))))")
            return
        }
        published = true
        let bytes = Self.headerBytes + 4 * tokens.count + full.count + (window?.count ?? 0) + 8
        let evict: [UInt64] = lock.withLock {
            writes += 1
            if let old = files[key] { total -= old.bytes }
            files[key] = (bytes, Self.now())
            total += bytes
            var removed: [UInt64] = []
            while total > budget, let oldest = files.min(by: { $0.value.used < $1.value.used }), oldest.key != key {
                files.removeValue(forKey: oldest.key)
                total -= oldest.value.bytes
                removed.append(oldest.key)
            }
            return removed
        }
        for old in evict { unlink(url(for: old).path) }
    }

    /// Serial numbers of this process's temporaries.
    static let temporarySerial = Atomic<Int>(0)

    /// Creates `.<name>.<pid>.<serial>.tmp` beside `url` exclusively, never through a link
    /// (the next serial is tried when a name is taken; 16 in all).
    static func createTemporary(for url: URL) -> (Int32, URL)? {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        for _ in 0..<16 {
            let serial = temporarySerial.add(1, ordering: .relaxed).oldValue
            let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(serial).tmp")
            let fd = open(temporary.path, flags, 0o644)
            if fd >= 0 { return (fd, temporary) }
            guard errno == EEXIST else { return nil }
        }
        return nil
    }

    /// Adds the disk tier's figures.
    func addStatistics(to statistics: inout PromptCacheStatistics) {
        lock.withLock {
            statistics.diskReads = reads
            statistics.diskWrites = writes
            statistics.diskRejected = rejected
            statistics.diskBytes = total
        }
    }

    /// Waits for every write this process has started (tests; the process does it at exit).
    func waitForWrites() { PendingWrites.shared.wait() }

    // MARK: - The model key

    /// The key of a model's rows: `identity` (``Generator/modelIdentity``), the model file(s) at
    /// `path` as they are now (status and sampled bytes of each), and `layout` with `kvType`.
    /// Nil when the model's files cannot be read.
    static func key(forModel path: URL, identity: UInt64, kvType: DType, layout: PromptCache.Layout) -> UInt64? {
        var hash = ContentHash()
        Array("hearth-prompt-cache-model|\(kvType.rawValue)|\(layout.rowBytes)|\(layout.blockTokens)".utf8).withUnsafeBytes { hash.add($0) }
        hash.add(Int(truncatingIfNeeded: identity))
        for layer in layout.fullLayers { hash.add(layer) }
        hash.add(-1)
        for layer in layout.windowLayers { hash.add(layer) }
        hash.add(layout.windowSize ?? 0)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path.path, isDirectory: &isDirectory) else { return nil }
        var paths = [path.path]
        if isDirectory.boolValue {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: path.path) else { return nil }
            paths = names.sorted().filter { !$0.hasPrefix(".") }.map { path.appendingPathComponent($0).path }
        }
        for file in paths {
            var info = stat()
            guard stat(file, &info) == 0 else { return nil }
            guard (info.st_mode & S_IFMT) == S_IFREG else { continue }
            Array(URL(fileURLWithPath: file).lastPathComponent.utf8).withUnsafeBytes { hash.add($0) }
            guard let sample = fingerprint(file) else { return nil }
            hash.add(Int(truncatingIfNeeded: sample))
        }
        return hash.value
    }

    /// A file's status (device, inode, size, modification time) and a hash of its first 64 KiB
    /// and 17 windows of 4 KiB spread over it (read with `pread`).
    static func fingerprint(_ path: String) -> UInt64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard let status = MappedFile.FileStatus(descriptor: fd) else { return nil }
        var hash = ContentHash()
        hash.add(Int(truncatingIfNeeded: status.device))
        hash.add(Int(truncatingIfNeeded: status.inode))
        hash.add(status.size)
        hash.add(Int(status.modified))
        let size = status.size
        var ranges = [0..<min(size, 64 << 10)]
        let window = 4096
        if size > window {
            for i in 0...16 {
                let start = RepackCache.spread(size - window, i, 16)
                ranges.append(start..<(start + window))
            }
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 64)
        defer { buffer.deallocate() }
        for range in ranges {
            guard RepackCache.readFully(fd, into: buffer, count: range.count, at: range.lowerBound) else { return nil }
            hash.add(UnsafeRawBufferPointer(rebasing: buffer[0..<range.count]))
        }
        return hash.value
    }
}
