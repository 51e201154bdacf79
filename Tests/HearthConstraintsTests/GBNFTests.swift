import Testing
@testable import HearthConstraints

/// GBNF grammars in llama.cpp's syntax, in the style of its grammars/ samples (written here).
@Suite struct GBNFTests {
    static let json = #"""
    # JSON, with optional whitespace after values and punctuation
    root   ::= object
    value  ::= object | array | string | number | ("true" | "false" | "null") ws

    object ::=
      "{" ws (
                string ":" ws value
        ("," ws string ":" ws value)*
      )? "}" ws

    array  ::=
      "[" ws (
                value
        ("," ws value)*
      )? "]" ws

    string ::=
      "\"" (
        [^"\\\x7F\x00-\x1F] |
        "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
      )* "\"" ws

    number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,3})? ws

    ws ::= | " " | "\n" [ \t]{0,20}
    """#

    static let arithmetic = #"""
    root  ::= (expr "=" ws term "\n")+
    expr  ::= term ([-+*/] term)*
    term  ::= ident | num | "(" ws expr ")" ws
    ident ::= [a-z] [a-z0-9_]* ws
    num   ::= [0-9]+ ws
    ws    ::= [ \t\n]{0,8}
    """#

    static let list = #"""
    root ::= item+
    # Excludes various line break characters
    item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
    """#

    static let chess = #"""
    root ::= (
        "1. " move " " move "\n"
        ([1-9] [0-9]? ". " move " " move "\n")+
    )
    move ::= (pawn | nonpawn | castle) [+#]?
    pawn ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
    nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
    castle ::= "O-O" "-O"?
    """#

    static let japanese = #"""
    # A line of Japanese: hiragana, katakana, kanji and the ideographic full stop.
    root ::= jp-char+ ([ \t\n] jp-char+)*
    jp-char ::= hiragana | katakana | punctuation | cjk
    hiragana ::= [ぁ-ゟ]
    katakana ::= [ァ-ヿ]
    punctuation ::= [、-〾]
    cjk ::= [一-鿿]
    """#

    func check(_ grammar: String, accepts good: [String], rejects bad: [String]) throws {
        let g = try GBNF.grammar(grammar)
        for text in good { #expect(g.accepts(Array(text.utf8)), "\(text.debugDescription)") }
        for text in bad { #expect(!g.accepts(Array(text.utf8)), "\(text.debugDescription)") }
    }

    @Test func jsonGrammar() throws {
        try check(
            Self.json,
            accepts: [#"{}"#, #"{"a":1}"#, "{ \"a\": [1, 2.5e3, true, null, {\"b\": \"c\\n\\u00e9\"}] } ", #"{"é":"😀"}"#, "{\n  \"k\": -0.5\n}"],
            rejects: [#"[1]"#, #"{"a":}"#, #"{"a":1,}"#, #"{"a":01}"#, "{\"a\":\"\u{7F}\"}", #"{"a":"\x"}"#, #"{'a':1}"#])
    }

    @Test func arithmeticGrammar() throws {
        try check(
            Self.arithmetic,
            accepts: ["1+2=3\n", "(a +b) *c=x\n", "x1=2\ny=(3)\n"],
            rejects: ["1+=3\n", "1+2=3", "=3\n", "A=1\n"])
    }

    @Test func listGrammar() throws {
        try check(Self.list, accepts: ["- milk\n", "- eggs\n- bread and butter\n"], rejects: ["", "- \n", "-milk\n", "- a\u{2028}b\n"])
    }

    @Test func chessGrammar() throws {
        try check(
            Self.chess,
            accepts: ["1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O-O Qxd8#\n"],
            rejects: ["1. e4 e5\n", "1. e9 e5\n2. Nf3 Nc6\n", "1. e4 e5\n2. Zf3 Nc6\n"])
    }

    @Test func unicodeClasses() throws {
        try check(Self.japanese, accepts: ["ひらがな", "カタカナ 漢字。"], rejects: ["abc", "ひら がな ", ""])
    }

    @Test func syntaxDetails() throws {
        // Repetition forms, escapes, '.', negated classes, continuation lines starting with '|'.
        let g = try GBNF.grammar(#"""
        root ::= a{2} b{1,} c{0,2} d{1,3} "\x41\u00e9\U0001F600" [\]\[\-] . tail
        a ::= "a"
        b ::= "b"
        c ::= "c"
        d ::= "d"
        tail ::= "x"
               | "y"  # a comment
        """#)
        #expect(g.accepts(Array("aabbccdddAé😀]?x".utf8)))
        #expect(g.accepts(Array("aabd" .utf8) + Array("Aé😀-\ny".utf8)))
        #expect(!g.accepts(Array("abdAé😀-?x".utf8)))
        #expect(!g.accepts(Array("aabddddAé😀-?x".utf8)))
        // A custom start rule.
        let h = try GBNF.grammar("greeting ::= \"hi\" | \"hello\"\n", root: "greeting")
        #expect(h.accepts(Array("hello".utf8)))
        // A repeated group that may be empty is rewritten, not refused.
        let k = try GBNF.grammar("root ::= (\"a\"?)* \"b\"")
        #expect(k.accepts(Array("aab".utf8)))
    }

    @Test func errorsNameKindAndPosition() throws {
        let cases: [(String, ConstraintError.Kind, String)] = [
            ("root ::= foo\n", .invalidGrammar, "line 1, column 10"),
            ("start ::= \"a\"\n", .invalidGrammar, "line 1, column 1"),
            ("root ::= \"a\"\nroot ::= \"b\"\n", .invalidGrammar, "line 2, column 1"),
            ("root ::= \"a\" (\"b\"\n", .syntax, "line 1, column 14"),
            ("root ::= \"abc\n", .syntax, "line 1, column 10"),
            ("root ::= [a-\n", .syntax, "line 1, column 10"),
            ("root ::= \"\\q\"\n", .syntax, "line 1, column 11"),
            ("root = \"a\"\n", .syntax, "line 1, column 6"),
            ("root ::= \"a\" )\n", .syntax, "line 1, column 14"),
            ("root ::= [z-a]\n", .syntax, "line 1, column 12"),
            ("root ::= \"a\"{3,2}\n", .syntax, "line 1, column 13"),
            ("root ::= \"a\"{5000}\n", .tooComplex, "line 1, column 14"),
            ("root ::= <[1234]>\n", .unsupported, "line 1, column 10"),
            ("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n", .invalidGrammar, "line 2, column 1"),
            ("root ::= ws* \"x\"\nws ::= \" \"?\n", .invalidGrammar, "line 1, column 1"),
            ("root ::= [^\\x00-\\U0010FFFF]\n", .unsatisfiable, "line 1, column 1"),
        ]
        for (text, kind, location) in cases {
            do {
                _ = try GBNF.grammar(text)
                Issue.record("no error for \(text.debugDescription)")
            } catch let e as ConstraintError {
                #expect(e.kind == kind, "\(text.debugDescription): \(e)")
                #expect(e.location == location, "\(text.debugDescription): \(e)")
            }
        }
    }
}
