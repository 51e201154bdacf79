#!/usr/bin/env python3
"""Writes Tests/Fixtures/schema-instances.json: for every schema in Tests/Fixtures/schemas/,
candidate instances labelled valid/invalid BY the `jsonschema` package (with format checking:
the schema's draft's FORMAT_CHECKER),
for HearthConstraints' JSON Schema front end to be checked against (SchemaCorpusTests).

Each instance is compact JSON text with object keys in the schema's property order (as written
below), except the few RAW texts that test the whitespace rule. Besides the hand-written
candidates, every schema gets a few generic ones (null, {}, [], "", 0, true...) kept only where
jsonschema says invalid: the grammar may write a subset of the valid documents (docs/
STRUCTURED-frontends.md), so a generic candidate is asserted only when it must be refused.

multipleOf with a decimal is checked by jsonschema in binary floating point (19.99 is "not a
multiple of 0.01" there), so the candidates for such schemas avoid values where that differs
from decimal arithmetic.

Reference stack: jsonschema with its non-GPL format checkers (rfc3339-validator for date-time/
time, fqdn for hostname, rfc3986-validator for uri/uri-reference, jsonpointer, isoduration), the
same pin as the check scripts' venv (scripts/requirements-checks.txt):
    python3 -m venv scripts/.venv && scripts/.venv/bin/pip install 'jsonschema[format-nongpl]==4.26.0'
    scripts/.venv/bin/python scripts/make_schema_fixtures.py
"""
import json
from pathlib import Path

import jsonschema
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "Tests/Fixtures/schemas"
OUT = ROOT / "Tests/Fixtures/schema-instances.json"


class Raw(str):
    """Instance text used as written (for whitespace cases)."""


U1 = "123e4567-e89b-12d3-a456-426614174000"
NET = {"ip4": "192.168.0.1", "ip6": "2001:db8:0:0:0:0:0:1", "host": "api.example.com", "site": "https://example.com/a/b?x=1",
       "link": "/docs/index.html", "pointer": "/a/0/b~1c", "relative": "1/a", "wait": "P1DT2H", "gateway": "10.0.0.1"}
C = {
    # pattern / format with minLength and maxLength (issue 59): lengths in characters.
    "bounded_strings": [
        {"email": "ann@example.org", "name": "Ann Lee", "code": "ab12", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "a@b.co", "name": "Ann Lee", "code": "ab12", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "a.very.long.name@example.org", "name": "Ann Lee", "code": "ab12", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann", "code": "ab12", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann Marie Lee Jones Smith", "code": "ab12", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann lee", "code": "ab12", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "12", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "x12yz", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "abcdefg12", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "abcd", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "é12ü", "stamp": "2025-03-07T14:05:09Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "ab12", "stamp": "2025-03-07T14:05:09.5Z", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "ab12", "stamp": "2025-03-07T14:05:09+01:00", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "ab12", "stamp": "2025-03-07", "id": U1},
        {"email": "ann@example.org", "name": "Ann Lee", "code": "ab12", "stamp": "2025-03-07T14:05:09Z", "id": "123"},
        {"email": "ann@example.org", "name": "Ann Lee Ng", "code": "9900", "stamp": "2024-02-29T00:00:00z", "id": U1.upper()},
    ],
    # formats a string automaton writes (issue 59 item 2): each candidate changes one field of a
    # valid base; the valid ones are inside the subset the grammar writes (STRUCTURED-frontends.md).
    "network_formats": [dict(NET, **change) for change in [
        {}, {"ip4": "0.0.0.0"}, {"ip4": "255.255.255.255"}, {"ip4": "256.1.1.1"}, {"ip4": "01.2.3.4"}, {"ip4": "1.2.3"},
        {"ip6": "FFFF:0:0:0:0:0:0:1"}, {"ip6": "12345:0:0:0:0:0:0:1"}, {"ip6": "1:2:3:4:5:6:7"}, {"ip6": "1:2:3:4:5:6:7:g"},
        {"host": "localhost"}, {"host": "a-b.example0.net"}, {"host": "-bad.com"}, {"host": "a..b"}, {"host": "exa mple.com"},
        {"host": "a" * 64 + ".com"},
        {"site": "http://a.io:8080/x"}, {"site": "https://x.org/"}, {"site": "example.com"}, {"site": "http://exa mple.com"},
        {"link": "https://x.org/a"}, {"link": "a b"},
        {"pointer": ""}, {"pointer": "/"}, {"pointer": "a/b"}, {"pointer": "/a~2"},
        {"relative": "0#"}, {"relative": "2"}, {"relative": "01/a"}, {"relative": "-1"},
        {"wait": "P3W"}, {"wait": "PT5M"}, {"wait": "P1Y2M3D"}, {"wait": "P"}, {"wait": "PT"}, {"wait": "1D"}, {"wait": "P1H"},
        # format and pattern together, with a maxLength
        {"gateway": "10.10.10.10"}, {"gateway": "11.0.0.1"}, {"gateway": "10.0.0.256"}, {"gateway": "10.100.100.1"},
        {"gateway": "210.0.0.1"},
    ]],
    "weather": [
        {"city": "Oslo", "temperature_c": -3.5, "conditions": "snow", "humidity": 80},
        {"city": "Lima", "temperature_c": 22, "conditions": "fog"},
        {"city": "", "temperature_c": 10, "conditions": "rain"},
        {"city": "Rome", "temperature_c": 61, "conditions": "sunny"},
        {"city": "Rome", "temperature_c": 20, "conditions": "hail"},
        {"city": "Rome", "conditions": "sunny"},
        {"city": "Rome", "temperature_c": 20, "conditions": "sunny", "humidity": 101},
        {"city": "Rome", "temperature_c": 20, "conditions": "sunny", "wind": 3},
        Raw('{ "city" : "Oslo" ,\n  "temperature_c": 1.25, "conditions": "cloudy"}'),
        Raw('{"city":"Oslo",' + ' ' * 20 + '"temperature_c":1,"conditions":"fog"}'),
    ],
    "user_profile": [
        {"id": U1, "name": "Ada", "email": "ada@example.com", "age": 36, "verified": True},
        {"id": U1, "name": "Bob", "email": "bob.smith+tag@mail.example.org"},
        {"id": "not-a-uuid", "name": "Ada", "email": "ada@example.com"},
        {"id": U1, "name": "Ada", "email": "ada.example.com"},
        {"id": U1, "name": "Ada", "email": "ada@example.com", "age": 12},
        {"id": U1, "name": "x" * 41, "email": "ada@example.com"},
        {"id": U1.upper(), "name": "Ada", "email": "ada@example.com", "verified": False},
    ],
    "invoice": [
        {"number": "INV-000123", "issued": "2024-02-29", "currency": "EUR", "lines": [{"sku": "ABC-1234", "quantity": 2, "unit_price": 9.99}], "paid": False},
        {"number": "INV-000124", "issued": "2023-12-31", "currency": "USD", "lines": [{"sku": "XYZ-0001", "quantity": 1, "unit_price": 0}, {"sku": "XYZ-0002", "quantity": 10, "unit_price": 120.5}]},
        {"number": "INV-000125", "issued": "2023-02-29", "currency": "EUR", "lines": [{"sku": "ABC-1234", "quantity": 2, "unit_price": 1}]},
        {"number": "INV-12", "issued": "2024-01-01", "currency": "EUR", "lines": [{"sku": "ABC-1234", "quantity": 2, "unit_price": 1}]},
        {"number": "INV-000126", "issued": "2024-01-01", "currency": "EUR", "lines": []},
        {"number": "INV-000127", "issued": "2024-01-01", "currency": "EUR", "lines": [{"sku": "abc-1234", "quantity": 2, "unit_price": 1}]},
        {"number": "INV-000128", "issued": "2024-01-01", "currency": "EUR", "lines": [{"sku": "ABC-1234", "quantity": 0, "unit_price": 1}]},
        {"number": "INV-000129", "issued": "2024-01-01", "currency": "EUR", "lines": [{"sku": "ABC-1234", "quantity": 1, "unit_price": 1.005}]},
        {"number": "INV-000130", "issued": "2024-01-01", "currency": "JPY", "lines": [{"sku": "ABC-1234", "quantity": 1, "unit_price": 1}]},
    ],
    "tree": [
        {"value": 1},
        {"value": 1, "children": [{"value": 2}, {"value": 3, "children": [{"value": -4, "children": []}]}]},
        {"value": 1, "children": [{"children": []}]},
        {"value": "1"},
        {"value": 1, "children": [{"value": 2, "extra": True}]},
    ],
    "linked_list": [
        {"head": "a", "tail": None},
        {"head": "a", "tail": {"head": "b", "tail": {"head": "c", "tail": None}}},
        {"head": "a"},
        {"head": "a", "tail": {"head": "b"}},
        {"head": 1, "tail": None},
    ],
    "tool_call_weather": [
        {"location": "Paris, France", "unit": "celsius"},
        {"location": "Austin, TX"},
        {"location": "Paris", "unit": "kelvin"},
        {"unit": "celsius"},
        {"location": "Paris", "units": "celsius"},
    ],
    "tool_call_search": [
        {"query": "swift structured output", "top_k": 5, "filters": {"site": "example.com", "after": "2024-06-01"}},
        {"query": "x"},
        {"query": "x", "filters": {}},
        {"query": ""},
        {"query": "x", "top_k": 51},
        {"query": "x", "filters": {"after": "yesterday"}},
        {"query": "x", "filters": {"site": "a", "lang": "en"}},
    ],
    "tool_call_union": [
        {"name": "send_email", "arguments": {"to": "a@b.co", "body": "hi \"there\"\n"}},
        {"name": "create_event", "arguments": {"title": "Standup", "start": "2025-03-01T09:30:00Z"}},
        {"name": "create_event", "arguments": {"title": "Standup", "start": "2025-03-01T09:30:00.123+01:00"}},
        {"name": "create_event", "arguments": {"to": "a@b.co", "body": "x"}},
        {"name": "send_email", "arguments": {"to": "a@b.co"}},
        {"name": "delete_all", "arguments": {}},
        {"name": "create_event", "arguments": {"title": "Standup", "start": "2025-03-01 09:30"}},
    ],
    "enum_mixed": ["red", 42, True, None, {"k": [1, 2]}, [3, "x"], "blue", 43, False, {"k": [2, 1]}, [3]],
    "enum_strings": ["small", "x-large", "quote\"d", "tab\tbed", "naïve", "naive", "XL", 1],
    "const_string": ["fixed value", "fixed", "fixed value ", None],
    "const_object": [{"version": 2, "kind": "config"}, {"version": 3, "kind": "config"}, {"version": 2}],
    "type_list": ["text", None, "", 1, ["text"]],
    "type_list_numbers": [5, 17, True, False, 4, 5.5, "5"],
    "null_only": [None, 0, "null", False],
    "true_schema": [None, 1, "x", [1, {"a": []}], {"b": {"c": None}}, -0.5e10, True],
    "empty_schema": [{}, [], "s", 3.14, {"nested": [1, 2, {"x": "y"}]}],
    "annotations_only": [1, "a", None, {"k": "v"}],
    "boolean_flag": [True, False, "true", 1, None],
    "integer_range": [-25, 0, 1234, 999, -26, 1235, 10000, 5.5, "7"],
    "integer_exclusive": [1, 9, 0, 10, -1, 11],
    "integer_lower_only": [18, 19, 100, 123456789, 17, 0, -18],
    "integer_upper_only": [-3, -4, -1000, -2, 0, 3],
    "integer_multiple": [0, 7, -14, 700, 49, 1, -13, 15],
    "integer_multiple_range": [10, 15, 100, 5, 105, 12, 0],
    "integer_multiple_nonneg": [0, 3, 30, 999, -3, 4, 1000],
    "number_range": [-1.5, -1.49, 0, 2.25, 2.2, 1, -1.51, 2.26, 3, -2],
    "number_exclusive": [0.5, 0.001, 0.999, 0, 1, 1.5, -0.5],
    "number_decimal_bound": [0.05, 0.06, 1, 100.49, 100.4999, 0.04, 100.5, 100.51, 101, 0],
    "price_cents": [0, 0.5, 19.5, 7.25, 10000, 1.25, 10000.01, -1, 1.234],
    "number_plain": [0, -1, 3.14, 1e5, -2.5e-3, 12345678901234, "1"],
    "percent": [0, 100, 55.5, 99.999, 100.1, -0.1, 1000],
    "string_lengths": ["ab", "abcde", "héllo", "日本語", "a", "abcdef", "😀😀", "😀"],
    "string_min_only": ["abc", "abcdefghijk", "ab", "", "a\nb"],
    "pattern_unanchored": ["abc", "xxabcxx", "abcd", "ab", "a-b-c", ""],
    "pattern_anchored": ["snake_case", "a", "a_b_c", "Snake", "snake__case", "_a", "a_"],
    "pattern_phone": ["+14155552671", "4155552671", "+0123", "+1", "12"],
    "pattern_prefix": ["https://example.com", "http://x", "ftp://x", "xhttps://"],
    "format_date": ["2024-02-29", "2000-02-29", "1999-12-31", "0001-01-01", "2023-02-29", "1900-02-29", "2024-13-01", "2024-04-31", "0000-01-01", "24-01-01", "2024-1-01"],
    "format_time": ["09:30:00Z", "23:59:59+05:30", "00:00:00.5-08:00", "12:00:00z", "24:00:00Z", "09:30:00", "09:60:00Z", "9:30:00Z"],
    "format_datetime": ["2025-03-01T09:30:00Z", "2024-02-29T23:59:59.999+01:00", "2025-03-01t09:30:00z", "2025-03-01 09:30:00Z", "2025-02-30T09:30:00Z", "2025-03-01T09:30:00"],
    "format_email": ["ada@example.com", "first.last+tag@sub.example.co.uk", "o'neil@example.org", "no-at-sign", "a@b.c"],
    "format_uuid": [U1, U1.upper(), "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000"],
    "array_items": [[], [1], [1, -2, 3], [1, "2"], [1.5], Raw("[ 1 ,2,\n3 ]")],
    "array_bounds": [["a", "b"], ["a", "b", "c", "d"], ["a"], ["a", "b", "c", "d", "e"], ["a", 1]],
    "array_prefix": [[1, "a", True], [1, "a"], [1], [], [1, "a", True, 2], ["a", 1, True]],
    "array_prefix_rest": [["header", 1], ["header", 1, 2, 3], ["header"], ["head", 1], ["header", "1"]],
    "array_any": [[], [1, "a", None], [1, 2, 3, 4], [{"a": [1]}]],
    "matrix": [[[1, 2]], [[1, 2], [3.5, -4]], [], [[1]], [[1, 2, 3]]],
    "additional_schema": [{"id": 1}, {"id": 1, "name": "x", "note": "y"}, {"id": 1, "name": 2}, {"name": "x"}, {"id": 1, "id2": "ok"}, {"id": 1, "i": "ok", "idx": "ok"}],
    "additional_true": [{}, {"a": 1}, {"a": 1, "b": [True]}, {"b": None}, {"a": "1"}],
    "map_of_numbers": [{}, {"x": 1}, {"x": 1, "y": -2.5, "z z": 0}, {"x": "1"}, {"x": None}],
    "optional_props": [{}, {"a": 1}, {"b": "s"}, {"c": True}, {"a": 1, "c": False}, {"a": 1, "b": "s", "c": True}, {"a": "1"}, {"d": 1}],
    "required_not_declared": [{"x": 1, "y": "anything"}, {"x": 1, "y": [1, {"z": None}]}, {"x": 1}, {"y": 2}],
    "anyof_scalar": ["", "abc", 100, 5000, "abcd", 99, None],
    "oneof_types": ["s", 1.5, None, True, []],
    "oneof_shapes": [{"kind": "circle", "radius": 2}, {"kind": "rect", "w": 1, "h": 2}, {"kind": "circle", "w": 1, "h": 2}, {"kind": "circle", "radius": -1}, {"kind": "square", "w": 1}],
    "allof_merge": [{"name": "Ada", "age": 36}, {"name": "Ada"}, {"age": 3}, {"name": "Ada", "age": -1}, {"name": 1, "age": 1}],
    "anyof_with_siblings": [{"id": 1, "email": "a@b.co"}, {"id": 2, "phone": "5551234"}, {"id": 3}, {"id": 4, "phone": "12"}, {"email": "a@b.co"}],
    "nested_address": [
        {"name": "Ada", "address": {"street": "1 Main St", "zip": "12345", "country": "US"}, "tags": ["vip"]},
        {"name": "Bo", "address": {"street": "Rue 2", "zip": "75001", "country": "FR"}},
        {"name": "Bo", "address": {"street": "Rue 2", "zip": "7500", "country": "FR"}},
        {"name": "Bo", "address": {"street": "Rue 2", "zip": "75001", "country": "IT"}},
        {"name": "Bo", "address": {"street": "Rue 2", "zip": "75001", "country": "FR"}, "tags": ["a", "b", "c", "d"]},
        {"name": "Bo", "address": {"street": "Rue 2", "zip": "75001", "country": "FR"}, "tags": ["abcdefghijk"]},
        {"name": "Bo"},
    ],
    "event": [
        {"title": "Launch", "start": "2025-05-01T10:00:00Z", "end": None, "attendees": ["a@b.co", "c@d.org"]},
        {"title": "Launch", "start": "2025-05-01T10:00:00Z", "end": "2025-05-01T11:00:00+02:00"},
        {"title": "Launch", "start": "2025-05-01"},
        {"title": "Launch", "start": "2025-05-01T10:00:00Z", "attendees": ["nobody"]},
    ],
    "json_expression": [3, {"op": "+", "args": [1, {"op": "*", "args": [2, 3.5]}]}, {"op": "%", "args": [1, 2]}, {"op": "+", "args": [1]}, "3"],
    "sentiment": [{"label": "positive", "confidence": 0.93, "reasons": ["great", "fast"]}, {"label": "neutral", "confidence": 1}, {"label": "positive", "confidence": 1.2}, {"label": "happy", "confidence": 0.5}],
    "unicode_strings": [{"text": "日本語", "emoji": "😀😂"}, {"text": "ab\"c"}, {"text": "a\u0001"}, {"text": "abcde"}, {"emoji": "😀a"}, {"emoji": ""}],
}

GENERIC = [None, True, 0, -1, 2.5, "", "x", [], [1], {}, {"unexpected": 1}]


def main():
    out = []
    schema_files = sorted(SCHEMAS.glob("*.json"))
    names = {p.stem for p in schema_files}
    missing = names - C.keys()
    assert not missing, f"no candidates for {sorted(missing)}"
    assert not (C.keys() - names), f"candidates for unknown schemas {sorted(C.keys() - names)}"
    for path in schema_files:
        schema = json.loads(path.read_text())
        cls = jsonschema.validators.validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        # The draft's own checker: FormatChecker() mixes drafts (its "time" is draft 3's).
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        instances = []
        seen = set()
        for candidate in C[path.stem]:
            text = str(candidate) if isinstance(candidate, Raw) else json.dumps(candidate, ensure_ascii=False, separators=(",", ":"))
            if text in seen:
                continue
            seen.add(text)
            instances.append({"json": text, "valid": validator.is_valid(json.loads(text))})
        for candidate in GENERIC:
            text = json.dumps(candidate, separators=(",", ":"))
            if text in seen or validator.is_valid(candidate):
                continue
            seen.add(text)
            instances.append({"json": text, "valid": False})
        out.append({"schema": path.name, "instances": instances})
    OUT.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    total = sum(len(s["instances"]) for s in out)
    valid = sum(i["valid"] for s in out for i in s["instances"])
    print(f"{len(out)} schemas, {total} instances ({valid} valid) -> {OUT}")


if __name__ == "__main__":
    main()
