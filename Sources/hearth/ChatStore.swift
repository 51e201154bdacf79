import CZstd
import Foundation
import HearthProviders

#if canImport(Glibc)
import Glibc
#endif

/// Where chats live and how they are written: one JSON Lines file per session, appended one
/// completed turn at a time (a single `write` + `fsync`) or rewritten atomically (temp file,
/// `fsync`, `rename`), so a kill at any moment leaves either the old or the new content.
/// A torn last line (power loss mid-append) is skipped on reading.
struct ChatStore {
    /// The sessions directory.
    let directory: URL

    /// `--sessions-dir`, else `$HEARTH_HOME/chats`, else `$XDG_DATA_HOME/hearth/chats`, else `~/.local/share/hearth/chats`.
    static func directory(override: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let override, !override.isEmpty { return URL(fileURLWithPath: override) }
        if let home = environment["HEARTH_HOME"], !home.isEmpty {
            return URL(fileURLWithPath: home).appendingPathComponent("chats")
        }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty {
            return URL(fileURLWithPath: data).appendingPathComponent("hearth/chats")
        }
        let home = environment["HOME"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".local/share/hearth/chats")
    }

    /// Session names are file names: letters, digits, `-`, `_`, `.` (not leading).
    static func validate(name: String) throws {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_."))
        guard !name.isEmpty, name.count <= 100, !name.hasPrefix("."),
            name.unicodeScalars.allSatisfy({ allowed.contains($0) })
        else {
            throw ChatError("invalid name \"\(name)\": use letters, digits, '-', '_' or '.' (at most 100, not starting with '.')")
        }
    }

    func sessionURL(_ name: String) -> URL { directory.appendingPathComponent(name + ".jsonl") }
    func savedURL(_ name: String) -> URL { directory.appendingPathComponent(name + ".hchat") }

    func ensureDirectory() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// The most recently written session's name.
    func latestSession() -> String? {
        let files = (try? FileManager.default.contentsOfDirectory(
            at: directory, includingPropertiesForKeys: [.contentModificationDateKey])) ?? []
        return files.filter { $0.pathExtension == "jsonl" }
            .max { a, b in
                let da = (try? a.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
                let db = (try? b.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
                return da < db
            }?
            .deletingPathExtension().lastPathComponent
    }

    /// One line of a session file.
    struct Record: Codable {
        var role: ChatMessage.Role
        var content: String
    }

    /// Rewrites a session with these messages.
    func rewrite(session: String, messages: [ChatMessage]) throws {
        try ensureDirectory()
        try Self.atomicWrite(Self.lines(messages), to: sessionURL(session))
    }

    /// Appends completed messages to a session in one write.
    func append(session: String, messages: [ChatMessage]) throws {
        try ensureDirectory()
        let url = sessionURL(session)
        let fd = open(url.path, O_WRONLY | O_APPEND | O_CREAT, 0o600)
        guard fd >= 0 else { throw ChatError("cannot write \(url.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        try Self.writeAll(fd, Self.lines(messages), path: url.path)
        fsync(fd)
    }

    /// Reads a session; undecodable lines (a torn last append) are skipped.
    func read(session: String) throws -> [ChatMessage] {
        let url = sessionURL(session)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ChatError("no chat named \"\(session)\" in \(directory.path)")
        }
        let decoder = JSONDecoder()
        return data.split(separator: UInt8(ascii: "\n")).compactMap { line in
            (try? decoder.decode(Record.self, from: Data(line))).map { ChatMessage(role: $0.role, content: $0.content) }
        }
    }

    static func lines(_ messages: [ChatMessage]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        var data = Data()
        for message in messages {
            data.append(try encoder.encode(Record(role: message.role, content: message.content)))
            data.append(UInt8(ascii: "\n"))
        }
        return data
    }

    /// Writes `data` to a temporary file beside `url`, syncs it, renames it over `url` and syncs the directory.
    static func atomicWrite(_ data: Data, to url: URL) throws {
        let temp = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        let fd = open(temp.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw ChatError("cannot write \(temp.path): \(String(cString: strerror(errno)))") }
        do {
            try writeAll(fd, data, path: temp.path)
            guard fsync(fd) == 0 else { throw ChatError("cannot sync \(temp.path): \(String(cString: strerror(errno)))") }
            close(fd)
        } catch {
            close(fd)
            unlink(temp.path)
            throw error
        }
        guard rename(temp.path, url.path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temp.path)
            throw ChatError("cannot replace \(url.path): \(message)")
        }
        let dir = open(url.deletingLastPathComponent().path, O_RDONLY)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }

    private static func writeAll(_ fd: Int32, _ data: Data, path: String) throws {
        try data.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count {
                let n = write(fd, base + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw ChatError("cannot write \(path): \(String(cString: strerror(errno)))") }
                offset += n
            }
        }
    }
}

/// A `/save` file: the conversation and, when the local model served it, its KV-cache snapshot.
///
/// Layout (little-endian): magic `HRTHCHAT` · version u32 · JSON length u64 · CRC32 of the JSON
/// u32 · snapshot length u64 · CRC32 of the snapshot u32 · the JSON · the zstd-compressed
/// snapshot (`Generator.snapshot()`, which carries its own checksum and model identity).
/// The two parts have separate checksums so a damaged snapshot still leaves a usable conversation.
struct SavedChat {
    struct Conversation: Codable {
        var version = 1
        var messages: [ChatMessage]
        var options: GenerationOptions
        var provider: String
        var model: String?
        var savedAt: Date
    }

    static let magic = Array("HRTHCHAT".utf8)
    static let version: UInt32 = 1
    static let headerBytes = 8 + 4 + 8 + 4 + 8 + 4

    var conversation: Conversation
    /// The uncompressed KV snapshot, or nil (none saved, or refused with `snapshotProblem`).
    var snapshot: Data?
    /// Why the snapshot could not be used, when it could not.
    var snapshotProblem: String?

    func encoded() throws -> Data {
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

    /// Decodes a file. A bad header or conversation throws; a bad snapshot part is reported in `snapshotProblem`.
    static func decode(_ data: Data, maxSnapshotBytes: Int) throws -> SavedChat {
        guard data.count >= headerBytes, Array(data.prefix(8)) == magic else {
            throw ChatError("not a Hearth chat file (bad magic)")
        }
        let version: UInt32 = data.littleEndian(at: 8)
        guard version == Self.version else { throw ChatError("chat file version \(version) is not the supported \(Self.version)") }
        let jsonLength = data.littleEndian(at: 12) as UInt64
        let jsonCRC = data.littleEndian(at: 20) as UInt32
        let snapshotLength = data.littleEndian(at: 24) as UInt64
        let snapshotCRC = data.littleEndian(at: 32) as UInt32
        guard jsonLength <= UInt64(data.count - headerBytes) else { throw ChatError("the chat file is truncated") }
        let jsonStart = data.startIndex + headerBytes
        let json = data[jsonStart..<(jsonStart + Int(jsonLength))]
        guard CRC32.of(json) == jsonCRC else { throw ChatError("the chat file's conversation is corrupt (checksum mismatch)") }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let conversation: Conversation
        do { conversation = try decoder.decode(Conversation.self, from: json) } catch {
            throw ChatError("the chat file's conversation is not valid JSON")
        }
        var saved = SavedChat(conversation: conversation)
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
        guard ZSTD_isError(written) == 0 else { throw ChatError("zstd compression failed: \(String(cString: ZSTD_getErrorName(written)))") }
        output.count = written
        return output
    }

    /// Decompresses one frame whose declared size is at most `maxBytes`.
    static func decompress(_ data: Data, maxBytes: Int) throws -> Data {
        let declared = data.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, data.count) }
        // ZSTD_CONTENTSIZE_UNKNOWN and _ERROR are the two largest values.
        guard declared < UInt64.max - 1 else { throw ChatError("the KV snapshot is not a valid zstd frame") }
        guard declared <= UInt64(maxBytes) else {
            throw ChatError("the KV snapshot declares \(declared) bytes, more than this context can hold")
        }
        var output = Data(count: Int(declared))
        let written = output.withUnsafeMutableBytes { out in
            data.withUnsafeBytes { input in
                ZSTD_decompress(out.baseAddress, Int(declared), input.baseAddress, data.count)
            }
        }
        guard ZSTD_isError(written) == 0, written == Int(declared) else {
            throw ChatError("the KV snapshot does not decompress")
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

/// A chat-level failure with a message for the user.
struct ChatError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Data {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    /// The integer at byte `offset` from the start (the caller checked the length).
    func littleEndian<T: FixedWidthInteger>(at offset: Int) -> T {
        let start = startIndex + offset
        return T(littleEndian: self[start..<(start + MemoryLayout<T>.size)].withUnsafeBytes { $0.loadUnaligned(as: T.self) })
    }
}
