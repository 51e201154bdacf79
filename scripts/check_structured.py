"""Structured output against references (scripts/check-structured.sh runs it in a private venv).

1. Every schema of the corpus, sampled at temperature 1.0 with several seeds through
   /v1/chat/completions (response_format json_schema): each answer is validated with the
   `jsonschema` package, format checks on. An answer cut by max_tokens (finish_reason
   "length") is counted apart: it is incomplete by design, neither valid nor invalid.
2. The official `openai` client's `chat.completions.parse` (and `responses.parse` when the
   installed client has it) with pydantic models: the parsed object is an instance of the model.
3. `hearth generate --json-schema` once, its output validated the same way.
4. `multipleOf` with bounds (0.5, 0.01 and 7; issue 59): `--multiple-samples` answers each at
   temperature 1, every number checked exactly (decimal arithmetic, not floats: `jsonschema`
   divides floats, and 0.07 / 0.01 is not an integer there).
5. `--budget-matrix 256,512,1024` (issue 59, finishing in budget; instead of 1–4): the corpus at
   each max_tokens with the budget rule on (the default) and off (`"finish_in_budget": false`):
   with it every answer must be valid and none cut; where the answer without it ended on its own
   (finish_reason "stop"), the answer with it must be the same text (the rule acts only when it
   must). Differences where the rule reported shaping no token are counted apart: that is not
   the rule (two runs of one request can part at a near-tie when batched differently).

Exits 1 on any invalid answer or failed request.
"""

import argparse
import concurrent.futures
import decimal
import json
import pathlib
import re
import subprocess
import sys
import time
import urllib.request
from typing import List, Literal, Optional

import jsonschema
from openai import LengthFinishReasonError, OpenAI
from pydantic import BaseModel, Field


def post(base, key, path, body, timeout=600):
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def schema_name(path):
    name = re.sub(r"[^A-Za-z0-9_-]", "_", path.stem)[:64]
    return name or "schema"


def validator(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    # The draft's own format checker: a bare FormatChecker() mixes drafts (draft 3's `time` is
    # HH:MM:SS only, and wins over RFC 3339's).
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def sample(base, key, model, path, schema, seed, max_tokens, finish_in_budget=None):
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": "You answer with one JSON value and nothing else."},
            {"role": "user", "content": "Write an example JSON value for this JSON Schema:\n" + json.dumps(schema)},
        ],
        "temperature": 1.0,
        "seed": seed,
        "max_tokens": max_tokens,
        "response_format": {"type": "json_schema", "json_schema": {"name": schema_name(path), "schema": schema, "strict": True}},
    }
    if finish_in_budget is not None:
        body["finish_in_budget"] = finish_in_budget
    started = time.monotonic()
    status, reply = post(base, key, "/v1/chat/completions", body)
    seconds = time.monotonic() - started
    if status != 200:
        return {"status": status, "error": reply.get("error", reply), "seconds": seconds}
    choice = reply["choices"][0]
    return {
        "status": 200, "finish": choice["finish_reason"], "text": choice["message"]["content"],
        "tokens": reply["usage"]["completion_tokens"], "seconds": seconds,
        "shaped": reply["usage"].get("budget_shaped_tokens", 0),
    }


def check_corpus(args):
    paths = sorted(pathlib.Path(args.schemas).glob("*.json"))
    jobs = []
    schemas = {}
    for path in paths:
        document = json.loads(path.read_text())
        # A corpus file is a schema, or {"schema": …} with notes beside it.
        schema = document["schema"] if isinstance(document, dict) and "schema" in document and "type" not in document else document
        schemas[path] = (schema, validator(schema))
        for seed in range(1, args.seeds + 1):
            jobs.append((path, seed))
    results = {path: {"valid": 0, "invalid": 0, "length": 0, "errors": 0, "tokens": 0, "seconds": 0.0} for path in paths}
    failures = []
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        futures = {pool.submit(sample, args.base, args.key, args.model, path, schemas[path][0], seed, args.max_tokens): (path, seed)
                   for path, seed in jobs}
        for future in concurrent.futures.as_completed(futures):
            path, seed = futures[future]
            outcome = future.result()
            row = results[path]
            row["seconds"] += outcome["seconds"]
            if outcome["status"] != 200:
                row["errors"] += 1
                failures.append(f"{path.name} seed {seed}: HTTP {outcome['status']} {outcome['error']}")
                continue
            row["tokens"] += outcome["tokens"]
            if outcome["finish"] == "length":
                row["length"] += 1
                continue
            try:
                value = json.loads(outcome["text"])
                problems = sorted(schemas[path][1].iter_errors(value), key=lambda e: list(e.path))
            except json.JSONDecodeError as error:
                problems = [f"not JSON: {error}"]
            if problems:
                row["invalid"] += 1
                first = problems[0]
                message = first.message if hasattr(first, "message") else str(first)
                where = "/" + "/".join(str(p) for p in first.path) if hasattr(first, "path") else ""
                failures.append(f"{path.name} seed {seed}: INVALID at {where}: {message[:200]} — {outcome['text'][:300]!r}")
            else:
                row["valid"] += 1
    elapsed = time.monotonic() - started
    total = {k: sum(r[k] for r in results.values()) for k in ("valid", "invalid", "length", "errors", "tokens")}
    for path, row in results.items():
        print(f"     {path.name:40s} valid {row['valid']}  invalid {row['invalid']}  length {row['length']}  errors {row['errors']}  "
              f"tokens {row['tokens']}")
    judged = total["valid"] + total["invalid"]
    share = 100.0 * total["valid"] / judged if judged else 0.0
    print(f"corpus: {len(paths)} schemas x {args.seeds} seeds = {len(jobs)} answers: {total['valid']} valid, "
          f"{total['invalid']} invalid ({share:.1f}% of {judged} complete answers valid), {total['length']} cut at "
          f"max_tokens {args.max_tokens}, {total['errors']} failed requests; {total['tokens']} tokens in {elapsed:.1f} s "
          f"({total['tokens'] / elapsed:.1f} tokens/s over {args.parallel} parallel)")
    for failure in failures:
        print("FAIL " + failure)
    return total, failures, results, elapsed


MULTIPLE_SCHEMAS = [
    # (the multiple, lower bound, upper bound, exclusive lower, exclusive upper, type)
    ("0.5", "-10", "25", False, True, "number"),
    ("0.01", "0", "1", True, False, "number"),
    ("7", "-100", "1000", False, False, "integer"),
]


def multiple_schema(multiple, lower, upper, exclusive_lower, exclusive_upper, kind):
    bounds = {("exclusiveMinimum" if exclusive_lower else "minimum"): json.loads(lower),
              ("exclusiveMaximum" if exclusive_upper else "maximum"): json.loads(upper)}
    number = {"type": kind, "multipleOf": json.loads(multiple), **bounds}
    return {"type": "object", "properties": {"price": number, "items": {"type": "array", "items": number, "maxItems": 3}},
            "required": ["price", "items"], "additionalProperties": False}


def exactly_valid(text, multiple, lower, upper, exclusive_lower, exclusive_upper, kind):
    """The problems of one answer, checked with exact decimals (the numbers as written)."""
    try:
        value = json.loads(text, parse_float=decimal.Decimal, parse_int=decimal.Decimal)
    except json.JSONDecodeError as error:
        return [f"not JSON: {error}"]
    numbers = [value.get("price")] + list(value.get("items", []))
    m, lo, hi = decimal.Decimal(multiple), decimal.Decimal(lower), decimal.Decimal(upper)
    problems = []
    for x in numbers:
        if not isinstance(x, decimal.Decimal):
            problems.append(f"{x!r} is not a number")
            continue
        if kind == "integer" and x != x.to_integral_value():
            problems.append(f"{x} is not an integer")
        if x % m != 0:
            problems.append(f"{x} is not a multiple of {m}")
        if x < lo or (exclusive_lower and x == lo) or x > hi or (exclusive_upper and x == hi):
            problems.append(f"{x} is outside the bounds")
    return problems


def check_multiples(args):
    failures = []
    for spec in MULTIPLE_SCHEMAS:
        schema = multiple_schema(*spec)
        path = pathlib.Path(f"multipleOf-{spec[0]}.json")
        valid = cut = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
            outcomes = list(pool.map(lambda seed: sample(args.base, args.key, args.model, path, schema, seed, 96),
                                     range(1, args.multiple_samples + 1)))
        for seed, outcome in enumerate(outcomes, start=1):
            if outcome["status"] != 200:
                failures.append(f"multipleOf {spec[0]} seed {seed}: HTTP {outcome['status']} {outcome['error']}")
            elif outcome["finish"] == "length":
                cut += 1
                failures.append(f"multipleOf {spec[0]} seed {seed}: cut at max_tokens — {outcome['text'][:200]!r}")
            elif problems := exactly_valid(outcome["text"], *spec):
                failures.append(f"multipleOf {spec[0]} seed {seed}: INVALID {problems[0]} — {outcome['text'][:200]!r}")
            else:
                valid += 1
        print(f"multipleOf {spec[0]} in {'(' if spec[3] else '['}{spec[1]}, {spec[2]}{')' if spec[4] else ']'} ({spec[5]}): "
              f"{valid}/{args.multiple_samples} valid, {cut} cut")
    return failures


class Address(BaseModel):
    street: str = Field(max_length=40)
    city: str = Field(max_length=30)
    postcode: str = Field(pattern=r"^[0-9]{5}$")


class Person(BaseModel):
    name: str = Field(max_length=30)
    age: int = Field(ge=0, le=130)
    email: Optional[str]
    role: Literal["admin", "editor", "viewer"]
    tags: List[str] = Field(max_length=4)
    address: Address


class Verdict(BaseModel):
    answer: Literal["yes", "no"]
    confidence: float


def check_openai_parse(args):
    client = OpenAI(base_url=args.base + "/v1", api_key=args.key, max_retries=0, timeout=600)
    failures = []
    parsed = cut = 0
    seeds = range(1, max(2, args.seeds) + 1)
    for model_type, prompt in [(Person, "Invent a person who lives in a city."), (Verdict, "Is the sky blue?")]:
        for seed in seeds:
            try:
                completion = client.chat.completions.parse(
                    model=args.model, messages=[{"role": "user", "content": prompt + " Answer in JSON."}],
                    response_format=model_type, temperature=1.0, seed=seed, max_tokens=args.max_tokens)
            except LengthFinishReasonError:
                cut += 1  # incomplete by design (finish_reason length), as in the corpus
                continue
            message = completion.choices[0].message
            if isinstance(message.parsed, model_type):
                parsed += 1
            else:
                failures.append(f"chat.completions.parse {model_type.__name__} seed {seed}: parsed {message.parsed!r} from {message.content!r}")
    if parsed == 0:
        failures.append("chat.completions.parse: no answer parsed (all cut at max_tokens)")
    if not failures:
        print(f"ok   openai chat.completions.parse with pydantic models (Person with a nested Address, Verdict): "
              f"{parsed} parsed, {cut} cut at max_tokens")
    parse = getattr(getattr(client, "responses", None), "parse", None)
    if parse is not None:
        outcomes = []
        for seed in seeds:
            response = parse(model=args.model, input="Is the sky blue? Answer in JSON.", text_format=Verdict,
                             temperature=1.0, max_output_tokens=args.max_tokens)
            outcomes.append(response.status)
            if response.status == "completed" and not isinstance(response.output_parsed, Verdict):
                failures.append(f"responses.parse Verdict: {response.output_parsed!r}")
        if "completed" not in outcomes:
            failures.append(f"responses.parse: no answer completed ({outcomes})")
        elif not failures:
            print(f"ok   openai responses.parse (text.format json_schema) with a pydantic model: {outcomes}")
    return failures


def check_cli(args):
    if not args.binary:
        return []
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
              "when": {"type": "string", "format": "date"}, "id": {"type": "string", "format": "uuid"}},
              "required": ["city", "when", "id"], "additionalProperties": False}
    with open("/tmp/hearth-structured-cli-schema.json", "w") as handle:
        json.dump(schema, handle)
    run = subprocess.run([args.binary, "generate", "--model", args.model_path, "--prompt", "A trip, as JSON.",
                          "--json-schema-file", "/tmp/hearth-structured-cli-schema.json", "--temperature", "1.0", "--seed", "7",
                          "--max-tokens", str(args.max_tokens)], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        return [f"hearth generate --json-schema-file exited {run.returncode}: {run.stderr[-500:]}"]
    try:
        problems = list(validator(schema).iter_errors(json.loads(run.stdout)))
    except json.JSONDecodeError as error:
        problems = [f"not JSON: {error}"]
    if problems:
        return [f"hearth generate --json-schema: {problems[0]} — {run.stdout[:300]!r}"]
    print(f"ok   hearth generate --json-schema: {run.stdout.strip()}")
    return []


def load_corpus(directory):
    schemas = {}
    for path in sorted(pathlib.Path(directory).glob("*.json")):
        document = json.loads(path.read_text())
        schema = document["schema"] if isinstance(document, dict) and "schema" in document and "type" not in document else document
        schemas[path] = (schema, validator(schema))
    return schemas


def judge(outcome, checker):
    """'valid', 'invalid: …', 'cut' or 'error: …' for one answer."""
    if outcome["status"] != 200:
        return f"error: HTTP {outcome['status']} {outcome['error']}"
    if outcome["finish"] == "length":
        return "cut"
    try:
        value = json.loads(outcome["text"])
    except json.JSONDecodeError as error:
        return f"invalid: not JSON: {error}"
    problems = sorted(checker.iter_errors(value), key=lambda e: list(e.path))
    return f"invalid: {problems[0].message[:200]}" if problems else "valid"


def budget_matrix(args):
    schemas = load_corpus(args.schemas)
    failures = []
    rows = []
    for max_tokens in [int(t) for t in args.budget_matrix.split(",")]:
        # A baseline for "the same with and without the rule": one setting run twice — how often a
        # request differs from itself (the later run finds the prompt in the prompt cache and
        # reads it through another path, and batches differently: runs part at near-ties).
        rules = (True, False, "again")
        jobs = [(path, seed, rule) for path in schemas for seed in range(1, args.seeds + 1) for rule in rules]
        answers = {}
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
            again_rule = args.budget_baseline == "on"
            futures = {pool.submit(sample, args.base, args.key, args.model, path, schemas[path][0], seed, max_tokens,
                                   again_rule if rule == "again" else rule):
                       (path, seed, rule) for path, seed, rule in jobs}
            for future in concurrent.futures.as_completed(futures):
                answers[futures[future]] = future.result()
        elapsed = time.monotonic() - started
        counts = {True: {}, False: {}, "again": {}}
        same = differ_shaped = differ_unshaped = ended_alone = shaped_answers = 0
        off_twice = off_twice_differ = 0
        for (path, seed, rule), outcome in sorted(answers.items(), key=lambda kv: (kv[0][0].name, kv[0][1], str(kv[0][2]))):
            verdict = judge(outcome, schemas[path][1])
            kind = verdict.split(":")[0]
            counts[rule][kind] = counts[rule].get(kind, 0) + 1
            if rule is True and kind != "valid":
                failures.append(f"max_tokens {max_tokens} {path.name} seed {seed} (rule on): {verdict} — {outcome.get('text', '')[:200]!r}")
            if rule is True and outcome.get("shaped"):
                shaped_answers += 1
        for path in schemas:
            for seed in range(1, args.seeds + 1):
                with_rule, without = answers[(path, seed, True)], answers[(path, seed, False)]
                again = answers[(path, seed, "again")]
                first = with_rule if args.budget_baseline == "on" else without
                if without["status"] == 200 and again["status"] == 200 and first["status"] == 200 and without["finish"] == "stop":
                    off_twice += 1
                    off_twice_differ += first["text"] != again["text"]
                if without["status"] != 200 or without["finish"] != "stop" or with_rule["status"] != 200:
                    continue
                ended_alone += 1
                if with_rule["text"] == without["text"]:
                    same += 1
                elif with_rule.get("shaped"):
                    differ_shaped += 1
                    failures.append(f"max_tokens {max_tokens} {path.name} seed {seed}: the rule shaped "
                                    f"{with_rule['shaped']} tokens of an answer that ended on its own without it")
                else:
                    differ_unshaped += 1
        row = {"max_tokens": max_tokens, "with_rule": counts[True], "without_rule": counts[False],
               "ended_on_their_own_without": ended_alone, "same_with_rule": same,
               "differ_where_the_rule_shaped": differ_shaped, "differ_without_shaping": differ_unshaped,
               "answers_the_rule_shaped": shaped_answers, "baseline": args.budget_baseline, "baseline_pairs": off_twice, "baseline_differ": off_twice_differ,
               "baseline_again": counts["again"], "seconds": round(elapsed, 1)}
        rows.append(row)
        print(f"max_tokens {max_tokens}: rule on {counts[True]}, rule off {counts[False]}; of {ended_alone} answers that ended "
              f"on their own without the rule, {same} the same with it, {differ_shaped} changed by the rule, "
              f"{differ_unshaped} differing without the rule shaping a token (the rule {args.budget_baseline} twice: "
              f"{off_twice_differ} of {off_twice} differ from themselves); the rule shaped {shaped_answers} answers "
              f"({elapsed:.0f} s)", flush=True)
    return rows, failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("key")
    parser.add_argument("model")
    parser.add_argument("--schemas", default="Tests/Fixtures/schemas")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=768)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--binary", default="")
    parser.add_argument("--model-path", default="")
    parser.add_argument("--report", default="")
    parser.add_argument("--multiple-samples", type=int, default=200,
                        help="answers per multipleOf schema (0: skip that check)")
    parser.add_argument("--budget-baseline", choices=["on", "off"], default="off",
                        help="with --budget-matrix: which setting runs twice as the baseline of self-difference")
    parser.add_argument("--budget-matrix", default="",
                        help="comma-separated max_tokens: the corpus with the budget rule on and off at each (instead of the checks)")
    args = parser.parse_args()

    if args.budget_matrix:
        rows, failures = budget_matrix(args)
        if args.report:
            with open(args.report, "w") as handle:
                json.dump({"seeds": args.seeds, "rows": rows}, handle, indent=1)
        for failure in failures:
            print("FAIL " + failure)
        sys.exit(1 if failures else 0)

    total, failures, results, elapsed = check_corpus(args)
    failures += check_openai_parse(args)
    failures += check_cli(args)
    if args.multiple_samples:
        failures += check_multiples(args)
    if args.report:
        with open(args.report, "w") as handle:
            json.dump({"total": total, "seconds": elapsed, "seeds": args.seeds, "max_tokens": args.max_tokens,
                       "schemas": {p.name: r for p, r in results.items()}}, handle, indent=1)
    if failures or total["invalid"] or total["errors"]:
        print(f"FAIL {len(failures)} problems", file=sys.stderr)
        sys.exit(1)
    print("all structured-output checks passed")


if __name__ == "__main__":
    main()
