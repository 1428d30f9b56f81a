"""Write a hermetic tool in Python.

    from hermetic_tool import Tool, ToolError, log

    class Hello(Tool):
        SCHEMA = {"name": "hello", "description": "Greets someone",
                  "parameters": {"type": "object",
                                 "properties": {"name": {"type": "string"}}}}

        def handle(self, args, ctx):
            if args.get("name") == "fail":
                raise ToolError("asked to fail")
            log("info", f"call {ctx.call_id}")
            return {"greeting": f"Hello, {args.get('name', 'world')}!"}

Build it with `python -m hermetic_tool.build PROJECT_DIR -o OUT.wasm` (see the README).
The WIT bindings (`wit_world`) exist only inside the build, so they are imported
lazily: this module imports anywhere.
"""

__all__ = ["Tool", "ToolError", "Context", "log", "progress"]

LEVELS = ("trace", "debug", "info", "warn", "error")


class ToolError(Exception):
    """The tool's own error: its message is what the agent gets (as `[TOOL_ERROR] …`)."""

    def __init__(self, message: str):
        super().__init__(str(message))
        self.message = str(message)

    def __str__(self) -> str:
        return self.message


class Context:
    """Facts about the current call (`call_id`, `tenant`, `session`)."""

    __slots__ = ("call_id", "tenant", "session")

    def __init__(self, call_id: str = "", tenant: str = "", session: str = ""):
        self.call_id = call_id
        self.tenant = tenant
        self.session = session

    def progress(self, done: int, total=None, message: str = "") -> None:
        progress(done, total, message)

    def __repr__(self) -> str:
        return f"Context(call_id={self.call_id!r}, tenant={self.tenant!r}, session={self.session!r})"


class Tool:
    """Base class of a tool: set `SCHEMA`, implement `handle`, maybe `check`.

    `SCHEMA` is the OpenAI function schema as a dict: `{"name", "description",
    "parameters"}` (optionally `"output_schema"`); its name must equal the
    declaration's. `handle(args, ctx)` gets the arguments as a dict and returns any
    JSON-able value; raise `ToolError("…")` for an error the agent should read.
    """

    SCHEMA: dict = {}

    def schema(self) -> dict:
        return self.SCHEMA

    def check(self) -> bool:
        """Whether the tool can work right now (runs sandboxed with the granted env)."""
        return True

    def handle(self, args: dict, ctx: Context):
        raise ToolError(f"{type(self).__name__} does not implement handle")


def log(level: str, message: str) -> None:
    """A log record for the host, attributed to this tool. `level`: trace, debug,
    info, warn (or warning) or error."""
    from wit_world.imports import hermetic_types, host

    name = str(level).lower()
    if name == "warning":
        name = "warn"
    if name not in LEVELS:
        name = "info"
    host.log(getattr(hermetic_types.Level, name.upper()), str(message))


def progress(done: int, total=None, message: str = "") -> None:
    """Progress of the current call: `done` out of `total` (None when unknown)."""
    from wit_world.imports import host

    host.progress(max(0, int(done)), None if total is None else max(0, int(total)), str(message))
