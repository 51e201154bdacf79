import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The terminal's original settings, so any thread (a SIGTERM handler) can put them back.
/// `@unchecked Sendable`: the saved settings are only read and written under `lock`.
final class TerminalModes: @unchecked Sendable {
    static let shared = TerminalModes()
    private let lock = NSLock()
    private var original: termios?

    /// Switches stdin to raw mode (no echo, no line buffering, no signals from keys).
    func enterRaw() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        var settings = termios()
        guard tcgetattr(STDIN_FILENO, &settings) == 0 else { return false }
        if original == nil { original = settings }
        var raw = settings
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL | BRKINT | INPCK | ISTRIP)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        return tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0  // keep typed-ahead input
    }

    /// Puts back the settings saved by the first `enterRaw`.
    func restore() {
        lock.lock()
        defer { lock.unlock() }
        guard var settings = original else { return }
        tcsetattr(STDIN_FILENO, TCSADRAIN, &settings)  // keep typed-ahead input
    }
}

/// A small line editor over a raw terminal: UTF-8 input edited by whole characters (CJK and
/// emoji counted two columns wide), history on the arrow keys, the usual Emacs keys.
///
/// Keys: ←/→ (Ctrl-B/F) move, Home/End (Ctrl-A/E), Backspace, Delete, Ctrl-K/U kill to the
/// end/start, Ctrl-W kills a word, ↑/↓ (Ctrl-P/N) walk the history, Ctrl-L clears the screen,
/// Ctrl-C returns `.interrupt`, Ctrl-D on an empty line returns `.endOfInput`.
/// Limitation: a line longer than the terminal is redrawn on one logical row, so editing in
/// the middle of a wrapped line can misplace the cursor until the next redraw.
final class LineEditor {
    enum Input: Equatable {
        case line(String)
        case interrupt
        case endOfInput
    }

    private(set) var history: [String] = []
    private let historyLimit = 500

    init(history: [String] = []) { self.history = Array(history.suffix(historyLimit)) }

    /// Adds a line to the history (skipping blanks and repeats).
    func remember(_ line: String) {
        guard !line.trimmingCharacters(in: .whitespaces).isEmpty, history.last != line else { return }
        history.append(line)
        if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
    }

    // Long: the key dispatch of the line editor: one case per key or escape sequence (27), each a line
    // or two, sharing the buffer and cursor.
    /// Reads one line, showing `prompt` (which may contain escape codes of width `promptWidth`).
    func read(prompt: String) -> Input {
        guard TerminalModes.shared.enterRaw() else { return fallbackRead(prompt: prompt) }
        defer { TerminalModes.shared.restore() }
        var buffer: [Character] = []
        var cursor = 0
        var historyIndex = history.count
        var draft: [Character] = []

        func redraw() {
            let after = buffer[cursor...].reduce(0) { $0 + Self.width(of: $1) }
            var text = "\r" + prompt + String(buffer) + "\u{1B}[K"
            if after > 0 { text += "\u{1B}[\(after)D" }
            write(text)
        }
        func recall(_ index: Int) {
            if historyIndex == history.count { draft = buffer }
            historyIndex = index
            buffer = index == history.count ? draft : Array(history[index])
            cursor = buffer.count
        }
        redraw()
        while true {
            guard let key = readKey() else { return buffer.isEmpty ? .endOfInput : .line(String(buffer)) }
            switch key {
            case .character(let character):
                buffer.insert(character, at: cursor)
                cursor += 1
                if cursor == buffer.count {  // typing (or pasting) at the end: no redraw needed
                    write(String(character))
                    continue
                }
            case .control(let byte):
                switch byte {
                case 0x0D, 0x0A:  // Enter
                    cursor = buffer.count
                    redraw()
                    write("\r\n")
                    return .line(String(buffer))
                case 0x03:  // Ctrl-C: on an empty line, leave; else drop the line
                    write("^C\r\n")
                    if buffer.isEmpty { return .interrupt }
                    buffer = []
                    cursor = 0
                    historyIndex = history.count
                case 0x04:  // Ctrl-D
                    if buffer.isEmpty {
                        write("\r\n")
                        return .endOfInput
                    }
                    if cursor < buffer.count { buffer.remove(at: cursor) }
                case 0x7F, 0x08:  // Backspace
                    if cursor > 0 {
                        cursor -= 1
                        buffer.remove(at: cursor)
                    }
                case 0x01: cursor = 0
                case 0x05: cursor = buffer.count
                case 0x02: cursor = max(0, cursor - 1)
                case 0x06: cursor = min(buffer.count, cursor + 1)
                case 0x0B: buffer.removeSubrange(cursor...)
                case 0x15:
                    buffer.removeSubrange(..<cursor)
                    cursor = 0
                case 0x17:  // Ctrl-W: the word before the cursor
                    var start = cursor
                    while start > 0 && buffer[start - 1] == " " { start -= 1 }
                    while start > 0 && buffer[start - 1] != " " { start -= 1 }
                    buffer.removeSubrange(start..<cursor)
                    cursor = start
                case 0x10: if historyIndex > 0 { recall(historyIndex - 1) }
                case 0x0E: if historyIndex < history.count { recall(historyIndex + 1) }
                case 0x0C: write("\u{1B}[H\u{1B}[2J")
                case 0x09:  // Tab: insert spaces
                    buffer.insert(contentsOf: "    ", at: cursor)
                    cursor += 4
                default: break
                }
            case .up: if historyIndex > 0 { recall(historyIndex - 1) }
            case .down: if historyIndex < history.count { recall(historyIndex + 1) }
            case .left: cursor = max(0, cursor - 1)
            case .right: cursor = min(buffer.count, cursor + 1)
            case .home: cursor = 0
            case .end: cursor = buffer.count
            case .delete: if cursor < buffer.count { buffer.remove(at: cursor) }
            case .wordLeft:
                while cursor > 0 && buffer[cursor - 1] == " " { cursor -= 1 }
                while cursor > 0 && buffer[cursor - 1] != " " { cursor -= 1 }
            case .wordRight:
                while cursor < buffer.count && buffer[cursor] == " " { cursor += 1 }
                while cursor < buffer.count && buffer[cursor] != " " { cursor += 1 }
            case .ignored: break
            }
            redraw()
        }
    }

    /// Without a usable terminal: a plain line from stdin.
    private func fallbackRead(prompt: String) -> Input {
        write(prompt)
        guard let line = readLine(strippingNewline: true) else { return .endOfInput }
        return .line(line)
    }

    enum Key {
        case character(Character)
        case control(UInt8)
        case up, down, left, right, home, end, delete, wordLeft, wordRight, ignored
    }

    private func readByte() -> UInt8? {
        var byte: UInt8 = 0
        while true {
            #if canImport(Glibc)
            let n = Glibc.read(STDIN_FILENO, &byte, 1)
            #else
            let n = Darwin.read(STDIN_FILENO, &byte, 1)
            #endif
            if n == 1 { return byte }
            if n < 0 && errno == EINTR { continue }
            return nil
        }
    }

    private func readKey() -> Key? {
        guard let first = readByte() else { return nil }
        if first == 0x1B { return readEscape() }
        if first < 0x20 || first == 0x7F { return .control(first) }
        if first < 0x80 { return .character(Character(Unicode.Scalar(first))) }
        // A UTF-8 sequence: its length comes from the leading byte.
        let length = first >= 0xF0 ? 4 : first >= 0xE0 ? 3 : first >= 0xC0 ? 2 : 0
        guard length > 0 else { return .ignored }
        var bytes = [first]
        for _ in 1..<length {
            guard let next = readByte() else { return nil }
            bytes.append(next)
        }
        guard let text = String(validating: bytes, as: UTF8.self), let character = text.first else { return .ignored }
        return .character(character)
    }

    /// Decodes `ESC [ …` and `ESC O …` sequences (xterm and VT220 styles).
    private func readEscape() -> Key {
        guard let kind = readByte() else { return .ignored }
        if kind == UInt8(ascii: "O") {
            switch readByte() {
            case UInt8(ascii: "H"): return .home
            case UInt8(ascii: "F"): return .end
            default: return .ignored
            }
        }
        if kind == UInt8(ascii: "b") { return .wordLeft }
        if kind == UInt8(ascii: "f") { return .wordRight }
        guard kind == UInt8(ascii: "[") else { return .ignored }
        var parameters = ""
        while let byte = readByte() {
            if byte >= 0x40 && byte <= 0x7E {
                let modified = parameters.contains(";5") || parameters.contains(";3")
                switch byte {
                case UInt8(ascii: "A"): return .up
                case UInt8(ascii: "B"): return .down
                case UInt8(ascii: "C"): return modified ? .wordRight : .right
                case UInt8(ascii: "D"): return modified ? .wordLeft : .left
                case UInt8(ascii: "H"): return .home
                case UInt8(ascii: "F"): return .end
                case UInt8(ascii: "~"):
                    switch parameters {
                    case "1", "7": return .home
                    case "4", "8": return .end
                    case "3": return .delete
                    default: return .ignored
                    }
                default: return .ignored
                }
            }
            parameters.append(Character(Unicode.Scalar(byte)))
            if parameters.count > 16 { return .ignored }
        }
        return .ignored
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// Columns a character takes in a terminal: 2 for East Asian wide and emoji, else 1.
    static func width(of character: Character) -> Int {
        for scalar in character.unicodeScalars {
            if scalar.properties.isEmojiPresentation { return 2 }
            let v = scalar.value
            if (0x1100...0x115F).contains(v) || (0x2E80...0xA4CF).contains(v) || (0xAC00...0xD7A3).contains(v)
                || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v) || (0xFF00...0xFF60).contains(v)
                || (0xFFE0...0xFFE6).contains(v) || (0x1F300...0x1F64F).contains(v) || (0x1F900...0x1F9FF).contains(v)
                || (0x20000...0x3FFFD).contains(v)
            {
                return 2
            }
        }
        return 1
    }
}
