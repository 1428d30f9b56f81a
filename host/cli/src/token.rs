//! `hermetic token new|hash`: bearer tokens and the policy lines that grant them.

use crate::args::TokenCommand;
use anyhow::{Context, Result};
use std::io::Read;
use std::process::ExitCode;

/// `hermetic token new|hash`.
pub(crate) fn token(command: TokenCommand) -> Result<ExitCode> {
    use hermetic_server::auth;
    match command {
        TokenCommand::New { tenant, admin } => {
            let token = auth::new_token()
                .map_err(|e| anyhow::anyhow!("reading the OS random source: {e}"))?;
            let digest = auth::hex(&auth::digest(&token));
            if admin {
                out!("token: {token}");
                out!(
                    "# sign in to the operator console (/console) with the token; put this in the policy:"
                );
                out!("[server]");
                out!("admin_token_sha256 = [\"{digest}\"]");
                return Ok(ExitCode::SUCCESS);
            }
            let placeholder = tenant.is_none();
            let tenant = toml_key(tenant.as_deref().unwrap_or("TENANT"));
            out!("token: {token}");
            out!(
                "# give the token to the client (Authorization: Bearer <token>); put this in the policy:"
            );
            if placeholder {
                out!("# (TENANT: the tenant's id; or run `hermetic token new --tenant ID`)");
            }
            out!("[tenants.{tenant}]");
            out!("token_sha256 = [\"{digest}\"]");
        }
        TokenCommand::Hash => {
            let mut token = String::new();
            std::io::stdin()
                .read_to_string(&mut token)
                .context("reading the token from stdin")?;
            let token = token.trim();
            if token.is_empty() {
                // A usage error (exit 2, like clap's), not a failure of the host.
                eprintln!(
                    "error: no token on stdin (e.g. `echo -n \"$TOKEN\" | hermetic token hash`)"
                );
                return Ok(ExitCode::from(2));
            }
            out!("{}", auth::hex(&auth::digest(token)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `key` as a TOML key: bare when it may be, else a quoted (JSON-escaped) string.
pub(crate) fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_owned()
    } else {
        serde_json::Value::from(key).to_string()
    }
}
