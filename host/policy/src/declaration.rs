//! A tool's declaration: what it is and what it needs, read from the component's
//! `hermetic:declaration` custom section (TOML) without running guest code.
//!
//! This module is plain data and validation; reading the section out of a component's
//! bytes lives in `hermetic::component`.

use serde::{Deserialize, Serialize};

/// The custom section holding the declaration (the guest SDK writes it).
pub const SECTION: &str = "hermetic:declaration";

/// Upper bound on a declaration's size, so a hostile component cannot make the host
/// parse megabytes of TOML.
pub const MAX_DECLARATION_BYTES: usize = 64 * 1024;

/// What a tool declares about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    /// Tool name; must equal the `name` in the tool's schema. (A hook's name.)
    pub name: String,
    /// Toolset the tool belongs to (required of a tool; a hook has none).
    #[serde(default)]
    pub toolset: String,
    /// One-line description for listings (the schema's description is what agents see).
    #[serde(default)]
    pub description: String,
    /// Emoji shown next to the tool in listings.
    #[serde(default)]
    pub emoji: Option<String>,
    /// Env vars the tool cannot work without; each must be granted or the tool is
    /// unavailable.
    #[serde(default)]
    pub requires_env: Vec<String>,
    /// Largest result the tool expects to return, in characters (capped by the operator).
    #[serde(default)]
    pub max_result_chars: Option<usize>,
    /// Wall-clock time the tool wishes per call, in milliseconds (capped by the operator).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Linear memory the tool wishes, in MiB (capped by the operator).
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// Core wasm instances the tool's sandbox needs (default 8, capped by the
    /// operator's `max_core_instances`): a component built by an interpreter's
    /// toolchain (componentize-py) has more than a Rust one.
    #[serde(default)]
    pub core_instances: Option<u32>,
    /// Capabilities the tool asks for. Anything not listed is denied.
    #[serde(default)]
    pub capabilities: Capabilities,
    /// Present when the component is a hook (it exports `hermetic:tool/hook`, not a
    /// tool): which calls it applies to.
    #[serde(default)]
    pub hook: Option<HookDeclaration>,
}

/// One thing a version asks for that a reviewed one did not (see
/// [`Declaration::asks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The field it is in: `capabilities.fs`, `capabilities.env`, `requires_env`,
    /// `capabilities.network`, `capabilities.terminal`, `capabilities.secret_scan`,
    /// `capabilities.keyvalue` (the names [`crate::review::Difference`] uses).
    pub field: &'static str,
    /// In words: `mount workspace rw`, `env API_KEY`, `network https://…`.
    pub what: String,
}

/// What calls a hook applies to: those of these tools and of tools in these toolsets;
/// both empty — every call. The operator may narrow it further, never widen it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookDeclaration {
    /// Tool names.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Toolset names.
    #[serde(default)]
    pub toolsets: Vec<String>,
}

/// Capabilities a tool asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Filesystem mounts, by logical name (the operator maps names to host directories).
    #[serde(default)]
    pub fs: Vec<FsRequest>,
    /// Outbound HTTP destinations (`https://host[:port]`, `*.domain` wildcards).
    #[serde(default)]
    pub network: Vec<String>,
    /// Optional env vars (those in `requires_env` are implied).
    #[serde(default)]
    pub env: Vec<String>,
    /// Whether the tool uses the host's `terminal` interface.
    #[serde(default)]
    pub terminal: bool,
    /// Whether the hook asks the host where its held secrets are in a text (the
    /// `secrets` interface; hooks only).
    #[serde(default)]
    pub secret_scan: bool,
    /// A key-value store (`wasi:keyvalue`), and whose data it holds: `"tenant"` (one
    /// per tenant, across its sessions) or `"session"`.
    #[serde(default)]
    pub keyvalue: Option<KeyValueScope>,
}

/// Whose data a tool's key-value store holds: each tenant's own, or each session's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyValueScope {
    /// One store per tool and tenant, across its sessions (Hermes's memory).
    Tenant,
    /// One store per tool, tenant and session (Hermes's todo list).
    Session,
}

/// A request for one mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsRequest {
    /// Logical mount name, e.g. `workspace`. The guest sees it at `/<mount>`.
    pub mount: String,
    /// Read-only or read-write.
    pub access: Access,
}

/// Filesystem access level. Ordered: `Ro < Rw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Access {
    /// Read-only.
    #[serde(rename = "ro")]
    Ro,
    /// Read-write.
    #[serde(rename = "rw")]
    Rw,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Ro => "read-only",
            Access::Rw => "read-write",
        })
    }
}

/// Why a declaration was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeclarationError {
    /// The component has no `hermetic:declaration` section.
    #[error("no `{SECTION}` custom section (build the tool with hermetic-sdk's export_tool!)")]
    Missing,
    /// More than one declaration section.
    #[error("more than one `{SECTION}` custom section")]
    Duplicate,
    /// Larger than [`MAX_DECLARATION_BYTES`].
    #[error("declaration is {0} bytes, over the {MAX_DECLARATION_BYTES}-byte limit")]
    TooLarge(usize),
    /// Not UTF-8 or not valid TOML for the schema above.
    #[error("declaration is not valid: {0}")]
    Invalid(String),
}

impl Declaration {
    /// What this declaration asks for that `reviewed` (an earlier version the operator
    /// granted) did not: a mount it did not name or now wants read-write, an env var,
    /// a network destination, the terminal. Each entry in words (`network
    /// https://evil.example.com`); empty when this version asks for nothing more.
    pub fn asks_beyond(&self, reviewed: &Declaration) -> Vec<String> {
        let mut more: Vec<String> = Vec::new();
        for ask in self.asks(reviewed) {
            if !more.contains(&ask.what) {
                more.push(ask.what);
            }
        }
        more
    }

    /// What this declaration asks for that `reviewed` did not, each with the field it
    /// is in — the one definition of "asks for more" that [`Declaration::asks_beyond`]
    /// words and [`crate::review::compare`] marks as withholding. An env var new in
    /// both `requires_env` and `capabilities.env` is listed under each.
    pub fn asks(&self, reviewed: &Declaration) -> Vec<Ask> {
        // Destructured without `..`: a capability added to `Capabilities` does not
        // compile here until it says when it asks for more.
        let Capabilities {
            fs,
            network,
            env,
            terminal,
            secret_scan,
            keyvalue,
        } = &self.capabilities;
        let old = &reviewed.capabilities;
        let mut asks = Vec::new();
        let mut ask = |field: &'static str, what: String| asks.push(Ask { field, what });
        for request in fs {
            let before = old
                .fs
                .iter()
                .filter(|o| o.mount == request.mount)
                .map(|o| o.access)
                .max();
            if before.is_none_or(|b| b < request.access) {
                ask(
                    "capabilities.fs",
                    format!("mount {} {}", request.mount, request.access),
                );
            }
        }
        let old_env: std::collections::BTreeSet<&String> =
            old.env.iter().chain(&reviewed.requires_env).collect();
        for (field, vars) in [
            ("requires_env", &self.requires_env),
            ("capabilities.env", env),
        ] {
            for var in vars.iter().filter(|v| !old_env.contains(v)) {
                ask(field, format!("env {var}"));
            }
        }
        for dest in network.iter().filter(|d| !old.network.contains(d)) {
            ask("capabilities.network", format!("network {dest}"));
        }
        if *terminal && !old.terminal {
            ask("capabilities.terminal", "the terminal".to_owned());
        }
        if *secret_scan && !old.secret_scan {
            ask("capabilities.secret_scan", "secret_scan".to_owned());
        }
        if keyvalue.is_some() && old.keyvalue != *keyvalue {
            ask("capabilities.keyvalue", "the key-value store".to_owned());
        }
        asks
    }

    /// A tool called `name` (in a toolset of the same name) that declares nothing: no
    /// capabilities, no env, the default limits. What the host grants its own metadata
    /// calls, and a baseline for tests.
    pub fn nothing(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            toolset: name.to_owned(),
            description: String::new(),
            emoji: None,
            requires_env: Vec::new(),
            max_result_chars: None,
            timeout_ms: None,
            memory_mb: None,
            core_instances: None,
            capabilities: Capabilities::default(),
            hook: None,
        }
    }

    /// Parses and validates declaration text.
    ///
    /// # Errors
    /// [`DeclarationError::Invalid`] naming the offending key or value.
    pub fn parse(bytes: &[u8]) -> Result<Self, DeclarationError> {
        if bytes.len() > MAX_DECLARATION_BYTES {
            return Err(DeclarationError::TooLarge(bytes.len()));
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| DeclarationError::Invalid(format!("not UTF-8: {e}")))?;
        let decl: Declaration =
            toml::from_str(text).map_err(|e| DeclarationError::Invalid(e.message().to_owned()))?;
        decl.validate()?;
        Ok(decl)
    }

    fn validate(&self) -> Result<(), DeclarationError> {
        let bad = |what: &str, value: &str, rule: &str| {
            Err(DeclarationError::Invalid(format!(
                "{what} {value:?} {rule}"
            )))
        };
        if !is_identifier(&self.name, 64) {
            return bad("name", &self.name, "must be 1-64 of [A-Za-z0-9_-]");
        }
        match &self.hook {
            None if !is_identifier(&self.toolset, 64) => {
                return bad("toolset", &self.toolset, "must be 1-64 of [A-Za-z0-9_-]");
            }
            None if self.capabilities.secret_scan => {
                return bad("secret_scan", "true", "is for hooks (a [hook] table)");
            }
            None => {}
            Some(hook) => {
                if !self.toolset.is_empty() {
                    return bad(
                        "toolset",
                        &self.toolset,
                        "is for tools: a hook has a [hook] table",
                    );
                }
                if self.capabilities.terminal {
                    return bad(
                        "terminal",
                        "true",
                        "is for tools: a hook never runs commands",
                    );
                }
                if self.capabilities.keyvalue.is_some() {
                    return bad(
                        "keyvalue",
                        "…",
                        "is for tools: a hook keeps nothing between runs",
                    );
                }
                for name in hook.tools.iter().chain(&hook.toolsets) {
                    if !is_identifier(name, 64) {
                        return bad(
                            "hook tool or toolset",
                            name,
                            "must be 1-64 of [A-Za-z0-9_-]",
                        );
                    }
                }
            }
        }
        for var in self.requires_env.iter().chain(&self.capabilities.env) {
            if !is_env_name(var) {
                return bad("env var", var, "must match [A-Za-z_][A-Za-z0-9_]*");
            }
        }
        for fs in &self.capabilities.fs {
            if !is_identifier(&fs.mount, 64) {
                return bad("mount", &fs.mount, "must be 1-64 of [A-Za-z0-9_-]");
            }
        }
        // A pattern that does not parse would be a silent no-match at grant time; at
        // load it is an error that says what to write.
        for pattern in &self.capabilities.network {
            crate::network::Destination::parse(pattern)
                .map_err(|e| DeclarationError::Invalid(format!("capabilities.network: {e}")))?;
        }
        if self.timeout_ms == Some(0) {
            return bad("timeout_ms", "0", "must be positive");
        }
        if self.core_instances == Some(0) {
            return bad("core_instances", "0", "must be positive");
        }
        if self.memory_mb == Some(0) {
            return bad("memory_mb", "0", "must be positive");
        }
        Ok(())
    }

    /// Every env var the tool may see: required ones first, then optional ones.
    pub fn env_vars(&self) -> impl Iterator<Item = &str> {
        let mut seen = std::collections::BTreeSet::new();
        self.requires_env
            .iter()
            .chain(&self.capabilities.env)
            .filter(move |v| seen.insert(v.as_str()))
            .map(String::as_str)
    }
}

fn is_identifier(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn is_env_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && s.len() <= 256
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_version_asking_for_more_is_told_apart_from_one_asking_for_less() {
        let old = Declaration::parse(
            b"name = \"w\"\ntoolset = \"w\"\ndescription = \"d\"\nrequires_env = [\"KEY\"]\n[capabilities]\nnetwork = [\"https://api.example.com\"]\nfs = [{ mount = \"workspace\", access = \"ro\" }]\n",
        )
        .unwrap();
        let same_or_less = Declaration::parse(
            b"name = \"w\"\ntoolset = \"w\"\ndescription = \"d2\"\n[capabilities]\nenv = [\"KEY\"]\nfs = [{ mount = \"workspace\", access = \"ro\" }]\n",
        )
        .unwrap();
        assert!(same_or_less.asks_beyond(&old).is_empty());
        let more = Declaration::parse(
            b"name = \"w\"\ntoolset = \"w\"\ndescription = \"d\"\nrequires_env = [\"KEY\", \"AWS_SECRET_ACCESS_KEY\"]\n[capabilities]\nnetwork = [\"https://api.example.com\", \"https://evil.example.com\"]\nfs = [{ mount = \"workspace\", access = \"rw\" }, { mount = \"home\", access = \"ro\" }]\nterminal = true\n",
        )
        .unwrap();
        assert_eq!(
            more.asks_beyond(&old),
            [
                "mount workspace read-write",
                "mount home read-only",
                "env AWS_SECRET_ACCESS_KEY",
                "network https://evil.example.com",
                "the terminal",
            ]
        );
    }

    #[test]
    fn full_declaration_parses() {
        let d = Declaration::parse(
            br#"
name = "weather"
toolset = "weather"
emoji = "W"
requires_env = ["WEATHER_API_KEY"]
timeout_ms = 5000
[capabilities]
fs = [{ mount = "workspace", access = "ro" }]
network = ["https://api.example.com"]
env = ["LANG", "WEATHER_API_KEY"]
"#,
        )
        .unwrap();
        assert_eq!(d.capabilities.fs[0].access, Access::Ro);
        assert_eq!(
            d.env_vars().collect::<Vec<_>>(),
            ["WEATHER_API_KEY", "LANG"]
        );
    }

    #[test]
    fn unknown_keys_and_bad_names_are_rejected() {
        let unknown = Declaration::parse(b"name='a'\ntoolset='b'\ngrant_all=true");
        assert!(matches!(unknown, Err(DeclarationError::Invalid(m)) if m.contains("grant_all")));
        assert!(Declaration::parse(b"name='a b'\ntoolset='b'").is_err());
        assert!(Declaration::parse(b"name='a'\ntoolset='b'\nrequires_env=['1X']").is_err());
        assert!(
            Declaration::parse(
                b"name='a'\ntoolset='b'\n[capabilities]\nfs=[{mount='w',access='rwx'}]"
            )
            .is_err()
        );
        assert!(Declaration::parse(&vec![b' '; MAX_DECLARATION_BYTES + 1]).is_err());
    }

    #[test]
    fn a_declared_destination_that_does_not_parse_is_a_load_error() {
        let with = |pattern: &str| {
            Declaration::parse(
                format!("name='a'\ntoolset='b'\n[capabilities]\nnetwork=[{pattern:?}]").as_bytes(),
            )
        };
        for bad in [
            "ftp://files.example.com",
            "https://api.example.com/v1",
            "https://user@api.example.com",
            "https://*.com",
            "https://api.example.com:0",
            "https://a..example.com",
            "https://*example.com",
            "https://[api.example.com]",
            "https://127.1",
            "",
        ] {
            match with(bad) {
                Err(DeclarationError::Invalid(m)) => assert!(
                    m.starts_with("capabilities.network: invalid network destination")
                        && m.contains("write e.g."),
                    "{bad}: {m}"
                ),
                other => panic!("{bad:?} was accepted: {other:?}"),
            }
        }
        for good in ["https://api.example.com", "http://*:*", "http://[::1]:8080"] {
            assert!(with(good).is_ok(), "{good}");
        }
    }
}
