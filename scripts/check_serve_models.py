"""Several models in one `hearth serve` through the official openai client (see check-serve-models.sh)."""
import re
import sys
import urllib.request

import openai

base = sys.argv[1]
client = openai.OpenAI(base_url=base, api_key="unused")
results = {"passed": 0, "failed": 0}
A, B, C = "phi3-mha", "llama-tiny", "gemma3-tiny"


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(("PASS " if condition else "FAIL ") + name + ("" if condition else f" {detail}"))


def loaded():
    """hearth_model_loaded per model, from /metrics."""
    text = urllib.request.urlopen(base[: -len("/v1")] + "/metrics").read().decode()
    return {m: v == "1" for m, v in re.findall(r'hearth_model_loaded\{model="([^"]+)"\} (\d)', text)}


def chat(model):
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hello"}], max_tokens=4, temperature=0)
    return reply


ids = sorted(m.id for m in client.models.list().data)
check("/v1/models lists the three models", ids == sorted([A, B, C]), str(ids))

first = chat(A)
check(f"{A} answers chat", first.model == A and first.choices[0].finish_reason in ("stop", "length"), str(first))
second = client.completions.create(model=B, prompt="Once upon a time", max_tokens=4, temperature=0)
check(f"{B} answers completions", second.model == B and len(second.choices) == 1, str(second))
state = loaded()
check("two models loaded, the third not yet", state.get(A) and state.get(B) and not state.get(C), str(state))

third = chat(C)
check(f"{C} answers chat", third.model == C, str(third))
state = loaded()
check(f"--max-loaded 2: {A}, the least recently used, was unloaded", not state.get(A) and state.get(B) and state.get(C), str(state))

again = chat(A)
check(f"{A} loads again and answers the same (greedy)", again.choices[0].message.content == first.choices[0].message.content,
      f"{again.choices[0].message.content!r} != {first.choices[0].message.content!r}")
state = loaded()
check(f"... and {B} made room", state.get(A) and not state.get(B) and state.get(C), str(state))

try:
    chat("no-such-model")
    check("an unknown model is a 404", False)
except openai.NotFoundError:
    check("an unknown model is a 404", True)

print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
