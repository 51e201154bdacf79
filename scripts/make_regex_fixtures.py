#!/usr/bin/env python3
"""Writes Tests/Fixtures/regex-cases.json: patterns of the ECMAScript subset HearthConstraints
compiles, each with candidate strings labelled by Python's `re.fullmatch` (the reference).

The patterns and strings keep to where ECMAScript and Python agree: ASCII text, no '\\r'
(Python's '.' matches it, ECMAScript's does not), no trailing-newline subtleties (fullmatch).
Strings: hand-written examples plus seeded random strings over each pattern's own alphabet.
Run: python3 scripts/make_regex_fixtures.py
"""
import json
import random
import re
from pathlib import Path

CASES = [
    (r"abc", ["abc", "ab", "abcd", ""]),
    (r"a|b|cd", ["a", "b", "cd", "c", "ab"]),
    (r"(ab)+", ["ab", "abab", "", "aba"]),
    (r"a*b?c+", ["c", "aaac", "abccc", "b", "ac"]),
    (r"[a-c]{2,3}", ["ab", "abc", "a", "abca"]),
    (r"x{3}", ["xxx", "xx", "xxxx"]),
    (r"x{2,}", ["xx", "xxxxx", "x"]),
    (r"[^abc]+", ["xyz", "a", "dad", "-"]),
    (r"\d{3}-\d{4}", ["555-1234", "55-1234", "555-12345", "abc-defg"]),
    (r"\w+@\w+\.com", ["me@example.com", "me@example.org", "@x.com", "a_b@c1.com"]),
    (r"\s*\S+\s*", [" word ", "word", "  ", "a b"]),
    (r"\D\W", ["a-", "1-", "aa", "--"]),
    (r"(?:a|bc)*d", ["d", "abcd", "bcbcad", "abd"]),
    (r"(a*)*b", ["b", "aaab", "ab", "a"]),
    (r"(a|)+c", ["c", "ac", "aac", "bc"]),
    (r"(a?){2,3}", ["", "a", "aa", "aaa", "aaaa"]),
    (r"[\d.-]+", ["3.14", "-2", "1-2-3", "a"]),
    (r"[a\-z]", ["a", "-", "z", "b"]),
    (r"[-a]", ["-", "a", "b"]),
    (r"\x41\u0042\t", ["AB\t", "AB ", "ab\t"]),
    (r"\.\*\+\?\(\)\[\]\{\}\|\\\/", [r".*+?()[]{}|\/", "a"]),
    (r".+", ["abc", "", "a\nb", "x"]),
    (r"a.c", ["abc", "a-c", "a\nc", "ac"]),
    (r"colou?r", ["color", "colour", "colouur"]),
    (r"(red|green|blue)-(\d|[1-9]\d)", ["red-5", "green-42", "blue-07", "pink-1"]),
    (r"[A-Z][a-z]*( [A-Z][a-z]*)*", ["Ada Lovelace", "ada", "Ada  Lovelace", "A B C"]),
    (r"a{0,2}b{1,2}?", ["b", "aab", "aabb", "aaab", ""]),
    (r"(0|[1-9][0-9]*)(\.[0-9]+)?", ["0", "10", "01", "3.5", "3.", ".5"]),
    (r"#?([0-9a-fA-F]{6}|[0-9a-fA-F]{3})", ["#fff", "ABCDEF", "#abcd", "#12345g"]),
    (r"^\+?[1-9]\d{1,14}$", ["+14155552671", "14155552671", "+0123", "+1"]),
    (r"[a-z]+(-[a-z]+)*", ["kebab-case-name", "kebab--case", "-a", "a"]),
    (r"v\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?", ["v1.2.3", "v1.2.3-beta.1", "v1.2", "1.2.3"]),
    (r"[\s\S]{2}", ["ab", "\n\n", "a", "abc"]),
    (r"\0x", ["\0x", "0x"]),
    (r"[^\d\s]{1,3}", ["abc", "a1", " ", "xyzw"]),
    (r"(?:\w+\s?){1,3}", ["one two three", "one", "one  two", ""]),
    (r"\u{1F600}|é+", ["\U0001F600", "é", "éé", "e"]),
    (r"[α-ω]+", ["αβγ", "abc", "ω"]),
    (r"[^a-z]", ["é", "a", "\U0001F600", "A"]),
]

def alphabet(pattern, examples):
    chars = set("".join(examples)) | set(c for c in pattern if c.isprintable() and c != "\r") | set("a0 -")
    chars.discard("\r")
    return sorted(chars)

def main():
    rng = random.Random(24)
    out = []
    for pattern, examples in CASES:
        # Python spells \u{…} as \U0001…; the ECMAScript text is what Hearth compiles.
        py = re.sub(r"\\u\{([0-9A-Fa-f]+)\}", lambda m: "\\U%08x" % int(m.group(1), 16), pattern)
        compiled = re.compile(py)
        strings = list(examples)
        letters = alphabet(pattern, examples)
        for _ in range(6):
            n = rng.randint(0, 7)
            strings.append("".join(rng.choice(letters) for _ in range(n)))
        for e in examples:  # one-character edits of the examples
            if e:
                k = rng.randrange(len(e))
                strings.append(e[:k] + rng.choice(letters) + e[k + 1:])
        seen = set()
        cases = []
        for s in strings:
            if s in seen or "\r" in s:
                continue
            seen.add(s)
            cases.append({"text": s, "match": compiled.fullmatch(s) is not None})
        out.append({"pattern": pattern, "cases": cases})
    path = Path(__file__).resolve().parent.parent / "Tests/Fixtures/regex-cases.json"
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    print(f"{sum(len(p['cases']) for p in out)} cases over {len(out)} patterns -> {path}")

if __name__ == "__main__":
    main()
