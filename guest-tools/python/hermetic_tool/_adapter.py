"""The `tool` export: JSON in and out around an author's `hermetic_tool.Tool` subclass.

The build generates an entry module that does `Tool = export_class(app)`;
componentize-py then exports that class as the component's `tool` interface.
"""

import json
import traceback

from . import Context, Tool as BaseTool, ToolError

MAX_ERROR_CHARS = 500


def find_tool_class(module):
    """The one `hermetic_tool.Tool` subclass defined in `module` (or named by its `TOOL`)."""
    chosen = getattr(module, "TOOL", None)
    if chosen is not None:
        if not (isinstance(chosen, type) and issubclass(chosen, BaseTool)):
            raise TypeError(f"{module.__name__}.TOOL is not a hermetic_tool.Tool subclass")
        return chosen
    found = [
        v for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, BaseTool) and v is not BaseTool
        and v.__module__ == module.__name__
    ]
    if len(found) != 1:
        names = ", ".join(sorted(c.__name__ for c in found)) or "none"
        raise TypeError(
            f"{module.__name__} must define exactly one hermetic_tool.Tool subclass "
            f"(found: {names}); set TOOL = YourClass to choose")
    return found[0]


def _clip(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _short_traceback(exc: BaseException) -> str:
    """`file.py:line in function` frames, innermost first, without directories (the
    build machine's paths are none of the agent's business). Reads no source file."""
    frames = list(traceback.walk_tb(exc.__traceback__))[-6:]
    parts = [f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{line} in {f.f_code.co_name}"
             for f, line in frames]
    return " <- ".join(reversed(parts))


def describe_exception(exc: BaseException) -> str:
    """The error text for an exception that is not a ToolError."""
    if isinstance(exc, MemoryError):
        return "the tool ran out of memory"
    if isinstance(exc, RecursionError):
        return "internal error: RecursionError (recursion too deep)"
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return _clip(f"internal error: {type(exc).__name__}" + (f": {first}" if first else ""))


def _log_failure(exc: BaseException) -> None:
    try:
        from . import log
        log("error", _clip(f"{type(exc).__name__} at {_short_traceback(exc)}", 2000))
    except Exception:  # noqa: BLE001 - logging must never mask the error
        pass


def call_handle(impl, args: str, call_id: str, tenant: str, session: str):
    """(True, result JSON) or (False, error text): the whole call, no exception escapes."""
    try:
        parsed = json.loads(args) if args.strip() else {}
    except ValueError as e:
        return False, f"invalid arguments: {e}"
    if not isinstance(parsed, dict):
        return False, "invalid arguments: expected a JSON object"
    ctx = Context(call_id, tenant, session)
    try:
        value = impl.handle(parsed, ctx)
    except ToolError as e:
        return False, str(e)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - every failure becomes an error result
        err_value = _err_value(e)
        if err_value is not None:
            return False, err_value
        _log_failure(e)
        return False, describe_exception(e)
    try:
        return True, json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        return False, _clip(f"internal error: the result is not JSON: {e}")


def _err_value(exc: BaseException):
    """The text of a componentize_py_types.Err raised by the author, else None."""
    if type(exc).__name__ == "Err" and isinstance(getattr(exc, "value", None), str):
        return exc.value
    return None


def call_check(impl) -> bool:
    try:
        return bool(impl.check())
    except Exception as e:  # noqa: BLE001 - a failing check means unavailable
        _log_failure(e)
        return False


def schema_json(impl) -> str:
    return json.dumps(impl.schema(), ensure_ascii=False)


# The bindings the wrappers use, imported while componentize-py pre-initializes the
# component (a module first imported during a call is read from the bundled files then).
_BINDINGS = ("host", "hermetic_types", "http_types", "outgoing_handler", "streams", "error",
             "poll", "terminal")


# Standard-library modules other modules import lazily, on first use (datetime.strptime,
# str.encode("idna") in socket): at call time there are no bundled files to import from.
_LAZY_STDLIB = ("_strptime", "encodings.idna", "encodings.ascii", "encodings.latin_1",
                "encodings.utf_16", "encodings.utf_32")


def preload_bindings() -> None:
    import importlib

    for name in [f"wit_world.imports.{b}" for b in _BINDINGS] + list(_LAZY_STDLIB):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def export_class(module, name=None):
    """The class componentize-py exports as `tool`, wrapping `module`'s Tool subclass
    (whose schema name must be `name` when given)."""
    from componentize_py_types import Err
    from wit_world import exports

    preload_bindings()
    impl = find_tool_class(module)()
    schema = impl.schema()
    if not isinstance(schema, dict):
        raise TypeError("SCHEMA (or schema()) must be a dict")
    if name is not None and schema.get("name") != name:
        raise TypeError(
            f"the schema name {schema.get('name')!r} differs from the declaration name {name!r}")

    class Export(exports.Tool):
        def schema(self) -> str:
            return schema_json(impl)

        def check(self) -> bool:
            return call_check(impl)

        def handle(self, args: str, ctx) -> str:
            ok, text = call_handle(impl, args, ctx.call_id, ctx.tenant, ctx.session)
            if ok:
                return text
            raise Err(text)

    Export.__name__ = Export.__qualname__ = "Tool"
    return Export
