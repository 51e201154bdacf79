import Foundation
import HearthFormats

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
