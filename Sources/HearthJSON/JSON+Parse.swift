extension JSON {
    /// Why a text is not JSON: what, and the byte offset where reading stopped.
    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong.
        public var message: String
        /// The offset in UTF-8 bytes from the start of the text.
        public var offset: Int

        public var description: String { "\(message) at byte \(offset)" }
        /// Whether the problem is a string that is not valid UTF-8 (``JSON/parse(utf8:)``).
        public var isInvalidUTF8: Bool { message == Reader.invalidUTF8 }

        /// The 1-based line and column (in bytes) of ``offset`` in `text`, the text that was parsed.
        public func lineAndColumn(in text: String) -> (line: Int, column: Int) {
            var line = 1, column = 1
            for byte in text.utf8.prefix(offset) {
                if byte == 0x0A { line += 1; column = 1 } else { column += 1 }
            }
            return (line, column)
        }
    }

    /// How deep arrays and objects may nest; deeper input is refused, so hostile text cannot
    /// exhaust the stack.
    public static let maxDepth = 512

    /// Parses one JSON document (surrounding whitespace allowed, nothing else after it).
    /// - Throws: ``SyntaxError``.
    public static func parse(_ text: String) throws(SyntaxError) -> JSON {
        try parse(Reader(bytes: Array(text.utf8), validatesUTF8: false))
    }

    /// Parses JSON from UTF-8 bytes (a request body as received), checking that its strings
    /// are valid UTF-8 (``SyntaxError/isInvalidUTF8`` when one is not).
    /// - Throws: ``SyntaxError``.
    public static func parse(utf8 bytes: [UInt8]) throws(SyntaxError) -> JSON {
        try parse(Reader(bytes: bytes, validatesUTF8: true))
    }

    private static func parse(_ start: Reader) throws(SyntaxError) -> JSON {
        var reader = start
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == reader.bytes.count else { throw reader.error("unexpected text after the JSON value") }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        /// Whether strings must be checked as UTF-8 (bytes that did not come from a `String`).
        let validatesUTF8: Bool
        var index = 0

        static let invalidUTF8 = "a string is not valid UTF-8"

        /// `bytes` as a string, checked when the input was not a `String`.
        func text<C: Collection>(_ bytes: C) throws(SyntaxError) -> String where C.Element == UInt8 {
            guard validatesUTF8 else { return String(decoding: bytes, as: UTF8.self) }
            guard let text = String(validating: bytes, as: UTF8.self) else { throw error(Self.invalidUTF8) }
            return text
        }

        func error(_ message: String) -> SyntaxError { SyntaxError(message: message, offset: index) }

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        mutating func literal(_ word: String, _ value: JSON) throws(SyntaxError) -> JSON {
            let expected = Array(word.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw error("expected '\(word)'")
            }
            index += expected.count
            return value
        }

        mutating func value(depth: Int) throws(SyntaxError) -> JSON {
            guard depth < JSON.maxDepth else { throw error("nested deeper than \(JSON.maxDepth) levels") }
            guard index < bytes.count else { throw error("unexpected end of text") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var pairs: [(key: String, value: JSON)] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(pairs)
                }
                while true {
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
                    let key = try string()
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
                    index += 1
                    skipSpace()
                    pairs.append((key, try value(depth: depth + 1)))
                    skipSpace()
                    guard index < bytes.count else { throw error("unexpected end of text in an object") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
                    index += 1
                    return .object(pairs)
                }
            case UInt8(ascii: "["):
                index += 1
                var items: [JSON] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(items)
                }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < bytes.count else { throw error("unexpected end of text in an array") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
                    index += 1
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return .number(Number(unchecked: try number()))
            default:
                throw error("unexpected character")
            }
        }

        mutating func digits() -> Int {
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - start
        }

        mutating func number() throws(SyntaxError) -> String {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { throw error("expected a digit") }
            if bytes[index] == UInt8(ascii: "0") { index += 1 } else { _ = digits() }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw error("expected a digit after '.'") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw error("expected a digit in the exponent") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// The end of the run of plain bytes (no quote, backslash or control character) from `start`.
        func plainRun(from start: Int) -> Int {
            bytes.withUnsafeBufferPointer { buffer in
                var i = start
                while i < buffer.count {
                    let byte = buffer[i]
                    if byte == 0x22 || byte == 0x5C || byte < 0x20 { break }
                    i += 1
                }
                return i
            }
        }

        mutating func string() throws(SyntaxError) -> String {
            index += 1  // the opening quote
            // The input came from a String, so its bytes are valid UTF-8; escapes add only scalars.
            let first = plainRun(from: index)
            if first < bytes.count, bytes[first] == UInt8(ascii: "\"") {
                let text = try text(bytes[index..<first])
                index = first + 1
                return text
            }
            // With escapes: find the closing quote, then decode the span in one pass into a
            // buffer of its size (escapes only shrink text).
            var end = first
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
            }
            guard end < bytes.count else {
                index = bytes.count
                throw error("unterminated string")
            }
            let start = index
            var failure: (message: String, offset: Int)?
            let decoded = bytes.withUnsafeBufferPointer { source in
                [UInt8](unsafeUninitializedCapacity: end - start) { out, count in
                    let (written, problem) = Self.decodeEscaped(source, from: start, to: end, into: out)
                    failure = problem
                    count = written
                }
            }
            if let failure {
                index = failure.offset
                throw error(failure.message)
            }
            let value = try text(decoded)
            index = end + 1
            return value
        }

        /// Decodes the string body `source[start..<end]` (escapes included) into `out`; the count
        /// written, or the first problem and where.
        static func decodeEscaped(
            _ source: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, into out: UnsafeMutableBufferPointer<UInt8>
        ) -> (Int, (message: String, offset: Int)?) {
            var i = start
            var o = 0
            func hex4(_ at: Int) -> UInt32? {
                guard at + 4 <= end else { return nil }
                var value: UInt32 = 0
                for k in at..<at + 4 {
                    let byte = source[k]
                    let digit: UInt8
                    switch byte {
                    case 0x30...0x39: digit = byte - 0x30
                    case 0x41...0x46: digit = byte - 0x41 + 10
                    case 0x61...0x66: digit = byte - 0x61 + 10
                    default: return nil
                    }
                    value = value << 4 | UInt32(digit)
                }
                return value
            }
            while i < end {
                let byte = source[i]
                if byte < 0x20 { return (o, ("control character in a string (escape it)", i)) }
                guard byte == 0x5C else {
                    out[o] = byte
                    o += 1
                    i += 1
                    continue
                }
                guard i + 1 < end else { return (o, ("unterminated escape", i + 1)) }
                let escape = source[i + 1]
                i += 2
                switch escape {
                case UInt8(ascii: "\""): out[o] = 0x22
                case UInt8(ascii: "\\"): out[o] = 0x5C
                case UInt8(ascii: "/"): out[o] = 0x2F
                case UInt8(ascii: "b"): out[o] = 0x08
                case UInt8(ascii: "f"): out[o] = 0x0C
                case UInt8(ascii: "n"): out[o] = 0x0A
                case UInt8(ascii: "r"): out[o] = 0x0D
                case UInt8(ascii: "t"): out[o] = 0x09
                case UInt8(ascii: "u"):
                    guard var scalar = hex4(i) else { return (o, ("expected four hex digits", i)) }
                    i += 4
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard i + 1 < end, source[i] == 0x5C, source[i + 1] == UInt8(ascii: "u") else {
                            return (o, ("a high surrogate must be followed by a low surrogate", i))
                        }
                        guard let low = hex4(i + 2) else { return (o, ("expected four hex digits", i + 2)) }
                        guard (0xDC00..<0xE000).contains(low) else { return (o, ("expected a low surrogate", i + 2)) }
                        i += 6
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        return (o, ("a lone low surrogate", i))
                    }
                    guard let character = Unicode.Scalar(scalar) else { return (o, ("not a Unicode scalar", i)) }
                    for unit in UTF8.encode(character) ?? UTF8.EncodedScalar() {
                        out[o] = unit
                        o += 1
                    }
                    continue
                default:
                    return (o, ("unknown escape", i - 1))
                }
                o += 1
            }
            return (o, nil)
        }
    }
}
