//! Tool `todo`: Hermes's task list for the current session (tools/todo_tool.py), kept in
//! the session's key-value store instead of the agent's memory, so it survives the
//! agent's process and is shared by a session's calls on any node.
//!
//! Behaviour is Hermes's, rule for rule: replace or merge by id, items normalised
//! (unknown status → pending, blank id → "?", empty content → "(no description)",
//! content capped at 4,000 characters), duplicate ids collapsed to the last, at most
//! 256 items, the full list and a summary returned. Two deliberate differences: the
//! host checks arguments against the schema, so a `todos` that is not a list of objects
//! is refused as invalid arguments instead of being normalised; and the schema's items
//! do not require every field, since a merge updates items partially.

use hermetic_sdk::serde_json::{Map, Value, json};
use hermetic_sdk::{Context, Tool, kv};

const VALID: [&str; 4] = ["pending", "in_progress", "completed", "cancelled"];
const MAX_CONTENT_CHARS: usize = 4000;
const MAX_ITEMS: usize = 256;
const TRUNCATED: &str = "… [truncated]";
/// Where the list is kept in the session's store.
const KEY: &str = "todos";

const DESCRIPTION: &str = "Manage your task list for the current session. Use for complex tasks with 3+ steps or when the user provides multiple tasks. Call with no parameters to read the current list.\n\nWriting:\n- Provide 'todos' array to create/update items\n- merge=false (default): replace the entire list with a fresh plan\n- merge=true: update existing items by id, add any new ones\n\nEach item: {id: string, content: string, status: pending|in_progress|completed|cancelled}\nList order is priority. Only ONE item in_progress at a time.\nMark items completed immediately when done. If something fails, cancel it and add a revised item.\n\nAlways returns the full current list.";

/// One item: id, content, status (in that order on the wire).
#[derive(Clone)]
struct Item {
    id: String,
    content: String,
    status: String,
}

impl Item {
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), json!(self.id));
        m.insert("content".into(), json!(self.content));
        m.insert("status".into(), json!(self.status));
        Value::Object(m)
    }
}

/// Python's `str()` of a JSON value, as Hermes applies it to ids and contents.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        other => other.to_string(),
    }
}

fn cap(content: &str) -> String {
    if content.chars().count() <= MAX_CONTENT_CHARS {
        return content.to_owned();
    }
    let keep = MAX_CONTENT_CHARS - TRUNCATED.chars().count();
    let mut out: String = content.chars().take(keep).collect();
    out.push_str(TRUNCATED);
    out
}

fn id_of(item: &Value) -> String {
    item.get("id")
        .map(text)
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn validate(item: &Value) -> Item {
    let Some(obj) = item.as_object() else {
        return Item {
            id: "?".into(),
            content: "(invalid item)".into(),
            status: "pending".into(),
        };
    };
    let id = id_of(item);
    let content = obj.get("content").map(text).unwrap_or_default();
    let content = content.trim();
    let status = obj
        .get("status")
        .map_or_else(|| "pending".to_owned(), text)
        .trim()
        .to_lowercase();
    Item {
        id: if id.is_empty() { "?".into() } else { id },
        content: if content.is_empty() {
            "(no description)".into()
        } else {
            cap(content)
        },
        status: if VALID.contains(&status.as_str()) {
            status
        } else {
            "pending".into()
        },
    }
}

/// Collapses duplicate ids, keeping the last occurrence in its position.
fn dedupe(todos: &[Value]) -> Vec<&Value> {
    let mut last: Vec<(String, usize)> = Vec::new();
    for (i, item) in todos.iter().enumerate() {
        let key = if item.is_object() {
            let id = id_of(item);
            if id.is_empty() { "?".to_owned() } else { id }
        } else {
            format!("__invalid_{i}")
        };
        match last.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = i,
            None => last.push((key, i)),
        }
    }
    let mut keep: Vec<usize> = last.into_iter().map(|(_, i)| i).collect();
    keep.sort_unstable();
    keep.into_iter().map(|i| &todos[i]).collect()
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn write(items: &mut Vec<Item>, todos: &[Value], merge: bool) {
    if !merge {
        *items = dedupe(todos).into_iter().map(validate).collect();
    } else {
        for t in dedupe(todos) {
            let Some(obj) = t.as_object() else { continue };
            let id = id_of(t);
            if id.is_empty() {
                continue;
            }
            match items.iter_mut().find(|i| i.id == id) {
                Some(existing) => {
                    if let Some(c) = obj.get("content").filter(|c| truthy(c)) {
                        existing.content = cap(text(c).trim());
                    }
                    if let Some(s) = obj.get("status").filter(|s| truthy(s)) {
                        let status = text(s).trim().to_lowercase();
                        if VALID.contains(&status.as_str()) {
                            existing.status = status;
                        }
                    }
                }
                None => items.push(validate(t)),
            }
        }
        // Repeated ids (first wins), as Hermes's rebuild drops them.
        let mut seen = Vec::new();
        items.retain(|i| {
            let fresh = !seen.contains(&i.id);
            seen.push(i.id.clone());
            fresh
        });
    }
    items.truncate(MAX_ITEMS);
}

/// How often a write starts over when other calls of the session keep changing the list.
const TRIES: usize = 32;

/// The stored list: its items and the bytes read (which a write expects still there).
fn load(bucket: &kv::Bucket) -> hermetic_sdk::Result<(Vec<Item>, Option<Vec<u8>>)> {
    let Some(bytes) = bucket.get(KEY)? else {
        return Ok((Vec::new(), None));
    };
    let stored: Vec<Value> = serde_json::from_slice(&bytes).unwrap_or_default();
    Ok((stored.iter().map(validate).collect(), Some(bytes)))
}

fn result(items: &[Item]) -> Value {
    let count = |s: &str| items.iter().filter(|i| i.status == s).count();
    let mut summary = Map::new();
    summary.insert("total".into(), json!(items.len()));
    for s in VALID {
        summary.insert(s.into(), json!(count(s)));
    }
    let mut out = Map::new();
    out.insert(
        "todos".into(),
        Value::Array(items.iter().map(Item::to_json).collect()),
    );
    out.insert("summary".into(), Value::Object(summary));
    Value::Object(out)
}

struct Todo;

impl Tool for Todo {
    type Args = Value;

    fn schema() -> Value {
        json!({
            "name": "todo",
            "description": DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "description": "Task items to write. Omit to read current list.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "Unique item identifier"},
                                "content": {"type": "string", "description": "Task description"},
                                "status": {
                                    "type": "string",
                                    "enum": ["pending", "in_progress", "completed", "cancelled"],
                                    "description": "Current status"
                                }
                            }
                        }
                    },
                    "merge": {
                        "type": "boolean",
                        "description": "true: update existing items by id, add new ones. false (default): replace the entire list.",
                        "default": false
                    }
                }
            }
        })
    }

    fn handle(args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let bucket = kv::open("")?;
        match args.get("todos").filter(|t| !t.is_null()) {
            None => Ok(result(&load(&bucket)?.0)),
            Some(Value::Array(todos)) => {
                let merge = args.get("merge").is_some_and(truthy);
                // Read, change, write if unchanged (parallel calls of one session each
                // keep their change); start over on what another call wrote.
                for _ in 0..TRIES {
                    let (mut items, read) = load(&bucket)?;
                    write(&mut items, todos, merge);
                    let stored = Value::Array(items.iter().map(Item::to_json).collect());
                    if kv::swap(&bucket, KEY, read.as_deref(), stored.to_string().as_bytes())? {
                        return Ok(result(&items));
                    }
                }
                Ok(
                    json!({"error": format!("the todo list kept changing under this call ({TRIES} tries): try again")}),
                )
            }
            Some(other) => {
                let kind = match other {
                    Value::Object(_) => "dict",
                    Value::String(_) => "str",
                    Value::Bool(_) => "bool",
                    Value::Number(n) if n.is_f64() => "float",
                    _ => "int",
                };
                Ok(json!({"error": format!("todos must be a list, got {kind}")}))
            }
        }
    }
}

hermetic_sdk::export_tool!(
    Todo,
    r#"
name = "todo"
toolset = "todo"
emoji = "📋"
description = "The session's task list (Hermes's todo)"
[capabilities]
keyvalue = "session"
"#
);

#[cfg(test)]
mod tests {
    use super::*;

    fn run(items: &mut Vec<Item>, args: Value) -> Value {
        if let Some(Value::Array(todos)) = args.get("todos") {
            let merge = args.get("merge").is_some_and(truthy);
            write(items, todos, merge);
        }
        result(items)
    }

    /// Hermes's own examples (the spec's 1.11), in sequence on one list.
    #[test]
    fn hermes_examples() {
        let mut items = Vec::new();
        assert_eq!(
            run(&mut items, json!({})),
            serde_json::from_str::<Value>(r#"{"todos":[],"summary":{"total":0,"pending":0,"in_progress":0,"completed":0,"cancelled":0}}"#).unwrap()
        );
        assert_eq!(
            run(&mut items, json!({"todos":[{"id":"1","content":"Write spec","status":"in_progress"},{"id":"2","content":"Review","status":"pending"}]})),
            serde_json::from_str::<Value>(r#"{"todos":[{"id":"1","content":"Write spec","status":"in_progress"},{"id":"2","content":"Review","status":"pending"}],"summary":{"total":2,"pending":1,"in_progress":1,"completed":0,"cancelled":0}}"#).unwrap()
        );
        assert_eq!(
            run(&mut items, json!({"todos":[{"id":"2","status":"completed"},{"id":"3","content":"Ship"}],"merge":true})),
            serde_json::from_str::<Value>(r#"{"todos":[{"id":"1","content":"Write spec","status":"in_progress"},{"id":"2","content":"Review","status":"completed"},{"id":"3","content":"Ship","status":"pending"}],"summary":{"total":3,"pending":1,"in_progress":1,"completed":1,"cancelled":0}}"#).unwrap()
        );
        assert_eq!(
            run(&mut items, json!({"todos":[{"id":"a","content":"x","status":"DONE"},{"content":"no id"},{"id":"a","content":"dup last","status":" Completed "},{"id":"","content":""},"str"]})),
            serde_json::from_str::<Value>(r#"{"todos":[{"id":"a","content":"dup last","status":"completed"},{"id":"?","content":"(no description)","status":"pending"},{"id":"?","content":"(invalid item)","status":"pending"}],"summary":{"total":3,"pending":2,"in_progress":0,"completed":1,"cancelled":0}}"#).unwrap()
        );
        let long = "y".repeat(5000);
        let out = run(
            &mut items,
            json!({"todos":[{"id":"1","content": long,"status":"pending"}]}),
        );
        let content = out["todos"][0]["content"].as_str().unwrap();
        assert_eq!(content.chars().count(), 4000);
        assert!(content.ends_with("… [truncated]"));
        run(
            &mut items,
            json!({"todos":[{"id":"1","content":"   "}],"merge":true}),
        );
        assert_eq!(items[0].content, "");
        let many: Vec<Value> = (0..300)
            .map(|i| json!({"id": i.to_string(), "content": "c"}))
            .collect();
        run(&mut items, json!({ "todos": many }));
        assert_eq!(items.len(), 256);
    }
}
