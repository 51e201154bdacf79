import Foundation
import Testing
@testable import HearthTemplates

/// Small templates, each exercising one piece of jinja2's semantics as transformers configures
/// it; the expected strings are what jinja2 3.1.6 printed for them (through transformers 5.24's
/// `_compile_jinja_template`), and `.failure` names the kind of the exception it raised.
@Suite struct SemanticsTests {
    enum Expected {
        case success(String)
        case failure(TemplateError.Kind)
    }

    static let cases: [(String, String, Expected)] = [
        ("{{ [1, 'a', None, True, 2.5, {'k': (1,)}] }}", #"{}"#, .success("[1, 'a', None, True, 2.5, {'k': (1,)}]")),
        ("{{ 1/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }} {{ 1e16 }} {{ 0.0001 }} {{ 1e-5 }} {{ 3.0 }}", #"{}"#, .success("0.5 3 -4 2 1024 1e+16 0.0001 1e-05 3.0")),
        ("{% for x in xs %}{{ loop.index }}/{{ loop.length }}{% if not loop.last %},{% endif %}{% else %}empty{% endfor %}", #"{"xs": [5, 6, 7]}"#, .success("1/3,2/3,3/3")),
        ("{% for x in xs if x > 1 %}{{ loop.index0 }}{{ x }}{% endfor %}", #"{"xs": [1, 2, 3]}"#, .success("0213")),
        ("{% set ns = namespace(n=0) %}{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", #"{}"#, .success("3")),
        ("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", #"{}"#, .success("21")),
        ("a\n  {% if true %}\n  b\n  {% endif %}\nc", #"{}"#, .success("a\n  b\nc")),
        ("a  {%- if true -%}  b  {%- endif %}  c\n", #"{}"#, .success("ab  c")),
        ("{{ 'a,b,,c'.split(',') }} {{ ' x y '.split() }} {{ 'abc'[::-1] }} {{ 'héllo'[1:3] }}", #"{}"#, .success("['a', 'b', '', 'c'] ['x', 'y'] cba él")),
        ("{{ d|tojson }} {{ d|tojson(indent=2) }} {{ 'é<>&\"'|tojson }}", #"{"d": {"a": [1, 2.0, null, true], "b": {}}}"#, .success("{\"a\": [1, 2.0, null, true], \"b\": {}} {\n  \"a\": [\n    1,\n    2.0,\n    null,\n    true\n  ],\n  \"b\": {}\n} \"é<>&\\\"\"")),
        ("{{ x.y }}|{{ x is defined }}|{{ none.foo }}|{{ (x|default('d')) }}", #"{}"#, .failure(.undefined)),
        ("{% macro f(a, b='B') %}[{{ a }}{{ b }}{{ varargs }}{{ kwargs }}]{% endmacro %}{{ f(1) }}{{ f(1, 2, 3, z=4) }}", #"{}"#, .success("[1B(){}][12(3,){'z': 4}]")),
        ("{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}inner{% endcall %}", #"{}"#, .success("<inner>")),
        ("{{ 'hello world'|title }} {{ 'aBC'|capitalize }} {{ '  x  '|trim }} {{ 'a\nb'|indent(2, first=True) }}", #"{}"#, .success("Hello World Abc x   a\n  b")),
        ("{{ [3,1,2]|sort }} {{ ['b','A','a']|unique|list }} {{ {'b':1,'a':2}|dictsort }} {{ [{'n':1},{'n':2}]|map(attribute='n')|list }}", #"{}"#, .success("[1, 2, 3] ['b', 'A'] [('a', 2), ('b', 1)] [1, 2]")),
        ("{{ msgs|selectattr('role','equalto','user')|list|length }} {{ msgs|rejectattr('role','in',['user'])|map(attribute='role')|join(',') }}", #"{"msgs": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]}"#, .success("2 assistant")),
        ("{% set t %}  block {{ 1 }} {% endset %}[{{ t }}]", #"{}"#, .success("[  block 1 ]")),
        ("{{ 'a' ~ 1 ~ none ~ [1] }} {{ 'x' if false }}|{{ 'y' if 0 else 'z' }}", #"{}"#, .success("a1None[1] |z")),
        ("{{ d.items()|list }} {{ d.get('a') }} {{ d.get('zz', 5) }} {{ d['a'] }} {{ 'a' in d }} {{ d.keys()|list }}", #"{"d": {"a": 1, "b": 2}}"#, .success("[('a', 1), ('b', 2)] 1 5 1 True ['a', 'b']")),
        ("{{ 10|string + 'x' }} {{ '42'|int + 1 }} {{ 'x'|int }} {{ 3.7|int }} {{ 2|float }} {{ 2.567|round(2) }} {{ 2.5|round }}", #"{}"#, .success("10x 43 0 3 2.0 2.57 2.0")),
        ("{% raw %}{{ not rendered }}{% endraw %}", #"{}"#, .success("{{ not rendered }}")),
        ("{# c #}\n  {# d #}\nx", #"{}"#, .success("x")),
        ("{{ raise_exception('boom') }}", #"{}"#, .failure(.raised)),
        ("{{ 1 < 2 < 3 }} {{ 'a' < 'b' }} {{ [1,2] == [1,2] }} {{ 1 == 1.0 }} {{ True == 1 }} {{ (1,) == [1] }}", #"{}"#, .success("True True True True True False")),
        ("{{ 'abc'.startswith(('x','a')) }} {{ 'Abc'.upper() }} {{ ' a '.strip() }} {{ 'a-b'.replace('-', '+') }} {{ 'abc'.endswith('c') }}", #"{}"#, .success("True ABC a a+b True")),
        ("{{ x|length }} {{ 'héllo'|length }} {{ [1,2]|first }} {{ [1,2]|last }} {{ (x or 'alt') }}", #"{}"#, .success("0 5 1 2 alt")),
        ("{%- for k, v in d.items() -%}{{ k }}={{ v }};{%- endfor %}", #"{"d": {"z": 1, "a": [1, "x"]}}"#, .success("z=1;a=[1, 'x'];")),
        ("{{ \"it's\" }} {{ ['it\\'s', \"q\\\"\"] }} {{ 'tab\\there' }}", #"{}"#, .success("it's [\"it's\", 'q\"'] tab\there")),
        ("{{ x.y.z }}", #"{}"#, .failure(.undefined)),
        ("{{ 1 + 'a' }}", #"{}"#, .failure(.type)),
        ("{% for a, b in [[1,2],[3,4]] %}{{ a + b }}{% endfor %}", #"{}"#, .success("37")),
        ("{{ [1,2,3][1:] }} {{ [1,2,3][-1] }} {{ 'abc'[5] }}|{{ [1][3] }}|", #"{}"#, .success("[2, 3] 3 ||")),
        ("{{ {'a': 1}|tojson(separators=(',', ':')) }} {{ [1,[2]]|tojson(indent=1) }} {{ 'x'|tojson(ensure_ascii=True) }} {{ 'é😀'|tojson(ensure_ascii=True) }}", #"{}"#, .success("{\"a\":1} [\n 1,\n [\n  2\n ]\n] \"x\" \"\\u00e9\\ud83d\\ude00\"")),
        // Interned names and the direct calls (issue 58's 1 ms render): a variable shadows a
        // global of the same name, a macro may be named like one, a dict's method wins over its
        // key, `loop` is the innermost loop's and undefined outside, keyword arguments bind by
        // name, and the byte-level split/strip agree with Python on non-ASCII text.
        ("{% set range = 5 %}{{ range(3) }}", #"{}"#, .failure(.type)),
        ("{% macro namespace(x) %}<{{ x }}>{% endmacro %}{{ namespace(1) }}{% for i in range(2) %}{{ i }}{% endfor %}", #"{}"#, .success("<1>01")),
        ("{% set d = {'get': 1, 'split': 2} %}{{ d.get('get') }}|{{ d['split'] }}|{{ 'a b'.split(' ') }}|{{ d.get('x', loop) }}", #"{}"#, .success("1|2|['a', 'b']|")),
        ("{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index }}{% endfor %}{{ loop }}", #"{"unused": 3}"#, .success("1x2y11x2y2")),
        ("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ kwargs }}{% endmacro %}{{ m(b=3, a=1, c=4) }}{% set ns = namespace(a=1) %}{{ ns.a }}{{ ns.b }}", #"{}"#, .success("13{'c': 4}1")),
        ("{{ ' x '.strip() }}|{{ '\u{3000}x\u{3000}'.strip() }}|{{ 'é|é'.split('|') }}|{{ 'a<c>b<c>'.rsplit('<c>', 1) }}", #"{}"#, .success("x|x|['é', 'é']|['a<c>b', '']")),
        ("{% set x = 1 %}{{ y }}", #"{"y": {"a": [1, {"b": 2}]}}"#, .success("{'a': [1, {'b': 2}]}")),
        ("{{ 'é' in 'café' }} {{ '' in 'x' }} {{ 'xé' in 'é' }} {{ '😀é'|length }}", #"{}"#, .success("True True False 2")),
        // Python compares strings by code point: precomposed "é" is not "e" + U+0301 (Swift's
        // `==` says they are equal; this printed True|False|1|1|True before).
        ("{{ a == b }}|{{ a != b }}|{{ d[b] }}|{{ d[a] }}|{{ b in [a] }}", #"{"a": "\u00e9", "b": "e\u0301", "d": {"\u00e9": 1}}"#, .success("False|True||1|False")),
    ]

    @Test(arguments: 0..<cases.count) func caseMatchesJinja2(_ index: Int) throws {
        let (source, contextJSON, expected) = Self.cases[index]
        var context: [String: JinjaValue] = [:]
        if case .dict(let d) = try JinjaValue.fromJSON(contextJSON) {
            for (k, v) in d.entries { if case .string(let key) = k { context[key] = v } }
        }
        switch expected {
        case .success(let output):
            #expect(try Template(source).render(context) == output, "\(source)")
        case .failure(let kind):
            do {
                let output = try Template(source).render(context)
                Issue.record("\(source) rendered \(output), jinja2 raised")
            } catch let error as TemplateError {
                #expect(error.kind == kind, "\(source): \(error)")
            }
        }
    }

    @Test func strftimeNowFormatsTheGivenTime() throws {
        let template = try Template("{{ strftime_now('%d %b %Y, %A %B %-d %H:%M:%S %j %p') }}")
        let now = CorpusTests.now
        #expect(try template.render([:], now: now, timeZone: TimeZone(identifier: "UTC") ?? .current) == "07 Mar 2025, Friday March 7 14:05:09 066 PM")
    }

    @Test func errorsCarryLineAndColumn() {
        do {
            _ = try Template("line one\n{{ x + }}")
            Issue.record("parsed")
        } catch let error as TemplateError {
            #expect(error.kind == .syntax)
            #expect(error.position?.line == 2)
        } catch {
            Issue.record("\(error)")
        }
        do {
            _ = try Template("{% for x in y %}{{ x|nosuchfilter }}{% endfor %}")
            Issue.record("parsed")
        } catch let error as TemplateError {
            #expect(error.kind == .unsupported)
            #expect(error.position == SourcePosition(line: 1, column: 22))
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func floatsPrintAsPython() {
        let cases: [(Double, String)] = [
            (1.0, "1.0"), (0.1, "0.1"), (1e16, "1e+16"), (1e15, "1000000000000000.0"), (1.5e-5, "1.5e-05"), (0.0001, "0.0001"),
            (-2.5, "-2.5"), (123456789.125, "123456789.125"), (5e-324, "5e-324"),
        ]
        for (value, expected) in cases { #expect(PythonFormat.floatRepr(value) == expected) }
    }
}
