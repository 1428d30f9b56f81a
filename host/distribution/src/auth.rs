//! Registry credentials, each for the one registry it names: `HERMETIC_REGISTRY_AUTH`
//! (`host[:port]=user:password`, one entry a line), then podman's auth file
//! (`$REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`), then docker's
//! (`$DOCKER_CONFIG/config.json`, `~/.docker/config.json`) — both keyed by registry too.
//! `HERMETIC_REGISTRY_TOKEN_HOSTS` (`registry=host[:port]`, several separated by commas or
//! white space) names the token servers, besides the registry itself, that a registry's
//! credentials may also go to.
//!
//! The unscoped `HERMETIC_REGISTRY_USERNAME` / `_PASSWORD` of earlier versions were
//! answered to whichever registry asked (issue 47): they are refused with what to set
//! instead, never read.
//!
//! Read here rather than with `docker_credential`: that crate runs the
//! `docker-credential-*` helper programs a `credsStore` names, and a pull should not
//! start programs from PATH. An entry that only names a helper is skipped (the
//! environment variable is the way to pass such credentials).

use base64::Engine as _;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Registry credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name.
    pub username: String,
    /// Password or token.
    pub password: String,
    /// Token servers (`host[:port]`) besides the registry itself that may receive these
    /// credentials when the registry's Bearer challenge names them as its realm (and that
    /// may, like the registry, be on a private address; plain HTTP only on loopback
    /// under `insecure`). Empty: only the registry itself.
    pub token_hosts: Vec<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Credentials({}, <password>, token hosts {:?})",
            self.username, self.token_hosts
        )
    }
}

/// The variable holding scoped credentials: `host[:port]=user:password`, one a line.
pub const AUTH_VAR: &str = "HERMETIC_REGISTRY_AUTH";
/// The variable naming token servers: `registry=host[:port]`, comma or space separated.
pub const TOKEN_HOSTS_VAR: &str = "HERMETIC_REGISTRY_TOKEN_HOSTS";
/// The unscoped variables of earlier versions, refused.
const UNSCOPED_VARS: [&str; 2] = ["HERMETIC_REGISTRY_USERNAME", "HERMETIC_REGISTRY_PASSWORD"];

/// Largest auth file read.
const MAX_AUTH_FILE: u64 = 1024 * 1024;

/// A registry setting in the environment that cannot be used. The texts never repeat an
/// entry's value: it holds a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BadSetting {
    /// `HERMETIC_REGISTRY_USERNAME` / `_PASSWORD` are set.
    #[error(
        "HERMETIC_REGISTRY_USERNAME and HERMETIC_REGISTRY_PASSWORD are no longer read: they were given to whichever registry asked. Name the registry they are for instead: {AUTH_VAR}=\"{registry}=USER:PASSWORD\" (and unset them)"
    )]
    Unscoped {
        /// The registry being contacted (for the example).
        registry: String,
    },
    /// An entry that does not parse.
    #[error("{var}, entry {entry}: {reason}")]
    Malformed {
        /// The variable.
        var: &'static str,
        /// Its 1-based entry number.
        entry: usize,
        /// What is wrong and what to write.
        reason: String,
    },
}

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

/// Credentials for `registry` (`host[:port]`, as written in references): from
/// [`AUTH_VAR`], else from an auth file, with the token servers [`TOKEN_HOSTS_VAR`]
/// names for it. `None` when none are configured for this registry — credentials
/// configured for another registry are never returned.
///
/// # Errors
/// [`BadSetting`] when the unscoped variables are set or a variable does not parse
/// (whichever registry its entries are for: a typo is said at once).
pub fn for_registry(registry: &str) -> Result<Option<Credentials>, BadSetting> {
    if UNSCOPED_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
        return Err(BadSetting::Unscoped {
            registry: registry.to_owned(),
        });
    }
    let token_hosts = match std::env::var(TOKEN_HOSTS_VAR) {
        Ok(text) => token_hosts_for(&text, registry)?,
        Err(_) => Vec::new(),
    };
    let from_env = match std::env::var(AUTH_VAR) {
        Ok(text) => from_auth_var(&text, registry)?,
        Err(_) => None,
    };
    let found = from_env.or_else(|| {
        auth_files()
            .iter()
            .find_map(|file| from_file(file, registry))
    });
    Ok(found.map(|c| Credentials { token_hosts, ..c }))
}

/// `host[:port]` as a registry or token server is named (an IPv6 address in brackets),
/// lowercased; `None` when it has a scheme, a path, a user, white space or a port that
/// is not a number.
fn host_port(text: &str) -> Option<String> {
    let (host_ok, port) = if let Some(v6) = text.strip_prefix('[') {
        let (addr, rest) = v6.split_once(']')?;
        let port = match rest {
            "" => None,
            rest => Some(rest.strip_prefix(':')?),
        };
        let ok = !addr.is_empty() && addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':');
        (ok, port)
    } else {
        let (host, port) = match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        };
        let ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        (ok, port)
    };
    let port_ok =
        port.is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    (host_ok && port_ok).then(|| text.to_ascii_lowercase())
}

/// The credentials [`AUTH_VAR`]'s `text` holds for `registry`.
///
/// One entry a line: RFC 7617 allows no control character in a user name or a password,
/// so a newline can never be part of one, while `,`, `;`, `:`, `=` and spaces can.
/// An entry is split at its first `=` (a host has none) and then at the first `:` (a
/// Basic user name has none): the password is the rest, as written.
///
/// # Errors
/// [`BadSetting::Malformed`] for an entry that does not parse, or a second entry for
/// one registry.
pub fn from_auth_var(text: &str, registry: &str) -> Result<Option<Credentials>, BadSetting> {
    let bad = |entry: usize, reason: &str| BadSetting::Malformed {
        var: AUTH_VAR,
        entry,
        reason: reason.to_owned(),
    };
    let wanted = registry.to_ascii_lowercase();
    let mut seen = Vec::new();
    let mut found = None;
    let lines = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).trim_start())
        .filter(|l| !l.is_empty());
    for (i, line) in lines.enumerate() {
        let entry = i + 1;
        let (host, userpass) = line.split_once('=').ok_or_else(|| {
            bad(
                entry,
                "expected host[:port]=user:password (one entry a line)",
            )
        })?;
        let host = host_port(host.trim_end()).ok_or_else(|| {
            bad(
                entry,
                "the registry is written host[:port], as in references (no scheme, no path)",
            )
        })?;
        let (username, password) = userpass
            .split_once(':')
            .filter(|(u, p)| !u.is_empty() && !p.is_empty())
            .ok_or_else(|| {
                bad(
                    entry,
                    "expected host[:port]=user:password, with a user name and a password",
                )
            })?;
        if seen.contains(&host) {
            return Err(bad(entry, &format!("a second entry for {host}")));
        }
        if host == wanted {
            found = Some(Credentials {
                username: username.to_owned(),
                password: password.to_owned(),
                token_hosts: Vec::new(),
            });
        }
        seen.push(host);
    }
    Ok(found)
}

/// The token servers [`TOKEN_HOSTS_VAR`]'s `text` names for `registry`.
///
/// # Errors
/// [`BadSetting::Malformed`] for an entry that is not `registry=host[:port]`.
pub fn token_hosts_for(text: &str, registry: &str) -> Result<Vec<String>, BadSetting> {
    let wanted = registry.to_ascii_lowercase();
    let mut hosts = Vec::new();
    let entries = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty());
    for (i, entry) in entries.enumerate() {
        let parsed = entry
            .split_once('=')
            .and_then(|(r, h)| Some((host_port(r)?, host_port(h)?)));
        let Some((for_registry, host)) = parsed else {
            return Err(BadSetting::Malformed {
                var: TOKEN_HOSTS_VAR,
                entry: i + 1,
                reason: format!(
                    "expected registry=host[:port] (e.g. registry.example.com=auth.example.com), not {:?}",
                    entry.chars().take(100).collect::<String>()
                ),
            });
        };
        if for_registry == wanted && !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    Ok(hosts)
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
            token_hosts: Vec::new(),
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
        token_hosts: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(c: Option<Credentials>) -> Option<(String, String)> {
        c.map(|c| (c.username, c.password))
    }

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

    #[test]
    fn the_auth_variable_answers_only_for_the_registry_it_names() {
        let text = "reg.example.com=alice:pa:ss=wo,rd; x\r\n\n  127.0.0.1:5000=bob:b\nREG2.example.com:8443=carol:c c\n[::1]:5000=dave:d\n";
        let got = |r| pair(from_auth_var(text, r).unwrap());
        // The password is everything after the first ':' — ':', '=', ',', ';' and spaces
        // included; a CRLF line ending is not part of it.
        assert_eq!(
            got("reg.example.com"),
            Some(("alice".into(), "pa:ss=wo,rd; x".into()))
        );
        assert_eq!(got("127.0.0.1:5000"), Some(("bob".into(), "b".into())));
        assert_eq!(got("[::1]:5000"), Some(("dave".into(), "d".into())));
        // Hosts compare without case; the port is part of the name.
        assert_eq!(
            got("reg2.example.com:8443"),
            Some(("carol".into(), "c c".into()))
        );
        for other in [
            "reg2.example.com",
            "127.0.0.1:5001",
            "127.0.0.1",
            "example.com",
            "evil.example.com",
        ] {
            assert_eq!(got(other), None, "{other}");
        }
        assert_eq!(pair(from_auth_var("", "reg.example.com").unwrap()), None);
    }

    #[test]
    fn a_malformed_auth_entry_is_refused_without_repeating_it() {
        for (text, says) in [
            (
                "reg.example.com",
                "entry 1: expected host[:port]=user:password",
            ),
            ("a.example=u:p\nreg.example.com:s3cret", "entry 2: expected"),
            (
                "https://reg.example.com=u:s3cret",
                "entry 1: the registry is written host[:port]",
            ),
            ("reg.example.com/v2=u:s3cret", "no scheme, no path"),
            ("=u:s3cret", "the registry is written"),
            (
                "reg.example.com:pa:ss=w0rd:s3cret",
                "the registry is written",
            ),
            ("reg.example.com:=u:s3cret", "the registry is written"),
            ("u@reg.example.com=u:s3cret", "the registry is written"),
            ("[::1=u:s3cret", "the registry is written"),
            ("reg.example.com=u", "with a user name and a password"),
            ("reg.example.com=:s3cret", "with a user name"),
            ("reg.example.com=u:", "and a password"),
            (
                "a.example=u:p\nA.example=v:s3cret",
                "entry 2: a second entry for a.example",
            ),
        ] {
            let e = from_auth_var(text, "reg.example.com")
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("HERMETIC_REGISTRY_AUTH, ") && e.contains(says),
                "{text:?}: {e}"
            );
            assert!(!e.contains("s3cret"), "{e}");
        }
    }

    proptest::proptest! {
        /// Whatever the variable holds, parsing ends in a value or an error, and
        /// credentials come back only from a line naming exactly that registry.
        #[test]
        fn only_a_line_naming_the_registry_gives_credentials(
            text in "(([a-z.:0-9=]{0,12}|reg\\.example\\.com(:5000)?|REG\\.example\\.COM)=[a-z:=]{0,6}[\n\r ]{0,2}){0,4}",
        ) {
            if let Ok(Some(_)) = from_auth_var(&text, "reg.example.com") {
                proptest::prop_assert!(
                    text.lines()
                        .any(|l| l.trim_start().to_ascii_lowercase().starts_with("reg.example.com="))
                );
            }
            let _ = token_hosts_for(&text, "reg.example.com");
        }
    }

    #[test]
    fn token_hosts_are_per_registry() {
        let text = "reg.example.com=auth.example.com, reg.example.com=AUTH2.example.com:5001\n127.0.0.1:5000=127.0.0.1:5001";
        assert_eq!(
            token_hosts_for(text, "reg.example.com").unwrap(),
            ["auth.example.com", "auth2.example.com:5001"]
        );
        assert_eq!(
            token_hosts_for(text, "127.0.0.1:5000").unwrap(),
            ["127.0.0.1:5001"]
        );
        assert!(
            token_hosts_for(text, "other.example.com")
                .unwrap()
                .is_empty()
        );
        for bad in ["auth.example.com", "reg=https://auth", "reg=", "=auth"] {
            let e = token_hosts_for(bad, "reg").unwrap_err().to_string();
            assert!(
                e.starts_with(
                    "HERMETIC_REGISTRY_TOKEN_HOSTS, entry 1: expected registry=host[:port]"
                ),
                "{bad}: {e}"
            );
        }
    }
}
