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
        /// An answer's reasoning parts (absent when it had none, and in files written before them),
        /// so a resumed chat still sends a provider the parts it needs back.
        var reasoning: [ReasoningPart]?
        /// An answer's tool calls and the call a tool result answers (`hearth chat --mcp`;
        /// absent otherwise), so a resumed chat sends valid tool messages.
        var toolCalls: [ToolCall]?
        var toolCallID: String?
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
            (try? decoder.decode(Record.self, from: Data(line))).map {
                ChatMessage(
                    role: $0.role, content: $0.content, toolCalls: $0.toolCalls ?? [], toolCallID: $0.toolCallID,
                    reasoning: $0.reasoning ?? [])
            }
        }
    }

    static func lines(_ messages: [ChatMessage]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        var data = Data()
        for message in messages {
            let record = Record(
                role: message.role, content: message.content, reasoning: message.reasoning.isEmpty ? nil : message.reasoning,
                toolCalls: message.toolCalls.isEmpty ? nil : message.toolCalls, toolCallID: message.toolCallID)
            data.append(try encoder.encode(record))
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

/// A chat-level failure with a message for the user.
struct ChatError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
