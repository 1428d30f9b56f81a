"""The examples' pure logic, in plain Python (no component)."""

import unittest

import _support
from hermetic_tool import ToolError, http

EXAMPLES = _support.PYTHON_DIR / "examples"
weather = _support.load_module(EXAMPLES / "weather" / "app.py", "weather_app")
notes = _support.load_module(EXAMPLES / "read_notes" / "app.py", "read_notes_app")


class Weather(unittest.TestCase):
    def test_validates_arguments(self):
        with self.assertRaisesRegex(ToolError, "location is required"):
            weather.validate({})
        with self.assertRaises(ToolError):
            weather.validate({"location": "  "})
        with self.assertRaisesRegex(ToolError, "got \"kelvin\""):
            weather.validate({"location": "Paris", "units": "kelvin"})
        self.assertEqual(weather.validate({"location": " London "}), ("London", "metric"))

    def test_answers_reduce_to_the_guides_shape(self):
        data = {"location": {"name": "London"},
                "current": {"temp_c": 11.0, "temp_f": 51.8, "humidity": 82,
                            "condition": {"text": "Light rain"}}}
        self.assertEqual(weather.summarize(200, data, "imperial"),
                         {"location": "London", "temperature": 51.8, "units": "imperial",
                          "condition": "Light rain", "humidity": 82})
        with self.assertRaisesRegex(ToolError, "^weatherapi.com: No matching location found.$"):
            weather.summarize(400, {"error": {"code": 1006, "message": "No matching location found."}}, "metric")
        with self.assertRaises(ToolError):
            weather.summarize(200, {}, "metric")
        self.assertEqual(weather.redact("GET https://x/?key=a%20b failed", "a b"),
                         "GET https://x/?key=[REDACTED] failed")

    def test_key_must_be_set_and_non_empty(self):
        self.assertFalse(weather.key_configured(None))
        self.assertFalse(weather.key_configured(""))
        self.assertFalse(weather.key_configured("  "))
        self.assertTrue(weather.key_configured("abc123"))

    def test_schema(self):
        self.assertEqual(weather.Weather.SCHEMA["name"], "weather_py")
        self.assertEqual(weather.Weather.SCHEMA["parameters"]["required"], ["location"])


class ReadNotes(unittest.TestCase):
    def test_paths_stay_inside(self):
        self.assertEqual(notes.clean(""), [])
        self.assertEqual(notes.clean("a/./b//c.md"), ["a", "b", "c.md"])
        for bad in ("/etc/passwd", "../x", "a/../../b", "\\x", "C:\\x", "a\\..\\b"):
            with self.assertRaises(ToolError, msg=bad):
                notes.clean(bad)


class Http(unittest.TestCase):
    def test_query_values_are_percent_encoded(self):
        self.assertEqual(http.encode_query_value("São Paulo&x=1"), "S%C3%A3o%20Paulo%26x%3D1")
        self.assertEqual(http.encode_query_value("a-._~b"), "a-._~b")

    def test_redirect_locations_resolve_against_the_sender(self):
        base = "http://a.example.com:8080/docs/page?x=1"
        self.assertEqual(http.resolve(base, "https://b.example.com/"), "https://b.example.com/")
        self.assertEqual(http.resolve(base, "//c.example.com/p"), "http://c.example.com/p")
        self.assertEqual(http.resolve(base, "/root"), "http://a.example.com:8080/root")
        self.assertEqual(http.resolve(base, "next"), "http://a.example.com:8080/docs/next")
        self.assertIsNone(http.split_url("ftp://x"))
        self.assertIsNone(http.split_url("http://user@evil.example.com/"))
        self.assertEqual(http.split_url("https://x.example.com?q#f"), (True, "x.example.com", "/?q"))

    def test_outside_a_component_get_explains(self):
        import sys
        saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k.startswith("wit_world")}
        try:
            with self.assertRaisesRegex(http.HttpError, "declare `network"):
                http._bindings()
        finally:
            sys.modules.update(saved)


if __name__ == "__main__":
    unittest.main()
