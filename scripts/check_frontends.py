"""Structured-output front ends against `hearth serve` (issue 59): instructor in its JSON-schema
and tools modes, LangChain's `with_structured_output` (json_schema and function_calling) and the
openai client's `chat.completions.parse`, each asked for a pydantic `Person` (a nested address,
bounded strings, an enum, a pattern) at `max_tokens` 200 and temperature 1 over N seeds. Every
answer must parse into the model: none cut at `max_tokens` (finish-in-budget completes it) and
none invalid. Run by scripts/check-structured.sh in its own pinned venv
(scripts/requirements-frontends.txt: instructor needs an older openai than the other checks).

    python scripts/check_frontends.py BASE KEY MODEL [--seeds 20] [--max-tokens 200] [--parallel 4]
"""
import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import List, Literal, Optional

import instructor
from langchain_openai import ChatOpenAI
from openai import OpenAI
from pydantic import BaseModel, Field

PROMPT = "Invent a person who lives in a city. Answer in JSON."


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


def front_ends(base, key, model, max_tokens):
    """(name, ask(seed) -> Person) for each front end."""
    client = OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=600)
    messages = [{"role": "user", "content": PROMPT}]

    def via_instructor(mode):
        patched = instructor.from_openai(client, mode=mode)
        return lambda seed: patched.chat.completions.create(
            model=model, messages=messages, response_model=Person, max_retries=0,
            max_tokens=max_tokens, temperature=1.0, seed=seed)

    def via_langchain(method):
        def ask(seed):
            chat = ChatOpenAI(base_url=base + "/v1", api_key=key, model=model, temperature=1.0, max_tokens=max_tokens,
                              seed=seed, max_retries=0, timeout=600)
            return chat.with_structured_output(Person, method=method).invoke(PROMPT)
        return ask

    def via_parse(seed):
        completion = client.chat.completions.parse(
            model=model, messages=messages, response_format=Person, max_tokens=max_tokens, temperature=1.0, seed=seed)
        return completion.choices[0].message.parsed

    return [
        ("instructor JSON_SCHEMA", via_instructor(instructor.Mode.JSON_SCHEMA)),
        ("instructor TOOLS", via_instructor(instructor.Mode.TOOLS)),
        ("langchain with_structured_output json_schema", via_langchain("json_schema")),
        ("langchain with_structured_output function_calling", via_langchain("function_calling")),
        ("openai chat.completions.parse", via_parse),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("key")
    parser.add_argument("model")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    started = time.monotonic()
    failed = 0
    for name, ask in front_ends(args.base, args.key, args.model, args.max_tokens):
        def one(seed):
            try:
                value = ask(seed)
                return None if isinstance(value, Person) else f"seed {seed}: got {value!r}"
            except Exception as error:  # a cut answer raises in every front end; so does an invalid one
                return f"seed {seed}: {type(error).__name__}: {str(error)[:300]}"
        t = time.monotonic()
        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            problems = [p for p in pool.map(one, range(1, args.seeds + 1)) if p]
        parsed = args.seeds - len(problems)
        status = "ok  " if not problems else "FAIL"
        print(f"{status} {name}: {parsed}/{args.seeds} parsed into Person at max_tokens {args.max_tokens} "
              f"({time.monotonic() - t:.1f} s)")
        for problem in problems[:5]:
            print(f"       {problem}")
        failed += len(problems)
    print(f"front ends: {'all parsed' if not failed else f'{failed} failed'} in {time.monotonic() - started:.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
