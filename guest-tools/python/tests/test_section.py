import unittest

import _support  # noqa: F401 - sys.path
from hermetic_tool import section

EMPTY_COMPONENT = b"\0asm\x0d\x00\x01\x00"
EMPTY_MODULE = b"\0asm\x01\x00\x00\x00"


class Leb128(unittest.TestCase):
    def test_known_encodings(self):
        self.assertEqual(section.leb128(0), b"\x00")
        self.assertEqual(section.leb128(127), b"\x7f")
        self.assertEqual(section.leb128(128), b"\x80\x01")
        self.assertEqual(section.leb128(624485), b"\xe5\x8e\x26")

    def test_round_trip(self):
        for n in (0, 1, 63, 64, 127, 128, 255, 16383, 16384, 65536, 2**32 - 1, 2**40):
            value, pos = section.read_leb128(section.leb128(n) + b"\xff", 0)
            self.assertEqual((value, pos), (n, len(section.leb128(n))))

    def test_negative_and_truncated(self):
        with self.assertRaises(ValueError):
            section.leb128(-1)
        with self.assertRaises(section.SectionError):
            section.read_leb128(b"\x80\x80", 0)


class AppendDeclaration(unittest.TestCase):
    def test_round_trip(self):
        decl = 'name = "x"\ntoolset = "t"\ndescription = "é ✓"\n'.encode()
        for base in (EMPTY_COMPONENT, EMPTY_MODULE):
            out = section.append_declaration(base, decl)
            self.assertTrue(out.startswith(base))
            self.assertEqual(section.read_declaration(out), decl)
            self.assertEqual(list(section.custom_sections(out)), [(section.SECTION, decl)])

    def test_section_bytes(self):
        out = section.append_declaration(EMPTY_COMPONENT, b"a")
        name = section.SECTION.encode()
        self.assertEqual(out[8:], b"\x00" + bytes([1 + len(name) + 1, len(name)]) + name + b"a")

    def test_large_payload_uses_multibyte_sizes(self):
        decl = b"# " + b"x" * 60000 + b"\n"
        out = section.append_declaration(EMPTY_COMPONENT, decl)
        self.assertEqual(section.read_declaration(out), decl)

    def test_keeps_other_sections(self):
        other = b"\x00" + section.leb128(4) + b"\x03abc"
        out = section.append_declaration(EMPTY_COMPONENT + other, b"x")
        names = [n for n, _ in section.custom_sections(out)]
        self.assertEqual(names, ["abc", section.SECTION])

    def test_refuses_a_duplicate(self):
        once = section.append_declaration(EMPTY_COMPONENT, b"a")
        with self.assertRaisesRegex(section.SectionError, "already has"):
            section.append_declaration(once, b"b")

    def test_refuses_non_wasm_too_large_and_non_utf8(self):
        with self.assertRaisesRegex(section.SectionError, "not WebAssembly"):
            section.append_declaration(b"\x7fELF....", b"a")
        with self.assertRaisesRegex(section.SectionError, "at most"):
            section.append_declaration(EMPTY_COMPONENT, b"x" * (section.MAX_DECLARATION_BYTES + 1))
        with self.assertRaisesRegex(section.SectionError, "UTF-8"):
            section.append_declaration(EMPTY_COMPONENT, b"\xff\xfe")

    def test_no_declaration(self):
        self.assertIsNone(section.read_declaration(EMPTY_COMPONENT))


class CoreInstances(unittest.TestCase):
    def test_counts_instantiations_not_export_bags(self):
        # core instance section: 2 instantiations (one with an argument) and a bag of exports
        entries = (b"\x03"
                   + b"\x00\x00\x00"                      # instantiate module 0, no args
                   + b"\x01\x01\x01f\x00\x00"             # exports: ("f", func, 0)
                   + b"\x00\x01\x01\x01m\x12\x01")        # instantiate module 1 with ("m", instance 1)
        comp = EMPTY_COMPONENT + b"\x02" + section.leb128(len(entries)) + entries
        self.assertEqual(section.count_core_instances(comp), 2)
        nested = b"\x04" + section.leb128(len(comp)) + comp
        self.assertEqual(section.count_core_instances(comp + nested), 4)
        self.assertEqual(section.count_core_instances(EMPTY_MODULE), 1)


if __name__ == "__main__":
    unittest.main()
