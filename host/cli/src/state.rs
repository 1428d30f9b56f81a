//! `hermetic state`: tools' key-value data for operators — list the stores, show one,
//! delete a tenant's, a tool's or a session's — in the embedded file or the cluster's
//! Redis, found as `hermetic serve` finds them.
//!
//! Exit codes: 0 done; 1 `show` of a store or key that does not exist; 2 bad usage
//! (`delete` without `--yes` and no terminal to ask on); 3 the store cannot be opened
//! (a running server holds the embedded file, Redis is unreachable).

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use hermetic::{
    KeyValueBackend, KeyValueNamespace, KeyValueSettings, KeyValueStore, KeyValueStoreFilter,
    KeyValueStoreId, KeyValueStoreInfo,
};
use serde_json::json;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Where the data is found, for every subcommand's help.
const WHERE: &str = "Where: --file or --redis-url; else as `hermetic serve` finds it — --policy's \
[cluster] redis_url, else its [keyvalue] file, else $HERMETIC_DATA_DIR/keyvalue.redb (default \
~/.local/share/hermetic). The embedded file is one process's at a time: while a server that used \
it runs, stop the server first (Redis works while the nodes run).";

/// Subcommands of `hermetic state`.
#[derive(Subcommand, Debug)]
pub enum StateCommand {
    #[command(after_help = WHERE)]
    /// List the stores: tenant, tool, session (`-` for a tool of tenant scope), keys,
    /// bytes, and when a session store expires unless written again.
    List {
        /// Only this tenant's stores (`""`: the operator's own).
        #[arg(long, value_name = "T")]
        tenant: Option<String>,
        /// Print JSON: [{"tenant","tool","session","keys","bytes","expires_in_secs"}].
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        at: StoreArgs,
    },
    #[command(after_help = WHERE)]
    /// Show one store's entries (bucket, key, bytes), or with KEY its value. The value
    /// is a tenant's bytes: control characters (ESC, CR, …), bidirectional overrides
    /// and bytes that are not UTF-8 are written as `\xNN` / `\u{NNNN}` escapes, so
    /// none reaches the terminal (an escape sequence could set the clipboard, retitle
    /// or rewrite the screen); --raw writes the bytes as stored.
    ///
    /// Exit code 1 when the store or the key does not exist.
    Show {
        /// The tenant (`""`: the operator's own).
        #[arg(long, value_name = "T")]
        tenant: String,
        /// The tool, as `list` shows it (a bundled tool's name; `ext:NAME` for a tool
        /// from a file or a registry).
        #[arg(long, value_name = "NAME")]
        tool: String,
        /// The session, for a tool of session scope (`todo`).
        #[arg(long, value_name = "S")]
        session: Option<String>,
        /// The bucket of KEY (default: the default bucket, `""`).
        #[arg(long, value_name = "B", default_value = "")]
        bucket: String,
        /// Print entries as JSON: [{"bucket","key","bytes"}].
        #[arg(long)]
        json: bool,
        /// With KEY: write the value's bytes as stored, escaping nothing (for a file
        /// or a pipe, not a terminal).
        #[arg(long, requires = "key")]
        raw: bool,
        /// One key whose value to print.
        key: Option<String>,
        #[command(flatten)]
        at: StoreArgs,
    },
    #[command(after_help = WHERE)]
    /// Delete stores: every store of a tenant, or only one tool's, or only one
    /// session's. Lists what it deletes and asks first (on a terminal) unless --yes.
    Delete {
        /// The tenant whose stores to delete (`""`: the operator's own).
        #[arg(long, value_name = "T")]
        tenant: String,
        /// Only this tool's stores.
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
        /// Only this session's stores.
        #[arg(long, value_name = "S")]
        session: Option<String>,
        /// Do not ask.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        at: StoreArgs,
    },
}

/// Where the data is ([`WHERE`]).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Store")]
pub struct StoreArgs {
    /// The operator policy file (its [keyvalue] and [cluster] settings).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The embedded store's file.
    #[arg(long, value_name = "PATH", conflicts_with = "redis_url")]
    file: Option<PathBuf>,
    /// The cluster's Redis (`redis://[user:password@]host[:port][/db]`).
    #[arg(long, value_name = "URL")]
    redis_url: Option<String>,
}

/// Where the data is, resolved.
enum Place {
    File(PathBuf),
    Redis(String),
}

impl StoreArgs {
    fn place(&self) -> Result<(Place, KeyValueSettings)> {
        let loaded = match &self.policy {
            Some(file) => {
                let cwd =
                    std::env::current_dir().context("cannot determine the current directory")?;
                Some(hermetic_config::load(file, &cwd)?)
            }
            None => None,
        };
        let settings = loaded
            .as_ref()
            .map_or_else(KeyValueSettings::default, |l| l.keyvalue_settings);
        if let Some(file) = &self.file {
            return Ok((Place::File(file.clone()), settings));
        }
        if let Some(url) = self
            .redis_url
            .clone()
            .or_else(|| loaded.as_ref().and_then(|l| l.server.redis_url.clone()))
        {
            return Ok((Place::Redis(url), settings));
        }
        let file = loaded
            .and_then(|l| l.keyvalue_file)
            .or_else(|| default_keyvalue_file().map(|(f, _)| f));
        match file {
            Some(file) => Ok((Place::File(file), settings)),
            None => bail!(
                "no place for key-value data: HOME is not set; name the file with --file or --policy"
            ),
        }
    }

    /// The backend, or `None` when the embedded file does not exist (nothing stored).
    /// `reading`: for `list` and `show`, which change nothing — Redis data of the
    /// older layout is not moved (nodes of the older version may still be running).
    fn open(&self, reading: bool) -> Result<Option<Arc<dyn KeyValueBackend>>> {
        let (place, settings) = self.place()?;
        match place {
            Place::Redis(url) => {
                let kv = hermetic_server::store::RedisKeyValue::new(&url)?.with_settings(settings);
                if !reading {
                    return Ok(Some(Arc::new(kv)));
                }
                let kv = kv.without_migration();
                if kv.layout_unchecked()? {
                    eprintln!(
                        "note: no node of this version has used this Redis yet: data an older version kept (hermetic:kv:…), if any, is not shown until a node moves it into its stores"
                    );
                }
                Ok(Some(Arc::new(kv)))
            }
            Place::File(path) => {
                if !path.exists() {
                    eprintln!(
                        "no key-value store at {}: nothing has been stored there",
                        path.display()
                    );
                    return Ok(None);
                }
                match hermetic::EmbeddedKeyValue::open_with(&path, settings) {
                    Ok(store) => Ok(Some(Arc::new(store))),
                    Err(hermetic::KeyValueError::InUse(_)) => Err(in_use(&path)),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }
}

fn in_use(path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{} is open in another process: a running `hermetic serve` (or a `hermetic call` in progress) holds it, and the embedded store lets one process use its file at a time. Stop that process and run `hermetic state` again (a cluster keeps its data in Redis, where `hermetic state --redis-url` works while the nodes run)",
        path.display()
    )
}

/// Runs a state subcommand.
///
/// # Errors
/// When the store cannot be opened or read (exit code 3).
pub fn run(command: StateCommand) -> Result<ExitCode> {
    match command {
        StateCommand::List { at, tenant, json } => list(&at, tenant, json),
        StateCommand::Show {
            at,
            tenant,
            tool,
            session,
            bucket,
            json,
            raw,
            key,
        } => {
            let id = match session {
                Some(s) => KeyValueStoreId::session(&tool, &tenant, &s),
                None => KeyValueStoreId::tenant(&tool, &tenant),
            };
            show(&at, &id, &bucket, key.as_deref(), json, raw)
        }
        StateCommand::Delete {
            at,
            tenant,
            tool,
            session,
            yes,
        } => delete(
            &at,
            &KeyValueStoreFilter {
                tenant: Some(tenant),
                tool,
                session,
            },
            yes,
        ),
    }
}

/// `3h05m`, `59s`: how long until a session store expires.
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

fn print_stores(stores: &[KeyValueStoreInfo]) -> Result<()> {
    let row = |s: &KeyValueStoreInfo| {
        [
            format!("{:?}", s.id.tenant),
            s.id.tool.clone(),
            s.id.session
                .as_ref()
                .map_or("-".to_owned(), |s| format!("{s:?}")),
            s.keys.to_string(),
            s.bytes.to_string(),
            s.expires_in.map_or("never".to_owned(), duration),
        ]
    };
    let head = ["TENANT", "TOOL", "SESSION", "KEYS", "BYTES", "EXPIRES"].map(str::to_owned);
    let rows: Vec<[String; 6]> = std::iter::once(head)
        .chain(stores.iter().map(row))
        .collect();
    let mut widths = [0; 6];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out!("{}", line.join("  ").trim_end());
    }
    Ok(())
}

fn list(at: &StoreArgs, tenant: Option<String>, json: bool) -> Result<ExitCode> {
    let stores = match at.open(true)? {
        Some(kv) => kv.stores(&KeyValueStoreFilter {
            tenant,
            ..KeyValueStoreFilter::default()
        })?,
        None => Vec::new(),
    };
    if json {
        let items: Vec<_> = stores
            .iter()
            .map(|s| {
                json!({
                    "tenant": s.id.tenant,
                    "tool": s.id.tool,
                    "session": s.id.session,
                    "keys": s.keys,
                    "bytes": s.bytes,
                    "expires_in_secs": s.expires_in.map(|d| d.as_secs()),
                })
            })
            .collect();
        out!("{}", serde_json::to_string_pretty(&items)?);
    } else {
        print_stores(&stores)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn show(
    at: &StoreArgs,
    id: &KeyValueStoreId,
    bucket: &str,
    key: Option<&str>,
    json: bool,
    raw: bool,
) -> Result<ExitCode> {
    let Some(kv) = at.open(true)? else {
        return Ok(ExitCode::from(1));
    };
    if let Some(key) = key {
        let ns = KeyValueNamespace::new(Arc::new(KeyValueStore::new(id.clone())), bucket);
        return match kv.get(&ns, key)? {
            Some(value) => {
                let mut stdout = std::io::stdout().lock();
                if raw {
                    stdout.write_all(&value)?;
                } else {
                    let (text, escaped) = shown(&value);
                    stdout.write_all(text.as_bytes())?;
                    if escaped {
                        eprintln!(
                            "(control characters and bytes that are not UTF-8 are shown escaped: --raw writes the value as stored)"
                        );
                    }
                }
                stdout.flush()?;
                Ok(ExitCode::SUCCESS)
            }
            None => {
                eprintln!("no key {key:?} in bucket {bucket:?} of {id}");
                Ok(ExitCode::from(1))
            }
        };
    }
    let entries = kv.entries(id)?;
    if entries.is_empty() {
        eprintln!("no store {id} (`hermetic state list` shows the stores there are)");
        return Ok(ExitCode::from(1));
    }
    if json {
        let items: Vec<_> = entries
            .iter()
            .map(|e| json!({"bucket": e.bucket, "key": e.key, "bytes": e.len}))
            .collect();
        out!("{}", serde_json::to_string_pretty(&items)?);
    } else {
        for e in &entries {
            out!("{:?}\t{:?}\t{}", e.bucket, e.key, e.len);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `value` as text safe on a terminal, and whether anything was escaped: newlines
/// and tabs stay; every other control character (C0, DEL, C1 — CSI is one), every
/// bidirectional override or isolate (text that displays other than it reads) and
/// every byte that is not UTF-8 is written `\xNN` or `\u{NNNN}`. Hand-written: the
/// standard `escape_debug` also escapes quotes and backslashes and would garble plain
/// JSON values.
fn shown(value: &[u8]) -> (String, bool) {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(value.len());
    let mut escaped = false;
    for chunk in value.utf8_chunks() {
        for c in chunk.valid().chars() {
            let unsafe_here = (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
            if !unsafe_here {
                text.push(c);
            } else if u32::from(c) < 0x100 {
                let _ = write!(text, "\\x{:02x}", u32::from(c));
                escaped = true;
            } else {
                let _ = write!(text, "\\u{{{:04x}}}", u32::from(c));
                escaped = true;
            }
        }
        for b in chunk.invalid() {
            let _ = write!(text, "\\x{b:02x}");
            escaped = true;
        }
    }
    (text, escaped)
}

fn delete(at: &StoreArgs, filter: &KeyValueStoreFilter, yes: bool) -> Result<ExitCode> {
    let Some(kv) = at.open(false)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let meant = kv.stores(filter)?;
    if meant.is_empty() {
        eprintln!("no store matches: nothing deleted");
        return Ok(ExitCode::SUCCESS);
    }
    print_stores(&meant)?;
    if !yes {
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "error: not deleting without --yes (there is no terminal to ask on): run again with --yes"
            );
            return Ok(ExitCode::from(2));
        }
        eprint!("Delete these {} stores? [y/N] ", meant.len());
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("nothing deleted");
            return Ok(ExitCode::SUCCESS);
        }
    }
    let deleted = delete_listed(kv.as_ref(), meant)?;
    let keys: u64 = deleted.iter().map(|s| s.keys).sum();
    let bytes: u64 = deleted.iter().map(|s| s.bytes).sum();
    out!(
        "deleted {} stores ({keys} keys, {bytes} bytes)",
        deleted.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Deletes the stores listed (and confirmed), not what the listing's filter means
/// by now: a store made since is not deleted unseen. What was deleted (as listed).
fn delete_listed(
    kv: &dyn KeyValueBackend,
    listed: Vec<KeyValueStoreInfo>,
) -> Result<Vec<KeyValueStoreInfo>> {
    let mut deleted = Vec::with_capacity(listed.len());
    for info in listed {
        if kv.delete_store(&info.id)? {
            deleted.push(info);
        }
    }
    Ok(deleted)
}

/// Where tools' key-value data lives without `[keyvalue] file`: `$HERMETIC_DATA_DIR`
/// (the operator's word: `true`), else `$XDG_DATA_HOME/hermetic`, else
/// `~/.local/share/hermetic` (a default: `false`), then `keyvalue.redb`. `None` without
/// a home: the store is kept in memory.
pub(crate) fn default_keyvalue_file() -> Option<(std::path::PathBuf, bool)> {
    if let Some(dir) = std::env::var_os("HERMETIC_DATA_DIR") {
        return Some((std::path::PathBuf::from(dir).join("keyvalue.redb"), true));
    }
    let dir = std::env::var_os("XDG_DATA_HOME")
        .map(|d| std::path::PathBuf::from(d).join("hermetic"))
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| std::path::PathBuf::from(h).join(".local/share/hermetic"))
        })?;
    Some((dir.join("keyvalue.redb"), false))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use hermetic::{
        KeyValueBackend as _, KeyValueNamespace, KeyValueStore, KeyValueStoreFilter,
        KeyValueStoreId,
    };
    use std::sync::Arc;

    /// `state delete` deletes what it listed: a store of the same tenant made between
    /// the listing and the answer stays (the filter was run again, and took it).
    #[test]
    fn a_delete_takes_the_stores_listed_not_ones_made_since() {
        let kv = hermetic::EmbeddedKeyValue::in_memory().unwrap();
        let set = |id: KeyValueStoreId| {
            let ns = KeyValueNamespace::new(Arc::new(KeyValueStore::new(id)), "");
            kv.set(&ns, "k", b"v", &Default::default()).unwrap();
        };
        set(KeyValueStoreId::tenant("memory", "acme"));
        let filter = KeyValueStoreFilter {
            tenant: Some("acme".into()),
            ..KeyValueStoreFilter::default()
        };
        let listed = kv.stores(&filter).unwrap();
        set(KeyValueStoreId::session("todo", "acme", "s1"));
        let deleted = super::delete_listed(&kv, listed).unwrap();
        assert_eq!(deleted.len(), 1);
        let left = kv.stores(&filter).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].id, KeyValueStoreId::session("todo", "acme", "s1"));
    }

    #[test]
    fn values_are_shown_without_anything_a_terminal_acts_on() {
        let (text, escaped) = super::shown(
            b"ok\ttab\nline \"q\" \\ \x1b]52;c;aGk=\x07 \r\x7f \xc2\x9b \xe2\x80\xae \xff",
        );
        assert_eq!(
            text,
            "ok\ttab\nline \"q\" \\ \\x1b]52;c;aGk=\\x07 \\x0d\\x7f \\x9b \\u{202e} \\xff"
        );
        assert!(escaped);
        assert_eq!(
            super::shown("{\"a\": \"ü\"}".as_bytes()),
            ("{\"a\": \"ü\"}".to_owned(), false)
        );
    }
}
