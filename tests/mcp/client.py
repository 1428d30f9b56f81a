"""Drives a hermetic MCP server with the official Python SDK (`mcp` on PyPI).

Usage:
    client.py SCENARIO MODE --url URL [--token TOKEN] [--call NAME=JSON]... [--elicit ANSWER]
    client.py SCENARIO MODE --stdio COMMAND [ARG...]

MODE is the SDK's connect mode: `legacy` (initialize handshake) or `auto` (2026-07-28
discovery, falling back to the handshake). Each scenario prints what it observed as one
JSON object on the last line of stdout; the Rust tests (host/cli/tests/mcp/) assert on it.
Lines before it (`READY`, `CHANGED ...`) hand control to the test harness.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


# HTTP statuses the transport saw (with --token), for scenarios about refusals: the
# SDK reports a refused request without its status.
STATUSES: list[int] = []


async def record_status(response: Any) -> None:
    STATUSES.append(response.status_code)


def connect(args: argparse.Namespace, **kwargs: Any) -> Client:
    if args.url and args.token:
        # A tenant's bearer token on every request of the transport.
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {args.token}"})
        http.event_hooks["response"].append(record_status)
        server: Any = streamable_http_client(args.url, http_client=http)
    elif args.url:
        server = args.url
    else:
        # The SDK gives a stdio server only a minimal environment; pass ours so the
        # server finds its compiled-code cache.
        server = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:], env=dict(os.environ))
    return Client(server, mode=args.mode, **kwargs)


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def outcome(result: types.CallToolResult) -> dict[str, Any]:
    return {"is_error": bool(result.is_error), "text": json.loads(text_of(result))}


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call: its `outcome`, or the JSON-RPC error it got instead (an unknown
    tool is a protocol error, as the MCP spec asks)."""
    try:
        return outcome(await client.call_tool(name, arguments))
    except MCPError as e:
        return {"protocol_error": {"code": e.code, "message": e.message}}


def emit(line: str) -> None:
    print(line, flush=True)


async def basic(args: argparse.Namespace) -> dict[str, Any]:
    """initialize, tools/list, a call, a tool error, an unknown tool, progress."""
    async with connect(args) as client:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        echo = await client.call_tool("echo", {"message": "hi", "times": 2})
        fail = await client.call_tool("fail", {"mode": "error", "message": "the disk is on fire"})
        unknown = await call(client, "no_such_tool", {})
        invalid = await client.call_tool("echo", {"times": 2})
        events: list[list[Any]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            events.append([progress, total, message])

        progress = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
        # The SDK checks structuredContent against the listed outputSchema itself.
        shaped = await client.call_tool("shaped", {"count": 3})
        broken = await client.call_tool("shaped", {"count": "three"})
        return {
            "protocol": client.session.protocol_version,
            "server": client.session.server_info.name if client.session.server_info else None,
            "tools": sorted(tools),
            "echo_schema": tools["echo"].input_schema,
            "echo_description": tools["echo"].description,
            "echo": outcome(echo),
            "fail": outcome(fail),
            "unknown": unknown,
            "invalid": outcome(invalid),
            "progress": {"result": outcome(progress), "events": events},
            "shaped_schema": tools["shaped"].output_schema,
            "echo_output_schema": tools["echo"].output_schema,
            "shaped": {"structured": shaped.structured_content, **outcome(shaped)},
            "broken": {"structured": broken.structured_content, **outcome(broken)},
        }


async def start_spin(client: Client, started: anyio.Event, scope: anyio.CancelScope) -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    with scope:
        await client.call_tool("spin_long", {}, progress_callback=on_progress)


async def cancel(args: argparse.Namespace) -> dict[str, Any]:
    """Starts spin_long, cancels it once it reports progress (so it is running), then
    shows the server still answers."""
    async with connect(args) as client:
        started = anyio.Event()
        scope = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(start_spin, client, started, scope)
            await started.wait()
            scope.cancel()
        after = await client.call_tool("echo", {"message": "still here"})
        return {"cancelled": scope.cancel_called, "after": outcome(after)}


async def abandon(args: argparse.Namespace) -> dict[str, Any]:
    """Starts spin_long and exits the process abruptly once it runs: the client goes
    away without a word."""
    async with connect(args) as client:
        started = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(start_spin, client, started, anyio.CancelScope())
            await started.wait()
            emit(json.dumps({"started": True}))
            os._exit(0)
    return {}


async def list_changed(args: argparse.Namespace) -> dict[str, Any]:
    """Lists, prints READY, waits for a tools/list_changed, lists again (CHANGED line),
    waits for a second one, lists again."""
    changed = anyio.Event()
    events = 0

    async def on_message(message: Any) -> None:
        nonlocal events
        if isinstance(message, types.ToolListChangedNotification):
            events += 1
            changed.set()

    async with connect(args, message_handler=on_message) as client:
        lists = [sorted(t.name for t in (await client.list_tools()).tools)]
        modern = client.session.protocol_version >= "2026-07-28"
        if modern:
            async with client.listen(tools_list_changed=True) as subscription:
                emit("READY")
                for step in range(2):
                    async for _event in subscription:
                        break
                    lists.append(sorted(t.name for t in (await client.list_tools()).tools))
                    if step == 0:
                        emit("CHANGED " + json.dumps(lists[-1]))
        else:
            emit("READY")
            for step in range(2):
                await changed.wait()
                changed = anyio.Event()
                lists.append(sorted(t.name for t in (await client.list_tools()).tools))
                if step == 0:
                    emit("CHANGED " + json.dumps(lists[-1]))
        return {"protocol": client.session.protocol_version, "lists": lists}


def calls_of(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """The `--call NAME=JSON` arguments (JSON defaults to {})."""
    out = []
    for spec in args.call or []:
        name, _, raw = spec.partition("=")
        out.append((name, json.loads(raw) if raw else {}))
    return out


async def tenant(args: argparse.Namespace) -> dict[str, Any]:
    """Lists the tools this token's tenant sees and makes each `--call`."""
    async with connect(args) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        calls = {}
        for name, arguments in calls_of(args):
            calls[name] = await call(client, name, arguments)
        return {"tools": tools, "calls": calls}


async def unauthorized(args: argparse.Namespace) -> dict[str, Any]:
    """Tries to list tools (with --token); reports whether it failed and the HTTP
    statuses the transport saw."""
    try:
        async with connect(args) as client:
            await client.list_tools()
    except Exception:  # noqa: BLE001 - the SDK wraps transport errors in groups
        return {"refused": True, "statuses": sorted(set(STATUSES))}
    return {"refused": False, "statuses": sorted(set(STATUSES))}


async def long_call(args: argparse.Namespace) -> dict[str, Any]:
    """Calls the `--call` tool with a progress callback, prints STARTED at the first
    progress report (the call is running), and reports the call's result."""
    [(name, arguments)] = calls_of(args)
    async with connect(args) as client:
        started = False

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal started
            if not started:
                started = True
                emit("STARTED")

        result = await client.call_tool(name, arguments, progress_callback=on_progress)
        return {"result": outcome(result)}


async def elicit(args: argparse.Namespace) -> dict[str, Any]:
    """Makes each `--call` while answering approval elicitations with `--elicit`:
    `once`, `session`, `always` or `deny` (accept with that answer), `empty` (accept
    with no content, as Hermes answers), or `decline` / `cancel` (the matching
    actions), after `--elicit-delay` seconds. Reports every elicitation seen, the
    results and the protocol. Both eras: MODE `legacy` gets server-to-client
    `elicitation/create` requests, MODE `auto` (2026-07-28) gets them inside
    `input_required` results, which the SDK answers by retrying the call — through
    the same callback."""
    seen: list[dict[str, Any]] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append({"message": params.message, "schema": getattr(params, "requested_schema", None)})
        if args.elicit_delay:
            await anyio.sleep(args.elicit_delay)
        if args.elicit in ("decline", "cancel"):
            return types.ElicitResult(action=args.elicit)
        if args.elicit == "empty":
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="accept", content={"answer": args.elicit})

    async with connect(args, elicitation_callback=on_elicit) as client:
        calls = {}
        for name, arguments in calls_of(args):
            calls[name] = await call(client, name, arguments)
        return {"elicitations": seen, "calls": calls, "protocol": client.session.protocol_version}


async def sequence(args: argparse.Namespace) -> dict[str, Any]:
    """Makes each `--call` in order on one connection, as an agent drives a background
    process: a `"$ID"` string in a call's arguments is the `session_id` (process id) the
    latest result before it returned. Reports every outcome, in order."""
    results: list[dict[str, Any]] = []
    process_id = None
    async with connect(args) as client:
        for name, arguments in calls_of(args):
            filled = {k: (process_id if v == "$ID" else v) for k, v in arguments.items()}
            result = await call(client, name, filled)
            text = result.get("text")
            if isinstance(text, dict) and isinstance(text.get("session_id"), str):
                process_id = text["session_id"]
            results.append(result)
        return {"calls": results, "protocol": client.session.protocol_version}


async def reuse(args: argparse.Namespace) -> dict[str, Any]:
    """Makes the first `--call` ten times, then the second once with a progress
    callback, on one connection pool; reports, for each tools/call POST, the response's
    content type and the client port of the connection it came on (one port: the
    connection was reused)."""
    [(name, arguments), (progress_name, progress_arguments)] = calls_of(args)
    posts: list[dict[str, Any]] = []

    async def observe(response: Any) -> None:
        try:
            method = json.loads(response.request.content).get("method")
        except (ValueError, AttributeError):
            method = None
        if response.request.method == "POST" and method == "tools/call":
            stream = response.extensions.get("network_stream")
            addr = stream.get_extra_info("client_addr") if stream is not None else None
            posts.append({
                "content_type": response.headers.get("content-type", "").split(";")[0],
                "port": addr[1] if addr else None,
            })

    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    http = create_mcp_http_client(headers=headers)
    http.event_hooks["response"].append(observe)
    async with Client(streamable_http_client(args.url, http_client=http), mode=args.mode) as client:
        results = [outcome(await client.call_tool(name, arguments)) for _ in range(10)]
        progress: list[float] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(done)

        with_progress = outcome(
            await client.call_tool(progress_name, progress_arguments, progress_callback=on_progress)
        )
        return {
            "results": results,
            "with_progress": with_progress,
            "progress_reports": len(progress),
            "posts": posts,
            "protocol": client.session.protocol_version,
        }


SCENARIOS = {
    "reuse": reuse,
    "basic": basic,
    "cancel": cancel,
    "abandon": abandon,
    "list_changed": list_changed,
    "tenant": tenant,
    "unauthorized": unauthorized,
    "long_call": long_call,
    "elicit": elicit,
    "sequence": sequence,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("mode", choices=["legacy", "auto"])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url")
    target.add_argument("--stdio", nargs=argparse.REMAINDER)
    parser.add_argument("--token", help="bearer token (HTTP)")
    parser.add_argument("--call", action="append", help="NAME=JSON arguments (repeatable)")
    parser.add_argument(
        "--elicit",
        choices=["once", "session", "always", "deny", "empty", "decline", "cancel"],
        default="deny",
        help="how the elicit scenario answers",
    )
    parser.add_argument("--elicit-delay", type=float, default=0.0, help="seconds before answering")
    args = parser.parse_args()
    report = anyio.run(SCENARIOS[args.scenario], args)
    emit(json.dumps(report))


if __name__ == "__main__":
    sys.exit(main())
