//! Registries in this process over real components from guest-tools/: a temporary
//! workspace, a policy file, the shared compiled-code cache so the suites do not
//! recompile the same components in every test, and calls whose JSON result is read.
use crate::guests::{test_cache, tools_dir};
use hermetic::{EngineConfig, OperatorPolicy, Registry, RegistryOptions};
use std::path::Path;
use tempfile::TempDir;

/// Engine settings for tests: the shared cache under target/.
pub fn engine_config() -> EngineConfig {
    let mut config = EngineConfig::default();
    config.cache_dir = Some(test_cache());
    config
}

/// A test fixture: a workspace and a registry over it.
pub struct Fixture {
    /// The workspace directory (the `workspace` mount).
    pub workspace: TempDir,
    /// The registry.
    pub registry: Registry,
}

/// Registry options over a fresh temporary workspace.
pub fn options() -> (TempDir, RegistryOptions) {
    let workspace = TempDir::new().unwrap();
    let policy = OperatorPolicy::with_workspace(workspace.path().to_path_buf());
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = engine_config();
    (workspace, options)
}

/// A registry with the bundled tools (if `bundled`) and the named test tools.
pub fn fixture(bundled: bool, test_tools: &[&str]) -> Fixture {
    let (workspace, options) = options();
    let registry = Registry::new(options).unwrap();
    if bundled {
        assert_eq!(registry.add_bundled(), vec![]);
    }
    if !test_tools.is_empty() {
        let dir = tools_dir(test_tools);
        assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    }
    Fixture {
        workspace,
        registry,
    }
}

/// A registry under the policy file `policy` (TOML, written to `root/policy.toml`, so
/// relative paths in it resolve against `root`), with the bundled tools when `bundled`,
/// on the shared test cache (keeping the engine settings the policy implies, e.g. fuel).
pub fn policy_registry(root: &Path, policy: &str, bundled: bool) -> Registry {
    policy_registry_with(root, policy, bundled, |_| {})
}

/// [`policy_registry`] with the registry options (engine settings, clock) changed by
/// `tweak` first, e.g. a host with fewer sandboxes.
pub fn policy_registry_with(
    root: &Path,
    policy: &str,
    bundled: bool,
    tweak: impl FnOnce(&mut RegistryOptions),
) -> Registry {
    let path = root.join("policy.toml");
    std::fs::write(&path, policy).unwrap();
    let loaded = hermetic_config::load(&path, root).unwrap();
    let mut options = hermetic_terminal::attach(RegistryOptions::new(loaded.policy)).unwrap();
    options.secrets = loaded.secrets;
    let fuel = options.engine.fuel;
    options.engine = engine_config();
    options.engine.fuel = fuel;
    tweak(&mut options);
    let registry = Registry::new(options).unwrap();
    if bundled {
        assert_eq!(registry.add_bundled(), vec![]);
    }
    registry
}

/// Calls a tool and parses the JSON result.
pub fn call(registry: &Registry, name: &str, args: serde_json::Value) -> serde_json::Value {
    let out = registry.call(name, &args.to_string(), &hermetic::CallOptions::default());
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("result is not JSON ({e}): {out}"))
}

/// The `error` string of a result, panicking if there is none.
pub fn error_of(value: &serde_json::Value) -> String {
    value["error"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error, got {value}"))
        .to_owned()
}

/// Two tenants for fairness checks — `flood`, one call at a time, and `calm` — over a
/// workspace under `root`, with the `echo` and `spin` test tools. (The hardening test
/// and the fairness bench measure the same set-up.)
pub fn fairness_registry(root: &Path) -> Registry {
    const POLICY: &str = r#"
[mounts.workspace]
path = "ws"
access = "rw"

[tenants.flood]
[tenants.flood.limits]
max_concurrent = 1

[tenants.calm]
"#;
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let registry = policy_registry(root, POLICY, false);
    let dir = tools_dir(&["echo", "spin"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    registry
}

/// A registry under `policy` with the named test tools, no bundled ones and no terminal
/// attached, on the shared cache: what the server's in-process suites serve.
pub fn bare_registry(policy: OperatorPolicy, tools: &[&str]) -> Registry {
    let mut options = RegistryOptions::new(policy);
    options.engine.cache_dir = Some(test_cache());
    let registry = Registry::new(options).unwrap();
    let dir = tools_dir(tools);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    registry
}
