"""Tool `read_notes`: reads a text file from the `notes` mount, or lists a directory.

The host grants the mount (read-only) only when the operator maps `notes` to a host
directory and lets this tool have it; inside the sandbox it is `/notes`, and nothing
else of the host's file system exists. The tool still refuses absolute paths and `..`
itself, so its errors say what was wrong rather than "not found".
"""

import os

from hermetic_tool import Tool, ToolError

ROOT = "/notes"
MAX_BYTES = 64 * 1024       # of one file; longer files are cut (and say so)
MAX_ENTRIES = 500           # of one listing


class ReadNotes(Tool):
    SCHEMA = {
        "name": "read_notes",
        "description": "Read a text note (a path relative to the notes folder), or list the "
                       "notes in a folder (an empty path lists the top).",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Note or folder, relative to the notes folder (e.g. 'todo.md'); "
                                   "empty: list the top folder",
                    "default": "",
                },
            },
            "required": [],
        },
    }

    def handle(self, args, ctx):
        rel = args.get("path", "")
        if not isinstance(rel, str):
            raise ToolError("path must be a string")
        parts = clean(rel)
        if not os.path.isdir(ROOT):
            raise ToolError("the notes folder is not available (the `notes` mount is not granted)")
        full = "/".join([ROOT, *parts])
        shown = "/".join(parts)
        if os.path.isdir(full):
            return listing(full, shown)
        try:
            with open(full, "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except FileNotFoundError:
            raise ToolError(f"no note {shown!r}") from None
        except PermissionError:
            raise ToolError(f"{shown!r} cannot be read") from None
        except OSError as e:
            raise ToolError(f"{shown!r} cannot be read: {e.strerror or e}") from None
        truncated = len(data) > MAX_BYTES
        data = data[:MAX_BYTES]
        if b"\0" in data:
            raise ToolError(f"{shown!r} is not a text file")
        return {
            "path": shown,
            "content": data.decode("utf-8", "replace"),
            "bytes": len(data),
            "truncated": truncated,
        }


def clean(path: str) -> list:
    """The path's parts below the mount; refuses absolute paths and `..`."""
    if path.startswith(("/", "\\")) or (len(path) > 1 and path[1] == ":"):
        raise ToolError("path must be relative to the notes folder (no leading '/')")
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ToolError("path must stay inside the notes folder (no '..')")
    return parts


def listing(full: str, shown: str) -> dict:
    entries = []
    with os.scandir(full) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            kind = "dir" if entry.is_dir() else "file"
            item = {"name": entry.name, "type": kind}
            if kind == "file":
                try:
                    item["bytes"] = entry.stat().st_size
                except OSError:
                    pass
            entries.append(item)
    entries.sort(key=lambda e: (e["type"] != "dir", e["name"]))
    return {"path": shown, "entries": entries[:MAX_ENTRIES], "truncated": len(entries) > MAX_ENTRIES}
