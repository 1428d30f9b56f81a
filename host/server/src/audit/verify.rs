//! Checking a chain ([`verify`]) and mending the one break that is not tampering: a last
//! line cut short by a crash or a full disk ([`repair`]).
//!
//! A file whose last line has no newline is *torn*, for the server (which refuses to
//! continue it) and for `audit verify` alike. Repair never hides tampering: it only
//! touches a torn tail after every line before it has verified, completes it when it
//! is a whole record that lost only its newline, and otherwise cuts it — keeping the
//! cut bytes beside the log (`FILE.torn`), never discarding them.

use super::{GENESIS, MAX_LINE, TORN_TAIL, check_line};
use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A chain that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Lines in the file (for a set of files, in all of them).
    pub lines: u64,
    /// The last line's hash ([`GENESIS`] for an empty file).
    pub head: String,
    /// The last line's `seq` (equal to `lines` for a chain that starts in this file).
    pub seq: u64,
}

/// Why a chain did not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The file cannot be read.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// A line is broken: edited, out of place, or something before it was deleted.
    #[error("line {line}: {reason}")]
    Line {
        /// 1-based line number of the first bad line.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// Every line verified but the last, which has no newline (see the module docs).
    #[error("line {line}: {} ({bytes} bytes without a newline)", TORN_TAIL)]
    TornTail {
        /// 1-based number of the torn line.
        line: u64,
        /// Its length in bytes.
        bytes: u64,
        /// Where it starts in the file.
        offset: u64,
        /// Its hash when it is a whole record continuing the chain (only the newline
        /// is missing), so that repair can complete it instead of cutting it.
        whole: Option<String>,
        /// The chain up to it.
        intact: Verified,
    },
}

impl VerifyError {
    /// The first bad line, when the chain (not the file) is at fault.
    pub fn line(&self) -> Option<u64> {
        match self {
            Self::Line { line, .. } | Self::TornTail { line, .. } => Some(*line),
            Self::Io { .. } => None,
        }
    }
}

/// Verifies an audit log: each line's own hash, each `prev` against the line before,
/// and `seq` counting 1, 2, 3, … — across the files of a rotated log (`FILE.1`,
/// `FILE.2`, …, then `FILE`: see [`segments`]), each continuing the one before.
///
/// # Errors
/// [`VerifyError::Line`] with the first bad line, [`VerifyError::TornTail`] when only
/// the last line is cut short.
pub fn verify(path: &Path) -> Result<Verified, VerifyError> {
    // A rotated log: its earlier files (`FILE.1`, …) first, each continuing the last.
    verify_set(&segments(path)).map_err(|(_, e)| e)
}

/// [`verify`] over any reader.
///
/// # Errors
/// As for [`verify`].
pub fn verify_lines(reader: impl BufRead) -> Result<Verified, VerifyError> {
    verify_after(reader, 0, GENESIS)
}

/// [`verify_lines`] of a file that continues a chain (a rotated log's later part): its
/// first line must have `seq` = `after_seq` + 1 and `prev` = `after_prev`.
///
/// # Errors
/// As for [`verify`].
pub fn verify_after(
    mut reader: impl BufRead,
    after_seq: u64,
    after_prev: &str,
) -> Result<Verified, VerifyError> {
    let mut prev = after_prev.to_owned();
    let mut number = 0u64;
    let mut offset = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bounded: a file that is one endless line must not be read into memory whole.
        let read = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line);
        let bad = |reason: String| VerifyError::Line {
            line: number + 1,
            reason,
        };
        if read.map_err(|e| bad(e.to_string()))? == 0 {
            break;
        }
        number += 1;
        let bad = |reason: String| VerifyError::Line {
            line: number,
            reason,
        };
        let Some(body) = line.strip_suffix(b"\n") else {
            if line.len() as u64 > MAX_LINE {
                return Err(bad("longer than any audit line (1 MiB)".to_owned()));
            }
            let whole = std::str::from_utf8(&line)
                .ok()
                .and_then(|text| check_line(text).ok())
                .filter(|link| link.seq == after_seq + number && link.prev == prev)
                .map(|link| link.hash);
            return Err(VerifyError::TornTail {
                line: number,
                bytes: line.len() as u64,
                offset,
                whole,
                intact: Verified {
                    lines: number - 1,
                    head: prev,
                    seq: after_seq + number - 1,
                },
            });
        };
        offset += line.len() as u64;
        let text = std::str::from_utf8(body).map_err(|_| bad("not UTF-8".to_owned()))?;
        let link = check_line(text).map_err(bad)?;
        let expected = after_seq + number;
        if link.seq != expected {
            return Err(bad(format!(
                "seq is {} where {expected} was expected (lines were deleted or reordered)",
                link.seq
            )));
        }
        if link.prev != prev {
            return Err(bad(
                "prev does not match the previous line's hash (lines were deleted, inserted or reordered)"
                    .to_owned(),
            ));
        }
        prev = link.hash;
    }
    Ok(Verified {
        lines: number,
        head: prev,
        seq: after_seq + number,
    })
}

/// The files of a rotated log, oldest first: `FILE.1`, `FILE.2`, … (what rotation
/// renamed away), then `FILE` itself.
pub fn segments(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return vec![path.to_path_buf()];
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let mut rotated: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let n = e
                        .file_name()
                        .to_string_lossy()
                        .strip_prefix(&prefix)?
                        .parse()
                        .ok()?;
                    Some((n, path.with_file_name(e.file_name())))
                })
                .collect()
        })
        .unwrap_or_default();
    rotated.sort();
    let mut all: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    all.push(path.to_path_buf());
    all
}

/// Verifies the files of one chain in order (see [`segments`]): each file continues the
/// one before it. The result counts the lines of all of them.
///
/// # Errors
/// The first file that does not verify, and why.
pub fn verify_set(files: &[PathBuf]) -> Result<Verified, (PathBuf, VerifyError)> {
    let mut total = Verified {
        lines: 0,
        head: GENESIS.to_owned(),
        seq: 0,
    };
    for file in files {
        let open = File::open(file).map_err(|e| {
            (
                file.clone(),
                VerifyError::Io {
                    path: file.clone(),
                    reason: e.to_string(),
                },
            )
        })?;
        let part = verify_after(std::io::BufReader::new(open), total.seq, &total.head)
            .map_err(|e| (file.clone(), e))?;
        total = Verified {
            lines: total.lines + part.lines,
            head: part.head,
            seq: part.seq,
        };
    }
    Ok(total)
}

/// What [`repair`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// The chain was intact; the file was not touched.
    Nothing,
    /// The last line was a whole record without its newline; the newline was added.
    Completed,
    /// The last line was cut short; it was removed from the log and appended (with a
    /// newline) to `saved_to`.
    Cut {
        /// Bytes removed.
        bytes: u64,
        /// Where they were kept.
        saved_to: PathBuf,
    },
}

/// The outcome of a repair: what was done and the chain as it now verifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// What was done.
    pub repair: Repair,
    /// The chain after the repair.
    pub verified: Verified,
}

/// Why a log could not be repaired.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// A line before the tail is broken: that is tampering (or damage) that repair
    /// must not paper over.
    #[error("{0}; repair only mends a torn last line")]
    Broken(VerifyError),
    /// Reading or writing the log (or the `.torn` file) failed.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// The file changed between the check and the repair (a server still writing?).
    #[error("{0} changed while it was being repaired; stop the server that writes to it and retry")]
    Changed(PathBuf),
}

/// Mends a torn last line (see the module docs). Stop any server writing to `path`
/// first: the repair assumes it is the only writer.
///
/// # Errors
/// [`RepairError::Broken`] when the chain is broken before its last line,
/// [`RepairError::Changed`] when the file grew meanwhile, [`RepairError::Io`].
pub fn repair(path: &Path) -> Result<Repaired, RepairError> {
    let io = |at: &Path| {
        let at = at.to_path_buf();
        move |e: std::io::Error| RepairError::Io {
            path: at,
            reason: e.to_string(),
        }
    };
    let (line, bytes, offset, whole, intact) = match verify(path) {
        Ok(verified) => {
            return Ok(Repaired {
                repair: Repair::Nothing,
                verified,
            });
        }
        Err(VerifyError::TornTail {
            line,
            bytes,
            offset,
            whole,
            intact,
        }) => (line, bytes, offset, whole, intact),
        Err(VerifyError::Io { path, reason }) => return Err(RepairError::Io { path, reason }),
        Err(broken) => return Err(RepairError::Broken(broken)),
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io(path))?;
    if file.metadata().map_err(io(path))?.len() != offset + bytes {
        return Err(RepairError::Changed(path.to_path_buf()));
    }
    if let Some(head) = whole {
        file.seek(SeekFrom::End(0)).map_err(io(path))?;
        file.write_all(b"\n").map_err(io(path))?;
        file.sync_all().map_err(io(path))?;
        return Ok(Repaired {
            repair: Repair::Completed,
            verified: Verified {
                lines: line,
                head,
                seq: intact.seq + 1,
            },
        });
    }
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(offset)).map_err(io(path))?;
    (&mut file)
        .take(bytes)
        .read_to_end(&mut tail)
        .map_err(io(path))?;
    let mut saved_to = path.as_os_str().to_owned();
    saved_to.push(".torn");
    let saved_to = PathBuf::from(saved_to);
    // Kept first and synced, so a crash during the repair loses nothing.
    let mut torn = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&saved_to)
        .map_err(io(&saved_to))?;
    tail.push(b'\n');
    torn.write_all(&tail).map_err(io(&saved_to))?;
    torn.sync_all().map_err(io(&saved_to))?;
    file.set_len(offset).map_err(io(path))?;
    file.sync_all().map_err(io(path))?;
    Ok(Repaired {
        repair: Repair::Cut { bytes, saved_to },
        verified: intact,
    })
}
