"""Shell commands run by the host (tools that declare `terminal = true`).

    from hermetic_tool import terminal
    done = terminal.run("ls -la", timeout_secs=30)
    return {"output": done.output, "exit_code": done.exit_code}

Only the foreground `run` is wrapped; everything else of the interface is
`wit_world.imports.terminal` (start, poll, wait, kill, write…), whose errors are raised
as `componentize_py_types.Err(terminal.Error_…)`. Every command passes the host's
approval gate first.
"""

from . import ToolError


class TerminalError(ToolError):
    """The command did not run (or was refused). `kind`: the WIT error case in
    snake_case (blocked, pending_approval, not_granted, invalid_request, failed…)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def describe(error) -> TerminalError:
    """A TerminalError for a `terminal.Error_…` value."""
    name = type(error).__name__.removeprefix("Error_")
    kind = "".join(("_" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(name))
    value = getattr(error, "value", None)
    if kind in ("blocked", "pending_approval") and value is not None:
        text = value.message
    elif kind == "not_granted":
        text = "the terminal is not granted to this tool"
    elif kind in ("too_many_processes", "too_many_sessions"):
        text = f"{kind.replace('_', ' ')} (limit {value})"
    elif value is not None:
        text = f"{kind.replace('_', ' ')}: {value}"
    else:
        text = kind.replace("_", " ")
    return TerminalError(kind, text)


def run(command: str, workdir=None, timeout_secs=None, stdin=None, pty: bool = False):
    """Runs `command` in the foreground; returns the WIT `finished` record (`output`,
    `exit_code`, `exit_code_meaning`, `pty_note`). Raises TerminalError."""
    from componentize_py_types import Err

    try:
        from wit_world.imports import terminal as t
    except ImportError:
        raise TerminalError(
            "not_granted",
            "this tool was built without the terminal: declare `terminal = true` under "
            "[capabilities] in declaration.toml and rebuild") from None
    try:
        return t.run(t.CommandRequest(command, workdir, timeout_secs, stdin, pty))
    except Err as e:
        raise describe(e.value) from None
