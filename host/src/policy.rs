//! Pure grant decisions: what a tool declared ∩ what the operator allows → what the
//! sandbox gives it. No I/O, no clocks, no wasmtime types: plain data in, plain data out.
//!
//! Per capability:
//! - **mounts**: a declared mount the operator does not configure, or asks read-write
//!   where the operator's ceiling is read-only, makes the tool *unavailable* (a tool
//!   that cannot reach its files cannot do its job; better hidden with a reason than
//!   failing every call).
//! - **required env** (`requires_env`): not granted → unavailable. **Optional env**: not
//!   granted → simply absent.
//! - **network**: not yet enforceable in this build, so never granted; the tool stays
//!   available and its calls fail with the tool's own clear error.
//! - **terminal**: not yet offered by this build; never granted.

use crate::declaration::{Access, Declaration};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// What the operator allows, for every tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorPolicy {
    /// Logical mount name → host directory and the most access any tool gets to it.
    pub mounts: BTreeMap<String, MountGrant>,
    /// Env vars the operator lets tools see (a tool still sees only those it declared).
    pub env: BTreeSet<String>,
    /// Limits: defaults for tools that wish nothing, ceilings for those that wish more.
    pub limits: LimitPolicy,
}

impl OperatorPolicy {
    /// The embedded default: a read-write `workspace` mount at `workspace`, no env, no
    /// network, default limits.
    pub fn with_workspace(workspace: PathBuf) -> Self {
        let mut mounts = BTreeMap::new();
        mounts.insert(
            "workspace".to_owned(),
            MountGrant {
                host_path: workspace,
                ceiling: Access::Rw,
            },
        );
        Self {
            mounts,
            env: BTreeSet::new(),
            limits: LimitPolicy::default(),
        }
    }
}

/// One operator mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountGrant {
    /// Host directory behind the mount.
    pub host_path: PathBuf,
    /// Most access granted to any tool.
    pub ceiling: Access,
}

/// Per-call limits the operator sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LimitPolicy {
    /// Deadline for a tool that declares no `timeout_ms`.
    pub default_timeout_ms: u64,
    /// Largest deadline any tool gets.
    pub max_timeout_ms: u64,
    /// Memory for a tool that declares no `memory_mb`.
    pub default_memory_mb: u64,
    /// Most memory any tool gets.
    pub max_memory_mb: u64,
    /// Result cap for a tool that declares no `max_result_chars`.
    pub default_result_chars: usize,
    /// Largest result cap any tool gets.
    pub max_result_chars: usize,
}

impl Default for LimitPolicy {
    /// 30 s (max 300 s) per call, 64 MiB (max 512 MiB) of memory, 100,000 (max
    /// 1,000,000) result characters.
    fn default() -> Self {
        Self {
            default_timeout_ms: 30_000,
            max_timeout_ms: 300_000,
            default_memory_mb: 64,
            max_memory_mb: 512,
            default_result_chars: 100_000,
            max_result_chars: 1_000_000,
        }
    }
}

/// What the sandbox gives a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveGrants {
    /// Mounts to preopen.
    pub mounts: Vec<EffectiveMount>,
    /// Env var names the tool sees (values come from the host environment at call time).
    pub env: Vec<String>,
    /// Granted network destinations (always empty in this build).
    pub network: Vec<String>,
    /// Whether the terminal interface is linked (always false in this build).
    pub terminal: bool,
    /// Per-call limits.
    pub limits: EffectiveLimits,
    /// What was asked and not granted, with why.
    pub denials: Vec<Denial>,
}

impl EffectiveGrants {
    /// The first denial that makes the tool unavailable, if any.
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.denials
            .iter()
            .find(|d| d.blocks)
            .map(|d| d.reason.as_str())
    }
}

/// A granted mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveMount {
    /// Logical name; the guest sees the mount at `/<name>`.
    pub name: String,
    /// Host directory.
    pub host_path: PathBuf,
    /// Granted access.
    pub access: Access,
}

/// Effective per-call limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EffectiveLimits {
    /// Wall-clock deadline.
    pub timeout_ms: u64,
    /// Linear memory cap, in bytes.
    pub memory_bytes: u64,
    /// Result cap, in characters.
    pub result_chars: usize,
}

/// A capability asked for and not granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// Which capability, e.g. `env:WEATHER_API_KEY`, `fs:workspace`, `network`.
    pub capability: String,
    /// Why, in words an operator can act on.
    pub reason: String,
    /// Whether this makes the tool unavailable.
    pub blocks: bool,
}

/// Decides a tool's grants: declaration ∩ operator policy. Deterministic and total.
pub fn effective(decl: &Declaration, op: &OperatorPolicy) -> EffectiveGrants {
    let mut denials = Vec::new();
    let mut mounts = Vec::new();
    for req in &decl.capabilities.fs {
        match op.mounts.get(&req.mount) {
            None => denials.push(Denial {
                capability: format!("fs:{}", req.mount),
                reason: format!(
                    "needs mount `{}`, which the operator does not configure",
                    req.mount
                ),
                blocks: true,
            }),
            Some(grant) if req.access > grant.ceiling => denials.push(Denial {
                capability: format!("fs:{}", req.mount),
                reason: format!(
                    "needs mount `{}` {}, the operator allows only {}",
                    req.mount, req.access, grant.ceiling
                ),
                blocks: true,
            }),
            Some(grant) => mounts.push(EffectiveMount {
                name: req.mount.clone(),
                host_path: grant.host_path.clone(),
                access: req.access,
            }),
        }
    }

    let mut env = Vec::new();
    for var in decl.env_vars() {
        if op.env.contains(var) {
            env.push(var.to_owned());
        } else {
            let required = decl.requires_env.iter().any(|r| r == var);
            denials.push(Denial {
                capability: format!("env:{var}"),
                reason: if required {
                    format!(
                        "requires env {var}, which is not granted (grant it with --allow-env {var})"
                    )
                } else {
                    format!("optional env {var} is not granted")
                },
                blocks: required,
            });
        }
    }

    if !decl.capabilities.network.is_empty() {
        denials.push(Denial {
            capability: "network".to_owned(),
            reason: format!(
                "network access ({}) is not available in this build",
                decl.capabilities.network.join(", ")
            ),
            blocks: false,
        });
    }
    if decl.capabilities.terminal {
        denials.push(Denial {
            capability: "terminal".to_owned(),
            reason: "the terminal interface is not available in this build".to_owned(),
            blocks: false,
        });
    }

    let l = &op.limits;
    let limits = EffectiveLimits {
        timeout_ms: decl
            .timeout_ms
            .unwrap_or(l.default_timeout_ms)
            .min(l.max_timeout_ms),
        memory_bytes: decl
            .memory_mb
            .unwrap_or(l.default_memory_mb)
            .min(l.max_memory_mb)
            .saturating_mul(1024 * 1024),
        result_chars: decl
            .max_result_chars
            .unwrap_or(l.default_result_chars)
            .min(l.max_result_chars),
    };

    EffectiveGrants {
        mounts,
        env,
        network: Vec::new(),
        terminal: false,
        limits,
        denials,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn decl(text: &str) -> Declaration {
        Declaration::parse(text.as_bytes()).unwrap()
    }

    #[test]
    fn undeclared_is_denied_even_when_the_operator_allows_it() {
        let mut op = OperatorPolicy::with_workspace("/w".into());
        op.env.insert("SECRET".into());
        let g = effective(&decl("name='t'\ntoolset='x'"), &op);
        assert!(g.mounts.is_empty());
        assert!(g.env.is_empty());
        assert!(g.denials.is_empty());
    }

    #[test]
    fn required_env_not_granted_makes_the_tool_unavailable() {
        let op = OperatorPolicy::with_workspace("/w".into());
        let g = effective(&decl("name='t'\ntoolset='x'\nrequires_env=['KEY']"), &op);
        assert_eq!(
            g.unavailable_reason(),
            Some("requires env KEY, which is not granted (grant it with --allow-env KEY)")
        );
        let mut op = op;
        op.env.insert("KEY".into());
        let g = effective(&decl("name='t'\ntoolset='x'\nrequires_env=['KEY']"), &op);
        assert_eq!(g.env, ["KEY"]);
        assert_eq!(g.unavailable_reason(), None);
    }

    #[test]
    fn mounts_respect_the_operator_ceiling() {
        let mut op = OperatorPolicy::with_workspace("/w".into());
        let rw =
            decl("name='t'\ntoolset='x'\n[capabilities]\nfs=[{mount='workspace',access='rw'}]");
        let ro =
            decl("name='t'\ntoolset='x'\n[capabilities]\nfs=[{mount='workspace',access='ro'}]");
        assert_eq!(effective(&rw, &op).mounts[0].access, Access::Rw);
        assert_eq!(effective(&ro, &op).mounts[0].access, Access::Ro);
        op.mounts.get_mut("workspace").unwrap().ceiling = Access::Ro;
        assert!(effective(&rw, &op).unavailable_reason().is_some());
        assert_eq!(effective(&ro, &op).mounts[0].access, Access::Ro);
        let other = decl("name='t'\ntoolset='x'\n[capabilities]\nfs=[{mount='data',access='ro'}]");
        assert!(effective(&other, &op).unavailable_reason().is_some());
    }

    #[test]
    fn limits_are_wishes_capped_by_the_operator() {
        let op = OperatorPolicy::with_workspace("/w".into());
        let g = effective(
            &decl("name='t'\ntoolset='x'\ntimeout_ms=999999999\nmemory_mb=4096"),
            &op,
        );
        assert_eq!(g.limits.timeout_ms, 300_000);
        assert_eq!(g.limits.memory_bytes, 512 * 1024 * 1024);
        let g = effective(&decl("name='t'\ntoolset='x'"), &op);
        assert_eq!(
            g.limits,
            EffectiveLimits {
                timeout_ms: 30_000,
                memory_bytes: 64 << 20,
                result_chars: 100_000
            }
        );
    }

    #[test]
    fn network_and_terminal_are_never_granted_in_this_build() {
        let op = OperatorPolicy::with_workspace("/w".into());
        let g = effective(
            &decl(
                "name='t'\ntoolset='x'\n[capabilities]\nnetwork=['https://a.example']\nterminal=true",
            ),
            &op,
        );
        assert!(g.network.is_empty() && !g.terminal);
        assert_eq!(g.denials.len(), 2);
        assert_eq!(g.unavailable_reason(), None);
    }
}
