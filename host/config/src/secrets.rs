//! `[secrets]`: the file of secret values (`NAME = "value"` lines, relative to the
//! policy file's directory) that env grants and secret bindings name. Read last, once
//! the file is known to lie where no tool reaches; its errors never quote a line.

use crate::error::PolicyFileError;
use hermetic::Secrets;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `[secrets]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SecretsToml {
    pub(crate) file: PathBuf,
}

/// The secrets `file` holds (none without one).
pub(crate) fn read_secrets(file: Option<&Path>) -> Result<Secrets, PolicyFileError> {
    let Some(path) = file else {
        return Ok(Secrets::default());
    };
    let text = std::fs::read_to_string(path).map_err(|source| PolicyFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Secrets::from_toml(&text).map_err(|reason| PolicyFileError::Parse {
        path: path.to_path_buf(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use crate::load::parse_in;

    #[test]
    fn a_broken_secrets_file_is_located_by_line_without_quoting_it() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::write(
            dir.path().join("secrets.toml"),
            "A = \"fine\"\nB = hunter2-not-quoted\n",
        )
        .unwrap();
        let err = parse_in(dir.path(), "[secrets]\nfile = \"secrets.toml\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2, column 5"), "{err}");
        assert!(!err.contains("hunter2"), "the secret was quoted: {err}");
    }
}
