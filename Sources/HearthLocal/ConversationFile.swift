import CZstd
import Foundation
import HearthProviders

// The `.hchat` conversation file, next to the KV-snapshot format it carries
// (`Generator.snapshot()`, through `LocalProvider.snapshot()`), so an app can save and
// restore a conversation as `hearth chat`'s `/save` and `/load` do.

/// A conversation file that cannot be read.
public struct ConversationFileError: Error, Sendable, CustomStringConvertible {
    /// What is wrong with the file.
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A `/save` file: the conversation and, when the local model served it, its KV-cache snapshot.
///
/// Layout (little-endian): magic `HRTHCHAT` · version u32 · JSON length u64 · CRC32 of the JSON
/// u32 · snapshot length u64 · CRC32 of the snapshot u32 · the JSON · the zstd-compressed
/// snapshot (`Generator.snapshot()`, which carries its own checksum and model identity).
/// The two parts have separate checksums so a damaged snapshot still leaves a usable conversation.
public struct ConversationFile: Sendable {
    /// The conversation part (JSON).
    public struct Conversation: Codable, Sendable {
        /// The conversation format's version.
        public var version = 1
        /// The messages, system prompt first when there is one.
        public var messages: [ChatMessage]
        /// The options the conversation ran with.
        public var options: ChatOptions
        /// The provider that answered (`local`, `openai`…).
        public var provider: String
        /// The local model's path, if one answered.
        public var model: String?
        /// When it was saved.
        public var savedAt: Date

        /// Creates a conversation record.
        public init(messages: [ChatMessage], options: ChatOptions, provider: String, model: String?, savedAt: Date) {
            self.messages = messages
            self.options = options
            self.provider = provider
            self.model = model
            self.savedAt = savedAt
        }
    }

    static let magic = Array("HRTHCHAT".utf8)
    static let version: UInt32 = 1
    static let headerBytes = 8 + 4 + 8 + 4 + 8 + 4

    /// The conversation.
    public var conversation: Conversation
    /// The uncompressed KV snapshot (`LocalProvider.snapshot()`), or nil (none saved, or
    /// refused with `snapshotProblem`).
    public var snapshot: Data?
    /// Why the snapshot could not be used, when it could not.
    public var snapshotProblem: String?

    /// Creates a file's contents.
    public init(conversation: Conversation, snapshot: Data? = nil) {
        self.conversation = conversation
        self.snapshot = snapshot
    }

    /// The file's bytes (the snapshot zstd-compressed). Throws when compression fails.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let json = try encoder.encode(conversation)
        let compressed = try snapshot.map { try Zstd.compress($0) } ?? Data()
        var data = Data(Self.magic)
        data.appendLittleEndian(Self.version)
        data.appendLittleEndian(UInt64(json.count))
        data.appendLittleEndian(CRC32.of(json))
        data.appendLittleEndian(UInt64(compressed.count))
        data.appendLittleEndian(CRC32.of(compressed))
        data.append(json)
        data.append(compressed)
        return data
    }

    /// Decodes a file. A bad header or conversation throws ``ConversationFileError``; a bad
    /// snapshot part is reported in `snapshotProblem`. A snapshot that declares more than
    /// `maxSnapshotBytes` is refused before decompressing.
    public static func decode(_ data: Data, maxSnapshotBytes: Int) throws -> ConversationFile {
        guard data.count >= headerBytes, Array(data.prefix(8)) == magic else {
            throw ConversationFileError("not a Hearth chat file (bad magic)")
        }
        let version: UInt32 = data.littleEndian(at: 8)
        guard version == Self.version else { throw ConversationFileError("chat file version \(version) is not the supported \(Self.version)") }
        let jsonLength = data.littleEndian(at: 12) as UInt64
        let jsonCRC = data.littleEndian(at: 20) as UInt32
        let snapshotLength = data.littleEndian(at: 24) as UInt64
        let snapshotCRC = data.littleEndian(at: 32) as UInt32
        guard jsonLength <= UInt64(data.count - headerBytes) else { throw ConversationFileError("the chat file is truncated") }
        let jsonStart = data.startIndex + headerBytes
        let json = data[jsonStart..<(jsonStart + Int(jsonLength))]
        guard CRC32.of(json) == jsonCRC else { throw ConversationFileError("the chat file's conversation is corrupt (checksum mismatch)") }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let conversation: Conversation
        do { conversation = try decoder.decode(Conversation.self, from: json) } catch {
            throw ConversationFileError("the chat file's conversation is not valid JSON")
        }
        var saved = ConversationFile(conversation: conversation)
        let snapshotStart = jsonStart + Int(jsonLength)
        if snapshotLength == 0 { return saved }
        guard snapshotLength == UInt64(data.endIndex - snapshotStart) else {
            saved.snapshotProblem = "the KV snapshot is truncated"
            return saved
        }
        let compressed = data[snapshotStart...]
        guard CRC32.of(compressed) == snapshotCRC else {
            saved.snapshotProblem = "the KV snapshot is corrupt (checksum mismatch)"
            return saved
        }
        do { saved.snapshot = try Zstd.decompress(Data(compressed), maxBytes: maxSnapshotBytes) } catch {
            saved.snapshotProblem = "\(error)"
        }
        return saved
    }
}

/// zstd through libzstd's one-shot API.
enum Zstd {
    static func compress(_ data: Data, level: Int32 = 3) throws -> Data {
        let bound = ZSTD_compressBound(data.count)
        var output = Data(count: bound)
        let written = output.withUnsafeMutableBytes { out in
            data.withUnsafeBytes { input in
                ZSTD_compress(out.baseAddress, bound, input.baseAddress, data.count, level)
            }
        }
        guard ZSTD_isError(written) == 0 else { throw ConversationFileError("zstd compression failed: \(String(cString: ZSTD_getErrorName(written)))") }
        output.count = written
        return output
    }

    /// Decompresses one frame whose declared size is at most `maxBytes`.
    static func decompress(_ data: Data, maxBytes: Int) throws -> Data {
        let declared = data.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, data.count) }
        // ZSTD_CONTENTSIZE_UNKNOWN and _ERROR are the two largest values.
        guard declared < UInt64.max - 1 else { throw ConversationFileError("the KV snapshot is not a valid zstd frame") }
        guard declared <= UInt64(maxBytes) else {
            throw ConversationFileError("the KV snapshot declares \(declared) bytes, more than this context can hold")
        }
        var output = Data(count: Int(declared))
        let written = output.withUnsafeMutableBytes { out in
            data.withUnsafeBytes { input in
                ZSTD_decompress(out.baseAddress, Int(declared), input.baseAddress, data.count)
            }
        }
        guard ZSTD_isError(written) == 0, written == Int(declared) else {
            throw ConversationFileError("the KV snapshot does not decompress")
        }
        return output
    }
}

/// CRC-32 (IEEE 802.3, as zlib and gzip), table-driven.
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { i -> UInt32 in
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func of(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            data.withUnsafeBytes { raw in
                for byte in raw { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
            }
        }
        return crc ^ 0xFFFF_FFFF
    }
}

extension Data {
    fileprivate mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    /// The integer at byte `offset` from the start (the caller checked the length).
    fileprivate func littleEndian<T: FixedWidthInteger>(at offset: Int) -> T {
        let start = startIndex + offset
        return T(littleEndian: self[start..<(start + MemoryLayout<T>.size)].withUnsafeBytes { $0.loadUnaligned(as: T.self) })
    }
}
