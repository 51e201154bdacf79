import Foundation
import HearthKernels

/// Element types that may appear in a safetensors header.
package enum SafetensorsDType: String, Sendable {
    case F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2

    /// Bytes per element.
    package var size: Int {
        switch self {
        case .F64, .I64, .U64: return 8
        case .F32, .I32, .U32: return 4
        case .F16, .BF16, .I16, .U16: return 2
        case .I8, .U8, .BOOL, .F8_E4M3, .F8_E5M2: return 1
        }
    }

    /// The compute dtype for float weights, or nil for types Hearth does not run.
    package var floatDType: DType? {
        switch self {
        case .F32: return .f32
        case .F16: return .f16
        case .BF16: return .bf16
        default: return nil
        }
    }
}

/// One tensor's entry in a safetensors header, validated against the file.
package struct SafetensorsTensor: Sendable {
    /// Tensor name.
    package let name: String
    /// Element type.
    package let dtype: SafetensorsDType
    /// Shape, outermost first.
    package let shape: [Int]
    /// Absolute byte offset of the data in the file.
    package let offset: Int
    /// Byte length of the data.
    package let byteCount: Int

    /// Number of elements.
    package var elementCount: Int { shape.reduce(1, *) }
}

/// A memory-mapped `.safetensors` file: an 8-byte little-endian header length, a JSON
/// header describing every tensor, then the raw tensor bytes.
///
/// Every offset and size in the header is checked against the file before use: tensors
/// must lie inside the data section, have exactly `elements × dtype size` bytes and not
/// overlap.
package final class SafetensorsFile: Sendable {
    /// The mapping, which tensors point into.
    package let file: MappedFile
    /// Tensors by name.
    package let tensors: [String: SafetensorsTensor]
    /// The optional `__metadata__` string map.
    package let metadata: [String: String]

    /// The largest JSON header accepted (the format's own limit is 100 MB).
    package static let maxHeaderBytes = 100_000_000

    // Long: the format's validation in the order the file is laid out (size, header length, JSON, each
    // tensor's dtype, shape, offsets, overlap, alignment): 12 checks, each with its own error.
    /// Opens and validates `path`.
    package init(path: String) throws {
        file = try MappedFile(path: path)
        let path = file.path
        guard file.size >= 8 else {
            throw FormatError(.truncated, "file is \(file.size) bytes, too short for a safetensors header", path: path)
        }
        let lengthBytes = try file.bytes(at: 0, count: 8)
        let headerLength = lengthBytes.loadUnaligned(as: UInt64.self).littleEndian
        guard headerLength <= UInt64(Self.maxHeaderBytes) else {
            throw FormatError(
                .invalidHeader, "header length \(headerLength) exceeds the \(Self.maxHeaderBytes)-byte limit",
                path: path, remedy: "This is not a safetensors file, or it is corrupt")
        }
        guard Int(headerLength) <= file.size - 8 else {
            throw FormatError(
                .truncated, "header length \(headerLength) runs past the end of the file (\(file.size) bytes)",
                path: path, remedy: "The file is truncated; download it again")
        }
        let dataStart = 8 + Int(headerLength)
        let dataLength = file.size - dataStart
        let headerBytes = try file.bytes(at: 8, count: Int(headerLength))
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: Data(headerBytes), options: [])
        } catch {
            throw FormatError(.invalidHeader, "header is not valid JSON", path: path)
        }
        guard let object = json as? [String: Any] else {
            throw FormatError(.invalidHeader, "header is not a JSON object", path: path)
        }

        var tensors: [String: SafetensorsTensor] = [:]
        var metadata: [String: String] = [:]
        for (name, value) in object {
            if name == "__metadata__" {
                if let map = value as? [String: Any] {
                    for (k, v) in map { if let s = v as? String { metadata[k] = s } }
                }
                continue
            }
            guard let entry = value as? [String: Any] else {
                throw FormatError(.invalidHeader, "tensor entry is not an object", path: path, key: name)
            }
            guard let dtypeName = entry["dtype"] as? String else {
                throw FormatError(.invalidHeader, "tensor has no dtype", path: path, key: name)
            }
            guard let dtype = SafetensorsDType(rawValue: dtypeName) else {
                throw FormatError(
                    .unsupportedDType, "unknown dtype '\(dtypeName)'", path: path, key: name,
                    remedy: "Supported dtypes: F32, F16, BF16 (and integer types for quantized layouts)")
            }
            guard let shape = Self.intArray(entry["shape"]), shape.allSatisfy({ $0 >= 0 }) else {
                throw FormatError(.invalidHeader, "shape is not an array of non-negative integers", path: path, key: name)
            }
            guard let offsets = Self.intArray(entry["data_offsets"]), offsets.count == 2 else {
                throw FormatError(.invalidHeader, "data_offsets is not a pair of integers", path: path, key: name)
            }
            var elements = 1
            for d in shape {
                let (product, overflow) = elements.multipliedReportingOverflow(by: d)
                guard !overflow else {
                    throw FormatError(.invalidHeader, "shape \(shape) overflows", path: path, key: name)
                }
                elements = product
            }
            let (expected, overflow) = elements.multipliedReportingOverflow(by: dtype.size)
            let (begin, end) = (offsets[0], offsets[1])
            guard begin >= 0, begin <= end, end <= dataLength else {
                throw FormatError(
                    .offsetOutOfBounds,
                    "data_offsets [\(begin), \(end)] lie outside the data section (\(dataLength) bytes)",
                    path: path, key: name, remedy: "The file is truncated or corrupt; download it again")
            }
            guard !overflow, end - begin == expected else {
                throw FormatError(
                    .sizeMismatch,
                    "tensor occupies \(end - begin) bytes but shape \(shape) of \(dtypeName) needs \(expected)",
                    path: path, key: name, remedy: "The file is corrupt")
            }
            tensors[name] = SafetensorsTensor(
                name: name, dtype: dtype, shape: shape, offset: dataStart + begin, byteCount: end - begin)
        }
        // No two tensors may share bytes.
        let ordered = tensors.values.filter { $0.byteCount > 0 }.sorted { $0.offset < $1.offset }
        for (a, b) in zip(ordered, ordered.dropFirst()) where b.offset < a.offset + a.byteCount {
            throw FormatError(
                .overlappingTensors, "tensor data overlaps '\(a.name)'", path: path, key: b.name,
                remedy: "The file is corrupt")
        }
        self.tensors = tensors
        self.metadata = metadata
    }

    /// The raw bytes of a tensor (validated at open).
    package func data(of tensor: SafetensorsTensor) throws -> UnsafeRawBufferPointer {
        try file.bytes(at: tensor.offset, count: tensor.byteCount)
    }

    private static func intArray(_ value: Any?) -> [Int]? {
        guard let array = value as? [Any] else { return nil }
        var result: [Int] = []
        result.reserveCapacity(array.count)
        for element in array {
            // NSNumber bridging to Int succeeds only for exactly representable integers.
            guard let v = element as? Int else { return nil }
            result.append(v)
        }
        return result
    }
}
