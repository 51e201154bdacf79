import Foundation
import HearthTestSupport
import Testing
@testable import HearthConstraints

/// Mutated inputs never crash a front end: each either compiles or throws a ConstraintError.
@Suite struct FuzzTests {
    static let alphabet: [Character] = Array(#"{}[]()"':,.-+*?|^$\/#<>=0123456789abceuxyzU ntr"#) + ["\n", "é", "😀"]

    static func mutations(of seed: String, count: Int, state: UInt64) -> [String] {
        var g = SeededRandom(state: state)
        var out: [String] = []
        let base = Array(seed)
        for _ in 0..<count {
            var s = base
            for _ in 0..<Int.random(in: 1...4, using: &g) where !s.isEmpty {
                let i = Int.random(in: 0..<s.count, using: &g)
                switch Int.random(in: 0..<3, using: &g) {
                case 0: s.remove(at: i)
                case 1: s.insert(alphabet.randomElement(using: &g) ?? "x", at: i)
                default: s[i] = alphabet.randomElement(using: &g) ?? "x"
                }
            }
            out.append(String(s))
        }
        return out
    }

    func survives(_ compile: () throws -> Grammar) {
        do { _ = try compile() } catch is ConstraintError {} catch { Issue.record("not a ConstraintError: \(error)") }
    }

    @Test func mutatedSchemas() throws {
        let dir = Fixtures.directory.appendingPathComponent("schemas")
        for (n, f) in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted().enumerated() {
            let text = try String(contentsOf: dir.appendingPathComponent(f), encoding: .utf8)
            for m in Self.mutations(of: text, count: 40, state: UInt64(n)) { survives { try JSONSchema.grammar(m) } }
        }
    }

    @Test func mutatedPatterns() throws {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("regex-cases.json"))
        let patterns = try JSONDecoder().decode([RegexTests.Pattern].self, from: data).map(\.pattern)
        for (n, p) in (patterns + [StringFormats.email, StringFormats.date]).enumerated() {
            for m in Self.mutations(of: p, count: 200, state: UInt64(n)) { survives { try RegularExpression.grammar(m) } }
        }
    }

    @Test func mutatedGrammars() throws {
        for (n, text) in [GBNFTests.json, GBNFTests.arithmetic, GBNFTests.list, GBNFTests.chess, GBNFTests.japanese].enumerated() {
            for m in Self.mutations(of: text, count: 300, state: UInt64(n)) { survives { try GBNF.grammar(m) } }
        }
    }
}
