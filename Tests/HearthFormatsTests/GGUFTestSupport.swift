import Foundation
import HearthFormats

/// Builds GGUF files byte by byte, including broken ones: every count and field can be
/// overridden.
struct GGUFBuilder {
    var magic: [UInt8] = Array("GGUF".utf8)
    var version: UInt32 = 3
    /// Overrides the declared counts (default: the real counts).
    var declaredTensorCount: UInt64?
    var declaredEntryCount: UInt64?
    /// Encoded metadata entries and tensor infos.
    var entries: [[UInt8]] = []
    var tensorInfos: [[UInt8]] = []
    /// Padding target after the tensor infos.
    var alignment = 32
    /// The data section.
    var data: [UInt8] = []

    static func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
    static func u64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
    static func string(_ s: String) -> [UInt8] { u64(UInt64(s.utf8.count)) + Array(s.utf8) }

    /// Adds a metadata entry with a raw type tag and encoded payload.
    mutating func entry(_ key: String, type: UInt32, _ payload: [UInt8]) {
        entries.append(Self.string(key) + Self.u32(type) + payload)
    }

    mutating func uint32(_ key: String, _ v: UInt32) { entry(key, type: 4, Self.u32(v)) }
    mutating func string(_ key: String, _ v: String) { entry(key, type: 8, Self.string(v)) }

    /// An array payload: element type, count, encoded elements.
    static func array(type: UInt32, count: UInt64, _ elements: [UInt8] = []) -> [UInt8] {
        u32(type) + u64(count) + elements
    }

    /// Adds a tensor info.
    mutating func tensor(_ name: String, dims: [UInt64], type: UInt32, offset: UInt64, nDims: UInt32? = nil) {
        var info = Self.string(name) + Self.u32(nDims ?? UInt32(dims.count))
        for d in dims { info += Self.u64(d) }
        info += Self.u32(type) + Self.u64(offset)
        tensorInfos.append(info)
    }

    /// Adds an F32 tensor of `count` values at the next aligned offset of the data section.
    mutating func f32Tensor(_ name: String, values: [Float]) {
        while data.count % alignment != 0 { data.append(0) }
        tensor(name, dims: [UInt64(values.count)], type: 0, offset: UInt64(data.count))
        for v in values { data += Self.u32(v.bitPattern) }
    }

    /// Offset where the tensor infos end (before padding).
    var headerBytes: Int { 24 + entries.reduce(0) { $0 + $1.count } + tensorInfos.reduce(0) { $0 + $1.count } }

    /// The file.
    func bytes() -> [UInt8] {
        var out = magic + Self.u32(version)
        out += Self.u64(declaredTensorCount ?? UInt64(tensorInfos.count))
        out += Self.u64(declaredEntryCount ?? UInt64(entries.count))
        for e in entries { out += e }
        for t in tensorInfos { out += t }
        if !data.isEmpty { while out.count % alignment != 0 { out.append(0) } }
        return out + data
    }
}

enum GGUFFixtures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/gguf")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: directory.appendingPathComponent(name))) }

    /// Writes `bytes` to a fresh temporary file.
    static func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).gguf").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// Parses `bytes` as a whole GGUF file in memory.
func parseGGUF(_ bytes: [UInt8]) throws -> GGUFHeader {
    try bytes.withUnsafeBytes { try GGUFHeader(bytes: $0, path: "test.gguf") }
}

/// The `FormatError` parsing `bytes` throws, or nil if it parses (or throws something else).
func ggufError(_ bytes: [UInt8]) -> FormatError? {
    do {
        _ = try parseGGUF(bytes)
        return nil
    } catch let error as FormatError {
        return error
    } catch {
        return nil
    }
}

/// Peak resident set size of this process in bytes (Linux reports ru_maxrss in KiB).
func peakResidentBytes() -> Int {
    var usage = rusage()
    #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss * 1024
    #else
    getrusage(RUSAGE_SELF, &usage)
    return usage.ru_maxrss
    #endif
}

/// Where the fields of a valid GGUF file are: region ends, and the offset and width of
/// every count, length, type tag, dim and offset field (for targeted corruption).
struct GGUFLayout {
    var entriesEnd = 0
    var infosEnd = 0
    /// (byte offset, width in bytes) of each structural field.
    var fields: [(offset: Int, width: Int)] = []

    /// Walks a valid file (trusting it: test fixtures only).
    init(_ b: [UInt8]) {
        var p = 8
        func u32() -> Int {
            defer { p += 4 }
            return (0..<4).reduce(0) { $0 | Int(b[p + $1]) << (8 * $1) }
        }
        func u64() -> Int {
            defer { p += 8 }
            return (0..<8).reduce(0) { $0 | Int(b[p + $1]) << (8 * $1) }
        }
        func field(_ width: Int) -> Int {
            fields.append((p, width))
            return width == 4 ? u32() : u64()
        }
        func skipString() { p += field(8) }
        func skipValue(_ type: Int) {
            switch type {
            case 0, 1, 7: p += 1
            case 2, 3: p += 2
            case 4, 5, 6: p += 4
            case 10, 11, 12: p += 8
            case 8: skipString()
            default:
                let element = field(4)
                let count = field(8)
                for _ in 0..<count { skipValue(element) }
            }
        }
        let tensors = field(8)
        let entries = field(8)
        for _ in 0..<entries {
            skipString()
            skipValue(field(4))
        }
        entriesEnd = p
        for _ in 0..<tensors {
            skipString()
            let dims = field(4)
            for _ in 0..<dims { _ = field(8) }
            _ = field(4)
            _ = field(8)
        }
        infosEnd = p
    }
}
