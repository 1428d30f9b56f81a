"""Build a Python tool into a hermetic component.

    python -m hermetic_tool.build PROJECT_DIR -o OUT.wasm

PROJECT_DIR holds `app.py` (one `hermetic_tool.Tool` subclass) and `declaration.toml`.
The host does what it knows: `hermetic tool world` writes the WIT world the declaration
needs (the imports its capabilities link, nothing else), componentize-py (pinned in
requirements.txt) builds the component for it, and `hermetic tool finish` embeds the
declaration as the `hermetic:declaration` custom section and loads the result as the
host will (core instances, imports, schema). Run it with the Python of the venv that
has componentize-py (or pass --componentize-py); `hermetic` is found on PATH, in
$HERMETIC or through --hermetic.
"""

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
RUNTIME_MODULES = ("__init__.py", "_adapter.py", "http.py", "terminal.py")
ENTRY_MODULE = "hermetic_entry"
COMPONENTIZE_PY_VERSION = "0.25.1"
# componentize-py components instantiate 14 core modules (libpython, wasi-libc, the
# adapters…); the host allows 8 unless the declaration says more.
DEFAULT_CORE_INSTANCES = 16
# The world `hermetic tool world` writes.
WORLD = "tool"
# Fixed Python module names for the interfaces the package wraps, when the world has
# them (componentize-py otherwise renames `types` to `hermetic_tool_types` as soon as
# wasi:http/types is in the world too).
INTERFACE_NAMES = {
    "hermetic:tool/types@0.3.0": "hermetic_types",
    "wasi:http/types@0.2.12": "http_types",
}
HERMETIC_HINT = (
    "it writes the WIT world and embeds the declaration: put `hermetic` on PATH, "
    "or set HERMETIC=/path/to/hermetic (or pass --hermetic)")
INSTALL_HINT = (
    "install it in a venv:\n"
    "  python3 -m venv target/venv-componentize\n"
    "  target/venv-componentize/bin/pip install -r guest-tools/python/requirements.txt\n"
    "then build with target/venv-componentize/bin/python -m hermetic_tool.build … "
    "(or pass --componentize-py PATH)")


class BuildError(Exception):
    pass


def say(message: str) -> None:
    print(f"hermetic_tool.build: {message}", file=sys.stderr, flush=True)


def load_declaration(project: Path):
    """(text, parsed dict) of PROJECT/declaration.toml."""
    try:
        import tomllib
    except ImportError:
        raise BuildError("needs Python 3.11 or newer (tomllib)") from None
    path = project / "declaration.toml"
    if not path.is_file():
        raise BuildError(
            f"{path}: missing. Every tool declares itself there (name, toolset, "
            "description, [capabilities]); see guest-tools/python/README.md")
    text = path.read_text(encoding="utf-8")
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BuildError(f"{path}: not valid TOML: {e}") from None
    # The rest is checked by the host's own parser (`hermetic tool world`); the name is
    # needed first, as the default output file's name, so it is never a path.
    name = parsed.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
        raise BuildError(f"{path}: `name` must be 1-64 of [A-Za-z0-9_-], got {name!r}")
    return text, parsed


def literal_schema_name(app: Path):
    """The schema name when `SCHEMA = {...}` in app.py is a literal dict (else None)."""
    try:
        tree = ast.parse(app.read_text(encoding="utf-8"), str(app))
    except SyntaxError as e:
        raise BuildError(f"{app}:{e.lineno}: {e.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                target = (stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                          else stmt.target if isinstance(stmt, ast.AnnAssign) else None)
                if isinstance(target, ast.Name) and target.id == "SCHEMA" and stmt.value is not None:
                    try:
                        value = ast.literal_eval(stmt.value)
                    except ValueError:
                        return None
                    return value.get("name") if isinstance(value, dict) else None
    return None


def find_componentize_py(explicit):
    candidates = [explicit, os.environ.get("COMPONENTIZE_PY"),
                  str(Path(sys.executable).parent / "componentize-py"),
                  shutil.which("componentize-py")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    if explicit:
        raise BuildError(f"componentize-py not found at {explicit}; {INSTALL_HINT}")
    raise BuildError(f"componentize-py {COMPONENTIZE_PY_VERSION} not found; {INSTALL_HINT}")


def find_hermetic(explicit=None) -> str:
    """The `hermetic` command: --hermetic, $HERMETIC, or `hermetic` on PATH."""
    given = explicit or os.environ.get("HERMETIC")
    if given:
        if Path(given).is_file() and os.access(given, os.X_OK):
            return given
        found = shutil.which(given)
        if found:
            return found
        raise BuildError(f"the hermetic command was not found at {given}; {HERMETIC_HINT}")
    found = shutil.which("hermetic")
    if not found:
        raise BuildError(f"the hermetic command was not found; {HERMETIC_HINT}")
    return found


def run_hermetic(hermetic: str, args: list) -> str:
    """Runs `hermetic ARGS`: its stdout; its error (the host's words) as a BuildError."""
    say("running hermetic " + " ".join(args))
    result = subprocess.run([hermetic, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        error = result.stderr.strip().removeprefix("error: ")
        raise BuildError(f"hermetic {args[0]} {args[1]}: {error or f'exit {result.returncode}'}")
    return result.stdout


def stage_wit(tmp: Path, hermetic: str, declaration: Path) -> Path:
    """The WIT directory `hermetic tool world` writes for the declaration."""
    wit = tmp / "wit"
    run_hermetic(hermetic, ["tool", "world", str(declaration), "--out", str(wit)])
    return wit


def world_imports(world_text: str) -> list:
    """The interfaces a world imports (`import X;` lines)."""
    return re.findall(r"^\s*import\s+([^;\s]+)\s*;", world_text, re.M)


def interface_name_args(world_text: str) -> list:
    """componentize-py `--import-interface-name` arguments for the interfaces of the
    world (the tool world's own `types` always; the others when imported)."""
    present = {"hermetic:tool/types@0.3.0", *world_imports(world_text)}
    args = []
    for iface, module in INTERFACE_NAMES.items():
        if iface in present:
            args += ["--import-interface-name", f"{iface}={module}"]
    return args


def stage_python(tmp: Path, module: str, name: str) -> Path:
    """The runtime part of hermetic_tool and the entry module componentize-py exports."""
    py = tmp / "py"
    pkg = py / "hermetic_tool"
    pkg.mkdir(parents=True)
    for f in RUNTIME_MODULES:
        shutil.copyfile(PACKAGE_DIR / f, pkg / f)
    (py / f"{ENTRY_MODULE}.py").write_text(
        "# Generated by hermetic_tool.build: exports the app's Tool subclass as `tool`.\n"
        f"import {module} as _app\n"
        "from hermetic_tool._adapter import export_class as _export_class\n"
        f"Tool = _export_class(_app, {name!r})\n",
        encoding="utf-8")
    return py


def build(project: Path, out: Path, module: str = "app", core_instances: int = DEFAULT_CORE_INSTANCES,
          componentize_py=None, stub_wasi: bool = False, keep: bool = False, hermetic=None) -> dict:
    project = project.resolve()
    if not project.is_dir():
        raise BuildError(f"{project}: not a directory")
    app = project / f"{module}.py"
    if not app.is_file():
        raise BuildError(f"{app}: missing (the tool's module, with one hermetic_tool.Tool subclass)")
    text, parsed = load_declaration(project)
    name = parsed["name"]
    schema_name = literal_schema_name(app)
    if schema_name is not None and schema_name != name:
        raise BuildError(f"SCHEMA name {schema_name!r} in {app.name} differs from the declaration's {name!r}")
    tool = find_componentize_py(componentize_py)
    hermetic = find_hermetic(hermetic)
    declaration = project / "declaration.toml"

    tmp = Path(tempfile.mkdtemp(prefix="hermetic-py-build-"))
    try:
        wit = stage_wit(tmp, hermetic, declaration)
        world_text = (wit / "world.wit").read_text(encoding="utf-8")
        say(f"{name}: world imports " + ", ".join(["host", *world_imports(world_text)]))
        py = stage_python(tmp, module, name)
        raw = tmp / "component.wasm"
        cmd = [tool, "-d", str(wit), "-w", WORLD, *interface_name_args(world_text),
               "componentize", "-p", str(project), "-p", str(py)]
        if stub_wasi:
            cmd.append("--stub-wasi")
        cmd += [ENTRY_MODULE, "-o", str(raw)]
        say("running " + " ".join(cmd))
        started = time.monotonic()
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        result = subprocess.run(cmd, cwd=py, env=env)
        seconds = time.monotonic() - started
        if result.returncode != 0 or not raw.is_file():
            raise BuildError(f"componentize-py failed (exit {result.returncode}); see its output above")
        out.parent.mkdir(parents=True, exist_ok=True)
        finish = ["tool", "finish", str(raw), str(declaration), "-o", str(out)]
        if core_instances > 0:
            finish += ["--core-instances", str(core_instances)]
        summary = json.loads(run_hermetic(hermetic, finish))
    finally:
        if keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    say(f"wrote {out} ({summary['bytes']:,} bytes, componentize-py {seconds:.1f} s, "
        f"core_instances {summary['core_instances'] or 'default'}; the host loads it)")
    return {"bytes": summary["bytes"], "seconds": seconds, "imports": summary["imports"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m hermetic_tool.build",
        description="Build a Python tool (PROJECT_DIR/app.py + declaration.toml) into a hermetic component.")
    p.add_argument("project", type=Path, help="directory with app.py and declaration.toml")
    p.add_argument("-o", "--output", type=Path, help="the component to write (default: NAME.wasm)")
    p.add_argument("--module", default="app", help="the tool's module in PROJECT_DIR (default: app)")
    p.add_argument("--core-instances", type=int, default=DEFAULT_CORE_INSTANCES,
                   help="core_instances written into the declaration when it sets none "
                        f"(default {DEFAULT_CORE_INSTANCES}; 0: write none)")
    p.add_argument("--componentize-py", help="path of the componentize-py command")
    p.add_argument("--hermetic", help="path of the hermetic command (default: $HERMETIC, else PATH)")
    p.add_argument("--stub-wasi", action="store_true",
                   help="replace every WASI import with a trap (no clocks, random, env, files)")
    p.add_argument("--keep-temp", action="store_true", help="keep the generated WIT and entry module")
    a = p.parse_args(argv)
    try:
        out = a.output
        if out is None:
            out = Path(load_declaration(a.project.resolve())[1]["name"] + ".wasm")
        build(a.project, out, a.module, a.core_instances, a.componentize_py, a.stub_wasi, a.keep_temp,
              a.hermetic)
    except BuildError as e:
        say(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
