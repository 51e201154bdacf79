"""A stdio (or streamable-HTTP) MCP server for scripts/check-mcp.sh, written with the official
`mcp` Python SDK (pinned in scripts/requirements-mcp.txt).

Tools:
  plan_trip     a nested schema (an object holding an array of objects); answers in text and
                structured content
  always_fails  raises, so the result carries isError
  slow_echo     sleeps 30 s (MCP_CHECK_SLOW_SECONDS) before answering: past hearth's timeout
It also lists one resource and one prompt, so `/mcp` has something to show for them.

Over HTTP every request must carry `Authorization: Bearer $HEARTH_CHECK_SECRET` (the header the
check's mcpServers file sets), else 401: a header that did not reach the server fails the check.

Usage: python scripts/mcp_check_server.py [--http PORT]
"""

import argparse
import asyncio
import os

from pydantic import BaseModel, Field

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer(name="hearth-check", version="1.0.0")


class Stop(BaseModel):
    name: str = Field(description="a place to visit")
    hours: int = Field(description="hours spent there", ge=1, le=12)


class Trip(BaseModel):
    city: str = Field(description="the city")
    stops: list[Stop] = Field(description="places in order", min_length=1, max_length=3)


@server.tool(description="Plan a trip: a city and the stops in it, each with the hours spent.")
def plan_trip(trip: Trip) -> str:
    total = sum(stop.hours for stop in trip.stops)
    return f"TRIP-PLANNED: {len(trip.stops)} stops in {trip.city}, {total} hours in all"


@server.tool(description="A tool that always fails (for the check).")
def always_fails(reason: str) -> str:
    raise ToolError(f"always_fails failed on purpose: {reason}")


@server.tool(description="Echoes `text`, slowly.")
async def slow_echo(text: str) -> str:
    # Longer than hearth's --mcp-timeout in the check, whatever the model writes.
    seconds = float(os.environ.get("MCP_CHECK_SLOW_SECONDS", "30"))
    await asyncio.sleep(seconds)
    return f"echo after {seconds} s: {text}"


@server.resource("check://readme", description="What this server is for.")
def readme() -> str:
    return "A server for hearth's MCP check."


@server.prompt(description="Ask for a trip plan.")
def trip_prompt(city: str) -> str:
    return f"Plan a day in {city}."


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio")
    options = parser.parse_args()
    if os.environ.get("HEARTH_CHECK_SECRET") is None:
        raise SystemExit("HEARTH_CHECK_SECRET is not set: the config's env did not reach the server")
    if options.http:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        wanted = f"Bearer {os.environ['HEARTH_CHECK_SECRET']}".encode()

        async def require_secret(scope, receive, send):
            # The config's secret header must reach the server on every request: without it, 401
            # (hearth then reports the server as failed, and the check sees it).
            if scope["type"] == "http" and dict(scope.get("headers", [])).get(b"authorization") != wanted:
                print("refused a request without the secret header", flush=True)
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"the Authorization header is missing or wrong"})
                return
            await app(scope, receive, send)

        uvicorn.run(require_secret, host="127.0.0.1", port=options.http, log_level="info")
    else:
        server.run()
