//! `[cluster]`: what the nodes of a cluster share — the Redis they keep their state in
//! (`redis_url`) and the secret every node seals approval rounds with (`state_key`), a
//! long one nothing else is handed.

use crate::error::PolicyFileError;
use crate::server::ServerPolicy;
use hermetic::Secrets;
use hermetic_policy::OperatorPolicy;
use serde::Deserialize;

/// `[cluster]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClusterToml {
    redis_url: Option<String>,
    state_key: Option<String>,
}

/// `[cluster]` into the server's settings: `redis_url` a Redis URL; `state_key` as
/// written (checked by [`check_state_key`] once the secrets are read).
pub(crate) fn cluster_settings(
    raw: ClusterToml,
    server: &mut ServerPolicy,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<(), PolicyFileError> {
    if let Some(url) = raw.redis_url {
        if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
            return Err(invalid(
                "cluster.redis_url: write redis://[user:password@]host[:port][/db] (or rediss:// for TLS)".into(),
            ));
        }
        server.redis_url = Some(url);
    }
    // Used only with a Redis (here or `serve --redis-url`), which holds the nonces:
    // a shared key without shared nonces would let one answer be replayed per node.
    server.state_key = raw.state_key;
    Ok(())
}

/// Shortest `[cluster] state_key` secret: 32 characters (e.g. `openssl rand -hex 32`
/// makes 64), so it cannot be guessed.
const MIN_STATE_KEY_CHARS: usize = 32;

/// The secret `[cluster] state_key` names is in the secrets file, long enough, and no
/// tool or terminal command may see it as an env var (who holds it can forge an
/// approval round's answers).
pub(crate) fn check_state_key(
    name: &str,
    secrets: &Secrets,
    policy: &OperatorPolicy,
    invalid: &dyn Fn(String) -> PolicyFileError,
) -> Result<(), PolicyFileError> {
    let Some(value) = secrets.get(name) else {
        return Err(invalid(format!(
            "cluster.state_key = {name:?}: no such secret in the secrets file ([secrets] file); add e.g. {name} = \"<output of openssl rand -hex 32>\" there, the same on every node"
        )));
    };
    if value.chars().count() < MIN_STATE_KEY_CHARS {
        return Err(invalid(format!(
            "cluster.state_key: the secret {name} must be at least {MIN_STATE_KEY_CHARS} characters (e.g. openssl rand -hex 32)"
        )));
    }
    let granted = policy.defaults.env.contains(name)
        || policy
            .tools
            .keys()
            .any(|tool| policy.grants_for(tool).env.contains(name))
        || std::iter::once(&policy.terminal.default)
            .chain(policy.terminal.tenants.values())
            .any(|t| t.env.iter().any(|e| e == name));
    if granted {
        return Err(invalid(format!(
            "cluster.state_key: the secret {name} is also granted as an env var, so a tool or command could read it and forge approval answers; use a secret nothing is granted"
        )));
    }
    // A hook's env and an inject binding hand the value out as surely: to a hook's
    // code, or to a destination (which may echo it to the tool in a form no scrubbing
    // knows).
    if let Some(hook) = policy
        .hooks
        .iter()
        .find(|h| h.grants.env.as_ref().is_some_and(|env| env.contains(name)))
    {
        return Err(invalid(format!(
            "cluster.state_key: the secret {name} is also granted to hooks.{}.env, so the hook could read it and forge approval answers; use a secret nothing is granted",
            hook.name
        )));
    }
    if let Some(tool) = policy
        .tools
        .iter()
        .find_map(|(tool, o)| o.inject.iter().any(|b| b.secret == name).then_some(tool))
    {
        return Err(invalid(format!(
            "cluster.state_key: the secret {name} is also bound in tools.{tool}.inject.{name}, so the host would send it to that destination, where it could be read and used to forge approval answers; use a secret nothing else uses"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::load::parse_in;

    #[test]
    fn a_cluster_state_key_names_a_long_secret_nothing_is_granted() {
        let dir = tempfile::TempDir::new().unwrap();
        let key = "k".repeat(40);
        std::fs::write(
            dir.path().join("secrets.toml"),
            format!("STATE = \"{key}\"\nSHORT = \"abc\"\n"),
        )
        .unwrap();
        let head = "[secrets]\nfile = \"secrets.toml\"\n";
        let load = |rest: &str| parse_in(dir.path(), &format!("{head}{rest}"));
        let loaded = load("[cluster]\nstate_key = \"STATE\"\n").unwrap();
        assert_eq!(loaded.server.state_key.as_deref(), Some("STATE"));
        let says = |rest: &str, what: &str| {
            let e = load(rest).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        };
        says("[cluster]\nstate_key = \"NOPE\"\n", "no such secret");
        says(
            "[cluster]\nstate_key = \"SHORT\"\n",
            "at least 32 characters",
        );
        says(
            "[defaults]\nenv = [\"STATE\"]\n[cluster]\nstate_key = \"STATE\"\n",
            "also granted as an env var",
        );
        says(
            "[tools.t]\nenv = [\"STATE\"]\n[cluster]\nstate_key = \"STATE\"\n",
            "also granted as an env var",
        );
        says(
            "[terminal]\nenv = [\"STATE\"]\n[cluster]\nstate_key = \"STATE\"\n",
            "also granted as an env var",
        );
        // Nor handed to a hook, nor sent by the host to a destination.
        says(
            "[hooks.audit]\npath = \"audit.wasm\"\norder = 1\nenv = [\"STATE\"]\n[cluster]\nstate_key = \"STATE\"\n",
            "cluster.state_key: the secret STATE is also granted to hooks.audit.env",
        );
        says(
            "[tools.t.inject.STATE]\ndestination = \"https://api.example.com/v1\"\nheader = \"X-Key\"\n[cluster]\nstate_key = \"STATE\"\n",
            "cluster.state_key: the secret STATE is also bound in tools.t.inject.STATE",
        );
        // Another secret in either place is fine.
        load(
            "[hooks.audit]\npath = \"audit.wasm\"\norder = 1\nenv = [\"SHORT\"]\n[tools.t.inject.SHORT]\ndestination = \"https://api.example.com/v1\"\nheader = \"X-Key\"\n[cluster]\nstate_key = \"STATE\"\n",
        )
        .unwrap();
    }
}
