/// A token of a template: text between tags, tag delimiters, and the expression tokens inside tags.
struct Token {
    enum Kind: Equatable {
        case text(String)
        case blockBegin, blockEnd, variableBegin, variableEnd
        case name(String)
        case string(String)
        case integer(Int)
        case float(Double)
        case op(String)
        case end
    }
    var kind: Kind
    var position: SourcePosition
}

/// Splits a template into tokens as jinja2's lexer does with transformers' settings
/// (`trim_blocks=True`, `lstrip_blocks=True`, `keep_trailing_newline=False`): `-` strips all
/// whitespace on its side of a tag, `+` keeps it, a block or comment tag alone on its line
/// takes the line's leading spaces and its own newline with it.
struct Lexer {
    private let src: [Unicode.Scalar]
    private var lineStarts: [Int] = [0]
    private var tokens: [Token] = []
    private var pos = 0
    /// Whether the last match ended with a newline (jinja2's `line_starting`).
    private var lineStarting = true

    /// Tokenizes `source`; throws `TemplateError` (syntax) with a position.
    static func tokenize(_ source: String) throws -> [Token] {
        var lexer = Lexer(source: source)
        try lexer.run()
        return lexer.tokens
    }

    private init(source: String) {
        // jinja2 normalizes \r\n and \r to \n, then drops one trailing newline.
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(source.unicodeScalars.count)
        var it = source.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = it.next()
        while let c = pending {
            pending = it.next()
            if c == "\r" {
                scalars.append("\n")
                if pending == "\n" { pending = it.next() }
            } else {
                scalars.append(c)
            }
        }
        if scalars.last == "\n" { scalars.removeLast() }
        src = scalars
        for (i, c) in src.enumerated() where c == "\n" { lineStarts.append(i + 1) }
    }

    private func position(_ index: Int) -> SourcePosition {
        // Binary search for the line.
        var lo = 0, hi = lineStarts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if lineStarts[mid] <= index { lo = mid } else { hi = mid - 1 }
        }
        return SourcePosition(line: lo + 1, column: index - lineStarts[lo] + 1)
    }

    private func error(_ message: String, at index: Int) -> TemplateError {
        TemplateError(.syntax, message, at: position(index))
    }

    private func at(_ i: Int, _ s: String) -> Bool {
        var j = i
        for c in s.unicodeScalars {
            guard j < src.count, src[j] == c else { return false }
            j += 1
        }
        return true
    }

    private func string(_ range: Range<Int>) -> String {
        var s = String.UnicodeScalarView()
        s.append(contentsOf: src[range])
        return String(s)
    }

    private mutating func emitText(_ range: Range<Int>) {
        if !range.isEmpty { tokens.append(Token(kind: .text(string(range)), position: position(range.lowerBound))) }
    }

    /// The text before a tag opening at `tagStart` with whitespace-control `sign` ("-", "+" or
    /// ""), after `-` stripping or `lstrip_blocks`.
    private func textBefore(_ start: Int, _ tagStart: Int, sign: Unicode.Scalar?, lstrip: Bool) -> Range<Int> {
        var end = tagStart
        if sign == "-" {
            while end > start, PythonFormat.isSpace(src[end - 1]) { end -= 1 }
        } else if sign != "+", lstrip {
            var lineStart = end
            while lineStart > start, src[lineStart - 1] != "\n" { lineStart -= 1 }
            if (lineStart > start || lineStarting) && lineStart < end
                && src[lineStart..<end].allSatisfy({ PythonFormat.isSpace($0) })
            {
                end = lineStart
            }
        }
        return start..<end
    }

    private mutating func run() throws {
        while pos < src.count {
            // Find the next tag opening.
            var i = pos
            var found: Int? = nil
            while i + 1 < src.count {
                if src[i] == "{", src[i + 1] == "{" || src[i + 1] == "%" || src[i + 1] == "#" { found = i; break }
                i += 1
            }
            guard let tag = found else {
                emitText(pos..<src.count)
                pos = src.count
                break
            }
            let kind = src[tag + 1]
            let signChar: Unicode.Scalar? = tag + 2 < src.count && (src[tag + 2] == "-" || src[tag + 2] == "+") ? src[tag + 2] : nil
            let afterOpen = tag + 2 + (signChar == nil ? 0 : 1)
            switch kind {
            case "#":
                emitText(textBefore(pos, tag, sign: signChar, lstrip: true))
                try lexComment(from: afterOpen, tagStart: tag)
            case "{":
                emitText(textBefore(pos, tag, sign: signChar, lstrip: false))
                tokens.append(Token(kind: .variableBegin, position: position(tag)))
                pos = afterOpen
                try lexInside(block: false)
            default:
                emitText(textBefore(pos, tag, sign: signChar, lstrip: true))
                if let rawBodyStart = rawBegin(afterOpen) {
                    try lexRaw(from: rawBodyStart, tagStart: tag)
                } else {
                    tokens.append(Token(kind: .blockBegin, position: position(tag)))
                    pos = afterOpen
                    try lexInside(block: true)
                }
            }
        }
        tokens.append(Token(kind: .end, position: position(src.count)))
    }

    /// `{% raw %}`: the index after its closing `%}` (and trimmed newline), or nil.
    private func rawBegin(_ start: Int) -> Int? {
        var i = start
        while i < src.count, PythonFormat.isSpace(src[i]) { i += 1 }
        guard at(i, "raw") else { return nil }
        i += 3
        while i < src.count, PythonFormat.isSpace(src[i]) { i += 1 }
        if at(i, "-%}") {
            i += 3
            while i < src.count, PythonFormat.isSpace(src[i]) { i += 1 }
            return i
        }
        if at(i, "%}") { return i + 2 }
        return nil
    }

    private mutating func lexRaw(from start: Int, tagStart: Int) throws {
        var i = start
        while i + 1 < src.count {
            if src[i] == "{", src[i + 1] == "%" {
                let sign: Unicode.Scalar? = i + 2 < src.count && (src[i + 2] == "-" || src[i + 2] == "+") ? src[i + 2] : nil
                var j = i + 2 + (sign == nil ? 0 : 1)
                while j < src.count, PythonFormat.isSpace(src[j]) { j += 1 }
                if at(j, "endraw") {
                    j += 6
                    while j < src.count, PythonFormat.isSpace(src[j]) { j += 1 }
                    var endSign: Unicode.Scalar? = nil
                    if j < src.count, src[j] == "-" || src[j] == "+" { endSign = src[j]; j += 1 }
                    if at(j, "%}") {
                        // The raw body before `{% endraw` takes lstrip and `-` like any text.
                        let saved = lineStarting
                        lineStarting = false
                        emitText(textBefore(start, i, sign: sign, lstrip: true))
                        lineStarting = saved
                        j += 2
                        j = afterTagEnd(j, sign: endSign)
                        pos = j
                        return
                    }
                }
            }
            i += 1
        }
        throw error("missing end of raw directive", at: tagStart)
    }

    /// The index after a block or comment end at `j` (just past `%}`/`#}`), with `-` stripping
    /// all following whitespace and `trim_blocks` taking one newline; updates `lineStarting`.
    private mutating func afterTagEnd(_ j: Int, sign: Unicode.Scalar?) -> Int {
        var k = j
        if sign == "-" {
            while k < src.count, PythonFormat.isSpace(src[k]) { k += 1 }
        } else if sign != "+", k < src.count, src[k] == "\n" {
            k += 1
        }
        lineStarting = k > 0 && src[k - 1] == "\n"
        return k
    }

    private mutating func lexComment(from start: Int, tagStart: Int) throws {
        var i = start
        while i + 1 < src.count {
            if src[i] == "#", src[i + 1] == "}" {
                let sign: Unicode.Scalar? = i > start && (src[i - 1] == "-" || src[i - 1] == "+") ? src[i - 1] : nil
                pos = afterTagEnd(i + 2, sign: sign)
                return
            }
            i += 1
        }
        throw error("missing end of comment tag", at: tagStart)
    }

    private static let operators: [String] = [
        "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=",
        ".", ":", "|", ",", ";",
    ]

    /// Tokens inside `{% … %}` or `{{ … }}` up to and including the end delimiter.
    private mutating func lexInside(block: Bool) throws {
        var brackets: [Unicode.Scalar] = []
        let start = pos
        while true {
            while pos < src.count, PythonFormat.isSpace(src[pos]) { pos += 1 }
            guard pos < src.count else {
                throw error(block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'", at: start)
            }
            if brackets.isEmpty {
                if block {
                    if at(pos, "-%}") {
                        tokens.append(Token(kind: .blockEnd, position: position(pos)))
                        pos = afterTagEnd(pos + 3, sign: "-")
                        return
                    }
                    if at(pos, "+%}") {
                        tokens.append(Token(kind: .blockEnd, position: position(pos)))
                        pos = afterTagEnd(pos + 3, sign: "+")
                        return
                    }
                    if at(pos, "%}") {
                        tokens.append(Token(kind: .blockEnd, position: position(pos)))
                        pos = afterTagEnd(pos + 2, sign: nil)
                        return
                    }
                } else {
                    if at(pos, "-}}") {
                        tokens.append(Token(kind: .variableEnd, position: position(pos)))
                        pos += 3
                        while pos < src.count, PythonFormat.isSpace(src[pos]) { pos += 1 }
                        lineStarting = pos > 0 && src[pos - 1] == "\n"
                        return
                    }
                    if at(pos, "}}") {
                        tokens.append(Token(kind: .variableEnd, position: position(pos)))
                        pos += 2
                        lineStarting = false
                        return
                    }
                }
            }
            let c = src[pos]
            let here = position(pos)
            if c == "'" || c == "\"" {
                tokens.append(Token(kind: .string(try lexString(quote: c)), position: here))
            } else if c.properties.numericType == .decimal && c.isASCII {
                tokens.append(Token(kind: try lexNumber(), position: here))
            } else if c == "_" || (c.isASCII && c.properties.isAlphabetic) {
                var j = pos
                while j < src.count, src[j] == "_" || (src[j].isASCII && (src[j].properties.isAlphabetic || src[j].properties.numericType == .decimal)) {
                    j += 1
                }
                tokens.append(Token(kind: .name(string(pos..<j)), position: here))
                pos = j
            } else {
                guard let op = Lexer.operators.first(where: { at(pos, $0) }) else {
                    throw error("unexpected char '\(c.escaped(asASCII: false))'", at: pos)
                }
                switch op {
                case "(": brackets.append(")")
                case "[": brackets.append("]")
                case "{": brackets.append("}")
                case ")", "]", "}":
                    guard let expected = brackets.popLast() else { throw error("unexpected '\(op)'", at: pos) }
                    if String(expected) != op { throw error("unexpected '\(op)', expected '\(expected)'", at: pos) }
                default: break
                }
                tokens.append(Token(kind: .op(op), position: here))
                pos += op.unicodeScalars.count
            }
        }
    }

    private mutating func lexNumber() throws -> Token.Kind {
        let start = pos
        var j = pos
        func digits() {
            while j < src.count, src[j].isASCII, src[j].properties.numericType == .decimal || (src[j] == "_" && j + 1 < src.count && src[j + 1].properties.numericType == .decimal) {
                j += 1
            }
        }
        digits()
        var isFloat = false
        if j + 1 < src.count, src[j] == ".", src[j + 1].isASCII, src[j + 1].properties.numericType == .decimal {
            isFloat = true
            j += 1
            digits()
        }
        if j < src.count, src[j] == "e" || src[j] == "E" {
            var k = j + 1
            if k < src.count, src[k] == "+" || src[k] == "-" { k += 1 }
            if k < src.count, src[k].isASCII, src[k].properties.numericType == .decimal {
                isFloat = true
                j = k
                digits()
            }
        }
        let text = string(start..<j).replacingOccurrences(of: "_", with: "")
        pos = j
        if isFloat {
            guard let d = Double(text) else { throw error("invalid number '\(text)'", at: start) }
            return .float(d)
        }
        guard let i = Int(text) else { throw error("integer literal '\(text)' is too large", at: start) }
        return .integer(i)
    }

    /// A string literal, decoded as jinja2 does (Python's `unicode-escape`).
    private mutating func lexString(quote: Unicode.Scalar) throws -> String {
        let start = pos
        var j = pos + 1
        var out = String.UnicodeScalarView()
        while true {
            guard j < src.count else { throw error("unterminated string literal", at: start) }
            let c = src[j]
            if c == quote { j += 1; break }
            if c != "\\" { out.append(c); j += 1; continue }
            guard j + 1 < src.count else { throw error("unterminated string literal", at: start) }
            let e = src[j + 1]
            j += 2
            switch e {
            case "\n": break  // line continuation
            case "\\": out.append("\\")
            case "'": out.append("'")
            case "\"": out.append("\"")
            case "a": out.append("\u{07}")
            case "b": out.append("\u{08}")
            case "f": out.append("\u{0C}")
            case "n": out.append("\n")
            case "r": out.append("\r")
            case "t": out.append("\t")
            case "v": out.append("\u{0B}")
            case "x", "u", "U":
                let n = e == "x" ? 2 : (e == "u" ? 4 : 8)
                guard j + n <= src.count, let v = UInt32(string(j..<(j + n)), radix: 16), let s = Unicode.Scalar(v) else {
                    throw error("invalid \\\(e) escape in string literal", at: j - 2)
                }
                out.append(s)
                j += n
            case "0"..."7":
                var v = e.value - 48
                var k = 0
                while k < 2, j < src.count, ("0"..."7").contains(src[j]) { v = v * 8 + src[j].value - 48; j += 1; k += 1 }
                if let s = Unicode.Scalar(v) { out.append(s) }
            default:
                out.append("\\")
                out.append(e)
            }
        }
        pos = j
        return String(out)
    }
}
