//! Tool `weather`: current weather for a location — the example tool of Hermes's
//! "Adding Tools" guide (website/docs/developer-guide/adding-tools.md, `weather_tool.py`).
//!
//! Same schema (`location`, `units` = metric | imperial), the same availability check
//! (`WEATHER_API_KEY` set and non-empty) and the same `WEATHER_API_KEY not configured`
//! error. The guide's handler calls weatherapi.com; outbound HTTP is not enabled in this
//! hermetic build, so after validating its arguments the handler says so instead of
//! calling out (no `wasi:http` import).
use hermetic_sdk::{Context, Tool, ToolError, Value, json};

/// The API the guide's tool talks to (declared in `capabilities.network`).
const API_ORIGIN: &str = "https://api.weatherapi.com";
const KEY_VAR: &str = "WEATHER_API_KEY";

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
        Err(ToolError::new(format!(
            "network access to {API_ORIGIN} is not available: outbound HTTP is not enabled in this hermetic build (weather for {location:?} in {units} units was not fetched)"
        )))
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
