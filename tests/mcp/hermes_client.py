"""Drives a hermetic MCP server with the Hermes agent's own MCP client.

Usage (with the venv .ci/run makes: hermes-agent[mcp]==0.19.0, which pins mcp 1.26.0):
    hermes_client.py --url URL [--token TOKEN] --call NAME=JSON [--call NAME=JSON]...

The server is connected the way Hermes connects a configured one
(`tools.mcp_tool.register_mcp_servers`) and each call goes through Hermes's tool
registry (`tools.registry.registry.dispatch`), so elicitations reach Hermes's own
`ElicitationHandler` and its approval prompt (`tools.approval.prompt_dangerous_approval`,
the CLI path). The user is this process's stdin: the Rust test writes the keys a person
would type at that prompt (`o` for once, `d` for deny). `input` is only watched, to
count the prompts shown. The last stdout line is a JSON report:
    {"calls": [{"name", "result", "prompts"}], "prompts": N}
where each `result` is the JSON string Hermes hands its model, parsed. `--token` goes
in the server's `headers`, as a Hermes user configures a server that needs one.
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import sys
import tempfile
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", help="bearer token the server requires")
    parser.add_argument("--call", action="append", default=[], help="NAME=JSON (repeatable)")
    args = parser.parse_args()

    # Hermes keeps config and state under HERMES_HOME; never the user's own.
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-home-")

    from tools import mcp_tool
    from tools.registry import registry

    prompts: list[str] = []
    typed = builtins.input

    def watched_input(prompt: str = "") -> str:
        prompts.append(prompt)
        return typed(prompt)

    builtins.input = watched_input

    server: dict[str, Any] = {"url": args.url}
    if args.token:
        server["headers"] = {"Authorization": f"Bearer {args.token}"}
    registered = mcp_tool.register_mcp_servers({"hermetic": server})
    calls: list[dict[str, Any]] = []
    try:
        for spec in args.call:
            name, _, raw = spec.partition("=")
            tool = mcp_tool.mcp_prefixed_tool_name("hermetic", name)
            if tool not in registered:
                raise SystemExit(f"Hermes did not register {tool}: {registered}")
            before = len(prompts)
            out = registry.dispatch(tool, json.loads(raw) if raw else {})
            calls.append({"name": name, "result": parse(out), "prompts": len(prompts) - before})
    finally:
        mcp_tool.shutdown_mcp_servers()
    print(flush=True)
    print(json.dumps({"calls": calls, "prompts": len(prompts)}), flush=True)


def parse(out: Any) -> Any:
    """Hermes's result string, parsed; a nested JSON text (an error's message, a
    result's text) parsed too, so tests read hermetic's own JSON."""
    value = json.loads(out) if isinstance(out, str) else out
    if isinstance(value, dict):
        for key in ("error", "result"):
            inner = value.get(key)
            if isinstance(inner, str):
                try:
                    value[key] = json.loads(inner)
                except ValueError:
                    pass
    return value


if __name__ == "__main__":
    sys.exit(main())
