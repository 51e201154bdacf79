/// A bounds-checked little-endian reader over a GGUF file's bytes. Every read first checks
/// that the bytes lie inside the buffer and throws `FormatError(.truncated)` naming what was
/// being read (`what`) and the metadata key or tensor (`key`) otherwise.
struct GGUFCursor {
    /// The whole file.
    let bytes: UnsafeRawBufferPointer
    /// For error messages.
    let path: String?
    /// The next byte to read.
    private(set) var offset = 0

    init(bytes: UnsafeRawBufferPointer, path: String?) {
        self.bytes = bytes
        self.path = path
    }

    /// Bytes left after `offset`.
    var remaining: Int { bytes.count - offset }

    /// Throws unless `count` more bytes are available.
    func require(_ count: Int, _ what: @autoclosure () -> String, key: String?) throws {
        guard count >= 0, count <= remaining else {
            throw FormatError(
                .truncated,
                "the file ends (at byte \(bytes.count)) inside \(what()), which needs \(count) bytes from byte \(offset)",
                path: path, key: key, remedy: "The file is truncated or corrupt; download it again")
        }
    }

    /// Reads a little-endian integer.
    mutating func read<T: FixedWidthInteger>(_: T.Type, _ what: @autoclosure () -> String, key: String?) throws -> T {
        try require(MemoryLayout<T>.size, what(), key: key)
        let value = T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        offset += MemoryLayout<T>.size
        return value
    }

    /// Reads a GGUF string: a u64 byte length, then that many UTF-8 bytes. The length is
    /// checked against the bytes left before anything is allocated; invalid UTF-8 is
    /// replaced with U+FFFD.
    mutating func string(_ what: @autoclosure () -> String, key: String?) throws -> String {
        let length = try read(UInt64.self, "the length of \(what())", key: key)
        guard length <= UInt64(remaining) else {
            throw FormatError(
                .truncated,
                "\(what()) declares a length of \(length) bytes at byte \(offset - 8) but only \(remaining) bytes are left in the file",
                path: path, key: key, remedy: "The file is truncated or corrupt; download it again")
        }
        let count = Int(length)
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]), as: UTF8.self)
        offset += count
        return text
    }

    /// Reads `count` little-endian integers (the caller has checked they fit).
    mutating func integers<T: FixedWidthInteger>(_: T.Type, count: Int) -> [T] {
        let size = MemoryLayout<T>.size
        let start = offset
        let values = [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            for i in 0..<count {
                buffer[i] = T(littleEndian: bytes.loadUnaligned(fromByteOffset: start + i * size, as: T.self))
            }
            initialized = count
        }
        offset += count * size
        return values
    }
}
