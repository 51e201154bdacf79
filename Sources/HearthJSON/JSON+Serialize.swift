extension JSON {
    /// How ``serialized(_:)`` lays out JSON text.
    public enum Layout: Sendable, Equatable {
        /// No whitespace: `{"a":[1,2]}`.
        case compact
        /// As Python's `json.dumps(value, ensure_ascii=False, indent=indent)` writes it:
        /// `{"a": [1, 2]}` without an indent; with one, each item on its own line indented by
        /// `indent` spaces per level (`"a": [` then `1,`). This is Jinja's `tojson` in
        /// transformers' chat templates, so a prompt Hearth renders is the one the model saw.
        case python(indent: Int?)
    }

    /// The value as compact JSON text: keys in their order, numbers as written, strings escaped
    /// as RFC 8259 requires (`"`, `\`, control characters; everything else as is).
    public var serialized: String { serialized(.compact) }

    /// The value as JSON text in `layout`: keys in their order, numbers as written, strings
    /// escaped by ``quote(_:into:)``.
    public func serialized(_ layout: Layout) -> String {
        var out = ""
        switch layout {
        case .compact: write(to: &out, indent: nil, itemSeparator: ",", keySeparator: ":", level: 0)
        case .python(let indent?): write(to: &out, indent: indent, itemSeparator: ",", keySeparator: ": ", level: 0)
        case .python(nil): write(to: &out, indent: nil, itemSeparator: ", ", keySeparator: ": ", level: 0)
        }
        return out
    }

    private func write(to out: inout String, indent: Int?, itemSeparator: String, keySeparator: String, level: Int) {
        func newline(_ level: Int) {
            if let indent { out += "\n" + String(repeating: " ", count: indent * level) }
        }
        switch self {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let number): out += number.text
        case .string(let text): Self.quote(text, into: &out)
        case .array(let items):
            guard !items.isEmpty else { out += "[]"; return }
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += itemSeparator }
                newline(level + 1)
                item.write(to: &out, indent: indent, itemSeparator: itemSeparator, keySeparator: keySeparator, level: level + 1)
            }
            newline(level)
            out += "]"
        case .object(let members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += itemSeparator }
                newline(level + 1)
                Self.quote(key, into: &out)
                out += keySeparator
                value.write(to: &out, indent: indent, itemSeparator: itemSeparator, keySeparator: keySeparator, level: level + 1)
            }
            newline(level)
            out += "}"
        }
    }

    /// Appends `text` as a JSON string: `"` and `\` escaped, control characters as their short
    /// escapes or `\u00XX`, everything else as is — what Python's `json.dumps(…,
    /// ensure_ascii=False)` writes, so chat-template prompts match transformers' byte for byte.
    /// With `asciiOnly`, also every scalar outside printable ASCII as `\uXXXX` (UTF-16 surrogate
    /// pairs beyond the BMP), as `ensure_ascii=True` writes it.
    public static func quote(_ text: String, into out: inout String, asciiOnly: Bool = false) {
        func escape(_ unit: UInt32) {
            let hex = String(unit, radix: 16)
            out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20: escape(scalar.value)
            case _ where asciiOnly && scalar.value > 0x7E:
                if scalar.value > 0xFFFF {
                    let v = scalar.value - 0x10000
                    escape(0xD800 + (v >> 10))
                    escape(0xDC00 + (v & 0x3FF))
                } else {
                    escape(scalar.value)
                }
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
