import HearthKernels

/// One tensor's entry in a GGUF file, validated against the file: dims positive with a
/// product that fits in Int64, the row length a whole number of blocks, the data aligned,
/// inside the data section and overlapping no other tensor.
public struct GGUFTensorInfo: Sendable, Equatable {
    /// Tensor name (llama.cpp's names: `blk.0.attn_q.weight`, `token_embd.weight`, …).
    public let name: String
    /// Dimensions as GGUF stores them, innermost (contiguous) first: `[cols, rows]` for a matrix.
    public let dims: [Int]
    /// The storage type.
    public let type: GGMLType
    /// Byte offset of the data from the start of the data section.
    public let offset: Int
    /// Byte offset of the data from the start of the file.
    public let fileOffset: Int
    /// Bytes of data.
    public let byteCount: Int
    /// Number of elements.
    public let elementCount: Int

    /// Shape outermost first (`dims` reversed): `[rows, cols]` for a matrix, as `TensorData` uses.
    public var shape: [Int] { dims.reversed() }

    /// Hearth's type, or nil when Hearth cannot compute with this tensor's type.
    public var dtype: DType? { type.dtype }

    /// Creates an entry (the parser validates the values).
    public init(name: String, dims: [Int], type: GGMLType, offset: Int, fileOffset: Int, byteCount: Int, elementCount: Int) {
        self.name = name
        self.dims = dims
        self.type = type
        self.offset = offset
        self.fileOffset = fileOffset
        self.byteCount = byteCount
        self.elementCount = elementCount
    }
}
