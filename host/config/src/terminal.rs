//! `[terminal]`: the operator's default terminal and `[terminal.tenants.ID]` tables
//! merged onto it, the keys every backend shares read here (each backend's own table
//! is kept for the terminal host to read); and who answers its approvals.

use crate::error::PolicyFileError;
use crate::server::ServerPolicy;
use hermetic_approval::ApprovalGate;
use hermetic_policy::TenantPolicy;
use hermetic_policy::approval::ApproverChoice;
use hermetic_policy::terminal::{MAX_TIMEOUT_SECS, TerminalConfig, TerminalSettings};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `[terminal]` table: the operator's default terminal, and `[terminal.tenants.ID]`
/// tables whose keys replace the default's for that tenant (sub-tables merge key by
/// key). The keys every backend shares are read here; each backend's own table
/// (`[terminal.bwrap]`, …) is kept as written for the backend to read when the
/// terminal host is built (`hermetic_terminal::attach`), which also refuses keys no
/// backend owns and resolves the backends' relative paths against `base_dir`. The
/// approval allowlist is a file the host keeps, so it resolves against the policy
/// file's directory (`file_dir`), as the secrets file and the audit log do.
pub(crate) fn terminal_settings(
    table: Option<toml::Table>,
    tenants: &BTreeMap<String, TenantPolicy>,
    base_dir: &Path,
    file_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<TerminalSettings, PolicyFileError> {
    let mut table = table.unwrap_or_default();
    let per_tenant = match table.remove("tenants") {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t,
        Some(_) => {
            return Err(invalid(
                "terminal.tenants must be a table of tenant ids".into(),
            ));
        }
    };
    let parse = |t: toml::Table, at: &str| -> Result<TerminalConfig, PolicyFileError> {
        let mut config: TerminalConfig = toml::Value::Table(t)
            .try_into()
            .map_err(|e: toml::de::Error| invalid(format!("{at}: {}", e.message())))?;
        let resolve_in = |base: &Path, p: &mut Option<PathBuf>| {
            if let Some(path) = p.as_mut()
                && path.is_relative()
            {
                *path = base.join(&*path);
            }
        };
        resolve_in(file_dir, &mut config.approval.allowlist_file);
        if config.timeout_secs == 0 || config.timeout_secs > MAX_TIMEOUT_SECS {
            return Err(invalid(format!(
                "{at}.timeout_secs must be 1 to {}",
                MAX_TIMEOUT_SECS
            )));
        }
        ApprovalGate::new(&config.approval).map_err(|e| invalid(format!("{at}.approval: {e}")))?;
        Ok(config)
    };
    let default = parse(table.clone(), "terminal")?;
    let mut out = BTreeMap::new();
    for (id, value) in per_tenant {
        if !tenants.contains_key(&id) {
            return Err(invalid(format!(
                "terminal.tenants.{id}: no such tenant (define it under [tenants.{id}])"
            )));
        }
        let toml::Value::Table(overrides) = value else {
            return Err(invalid(format!("terminal.tenants.{id} must be a table")));
        };
        let mut merged = table.clone();
        merge(&mut merged, overrides);
        out.insert(
            id.clone(),
            parse(merged, &format!("terminal.tenants.{id}"))?,
        );
    }
    Ok(TerminalSettings {
        default,
        tenants: out,
        grant_bundled: false,
        protected: Vec::new(),
        programs: Vec::new(),
        base_dir: Some(base_dir.to_path_buf()),
    })
}

/// `approver = "console"` with no admin token: nobody could ever answer (the console
/// is off without one), so every dangerous command would be denied — surely not what
/// was meant. Said at load, with the fix.
pub(crate) fn console_approver_needs_admin(
    terminal: &TerminalSettings,
    server: &ServerPolicy,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<(), PolicyFileError> {
    if !server.admin_tokens.is_empty() {
        return Ok(());
    }
    let console_only = std::iter::once(("terminal", &terminal.default))
        .chain(terminal.tenants.iter().map(|(id, c)| (id.as_str(), c)))
        .find(|(_, c)| c.approval.approver == ApproverChoice::Console);
    match console_only {
        None => Ok(()),
        Some((at, _)) => {
            let at = if at == "terminal" {
                "terminal.approval".to_owned()
            } else {
                format!("terminal.tenants.{at}.approval")
            };
            Err(invalid(format!(
                "{at}.approver = \"console\" needs the console: set [server] admin_token_sha256 (`hermetic token new` makes one), or let the client answer (\"client\" or \"client_or_console\")"
            )))
        }
    }
}

/// `over`'s keys into `base`, sub-tables key by key.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::load::parse_in;

    #[test]
    fn who_answers_approvals_is_a_tenant_key_with_three_values() {
        use hermetic_policy::approval::ApproverChoice;
        let admin = format!("[server]\nadmin_token_sha256 = [\"{}\"]\n", "ab".repeat(32));
        let text = format!(
            "[tenants.a]\n[tenants.b]\n[terminal.approval]\napprover = \"client\"\n\
             [terminal.tenants.b.approval]\napprover = \"console\"\n{admin}"
        );
        let dir = tempfile::TempDir::new().unwrap();
        let loaded = parse_in(dir.path(), &text).unwrap();
        let terminal = &loaded.policy.terminal;
        assert_eq!(
            terminal.for_tenant("a").approval.approver,
            ApproverChoice::Client
        );
        assert_eq!(
            terminal.for_tenant("b").approval.approver,
            ApproverChoice::Console
        );
        let err = |text: &str| parse_in(dir.path(), text).unwrap_err().to_string();
        assert!(
            err("[terminal.approval]\napprover = \"anyone\"").contains("client_or_console"),
            "{}",
            err("[terminal.approval]\napprover = \"anyone\"")
        );
        assert!(err("[terminal.approval]\napprovers = \"client\"").contains("approvers"));
        // Console-only without a console: said at load, with the fix.
        let without_admin = "[tenants.b]\n[terminal.tenants.b.approval]\napprover = \"console\"";
        let message = err(without_admin);
        assert!(
            message.contains("terminal.tenants.b.approval.approver")
                && message.contains("admin_token_sha256"),
            "{message}"
        );
    }
}
