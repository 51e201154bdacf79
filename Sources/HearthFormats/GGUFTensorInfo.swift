import HearthKernels

/// One tensor's entry in a GGUF file, validated against the file: dims positive with a
/// product that fits in Int64, the row length a whole number of blocks, the data aligned,
/// inside the data section and overlapping no other tensor.
package struct GGUFTensorInfo: Sendable, Equatable {
    /// Tensor name (llama.cpp's names: `blk.0.attn_q.weight`, `token_embd.weight`, …).
    package let name: String
    /// Dimensions as GGUF stores them, innermost (contiguous) first: `[cols, rows]` for a matrix.
    package let dims: [Int]
    /// The storage type.
    package let type: GGMLType
    /// Byte offset of the data from the start of the data section.
    package let offset: Int
    /// Byte offset of the data from the start of the file.
    package let fileOffset: Int
    /// Bytes of data.
    package let byteCount: Int
    /// Number of elements.
    package let elementCount: Int

    /// Shape outermost first (`dims` reversed): `[rows, cols]` for a matrix, as `TensorData` uses.
    package var shape: [Int] { dims.reversed() }

    /// Hearth's type, or nil when Hearth cannot compute with this tensor's type.
    package var dtype: DType? { type.dtype }

    /// Creates an entry (the parser validates the values).
    package init(name: String, dims: [Int], type: GGMLType, offset: Int, fileOffset: Int, byteCount: Int, elementCount: Int) {
        self.name = name
        self.dims = dims
        self.type = type
        self.offset = offset
        self.fileOffset = fileOffset
        self.byteCount = byteCount
        self.elementCount = elementCount
    }
}
