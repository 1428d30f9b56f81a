//! Schema-guided repair of tool-call arguments before dispatch.
//!
//! Models routinely send `"42"` for an integer, `"true"` for a boolean, a
//! JSON-encoded string for an array or object, or a bare value where a list
//! is expected. Rejecting those calls wastes a round trip on what is
//! otherwise a well-formed request, so — like Hermes's `coerce_tool_args`
//! (model_tools.py) — we convert such values to the type the tool's JSON
//! Schema declares, and leave a value untouched whenever the conversion is
//! not clean. This is repair, not validation: it only removes trivially
//! fixable mismatches and never rejects anything.
//!
//! The behaviour follows Hermes rule for rule (see [`coerce_args`]); the
//! few places where it differs are called out where they happen.

use serde_json::{Map, Number, Value};

/// How deep schema-guided recursion may go (nested arrays/objects, nested
/// union `type` lists). Real tool schemas are a handful of levels deep; the
/// bound only exists so a pathological value or schema cannot exhaust the
/// stack on the dispatch path. Deeper levels are left as they are.
const MAX_DEPTH: usize = 64;

/// Coerces `args` in place to match `parameters` (a tool's JSON-Schema
/// `parameters` object), mirroring Hermes's `coerce_tool_args`.
///
/// For each argument whose property schema is a non-empty object:
/// - schema `type: "array"` (exactly) and a value that is neither an array
///   nor `null`: a string is first tried as JSON (and as `null` if the schema
///   is nullable); anything else, including a string that does not parse to
///   an array, is wrapped in a one-element array (`"a"` → `["a"]`,
///   `5` → `[5]`);
/// - other non-string values are kept, except that native arrays (schema
///   `array`) and objects (schema `object`) get their JSON-encoded elements
///   and sub-fields repaired where the nested schema expects a container;
/// - a string is converted according to `type` — a single name or a list of
///   names tried in order, first success wins: `integer`/`number` via float
///   parsing (integral values become JSON integers, so `"4"` and `"4.0"` are
///   `4` even for `number`; `"4.5"` stays a string for `integer`; NaN and
///   infinities are refused), `boolean` from `true`/`false` in any case with
///   surrounding whitespace, `array`/`object` from JSON text only when it
///   parses to that kind, and `null` from `"null"` (any case) when the schema
///   permits null (`type` includes `null`, `nullable: true`, or an
///   `anyOf`/`oneOf` branch of type `null`);
/// - on any failure the original value stays; properties missing from the
///   schema, and odd schemas (non-object `properties`, non-string `type`
///   entries, …), leave arguments untouched. Never panics.
pub fn coerce_args(args: &mut Map<String, Value>, parameters: &Value) {
    if args.is_empty() {
        return;
    }
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, value) in args.iter_mut() {
        let Some(prop_schema) = properties.get(key) else {
            continue;
        };
        // Hermes skips falsy property schemas; a non-object one would make it
        // raise, which we turn into "leave it alone".
        let Some(prop_obj) = prop_schema.as_object() else {
            continue;
        };
        if prop_obj.is_empty() {
            continue;
        }
        let expected = prop_obj.get("type");
        let expects = |kind: &str| matches!(expected, Some(Value::String(t)) if t == kind);

        if expects("array") && !value.is_null() && !value.is_array() {
            if let (Value::String(s), Some(expected)) = (&*value, expected)
                && let Some(coerced) = coerce_value(s, expected, prop_schema, 0)
            {
                // Hermes quirk kept on purpose: this path does not repair
                // JSON-encoded elements inside the parsed array.
                *value = coerced;
                continue;
            }
            // A bare scalar (or an object, or unparseable text) where a list
            // is expected: the model meant a one-element list.
            let bare = value.take();
            *value = Value::Array(vec![bare]);
            continue;
        }

        if !value.is_string() {
            if (expects("array") && value.is_array()) || (expects("object") && value.is_object()) {
                normalize_json_strings(value, prop_schema, 0);
            }
            continue;
        }

        if is_falsy(expected) && !schema_allows_null(prop_schema) {
            continue;
        }
        let Value::String(s) = &*value else {
            continue;
        };
        if let Some(coerced) = coerce_value(s, expected.unwrap_or(&Value::Null), prop_schema, 0) {
            *value = coerced;
            if value.is_array() || value.is_object() {
                normalize_json_strings(value, prop_schema, 0);
            }
        }
    }
}

/// Python truthiness of a schema `type` entry, because Hermes's "no type
/// declared" check is `if not expected`.
fn is_falsy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => !b,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
    }
}

/// Converts string `s` to `expected` (a type name or a list of them), or
/// `None` when no clean conversion exists — Hermes's `_coerce_value`, with
/// "returns the original object" expressed as `None`.
fn coerce_value(s: &str, expected: &Value, schema: &Value, depth: usize) -> Option<Value> {
    if schema_allows_null(schema) && is_null_text(s) {
        return Some(Value::Null);
    }
    match expected {
        Value::Array(kinds) if depth < MAX_DEPTH => kinds
            .iter()
            .find_map(|kind| coerce_value(s, kind, schema, depth + 1)),
        Value::String(kind) => match kind.as_str() {
            "integer" => coerce_number(s, true),
            "number" => coerce_number(s, false),
            "boolean" => coerce_boolean(s),
            "array" => parse_json(s).filter(Value::is_array),
            "object" => parse_json(s).filter(Value::is_object),
            "null" => is_null_text(s).then_some(Value::Null),
            _ => None,
        },
        _ => None,
    }
}

/// `"null"` in any case, surrounded by any whitespace (Python's
/// `value.strip().lower() == "null"`).
fn is_null_text(s: &str) -> bool {
    s.trim().to_lowercase() == "null"
}

/// `"true"`/`"false"` in any case, surrounded by any whitespace; anything
/// else (`"1"`, `"yes"`) is not a boolean — Hermes's `_coerce_boolean`.
fn coerce_boolean(s: &str) -> Option<Value> {
    match s.trim().to_lowercase().as_str() {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        _ => None,
    }
}

/// JSON text → value, `None` if it does not parse.
fn parse_json(s: &str) -> Option<Value> {
    serde_json::from_str(s).ok()
}

/// Hermes's `_coerce_number`: parse like Python's `float()`, refuse NaN and
/// infinities (not representable in JSON), return an integer when the value
/// has no fractional part, and refuse fractional values for `integer`.
///
/// Deviation: an integer literal that fits 64 bits is taken exactly instead
/// of via a float, so `"9007199254740993"` is not rounded as it is in Hermes.
/// Integral values beyond 64 bits (Hermes would produce a Python big int)
/// become a JSON float of the same value.
fn coerce_number(s: &str, integer_only: bool) -> Option<Value> {
    let text = strip_digit_underscores(s.trim())?;
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::from(i));
    }
    if let Ok(u) = text.parse::<u64>() {
        return Some(Value::from(u));
    }
    let f: f64 = text.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    if f.fract() == 0.0 {
        // 2^63 and 2^64 are exact in f64, so these comparisons are exact too.
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
        const TWO_64: f64 = 18_446_744_073_709_551_616.0;
        // The casts below are exact: `f` is integral and range-checked.
        if (-TWO_63..TWO_63).contains(&f) {
            return Some(Value::from(f as i64));
        } else if (0.0..TWO_64).contains(&f) {
            return Some(Value::from(f as u64));
        }
    } else if integer_only {
        return None;
    }
    Number::from_f64(f).map(Value::Number)
}

/// Python's `float()` accepts `_` between digits (`"1_000"`); Rust's parser
/// does not. Returns the text without such underscores, or `None` if an
/// underscore is misplaced (which Python rejects too).
fn strip_digit_underscores(text: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !text.contains('_') {
        return Some(text.into());
    }
    let bytes = text.as_bytes();
    let between_digits = |i: usize| {
        i > 0
            && bytes.get(i - 1).is_some_and(u8::is_ascii_digit)
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
    };
    let ok = bytes
        .iter()
        .enumerate()
        .all(|(i, b)| *b != b'_' || between_digits(i));
    ok.then(|| text.replace('_', "").into())
}

/// Whether a schema fragment explicitly permits `null` — Hermes's
/// `_schema_allows_null`: `type` is or contains `"null"`, `nullable: true`,
/// or an `anyOf`/`oneOf` branch whose `type` is `"null"`.
fn schema_allows_null(schema: &Value) -> bool {
    let Some(obj) = schema.as_object() else {
        return false;
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "null" => return true,
        Some(Value::Array(ts)) if ts.iter().any(|t| t == "null") => return true,
        _ => {}
    }
    if obj.get("nullable") == Some(&Value::Bool(true)) {
        return true;
    }
    ["anyOf", "oneOf"].iter().any(|key| {
        obj.get(*key)
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                branches
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("null"))
            })
    })
}

/// Whether `schema` accepts JSON kind `kind` (`"array"`/`"object"`) through
/// its `type` (name or list) or any `anyOf`/`oneOf`/`allOf` branch —
/// Hermes's `_schema_accepts_kind`.
fn schema_accepts_kind(schema: &Value, kind: &str, depth: usize) -> bool {
    let Some(obj) = schema.as_object() else {
        return false;
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == kind => return true,
        Some(Value::Array(ts)) if ts.iter().any(|t| t == kind) => return true,
        _ => {}
    }
    if depth >= MAX_DEPTH {
        return false;
    }
    ["anyOf", "oneOf", "allOf"].iter().any(|key| {
        obj.get(*key)
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                branches
                    .iter()
                    .any(|b| schema_accepts_kind(b, kind, depth + 1))
            })
    })
}

/// Hermes's `_normalize_json_strings_for_schema`: walk `value` alongside its
/// schema and parse JSON-encoded strings found where the schema expects an
/// array or object (array items via `items`, object fields via
/// `properties`). Schema-guided so genuine JSON-looking `string` fields are
/// never touched.
fn normalize_json_strings(value: &mut Value, schema: &Value, depth: usize) {
    let Some(schema_obj) = schema.as_object() else {
        return;
    };
    if depth >= MAX_DEPTH {
        return;
    }
    if let Value::String(s) = &*value {
        let trimmed = s.trim();
        let wants_array = schema_accepts_kind(schema, "array", 0);
        let wants_object = schema_accepts_kind(schema, "object", 0);
        if !((wants_array && trimmed.starts_with('['))
            || (wants_object && trimmed.starts_with('{')))
        {
            return;
        }
        match parse_json(trimmed) {
            Some(parsed @ Value::Array(_)) if wants_array => *value = parsed,
            Some(parsed @ Value::Object(_)) if wants_object => *value = parsed,
            _ => return,
        }
    }
    match value {
        Value::Array(items) => {
            let Some(items_schema) = schema_obj.get("items").filter(|s| s.is_object()) else {
                return;
            };
            for item in items {
                normalize_json_strings(item, items_schema, depth + 1);
            }
        }
        Value::Object(fields) => {
            let Some(props) = schema_obj.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (name, prop_schema) in props {
                if !prop_schema.is_object() {
                    continue;
                }
                if let Some(field) = fields.get_mut(name) {
                    normalize_json_strings(field, prop_schema, depth + 1);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly by design"
)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Coerces a single argument `v` against property schema `prop`.
    fn one(prop: Value, v: Value) -> Value {
        let params = json!({"type": "object", "properties": {"x": prop}});
        let mut args = Map::new();
        args.insert("x".into(), v);
        coerce_args(&mut args, &params);
        args.remove("x").unwrap()
    }

    #[test]
    fn scalar_table() {
        let cases: Vec<(Value, Value, Value)> = vec![
            // integer
            (json!({"type": "integer"}), json!("42"), json!(42)),
            (json!({"type": "integer"}), json!(" -7 "), json!(-7)),
            (json!({"type": "integer"}), json!("+3"), json!(3)),
            (json!({"type": "integer"}), json!("4.0"), json!(4)),
            (json!({"type": "integer"}), json!("1e3"), json!(1000)),
            (json!({"type": "integer"}), json!("1_000"), json!(1000)),
            (json!({"type": "integer"}), json!("0042"), json!(42)),
            (json!({"type": "integer"}), json!("4.2"), json!("4.2")),
            (json!({"type": "integer"}), json!("abc"), json!("abc")),
            (json!({"type": "integer"}), json!(""), json!("")),
            (json!({"type": "integer"}), json!("_1"), json!("_1")),
            (json!({"type": "integer"}), json!("1__0"), json!("1__0")),
            (json!({"type": "integer"}), json!("1_"), json!("1_")),
            (json!({"type": "integer"}), json!("nan"), json!("nan")),
            (json!({"type": "integer"}), json!("inf"), json!("inf")),
            (json!({"type": "integer"}), json!("1e400"), json!("1e400")),
            (json!({"type": "integer"}), json!("0x10"), json!("0x10")),
            (json!({"type": "integer"}), json!("true"), json!("true")),
            (
                json!({"type": "integer"}),
                json!("9007199254740993"),
                json!(9_007_199_254_740_993_i64),
            ),
            (
                json!({"type": "integer"}),
                json!("18446744073709551615"),
                json!(u64::MAX),
            ),
            // number: integral values stay integers, as in Hermes
            (json!({"type": "number"}), json!("4.5"), json!(4.5)),
            (json!({"type": "number"}), json!("4"), json!(4)),
            (json!({"type": "number"}), json!("4.0"), json!(4)),
            (json!({"type": "number"}), json!(".5"), json!(0.5)),
            (json!({"type": "number"}), json!("-2.5e-3"), json!(-0.0025)),
            (json!({"type": "number"}), json!("1e20"), json!(1e20)),
            (
                json!({"type": "number"}),
                json!("-Infinity"),
                json!("-Infinity"),
            ),
            (json!({"type": "number"}), json!("1,5"), json!("1,5")),
            // boolean: case-insensitive, trimmed, nothing else
            (json!({"type": "boolean"}), json!("true"), json!(true)),
            (json!({"type": "boolean"}), json!("FALSE"), json!(false)),
            (json!({"type": "boolean"}), json!(" True\n"), json!(true)),
            (json!({"type": "boolean"}), json!("1"), json!("1")),
            (json!({"type": "boolean"}), json!("yes"), json!("yes")),
            // object: only JSON text that parses to an object
            (
                json!({"type": "object"}),
                json!(r#"{"a":1}"#),
                json!({"a": 1}),
            ),
            (
                json!({"type": "object"}),
                json!(r#" {"a":1} "#),
                json!({"a": 1}),
            ),
            (json!({"type": "object"}), json!("[1]"), json!("[1]")),
            (
                json!({"type": "object"}),
                json!("{broken"),
                json!("{broken"),
            ),
            (json!({"type": "object"}), json!("null"), json!("null")),
            // string and unknown types: untouched
            (json!({"type": "string"}), json!("42"), json!("42")),
            (json!({"type": "frobnicate"}), json!("42"), json!("42")),
            (json!({"description": "no type"}), json!("42"), json!("42")),
        ];
        for (prop, input, expected) in cases {
            let got = one(prop.clone(), input.clone());
            assert_eq!(got, expected, "schema {prop} input {input}");
        }
    }

    #[test]
    fn integers_are_json_integers() {
        assert!(one(json!({"type": "number"}), json!("4")).is_i64());
        assert!(one(json!({"type": "integer"}), json!("1e3")).is_i64());
        assert!(one(json!({"type": "number"}), json!("4.5")).is_f64());
    }

    #[test]
    fn array_table() {
        let arr = json!({"type": "array"});
        let cases: Vec<(Value, Value)> = vec![
            (json!("[1, 2]"), json!([1, 2])),
            (json!(" [\"a\"] "), json!(["a"])),
            // not an array once parsed, or not JSON: wrapped, as in Hermes
            (json!("https://a.com"), json!(["https://a.com"])),
            (json!(r#"{"a":1}"#), json!([r#"{"a":1}"#])),
            (json!("[broken"), json!(["[broken"])),
            (json!("null"), json!(["null"])),
            (json!(""), json!([""])),
            // bare non-strings are wrapped too
            (json!(5), json!([5])),
            (json!(true), json!([true])),
            (json!({"a": 1}), json!([{"a": 1}])),
            // already fine, or null: kept
            (json!([1]), json!([1])),
            (Value::Null, Value::Null),
        ];
        for (input, expected) in cases {
            assert_eq!(one(arr.clone(), input.clone()), expected, "input {input}");
        }
    }

    #[test]
    fn union_types_try_in_order() {
        let cases: Vec<(Value, Value, Value)> = vec![
            (json!(["integer", "string"]), json!("42"), json!(42)),
            (json!(["integer", "string"]), json!("abc"), json!("abc")),
            (json!(["boolean", "integer"]), json!("1"), json!(1)),
            (json!(["boolean", "integer"]), json!("true"), json!(true)),
            (json!(["string", "integer"]), json!("42"), json!(42)),
            (json!(["object", "array"]), json!("[1]"), json!([1])),
            (
                json!(["array", "object"]),
                json!(r#"{"k":[]}"#),
                json!({"k": []}),
            ),
            (json!(["integer", "number"]), json!("2.5"), json!(2.5)),
            // list-typed "array" is not wrapped (Hermes checks `== "array"`)
            (json!(["array", "string"]), json!("plain"), json!("plain")),
            (json!(["array", "null"]), json!(5), json!(5)),
            // odd entries are skipped, not fatal
            (json!([5, {"x": 1}, null, "integer"]), json!("7"), json!(7)),
            (json!([["integer"]]), json!("7"), json!(7)),
            (json!([]), json!("7"), json!("7")),
        ];
        for (ty, input, expected) in cases {
            let got = one(json!({ "type": ty.clone() }), input.clone());
            assert_eq!(got, expected, "type {ty} input {input}");
        }
    }

    #[test]
    fn nullable_schemas_turn_null_text_into_null() {
        let cases: Vec<(Value, Value, Value)> = vec![
            (
                json!({"type": ["integer", "null"]}),
                json!("null"),
                Value::Null,
            ),
            (
                json!({"type": ["integer", "null"]}),
                json!(" NULL "),
                Value::Null,
            ),
            (json!({"type": ["integer", "null"]}), json!("3"), json!(3)),
            (
                json!({"type": "string", "nullable": true}),
                json!("null"),
                Value::Null,
            ),
            (
                json!({"type": "string", "nullable": "yes"}),
                json!("null"),
                json!("null"),
            ),
            (
                json!({"type": "array", "nullable": true}),
                json!("null"),
                Value::Null,
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                json!("null"),
                Value::Null,
            ),
            (
                json!({"oneOf": [{"type": "integer"}, {"type": "null"}]}),
                json!("Null"),
                Value::Null,
            ),
            // anyOf without a type: only the null conversion applies
            (
                json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
                json!("5"),
                json!("5"),
            ),
            (json!({"type": "null"}), json!("null"), Value::Null),
            (json!({"type": "string"}), json!("null"), json!("null")),
        ];
        for (prop, input, expected) in cases {
            let got = one(prop.clone(), input.clone());
            assert_eq!(got, expected, "schema {prop} input {input}");
        }
    }

    #[test]
    fn non_string_values_for_scalar_types_are_untouched() {
        assert_eq!(one(json!({"type": "integer"}), json!(4.5)), json!(4.5));
        assert_eq!(one(json!({"type": "string"}), json!(true)), json!(true));
        assert_eq!(one(json!({"type": "boolean"}), json!(1)), json!(1));
        assert_eq!(one(json!({"type": "object"}), json!([1])), json!([1]));
        assert_eq!(one(json!({"type": "integer"}), Value::Null), Value::Null);
    }

    #[test]
    fn properties_not_in_schema_are_untouched() {
        let params = json!({"properties": {"n": {"type": "integer"}}});
        let mut args = json!({"n": "1", "other": "2", "flag": "true"})
            .as_object()
            .cloned()
            .unwrap();
        coerce_args(&mut args, &params);
        assert_eq!(
            Value::Object(args),
            json!({"n": 1, "other": "2", "flag": "true"})
        );
    }

    #[test]
    fn odd_schemas_never_panic_and_change_nothing() {
        let original = json!({"x": "42", "y": "[1]"});
        let schemas = [
            json!(null),
            json!("object"),
            json!([]),
            json!({}),
            json!({"properties": null}),
            json!({"properties": [1, 2]}),
            json!({"properties": "x"}),
            json!({"properties": {"x": true, "y": "array"}}),
            json!({"properties": {"x": 5, "y": null}}),
            json!({"properties": {"x": {}, "y": []}}),
            json!({"properties": {"x": {"type": 5}, "y": {"type": {"a": 1}}}}),
            json!({"properties": {"x": {"type": null}, "y": {"type": false}}}),
            json!({"properties": {"x": {"type": ""}, "y": {"type": []}}}),
            json!({"properties": {"x": {"anyOf": "nope", "oneOf": [1]}}}),
        ];
        for schema in schemas {
            let mut args = original.as_object().cloned().unwrap();
            coerce_args(&mut args, &schema);
            assert_eq!(Value::Object(args), original, "schema {schema}");
        }
        // Empty args with any schema is a no-op.
        let mut empty = Map::new();
        coerce_args(
            &mut empty,
            &json!({"properties": {"x": {"type": "integer"}}}),
        );
        assert!(empty.is_empty());
    }

    #[test]
    fn nested_json_strings_are_repaired_inside_native_containers() {
        let tasks = json!({
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sub": {"type": "array"},
                    "label": {"type": "string"},
                    "n": {"type": "integer"}
                }
            }
        });
        let input = json!([
            r#"{"sub": "[1, 2]", "label": "[not parsed]", "n": "3"}"#,
            {"sub": "[3]", "label": "{}"},
            "not json"
        ]);
        // Element strings parse into objects, their `sub` strings into arrays;
        // `label` is a string field and `n` is only coerced at top level.
        assert_eq!(
            one(tasks, input),
            json!([
                {"sub": [1, 2], "label": "[not parsed]", "n": "3"},
                {"sub": [3], "label": "{}"},
                "not json"
            ])
        );

        let cfg = json!({
            "type": "object",
            "properties": {"list": {"type": "array"}, "inner": {"anyOf": [{"type": "object"}]}}
        });
        assert_eq!(
            one(
                cfg.clone(),
                json!({"list": "[1,2]", "inner": r#"{"k": 1}"#, "extra": "[9]"})
            ),
            json!({"list": [1, 2], "inner": {"k": 1}, "extra": "[9]"})
        );
        // A top-level JSON string for an object is parsed and then repaired.
        assert_eq!(
            one(cfg, json!(r#"{"list": "[1,2]"}"#)),
            json!({"list": [1, 2]})
        );
    }

    #[test]
    fn array_string_path_does_not_recurse_like_hermes() {
        let prop = json!({"type": "array", "items": {"type": "object"}});
        assert_eq!(
            one(prop.clone(), json!(r#"["{\"a\":1}"]"#)),
            json!([r#"{"a":1}"#])
        );
        // …whereas a native array gets its elements repaired.
        assert_eq!(one(prop, json!([r#"{"a":1}"#])), json!([{"a": 1}]));
    }

    #[test]
    fn deep_nesting_is_bounded() {
        // 200 levels of `items` and 200 levels of arrays ending in a JSON
        // string: repair stops at MAX_DEPTH instead of recursing without end.
        let mut schema = json!({"type": "array"});
        let mut value = json!("[1]");
        for _ in 0..200 {
            schema = json!({"type": "array", "items": schema});
            value = json!([value]);
        }
        let mut got = one(schema, value);
        let mut depth = 0;
        while let Value::Array(mut inner) = got {
            got = inner.pop().unwrap();
            depth += 1;
        }
        assert_eq!(got, json!("[1]"), "leaf beyond the bound stays a string");
        assert!(depth > MAX_DEPTH);

        let mut ty = json!("integer");
        for _ in 0..500 {
            ty = json!([ty]);
        }
        assert_eq!(one(json!({ "type": ty }), json!("1")), json!("1"));
    }

    #[test]
    fn many_arguments_in_one_call() {
        let params = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer"},
                "limit": {"type": "integer"},
                "ratio": {"type": "number"},
                "recursive": {"type": "boolean"},
                "urls": {"type": "array", "items": {"type": "string"}},
                "headers": {"type": "object"}
            }
        });
        let mut args = json!({
            "path": "123",
            "offset": "10",
            "limit": 5,
            "ratio": "0.25",
            "recursive": "false",
            "urls": "https://a.com",
            "headers": r#"{"a": "b"}"#
        })
        .as_object()
        .cloned()
        .unwrap();
        coerce_args(&mut args, &params);
        assert_eq!(
            Value::Object(args),
            json!({
                "path": "123",
                "offset": 10,
                "limit": 5,
                "ratio": 0.25,
                "recursive": false,
                "urls": ["https://a.com"],
                "headers": {"a": "b"}
            })
        );
    }
}
