#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A read-only memory mapping of a whole file. Model weights are used straight from
/// the mapping; nothing is copied at load.
///
/// `@unchecked Sendable`: the mapping is read-only and unmapped only in `deinit`.
public final class MappedFile: @unchecked Sendable {
    /// The file's path.
    public let path: String
    /// The first byte of the mapping (nil for an empty file).
    public let base: UnsafeRawPointer?
    /// File size in bytes.
    public let size: Int

    /// Maps `path`. Throws `FormatError` with `.fileNotFound` or `.ioError`.
    public init(path: String) throws {
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
        if size == 0 {
            base = nil
            return
        }
        let mapped = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
        guard let mapped, mapped != MAP_FAILED else {
            throw FormatError(.ioError, "cannot map file: \(String(cString: strerror(errno)))", path: path)
        }
        #if os(Linux)
        // Weights are streamed front to back every token; huge pages raise single-thread
        // read bandwidth substantially on x86 (measured in benchmarks/RESULTS.md, "huge pages").
        _ = madvise(mapped, size, 14 /* MADV_HUGEPAGE */)
        #endif
        base = UnsafeRawPointer(mapped)
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), size) }
    }

    /// Tells the kernel the bytes at `offset..<offset+count` will not be read again (their
    /// contents were copied elsewhere, e.g. rearranged into kernel tiles), so the pages stop
    /// counting toward the process's memory. Only whole pages inside the range are dropped;
    /// reading them later still works (the mapping is private and read-only: they are read
    /// from the file again). Out-of-range requests are ignored.
    public func dropPages(at offset: Int, count: Int) {
        guard let base, offset >= 0, count > 0, offset <= size, count <= size - offset else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard page > 0 else { return }
        let start = (offset + page - 1) / page * page
        let end = (offset + count) / page * page
        guard end > start else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, Int32(MADV_DONTNEED))
    }

    /// A pointer to `count` bytes at `offset`, after checking they lie inside the file.
    public func bytes(at offset: Int, count: Int) throws -> UnsafeRawBufferPointer {
        guard offset >= 0, count >= 0, offset <= size, count <= size - offset else {
            throw FormatError(
                .offsetOutOfBounds, "byte range \(offset)..<\(offset &+ count) lies outside the file (\(size) bytes)",
                path: path, remedy: "The file is truncated or corrupt; download it again")
        }
        guard let base else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: base + offset, count: count)
    }
}
