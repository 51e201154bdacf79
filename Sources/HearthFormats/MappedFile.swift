#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A read-only memory mapping of a whole file. Model weights are used straight from
/// the mapping; nothing is copied at load.
///
/// `@unchecked Sendable`: the mapping is read-only and unmapped only in `deinit`.
package final class MappedFile: @unchecked Sendable {
    /// The file's path.
    package let path: String
    /// The first byte of the mapping (nil for an empty file).
    package let base: UnsafeRawPointer?
    /// File size in bytes.
    package let size: Int
    /// The file's identity when it was mapped (device, inode, size, modification time).
    package let status: FileStatus

    /// What identifies a file's version on disk: a file replaced (new inode), rewritten
    /// (new modification time) or resized no longer matches.
    package struct FileStatus: Sendable, Equatable, Codable {
        package var device: UInt64
        package var inode: UInt64
        package var size: Int
        /// Modification time in nanoseconds since the epoch.
        package var modified: Int64

        /// The status of an open file descriptor, or nil when `fstat` fails.
        package init?(descriptor fd: Int32) {
            var info = stat()
            guard fstat(fd, &info) == 0 else { return nil }
            self.init(info)
        }

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int(info.st_size)
            #if canImport(Darwin)
            modified = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
            #else
            modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            #endif
        }
    }

    /// Maps `path`. With `hugePageAligned`, the mapping starts on a 2 MiB boundary, so file
    /// offsets that are multiples of 2 MiB can be mapped with huge pages when the page cache
    /// holds them in 2 MiB folios. Throws `FormatError` with `.fileNotFound` or `.ioError`.
    package init(path: String, hugePageAligned: Bool = false) throws {
        self.path = path
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw FormatError(
                errno == ENOENT ? .fileNotFound : .ioError, "cannot open file: \(reason)", path: path,
                remedy: "Check that the path exists and is readable")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw FormatError(.ioError, "cannot stat file: \(String(cString: strerror(errno)))", path: path)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw FormatError(.ioError, "not a regular file", path: path, remedy: "Pass a model file or directory")
        }
        size = Int(info.st_size)
        status = FileStatus(info)
        if size == 0 {
            base = nil
            return
        }
        let mapped = hugePageAligned ? Self.mapAligned(fd: fd, size: size) : mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
        guard let mapped, mapped != MAP_FAILED else {
            throw FormatError(.ioError, "cannot map file: \(String(cString: strerror(errno)))", path: path)
        }
        #if os(Linux)
        // Weights are streamed front to back every token; huge pages raise single-thread
        // read bandwidth substantially on x86 (measured in benchmarks/history/2026-11-28-harness-run-ggufs.md, the bandwidth table).
        _ = madvise(mapped, size, 14 /* MADV_HUGEPAGE */)
        #endif
        base = UnsafeRawPointer(mapped)
    }

    /// Maps `fd` read-only at a 2 MiB-aligned address: reserves 2 MiB more address space
    /// than needed, maps the file over its aligned part, and returns the rest.
    private static func mapAligned(fd: Int32, size: Int) -> UnsafeMutableRawPointer? {
        let huge = 2 << 20
        guard let reserved = mmap(nil, size + huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), reserved != MAP_FAILED
        else { return MAP_FAILED }
        let start = (Int(bitPattern: reserved) + huge - 1) / huge * huge
        let lead = start - Int(bitPattern: reserved)
        guard let aligned = UnsafeMutableRawPointer(bitPattern: start),
            let mapped = mmap(aligned, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0), mapped != MAP_FAILED
        else {
            munmap(reserved, size + huge)
            return MAP_FAILED
        }
        if lead > 0 { munmap(reserved, lead) }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let end = (start + size + pageSize - 1) / pageSize * pageSize
        let tail = Int(bitPattern: reserved) + size + huge - end
        if tail > 0, let tailStart = UnsafeMutableRawPointer(bitPattern: end) { munmap(tailStart, tail) }
        return mapped
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), size) }
    }

    /// Tells the kernel the bytes at `offset..<offset+count` will not be read again (their
    /// contents were copied elsewhere, e.g. rearranged into kernel tiles), so the pages stop
    /// counting toward the process's memory. Only whole pages inside the range are dropped;
    /// reading them later still works (the mapping is private and read-only: they are read
    /// from the file again). Out-of-range requests are ignored.
    package func dropPages(at offset: Int, count: Int) {
        guard let base, offset >= 0, count > 0, offset <= size, count <= size - offset else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard page > 0 else { return }
        let start = (offset + page - 1) / page * page
        let end = (offset + count) / page * page
        guard end > start else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, Int32(MADV_DONTNEED))
    }

    /// A pointer to `count` bytes at `offset`, after checking they lie inside the file.
    package func bytes(at offset: Int, count: Int) throws -> UnsafeRawBufferPointer {
        guard offset >= 0, count >= 0, offset <= size, count <= size - offset else {
            throw FormatError(
                .offsetOutOfBounds, "byte range \(offset)..<\(offset &+ count) lies outside the file (\(size) bytes)",
                path: path, remedy: "The file is truncated or corrupt; download it again")
        }
        guard let base else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: base + offset, count: count)
    }
}
