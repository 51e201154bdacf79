"""`hearth serve --mcp` read by the official openai client (scripts/check-mcp.sh's serve part).

The server runs the check's mcpServers file (check: scripts/mcp_check_server.py over stdio with a
secret env value; time: mcp-server-time; web: the same check server over streamable HTTP with a
secret header). Each call is forced with tool_choice {"type": "mcp", "server_label", "name"} so
the check does not rest on the tiny default model's judgement (serve runs with
--max-tool-rounds 1: after the call the model must answer).

Checks: a whole response has an mcp_list_tools item (allowed_tools kept one tool), an mcp_call
with the tool's output and an answer; the approval flow (an mcp_approval_request, answered by an
mcp_approval_response on the next request, then the call runs); a streamed response with the
failing tool (its error in mcp_call.error, the mcp events in order); a call over streamable HTTP
(the secret header reached the server); a label not in the file and a foreign server_url are
400s (openai.BadRequestError); the secret never appears in a response.

Usage: python scripts/check_mcp_serve.py BASE_URL MODEL   (HEARTH_CHECK_SECRET in the environment)
"""

import json
import os
import sys
import time

import openai

base, model = sys.argv[1], sys.argv[2]
secret = os.environ["HEARTH_CHECK_SECRET"]
client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0, timeout=120)
passed = 0
seen = []  # every response, to look for the secret


def ok(what, started):
    global passed
    passed += 1
    print(f"ok {what} ({time.time() - started:.1f} s)", flush=True)


def fail(what, response=None):
    print(f"FAIL {what}", file=sys.stderr)
    if response is not None:
        print(json.dumps(response.model_dump(), indent=1)[:4000], file=sys.stderr)
    sys.exit(1)


def mcp_tool(label, **extra):
    return {"type": "mcp", "server_label": label, **extra}


def forced(label, name):
    return {"type": "mcp", "server_label": label, "name": name}


def items(response, kind):
    return [item for item in response.output if item.type == kind]


def create(**fields):
    response = client.responses.create(model=model, temperature=0, max_output_tokens=80, **fields)
    seen.append(response.model_dump_json())
    return response


trip = "Plan a day in Oslo: the museum, then the fjord."

# 1. A whole response: the tools listed (allowed_tools kept plan_trip), the call, its output, an answer.
started = time.time()
r = create(
    input=trip,
    tools=[mcp_tool("check", require_approval="never", allowed_tools=["plan_trip"])],
    tool_choice=forced("check", "plan_trip"),
)
listed = items(r, "mcp_list_tools")
if len(listed) != 1 or listed[0].server_label != "check" or [t.name for t in listed[0].tools] != ["plan_trip"]:
    fail("mcp_list_tools should list check's plan_trip alone (allowed_tools)", r)
calls = items(r, "mcp_call")
if len(calls) != 1 or calls[0].name != "plan_trip" or "TRIP-PLANNED" not in (calls[0].output or "") or calls[0].error:
    fail("an mcp_call to plan_trip with its output", r)
messages = items(r, "message")
if r.status != "completed" or not messages or r.output[-1].type != "message":
    fail("an answer after the call", r)
ok(f"mcp_list_tools, mcp_call ({calls[0].output!r}) and an answer ({len(r.output_text)} characters)", started)

# 2. Approval: the default require_approval ("always") stops at an approval request; answering
#    it on the next request (the whole input sent back) runs the call.
started = time.time()
tools = [mcp_tool("check", allowed_tools={"tool_names": ["plan_trip"]})]
first = create(input=trip, tools=tools, tool_choice=forced("check", "plan_trip"))
requests = items(first, "mcp_approval_request")
if len(requests) != 1 or requests[0].name != "plan_trip" or items(first, "mcp_call"):
    fail("an mcp_approval_request and no call before approval", first)
history = [{"role": "user", "content": trip}] + [item.model_dump(exclude_none=True) for item in first.output]
history.append({"type": "mcp_approval_response", "approval_request_id": requests[0].id, "approve": True})
second = create(input=history, tools=tools, tool_choice=forced("check", "plan_trip"))
calls = items(second, "mcp_call")
if len(calls) != 1 or calls[0].approval_request_id != requests[0].id or "TRIP-PLANNED" not in (calls[0].output or ""):
    fail("the approved call ran, naming its approval request", second)
if items(second, "mcp_list_tools") or second.output[-1].type != "message":
    fail("tools already listed in the input are not listed again; an answer follows", second)
ok("approval: mcp_approval_request, then mcp_approval_response → the call ran and the model answered", started)

# 3. Streamed, with the failing tool: its error in mcp_call.error, the events in order.
started = time.time()
events = []
final = None
with client.responses.stream(
    model=model, temperature=0, max_output_tokens=60, input="Try the failing tool.",
    tools=[mcp_tool("check", require_approval={"never": {"tool_names": ["always_fails"]}})],
    tool_choice=forced("check", "always_fails"),
) as stream:
    for event in stream:
        events.append(event.type)
    final = stream.get_final_response()
seen.append(final.model_dump_json())
wanted = [
    "response.created", "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed",
    "response.mcp_call_arguments.done", "response.mcp_call.in_progress", "response.mcp_call.failed",
    "response.output_text.done", "response.completed",
]
positions = [events.index(kind) if kind in events else -1 for kind in wanted]
if -1 in positions or positions != sorted(positions):
    fail(f"streamed events out of order or missing: {events}")
calls = items(final, "mcp_call")
error = calls[0].error if calls else None
if not calls or calls[0].status != "failed" or "failed on purpose" not in json.dumps(error.model_dump() if error else None):
    fail("the failing tool's error in mcp_call.error", final)
ok(f"streamed: {len(events)} events, the failing tool's error in mcp_call.error", started)

# 4. Over streamable HTTP: the server got the secret header (it answers 401 without it).
started = time.time()
r = create(input=trip, tools=[mcp_tool("web", require_approval="never")], tool_choice=forced("web", "plan_trip"))
calls = items(r, "mcp_call")
if items(r, "mcp_list_tools")[0].error or len(calls) != 1 or "TRIP-PLANNED" not in (calls[0].output or ""):
    fail("a call over streamable HTTP", r)
ok("a call over streamable HTTP with the file's secret header", started)

# 5. What the file does not list is a 400: a label, a URL.
started = time.time()
for tool, param in [
    (mcp_tool("elsewhere"), "tools[0].server_label"),
    (mcp_tool("check", server_url="https://mcp.example.com/mcp"), "tools[0].server_url"),
    (mcp_tool("check", headers={"Authorization": "Bearer mine"}), "tools[0].headers"),
]:
    try:
        create(input="hi", tools=[tool])
        fail(f"{tool} was accepted")
    except openai.BadRequestError as error:
        if error.body is None or error.body.get("param") != param:
            fail(f"the 400 should name {param}: {error.body}")
ok("a label not in the file, a foreign server_url and request headers are 400s naming the field", started)

if any(secret in text for text in seen):
    fail("the secret reached a response")
ok("the secret appears in no response", time.time())
print(f"check_mcp_serve: {passed} passed, 0 failed")
