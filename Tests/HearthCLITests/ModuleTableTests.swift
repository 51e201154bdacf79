import Foundation
import Testing

/// docs/ARCHITECTURE.md's module table names, for every module, exactly the modules its sources
/// import (OS and standard modules left out, as the table says).
@Suite struct ModuleTableTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let unlisted: Set<String> = ["Foundation", "Dispatch", "Synchronization", "Glibc", "Darwin", "_Builtin_intrinsics"]

    /// The modules imported by the Swift files under `folder`.
    static func imports(of folder: URL) throws -> Set<String> {
        var found: Set<String> = []
        guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return [] }
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: /(?m)^\s*(?:@testable\s+|@_exported\s+|public\s+|internal\s+|package\s+)?import\s+(?:struct\s+|enum\s+|class\s+|func\s+)?([A-Za-z_][A-Za-z0-9_]*)/) {
                found.insert(String(match.1))
            }
        }
        return found.subtracting(unlisted)
    }

    @Test func importsColumnMatchesTheSources() throws {
        let doc = try String(contentsOf: Self.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        var checked = 0
        // The rows of the table under "| module | holds | imports |", up to the blank line after it.
        guard let header = doc.range(of: "| module | holds | imports |\n") else {
            Issue.record("no module table")
            return
        }
        let table = doc[header.upperBound...].prefix { _ in true }.components(separatedBy: "\n\n")[0]
        for line in table.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let importsCell = cells.last else { continue }
            let modules = cells[0].matches(of: /`([A-Za-z0-9]+)`/).map { String($0.1) }
            // The listed names: parenthesised notes dropped, split at commas, semicolons and slashes.
            let bare = importsCell.replacing(/\([^)]*\)/, with: "")
            let listed = Set(
                bare.split(whereSeparator: { ",;/".contains($0) }).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty && $0 != "nothing" })
            var actual: Set<String> = []
            for module in modules {
                let sources = Self.root.appendingPathComponent("Sources/\(module)")
                let tests = Self.root.appendingPathComponent("Tests/\(module)")
                let folder = FileManager.default.fileExists(atPath: sources.path) ? sources : tests
                #expect(FileManager.default.fileExists(atPath: folder.path), "no sources for \(module)")
                actual.formUnion(try Self.imports(of: folder))
            }
            actual.subtract(modules)
            #expect(listed == actual, "\(modules): the table lists \(listed.sorted()), the sources import \(actual.sorted())")
            checked += 1
        }
        #expect(checked >= 15, "only \(checked) rows read")
    }
}
