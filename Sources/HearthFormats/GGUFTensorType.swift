import HearthKernels

/// A ggml tensor type as GGUF tensor infos name it: its id, name and storage traits.
///
/// The table lists every type ggml defines (from `GGML_QUANT_SIZES` in gguf-py 0.19), so
/// the reader can check the size of any tensor; `dtype` is non-nil only for the types
/// Hearth computes with. An id outside the table is refused when the file is opened.
package struct GGMLType: Sendable, Equatable, CustomStringConvertible {
    /// `enum ggml_type` value.
    package let id: UInt32
    /// ggml's name (`Q4_K`, `F32`, …).
    package let name: String
    /// Elements per block.
    package let blockSize: Int
    /// Bytes per block.
    package let bytesPerBlock: Int

    /// Hearth's type, or nil when Hearth cannot compute with this type.
    package var dtype: DType? { DType(ggmlTypeID: id) }

    package var description: String { name }

    /// The type with ggml id `id`, or nil for an id ggml does not define.
    package static func withID(_ id: UInt32) -> GGMLType? { table.first { $0.id == id } }

    /// Every ggml type (ids 4, 5, 31–33 and 36–38 are retired and absent).
    package static let table: [GGMLType] = [
        GGMLType(id: 0, name: "F32", blockSize: 1, bytesPerBlock: 4),
        GGMLType(id: 1, name: "F16", blockSize: 1, bytesPerBlock: 2),
        GGMLType(id: 2, name: "Q4_0", blockSize: 32, bytesPerBlock: 18),
        GGMLType(id: 3, name: "Q4_1", blockSize: 32, bytesPerBlock: 20),
        GGMLType(id: 6, name: "Q5_0", blockSize: 32, bytesPerBlock: 22),
        GGMLType(id: 7, name: "Q5_1", blockSize: 32, bytesPerBlock: 24),
        GGMLType(id: 8, name: "Q8_0", blockSize: 32, bytesPerBlock: 34),
        GGMLType(id: 9, name: "Q8_1", blockSize: 32, bytesPerBlock: 40),
        GGMLType(id: 10, name: "Q2_K", blockSize: 256, bytesPerBlock: 84),
        GGMLType(id: 11, name: "Q3_K", blockSize: 256, bytesPerBlock: 110),
        GGMLType(id: 12, name: "Q4_K", blockSize: 256, bytesPerBlock: 144),
        GGMLType(id: 13, name: "Q5_K", blockSize: 256, bytesPerBlock: 176),
        GGMLType(id: 14, name: "Q6_K", blockSize: 256, bytesPerBlock: 210),
        GGMLType(id: 15, name: "Q8_K", blockSize: 256, bytesPerBlock: 292),
        GGMLType(id: 16, name: "IQ2_XXS", blockSize: 256, bytesPerBlock: 66),
        GGMLType(id: 17, name: "IQ2_XS", blockSize: 256, bytesPerBlock: 74),
        GGMLType(id: 18, name: "IQ3_XXS", blockSize: 256, bytesPerBlock: 98),
        GGMLType(id: 19, name: "IQ1_S", blockSize: 256, bytesPerBlock: 50),
        GGMLType(id: 20, name: "IQ4_NL", blockSize: 32, bytesPerBlock: 18),
        GGMLType(id: 21, name: "IQ3_S", blockSize: 256, bytesPerBlock: 110),
        GGMLType(id: 22, name: "IQ2_S", blockSize: 256, bytesPerBlock: 82),
        GGMLType(id: 23, name: "IQ4_XS", blockSize: 256, bytesPerBlock: 136),
        GGMLType(id: 24, name: "I8", blockSize: 1, bytesPerBlock: 1),
        GGMLType(id: 25, name: "I16", blockSize: 1, bytesPerBlock: 2),
        GGMLType(id: 26, name: "I32", blockSize: 1, bytesPerBlock: 4),
        GGMLType(id: 27, name: "I64", blockSize: 1, bytesPerBlock: 8),
        GGMLType(id: 28, name: "F64", blockSize: 1, bytesPerBlock: 8),
        GGMLType(id: 29, name: "IQ1_M", blockSize: 256, bytesPerBlock: 56),
        GGMLType(id: 30, name: "BF16", blockSize: 1, bytesPerBlock: 2),
        GGMLType(id: 34, name: "TQ1_0", blockSize: 256, bytesPerBlock: 54),
        GGMLType(id: 35, name: "TQ2_0", blockSize: 256, bytesPerBlock: 66),
        GGMLType(id: 39, name: "MXFP4", blockSize: 32, bytesPerBlock: 17),
        GGMLType(id: 40, name: "NVFP4", blockSize: 64, bytesPerBlock: 36),
        GGMLType(id: 41, name: "Q1_0", blockSize: 128, bytesPerBlock: 18),
    ]

    /// Names of the types Hearth computes with, for error messages.
    package static var supportedNames: String {
        table.filter { $0.dtype != nil }.map(\.name).joined(separator: ", ")
    }
}
