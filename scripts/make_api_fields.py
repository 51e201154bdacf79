#!/usr/bin/env python3
"""Writes Tests/Fixtures/api-fields.json: the request fields each official API defines for the
endpoints `hearth serve` answers, and the usage fields its answers carry, read from the current
official Python SDKs (their request parameter TypedDicts and their usage models, which are
generated from the APIs' OpenAPI specs). `AcceptedFieldsTests` checks the server's field tables
(`AcceptedFields`, docs/SERVER.md "Request fields") and its usage objects against this file.

Run it in a venv with the SDKs (the versions land in the fixture):

    python3 -m venv /tmp/sdkvenv && /tmp/sdkvenv/bin/pip install openai anthropic
    /tmp/sdkvenv/bin/python scripts/make_api_fields.py

A parameter the SDK sends as an HTTP header rather than in the body (Anthropic's `betas`,
`user_profile_id`, `workspace_id`) is listed under `headers`, not `fields`: it is found in the
SDK's own request code, on the lines that build the request headers.
"""
import importlib
import importlib.metadata
import inspect
import json
import re
import sys
import typing
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "Tests" / "Fixtures" / "api-fields.json"

# endpoint: (TypedDict classes "module:Class" whose keys are the body, SDK methods that send it).
# A streaming/non-streaming pair adds `stream`; Anthropic's beta params (what Claude Code sends,
# to /v1/messages?beta=true) are part of the same endpoint.
ENDPOINTS = {
    "/v1/chat/completions": (
        ["openai.types.chat.completion_create_params:CompletionCreateParamsNonStreaming",
         "openai.types.chat.completion_create_params:CompletionCreateParamsStreaming"],
        ["openai.resources.chat.completions.completions:Completions.create"],
    ),
    "/v1/chat/completions messages[]": (
        ["openai.types.chat.chat_completion_system_message_param:ChatCompletionSystemMessageParam",
         "openai.types.chat.chat_completion_developer_message_param:ChatCompletionDeveloperMessageParam",
         "openai.types.chat.chat_completion_user_message_param:ChatCompletionUserMessageParam",
         "openai.types.chat.chat_completion_assistant_message_param:ChatCompletionAssistantMessageParam",
         "openai.types.chat.chat_completion_tool_message_param:ChatCompletionToolMessageParam",
         "openai.types.chat.chat_completion_function_message_param:ChatCompletionFunctionMessageParam"],
        [],
    ),
    "/v1/completions": (
        ["openai.types.completion_create_params:CompletionCreateParamsNonStreaming",
         "openai.types.completion_create_params:CompletionCreateParamsStreaming"],
        ["openai.resources.completions:Completions.create"],
    ),
    "/v1/responses": (
        ["openai.types.responses.response_create_params:ResponseCreateParamsNonStreaming",
         "openai.types.responses.response_create_params:ResponseCreateParamsStreaming"],
        ["openai.resources.responses.responses:Responses.create"],
    ),
    "/v1/embeddings": (
        ["openai.types.embedding_create_params:EmbeddingCreateParams"],
        ["openai.resources.embeddings:Embeddings.create"],
    ),
    "/v1/messages": (
        ["anthropic.types.message_create_params:MessageCreateParamsNonStreaming",
         "anthropic.types.message_create_params:MessageCreateParamsStreaming",
         "anthropic.types.beta.message_create_params:MessageCreateParamsNonStreaming",
         "anthropic.types.beta.message_create_params:MessageCreateParamsStreaming"],
        ["anthropic.resources.messages.messages:Messages.create",
         "anthropic.resources.beta.messages.messages:Messages.create"],
    ),
    "/v1/messages/count_tokens": (
        ["anthropic.types.message_count_tokens_params:MessageCountTokensParams",
         "anthropic.types.beta.message_count_tokens_params:MessageCountTokensParams"],
        ["anthropic.resources.messages.messages:Messages.count_tokens",
         "anthropic.resources.beta.messages.messages:Messages.count_tokens"],
    ),
}

# The usage object of each answer: the SDK's model, walked into its nested models.
USAGE = {
    "openai chat.completion usage": "openai.types.completion_usage:CompletionUsage",
    "openai text_completion usage": "openai.types.completion_usage:CompletionUsage",
    "openai response usage": "openai.types.responses.response_usage:ResponseUsage",
    "anthropic message usage": "anthropic.types.usage:Usage",
    "anthropic message_delta usage": "anthropic.types.message_delta_usage:MessageDeltaUsage",
}


def resolve(spec):
    module, _, name = spec.partition(":")
    value = importlib.import_module(module)
    for part in name.split("."):
        value = getattr(value, part)
    return value


def typed_dict_keys(cls):
    """Every key of a TypedDict, its bases' included (annotations, so `Required[...]` under
    `from __future__ import annotations` does not hide a key)."""
    keys = set()
    for klass in cls.__mro__:
        keys.update(getattr(klass, "__annotations__", {}))
    return keys


HEADER_LINE = re.compile(r'^\s*"[A-Za-z]+(?:-[A-Za-z]+)+"\s*:(.*)$')


def header_params(method, params):
    """Parameters of `method` that its code puts into request headers (`"anthropic-beta": …betas…`)."""
    source = inspect.getsource(inspect.unwrap(method))
    found = set()
    for line in source.splitlines():
        match = HEADER_LINE.match(line)
        if match:
            found.update(word for word in re.findall(r"[A-Za-z_]\w*", match.group(1)) if word in params)
    return found


def model_fields(cls):
    """A pydantic model's fields, nested models as objects of their own fields (None for a leaf)."""
    out = {}
    for name, field in cls.model_fields.items():
        nested = None
        for candidate in [field.annotation] + list(typing.get_args(field.annotation)):
            if inspect.isclass(candidate) and hasattr(candidate, "model_fields"):
                nested = model_fields(candidate)
        out[name] = nested
    return dict(sorted(out.items()))


def main():
    endpoints = {}
    for path, (classes, methods) in ENDPOINTS.items():
        keys = set()
        for spec in classes:
            keys |= typed_dict_keys(resolve(spec))
        headers = set()
        for spec in methods:
            headers |= header_params(resolve(spec), keys)
        endpoints[path] = {
            "from": classes,
            "fields": sorted(keys - headers),
            "headers": sorted(headers),
        }
    usage = {name: {"from": spec, "fields": model_fields(resolve(spec))} for name, spec in USAGE.items()}
    fixture = {
        "generated_by": "scripts/make_api_fields.py",
        "sdks": {name: importlib.metadata.version(name) for name in ("openai", "anthropic")},
        "endpoints": endpoints,
        "usage": usage,
    }
    OUT.write_text(json.dumps(fixture, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT}: "
          f"openai {fixture['sdks']['openai']}, anthropic {fixture['sdks']['anthropic']}")
    for path, entry in endpoints.items():
        print(f"  {path}: {len(entry['fields'])} fields" + (f", headers {entry['headers']}" if entry["headers"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
