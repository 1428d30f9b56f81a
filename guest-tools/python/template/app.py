"""Tool {{name}}."""

from hermetic_tool import Tool, ToolError


class MyTool(Tool):
    SCHEMA = {
        "name": "{{name}}",
        "description": "Says hello (replace with what {{name}} does).",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "description": "Who to greet"},
            },
            "required": [],
        },
    }

    def handle(self, args, ctx):
        name = args.get("name", "world")
        if not isinstance(name, str) or not name.strip():
            raise ToolError("name must be a non-empty string")
        return {"greeting": f"Hello, {name}!"}
