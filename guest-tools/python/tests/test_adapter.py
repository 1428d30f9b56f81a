import json
import sys
import types
import unittest

import _support
from _support import FakeErr

CALLS = _support.install_fake_bindings()

import hermetic_tool  # noqa: E402
from hermetic_tool import Tool, ToolError, _adapter  # noqa: E402


def make_module(*classes, name="fake_app"):
    module = types.ModuleType(name)
    for c in classes:
        c.__module__ = name
        setattr(module, c.__name__, c)
    return module


class Echo(Tool):
    SCHEMA = {"name": "echo", "description": "d", "parameters": {"type": "object"}}

    def handle(self, args, ctx):
        mode = args.get("mode")
        if mode == "tool_error":
            raise ToolError("asked to fail")
        if mode == "err":
            raise FakeErr("raw err")
        if mode == "key_error":
            return {}["missing"]
        if mode == "memory":
            raise MemoryError()
        if mode == "exit":
            sys.exit(3)
        if mode == "set":
            return {1, 2}
        if mode == "nan":
            return float("nan")
        if mode == "long":
            raise ValueError("/build/machine/path " + "x" * 2000)
        if mode == "progress":
            ctx.progress(1, 2, "half")
            hermetic_tool.progress(2, None, "all")
            hermetic_tool.log("warning", "careful")
            hermetic_tool.log("bogus", "unknown level")
        return {"args": args, "ctx": [ctx.call_id, ctx.tenant, ctx.session], "text": "héllo"}


class Adapter(unittest.TestCase):
    def setUp(self):
        CALLS.clear()
        self.export = _adapter.export_class(make_module(Echo), "echo")()

    def handle(self, args):
        try:
            return True, self.export.handle(args, types.SimpleNamespace(
                call_id="c1", tenant="t", session="s"))
        except FakeErr as e:
            return False, e.value

    def test_schema_and_check(self):
        self.assertEqual(json.loads(self.export.schema())["name"], "echo")
        self.assertIs(self.export.check(), True)
        self.assertEqual(type(self.export).__name__, "Tool")

    def test_json_in_and_out(self):
        ok, text = self.handle('{"a": [1, 2]}')
        self.assertTrue(ok)
        self.assertEqual(json.loads(text), {"args": {"a": [1, 2]}, "ctx": ["c1", "t", "s"], "text": "héllo"})
        self.assertIn("héllo", text)  # not \\u-escaped
        self.assertTrue(self.handle("")[0])  # empty: {}

    def test_bad_arguments(self):
        self.assertEqual(self.handle("[1]"), (False, "invalid arguments: expected a JSON object"))
        ok, text = self.handle("{nope")
        self.assertFalse(ok)
        self.assertTrue(text.startswith("invalid arguments: "))

    def test_error_mapping(self):
        self.assertEqual(self.handle('{"mode": "tool_error"}'), (False, "asked to fail"))
        self.assertEqual(self.handle('{"mode": "err"}'), (False, "raw err"))
        self.assertEqual(self.handle('{"mode": "key_error"}'),
                         (False, "internal error: KeyError: 'missing'"))
        self.assertEqual(self.handle('{"mode": "memory"}'), (False, "the tool ran out of memory"))
        self.assertEqual(self.handle('{"mode": "exit"}'), (False, "internal error: SystemExit: 3"))
        ok, text = self.handle('{"mode": "set"}')
        self.assertFalse(ok)
        self.assertIn("not JSON", text)
        self.assertFalse(self.handle('{"mode": "nan"}')[0])
        ok, text = self.handle('{"mode": "long"}')
        self.assertLessEqual(len(text), _adapter.MAX_ERROR_CHARS)
        self.assertNotIn("Traceback", text)

    def test_failures_are_logged_without_directories(self):
        self.handle('{"mode": "key_error"}')
        logs = [c for c in CALLS if c[0] == "log"]
        self.assertEqual(len(logs), 1)
        self.assertEqual(logs[0][1].name, "ERROR")
        self.assertIn("test_adapter.py:", logs[0][2])
        self.assertNotIn("/", logs[0][2])

    def test_log_and_progress(self):
        self.assertTrue(self.handle('{"mode": "progress"}')[0])
        self.assertEqual(CALLS[0], ("progress", 1, 2, "half"))
        self.assertEqual(CALLS[1], ("progress", 2, None, "all"))
        self.assertEqual((CALLS[2][1].name, CALLS[2][2]), ("WARN", "careful"))
        self.assertEqual(CALLS[3][1].name, "INFO")

    def test_failing_check_is_unavailable(self):
        class Broken(Echo):
            def check(self):
                raise RuntimeError("boom")
        export = _adapter.export_class(make_module(Broken), "echo")()
        self.assertIs(export.check(), False)


class FindToolClass(unittest.TestCase):
    def test_exactly_one(self):
        with self.assertRaisesRegex(TypeError, "found: none"):
            _adapter.find_tool_class(make_module())

        class A(Tool):
            pass

        class B(Tool):
            pass

        with self.assertRaisesRegex(TypeError, "found: A, B"):
            _adapter.find_tool_class(make_module(A, B))
        m = make_module(A, B)
        m.TOOL = B
        self.assertIs(_adapter.find_tool_class(m), B)

    def test_imported_base_classes_do_not_count(self):
        m = make_module(Echo)
        m.Tool = Tool  # `from hermetic_tool import Tool`
        self.assertIs(_adapter.find_tool_class(m), Echo)

    def test_schema_name_must_match(self):
        with self.assertRaisesRegex(TypeError, "differs from the declaration name 'other'"):
            _adapter.export_class(make_module(Echo), "other")


if __name__ == "__main__":
    unittest.main()
