/// A tensor info as read, before its data is placed in the data section.
struct RawTensorInfo {
    let name: String
    let dims: [Int]
    let type: GGMLType
    let elementCount: Int
    let byteCount: Int
}

extension GGUFHeader {
    /// GGML_MAX_DIMS.
    package static let maxDimensions = 4

    /// Reads and checks one tensor info: name, 1…4 positive dims whose product fits in
    /// Int64, a known ggml type whose block size divides the row length, and the offset.
    static func readTensorInfo(_ c: inout GGUFCursor, number i: Int) throws -> (info: RawTensorInfo, offset: UInt64) {
        let path = c.path
        let name = try c.string("the name of tensor \(i)", key: nil)
        let n = try c.read(UInt32.self, "the dimension count of tensor '\(name)'", key: name)
        guard n >= 1, n <= UInt32(maxDimensions) else {
            throw FormatError(
                .invalidValue, "tensor has \(n) dimensions; GGUF allows 1 to \(maxDimensions)", path: path, key: name,
                remedy: "The file is corrupt")
        }
        var dims: [Int] = []
        var elements = 1
        for j in 0..<Int(n) {
            let d = try c.read(UInt64.self, "dimension \(j) of tensor '\(name)'", key: name)
            guard d >= 1, d <= UInt64(Int64.max) else {
                throw FormatError(
                    .invalidValue, "dimension \(j) is \(d); dimensions must be positive and fit in int64", path: path, key: name,
                    remedy: "The file is corrupt")
            }
            let (product, overflow) = elements.multipliedReportingOverflow(by: Int(d))
            guard !overflow else {
                throw FormatError(
                    .invalidValue, "dimensions \(dims + [Int(d)]) multiply past Int64", path: path, key: name,
                    remedy: "The file is corrupt")
            }
            dims.append(Int(d))
            elements = product
        }
        let typeID = try c.read(UInt32.self, "the type of tensor '\(name)'", key: name)
        guard let type = GGMLType.withID(typeID) else {
            throw FormatError(
                .unsupportedDType, "unknown ggml type id \(typeID)", path: path, key: name,
                remedy: "The file is corrupt or uses a type newer than this reader")
        }
        guard dims[0] % type.blockSize == 0 else {
            throw FormatError(
                .shapeMismatch, "row length \(dims[0]) is not a multiple of \(type.name)'s block size \(type.blockSize)",
                path: path, key: name, remedy: "The file is corrupt")
        }
        let (bytes, overflow) = (elements / type.blockSize).multipliedReportingOverflow(by: type.bytesPerBlock)
        guard !overflow else {
            throw FormatError(
                .invalidValue, "\(elements) elements of \(type.name) need more bytes than Int64 can count", path: path,
                key: name, remedy: "The file is corrupt")
        }
        let offset = try c.read(UInt64.self, "the data offset of tensor '\(name)'", key: name)
        return (RawTensorInfo(name: name, dims: dims, type: type, elementCount: elements, byteCount: bytes), offset)
    }

    /// Places tensors in the data section: each offset aligned, each range inside the file,
    /// no two ranges overlapping.
    static func place(
        _ raw: [(info: RawTensorInfo, offset: UInt64)], dataOffset: Int, alignment: Int, fileSize: Int, path: String?
    ) throws -> [GGUFTensorInfo] {
        let dataLength = max(0, fileSize - dataOffset)
        var tensors: [GGUFTensorInfo] = []
        tensors.reserveCapacity(raw.count)
        for (t, offset) in raw {
            guard offset % UInt64(alignment) == 0 else {
                throw FormatError(
                    .invalidValue, "data offset \(offset) is not a multiple of the alignment (\(alignment) bytes)",
                    path: path, key: t.name, remedy: "The file is corrupt")
            }
            guard offset <= UInt64(dataLength), t.byteCount <= dataLength - Int(offset) else {
                throw FormatError(
                    .offsetOutOfBounds,
                    "tensor data [\(offset), \(offset) + \(t.byteCount)) runs past the end of the data section "
                        + "(\(dataLength) bytes from byte \(dataOffset) of a \(fileSize)-byte file)",
                    path: path, key: t.name, remedy: "The file is truncated or corrupt; download it again")
            }
            let o = Int(offset)
            tensors.append(
                GGUFTensorInfo(
                    name: t.name, dims: t.dims, type: t.type, offset: o, fileOffset: dataOffset + o, byteCount: t.byteCount,
                    elementCount: t.elementCount))
        }
        // Sorted by offset, file order breaking ties, so the later tensor is the one named.
        let sorted = tensors.enumerated().sorted { ($0.element.offset, $0.offset) < ($1.element.offset, $1.offset) }.map(\.element)
        for (a, b) in zip(sorted, sorted.dropFirst()) where b.offset < a.offset + a.byteCount {
            throw FormatError(
                .overlappingTensors,
                "tensor data [\(b.offset), \(b.offset + b.byteCount)) overlaps '\(a.name)' [\(a.offset), \(a.offset + a.byteCount))",
                path: path, key: b.name, remedy: "The file is corrupt")
        }
        return tensors
    }
}
