/// The shared named rules of every JSON grammar, defined once per grammar so every string,
/// number and free value of a schema lowers to the same rules (and the mask engine precomputes
/// them once):
///
/// ```
/// ws            ::= [ \t\n\r]{0,20}
/// json_char     ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" non-surrogate-hex4 | surrogate-pair)
/// json_string   ::= "\"" json_char* "\""
/// json_key_char ::= a character in its canonical form (`"`, `\`, controls escaped as json.dumps does)
/// json_key_rest ::= json_key_char* "\""
/// json_number   ::= "-"? ("0" | [1-9][0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
/// json_integer  ::= "-"? ("0" | [1-9][0-9]{0,15})
/// json_value    ::= json_object | json_array | json_string | json_number | "true" | "false" | "null"
/// json_object   ::= "{" ws (json_string ws ":" ws json_value (ws "," ws json_string ws ":" ws json_value)*)? ws "}"
/// json_array    ::= "[" ws (json_value (ws "," ws json_value)*)? ws "]"
/// ```
enum JSONRules {
    static let ws = "ws"
    static let char = "json_char"
    static let string = "json_string"
    static let keyChar = "json_key_char"
    static let keyRest = "json_key_rest"
    static let number = "json_number"
    static let integer = "json_integer"
    static let value = "json_value"
    static let object = "json_object"
    static let array = "json_array"

    /// The most whitespace bytes in a row (between two tokens of the JSON text).
    static let maxWhitespace = 20

    static let hex = GrammarExpression.bytes(ByteSet(bytes: Array("0123456789abcdefABCDEF".utf8)))
    static let digit = NumberGrammar.digit
    static let digit19 = GrammarExpression.bytes(ByteSet(UInt8(ascii: "1")...UInt8(ascii: "9")))

    /// Defines the shared rules in `builder`.
    static func define(in builder: inout GrammarBuilder) throws {
        let wsRef = GrammarExpression.reference(ws)
        try builder.define(ws, .repeating(.bytes(ByteSet(bytes: Array(" \t\n\r".utf8))), min: 0, max: maxWhitespace))

        // A \uXXXX escape of a non-surrogate, or a surrogate pair: one character each.
        let notD = GrammarExpression.bytes(ByteSet(bytes: Array("0123456789abcefABCEF".utf8)))
        let d = GrammarExpression.bytes(ByteSet(bytes: Array("dD".utf8)))
        let low8 = GrammarExpression.bytes(ByteSet(UInt8(ascii: "0")...UInt8(ascii: "7")))
        let highSurrogate = GrammarExpression.bytes(ByteSet(bytes: Array("89abAB".utf8)))
        let lowSurrogate = GrammarExpression.bytes(ByteSet(bytes: Array("cdefCDEF".utf8)))
        let unicodeEscape = GrammarExpression.choice([
            .sequence([notD, hex, hex, hex]),
            .sequence([d, low8, hex, hex]),
            .sequence([d, highSurrogate, hex, hex, .literal("\\u"), d, lowSurrogate, hex, hex]),
        ])
        let plain = ScalarSet.all.subtracting(CharacterEncoding.jsonSpecials).expression
        try builder.define(char, .choice([
            plain,
            .sequence([.literal("\\"), .choice([.bytes(ByteSet(bytes: Array("\"\\/bfnrt".utf8))), .sequence([.literal("u"), unicodeEscape])])]),
        ]))
        try builder.define(string, .sequence([.literal("\""), .zeroOrMore(.reference(char)), .literal("\"")]))
        try builder.define(keyChar, CharacterEncoding.jsonString.expression(.all))
        try builder.define(keyRest, .sequence([.zeroOrMore(.reference(keyChar)), .literal("\"")]))

        let integerPart = GrammarExpression.choice([.literal("0"), .sequence([digit19, .repeating(digit, min: 0, max: NumberGrammar.maxIntegerDigits - 1)])])
        try builder.define(integer, .sequence([.optional(.literal("-")), integerPart]))
        try builder.define(number, .sequence([
            .optional(.literal("-")), integerPart,
            .optional(.sequence([.literal("."), .repeating(digit, min: 1, max: NumberGrammar.maxFractionDigits)])),
            .optional(.sequence([.bytes(ByteSet(bytes: Array("eE".utf8))), .optional(.bytes(ByteSet(bytes: Array("+-".utf8)))), .repeating(digit, min: 1, max: 3)])),
        ]))
        try builder.define(value, .choice([
            .reference(object), .reference(array), .reference(string), .reference(number),
            .literal("true"), .literal("false"), .literal("null"),
        ]))
        let member = GrammarExpression.sequence([.reference(string), wsRef, .literal(":"), wsRef, .reference(value)])
        try builder.define(object, .sequence([
            .literal("{"), wsRef,
            .optional(.sequence([member, .zeroOrMore(.sequence([wsRef, .literal(","), wsRef, member])), wsRef])),
            .literal("}"),
        ]))
        try builder.define(array, .sequence([
            .literal("["), wsRef,
            .optional(.sequence([.reference(value), .zeroOrMore(.sequence([wsRef, .literal(","), wsRef, .reference(value)])), wsRef])),
            .literal("]"),
        ]))
    }
}
