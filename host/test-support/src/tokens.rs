//! Bearer tokens as a policy file names them.

/// The SHA-256 of `token` in hex: what `token_sha256` and `admin_token_sha256` hold.
pub fn sha256_hex(token: &str) -> String {
    hermetic_server::auth::hex(&hermetic_server::auth::digest(token))
}
