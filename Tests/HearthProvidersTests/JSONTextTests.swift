import Foundation
import HearthProviders
import HearthTestSupport
import Testing

/// JSONText's strings against Foundation's JSON parser (the reference): plain, escaped, `\u`
/// escapes and surrogate pairs decode the same; what one refuses the other refuses.
@Suite struct JSONTextTests {
    static let valid = [
        #""""#, #""plain text""#, #""a\nb\tc\\d\"e\/f\bg\fh\ri""#, #""\u00e9\u4e2d\uD83D\uDE00 x""#, #""é中😀 raw""#,
        #""\u0000 nul""#, #""ends with escape\n""#, #""\\""#, #""a\\\"b""#,
    ]
    static let invalid = [
        #""unterminated"#, #""bad \q escape""#, #""\u12G4""#, #""\uD83D alone""#, #""\uDE00 low""#, "\"raw \u{01} control\"", #""\"#,
        #""\u12""#,
    ]

    static func reference(_ text: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data("[\(text)]".utf8))).flatMap { ($0 as? [Any])?.first as? String }
    }

    @Test func stringsDecodeAsFoundationDecodesThem() throws {
        for text in Self.valid {
            let expected = try #require(Self.reference(text), "the reference refuses \(text)")
            #expect(try JSONText.parse(text) == .string(expected), "\(text)")
            #expect(try JSONText.parse("{\"k\": \(text), \"n\": 1}") == .object([("k", .string(expected)), ("n", .number("1"))]))
        }
        for text in Self.invalid {
            #expect(Self.reference(text) == nil, "the reference accepts \(text)")
            #expect(throws: JSONText.SyntaxError.self, "\(text)") { try JSONText.parse(text) }
        }
    }

    @Test func randomEscapedStringsRoundTrip() throws {
        var random = SeededRandom(state: 11)
        let pieces = ["a", "é", "中", "😀", "\n", "\"", "\\", "\t", "\u{01}", "/", " "]
        for _ in 0..<300 {
            let original = (0..<Int(random.next() % 40)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
            let encoded = JSONText.Value.string(original).serialized
            #expect(try JSONText.parse(encoded) == .string(original))
            #expect(Self.reference(encoded) == original)
        }
    }

    @Test func bytesAreCheckedAsUTF8() throws {
        for text in Self.valid {
            #expect(try JSONText.parse(utf8: Array(text.utf8)) == JSONText.parse(text))
        }
        let broken: [[UInt8]] = [[0x22, 0xC3, 0x28, 0x22], [0x22, 0x5C, 0x6E, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22]]
        for bytes in broken {
            #expect(String(validating: bytes.dropFirst().dropLast(), as: UTF8.self) == nil)
            do {
                _ = try JSONText.parse(utf8: bytes)
                Issue.record("accepted invalid UTF-8 \(bytes)")
            } catch {
                #expect(error.isInvalidUTF8)
            }
        }
    }
}
