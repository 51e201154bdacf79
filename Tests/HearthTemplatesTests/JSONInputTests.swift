import HearthJSON
import Testing

@testable import HearthTemplates

/// A template's JSON inputs are read by HearthJSON's parser and given as Python's `json.loads`
/// would: dicts in key order, integers as `int`, other numbers as `float`.
@Suite struct JSONInputTests {
    @Test func jsonBecomesPythonValues() throws {
        let value = try JinjaValue.fromJSON(#"{"b": [1, 2.0, 1e2, -0, null, true], "a": "é"}"#)
        let template = try Template("{{ v|tojson }}|{% for k in v %}{{ k }}{% endfor %}")
        #expect(try template.render(["v": value]) == #"{"b": [1, 2.0, 100.0, 0, null, true], "a": "é"}|ba"#)
        #expect(try Template("{{ v|tojson }}").render(["v": JinjaValue(json: ["x": 1])]) == #"{"x": 1}"#)
    }

    /// Strict RFC 8259 now (the template module's own reader took `+1` and `01`).
    @Test func textThatIsNotJSONOrTooDeepIsATypeError() {
        for text in ["{\"a\": 1,}", "+1", "[1] 2", String(repeating: "[", count: 4) + String(repeating: "]", count: 4)] {
            #expect(throws: TemplateError.self, "\(text)") { try JinjaValue.fromJSON(text, maxDepth: 2) }
        }
        #expect(throws: Never.self) { try JinjaValue.fromJSON("[[[]]]", maxDepth: 2) }
    }
}
