//! Tool `weather`: current weather for a location — the example tool of Hermes's
//! "Adding Tools" guide (website/docs/developer-guide/adding-tools.md, `weather_tool.py`).
//!
//! Same schema (`location`, `units` = metric | imperial), the same availability check
//! (`WEATHER_API_KEY` set and non-empty), the same `WEATHER_API_KEY not configured`
//! error, and the same call: weatherapi.com's `/v1/current.json`, reduced to
//! `{location, temperature, units, condition, humidity}`. The request goes through the
//! host's wasi:http, so it only leaves when the operator grants
//! `https://api.weatherapi.com` to this tool.
use hermetic_sdk::{Context, Tool, ToolError, Value, http, json};

/// The API the guide's tool talks to (declared in `capabilities.network`).
const API_ORIGIN: &str = "https://api.weatherapi.com";
const KEY_VAR: &str = "WEATHER_API_KEY";
/// weatherapi.com's current-weather answers are a few KiB.
const MAX_RESPONSE_BYTES: usize = 256 * 1024;

#[derive(serde::Deserialize)]
struct Args {
    #[serde(default)]
    location: Option<String>,
    #[serde(default)]
    units: Option<String>,
}

struct Weather;

impl Tool for Weather {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "weather",
            "description": "Get current weather for a location.",
            "parameters": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "location": {
                        "type": "string",
                        "description": "City name or coordinates (e.g. 'London' or '51.5,-0.1')"
                    },
                    "units": {
                        "type": "string",
                        "enum": ["metric", "imperial"],
                        "description": "Temperature units (default: metric)",
                        "default": "metric"
                    }
                },
                "required": ["location"]
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "location": {"type": ["string", "null"]},
                    "temperature": {"type": "number"},
                    "units": {"type": "string"},
                    "condition": {"type": ["string", "null"]},
                    "humidity": {"type": ["number", "null"]}
                },
                "required": ["location", "temperature", "units"]
            }
        })
    }

    fn check() -> bool {
        key_configured(std::env::var(KEY_VAR).ok().as_deref())
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let (location, units) = validate(args)?;
        if !key_configured(std::env::var(KEY_VAR).ok().as_deref()) {
            return Err(ToolError::new(format!("{KEY_VAR} not configured")));
        }
        let key = std::env::var(KEY_VAR).unwrap_or_default();
        let url = format!(
            "{API_ORIGIN}/v1/current.json?key={}&q={}&aqi=no",
            http::encode_query_value(key.trim()),
            http::encode_query_value(&location)
        );
        let response = http::get(&url, MAX_RESPONSE_BYTES)
            .map_err(|e| ToolError::new(redact(&e.to_string(), &key)))?;
        let data: Value = hermetic_sdk::serde_json::from_slice(&response.body).map_err(|_| {
            ToolError::new(format!(
                "weatherapi.com answered HTTP {} with a body that is not JSON",
                response.status
            ))
        })?;
        summarize(response.status, &data, &units)
    }
}

hermetic_sdk::export_tool!(
    Weather,
    r#"
name = "weather"
toolset = "weather"
description = "Current weather for a location (the Hermes docs' example tool)"
emoji = "🌤️"
requires_env = ["WEATHER_API_KEY"]
max_result_chars = 10000
timeout_ms = 15000
memory_mb = 16

[capabilities]
network = ["https://api.weatherapi.com"]
env = ["WEATHER_API_KEY"]
"#
);

/// The guide's result shape, or the API's own error message.
fn summarize(status: u16, data: &Value, units: &str) -> hermetic_sdk::Result<Value> {
    if let Some(message) = data["error"]["message"].as_str() {
        return Err(ToolError::new(format!("weatherapi.com: {message}")));
    }
    if !(200..300).contains(&status) {
        return Err(ToolError::new(format!(
            "weatherapi.com answered HTTP {status}"
        )));
    }
    let current = &data["current"];
    let temperature = if units == "imperial" {
        &current["temp_f"]
    } else {
        &current["temp_c"]
    };
    if !temperature.is_number() {
        return Err(ToolError::new(
            "weatherapi.com's answer has no current temperature",
        ));
    }
    Ok(json!({
        "location": data["location"]["name"],
        "temperature": temperature,
        "units": units,
        "condition": current["condition"]["text"],
        "humidity": current["humidity"],
    }))
}

/// Error texts carry the URL, which carries the key: never show it.
fn redact(text: &str, key: &str) -> String {
    let key = key.trim();
    if key.is_empty() {
        return text.to_owned();
    }
    text.replace(&http::encode_query_value(key), "[REDACTED]")
        .replace(key, "[REDACTED]")
}

/// Whether the key is usable: set and not blank.
fn key_configured(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.trim().is_empty())
}

/// `(location, units)`: location required and non-blank, units metric (default) or imperial.
fn validate(args: Args) -> hermetic_sdk::Result<(String, String)> {
    let location = args
        .location
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .ok_or_else(|| {
            ToolError::new(
                "location is required (a city name or coordinates, e.g. 'London' or '51.5,-0.1')",
            )
        })?;
    let units = args.units.unwrap_or_else(|| "metric".into());
    if units != "metric" && units != "imperial" {
        return Err(ToolError::new(format!(
            "units must be 'metric' or 'imperial', got {units:?}"
        )));
    }
    Ok((location, units))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn args(v: Value) -> Args {
        hermetic_sdk::serde_json::from_value(v).unwrap()
    }

    #[test]
    fn validates_arguments() {
        assert!(
            validate(args(json!({})))
                .unwrap_err()
                .0
                .contains("location is required")
        );
        assert!(validate(args(json!({"location": "  "}))).is_err());
        assert!(validate(args(json!({"location": "Paris", "units": "kelvin"}))).is_err());
        assert_eq!(
            validate(args(json!({"location": " London "}))).unwrap(),
            ("London".to_owned(), "metric".to_owned())
        );
    }

    #[test]
    fn answers_reduce_to_the_guides_shape() {
        let data = json!({
            "location": {"name": "London"},
            "current": {"temp_c": 11.0, "temp_f": 51.8, "humidity": 82,
                        "condition": {"text": "Light rain"}}
        });
        assert_eq!(
            summarize(200, &data, "imperial").unwrap(),
            json!({"location": "London", "temperature": 51.8, "units": "imperial",
                   "condition": "Light rain", "humidity": 82})
        );
        let err = summarize(
            400,
            &json!({"error": {"code": 1006, "message": "No matching location found."}}),
            "metric",
        );
        assert_eq!(
            err.unwrap_err().0,
            "weatherapi.com: No matching location found."
        );
        assert!(summarize(200, &json!({}), "metric").is_err());
        assert_eq!(
            redact("GET https://x/?key=a%20b failed", "a b"),
            "GET https://x/?key=[REDACTED] failed"
        );
    }

    #[test]
    fn key_must_be_set_and_non_empty() {
        assert!(!key_configured(None));
        assert!(!key_configured(Some("")));
        assert!(!key_configured(Some("  ")));
        assert!(key_configured(Some("abc123")));
    }

    #[test]
    fn schema_and_declaration_agree() {
        assert_eq!(Weather::schema()["name"], "weather");
        assert_eq!(
            Weather::schema()["parameters"]["required"],
            json!(["location"])
        );
    }
}
