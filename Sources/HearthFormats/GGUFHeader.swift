/// The parsed and validated front of a GGUF v2/v3 file: metadata, tensor infos, alignment
/// and where the data section starts. Layout (ggml's docs/gguf.md), all little-endian:
///
///     "GGUF"  u32 version  u64 tensor count  u64 metadata count
///     metadata: { string key, u32 value type, value }…
///     tensor infos: { string name, u32 n_dims, u64 dims[n_dims], u32 ggml type, u64 offset }…
///     padding to `general.alignment` (default 32), then the data section
///
/// (a string is a u64 byte length and the UTF-8 bytes). Parsing touches only `bytes`, so it
/// works on a mapping or on any buffer; every count, length and offset is checked against
/// the buffer before it is used or anything is allocated for it.
package struct GGUFHeader: Sendable {
    /// `GGUF` in ASCII.
    package static let magic: [UInt8] = Array("GGUF".utf8)
    /// The versions this reader accepts (v1 used 32-bit counts and is refused).
    package static let supportedVersions: ClosedRange<UInt32> = 2...3
    /// Data alignment when `general.alignment` is absent.
    package static let defaultAlignment = 32
    /// Bytes of the fixed header: magic, version, two counts.
    package static let fixedHeaderBytes = 24
    /// The fewest bytes one metadata entry takes: key length, value type, a 1-byte value.
    static let minimumEntryBytes = 8 + 4 + 1
    /// The fewest bytes one tensor info takes: name length, n_dims, one dim, type, offset.
    static let minimumTensorInfoBytes = 8 + 4 + 8 + 4 + 8

    /// The file format version (2 or 3).
    package let version: UInt32
    /// Key–value metadata.
    package let metadata: GGUFMetadata
    /// Tensor infos in file order.
    package let tensors: [GGUFTensorInfo]
    /// Data alignment in bytes (a power of two).
    package let alignment: Int
    /// Absolute byte offset where the data section starts.
    package let dataOffset: Int
    /// Size of the parsed buffer (the whole file).
    package let fileSize: Int
    private let index: [String: Int]

    /// The tensor info named `name`, or nil.
    package func tensor(named name: String) -> GGUFTensorInfo? { index[name].map { tensors[$0] } }

    /// Parses and validates the header in `bytes`, which must hold the whole file (tensor
    /// data is checked to lie inside it). `path` is used in error messages.
    /// Throws `FormatError`: `.invalidHeader` (magic, version, counts, duplicates),
    /// `.truncated` (the file ends inside the header or a string), `.invalidValue` (value
    /// types, array sizes, dims, alignment, unaligned offsets), `.unsupportedDType` (unknown
    /// ggml type id), `.shapeMismatch`, `.offsetOutOfBounds`, `.overlappingTensors`.
    package init(bytes: UnsafeRawBufferPointer, path: String? = nil) throws {
        var cursor = GGUFCursor(bytes: bytes, path: path)
        let (version, tensorCount, entryCount) = try Self.readFixedHeader(&cursor)
        self.version = version
        fileSize = bytes.count

        var entries: [(key: String, value: GGUFValue)] = []
        entries.reserveCapacity(entryCount)
        var seen = Set<String>()
        for i in 0..<entryCount {
            let key = try cursor.string("the key of metadata entry \(i)", key: nil)
            let type = try cursor.valueType("the value type of '\(key)'", key: key)
            let value = try cursor.value(of: type, key: key)
            guard seen.insert(key).inserted else {
                throw FormatError(.invalidHeader, "metadata key appears twice", path: path, key: key, remedy: "The file is corrupt")
            }
            entries.append((key, value))
        }
        metadata = GGUFMetadata(entries: entries, path: path)
        alignment = try Self.alignment(of: metadata, path: path)

        guard tensorCount <= cursor.remaining / Self.minimumTensorInfoBytes else {
            throw FormatError(
                .invalidHeader,
                "the header declares \(tensorCount) tensors; the \(cursor.remaining) bytes left after the metadata cannot hold their infos",
                path: path, remedy: "The file is truncated or corrupt")
        }
        var raw: [(info: RawTensorInfo, offset: UInt64)] = []
        raw.reserveCapacity(tensorCount)
        var index: [String: Int] = [:]
        for i in 0..<tensorCount {
            let entry = try Self.readTensorInfo(&cursor, number: i)
            guard index.updateValue(i, forKey: entry.info.name) == nil else {
                throw FormatError(.invalidHeader, "two tensors have this name", path: path, key: entry.info.name, remedy: "The file is corrupt")
            }
            raw.append(entry)
        }
        self.index = index

        // The data section starts at the next multiple of the alignment.
        dataOffset = (cursor.offset + alignment - 1) / alignment * alignment
        tensors = try Self.place(raw, dataOffset: dataOffset, alignment: alignment, fileSize: bytes.count, path: path)
    }

    /// Magic, version, tensor count and metadata count, with the counts capped by the file size.
    private static func readFixedHeader(_ c: inout GGUFCursor) throws -> (UInt32, Int, Int) {
        let path = c.path
        let head = Array(c.bytes.prefix(4))
        guard head == Array(magic.prefix(head.count)) else {
            let hex = head.map { String($0, radix: 16) }.joined(separator: " ")
            throw FormatError(
                .invalidHeader, "not a GGUF file: it starts with bytes \(hex), not \"GGUF\"", path: path,
                remedy: "Pass a .gguf model file")
        }
        guard c.bytes.count >= fixedHeaderBytes else {
            throw FormatError(
                .truncated, "file is \(c.bytes.count) bytes, too short for the \(fixedHeaderBytes)-byte GGUF header", path: path,
                remedy: "The file is truncated; download it again")
        }
        _ = try c.read(UInt32.self, "the magic", key: nil)
        let version = try c.read(UInt32.self, "the version", key: nil)
        guard supportedVersions.contains(version) else { throw unsupported(version: version, path: path) }
        let tensors = try c.read(UInt64.self, "the tensor count", key: nil)
        let entries = try c.read(UInt64.self, "the metadata count", key: nil)
        guard entries <= UInt64(c.remaining / minimumEntryBytes) else {
            throw FormatError(
                .invalidHeader,
                "the header declares \(entries) metadata entries; the \(c.remaining) bytes left in the file cannot hold them",
                path: path, remedy: "The file is truncated or corrupt")
        }
        guard tensors <= UInt64(c.remaining / minimumTensorInfoBytes) else {
            throw FormatError(
                .invalidHeader,
                "the header declares \(tensors) tensors; the \(c.remaining) bytes left in the file cannot hold their infos",
                path: path, remedy: "The file is truncated or corrupt")
        }
        return (version, Int(tensors), Int(entries))
    }

    private static func unsupported(version: UInt32, path: String?) -> FormatError {
        if version == 1 {
            return FormatError(
                .invalidHeader, "GGUF version 1 is not supported (it used 32-bit counts); this reader reads versions 2 and 3",
                path: path, remedy: "Convert the model again with a current llama.cpp")
        }
        if version.byteSwapped == 2 || version.byteSwapped == 3 {
            return FormatError(
                .invalidHeader, "this is a big-endian GGUF file, which is not supported", path: path,
                remedy: "Use the little-endian file (gguf-convert-endian converts it)")
        }
        return FormatError(
            .invalidHeader, "GGUF version \(version) is not supported; this reader reads versions 2 and 3", path: path,
            remedy: "The file is corrupt or from a newer GGUF version")
    }

    /// `general.alignment`: absent means 32; otherwise a power-of-two integer.
    private static func alignment(of metadata: GGUFMetadata, path: String?) throws -> Int {
        let key = "general.alignment"
        guard let value = metadata[key] else { return defaultAlignment }
        guard let a = value.integer, a > 0, a <= Int(UInt32.max), a & (a - 1) == 0 else {
            throw FormatError(
                .invalidValue, "alignment is \(value.description) (\(value.type)); it must be a power of two that fits in uint32",
                path: path, key: key, remedy: "The file is corrupt")
        }
        return a
    }
}
