import os
import tempfile
import tomllib
import unittest
from pathlib import Path

import _support
from hermetic_tool import build


class Build(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        (self.dir / name).write_text(text, encoding="utf-8")

    def test_missing_and_bad_declarations(self):
        with self.assertRaisesRegex(build.BuildError, "declaration.toml: missing"):
            build.load_declaration(self.dir)
        self.write("declaration.toml", "name = \n")
        with self.assertRaisesRegex(build.BuildError, "not valid TOML"):
            build.load_declaration(self.dir)
        self.write("declaration.toml", 'name = "x"\n')
        with self.assertRaisesRegex(build.BuildError, "`toolset`"):
            build.load_declaration(self.dir)
        self.write("declaration.toml", 'name = "x"\ntoolset = "t"\n[capabilities]\nnetwork = "https://x"\n')
        with self.assertRaisesRegex(build.BuildError, "network"):
            build.load_declaration(self.dir)
        self.write("declaration.toml", 'name = "x"\ntoolset = "t"\n[hook]\nevents = ["pre_tool_call"]\n')
        with self.assertRaisesRegex(build.BuildError, "hooks are not supported"):
            build.load_declaration(self.dir)

    def test_core_instances_added_at_the_top(self):
        text = 'name = "x"\ntoolset = "t"\n[capabilities]\nenv = ["A"]\n'
        out = build.declaration_with_core_instances(text, tomllib.loads(text), 16)
        parsed = tomllib.loads(out)
        self.assertEqual(parsed["core_instances"], 16)
        self.assertEqual(parsed["capabilities"], {"env": ["A"]})
        self.assertTrue(out.startswith("# Added by hermetic_tool.build"))
        # the author's value wins; 0 writes none
        own = 'core_instances = 20\n' + text
        self.assertEqual(build.declaration_with_core_instances(own, tomllib.loads(own), 16), own)
        self.assertEqual(build.declaration_with_core_instances(text, tomllib.loads(text), 0), text)

    def test_literal_schema_name(self):
        self.write("app.py", "class A(Tool):\n    SCHEMA = {'name': 'abc', 'parameters': {}}\n")
        self.assertEqual(build.literal_schema_name(self.dir / "app.py"), "abc")
        self.write("app.py", "class A(Tool):\n    SCHEMA: dict = make()\n")
        self.assertIsNone(build.literal_schema_name(self.dir / "app.py"))
        self.write("app.py", "class A(:\n")
        with self.assertRaisesRegex(build.BuildError, "app.py:1"):
            build.literal_schema_name(self.dir / "app.py")

    def test_schema_name_mismatch_stops_before_componentize(self):
        self.write("declaration.toml", 'name = "x"\ntoolset = "t"\n')
        self.write("app.py", "class A(Tool):\n    SCHEMA = {'name': 'y'}\n")
        with self.assertRaisesRegex(build.BuildError, "differs"):
            build.build(self.dir, self.dir / "out.wasm", componentize_py="/nonexistent")

    def test_missing_componentize_py_says_how_to_install(self):
        old = os.environ.pop("COMPONENTIZE_PY", None)
        try:
            with self.assertRaisesRegex(build.BuildError, "pip install -r guest-tools/python/requirements.txt"):
                build.find_componentize_py("/nonexistent/componentize-py")
        finally:
            if old is not None:
                os.environ["COMPONENTIZE_PY"] = old

    def test_wit_staging(self):
        decl = {"name": "x", "toolset": "t", "capabilities": {"network": ["https://a.example"]}}
        wit = build.stage_wit(self.dir, decl)
        names = sorted(p.name for p in (wit / "deps").iterdir())
        self.assertIn("hermetic-tool.wit", names)
        self.assertIn("keyvalue", names)
        self.assertIn("wasi-http.wit", names)
        self.assertIn("wasi:http/outgoing-handler@0.2.12", (wit / "world.wit").read_text())
        self.assertIn("package wasi:http@0.2.12;", (wit / "deps" / "wasi-http.wit").read_text())

    def test_template_is_a_valid_project(self):
        template = _support.PYTHON_DIR / "template"
        decl = (template / "declaration.toml").read_text().replace("{{name}}", "my_tool")
        self.assertEqual(tomllib.loads(decl)["name"], "my_tool")
        app = (template / "app.py").read_text().replace("{{name}}", "my_tool")
        self.write("app.py", app)
        self.assertEqual(build.literal_schema_name(self.dir / "app.py"), "my_tool")


if __name__ == "__main__":
    unittest.main()
