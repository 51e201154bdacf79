import Foundation
import Testing

/// Issue 60's rule for files that fit: no function outside the kernel modules runs over 80 lines
/// unless a `// Long:` comment above it says why. The scan masks comments and string literals
/// (raw, multi-line and interpolated ones included) so that braces inside them do not count.
@Suite struct FunctionLengthTests {
    static let limit = 80
    /// Modules whose hot loops are kept whole on purpose (SIMD kernels and C shims).
    static let exempt = ["HearthKernels", "CHearthCPU", "CBLAS", "CSentencePiece", "CZstd"]

    struct Finding: CustomStringConvertible {
        let file: String, line: Int, name: String, length: Int, reasoned: Bool
        var description: String { "\(file):\(line) \(name) — \(length) lines" }
    }

    /// `text` with every comment and every string literal's contents replaced by spaces, line
    /// breaks kept, so line numbers and brace structure survive.
    static func masked(_ text: String) -> [Character] {
        let s = Array(text)
        var out: [Character] = []
        out.reserveCapacity(s.count)
        // A stack of open literals: a string (its `#` count and whether it is multi-line) or an
        // interpolation inside one (its open-parenthesis depth).
        enum Frame { case string(hashes: Int, multiline: Bool), interpolation(depth: Int) }
        var stack: [Frame] = []
        var i = 0
        func starts(_ p: String, at k: Int) -> Bool {
            let a = Array(p)
            guard k + a.count <= s.count else { return false }
            return Array(s[k..<k + a.count]) == a
        }
        func blank(_ n: Int) { for k in 0..<n { out.append(s[i + k] == "\n" ? "\n" : " ") }; i += n }
        while i < s.count {
            let inCode: Bool
            if case .string? = stack.last { inCode = false } else { inCode = true }
            if inCode {
                if starts("//", at: i) {
                    var j = i
                    while j < s.count, s[j] != "\n" { j += 1 }
                    blank(j - i)
                    continue
                }
                if starts("/*", at: i) {
                    var depth = 0, j = i
                    while j < s.count {
                        if starts("/*", at: j) { depth += 1; j += 2; continue }
                        if starts("*/", at: j) { depth -= 1; j += 2; if depth == 0 { break }; continue }
                        j += 1
                    }
                    blank(min(j, s.count) - i)
                    continue
                }
                if s[i] == "#" || s[i] == "\"" {
                    var j = i
                    while j < s.count, s[j] == "#" { j += 1 }
                    if j < s.count, s[j] == "\"" {
                        let multiline = starts("\"\"\"", at: j)
                        stack.append(.string(hashes: j - i, multiline: multiline))
                        blank(j - i + (multiline ? 3 : 1))
                        continue
                    }
                }
                if case .interpolation(let depth)? = stack.last {
                    if s[i] == "(" { stack[stack.count - 1] = .interpolation(depth: depth + 1) }
                    if s[i] == ")" {
                        if depth == 0 { stack.removeLast(); blank(1); continue }
                        stack[stack.count - 1] = .interpolation(depth: depth - 1)
                    }
                }
                out.append(s[i])
                i += 1
                continue
            }
            guard case .string(let hashes, let multiline)? = stack.last else { continue }
            let escape = "\\" + String(repeating: "#", count: hashes)
            if starts(escape + "(", at: i) {
                blank(escape.count + 1)
                stack.append(.interpolation(depth: 0))
                continue
            }
            if starts(escape, at: i) { blank(min(escape.count + 1, s.count - i)); continue }
            let close = (multiline ? "\"\"\"" : "\"") + String(repeating: "#", count: hashes)
            if starts(close, at: i) { stack.removeLast(); blank(close.count); continue }
            blank(1)
        }
        return out
    }

    nonisolated(unsafe) static let declaration = /^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|open|static|class|final|override|mutating|nonmutating|nonisolated|convenience|required|dynamic|indirect)(?:\([^)]*\))?\s+)*(func\s+[^\s(<]+|init[?!]?|deinit|subscript)\b/

    /// Every function, initializer and subscript body in `text` with its length in lines.
    static func functions(in text: String, file: String) -> [Finding] {
        let lines = text.components(separatedBy: "\n")
        let code = String(masked(text)).components(separatedBy: "\n")
        var found: [Finding] = []
        for (k, line) in code.enumerated() {
            guard let match = line.firstMatch(of: declaration) else { continue }
            var depth = 0, paren = 0, opened = false, end: Int?
            var j = k
            scan: while j < code.count, j <= k + 2_000 {
                let segment = j == k ? Substring(line[match.1.startIndex...]) : Substring(code[j])
                for c in segment {
                    switch c {
                    case "(", "[": paren += 1
                    case ")", "]": paren -= 1
                    case "{":
                        depth += 1
                        if !opened && paren == 0 { opened = true }
                    case "}":
                        depth -= 1
                        if opened && depth == 0 { end = j; break scan }
                    default: break
                    }
                }
                if !opened && j > k + 30 { break }
                j += 1
            }
            guard let end else { continue }
            // The reason is a `// Long:` line among the comments and attributes right above.
            var a = k - 1, reasoned = false
            while a >= 0 {
                let above = lines[a].trimmingCharacters(in: .whitespaces)
                guard above.hasPrefix("//") || above.hasPrefix("@") else { break }
                if above.hasPrefix("// Long:") { reasoned = true }
                a -= 1
            }
            found.append(Finding(file: file, line: k + 1, name: String(match.1), length: end - k + 1, reasoned: reasoned))
        }
        return found
    }

    @Test func noLongFunctionWithoutAReason() throws {
        let sources = ModuleTableTests.root.appendingPathComponent("Sources")
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted()
        var long: [Finding] = []
        var counted = 0
        for module in modules where !Self.exempt.contains(where: { module.hasPrefix($0) }) {
            let folder = sources.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                let relative = "Sources/\(module)/" + file.path.dropFirst(folder.path.count + 1)
                let functions = Self.functions(in: text, file: relative)
                counted += functions.count
                long += functions.filter { $0.length > Self.limit && !$0.reasoned }
            }
        }
        #expect(counted > 1_000, "the scan found only \(counted) functions: it is broken")
        #expect(long.isEmpty, "functions over \(Self.limit) lines without a `// Long:` reason above them:\n\(long.map(\.description).joined(separator: "\n"))")
    }

    /// The scan itself: braces in strings, raw strings, interpolations and comments do not count,
    /// and a reason above the attributes is found.
    @Test func theScanMeasuresBodiesNotLiterals() {
        let body = (0..<5).map { _ in "    let x = \"}\" + #\"}\"# + \"\\(f({ 1 }()))\" // }" }.joined(separator: "\n")
        let text = """
            /// Doc.
            // Long: a table kept whole.
            @inlinable
            public static func a(_ v: Int) -> Int {
            \(body)
                /* } { */
                return v
            }
            func b() { }
            """
        let found = Self.functions(in: text, file: "t.swift")
        #expect(found.map(\.name) == ["func a", "func b"])
        #expect(found.first?.length == 9)
        #expect(found.first?.reasoned == true)
        #expect(found.last?.length == 1)
        #expect(found.last?.reasoned == false)
    }
}
