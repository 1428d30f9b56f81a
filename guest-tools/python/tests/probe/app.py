"""py_probe: a hostile test tool (one component, so the tests compile Python once).

modes: alloc (until the memory cap stops it), spin (forever; the deadline stops it),
socket (connect to 127.0.0.1:`port`; the host denies it), fetch (GET `url` with the
http helper), echo (args and ctx), env (environment keys), progress (log + progress),
wasi (clock, random), raise (an unexpected exception).
"""

import os
import random
import socket  # at the top: a module first imported during a call is not found
import time

from hermetic_tool import Tool, ToolError, http, log, progress


class Probe(Tool):
    SCHEMA = {
        "name": "py_probe",
        "description": "Sandbox probe (tests only)",
        "parameters": {
            "type": "object",
            "properties": {
                "mode": {"type": "string",
                         "enum": ["alloc", "spin", "socket", "fetch", "echo", "env",
                                  "progress", "wasi", "raise"]},
                "port": {"type": "integer"},
                "url": {"type": "string"},
            },
            "required": ["mode"],
        },
    }

    def handle(self, args, ctx):
        mode = args.get("mode")
        if mode == "alloc":
            hoard = []
            while True:
                hoard.append(bytearray(1 << 20))  # 1 MiB at a time, touched (zeroed)
        if mode == "spin":
            n = 0
            while True:
                n += 1
        if mode == "socket":
            port = int(args.get("port", 1))
            errors = []
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2)
                errors.append("create_connection: connected")
            except Exception as e:  # noqa: BLE001 - the text is the result
                errors.append(f"create_connection: {type(e).__name__}: {e}")
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.connect(("127.0.0.1", port))
                errors.append("socket.connect: connected")
            except Exception as e:  # noqa: BLE001
                errors.append(f"socket.connect: {type(e).__name__}: {e}")
            raise ToolError("socket: " + "; ".join(errors))
        if mode == "fetch":
            r = http.get(args.get("url", ""), max_bytes=1 << 20)
            return {"status": r.status, "body": r.text}
        if mode == "echo":
            return {"args": args, "call_id": ctx.call_id, "tenant": ctx.tenant,
                    "session": ctx.session}
        if mode == "env":
            return {"keys": sorted(os.environ)}
        if mode == "progress":
            log("info", f"py_probe progress {ctx.call_id}")
            for i in range(3):
                progress(i + 1, 3, f"step {i + 1}")
            ctx.progress(3, None, "done")
            return {"steps": 3}
        if mode == "wasi":
            return {"time": time.time(), "monotonic": time.monotonic(),
                    "random": random.random(), "urandom": len(os.urandom(16)),
                    "cwd_exists": os.path.isdir(".")}
        if mode == "raise":
            return {}["no such key"]
        raise ToolError(f"unknown mode {mode!r}")
