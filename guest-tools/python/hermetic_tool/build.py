"""Build a Python tool into a hermetic component.

    python -m hermetic_tool.build PROJECT_DIR -o OUT.wasm

PROJECT_DIR holds `app.py` (one `hermetic_tool.Tool` subclass) and `declaration.toml`.
The build writes a WIT world from the declaration (wasi:http only with `network`, the
terminal only with `terminal = true`, wasi:keyvalue only with `keyvalue`), runs
componentize-py (pinned in requirements.txt) and appends the declaration as the
`hermetic:declaration` custom section. Run it with the Python of the venv that has
componentize-py (or pass --componentize-py).
"""

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import section, world

PACKAGE_DIR = Path(__file__).resolve().parent
PYTHON_DIR = PACKAGE_DIR.parent                 # guest-tools/python, or a project
if (PYTHON_DIR / "wit" / "tool.wit").is_file():
    # A project made by `hermetic new --lang python`: the WIT was written beside the
    # package.
    TOOL_WIT = PYTHON_DIR / "wit"
    WASI_WIT = PYTHON_DIR / "wit-wasi"
else:
    REPO_ROOT = PYTHON_DIR.parent.parent        # the repository
    TOOL_WIT = REPO_ROOT / "wit"                # hermetic:tool (tool.wit, deps/keyvalue)
    WASI_WIT = REPO_ROOT / "guest-tools" / "wit-wasi"
RUNTIME_MODULES = ("__init__.py", "_adapter.py", "http.py", "terminal.py")
ENTRY_MODULE = "hermetic_entry"
COMPONENTIZE_PY_VERSION = "0.25.1"
# componentize-py components instantiate 14 core modules (libpython, wasi-libc, the
# adapters…); the host allows 8 unless the declaration says more.
DEFAULT_CORE_INSTANCES = 16
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
    for key in ("name", "toolset"):
        if not isinstance(parsed.get(key), str) or not parsed[key]:
            raise BuildError(f"{path}: `{key}` must be a non-empty string")
    # What the host accepts; also the default output file's name, never a path.
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", parsed["name"]):
        raise BuildError(f"{path}: `name` must be 1-64 of [A-Za-z0-9_-], got {parsed['name']!r}")
    if "hook" in parsed:
        # A hook exports the `hook` interface, which this SDK does not build: the host
        # would find no hook exports and refuse the component at load.
        raise BuildError(f"{path}: hooks are not supported by this build (tools only; write hooks in Rust)")
    try:
        world.needs(parsed)
    except ValueError as e:
        raise BuildError(f"{path}: {e}") from None
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


def declaration_with_core_instances(text: str, parsed: dict, core_instances: int) -> str:
    """The declaration text, with `core_instances` added at the top when the author did
    not set it (top-level keys must come before any [table])."""
    if "core_instances" in parsed or core_instances <= 0:
        return text
    return (
        "# Added by hermetic_tool.build: a componentize-py component instantiates 14 core\n"
        "# wasm modules (CPython, wasi-libc, adapters); the host allows 8 by default.\n"
        f"core_instances = {core_instances}\n\n" + text)


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


def stage_wit(tmp: Path, parsed: dict) -> Path:
    """A WIT directory: the generated world, hermetic:tool and (for http) WASI deps."""
    wit = tmp / "wit"
    deps = wit / "deps"
    deps.mkdir(parents=True)
    (wit / "world.wit").write_text(world.world_wit(parsed), encoding="utf-8")
    shutil.copyfile(TOOL_WIT / "tool.wit", deps / "hermetic-tool.wit")
    for sub in sorted((TOOL_WIT / "deps").iterdir()):
        if sub.is_dir():
            shutil.copytree(sub, deps / sub.name)
    if world.needs(parsed)["http"]:
        for f in sorted(WASI_WIT.glob("*.wit")):
            shutil.copyfile(f, deps / f"wasi-{f.name}")
    return wit


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
          componentize_py=None, stub_wasi: bool = False, keep: bool = False) -> dict:
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
    wants = world.needs(parsed)
    say(f"{name}: world imports host" + "".join(f", {k}" for k, v in wants.items() if v))

    tmp = Path(tempfile.mkdtemp(prefix="hermetic-py-build-"))
    try:
        wit = stage_wit(tmp, parsed)
        py = stage_python(tmp, module, name)
        raw = tmp / "component.wasm"
        cmd = [tool, "-d", str(wit), "-w", world.WORLD, *world.interface_name_args(parsed),
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
        data = raw.read_bytes()
        declaration = declaration_with_core_instances(text, parsed, core_instances)
        try:
            data = section.append_declaration(data, declaration.encode("utf-8"))
        except section.SectionError as e:
            raise BuildError(str(e)) from None
        instances = section.count_core_instances(data)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    finally:
        if keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    declared = parsed.get("core_instances", core_instances if core_instances > 0 else 8)
    say(f"wrote {out} ({len(data):,} bytes, componentize-py {seconds:.1f} s, "
        f"{instances} core instances, declared {declared})")
    if instances > declared:
        say(f"warning: the component has {instances} core instances but the declaration "
            f"allows {declared}: the host will refuse it; set core_instances = {instances}")
    return {"bytes": len(data), "seconds": seconds, "core_instances": instances}


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
    p.add_argument("--stub-wasi", action="store_true",
                   help="replace every WASI import with a trap (no clocks, random, env, files)")
    p.add_argument("--keep-temp", action="store_true", help="keep the generated WIT and entry module")
    a = p.parse_args(argv)
    try:
        out = a.output
        if out is None:
            out = Path(load_declaration(a.project.resolve())[1]["name"] + ".wasm")
        build(a.project, out, a.module, a.core_instances, a.componentize_py, a.stub_wasi, a.keep_temp)
    except BuildError as e:
        say(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
