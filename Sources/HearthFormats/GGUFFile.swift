import Foundation
import HearthKernels

/// A memory-mapped GGUF v2/v3 file (llama.cpp's model format): metadata, tensor infos and
/// the tensor data, used in place from the mapping. See docs/GGUF.md.
///
/// Opening validates the whole header against the file (`GGUFHeader`); tensors come out as
/// `TensorData` in `.rows` layout with shape outermost first (`[rows, cols]` for a matrix —
/// GGUF's dims reversed).
package final class GGUFFile: TensorStore {
    /// The mapping, which tensors point into.
    package let file: MappedFile
    /// The validated header.
    package let header: GGUFHeader

    /// Key–value metadata.
    package var metadata: GGUFMetadata { header.metadata }
    /// The format version (2 or 3).
    package var version: UInt32 { header.version }
    /// Tensor infos in file order.
    package var tensorInfos: [GGUFTensorInfo] { header.tensors }

    /// Whether the file at `path` starts with the GGUF magic.
    package static func isGGUF(path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 4)).map { Array($0) == GGUFHeader.magic } ?? false
    }

    /// Maps and validates `path`. Throws `FormatError` (see `GGUFHeader.init(bytes:path:)`,
    /// plus `.fileNotFound`/`.ioError` from the mapping).
    package init(path: String) throws {
        file = try MappedFile(path: path)
        let bytes = try file.bytes(at: 0, count: file.size)
        header = try GGUFHeader(bytes: bytes, path: file.path)
    }

    /// Tensor names in file order.
    package var tensorNames: [String] { header.tensors.map(\.name) }

    /// The tensor info named `name`, or nil.
    package func info(named name: String) -> GGUFTensorInfo? { header.tensor(named: name) }

    /// The tensor named `name` (nil if absent), pointing into the mapping. Throws
    /// `.unsupportedDType` for a ggml type Hearth does not compute with.
    package func tensor(named name: String) throws -> TensorData? {
        guard let info = header.tensor(named: name) else { return nil }
        guard let dtype = info.dtype else {
            throw FormatError(
                .unsupportedDType, "tensor type \(info.type.name) (ggml type \(info.type.id)) is not supported",
                path: file.path, key: name,
                remedy: "Use a file quantized to one of \(GGMLType.supportedNames)")
        }
        return TensorData(
            name: name, dtype: dtype, shape: info.shape, layout: .rows,
            bytes: try file.bytes(at: info.fileOffset, count: info.byteCount), owner: file, path: file.path)
    }
}
