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
        # The name is checked here (it names the output file); the rest by the host.
        for bad in ('toolset = "t"\n', 'name = "../x"\n', 'name = 3\n'):
            self.write("declaration.toml", bad)
            with self.assertRaisesRegex(build.BuildError, "`name` must be 1-64"):
                build.load_declaration(self.dir)
        self.write("declaration.toml", 'name = "x"\n[capabilities]\nnetwork = "https://x"\n')
        self.assertEqual(build.load_declaration(self.dir)[1]["name"], "x")

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

    def test_interface_names_follow_the_world(self):
        plain = "world tool {\n    include hermetic:tool/tool-component@0.3.0;\n}\n"
        self.assertEqual(build.world_imports(plain), [])
        self.assertEqual(build.interface_name_args(plain),
                         ["--import-interface-name", "hermetic:tool/types@0.3.0=hermetic_types"])
        http = plain.replace("}", "    import wasi:http/outgoing-handler@0.2.12;\n"
                                  "    import wasi:http/types@0.2.12;\n}")
        self.assertEqual(build.world_imports(http),
                         ["wasi:http/outgoing-handler@0.2.12", "wasi:http/types@0.2.12"])
        self.assertEqual(build.interface_name_args(http),
                         ["--import-interface-name", "hermetic:tool/types@0.3.0=hermetic_types",
                          "--import-interface-name", "wasi:http/types@0.2.12=http_types"])

    def test_missing_hermetic_says_how_to_point_at_it(self):
        old = os.environ.pop("HERMETIC", None)
        try:
            with self.assertRaisesRegex(build.BuildError, "not found at /nonexistent/hermetic; .*HERMETIC="):
                build.find_hermetic("/nonexistent/hermetic")
            os.environ["HERMETIC"] = "/nonexistent/hermetic"
            with self.assertRaisesRegex(build.BuildError, "not found at /nonexistent/hermetic"):
                build.find_hermetic()
        finally:
            os.environ.pop("HERMETIC", None)
            if old is not None:
                os.environ["HERMETIC"] = old

    def test_a_failing_hermetic_is_a_build_error_in_its_words(self):
        fake = self.dir / "hermetic"
        fake.write_text("#!/bin/sh\necho 'error: d.toml: declaration is not valid: unknown field' >&2\nexit 3\n")
        fake.chmod(0o755)
        with self.assertRaisesRegex(build.BuildError,
                                    r"^hermetic tool world: d.toml: declaration is not valid: unknown field$"):
            build.stage_wit(self.dir, str(fake), self.dir / "d.toml")

    @unittest.skipUnless(os.environ.get("HERMETIC"), "set HERMETIC to a built hermetic")
    def test_the_host_writes_the_world(self):
        self.write("declaration.toml", 'name = "x"\ntoolset = "t"\n[capabilities]\nnetwork = ["https://a.example"]\n')
        wit = build.stage_wit(self.dir, build.find_hermetic(), self.dir / "declaration.toml")
        text = (wit / "world.wit").read_text()
        self.assertIn(f"world {build.WORLD} {{", text)
        self.assertEqual(build.world_imports(text),
                         ["wasi:http/outgoing-handler@0.2.12", "wasi:http/types@0.2.12"])
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
