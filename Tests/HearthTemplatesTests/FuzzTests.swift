import Foundation
import Testing
@testable import HearthTemplates

/// Mutated corpus templates and hostile inputs: every render ends in output or a
/// `TemplateError`, never a crash, and never runs past the bounds.
@Suite struct FuzzTests {
    /// A small deterministic generator (SplitMix64), so a failure reproduces from its seed.
    struct SplitMix {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
    }

    static let fragments = [
        "{%", "%}", "{{", "}}", "{#", "#}", "{%-", "-%}", "(", ")", "[", "]", "{", "}", "'", "\"", "|", ".", ",", ":",
        " if ", " for ", " in ", " endfor ", " endif ", " else ", " set ", " macro ", " endmacro ", " not ", " and ",
        " loop.index ", " messages ", " message['content'] ", "|tojson", "|length", "|trim", " is defined ", "~", "+", "*",
        "-", "//", "**", "%", "\n", " ", "1", "0", "-1", "999999999999", "raise_exception('x')", "namespace(a=1)", "x",
        "{% break %}", "{% continue %}", "range(100000)", "caller()", "[1,2,3]", "{'a': 1}", "\\", "é", "😀",
    ]

    static let hostile: [String] = [
        "{% for i in range(1000000) %}{% for j in range(1000000) %}x{% endfor %}{% endfor %}",
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}",
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}",
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l|tojson }}",
        "{{ 'x' * 1000000000000 }}",
        "{{ [1] * 1000000000000 }}",
        "{{ 2 ** 100000 }}",
        "{{ 9223372036854775807 + 1 }}",
        "{{ " + String(repeating: "(", count: 100_000) + "1" + String(repeating: ")", count: 100_000) + " }}",
        "{{ " + String(repeating: "not ", count: 100_000) + "x }}",
        String(repeating: "{% if x %}", count: 10_000) + String(repeating: "{% endif %}", count: 10_000),
        "{{ " + String(repeating: "-", count: 100_000) + "1 }}",
        "{{ x" + String(repeating: ".a", count: 100_000) + " }}",
        "{{ x" + String(repeating: "|trim", count: 100_000) + " }}",
        "{{ range(10)|join(',')|list|join('x') * 100000 }}",
        "{{ 'ab'.replace('', 'x' * 100000) }}",
    ]

    static func render(_ source: String, limits: TemplateLimits) -> Result<String, TemplateError> {
        do {
            let template = try Template(source, limits: limits)
            let input = ChatTemplateInput(
                messages: [["role": "user", "content": "hi"], ["role": "assistant", "content": "ok", "tool_calls": [["function": ["name": "f", "arguments": ["a": 1]]]]]],
                tools: [["type": "function", "function": ["name": "f"]]], addGenerationPrompt: true)
            return .success(try template.apply(input))
        } catch let error as TemplateError {
            return .failure(error)
        } catch {
            return .failure(TemplateError(.type, "unexpected error type \(error)"))
        }
    }

    @Test func hostileTemplatesStopAtTheirBounds() {
        let limits = TemplateLimits(maxOutputBytes: 1 << 20, maxSteps: 2_000_000)
        for source in Self.hostile {
            let clock = ContinuousClock()
            let start = clock.now
            let result = Self.render(source, limits: limits)
            switch result {
            case .success(let output):
                // Only the last one fits its bounds (300 kB of output).
                #expect(source == Self.hostile.last, "\(source.prefix(80)) rendered")
                #expect(output.utf8.count <= limits.maxOutputBytes)
            case .failure(let error):
                #expect(error.kind == .limit, "\(source.prefix(80)): \(error)")
            }
            // Not a timing assertion of speed: a generous ceiling that only a runaway loop breaks.
            #expect(clock.now - start < .seconds(20), "\(source.prefix(80)) ran too long")
        }
    }

    @Test func deeplyNestedSourceIsALimitErrorNotACrash() {
        let source = String(repeating: "(", count: 100_000) + "1" + String(repeating: ")", count: 100_000)
        #expect(throws: TemplateError.self) { try Template("{{ " + source + " }}") }
        do {
            _ = try Template("{{ " + source + " }}")
        } catch let error as TemplateError {
            #expect(error.kind == .limit)
        } catch {}
    }

    @Test func mutatedCorpusTemplatesNeverCrash() throws {
        let directory = CorpusTests.directory.appendingPathComponent("templates")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".jinja") }.sorted()
        var rng = SplitMix(state: 0x5EED_0058)
        let limits = TemplateLimits(maxOutputBytes: 256 << 10, maxSteps: 200_000)
        var rendered = 0, refused = 0
        for round in 0..<600 {
            let name = names[rng.below(names.count)]
            var scalars = Array(try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8).unicodeScalars)
            for _ in 0..<(1 + rng.below(4)) {
                let at = rng.below(scalars.count + 1)
                switch rng.below(4) {
                case 0:  // delete a span
                    let end = min(scalars.count, at + rng.below(12))
                    if at < end { scalars.removeSubrange(at..<end) }
                case 1, 2:  // insert a fragment
                    scalars.insert(contentsOf: Self.fragments[rng.below(Self.fragments.count)].unicodeScalars, at: at)
                default:  // duplicate a span
                    let end = min(scalars.count, at + rng.below(40))
                    if at < end { scalars.insert(contentsOf: scalars[at..<end], at: at) }
                }
            }
            var source = String.UnicodeScalarView()
            source.append(contentsOf: scalars)
            switch Self.render(String(source), limits: limits) {
            case .success(let output):
                rendered += 1
                #expect(output.utf8.count <= limits.maxOutputBytes, "round \(round) \(name)")
            case .failure:
                refused += 1
            }
        }
        #expect(rendered + refused == 600)
        #expect(rendered > 0 && refused > 0)
    }
}
