import Foundation
import Testing

@testable import HearthServer

/// The audit table of docs/SERVER.md ("Request fields") lists exactly the fields each endpoint
/// accepts in code (`AcceptedFields`), marks each honoured or refused, and cites tests that exist.
@Suite struct AcceptedFieldsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Row {
        var field: String
        var disposition: String
        var evidence: String
    }

    /// The section's tables, by the endpoint named in each `#### `path`` heading.
    static func tables() throws -> [String: [Row]] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/SERVER.md"), encoding: .utf8)
        guard let start = text.range(of: "\n## Request fields\n") else { return [:] }
        let section = text[start.upperBound...]
        var tables: [String: [Row]] = [:]
        var current: String?
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") { break }
            if line.hasPrefix("#### ") {
                current = line.dropFirst(5).trimmingCharacters(in: CharacterSet(charactersIn: "` "))
                tables[current ?? ""] = []
                continue
            }
            guard let endpoint = current, line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            tables[endpoint, default: []].append(
                Row(field: cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`")), disposition: cells[2], evidence: cells[3]))
        }
        return tables
    }

    @Test func theAuditTableListsExactlyTheAcceptedFields() throws {
        let tables = try Self.tables()
        #expect(Set(tables.keys) == Set(AcceptedFields.byEndpoint.map(\.path)), "\(tables.keys.sorted())")
        for (path, fields) in AcceptedFields.byEndpoint {
            let rows = tables[path] ?? []
            #expect(Set(rows.map(\.field)) == fields, "\(path): table \(rows.map(\.field).sorted()) vs code \(fields.sorted())")
            #expect(rows.count == Set(rows.map(\.field)).count, "\(path): a field listed twice")
            for row in rows {
                #expect(row.disposition.hasPrefix("honoured") || row.disposition.hasPrefix("refused"), "\(path) \(row.field): \(row.disposition)")
            }
        }
    }

    /// Every cited test exists: `Suite.function` in the server tests, or a check's name in a
    /// script CI runs.
    @Test func everyCitedTestExists() throws {
        let testsDirectory = Self.root.appendingPathComponent("Tests/HearthServerTests")
        let sources = try FileManager.default.contentsOfDirectory(atPath: testsDirectory.path).filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: testsDirectory.appendingPathComponent($0), encoding: .utf8) }.joined(separator: "\n")
        for (path, rows) in try Self.tables() {
            for row in rows {
                let cited = row.evidence.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
                #expect(!cited.isEmpty, "\(path) \(row.field): no test cited")
                if let script = cited.first(where: { $0.hasSuffix(".py") }) {
                    let code = try String(contentsOf: Self.root.appendingPathComponent("scripts/\(script)"), encoding: .utf8)
                    for check in cited where check != script {
                        #expect(code.contains("\"\(check)\""), "\(path) \(row.field): no check '\(check)' in \(script)")
                    }
                    continue
                }
                for name in cited {
                    let parts = name.split(separator: ".")
                    #expect(parts.count == 2, "\(path) \(row.field): '\(name)' is not Suite.function")
                    guard parts.count == 2 else { continue }
                    #expect(sources.contains("struct \(parts[0])"), "\(path) \(row.field): no suite \(parts[0])")
                    #expect(sources.contains("func \(parts[1])("), "\(path) \(row.field): no test \(name)")
                }
            }
        }
    }
}
