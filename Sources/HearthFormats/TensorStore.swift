import HearthKernels

/// A tensor ready for the engine: its element type, shape and bytes (inside a mapping).
///
/// `@unchecked Sendable`: points into immutable mapped memory that `owner` keeps alive.
package struct TensorData: @unchecked Sendable {
    /// Tensor name in its file.
    package let name: String
    /// Storage type.
    package let dtype: DType
    /// Shape, outermost first (for a matrix: rows, cols).
    package let shape: [Int]
    /// Block order (row-major unless the file stores Hearth's kernel layout).
    package var layout: WeightLayout = .rows
    /// The bytes.
    package let bytes: UnsafeRawBufferPointer
    /// Keeps `bytes` alive.
    package let owner: AnyObject
    /// The file the tensor came from, for error messages.
    package let path: String

    /// Number of elements.
    package var elementCount: Int { shape.reduce(1, *) }

    package init(
        name: String, dtype: DType, shape: [Int], layout: WeightLayout = .rows, bytes: UnsafeRawBufferPointer,
        owner: AnyObject, path: String
    ) {
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.layout = layout
        self.bytes = bytes
        self.owner = owner
        self.path = path
    }
}

/// Something that holds named tensors: a safetensors checkpoint, later GGUF files.
package protocol TensorStore: Sendable {
    /// All tensor names.
    var tensorNames: [String] { get }
    /// Returns the tensor, or nil when the store has no tensor by that name.
    /// Throws when the tensor exists but cannot be used (for example an unsupported dtype).
    func tensor(named name: String) throws -> TensorData?
}
