//! Hooks around calls (issue 35.1), with real hook components from guest-tools/: a
//! hook refuses, rewrites or replaces; hooks run in their order, each in a fresh
//! sandbox; a hostile hook (one that loops, traps, floods the log, answers 10 MB or a
//! rewrite the tool's schema refuses) fails closed before a call and open after it,
//! always named, the host serving on; the bundled `secret_scan` denies or redacts
//! credentials — credential shapes and the values of the host's secrets, which it
//! never holds — and an ungranted or undeclared use of the host's secrets is refused.
use hermetic::hooks::HookNotes;
use hermetic::{CallOptions, Registry};
use hermetic_test_support::guests::{guest, tools_dir};
use hermetic_test_support::registry::policy_registry;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// A registry over `root` with `echo` and `envdump`, and the hooks `hooks` (TOML
/// `[hooks.NAME]` tables; `TEST_HOOK` stands for the test hook's path).
fn hooked(root: &Path, hooks: &str) -> Result<Registry, String> {
    std::fs::create_dir_all(root.join("ws")).unwrap();
    std::fs::write(
        root.join("secrets.toml"),
        "HERMETIC_TEST_SECRET = \"hush-0123456789-value\"\n",
    )
    .unwrap();
    let hooks = hooks
        .replace("TEST_HOOK", &guest("test_hook").display().to_string())
        .replace("SNEAKY_HOOK", &guest("sneaky_hook").display().to_string());
    let policy = format!(
        "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n[secrets]\nfile = \"secrets.toml\"\n\n\
         [tools.envdump]\nenv = [\"HERMETIC_TEST_SECRET\"]\n\n{hooks}"
    );
    let registry = policy_registry(root, &policy, false);
    registry.add_policy_hooks().map_err(|e| e.to_string())?;
    let dir = tools_dir(&["echo", "envdump"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    Ok(registry)
}

/// Calls `tool`; the parsed result and what the hooks noted.
fn call(registry: &Registry, tool: &str, args: &Value) -> (Value, Vec<Value>) {
    let notes = HookNotes::default();
    let options = CallOptions::default().with_hook_notes(notes.clone());
    let out = registry.call(tool, &args.to_string(), &options);
    let result = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    let notes = notes
        .lock()
        .iter()
        .map(|n| serde_json::to_value(n).unwrap())
        .collect();
    (result, notes)
}

fn error(result: &Value) -> &str {
    result["error"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error: {result}"))
}

fn echo(registry: &Registry) -> (Value, Vec<Value>) {
    call(registry, "echo", &json!({"message": "hi"}))
}

#[test]
fn a_hook_refuses_rewrites_and_replaces_in_its_order() {
    let dir = tempfile::TempDir::new().unwrap();
    // Alone: each verdict.
    let deny = hooked(
        dir.path(),
        "[hooks.gate]\npath = \"TEST_HOOK\"\norder = 1\nconfig = { pre = \"deny\" }\n",
    )
    .unwrap();
    let (result, notes) = echo(&deny);
    assert_eq!(
        error(&result),
        "hook gate refused the call: test_hook denies echo"
    );
    assert_eq!(
        notes,
        [json!({"hook": "gate", "stage": "pre", "did": "denied"})]
    );
    // A tool outside the toolsets the hook declares is not its business.
    let (result, notes) = call(&deny, "envdump", &json!({}));
    assert!(result.get("env").is_some(), "{result}");
    assert!(notes.is_empty());

    let rewrite = hooked(
        dir.path(),
        "[hooks.fix]\npath = \"TEST_HOOK\"\norder = 1\nconfig = { pre = \"rewrite\", post = \"replace\" }\n",
    )
    .unwrap();
    let (result, notes) = echo(&rewrite);
    assert_eq!(result["replaced"], true, "{result}");
    assert_eq!(result["tenant"], "default");
    assert_eq!(
        notes,
        [
            json!({"hook": "fix", "stage": "pre", "did": "rewrote"}),
            json!({"hook": "fix", "stage": "post", "did": "replaced"}),
        ]
    );
    let only_rewrite = hooked(
        dir.path(),
        "[hooks.fix]\npath = \"TEST_HOOK\"\norder = 1\nconfig = { pre = \"rewrite\" }\n",
    )
    .unwrap();
    assert_eq!(echo(&only_rewrite).0["echo"], "rewritten by a hook");

    // Two hooks, one component: the lower order first; the second sees the first's
    // rewrite and refuses.
    let both = hooked(
        dir.path(),
        "[hooks.second]\npath = \"TEST_HOOK\"\norder = 20\nconfig = { pre = \"deny\" }\n\n\
         [hooks.first]\npath = \"TEST_HOOK\"\norder = 10\nconfig = { pre = \"rewrite\" }\n",
    )
    .unwrap();
    let (result, notes) = echo(&both);
    assert!(
        error(&result).starts_with("hook second refused"),
        "{result}"
    );
    assert_eq!(
        notes,
        [
            json!({"hook": "first", "stage": "pre", "did": "rewrote"}),
            json!({"hook": "second", "stage": "pre", "did": "denied"}),
        ]
    );

    // Each run is a fresh sandbox: the hook's memory never carries a call to the next.
    let count = hooked(
        dir.path(),
        "[hooks.count]\npath = \"TEST_HOOK\"\norder = 1\nconfig = { pre = \"count\" }\n",
    )
    .unwrap();
    for _ in 0..3 {
        assert!(error(&echo(&count).0).ends_with("seen 1"));
    }
}

#[test]
fn a_hook_narrowed_to_tenants_and_tools_leaves_the_others_alone() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = hooked(
        dir.path(),
        "[tenants.acme]\n[tenants.globex]\n\n\
         [hooks.gate]\npath = \"TEST_HOOK\"\norder = 1\ntenants = [\"acme\"]\ntools = [\"echo\"]\nconfig = { pre = \"deny\" }\n",
    )
    .unwrap();
    let as_tenant = |tenant: &str| {
        let out = registry.call(
            "echo",
            &json!({"message": "hi"}).to_string(),
            &CallOptions::default().with_tenant(tenant),
        );
        serde_json::from_str::<Value>(&out).unwrap()
    };
    assert!(error(&as_tenant("acme")).starts_with("hook gate refused"));
    assert_eq!(as_tenant("globex")["echo"], "hi");
}

#[test]
fn a_hostile_hook_fails_closed_before_a_call_and_open_after_it() {
    let dir = tempfile::TempDir::new().unwrap();
    let with = |pre: &str, post: &str| {
        hooked(
            dir.path(),
            &format!(
                "[hooks.bad]\npath = \"TEST_HOOK\"\norder = 1\nconfig = {{ pre = \"{pre}\", post = \"{post}\" }}\n"
            ),
        )
        .unwrap()
    };
    // A rewrite the tool's schema refuses: invalid arguments, the hook named.
    let (result, _) = echo(&with("bad_rewrite", "keep"));
    assert!(
        error(&result).contains("hook bad rewrote the arguments into ones the tool refuses"),
        "{result}"
    );
    let (result, _) = echo(&with("not_json", "keep"));
    assert!(
        error(&result).contains("expected a JSON object"),
        "{result}"
    );

    // Loops (its 1 s limit), traps, answers 10 MB: refused, named, at once.
    for (pre, what) in [
        ("loop", "time limit"),
        ("trap", "test_hook traps"),
        ("huge", "over the 1048576-byte limit"),
    ] {
        let registry = with(pre, "keep");
        let started = Instant::now();
        let (result, notes) = echo(&registry);
        let message = error(&result);
        assert!(
            message.starts_with("hook bad failed (") && message.contains("the call is refused"),
            "{pre}: {result}"
        );
        assert!(
            message.contains(what) || notes[0]["did"].as_str().unwrap().contains(what),
            "{pre}: {result} {notes:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "{pre}");
        assert_eq!(notes[0]["stage"], "pre");
        // The host serves on (the next call is refused the same way, not hung).
        assert!(error(&echo(&registry).0).starts_with("hook bad failed"));
    }

    // A million log lines: the host keeps a bounded number of them and the call goes
    // on — or, on a machine too busy to write them within the hook's second, the hook
    // is stopped at its limit like any other; the host serves on either way.
    let flood = with("flood", "flood");
    let (result, notes) = echo(&flood);
    if result["echo"] != "hi" {
        assert!(error(&result).contains("time limit exceeded"), "{result}");
    }
    assert!(
        notes
            .iter()
            .all(|n| n["did"].as_str().unwrap().contains("time limit")),
        "{notes:?}"
    );
    assert_eq!(echo(&with("allow", "keep")).0["echo"], "hi");

    // After the call: a failing hook keeps the result, noted.
    for (post, what) in [
        ("loop", "time limit"),
        ("trap", "traps after"),
        ("huge", "character limit"),
    ] {
        let (result, notes) = echo(&with("allow", post));
        assert_eq!(result["echo"], "hi", "{post}: {result}");
        let did = notes[0]["did"].as_str().unwrap();
        assert!(
            did.starts_with("failed: ") && did.contains(what),
            "{post}: {did}"
        );
        assert_eq!(notes[0]["stage"], "post");
    }
}

#[test]
fn secret_scan_denies_or_redacts_shapes_and_held_values() {
    let dir = tempfile::TempDir::new().unwrap();
    let aws = "AKIAIOSFODNN7EXAMPLE";
    // deny (the default): arguments holding a credential are refused, and a result
    // holding the value of a host secret is withheld.
    let deny = hooked(
        dir.path(),
        "[hooks.secret_scan]\norder = 1\nsecret_scan = true\n",
    )
    .unwrap();
    let (result, notes) = call(&deny, "echo", &json!({"message": format!("key {aws}")}));
    assert_eq!(
        error(&result),
        "hook secret_scan refused the call: the arguments hold a credential (aws_access_key); remove it and call again"
    );
    assert_eq!(notes[0]["did"], "denied");
    let (result, _) = call(&deny, "envdump", &json!({}));
    assert_eq!(
        error(&result),
        "the result was withheld: it holds a credential (host_secret)"
    );
    assert!(!result.to_string().contains("hush-0123456789-value"));
    assert_eq!(echo(&deny).0["echo"], "hi", "nothing found: untouched");

    // redact: every string is searched after unescaping; credentials are replaced.
    let redact = hooked(
        dir.path(),
        "[hooks.secret_scan]\norder = 1\nsecret_scan = true\nconfig = { mode = \"redact\" }\n",
    )
    .unwrap();
    let (result, notes) = call(&redact, "echo", &json!({"message": format!("a {aws} b")}));
    assert_eq!(result["echo"], "a [REDACTED:aws_access_key] b", "{result}");
    assert_eq!(notes[0]["did"], "rewrote");
    let (result, _) = call(&redact, "envdump", &json!({}));
    assert_eq!(
        result["env"]["HERMETIC_TEST_SECRET"], "[REDACTED:host_secret]",
        "{result}"
    );
    let token = format!("ghp_{}", "a1B2".repeat(9));
    let (result, _) = call(&redact, "echo", &json!({"message": token}));
    assert_eq!(result["echo"], "[REDACTED:github_token]");
    // Every shape (the hook compiles only the shapes whose words a text has: each
    // must still be found), in a sentence, one message at a time.
    let shapes = [
        ("aws_access_key", format!("ASIA{}", "Q".repeat(16))),
        ("github_token", format!("github_pat_{}", "a_1".repeat(8))),
        ("slack_token", "xoxb-1234567890-abcdef".to_owned()),
        (
            "private_key",
            "-----BEGIN OPENSSH PRIVATE KEY-----".to_owned(),
        ),
        ("api_key", format!("sk-proj-{}", "Ab3_".repeat(6))),
        ("google_api_key", format!("AIza{}", "x9_-Z".repeat(7))),
        ("stripe_key", format!("rk_live_{}", "0aZ".repeat(6))),
        (
            "jwt",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl".to_owned(),
        ),
    ];
    for (kind, credential) in shapes {
        let (result, _) = call(
            &redact,
            "echo",
            &json!({"message": format!("use {credential} here")}),
        );
        assert_eq!(
            result["echo"],
            format!("use [REDACTED:{kind}] here"),
            "{kind}: {result}"
        );
    }
    // Words of shapes without a credential: untouched.
    let prose = "through the high gate, a risk-averse ask: sk- eyJ xox";
    let (result, notes) = call(&redact, "echo", &json!({"message": prose}));
    assert_eq!(result["echo"], prose, "{result}");
    assert!(notes.iter().all(|n| n["did"] != "rewrote"), "{notes:?}");
}

#[test]
fn the_host_s_secrets_are_refused_to_a_hook_that_is_not_granted_or_does_not_declare_them() {
    let dir = tempfile::TempDir::new().unwrap();
    let ungranted = hooked(dir.path(), "[hooks.secret_scan]\norder = 1\n").unwrap_err();
    assert!(
        ungranted.contains("declares secret_scan") && ungranted.contains("secret_scan = true"),
        "{ungranted}"
    );
    // Granted but undeclared: the interface is not linked, so the component that
    // imports it does not load.
    let undeclared = hooked(
        dir.path(),
        "[hooks.sneaky]\npath = \"SNEAKY_HOOK\"\norder = 1\nsecret_scan = true\n",
    )
    .unwrap_err();
    assert!(undeclared.contains("hermetic:tool/secrets"), "{undeclared}");
    // A tool is not a hook, nor a hook a tool.
    let tool = hooked(
        dir.path(),
        &format!(
            "[hooks.echo]\npath = \"{}\"\norder = 1\n",
            guest("echo").display()
        ),
    )
    .unwrap_err();
    assert!(tool.contains("is a tool, not a hook"), "{tool}");
    let registry = hooked(dir.path(), "").unwrap();
    let problems = registry.add_dir(tools_dir(&["test_hook"]).path()).unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
}
