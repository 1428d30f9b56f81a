//! `hermetic audit verify|repair`: an audit log's hash chain checked, a torn tail mended.

use anyhow::Result;
use std::process::ExitCode;

/// `hermetic audit verify`: exit 0 when the chain holds, 1 naming the first bad line.
pub(crate) fn audit_verify(
    file: &std::path::Path,
    head: Option<&str>,
    min_lines: Option<u64>,
) -> Result<ExitCode> {
    use hermetic_server::audit::{VerifyError, verify};
    match verify(file) {
        Ok(verified) => {
            if let Some(expected) = head
                && !expected.eq_ignore_ascii_case(&verified.head)
            {
                out!(
                    "{}: chain intact but ends at {} (line {}), not at the expected head {expected}: lines were cut off the end",
                    file.display(),
                    verified.head,
                    verified.lines
                );
                return Ok(ExitCode::from(1));
            }
            if let Some(min) = min_lines
                && verified.lines < min
            {
                out!(
                    "{}: chain intact but has {} lines, fewer than {min}: lines were cut off the end",
                    file.display(),
                    verified.lines
                );
                return Ok(ExitCode::from(1));
            }
            out!(
                "{}: ok, {} lines, head {}",
                file.display(),
                verified.lines,
                verified.head
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ VerifyError::TornTail { .. }) => {
            out!(
                "{}: torn: {e}; run `hermetic audit repair {}`",
                file.display(),
                file.display()
            );
            Ok(ExitCode::from(1))
        }
        Err(e @ VerifyError::Line { .. }) => {
            out!("{}: tampered: {e}", file.display());
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.into()),
    }
}

/// `hermetic audit repair`: exit 0 when the log verifies afterwards, 1 when it is
/// broken before its last line.
pub(crate) fn audit_repair(file: &std::path::Path) -> Result<ExitCode> {
    use hermetic_server::audit::{Repair, RepairError, repair};
    let done = match repair(file) {
        Ok(done) => done,
        Err(e @ RepairError::Broken(_)) => {
            out!("{}: not repaired: {e}", file.display());
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    let what = match &done.repair {
        Repair::Nothing => "nothing to repair".to_owned(),
        Repair::Completed => "completed the last line (only its newline was missing)".to_owned(),
        Repair::Cut { bytes, saved_to } => format!(
            "cut a torn last line ({bytes} bytes, kept in {})",
            saved_to.display()
        ),
    };
    out!(
        "{}: {what}; ok, {} lines, head {}",
        file.display(),
        done.verified.lines,
        done.verified.head
    );
    Ok(ExitCode::SUCCESS)
}
