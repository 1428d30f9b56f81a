//! Registry credentials where people already keep them: `HERMETIC_REGISTRY_USERNAME` /
//! `HERMETIC_REGISTRY_PASSWORD`, then podman's auth file (`$REGISTRY_AUTH_FILE`,
//! `$XDG_RUNTIME_DIR/containers/auth.json`), then docker's
//! (`$DOCKER_CONFIG/config.json`, `~/.docker/config.json`).
//!
//! Read here rather than with `docker_credential`: that crate runs the
//! `docker-credential-*` helper programs a `credsStore` names, and a pull should not
//! start programs from PATH. An entry that only names a helper is skipped (the
//! environment variables are the way to pass such credentials).

use crate::client::Credentials;
use base64::Engine as _;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Largest auth file read.
const MAX_AUTH_FILE: u64 = 1024 * 1024;

#[derive(serde::Deserialize)]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

#[derive(serde::Deserialize)]
struct Entry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// The auth files looked at, in order.
pub fn auth_files() -> Vec<PathBuf> {
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    let mut files = Vec::new();
    files.extend(env("REGISTRY_AUTH_FILE"));
    files.extend(env("XDG_RUNTIME_DIR").map(|d| d.join("containers/auth.json")));
    files.extend(env("DOCKER_CONFIG").map(|d| d.join("config.json")));
    files.extend(env("HOME").map(|h| h.join(".docker/config.json")));
    files
}

/// Credentials for `registry` (`host[:port]`), if any are configured.
pub fn credentials_for(registry: &str) -> Option<Credentials> {
    if let (Ok(username), Ok(password)) = (
        std::env::var("HERMETIC_REGISTRY_USERNAME"),
        std::env::var("HERMETIC_REGISTRY_PASSWORD"),
    ) {
        return Some(Credentials { username, password });
    }
    auth_files()
        .iter()
        .find_map(|file| from_file(file, registry))
}

fn from_file(file: &std::path::Path, registry: &str) -> Option<Credentials> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(MAX_AUTH_FILE)
        .read_to_string(&mut text)
        .ok()?;
    from_text(&text, registry)
}

/// The entry for `registry` in an auth file's text: keys match exactly, or after
/// dropping a scheme and a path (`https://host/v1/`).
pub fn from_text(text: &str, registry: &str) -> Option<Credentials> {
    let file: AuthFile = serde_json::from_str(text).ok()?;
    let bare = |k: &str| {
        let k = k
            .strip_prefix("https://")
            .or_else(|| k.strip_prefix("http://"))
            .unwrap_or(k);
        k.split('/').next().unwrap_or(k).to_owned()
    };
    let entry = file.auths.get(registry).or_else(|| {
        file.auths
            .iter()
            .find(|(k, _)| bare(k) == registry)
            .map(|(_, v)| v)
    })?;
    if let (Some(u), Some(p)) = (&entry.username, &entry.password) {
        return Some(Credentials {
            username: u.clone(),
            password: p.clone(),
        });
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(entry.auth.as_deref()?.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (username, password) = decoded.split_once(':')?;
    Some(Credentials {
        username: username.to_owned(),
        password: password.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_file_entries_are_found_by_host() {
        // base64("tester:s3cret")
        let text = r#"{"auths": {"https://reg.example.com/v1/": {"auth": "dGVzdGVyOnMzY3JldA=="},
                       "127.0.0.1:5000": {"username": "u", "password": "p"},
                       "helper.example.com": {}}, "credsStore": "desktop"}"#;
        let c = from_text(text, "reg.example.com").unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("tester", "s3cret")
        );
        assert_eq!(from_text(text, "127.0.0.1:5000").unwrap().username, "u");
        assert!(from_text(text, "helper.example.com").is_none());
        assert!(from_text(text, "other.example.com").is_none());
        assert!(from_text("not json", "x").is_none());
    }
}
