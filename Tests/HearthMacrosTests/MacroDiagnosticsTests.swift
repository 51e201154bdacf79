import Foundation
import HearthTestSupport
import Testing

/// `@Structured` on declarations it cannot describe: a compile-time error at the place, saying
/// why. Checked with the real compiler, as an app meets them: one file holding every case is
/// type-checked by `swiftc` with the flags SwiftPM compiled this test module with (its module
/// search paths and the built macro plugin, read from the build's manifest), and the errors it
/// prints are compared with the expected ones — message, line and column — and must be the only
/// errors. (The test module does not link swift-syntax: SwiftPM builds it once, for the plugin.)
@Suite struct MacroDiagnosticsTests {
    /// A declaration `@Structured` refuses, with the error expected at (line, column) of `source`.
    struct Case {
        let source: String
        let message: String
        let line: Int
        let column: Int
    }

    static let cases: [Case] = [
        Case(
            source: """
                @Structured
                class Box: Codable {
                    var x: Int = 0
                }
                """,
            message: "@Structured applies to a struct or an enum, not a class: a model generates values, and a value type's Codable is what its schema describes",
            line: 1, column: 1),
        Case(
            source: """
                @Structured
                struct Area: Codable {
                    var size: Int { 4 }
                }
                """,
            message: "@Structured needs stored properties: 'Area' has none, so a model would have nothing to generate (computed properties are not encoded)",
            line: 2, column: 8),
        Case(
            source: """
                @Structured
                struct Point: Codable {
                    var x = 0
                }
                """,
            message: "@Structured needs the type of 'x' written out ('var x: Type'): the schema is derived from the declaration",
            line: 3, column: 9),
        Case(
            source: """
                @Structured
                struct Event: Codable {
                    var when: Date
                }
                """,
            message: "@Structured cannot describe 'Date': a Date decodes from seconds since 2001, which a model does not write; use a String (with @SchemaGuide(pattern:) for a date format)",
            line: 3, column: 15),
        Case(
            source: """
                @Structured
                struct Age: Codable {
                    @SchemaGuide(pattern: "[0-9]+") var years: Int
                }
                """,
            message: "@SchemaGuide(pattern:) applies to a String, and 'years' is not one",
            line: 3, column: 18),
        Case(
            source: """
                @Structured
                struct Node: Codable {
                    var children: [Node]
                }
                """,
            message: "@Structured cannot describe a type that contains itself ('Node'): its schema would never end",
            line: 3, column: 20),
        Case(
            source: """
                @Structured
                enum Coin: Double, Codable {
                    case penny = 0.01
                }
                """,
            message: "@Structured describes enums with String or Int raw values (or none); 'Double' raw values are not supported",
            line: 2, column: 12),
        Case(
            source: """
                @Structured
                struct Box2<T: Codable>: Codable {
                    var item: T
                }
                """,
            message: "@Structured cannot describe a generic type ('Box2<T: Codable>'): its schema depends on the type arguments",
            line: 2, column: 12),
    ]

    /// The build's manifest (`.build/debug.yaml`), found upwards from the test bundle.
    static var manifest: URL? {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<5 {
            for name in ["debug.yaml", "release.yaml"] {
                let candidate = dir.appendingPathComponent(name)
                if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
            }
            dir.deleteLastPathComponent()
        }
        return nil
    }

    /// The compiler and the flags SwiftPM compiled `module` with that a file importing what it
    /// imports needs: search paths, C module flags, the target, the module cache and the macro
    /// plugins it loads.
    static func compilerFlags(of module: String, manifest: URL) throws -> (swiftc: URL, flags: [String])? {
        let text = try String(contentsOf: manifest, encoding: .utf8)
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("args: ["), trimmed.contains("\"-module-name\",\"\(module)\"") else { continue }
            let data = Data(trimmed.dropFirst("args: ".count).utf8)
            guard let args = try JSONSerialization.jsonObject(with: data) as? [String], let swiftc = args.first else { continue }
            var flags: [String] = [], i = 1
            let paired: Set<String> = ["-I", "-F", "-Xcc", "-target", "-module-cache-path", "-load-plugin-executable", "-load-plugin-library", "-plugin-path", "-swift-version"]
            while i < args.count {
                // `-Xfrontend -load-plugin-executable -Xfrontend path#Module`, as SwiftPM passes it.
                if args[i] == "-Xfrontend", i + 3 < args.count, args[i + 1].hasPrefix("-load-plugin"), args[i + 2] == "-Xfrontend" {
                    flags += args[i...i + 3]
                    i += 4
                    continue
                }
                if paired.contains(args[i]), i + 1 < args.count {
                    flags += args[i...i + 1]
                    i += 2
                    continue
                }
                if args[i].hasPrefix("-I"), args[i].count > 2 { flags.append(args[i]) }
                i += 1
            }
            return (URL(fileURLWithPath: swiftc), flags)
        }
        return nil
    }

    @Test(.enabled(if: manifest != nil, "needs a SwiftPM build (.build/debug.yaml)"))
    func everyUnsupportedDeclarationIsACompileErrorAtItsPlace() throws {
        let manifest = try #require(Self.manifest)
        let compiler = try #require(
            try Self.compilerFlags(of: "HearthMacrosTests", manifest: manifest), "HearthMacrosTests is not in \(manifest.path)")
        // One file: the imports, then each case, its first line recorded.
        var source = "import Foundation\nimport HearthMacros\n\n"
        var firstLines: [Int] = []
        for c in Self.cases {
            firstLines.append(source.split(separator: "\n", omittingEmptySubsequences: false).count)
            source += c.source + "\n\n"
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-macro-diagnostics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("Declarations.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)

        let started = Date()
        let result = try runProcess(compiler.swiftc, ["-typecheck", file.path, "-no-color-diagnostics"] + compiler.flags)
        let printed = String(decoding: result.stderr + result.stdout, as: UTF8.self)
        print("MacroDiagnosticsTests: swiftc -typecheck in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        #expect(result.status != 0, "the file compiled:\n\(printed)")

        // `path:line:column: error: message`
        let prefix = file.path + ":"
        var errors: [(line: Int, column: Int, message: String)] = []
        for line in printed.split(separator: "\n") where line.hasPrefix(prefix) {
            let rest = line.dropFirst(prefix.count)
            let parts = rest.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count == 4, parts[2] == " error", let l = Int(parts[0]), let c = Int(parts[1]) else { continue }
            // The compiler names the macro a diagnostic came from: `message (from macro 'Structured')`.
            var message = parts[3].trimmingCharacters(in: .whitespaces)
            if let from = message.range(of: " (from macro '", options: .backwards) { message = String(message[..<from.lowerBound]) }
            errors.append((l, c, message))
        }
        for (c, first) in zip(Self.cases, firstLines) {
            let line = first + c.line - 1
            #expect(
                errors.contains { $0.line == line && $0.column == c.column && $0.message == c.message },
                "expected at \(line):\(c.column): \(c.message)\nthe compiler printed:\n\(printed)")
        }
        #expect(errors.count == Self.cases.count, "errors other than the expected ones:\n\(printed)")
    }
}
