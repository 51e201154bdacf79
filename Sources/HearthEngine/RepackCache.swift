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

/// Where GGUF weights, once rearranged into the kernels' tile layout, are kept on disk so the
/// next load of the same file maps them instead of rearranging them again (docs/REPACK-CACHE.md).
///
/// One cache file per source path (`<name>-<hash of the path>.hrc` in ``directory``). It is
/// used only when it checks out against the source file as it is now — same device, inode,
/// size and modification time, same fingerprint (a hash of the GGUF's first MiB and 65
/// samples spread over the file), the same tensors at the same offsets — and against itself
/// (magic, version, a checksum of its header, its size, and a checksum of eight 4 KiB windows
/// of every tensor). Anything else is a miss: the weights are rearranged in memory and the
/// cache file is written again (a temporary file, then `rename`, so a reader never sees a
/// partial file). A directory that cannot be written leaves the load in memory, with a
/// debug-level log line.
public struct RepackCache: Sendable, Equatable {
    /// The cache directory; nil disables the cache (every load rearranges in memory).
    public var directory: URL?
    /// Files whose rearranged matrices come to fewer bytes than this are rearranged in memory
    /// and not cached (it takes milliseconds; default 32 MiB).
    public var minimumBytes: Int

    /// A cache in `directory` (nil: disabled).
    public init(directory: URL?, minimumBytes: Int = 32 << 20) {
        self.directory = directory
        self.minimumBytes = minimumBytes
    }

    /// No cache: every load rearranges in memory.
    public static let disabled = RepackCache(directory: nil)

    /// The cache the environment asks for (``init(environment:)`` of the process's environment).
    public static var `default`: RepackCache { RepackCache(environment: ProcessInfo.processInfo.environment) }

    /// `HEARTH_REPACK_CACHE=off` (or `0`, `no`, `false`) disables the cache;
    /// `HEARTH_REPACK_CACHE_DIR` names its directory; otherwise it is
    /// `$XDG_CACHE_HOME/hearth/repack`, else `~/.cache/hearth/repack`.
    public init(environment env: [String: String]) {
        minimumBytes = 32 << 20
        if let value = env["HEARTH_REPACK_CACHE"]?.lowercased(), ["0", "off", "no", "false"].contains(value) {
            directory = nil
        } else if let dir = env["HEARTH_REPACK_CACHE_DIR"], !dir.isEmpty {
            directory = URL(fileURLWithPath: dir)
        } else if let xdg = env["XDG_CACHE_HOME"], !xdg.isEmpty {
            directory = URL(fileURLWithPath: xdg).appendingPathComponent("hearth/repack")
        } else if let home = env["HOME"], !home.isEmpty {
            directory = URL(fileURLWithPath: home).appendingPathComponent(".cache/hearth/repack")
        } else {
            directory = nil
        }
    }

    /// What a load did with the cache.
    public enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// Nothing in the file needed rearranging, it is not a single GGUF file, or what it
        /// needed was under ``RepackCache/minimumBytes`` (rearranged in memory).
        case notNeeded
        /// The cache is disabled: rearranged in memory.
        case disabled
        /// Mapped from the cache file at `path`.
        case hit(path: String)
        /// Rearranged in memory and being written to `path` on a background thread (complete
        /// by ``RepackCache/waitForPendingWrites()`` and at exit); `reason` says why the cache
        /// had no usable copy.
        case written(path: String, reason: String)
        /// Rearranged in memory; the cache could not be used or written (`reason`).
        case unwritable(reason: String)

        public var description: String {
            switch self {
            case .notNeeded: return "not needed"
            case .disabled: return "disabled"
            case .hit(let path): return "hit (\(path))"
            case .written(let path, let reason): return "written (\(path); \(reason))"
            case .unwritable(let reason): return "not used (\(reason))"
            }
        }

        /// A short name: not-needed, disabled, hit, written or unwritable.
        public var name: String {
            switch self {
            case .notNeeded: return "not-needed"
            case .disabled: return "disabled"
            case .hit: return "hit"
            case .written: return "written"
            case .unwritable: return "unwritable"
            }
        }
    }

    /// The cache file for the source at `path` (nil when the cache is disabled).
    public func fileURL(forSource path: String) -> URL? {
        guard let directory else { return nil }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        let stem = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let safe = String(stem.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" }.prefix(80))
        var hash = ContentHash()
        Array(absolute.utf8).withUnsafeBytes { hash.add($0) }
        return directory.appendingPathComponent("\(safe)-\(hash.hex).hrc")
    }

    static let logger = Logger(label: "hearth.repack-cache")
}

// MARK: - The file format

/// One matrix the cache holds: where it is in the source, what it is.
struct RepackRequest: Equatable, Codable {
    var sourceOffset: Int
    var dtype: DType
    var rows: Int
    var cols: Int
}

/// The JSON header of a cache file. Layout of the file:
///
///     0   "HEARTHRC"            8-byte magic
///     8   u32 version (1)       little-endian
///     12  u32 reserved (0)
///     16  u64 header length N
///     24  u64 header checksum   (``ContentHash`` of the N bytes)
///     32  u64 data start        (a multiple of 2 MiB, ≥ 40 + N)
///     40  N bytes of JSON       this struct
///     …   zero padding to the data start, then the tiles, each tensor on a 4096-byte boundary
struct RepackCacheHeader: Codable, Equatable {
    struct Source: Codable, Equatable {
        var path: String
        var status: MappedFile.FileStatus
        var fingerprint: String
    }
    struct Entry: Codable, Equatable {
        var tensor: RepackRequest
        /// Offset from the data start.
        var offset: Int
        var length: Int
        /// ``ContentHash`` of the tensor's sample windows.
        var check: String
    }
    var format = "hearth-repack-cache"
    var version = 1
    var source: Source
    /// Bytes from the data start to the end of the file.
    var dataLength: Int
    var tensors: [Entry]
}

extension RepackCache {
    static let magic = Array("HEARTHRC".utf8)
    static let version: UInt32 = 1
    static let preambleBytes = 40
    static let dataAlignment = 2 << 20
    static let tensorAlignment = 4096
    static let maxHeaderBytes = 64 << 20

    /// Why a cache file was not used.
    struct Miss: Error {
        var reason: String
    }

    /// The fingerprint of the source as mapped: a hash of its first MiB, 65 windows of 4 KiB
    /// spread over the whole file, and its size. Read with `pread` (not through the mapping,
    /// so nothing is added to the process's resident memory). Nil if the file at the path is
    /// no longer the one mapped.
    static func fingerprint(of source: MappedFile) -> String? {
        let fd = open(source.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard MappedFile.FileStatus(descriptor: fd) == source.status else { return nil }
        let size = source.size
        var hash = ContentHash()
        hash.add(size)
        var ranges = [0..<min(size, 1 << 20)]
        let window = 4096
        if size > window {
            for i in 0...64 {
                let start = spread(size - window, i, 64)
                ranges.append(start..<(start + window))
            }
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { buffer.deallocate() }
        for range in ranges {
            guard readFully(fd, into: buffer, count: range.count, at: range.lowerBound) else { return nil }
            hash.add(UnsafeRawBufferPointer(rebasing: buffer[0..<range.count]))
        }
        return hash.hex
    }

    /// The sample windows of a tensor of `length` bytes: eight 4 KiB windows evenly spread
    /// from its first byte to its last.
    static func sampleWindows(length: Int) -> [Range<Int>] {
        let window = min(4096, length)
        guard length > window else { return [0..<length] }
        return (0...7).map { i in
            let start = spread(length - window, i, 7)
            return start..<(start + window)
        }
    }

    /// `span × i / n` for `0 ≤ i ≤ n`, `span ≥ 0`, computed without overflow (the product is
    /// taken at double width), so any length a file can state gives windows inside it.
    static func spread(_ span: Int, _ i: Int, _ n: Int) -> Int {
        n.dividingFullWidth(span.multipliedFullWidth(by: i)).quotient
    }

    /// The check of a tensor in memory.
    static func check(_ data: UnsafeRawPointer, length: Int) -> String {
        var hash = ContentHash()
        hash.add(length)
        for w in sampleWindows(length: length) {
            hash.add(UnsafeRawBufferPointer(start: data + w.lowerBound, count: w.count))
        }
        return hash.hex
    }

    /// Reads exactly `count` bytes at `offset`.
    static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, count: Int, at offset: Int) -> Bool {
        guard let base = buffer.baseAddress, count <= buffer.count else { return false }
        var done = 0
        while done < count {
            let n = pread(fd, base + done, count - done, off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    /// Writes all of `bytes` at `offset`.
    static func writeFully(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        guard let base = bytes.baseAddress else { return bytes.isEmpty }
        return writeFully(fd, base, count: bytes.count, at: offset)
    }

    /// Writes exactly `count` bytes at `offset`.
    static func writeFully(_ fd: Int32, _ data: UnsafeRawPointer, count: Int, at offset: Int) -> Bool {
        var done = 0
        while done < count {
            let n = pwrite(fd, data + done, min(count - done, 8 << 20), off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    /// The cached tiles of `requests`, mapped, if the cache file for `source` checks out.
    /// Returns the mapping and each request's offset in it.
    func lookup(source: MappedFile, fingerprint: String, requests: [RepackRequest]) -> Result<(MappedFile, [Int]), Miss> {
        guard let url = fileURL(forSource: source.path) else { return .failure(Miss(reason: "disabled")) }
        // A file this process is still writing (the same model loaded twice) is waited for.
        PendingWrites.shared.wait()
        // Not through a link, and without waiting on a FIFO: a cache file is a regular file
        // Hearth renamed into place; anything else in its place is a miss (and is replaced).
        let fd = open(url.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            return .failure(Miss(reason: errno == ENOENT ? "no cache file yet" : "cannot open the cache file: \(String(cString: strerror(errno)))"))
        }
        defer { close(fd) }
        guard Self.isRegularFile(fd) else { return .failure(Miss(reason: "corrupt cache file: not a regular file")) }
        guard let status = MappedFile.FileStatus(descriptor: fd) else { return .failure(Miss(reason: "cannot stat the cache file")) }
        let header: RepackCacheHeader, dataStart: Int
        switch Self.readHeader(fd, size: status.size) {
        case .success(let (h, start)): (header, dataStart) = (h, start)
        case .failure(let miss): return .failure(miss)
        }
        guard header.source.status == source.status, header.source.fingerprint == fingerprint else {
            return .failure(Miss(reason: "the source file changed since the cache file was written"))
        }
        guard header.tensors.map(\.tensor) == requests else {
            return .failure(Miss(reason: "the cache file holds other tensors"))
        }
        // Every number below comes from the file: each is range-checked before it takes part
        // in any arithmetic, so a forged header (checksum recomputed) is a miss, never a trap.
        // `readHeader` has checked 0 ≤ dataStart ≤ size and dataLength ≥ 0.
        guard header.dataLength == status.size - dataStart else {
            return .failure(Miss(reason: "corrupt cache file: \(status.size - dataStart) bytes of data, its header says \(header.dataLength)"))
        }
        let window = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 64)
        defer { window.deallocate() }
        var offsets: [Int] = []
        for entry in header.tensors {
            guard Self.entryFits(entry, dataLength: header.dataLength) else {
                return .failure(Miss(reason: "corrupt cache file: a tensor entry does not fit"))
            }
            var hash = ContentHash()
            hash.add(entry.length)
            for w in Self.sampleWindows(length: entry.length) {
                guard Self.readFully(fd, into: window, count: w.count, at: dataStart + entry.offset + w.lowerBound) else {
                    return .failure(Miss(reason: "corrupt cache file: cannot read a tensor"))
                }
                hash.add(UnsafeRawBufferPointer(rebasing: window[0..<w.count]))
            }
            guard hash.hex == entry.check else {
                return .failure(Miss(reason: "corrupt cache file: a tensor's check does not match"))
            }
            offsets.append(dataStart + entry.offset)
        }
        do {
            let mapped = try MappedFile(path: url.path, hugePageAligned: true)
            guard mapped.status == status else { return .failure(Miss(reason: "the cache file changed while it was read")) }
            return .success((mapped, offsets))
        } catch {
            return .failure(Miss(reason: "cannot map the cache file: \(error)"))
        }
    }

    /// The largest row or column count a cache entry may state (2^40): more than any model
    /// has, small enough that the tile-size arithmetic cannot overflow.
    static let maxDimension = 1 << 40

    /// Whether a tensor entry of a cache file whose data is `dataLength` bytes lies inside the
    /// data, on a tile boundary, with the length its type and shape need. Every comparison is
    /// made so that no value the file states, however large or negative, can overflow.
    static func entryFits(_ entry: RepackCacheHeader.Entry, dataLength: Int) -> Bool {
        let t = entry.tensor
        guard dataLength >= 0, entry.offset >= 0, entry.length >= 0, entry.offset % tensorAlignment == 0,
            entry.offset <= dataLength, entry.length <= dataLength - entry.offset,
            (0...maxDimension).contains(t.rows), (0...maxDimension).contains(t.cols),
            let bytes = t.dtype.matrixBytes(rows: t.rows, cols: t.cols, layout: .interleaved16)
        else { return false }
        return entry.length == bytes
    }

    /// Whether `fd` is a regular file (not a FIFO, device, directory or socket).
    static func isRegularFile(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Reads and checks the preamble and JSON header.
    static func readHeader(_ fd: Int32, size: Int) -> Result<(RepackCacheHeader, Int), Miss> {
        let preamble = UnsafeMutableRawBufferPointer.allocate(byteCount: preambleBytes, alignment: 8)
        defer { preamble.deallocate() }
        guard size >= preambleBytes, readFully(fd, into: preamble, count: preambleBytes, at: 0) else {
            return .failure(Miss(reason: "corrupt cache file: shorter than its preamble"))
        }
        guard Array(preamble[0..<8]) == magic else { return .failure(Miss(reason: "corrupt cache file: bad magic")) }
        let version = UInt32(littleEndian: preamble.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        guard version == Self.version else { return .failure(Miss(reason: "cache file version \(version), this build writes \(Self.version)")) }
        // Both u64 fields are range-checked as they are read, before any conversion or sum.
        let rawLength = UInt64(littleEndian: preamble.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        let checksum = UInt64(littleEndian: preamble.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        let rawDataStart = UInt64(littleEndian: preamble.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
        guard size >= 0, rawLength > 0, rawLength <= UInt64(maxHeaderBytes), rawDataStart <= UInt64(size) else {
            return .failure(Miss(reason: "corrupt cache file: bad header length or data start"))
        }
        let length = Int(rawLength), dataStart = Int(rawDataStart)  // both now in 0...size or 0...64 MiB
        guard dataStart >= preambleBytes + length, dataStart % dataAlignment == 0 else {
            return .failure(Miss(reason: "corrupt cache file: bad header length or data start"))
        }
        let json = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 8)
        defer { json.deallocate() }
        guard readFully(fd, into: json, count: length, at: preambleBytes) else {
            return .failure(Miss(reason: "corrupt cache file: truncated header"))
        }
        var hash = ContentHash()
        hash.add(UnsafeRawBufferPointer(json))
        guard hash.value == checksum else { return .failure(Miss(reason: "corrupt cache file: header checksum does not match")) }
        guard let header = try? JSONDecoder().decode(RepackCacheHeader.self, from: Data(json)),
            header.format == "hearth-repack-cache", header.version == Int(Self.version), header.dataLength >= 0
        else { return .failure(Miss(reason: "corrupt cache file: unreadable header")) }
        return .success((header, dataStart))
    }

    /// Writes the tiles of `matrices` (in `requests` order) as the cache file of `source`:
    /// to a temporary file in the cache directory, renamed over the cache file when complete.
    /// The directory, the temporary file and its header are made before this returns (so a
    /// directory that cannot be written throws `FormatError(.ioError)` here); the tiles are
    /// written on a background thread unless `background` is false. ``waitForPendingWrites()``
    /// waits for them, as the process does at exit.
    func store(
        source: MappedFile, fingerprint: String, requests: [RepackRequest], matrices: [WeightMatrix], background: Bool = true
    ) throws -> URL {
        guard let directory, let url = fileURL(forSource: source.path) else {
            throw FormatError(.ioError, "the repack cache is disabled")
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        Self.removeStaleTemporaries(of: url)
        Self.removeOrphans(in: directory, keeping: url)
        var entries: [RepackCacheHeader.Entry] = []
        var offset = 0
        for (request, m) in zip(requests, matrices) {
            entries.append(.init(tensor: request, offset: offset, length: m.byteCount, check: Self.check(m.data, length: m.byteCount)))
            offset = (offset + m.byteCount + Self.tensorAlignment - 1) / Self.tensorAlignment * Self.tensorAlignment
        }
        let header = RepackCacheHeader(
            source: .init(path: source.path, status: source.status, fingerprint: fingerprint), dataLength: offset, tensors: entries)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(header)
        let dataStart = (Self.preambleBytes + json.count + Self.dataAlignment - 1) / Self.dataAlignment * Self.dataAlignment
        var preamble = [UInt8](repeating: 0, count: Self.preambleBytes)
        var hash = ContentHash()
        json.withUnsafeBytes { hash.add($0) }
        preamble.withUnsafeMutableBytes { p in
            p.copyMemory(from: UnsafeRawBufferPointer(start: Self.magic, count: 8))
            p.storeBytes(of: Self.version.littleEndian, toByteOffset: 8, as: UInt32.self)
            p.storeBytes(of: UInt64(json.count).littleEndian, toByteOffset: 16, as: UInt64.self)
            p.storeBytes(of: hash.value.littleEndian, toByteOffset: 24, as: UInt64.self)
            p.storeBytes(of: UInt64(dataStart).littleEndian, toByteOffset: 32, as: UInt64.self)
        }
        let (fd, temporary) = try Self.createTemporary(for: url)
        let failure: @Sendable (String) -> FormatError = { what in
            FormatError(.ioError, "cannot \(what): \(String(cString: strerror(errno)))", path: temporary.path)
        }
        guard preamble.withUnsafeBytes({ Self.writeFully(fd, $0, at: 0) }),
            json.withUnsafeBytes({ Self.writeFully(fd, $0, at: Self.preambleBytes) })
        else {
            let error = failure("write the cache file")
            close(fd)
            unlink(temporary.path)
            throw error
        }
        let total = dataStart + offset
        let tiles = zip(entries, matrices).map { (offset: dataStart + $0.offset, matrix: $1) }
        let finish: @Sendable () -> Void = {
            var published = false
            defer {
                close(fd)
                if !published { unlink(temporary.path) }
            }
            for tile in tiles {
                guard Self.writeFully(fd, tile.matrix.data, count: tile.matrix.byteCount, at: tile.offset) else {
                    Self.logger.debug("repack cache not written: \(failure("write the cache file"))")
                    return
                }
            }
            guard ftruncate(fd, off_t(total)) == 0 else {
                Self.logger.debug("repack cache not written: \(failure("size the cache file"))")
                return
            }
            guard rename(temporary.path, url.path) == 0 else {
                Self.logger.debug("repack cache not written: \(failure("rename the cache file into place"))")
                return
            }
            published = true
            Self.logger.debug("repack cache written: \(url.path)")
        }
        if background {
            PendingWrites.shared.start(finish)
        } else {
            finish()
        }
        return url
    }

    /// Serial numbers of this process's temporary files, so two writes of one cache file in
    /// one process (the same model loaded twice at once) never share a temporary.
    static let temporarySerial = Atomic<Int>(0)

    /// The temporary file number `serial` of this process for the cache file `url`:
    /// `.<name>.<pid>.<serial>.tmp` in the same directory.
    static func temporaryURL(for url: URL, serial: Int) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(serial).tmp")
    }

    /// Creates the next temporary file for `url`, exclusively (`O_CREAT | O_EXCL`), never
    /// through a symbolic link (`O_NOFOLLOW`), mode 0644 like the cache file it becomes.
    /// Whatever is already at a name — a link planted there, or a file a crashed process with
    /// the same pid left — is left alone and the next serial number tried (16 in all).
    /// Throws `FormatError(.ioError)`.
    static func createTemporary(for url: URL) throws -> (fd: Int32, url: URL) {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var temporary = url
        for _ in 0..<16 {
            temporary = temporaryURL(for: url, serial: temporarySerial.add(1, ordering: .relaxed).oldValue)
            let fd = open(temporary.path, flags, 0o644)
            if fd >= 0 { return (fd, temporary) }
            guard errno == EEXIST else { break }
        }
        throw FormatError(.ioError, "cannot create the cache file: \(String(cString: strerror(errno)))", path: temporary.path)
    }

    /// Waits until every cache file this process is writing in the background is complete
    /// (or has failed). The process does this at exit, so a short command still leaves a
    /// complete cache file behind.
    public static func waitForPendingWrites() { PendingWrites.shared.wait() }

    /// Removes cache files whose source file is gone or has changed since they were written
    /// (they would never be used again), except `keeping`.
    static func removeOrphans(in directory: URL, keeping: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasSuffix(".hrc") && name != keeping.lastPathComponent {
            let path = directory.appendingPathComponent(name).path
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard fd >= 0 else { continue }
            let size = isRegularFile(fd) ? MappedFile.FileStatus(descriptor: fd)?.size ?? 0 : 0
            let header = try? readHeader(fd, size: size).get().0
            close(fd)
            guard let header else { continue }  // not ours to judge (or another version's)
            // The source path is the file's word: opened without waiting (a FIFO there must not
            // hang the load), only to be compared with what the header recorded.
            let source = open(header.source.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            let current = source >= 0 ? MappedFile.FileStatus(descriptor: source) : nil
            if source >= 0 { close(source) }
            if current != header.source.status { unlink(path) }
        }
    }

    /// Removes temporary files of `url` left by processes that no longer run.
    static func removeStaleTemporaries(of url: URL) {
        let directory = url.deletingLastPathComponent()
        let prefix = "." + url.lastPathComponent + "."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            // `<pid>.<serial>` (or `<pid>` as earlier builds named them).
            let pidText = name.dropFirst(prefix.count).dropLast(4).split(separator: ".", omittingEmptySubsequences: false).first ?? ""
            guard let pid = Int32(pidText), pid > 0, pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { unlink(directory.appendingPathComponent(name).path) }
        }
    }
}

/// The background cache writes of this process (the repack cache's and the prompt cache's
/// disk tier); waited for at exit.
final class PendingWrites: @unchecked Sendable {
    static let shared = PendingWrites()
    private let condition = NSCondition()
    private var running = 0
    private var exitHookInstalled = false

    /// Runs `work` on a new thread named `name`, counted until it returns.
    func start(name: String = "hearth.repack-cache", _ work: @escaping @Sendable () -> Void) {
        condition.lock()
        running += 1
        if !exitHookInstalled {
            exitHookInstalled = true
            atexit { PendingWrites.shared.wait() }
        }
        condition.unlock()
        let thread = Thread { [self] in
            work()
            condition.lock()
            running -= 1
            condition.broadcast()
            condition.unlock()
        }
        thread.name = name
        thread.start()
    }

    /// Blocks until no write is running.
    func wait() {
        condition.lock()
        while running > 0 { condition.wait() }
        condition.unlock()
    }
}

/// A fast 64-bit hash for spotting changed or damaged bytes (not cryptographic): eight bytes
/// at a time, each word multiplied in and the state mixed.
struct ContentHash {
    private(set) var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        let n = bytes.count
        var i = 0
        while i + 8 <= n {
            mix(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
            i += 8
        }
        var tail: UInt64 = 0, shift: UInt64 = 0
        while i < n {
            tail |= UInt64(base.load(fromByteOffset: i, as: UInt8.self)) << shift
            shift += 8
            i += 1
        }
        mix(tail ^ (UInt64(n & 7) << 56))
    }

    mutating func add(_ value: Int) { mix(UInt64(bitPattern: Int64(value))) }

    @inline(__always)
    private mutating func mix(_ word: UInt64) {
        var k = word &* 0x87C3_7B91_1142_53D5
        k = (k << 31) | (k >> 33)
        state ^= k &* 0x4CF5_AD43_2745_937F
        state = ((state << 27) | (state >> 37)) &* 5 &+ 0x52DC_E729
    }

    /// The final value.
    var value: UInt64 {
        var h = state
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return h
    }

    /// The final value as 16 hex digits.
    var hex: String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
