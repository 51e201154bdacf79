import Foundation
import HearthKernels

/// Hearth's quantized model file (`.hqf`): one memory-mappable file holding the config,
/// the tokenizer files and every tensor, already in the kernels' layout, so loading is an
/// `mmap` with no copy. Layout (docs/HQF.md):
///
///     0   "HEARTHQF"            8-byte magic
///     8   u32 version (1)       little-endian
///     12  u32 reserved (0)
///     16  u64 header length N
///     24  N bytes of JSON       config, generation config, embedded files, tensor table
///     …   zero padding to 4096, then blobs, each starting on a 4096-byte boundary
package final class HQFFile: TensorStore {
    /// The magic bytes.
    package static let magic = Array("HEARTHQF".utf8)
    /// The format version this build reads and writes.
    package static let version: UInt32 = 1
    /// Alignment of every blob.
    package static let alignment = 4096

    /// One tensor's table entry.
    package struct TensorEntry: Codable, Sendable {
        package var dtype: DType
        package var layout: WeightLayout
        package var shape: [Int]
        package var offset: Int
        package var length: Int
    }

    /// One embedded file's table entry.
    package struct FileEntry: Codable, Sendable {
        package var offset: Int
        package var length: Int
    }

    /// The JSON header.
    package struct Header: Codable, Sendable {
        package var format = "hearth-quantized"
        package var version = Int(HQFFile.version)
        /// Quantization type of the projections, and of the output matrix.
        package var quantization: [String: String]
        /// config.json, as raw JSON text.
        package var config: String
        /// generation_config.json, as raw JSON text.
        package var generationConfig: String?
        /// Embedded files (tokenizer.model, tokenizer_config.json, …).
        package var files: [String: FileEntry]
        package var tensors: [String: TensorEntry]

        enum CodingKeys: String, CodingKey {
            case format, version, quantization, config
            case generationConfig = "generation_config"
            case files, tensors
        }
    }

    /// The mapping.
    package let file: MappedFile
    /// The decoded header.
    package let header: Header

    /// Whether the file at `path` starts with the HQF magic.
    package static func isHQF(path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 8)).map { Array($0) == magic } ?? false
    }

    /// Maps and validates an `.hqf` file.
    package init(path: String) throws {
        file = try MappedFile(path: path)
        guard file.size >= 24 else { throw FormatError(.truncated, "file is too short for an HQF header", path: path) }
        let head = try file.bytes(at: 0, count: 24)
        guard Array(head[0..<8]) == Self.magic else {
            throw FormatError(.invalidHeader, "not a Hearth quantized file (bad magic)", path: path)
        }
        let version = head.loadUnaligned(fromByteOffset: 8, as: UInt32.self).littleEndian
        guard version == Self.version else {
            throw FormatError(
                .invalidHeader, "HQF version \(version) is not supported (this build reads \(Self.version))",
                path: path, remedy: "Re-create the file with this build's `hearth quantize`")
        }
        let length = head.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian
        guard length <= UInt64(min(file.size - 24, 256 << 20)) else {
            throw FormatError(.truncated, "header length \(length) runs past the end of the file", path: path)
        }
        let json = try file.bytes(at: 24, count: Int(length))
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(json))
        } catch {
            throw FormatError(.invalidHeader, "header is not valid HQF JSON: \(error)", path: path)
        }
        // Every blob must lie in the file, after the header, aligned, without overlap.
        var ranges: [(String, Int, Int)] = []
        for (name, t) in header.tensors {
            guard (1...2).contains(t.shape.count), t.shape.allSatisfy({ $0 > 0 && $0 < 1 << 31 }),
                let expected = t.dtype.matrixBytes(
                    rows: t.shape.count == 2 ? t.shape[0] : 1, cols: t.shape[t.shape.count - 1], layout: t.layout),
                expected == t.length
            else {
                throw FormatError(
                    .sizeMismatch, "tensor length \(t.length) does not match \(t.dtype) \(t.layout) \(t.shape)",
                    path: path, key: name)
            }
            ranges.append((name, t.offset, t.length))
        }
        for (name, f) in header.files { ranges.append((name, f.offset, f.length)) }
        let dataStart = 24 + Int(length)
        for (name, offset, count) in ranges {
            guard offset >= dataStart, count >= 0, offset % Self.alignment == 0, offset <= file.size,
                count <= file.size - offset
            else {
                throw FormatError(
                    .offsetOutOfBounds, "blob \(offset)..<\(offset &+ count) is outside the data section or unaligned",
                    path: path, key: name, remedy: "The file is truncated or corrupt; quantize again")
            }
        }
        let sorted = ranges.filter { $0.2 > 0 }.sorted { $0.1 < $1.1 }
        for (a, b) in zip(sorted, sorted.dropFirst()) where b.1 < a.1 + a.2 {
            throw FormatError(.overlappingTensors, "blob overlaps '\(a.0)'", path: path, key: b.0)
        }
    }

    package var tensorNames: [String] { Array(header.tensors.keys) }

    package func tensor(named name: String) throws -> TensorData? {
        guard let t = header.tensors[name] else { return nil }
        return TensorData(
            name: name, dtype: t.dtype, shape: t.shape, layout: t.layout,
            bytes: try file.bytes(at: t.offset, count: t.length), owner: file, path: file.path)
    }

    /// An embedded file's bytes.
    package func embeddedFile(_ name: String) throws -> Data? {
        guard let f = header.files[name] else { return nil }
        return Data(try file.bytes(at: f.offset, count: f.length))
    }

    /// Writes an HQF file. `tensors` are written in order; each provides its bytes through
    /// `write`, which is called once with a buffer of exactly `length` bytes to fill.
    package static func write(
        to path: String, quantization: [String: String], config: String, generationConfig: String?,
        files: [String: Data],
        tensors: [(name: String, dtype: DType, layout: WeightLayout, shape: [Int], length: Int)],
        fill: (Int, UnsafeMutableRawBufferPointer) throws -> Void
    ) throws {
        // Lay out the blobs after a generously sized header, then fix the header size.
        var header = Header(
            quantization: quantization, config: config, generationConfig: generationConfig, files: [:], tensors: [:])
        func layout(start: Int) -> Int {
            var cursor = start
            func place(_ n: Int) -> Int {
                cursor = (cursor + alignment - 1) / alignment * alignment
                defer { cursor += n }
                return cursor
            }
            for (name, data) in files.sorted(by: { $0.key < $1.key }) {
                header.files[name] = FileEntry(offset: place(data.count), length: data.count)
            }
            for t in tensors {
                header.tensors[t.name] = TensorEntry(
                    dtype: t.dtype, layout: t.layout, shape: t.shape, offset: place(t.length), length: t.length)
            }
            return cursor
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var start = alignment
        var json = Data()
        while true {
            _ = layout(start: start)
            json = try encoder.encode(header)
            if 24 + json.count <= start { break }
            start = (24 + json.count + alignment - 1) / alignment * alignment
        }
        let total = layout(start: start)
        _ = try encoder.encode(header)

        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw FormatError(.ioError, "cannot create output file", path: path)
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var head = Data(magic)
        withUnsafeBytes(of: version.littleEndian) { head.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(0)) { head.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt64(json.count).littleEndian) { head.append(contentsOf: $0) }
        head.append(json)
        try handle.write(contentsOf: head)
        func pad(to offset: Int) throws {
            let here = Int(try handle.offset())
            if offset > here { try handle.write(contentsOf: Data(count: offset - here)) }
        }
        for (name, data) in files.sorted(by: { $0.key < $1.key }) {
            try pad(to: header.files[name]?.offset ?? 0)
            try handle.write(contentsOf: data)
        }
        for (index, t) in tensors.enumerated() {
            guard let entry = header.tensors[t.name] else { continue }
            try pad(to: entry.offset)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(t.length, 1), alignment: 64)
            defer { buffer.deallocate() }
            try fill(index, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<t.length]))
            try handle.write(contentsOf: Data(bytesNoCopy: buffer.baseAddress!, count: t.length, deallocator: .none))
        }
        try pad(to: total)
    }
}
