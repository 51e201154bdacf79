import Foundation

/// Builds GGUF files byte by byte, including broken ones: every count and field can be
/// overridden.
public struct GGUFBuilder {
    public var magic: [UInt8] = Array("GGUF".utf8)
    public var version: UInt32 = 3
    /// Overrides the declared counts (default: the real counts).
    public var declaredTensorCount: UInt64?
    public var declaredEntryCount: UInt64?
    /// Encoded metadata entries and tensor infos.
    public var entries: [[UInt8]] = []
    public var tensorInfos: [[UInt8]] = []
    /// Padding target after the tensor infos.
    public var alignment = 32
    /// The data section.
    public var data: [UInt8] = []

    /// An empty version-3 file.
    public init() {}

    public static func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
    public static func u64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
    public static func string(_ s: String) -> [UInt8] { u64(UInt64(s.utf8.count)) + Array(s.utf8) }

    /// Adds a metadata entry with a raw type tag and encoded payload.
    public mutating func entry(_ key: String, type: UInt32, _ payload: [UInt8]) {
        entries.append(Self.string(key) + Self.u32(type) + payload)
    }

    public mutating func uint32(_ key: String, _ v: UInt32) { entry(key, type: 4, Self.u32(v)) }
    public mutating func string(_ key: String, _ v: String) { entry(key, type: 8, Self.string(v)) }

    /// An array payload: element type, count, encoded elements.
    public static func array(type: UInt32, count: UInt64, _ elements: [UInt8] = []) -> [UInt8] {
        u32(type) + u64(count) + elements
    }

    /// Adds a tensor info.
    public mutating func tensor(_ name: String, dims: [UInt64], type: UInt32, offset: UInt64, nDims: UInt32? = nil) {
        var info = Self.string(name) + Self.u32(nDims ?? UInt32(dims.count))
        for d in dims { info += Self.u64(d) }
        info += Self.u32(type) + Self.u64(offset)
        tensorInfos.append(info)
    }

    /// Adds an F32 tensor of `count` values at the next aligned offset of the data section.
    public mutating func f32Tensor(_ name: String, values: [Float]) {
        while data.count % alignment != 0 { data.append(0) }
        tensor(name, dims: [UInt64(values.count)], type: 0, offset: UInt64(data.count))
        for v in values { data += Self.u32(v.bitPattern) }
    }

    /// Offset where the tensor infos end (before padding).
    public var headerBytes: Int { 24 + entries.reduce(0) { $0 + $1.count } + tensorInfos.reduce(0) { $0 + $1.count } }

    /// The file.
    public func bytes() -> [UInt8] {
        var out = magic + Self.u32(version)
        out += Self.u64(declaredTensorCount ?? UInt64(tensorInfos.count))
        out += Self.u64(declaredEntryCount ?? UInt64(entries.count))
        for e in entries { out += e }
        for t in tensorInfos { out += t }
        if !data.isEmpty { while out.count % alignment != 0 { out.append(0) } }
        return out + data
    }
}
