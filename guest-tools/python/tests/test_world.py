import unittest

import _support  # noqa: F401 - sys.path
from hermetic_tool import world


class WorldGenerator(unittest.TestCase):
    def test_plain_tool_imports_only_host(self):
        text = world.world_wit({"name": "x", "toolset": "t"})
        self.assertIn("include hermetic:tool/tool-component@0.3.0;", text)
        self.assertIn("world python-tool {", text)
        self.assertNotIn("wasi:http", text)
        self.assertNotIn("terminal", text)
        self.assertNotIn("keyvalue", text)
        self.assertEqual(world.interface_name_args({"name": "x"}),
                         ["--import-interface-name", "hermetic:tool/types@0.3.0=hermetic_types"])

    def test_network_adds_wasi_http(self):
        decl = {"capabilities": {"network": ["https://api.example.com"]}}
        text = world.world_wit(decl)
        self.assertIn("import wasi:http/outgoing-handler@0.2.12;", text)
        self.assertIn("wasi:http/types@0.2.12=http_types", world.interface_name_args(decl))

    def test_empty_network_adds_nothing(self):
        self.assertNotIn("wasi:http", world.world_wit({"capabilities": {"network": []}}))

    def test_terminal_and_keyvalue(self):
        text = world.world_wit({"capabilities": {"terminal": True, "keyvalue": "session"}})
        self.assertIn("import hermetic:tool/terminal@0.3.0;", text)
        for iface in ("store", "atomics", "batch"):
            self.assertIn(f"import wasi:keyvalue/{iface}@0.2.0-draft;", text)
        self.assertNotIn("terminal", world.world_wit({"capabilities": {"terminal": False}}))

    def test_bad_shapes(self):
        with self.assertRaises(ValueError):
            world.needs({"capabilities": {"network": "https://x"}})
        with self.assertRaises(ValueError):
            world.needs({"capabilities": []})


if __name__ == "__main__":
    unittest.main()
