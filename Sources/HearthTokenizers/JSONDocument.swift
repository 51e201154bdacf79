/// A small JSON reader for tokenizer files: one validating pass over the bytes into a flat
/// array of nodes (a "tape", as simdjson calls it), with no allocation per value. Strings stay
/// byte ranges of the input until asked for, so a 200k-entry vocabulary is read without
/// creating 200k `String`s — and tokens are compared byte for byte, never with `String`'s
/// canonical equivalence (which would merge distinct tokens such as "é" and "e\u{301}").
struct JSONDocument: Sendable {
    enum Kind: UInt8, Sendable {
        case null, bool, number, string, array, object
    }

    /// One value. Strings and numbers: `start..<end` is their byte range (inside the quotes).
    /// Arrays and objects: `count` elements (objects: key/value pairs, keys are string nodes
    /// followed by their value) start at the next node; `end` is the index after the subtree.
    struct Node: Sendable {
        var kind: Kind
        /// Strings: contains a backslash escape. Bools: the value.
        var flag: Bool
        var count: Int32
        var start: Int32
        var end: Int32
    }

    let bytes: [UInt8]
    private(set) var nodes: [Node] = []
    /// For error messages.
    let path: String?

    static let maxDepth = 256

    /// Parses `bytes`; throws `TokenizerError.invalidConfig` naming the byte offset of the problem.
    init(bytes: [UInt8], path: String?) throws {
        self.bytes = bytes
        self.path = path
        guard bytes.count < Int32.max else {
            throw TokenizerError(.invalidConfig, "the file is too large (\(bytes.count) bytes)", path: path)
        }
        nodes.reserveCapacity(bytes.count / 8)
        var parser = Parser(bytes: bytes, path: path)
        try bytes.withUnsafeBufferPointer { buffer in
            try parser.parseDocument(buffer, into: &nodes)
        }
    }

    /// The root value.
    var root: JSONValue { JSONValue(document: self, index: 0, keyPath: "") }

    // MARK: - Reading values

    func stringBytes(_ node: Node) throws -> [UInt8] {
        let range = Int(node.start)..<Int(node.end)
        guard node.flag else { return Array(bytes[range]) }
        return try Self.unescape(bytes[range], path: path)
    }

    /// Calls `body` with the unescaped bytes of a string node without copying when it has no escapes.
    func withStringBytes<R>(_ node: Node, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
        if node.flag {
            let unescaped = try Self.unescape(bytes[Int(node.start)..<Int(node.end)], path: path)
            return try unescaped.withUnsafeBufferPointer(body)
        }
        return try bytes.withUnsafeBufferPointer { buffer in
            try body(UnsafeBufferPointer(rebasing: buffer[Int(node.start)..<Int(node.end)]))
        }
    }

    func string(_ node: Node) throws -> String {
        String(decoding: try stringBytes(node), as: UTF8.self)
    }

    /// Resolves `\n`, `\"`, `\uXXXX` (with surrogate pairs) and the other JSON escapes.
    static func unescape(_ raw: ArraySlice<UInt8>, path: String?) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = raw.startIndex
        func hex4(_ at: Int) throws -> UInt32 {
            guard at + 4 <= raw.endIndex else { throw badEscape(at) }
            var value: UInt32 = 0
            for k in at..<(at + 4) {
                let c = raw[k]
                let digit: UInt32
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
                default: throw badEscape(k)
                }
                value = value << 4 | digit
            }
            return value
        }
        func badEscape(_ at: Int) -> TokenizerError {
            TokenizerError(.invalidConfig, "invalid escape in a JSON string near byte \(at)", path: path)
        }
        while i < raw.endIndex {
            let c = raw[i]
            guard c == UInt8(ascii: "\\") else {
                out.append(c)
                i += 1
                continue
            }
            guard i + 1 < raw.endIndex else { throw badEscape(i) }
            let e = raw[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "u"):
                var value = try hex4(i)
                i += 4
                if (0xD800..<0xDC00).contains(value) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    guard i + 6 <= raw.endIndex, raw[i] == UInt8(ascii: "\\"), raw[i + 1] == UInt8(ascii: "u") else {
                        throw badEscape(i)
                    }
                    let low = try hex4(i + 2)
                    guard (0xDC00..<0xE000).contains(low) else { throw badEscape(i) }
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                } else if (0xDC00..<0xE000).contains(value) {
                    throw badEscape(i)
                }
                guard let scalar = Unicode.Scalar(value) else { throw badEscape(i) }
                out.append(contentsOf: scalar.utf8)
            default:
                throw badEscape(i - 1)
            }
        }
        return out
    }

    // MARK: - Parsing

    private struct Parser {
        let bytes: [UInt8]
        let path: String?

        func fail(_ message: String, at offset: Int) -> TokenizerError {
            TokenizerError(
                .invalidConfig, "not valid JSON: \(message) at byte \(offset)", path: path,
                remedy: "Re-download the file; it may be truncated")
        }

        mutating func parseDocument(_ b: UnsafeBufferPointer<UInt8>, into nodes: inout [Node]) throws {
            var i = skipSpace(b, 0)
            try parseValue(b, &i, depth: 0, into: &nodes)
            i = skipSpace(b, i)
            guard i == b.count else { throw fail("unexpected data after the value", at: i) }
        }

        func skipSpace(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
            var i = start
            while i < b.count {
                switch b[i] {
                case 0x20, 0x0A, 0x0D, 0x09: i += 1
                default: return i
                }
            }
            return i
        }

        func parseValue(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int, depth: Int, into nodes: inout [Node]) throws {
            guard depth < JSONDocument.maxDepth else { throw fail("nesting deeper than \(JSONDocument.maxDepth)", at: i) }
            guard i < b.count else { throw fail("unexpected end of input", at: i) }
            switch b[i] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                // Objects and arrays alike: elements separated by commas; an object's element
                // is a key string, a colon and the value.
                let isObject = b[i] == UInt8(ascii: "{")
                let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                let me = nodes.count
                nodes.append(Node(kind: isObject ? .object : .array, flag: false, count: 0, start: Int32(i), end: 0))
                i += 1
                var count: Int32 = 0
                i = skipSpace(b, i)
                if i < b.count && b[i] == close {
                    i += 1
                } else {
                    while true {
                        i = skipSpace(b, i)
                        if isObject {
                            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a key string", at: i) }
                            try parseString(b, &i, into: &nodes)
                            i = skipSpace(b, i)
                            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'", at: i) }
                            i = skipSpace(b, i + 1)
                        }
                        try parseValue(b, &i, depth: depth + 1, into: &nodes)
                        count += 1
                        i = skipSpace(b, i)
                        guard i < b.count else { throw fail(isObject ? "unterminated object" : "unterminated array", at: i) }
                        if b[i] == UInt8(ascii: ",") {
                            i += 1
                            continue
                        }
                        guard b[i] == close else { throw fail(isObject ? "expected ',' or '}'" : "expected ',' or ']'", at: i) }
                        i += 1
                        break
                    }
                }
                nodes[me].count = count
                nodes[me].end = Int32(nodes.count)
            case UInt8(ascii: "\""):
                try parseString(b, &i, into: &nodes)
            case UInt8(ascii: "t"):
                try literal(b, &i, "true")
                nodes.append(Node(kind: .bool, flag: true, count: 0, start: 0, end: Int32(nodes.count + 1)))
            case UInt8(ascii: "f"):
                try literal(b, &i, "false")
                nodes.append(Node(kind: .bool, flag: false, count: 0, start: 0, end: Int32(nodes.count + 1)))
            case UInt8(ascii: "n"):
                try literal(b, &i, "null")
                nodes.append(Node(kind: .null, flag: false, count: 0, start: 0, end: Int32(nodes.count + 1)))
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = i
                i += 1
                while i < b.count {
                    switch b[i] {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"),
                        UInt8(ascii: "+"), UInt8(ascii: "-"):
                        i += 1
                        continue
                    default: break
                    }
                    break
                }
                nodes.append(Node(kind: .number, flag: false, count: 0, start: Int32(start), end: Int32(i)))
            default:
                throw fail("unexpected character", at: i)
            }
        }

        func literal(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int, _ word: StaticString) throws {
            let n = word.utf8CodeUnitCount
            guard i + n <= b.count else { throw fail("unexpected end of input", at: i) }
            let ok = word.withUTF8Buffer { w in (0..<n).allSatisfy { b[i + $0] == w[$0] } }
            guard ok else { throw fail("unexpected character", at: i) }
            i += n
        }

        /// A string starting at the quote at `i`; leaves `i` after the closing quote.
        func parseString(_ b: UnsafeBufferPointer<UInt8>, _ i: inout Int, into nodes: inout [Node]) throws {
            let start = i + 1
            var j = start
            var escaped = false
            while j < b.count {
                let c = b[j]
                if c == UInt8(ascii: "\"") { break }
                if c == UInt8(ascii: "\\") {
                    escaped = true
                    j += 2
                    continue
                }
                guard c >= 0x20 else { throw fail("control character in a string", at: j) }
                j += 1
            }
            guard j < b.count else { throw fail("unterminated string", at: i) }
            nodes.append(
                Node(kind: .string, flag: escaped, count: 0, start: Int32(start), end: Int32(j)))
            // Strings are leaves: `end` doubles as the skip pointer only for containers.
            i = j + 1
        }
    }

    /// Index of the node after `index` and its whole subtree.
    func next(after index: Int) -> Int {
        let node = nodes[index]
        switch node.kind {
        case .array, .object: return Int(node.end)
        default: return index + 1
        }
    }
}

/// A value inside a `JSONDocument`, with the key path that led to it for error messages.
struct JSONValue {
    let document: JSONDocument
    let index: Int
    let keyPath: String

    var node: JSONDocument.Node { document.nodes[index] }
    var kind: JSONDocument.Kind { node.kind }
    var isNull: Bool { node.kind == .null }

    func error(_ message: String) -> TokenizerError {
        TokenizerError(.invalidConfig, message, path: document.path, key: keyPath.isEmpty ? nil : keyPath)
    }

    func typeError(_ expected: String) -> TokenizerError {
        error("expected \(expected), found \(kind)")
    }

    /// The value of `key` in an object (nil when the key is absent); throws when this is not an object.
    subscript(key: String) -> JSONValue? {
        guard node.kind == .object else { return nil }
        let wanted = Array(key.utf8)
        var i = index + 1
        for _ in 0..<Int(node.count) {
            let keyNode = document.nodes[i]
            let valueIndex = i + 1
            let matches: Bool
            if keyNode.flag {
                matches = (try? document.stringBytes(keyNode)) == wanted
            } else {
                matches = Int(keyNode.end - keyNode.start) == wanted.count
                    && document.bytes[Int(keyNode.start)..<Int(keyNode.end)].elementsEqual(wanted)
            }
            if matches {
                return JSONValue(document: document, index: valueIndex, keyPath: join(key))
            }
            i = document.next(after: valueIndex)
        }
        return nil
    }

    private func join(_ key: String) -> String { keyPath.isEmpty ? key : keyPath + "." + key }

    /// The value of `key`, or nil when absent or JSON `null`.
    func optional(_ key: String) -> JSONValue? {
        guard let value = self[key], !value.isNull else { return nil }
        return value
    }

    /// The value of `key`; throws naming the key when it is absent.
    func required(_ key: String) throws -> JSONValue {
        guard node.kind == .object else { throw typeError("an object") }
        guard let value = self[key] else {
            throw TokenizerError(.invalidConfig, "missing key", path: document.path, key: join(key))
        }
        return value
    }

    func string() throws -> String {
        guard node.kind == .string else { throw typeError("a string") }
        return try document.string(node)
    }

    func bytes() throws -> [UInt8] {
        guard node.kind == .string else { throw typeError("a string") }
        return try document.stringBytes(node)
    }

    func bool() throws -> Bool {
        guard node.kind == .bool else { throw typeError("true or false") }
        return node.flag
    }

    func int() throws -> Int {
        guard node.kind == .number else { throw typeError("an integer") }
        var value = 0
        var negative = false
        var i = Int(node.start)
        let end = Int(node.end)
        if document.bytes[i] == UInt8(ascii: "-") {
            negative = true
            i += 1
        }
        guard i < end else { throw typeError("an integer") }
        while i < end {
            let c = document.bytes[i]
            guard c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") else {
                // Accept integral floats such as 1.0 or 1e3.
                if let d = try? double(), d.rounded() == d, abs(d) < 1e15 { return Int(d) }
                throw typeError("an integer")
            }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int(c - UInt8(ascii: "0")))
            guard !o1 && !o2 else { throw error("integer out of range") }
            value = s
            i += 1
        }
        return negative ? -value : value
    }

    func double() throws -> Double {
        guard node.kind == .number else { throw typeError("a number") }
        let text = String(decoding: document.bytes[Int(node.start)..<Int(node.end)], as: UTF8.self)
        guard let value = Double(text) else { throw typeError("a number") }
        return value
    }

    /// The elements of an array.
    func array() throws -> [JSONValue] {
        guard node.kind == .array else { throw typeError("an array") }
        var out: [JSONValue] = []
        out.reserveCapacity(Int(node.count))
        var i = index + 1
        for k in 0..<Int(node.count) {
            out.append(JSONValue(document: document, index: i, keyPath: "\(keyPath)[\(k)]"))
            i = document.next(after: i)
        }
        return out
    }

    /// Calls `body` with each element's node index, without building `JSONValue`s (big arrays).
    func forEachElementIndex(_ body: (Int, Int) throws -> Void) throws {
        guard node.kind == .array else { throw typeError("an array") }
        var i = index + 1
        for k in 0..<Int(node.count) {
            try body(k, i)
            i = document.next(after: i)
        }
    }

    /// Calls `body` with each key node index and value node index of an object.
    func forEachEntryIndex(_ body: (Int, Int) throws -> Void) throws {
        guard node.kind == .object else { throw typeError("an object") }
        var i = index + 1
        for _ in 0..<Int(node.count) {
            try body(i, i + 1)
            i = document.next(after: i + 1)
        }
    }

    /// The keys and values of an object, in file order.
    func entries() throws -> [(key: String, value: JSONValue)] {
        var out: [(key: String, value: JSONValue)] = []
        try forEachEntryIndex { k, v in
            let key = try document.string(document.nodes[k])
            out.append((key, JSONValue(document: document, index: v, keyPath: join(key))))
        }
        return out
    }

    /// A child value at a node index (from the `forEach…` helpers), for error messages under `name`.
    func child(_ nodeIndex: Int, _ name: String) -> JSONValue {
        JSONValue(document: document, index: nodeIndex, keyPath: join(name))
    }
}
