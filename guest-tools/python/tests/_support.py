"""Shared test helpers: the package on sys.path, fake componentize-py bindings."""

import enum
import importlib.util
import sys
import types
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parent.parent
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))


class FakeErr(Exception):
    """componentize_py_types.Err"""

    def __init__(self, value):
        super().__init__(value)
        self.value = value


FakeErr.__name__ = "Err"


def install_fake_bindings():
    """Fake `wit_world` and `componentize_py_types` modules; returns the recorded host calls."""
    calls = []
    cpt = types.ModuleType("componentize_py_types")
    cpt.Err = FakeErr
    ww = types.ModuleType("wit_world")
    exports = types.ModuleType("wit_world.exports")

    class Tool:  # the Protocol componentize-py generates
        pass

    exports.Tool = Tool
    imports = types.ModuleType("wit_world.imports")
    host = types.ModuleType("wit_world.imports.host")
    host.log = lambda level, message: calls.append(("log", level, message))
    host.progress = lambda done, total, message: calls.append(("progress", done, total, message))
    ht = types.ModuleType("wit_world.imports.hermetic_types")

    class Level(enum.Enum):
        TRACE = 0
        DEBUG = 1
        INFO = 2
        WARN = 3
        ERROR = 4

    ht.Level = Level
    ww.exports, ww.imports = exports, imports
    imports.host, imports.hermetic_types = host, ht
    sys.modules.update({
        "componentize_py_types": cpt, "wit_world": ww, "wit_world.exports": exports,
        "wit_world.imports": imports, "wit_world.imports.host": host,
        "wit_world.imports.hermetic_types": ht,
    })
    return calls


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
