import Foundation
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The README's "Supported models" table is the family registry: one row per family in
/// `ModelFamilies.all`, naming exactly its Hugging Face `architectures` and its GGUF
/// architecture. A family registered without its row, or a row for a family that is not
/// registered, fails here.
@Suite struct SupportedModelsTableTests {
    /// `(architectures, gguf)` of each row of the table under `## Supported models`.
    static func tableRows() throws -> [(architectures: Set<String>, gguf: String?)] {
        let readme = try String(contentsOf: Fixtures.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "## Supported models\n"), "README has a '## Supported models' section")
        var rows: [(Set<String>, String?)] = []
        var seenHeader = false
        for line in readme[section.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") { break }
            guard line.hasPrefix("|") else {
                if seenHeader && !rows.isEmpty { break }
                continue
            }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { continue }
            if !seenHeader { seenHeader = true; continue }
            if cells[0].allSatisfy({ "-: ".contains($0) }) { continue }
            let names = { (cell: String) in cell.matches(of: /`([^`]+)`/).map { String($0.1) } }
            rows.append((Set(names(cells[1])), names(cells[2]).first))
        }
        return rows
    }

    @Test func theTableIsTheRegistry() throws {
        let rows = try Self.tableRows()
        #expect(rows.count == ModelFamilies.all.count, "\(rows.count) rows for \(ModelFamilies.all.count) registered families")
        for family in ModelFamilies.all {
            let row = rows.first { !$0.architectures.isDisjoint(with: family.architectures) }
            #expect(row != nil, "\(family.architectures) has no row in README's Supported models table")
            #expect(row?.architectures == Set(family.architectures), "\(family.architectures): the row names \(row?.architectures ?? [])")
            #expect(row?.gguf == family.ggufArchitecture, "\(family.architectures): GGUF \(row?.gguf ?? "none") in the table")
        }
    }
}
