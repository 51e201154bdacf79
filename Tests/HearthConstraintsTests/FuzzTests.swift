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

/// Random and mutated GBNF, patterns and schemas through the whole compile (front end, then
/// token masks) under a small budget, for a bounded time: each compiles or is refused with a
/// `ConstraintError`, and none runs past its time limit (issue 55: no input crashes or holds
/// the compiler).
@Suite struct CompileFuzzTests {
    static let budget = CompileBudget(
        maxRules: 200, maxReferenceDepth: 100, maxSymbols: 50_000, maxPositions: 20_000, maxKeySteps: 400_000,
        maxMaskBytes: 16 << 20, maxParserStates: 20_000, timeLimit: .milliseconds(500))
    static let vocabulary: TokenVocabulary = {
        let (tokens, eos) = MaskTests.vocabulary(seed: 3)
        return TokenVocabulary(tokens: tokens, endOfSequence: [eos], maskCacheBytes: 8 << 20)
    }()

    /// A random grammar: rules referring to each other in any order, with literals, classes,
    /// groups, alternatives and every quantifier (counts up to past the repeat bound).
    static func randomGrammar(_ g: inout SeededRandom) -> String {
        let ruleCount = Int.random(in: 1...40, using: &g)
        func name(_ i: Int) -> String { i == 0 ? "root" : "r\(i)" }
        func expression(_ depth: Int) -> String {
            var items: [String] = []
            for _ in 0..<Int.random(in: 1...4, using: &g) {
                var item: String
                switch Int.random(in: 0..<6, using: &g) {
                case 0: item = "\"" + String((0..<Int.random(in: 0...3, using: &g)).map { _ in "abxyz{}\u{e9}".randomElement(using: &g) ?? "a" }) + "\""
                case 1: item = ["[a-z]", "[^\"\\\\]", "[0-9]", ".", "[\u{e9}-\u{ff}]"].randomElement(using: &g) ?? "."
                case 2, 3: item = name(Int.random(in: 0..<ruleCount, using: &g))
                default: item = depth < 3 ? "(" + expression(depth + 1) + ")" : "\"q\""
                }
                switch Int.random(in: 0..<8, using: &g) {
                case 0: item += "*"
                case 1: item += "+"
                case 2: item += "?"
                case 3: item += "{\(Int.random(in: 0...50, using: &g))}"
                case 4: item += "{\(Int.random(in: 0...9, using: &g)),\([Int.random(in: 10...300, using: &g), 5000].randomElement(using: &g) ?? 10)}"
                default: break
                }
                items.append(item)
            }
            let sequence = items.joined(separator: " ")
            return Bool.random(using: &g) ? sequence : sequence + " | " + (depth < 3 ? expression(depth + 1) : "\"e\"")
        }
        return (0..<ruleCount).map { "\(name($0)) ::= \(expression(0))" }.joined(separator: "\n") + "\n"
    }

    /// Compiles `make`'s grammar and its masks; records anything but success or a
    /// `ConstraintError`, and a compile that ran far past its time limit.
    func survives(_ what: String, _ make: () throws -> Grammar) {
        let clock = ContinuousClock()
        let started = clock.now
        do {
            let grammar = try make()
            _ = try CompiledConstraint(grammar, vocabulary: Self.vocabulary, budget: Self.budget)
        } catch is ConstraintError {
        } catch {
            Issue.record("not a ConstraintError: \(error) for \(what.prefix(200))")
        }
        // Front end and masks have a time limit each; allow a slow, shared machine its slack.
        let elapsed = clock.now - started
        #expect(elapsed < Self.budget.timeLimit * 2 + .seconds(8), "compile of \(what.prefix(200)) took \(elapsed)")
    }

    @Test func randomAndMutatedInputsStayWithinTheBudget() throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        var g = SeededRandom(state: 55)
        var compiled = 0
        // Hand-picked worst cases first, then random ones until the time is up.
        let worst = [
            CompileBudgetTests.chain(150, deepestFirst: true), CompileBudgetTests.chain(150, deepestFirst: false),
            CompileBudgetTests.chain(90, deepestFirst: true, referenceFirst: false),
            "root ::= ([a-z]{4096}){48}\n", "root ::= (\"a\" | \"aa\")* (\"b\"{1,1000}){1,1000}\n",
            "root ::= x{4096}\nx ::= [a-z] | [0-9] \"\\u00e9\"\n",
        ]
        for text in worst { survives(text) { try GBNF.grammar(text, budget: Self.budget) } }
        let schemas = try FileManager.default.contentsOfDirectory(atPath: SchemaCorpusTests.directory.path).sorted().map {
            try String(contentsOf: SchemaCorpusTests.directory.appendingPathComponent($0), encoding: .utf8)
        }
        let patterns = [StringFormats.email, StringFormats.date, "^([a-z]{4096}){48}$", "(a|aa)*(b{1,1000}){1,1000}", "[\\w.-]+@[a-z]+"]
        while clock.now < deadline {
            switch compiled % 3 {
            case 0:
                let text = Self.randomGrammar(&g)
                let mutated = FuzzTests.mutations(of: text, count: 1, state: g.next()).first ?? text
                for t in [text, mutated] { survives(t) { try GBNF.grammar(t, budget: Self.budget) } }
            case 1:
                let base = patterns.randomElement(using: &g) ?? "a"
                let mutated = FuzzTests.mutations(of: base, count: 1, state: g.next()).first ?? base
                survives(mutated) { try RegularExpression.grammar(mutated, budget: Self.budget) }
            default:
                let base = schemas.randomElement(using: &g) ?? "{}"
                let mutated = FuzzTests.mutations(of: base, count: 1, state: g.next()).first ?? base
                survives(mutated) { try JSONSchema.grammar(mutated, budget: Self.budget) }
            }
            compiled += 1
        }
        #expect(compiled > 30)
    }
}
