"""A client of `git neo mcp` built on the official MCP Python SDK, run by tests/it/mcp.rs.

    python3 mcp_client.py stdio GIT_NEO_BINARY
    python3 mcp_client.py http URL TOKEN

It lists the tools, calls every one of them with valid arguments (the SDK checks each result's
structuredContent against the tool's outputSchema), checks that `k: 0` is refused naming `k`,
and over HTTP that a request without the token is refused. It prints one JSON line with what
it saw, and exits non-zero on the first thing that is wrong.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def fail(message):
    print(json.dumps({"ok": False, "error": message}))
    sys.exit(1)


def structured(result, tool):
    if result.is_error:
        fail(f"{tool} failed: {result.content[0].text if result.content else result}")
    if not isinstance(result.structured_content, dict):
        fail(f"{tool} answered no structured content")
    return result.structured_content


async def exercise(session):
    await session.initialize()
    listed = await session.list_tools()
    names = [t.name for t in listed.tools]
    for t in listed.tools:
        if not t.output_schema:
            fail(f"{t.name} lists no outputSchema")
    called = []

    async def call(tool, args):
        result = await session.call_tool(tool, args)
        called.append(tool)
        return structured(result, tool)

    fact = await call("add_fact", {"type": "decision", "subject": "Releases are cut on Tuesdays", "tags": ["release"]})
    attempt = await call(
        "record_attempt",
        {"task": "REL-1", "action": "moved the cut", "observation": "nobody noticed",
         "check_command": "make release", "check_result": "passed"},
    )
    recalled = await call("recall", {"query": "when are releases cut", "k": 3})
    if not any(f["id"] == fact["id"] for f in recalled["facts"]):
        fail(f"recall did not return the fact just added: {recalled}")
    shown = await call("show", {"id": fact["id"][:10]})
    if shown["status"] != "valid":
        fail(f"show: {shown}")
    history = await call("task_history", {"task": "REL-1"})
    if history["total"] != 1:
        fail(f"task_history: {history}")
    hits = await call("construct_search", {"query": "bisect to find the regression", "k": 2})
    if not hits["hits"]:
        fail("construct_search found nothing")
    await call("mark_outdated", {"id": attempt["id"][:10], "reason": "the cut moved back"})
    await call("confirm", {"id": fact["id"][:10], "reason": "checked with the release manager"})
    await call("forget", {"id": fact["id"][:10], "reason": "wrong team"})
    await call("refresh", {})
    proposed = await call("lessons", {"action": "propose", "text": "Cut releases on Tuesdays", "dry_run": True})
    if not proposed.get("dry_run"):
        fail(f"lessons propose dry run: {proposed}")
    listed_lessons = await call("lessons", {"action": "list"})
    if listed_lessons.get("action") != "listed":
        fail(f"lessons list: {listed_lessons}")
    if sorted(set(called)) != sorted(names):
        fail(f"called {sorted(called)}, listed {sorted(names)}")

    refused = await session.call_tool("recall", {"query": "anything", "k": 0})
    text = refused.content[0].text if refused.content else ""
    if not refused.is_error or "k:" not in text:
        fail(f"k: 0 was not refused naming k: {text!r}")
    return {"tools": names, "called": len(set(called)), "k0": text}


async def over_stdio(binary):
    # The server runs with this process's environment (the test's hermetic one), in its directory.
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ), cwd=os.getcwd())
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session)


async def over_http(url, token):
    # Without the token: refused before any MCP message is read.
    async with create_mcp_http_client() as bare:
        r = await bare.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                            headers={"Accept": "application/json, text/event-stream"})
        if r.status_code != 401:
            fail(f"a request without the token got {r.status_code}, not 401")
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                seen = await exercise(session)
    seen["unauthorized"] = 401
    return seen


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "stdio" and len(sys.argv) == 3:
        seen = asyncio.run(over_stdio(sys.argv[2]))
    elif mode == "http" and len(sys.argv) == 4:
        seen = asyncio.run(over_http(sys.argv[2], sys.argv[3]))
    else:
        fail(__doc__)
    print(json.dumps({"ok": True, **seen}))


if __name__ == "__main__":
    main()
