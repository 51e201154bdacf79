import Testing
@testable import HearthConstraints

@Suite struct JSONSchemaTests {
    func accepts(_ schema: String, _ text: String) throws -> Bool {
        try JSONSchema.grammar(schema).accepts(Array(text.utf8))
    }

    @Test func errorsNameKindAndPointer() throws {
        let cases: [(String, ConstraintError.Kind, String)] = [
            (#"{"type":"object","properties":{"a":{"not":{"type":"null"}}}}"#, .unsupported, "/properties/a/not"),
            (#"{"type":"array","uniqueItems":true}"#, .unsupported, "/uniqueItems"),
            (#"{"type":"object","patternProperties":{"^x":{}}}"#, .unsupported, "/patternProperties"),
            (#"{"if":{},"then":{}}"#, .unsupported, "/if"),
            (#"{"type":"string","format":"idn-hostname"}"#, .unsupported, "/format"),
            (#"{"type":"string","pattern":"(a)\\1"}"#, .unsupported, "/pattern"),
            (#"{"type":"string","format":"uuid","pattern":"^z"}"#, .unsatisfiable, "/pattern"),  // format with pattern is enforced since issue 59
            (#"{"type":"string","pattern":"^a{3}$","maxLength":2}"#, .unsatisfiable, "/pattern"),
            (#"{"type":"number","multipleOf":0.0000000000000000001}"#, .unsupported, "/multipleOf"),
            (#"{"type":"number","exclusiveMinimum":true,"minimum":1}"#, .unsupported, "/exclusiveMinimum"),
            (#"{"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]}"#, .unsupported, "/oneOf"),
            (#"{"$ref":"https://example.com/s.json"}"#, .unsupported, "/$ref"),
            (##"{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a","minLength":3}"##, .unsupported, "/minLength"),
            (#"{"type":"array","items":[{"type":"string"}]}"#, .unsupported, "/items"),
            (#"{"type":"object","properties":{"k":{"enum":[]}}}"#, .unsatisfiable, "/properties/k/enum"),
            (#"{"type":"string","enum":[1,2]}"#, .unsatisfiable, "/enum"),
            (#"{"type":"array","minItems":3,"maxItems":2}"#, .unsatisfiable, "/maxItems"),
            (#"{"type":"integer","minimum":10,"maximum":1}"#, .unsatisfiable, "/maximum"),
            (#"{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2}"#, .unsatisfiable, "/exclusiveMaximum"),
            (#"{"type":"string","minLength":5,"maxLength":4}"#, .unsatisfiable, "/maxLength"),
            (#"{"type":"array","prefixItems":[{}],"items":false,"minItems":2}"#, .unsatisfiable, "/minItems"),
            (#"{"type":"integer","multipleOf":7,"minimum":1,"maximum":6}"#, .unsatisfiable, "/multipleOf"),
            (#"{"allOf":[{"type":"string"},{"type":"integer"}]}"#, .unsatisfiable, ""),
            (##"{"$ref":"#/$defs/missing"}"##, .invalidGrammar, "/$ref"),
            (##"{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}"##, .invalidGrammar, "/$defs/a"),
            (##"{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}"##, .invalidGrammar, "/$defs/a"),
            (#"{"type":"strin"}"#, .syntax, "/type"),
            (#"{"type":"string","maxLength":-1}"#, .syntax, "/maxLength"),
            (#"{"type":"object","properties":{"a":3}}"#, .syntax, "/properties/a"),
            ("{\"type\":\n \"string\",}", .syntax, "line 2, column 11"),
            (#"{"type":"string","maxLength":100000}"#, .tooComplex, "/maxLength"),
            (#"{"type":"object","properties":{"a/b~c":{"type":"string","format":"iri"}}}"#, .unsupported, "/properties/a~1b~0c/format"),
        ]
        for (schema, kind, location) in cases {
            do {
                _ = try JSONSchema.grammar(schema)
                Issue.record("no error for \(schema)")
            } catch let e as ConstraintError {
                #expect(e.kind == kind, "\(schema): \(e)")
                #expect(e.location == location, "\(schema): \(e)")
            }
        }
    }

    @Test func falseSchemaPropertiesAreLeftOutAndRequiredOnesAreUnsatisfiable() throws {
        let optional = #"{"type":"object","properties":{"a":false,"b":{"type":"integer"}}}"#
        #expect(try accepts(optional, #"{"b":1}"#))
        #expect(try !accepts(optional, #"{"a":1,"b":1}"#))
        #expect(throws: ConstraintError.self) { try JSONSchema.grammar(#"{"type":"object","properties":{"a":false},"required":["a"]}"#) }
        #expect(throws: ConstraintError.self) {
            try JSONSchema.grammar(#"{"type":"object","required":["a"],"additionalProperties":false}"#)
        }
    }

    @Test func whitespaceIsBoundedAndOnlyBetweenTokens() throws {
        let s = #"{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]}"#
        #expect(try accepts(s, "{\"a\":[1,2]}"))
        #expect(try accepts(s, "{\n  \"a\": [\n    1,\n    2\n  ]\n}"))
        #expect(try accepts(s, "{\"a\":[" + String(repeating: " ", count: 20) + "1]}"))
        #expect(try !accepts(s, "{\"a\":[" + String(repeating: " ", count: 21) + "1]}"))
        #expect(try !accepts(s, " {\"a\":[1]}"))
        #expect(try !accepts(s, "{\"a\":[1]} "))
        #expect(try !accepts(s, "{\"a\":[1 2]}"))
    }

    @Test func stringsAreJSONStrings() throws {
        let s = #"{"type":"string"}"#
        for ok in [#""""#, #""a\"b""#, #""\\\/\b\f\n\r\t""#, #""\u00e9\uD83D\uDE00""#, "\"é😀\""] { #expect(try accepts(s, ok), "\(ok)") }
        for bad in ["\"a\nb\"", #""\x41""#, #""\uD83D""#, #""\uDE00x""#, #""abc"#, "\"\u{01}\""] { #expect(try !accepts(s, bad), "\(bad)") }
        // A surrogate-pair escape is one character.
        #expect(try accepts(#"{"type":"string","maxLength":1}"#, #""\uD83D\uDE00""#))
        #expect(try !accepts(#"{"type":"string","maxLength":1}"#, #""ab""#))
    }

    @Test func numbersAreBoundedInDigits() throws {
        #expect(try accepts(#"{"type":"integer"}"#, "1234567890123456"))
        #expect(try !accepts(#"{"type":"integer"}"#, "12345678901234567"))
        #expect(try !accepts(#"{"type":"integer"}"#, "01"))
        #expect(try !accepts(#"{"type":"number"}"#, "1."))
        #expect(try accepts(#"{"type":"number"}"#, "-0.5E+10"))
    }

    @Test func anyJSONObject() throws {
        let g = try JSONSchema.anyJSONObject
        #expect(g.accepts(Array(#"{"a":[1,{"b":null}],"c":"d"}"#.utf8)))
        #expect(g.accepts(Array("{ }".utf8)))
        #expect(!g.accepts(Array("[1]".utf8)))
        #expect(!g.accepts(Array(#"{"a":1,}"#.utf8)))
        #expect(try JSONSchema.anyJSONValue.accepts(Array("[1,true,null]".utf8)))
    }

    @Test func recursionThroughRules() throws {
        let s = ##"{"$defs":{"t":{"type":"array","items":{"$ref":"#/$defs/t"}}},"$ref":"#/$defs/t"}"##
        #expect(try accepts(s, "[[[]],[]]"))
        #expect(try !accepts(s, "[[1]]"))
        // A reference that reaches itself before any output is left recursion.
        #expect { try JSONSchema.grammar(##"{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"}"##) } throws: {
            ($0 as? ConstraintError)?.kind == .invalidGrammar
        }
    }
}
