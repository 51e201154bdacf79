import Foundation
import Testing

@testable import HearthJSON

/// HearthJSON: the one JSON value type, its byte parser and its writer.
@Suite struct JSONTests {
    @Test func objectsKeepTheirOrderAndTheLastRepeatedKeyWins() throws {
        let value = try JSON.parse(#"{"z": 1, "a": {"k": [true, null]}, "z": "two"}"#)
        #expect(value.objectMembers?.map(\.key) == ["z", "a", "z"])
        #expect(value["z"] == "two")
        #expect(value["a"]?["k"] == [true, nil])
        #expect(value["missing"] == nil)
        #expect(value.serialized == #"{"z":1,"a":{"k":[true,null]},"z":"two"}"#)
    }

    @Test func numbersKeepEveryDigitAndCompareByValue() throws {
        let big = try JSON.parse("[12345678901234567890, 12345678901234567891, 2.50, 1e2]")
        #expect(big.serialized == "[12345678901234567890,12345678901234567891,2.50,1e2]")
        guard case .array(let items) = big, case .number(let a) = items[0], case .number(let b) = items[1] else {
            Issue.record("not an array of numbers: \(big)")
            return
        }
        #expect(a.double == b.double)  // one Double…
        #expect(a != b)  // …two numbers
        #expect(items[2] == .number(2.5))
        #expect(items[3] == 100)
        #expect(JSON.Number(text: "1.0") == JSON.Number(text: "10e-1"))
        #expect(JSON.Number(text: "0") == JSON.Number(text: "-0.0"))
        #expect(JSON.Number(text: "0.05") != JSON.Number(text: "0.5"))
        #expect(Set<JSON>([1, .number(1.0), .number("1e0"), .number("1.00")]).count == 1)
        #expect(JSON.Number(text: "4.0")?.int == 4)
        #expect(JSON.Number(text: "-9223372036854775808")?.int == Int.min)
        #expect(JSON.Number(text: "9223372036854775808")?.int == nil)
        #expect(JSON.Number(text: "1.5")?.int == nil)
        #expect(JSON.Number(text: "01") == nil && JSON.Number(text: "+1") == nil && JSON.Number(text: "1.") == nil && JSON.Number(text: "1e") == nil)
    }

    @Test func doublesAreWrittenAsTheServerAlwaysHas() {
        #expect(JSON.number(3.0).serialized == "3")
        #expect(JSON.number(-0.0).serialized == "0")
        #expect(JSON.number(0.1).serialized == "0.1")
        #expect(JSON.number(1e16).serialized == "1e+16")
        #expect(JSON.number(.infinity) == .string("Infinity"))
        #expect(JSON.number(-.infinity) == .string("-Infinity"))
        #expect(JSON.number(.nan) == .string("NaN"))
    }

    @Test func errorsSayWhatAndWhere() {
        func failure(_ text: String) -> JSON.SyntaxError? {
            do {
                _ = try JSON.parse(text)
                return nil
            } catch { return error }
        }
        #expect(failure("{\"a\":\n 1,}") == JSON.SyntaxError(message: "expected a string key", offset: 9))
        #expect((failure("{\"a\":\n 1,}")?.lineAndColumn(in: "{\"a\":\n 1,}")).map { [$0.line, $0.column] } == [2, 4])
        #expect(failure("[1] x")?.message == "unexpected text after the JSON value")
        #expect(failure(String(repeating: "[", count: JSON.maxDepth + 1))?.message == "nested deeper than 512 levels")
        #expect(failure(String(repeating: "[", count: 100_000)) != nil)
        #expect(throws: Never.self) { try JSON.parse(String(repeating: "[", count: 512) + String(repeating: "]", count: 512)) }
        #expect(failure(#""\ud800""#)?.message == "a high surrogate must be followed by a low surrogate")
        do {
            _ = try JSON.parse(utf8: [0x22, 0xFF, 0x22])
            Issue.record("invalid UTF-8 accepted")
        } catch {
            #expect(error.isInvalidUTF8)
        }
    }

    @Test func pythonLayoutIsJSONDumps() {
        let value: JSON = ["a": [1, "x"], "b": [:], "c": []]
        #expect(value.serialized(.python(indent: nil)) == #"{"a": [1, "x"], "b": {}, "c": []}"#)
        #expect(value.serialized(.python(indent: 2)) == "{\n  \"a\": [\n    1,\n    \"x\"\n  ],\n  \"b\": {},\n  \"c\": []\n}")
        #expect(JSON.string("q\"\\\n\u{01}é").serialized == #""q\"\\\n\u0001é""#)
        var ascii = ""
        JSON.quote("é\u{7F}😀~", into: &ascii, asciiOnly: true)
        #expect(ascii == #""\u00e9\u007f\ud83d\ude00~""#)
    }

    @Test func codableKeepsValuesAndIntegers() throws {
        let value = try JSON.parse(#"{"i": 9007199254740993, "d": 0.25, "s": "x", "b": false, "n": null, "a": [1]}"#)
        let decoded = try JSONDecoder().decode(JSON.self, from: try JSONEncoder().encode(value))
        for key in ["i", "d", "s", "b", "n", "a"] { #expect(decoded[key] == value[key], "\(key)") }
    }
}
