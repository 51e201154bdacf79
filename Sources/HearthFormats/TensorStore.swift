import HearthKernels

/// A tensor ready for the engine: its element type, shape and bytes (inside a mapping).
///
/// `@unchecked Sendable`: points into immutable mapped memory that `owner` keeps alive.
public struct TensorData: @unchecked Sendable {
    /// Tensor name in its file.
    public let name: String
    /// Storage type.
    public let dtype: DType
    /// Shape, outermost first (for a matrix: rows, cols).
    public let shape: [Int]
    /// Block order (row-major unless the file stores Hearth's kernel layout).
    public var layout: WeightLayout = .rows
    /// The bytes.
    public let bytes: UnsafeRawBufferPointer
    /// Keeps `bytes` alive.
    public let owner: AnyObject
    /// The file the tensor came from, for error messages.
    public let path: String

    /// Number of elements.
    public var elementCount: Int { shape.reduce(1, *) }

    public init(
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
public protocol TensorStore: Sendable {
    /// All tensor names.
    var tensorNames: [String] { get }
    /// Returns the tensor, or nil when the store has no tensor by that name.
    /// Throws when the tensor exists but cannot be used (for example an unsupported dtype).
    func tensor(named name: String) throws -> TensorData?
}
