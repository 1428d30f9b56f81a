"""Tool `weather_py`: current weather for a location, a Python port of guest-tools/weather
(the example tool of Hermes's "Adding Tools" guide).

Same schema (`location`, `units` = metric | imperial), the same availability check
(`WEATHER_API_KEY` set and non-empty), the same `WEATHER_API_KEY not configured` error
and the same call: weatherapi.com's `/v1/current.json`, reduced to
`{location, temperature, units, condition, humidity}`. The request goes through the
host's wasi:http, so it only leaves when the operator grants
`https://api.weatherapi.com` to this tool.
"""

import json
import os

from hermetic_tool import Tool, ToolError, http

API_ORIGIN = "https://api.weatherapi.com"
KEY_VAR = "WEATHER_API_KEY"
# weatherapi.com's current-weather answers are a few KiB.
MAX_RESPONSE_BYTES = 256 * 1024


class Weather(Tool):
    SCHEMA = {
        "name": "weather_py",
        "description": "Get current weather for a location.",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "location": {
                    "type": "string",
                    "description": "City name or coordinates (e.g. 'London' or '51.5,-0.1')",
                },
                "units": {
                    "type": "string",
                    "enum": ["metric", "imperial"],
                    "description": "Temperature units (default: metric)",
                    "default": "metric",
                },
            },
            "required": ["location"],
        },
        "output_schema": {
            "type": "object",
            "properties": {
                "location": {"type": ["string", "null"]},
                "temperature": {"type": "number"},
                "units": {"type": "string"},
                "condition": {"type": ["string", "null"]},
                "humidity": {"type": ["number", "null"]},
            },
            "required": ["location", "temperature", "units"],
        },
    }

    def check(self) -> bool:
        return key_configured(os.environ.get(KEY_VAR))

    def handle(self, args, ctx):
        location, units = validate(args)
        if not key_configured(os.environ.get(KEY_VAR)):
            raise ToolError(f"{KEY_VAR} not configured")
        key = os.environ.get(KEY_VAR, "")
        url = (f"{API_ORIGIN}/v1/current.json?key={http.encode_query_value(key.strip())}"
               f"&q={http.encode_query_value(location)}&aqi=no")
        try:
            response = http.get(url, max_bytes=MAX_RESPONSE_BYTES)
        except http.HttpError as e:
            raise ToolError(redact(str(e), key)) from None
        try:
            data = json.loads(response.body)
        except ValueError:
            raise ToolError(
                f"weatherapi.com answered HTTP {response.status} with a body that is not JSON") from None
        return summarize(response.status, data, units)


def _get(value, *keys):
    """value[k1][k2]…, None where a level is missing (serde_json's `Value` indexing)."""
    for k in keys:
        value = value.get(k) if isinstance(value, dict) else None
    return value


def summarize(status: int, data, units: str):
    """The guide's result shape, or the API's own error message."""
    message = _get(data, "error", "message")
    if isinstance(message, str):
        raise ToolError(f"weatherapi.com: {message}")
    if not 200 <= status < 300:
        raise ToolError(f"weatherapi.com answered HTTP {status}")
    current = _get(data, "current")
    temperature = _get(current, "temp_f" if units == "imperial" else "temp_c")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise ToolError("weatherapi.com's answer has no current temperature")
    return {
        "location": _get(data, "location", "name"),
        "temperature": temperature,
        "units": units,
        "condition": _get(current, "condition", "text"),
        "humidity": _get(current, "humidity"),
    }


def redact(text: str, key: str) -> str:
    """Error texts carry the URL, which carries the key: never show it."""
    key = key.strip()
    if not key:
        return text
    return text.replace(http.encode_query_value(key), "[REDACTED]").replace(key, "[REDACTED]")


def key_configured(value) -> bool:
    """Whether the key is usable: set and not blank."""
    return value is not None and value.strip() != ""


def validate(args):
    """(location, units): location required and non-blank, units metric (default) or imperial."""
    location = args.get("location")
    location = location.strip() if isinstance(location, str) else ""
    if not location:
        raise ToolError(
            "location is required (a city name or coordinates, e.g. 'London' or '51.5,-0.1')")
    units = args.get("units")
    if units is None:
        units = "metric"
    if units not in ("metric", "imperial"):
        raise ToolError(f"units must be 'metric' or 'imperial', got {json.dumps(units)}")
    return location, units
