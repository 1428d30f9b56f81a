//! Policy files and tenants over real components: what each tenant sees and gets, and
//! the per-call limits an operator sets (concurrency, fuel, clocks).
use hermetic::{CallOptions, Registry};
use hermetic_test_support::guests::tools_dir;
use hermetic_test_support::registry::{call, error_of, policy_registry};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

const POLICY: &str = r#"
[mounts.workspace]
path = "ws"
access = "rw"

[secrets]
file = "secrets.toml"

[defaults]
env = []

[tools.weather]
env = ["WEATHER_API_KEY"]
network = ["https://api.weatherapi.com"]

[tools.spin_long.limits]
max_timeout_ms = 1000
max_concurrent = 1
queue_timeout_ms = 50

[tools.spin.limits]
fuel = 2000000

[tools.clock]
clock = "frozen"

[tenants.acme]
toolsets = ["file"]
env = []
[tenants.acme.mounts.workspace]
access = "ro"
subdir = "acme"

[tenants.globex]
[tenants.globex.limits]
max_concurrent = 1
timeout_ms = 1000

[tenants.coarse]
toolsets = ["test"]
"#;

struct Setup {
    _root: tempfile::TempDir,
    ws: std::path::PathBuf,
    registry: Registry,
}

fn setup(policy: &str) -> Setup {
    let root = tempfile::TempDir::new().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir_all(ws.join("acme")).unwrap();
    std::fs::write(
        root.path().join("secrets.toml"),
        "WEATHER_API_KEY = \"sekrit\"\n",
    )
    .unwrap();
    let registry = policy_registry(root.path(), policy, true);
    let dir = tools_dir(&["echo", "spin", "spin_long", "clock"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    Setup {
        ws: ws.canonicalize().unwrap(),
        _root: root,
        registry,
    }
}

fn as_tenant(registry: &Registry, tenant: &str, name: &str, args: Value) -> Value {
    let options = CallOptions::default().with_tenant(tenant);
    serde_json::from_str(&registry.call(name, &args.to_string(), &options)).unwrap()
}

#[test]
fn a_tenant_sees_and_calls_only_its_toolsets() {
    let s = setup(POLICY);
    let names = |tenant: &str| -> Vec<String> {
        s.registry
            .tools_for(tenant)
            .into_iter()
            .map(|t| t.name)
            .collect()
    };
    assert_eq!(
        names("acme"),
        ["patch", "read_file", "search_files", "write_file"]
    );
    assert!(names("").contains(&"echo".to_owned()));
    assert_eq!(names("coarse"), ["clock", "echo", "spin", "spin_long"]);
    assert_eq!(
        as_tenant(&s.registry, "acme", "echo", json!({"message": "x"})),
        json!({"error": "Unknown tool: echo"})
    );
    let defs = s
        .registry
        .definitions_for("acme", &hermetic::Selection::default());
    assert!(!defs.to_string().contains("\"echo\""));
    assert!(s.registry.inspect_for("echo", "acme").is_none());
    assert!(s.registry.tools_for("nobody").is_empty());
}

#[test]
fn a_tenant_mount_narrows_access_and_points_at_its_own_subdirectory() {
    let s = setup(POLICY);
    std::fs::write(s.ws.join("root.txt"), "operator file\n").unwrap();
    std::fs::write(s.ws.join("acme/mine.txt"), "acme file\n").unwrap();
    assert_eq!(
        as_tenant(
            &s.registry,
            "acme",
            "read_file",
            json!({"path": "mine.txt"})
        )["content"],
        "1|acme file"
    );
    let out = as_tenant(
        &s.registry,
        "acme",
        "read_file",
        json!({"path": "../root.txt"}),
    );
    assert!(out.get("error").is_some(), "{out}");
    let out = as_tenant(
        &s.registry,
        "acme",
        "write_file",
        json!({"path": "x.txt", "content": "x"}),
    );
    let err = error_of(&out);
    assert!(
        err.contains("unavailable") && err.contains("tenant acme allows only read-only"),
        "{err}"
    );
    assert!(!s.ws.join("acme/x.txt").exists());
    // The operator itself still reads and writes the whole workspace.
    assert_eq!(
        call(&s.registry, "read_file", json!({"path": "root.txt"}))["content"],
        "1|operator file"
    );
    assert!(
        call(
            &s.registry,
            "write_file",
            json!({"path": "y.txt", "content": "y"})
        )
        .get("error")
        .is_none()
    );
}

#[test]
fn secrets_feed_env_grants_and_tenants_can_withhold_them() {
    let s = setup(POLICY);
    assert!(s.registry.availability("weather").unwrap().available);
    let globex = s.registry.availability_for("weather", "globex").unwrap();
    assert!(globex.available, "globex does not narrow env");
    let report = s.registry.inspect_for("weather", "globex").unwrap();
    assert_eq!(report["grants"]["env"], json!(["WEATHER_API_KEY"]));
    assert_eq!(report["operator"]["env"], json!(["WEATHER_API_KEY"]));
    assert!(
        !report.to_string().contains("sekrit"),
        "inspect must never show secret values"
    );
    // acme's toolsets do not include weather at all.
    assert!(s.registry.availability_for("weather", "acme").is_none());
}

#[test]
fn a_call_over_the_tool_concurrency_cap_waits_then_gets_a_clear_error() {
    let s = Arc::new(setup(POLICY));
    let results: Vec<Value> = (0..2)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || call(&s.registry, "spin_long", json!({})))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let mut limits: Vec<&str> = results
        .iter()
        .map(|r| r["limit"].as_str().unwrap())
        .collect();
    limits.sort();
    assert_eq!(limits, ["concurrency", "time"], "{results:?}");
    let refused = results
        .iter()
        .find(|r| r["limit"] == "concurrency")
        .unwrap();
    assert_eq!(
        error_of(refused),
        "[TOOL_ERROR] concurrency limit exceeded: spin_long already runs 1 calls; waited 50 ms for a slot"
    );
}

#[test]
fn a_tenant_over_its_concurrency_cap_is_refused_while_others_proceed() {
    let s = Arc::new(setup(POLICY));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || as_tenant(&s.registry, "globex", "spin", json!({})))
        })
        .collect();
    // Another tenant is unaffected meanwhile.
    assert_eq!(
        as_tenant(&s.registry, "coarse", "echo", json!({"message": "m"}))["echo"],
        "m"
    );
    let mut limits: Vec<String> = handles
        .into_iter()
        .map(|h| h.join().unwrap()["limit"].as_str().unwrap().to_owned())
        .collect();
    limits.sort();
    // spin's own deadline is 200 ms, so the waiter may get the slot after it: both
    // outcomes are containment; what must never happen is a third kind of result.
    assert!(
        limits == ["concurrency", "fuel"] || limits == ["fuel", "fuel"],
        "{limits:?}"
    );
}

#[test]
fn a_fuel_budget_stops_a_spinning_guest() {
    let s = setup(POLICY);
    let out = call(&s.registry, "spin", json!({}));
    assert_eq!(out["limit"], "fuel", "{out}");
    assert_eq!(
        error_of(&out),
        "[TOOL_ERROR] fuel limit exceeded: the call used more than 2000000 units of fuel"
    );
    assert_eq!(
        call(&s.registry, "echo", json!({"message": "ok"}))["echo"],
        "ok"
    );
}

#[test]
fn clocks_can_be_frozen_or_coarsened_per_tool() {
    let s = setup(POLICY);
    let frozen = call(&s.registry, "clock", json!({}));
    assert_eq!(
        (frozen["wall_ms"].as_u64(), frozen["elapsed_ns"].as_u64()),
        (Some(0), Some(0)),
        "{frozen}"
    );
    let coarse = setup(&POLICY.replace("clock = \"frozen\"", "clock = { coarse_ms = 1000 }"));
    let out = call(&coarse.registry, "clock", json!({}));
    let wall = out["wall_ms"].as_u64().unwrap();
    assert!(wall > 0 && wall.is_multiple_of(1000), "{out}");
    assert_eq!(
        out["elapsed_ns"].as_u64().unwrap() % 1_000_000_000,
        0,
        "{out}"
    );
    let real = setup(&POLICY.replace("clock = \"frozen\"", "clock = \"real\""));
    assert!(
        call(&real.registry, "clock", json!({}))["elapsed_ns"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// The example policy loads as shipped, from the repository root (its `data` mount and
/// secrets file are in `examples/`), as the README tells users to run it.
#[test]
fn the_example_policy_loads() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let loaded = hermetic_config::load(&repo.join("policy.example.toml"), &repo).unwrap();
    assert_eq!(loaded.policy.tenants.len(), 2);
    assert!(loaded.policy.mounts["data"].host_path.is_dir());
}

#[test]
fn core_instance_limits_are_read_and_zero_is_refused() {
    let dir = std::path::Path::new("/nonexistent");
    let parse = |text: &str| hermetic_config::parse(text, &dir.join("p.toml"), dir, dir);
    let loaded =
        parse("[defaults.limits]\ncore_instances = 16\nmax_core_instances = 100\n").unwrap();
    assert_eq!(loaded.policy.defaults.limits.default_core_instances, 16);
    assert_eq!(loaded.policy.max_core_instances(), 100);
    for zero in ["core_instances = 0", "max_core_instances = 0"] {
        let err = parse(&format!("[defaults.limits]\n{zero}\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least 1"), "{zero}: {err}");
    }
}
