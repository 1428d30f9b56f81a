//! Seccomp programs for commands that run on this host's kernel (`bwrap`): refusals
//! written as OCI seccomp rules, the form docker's profile and gVisor's filter take
//! them in, compiled to the classic BPF program bubblewrap loads (`--seccomp FD`).
//!
//! The compiler is `seccompiler` (Firecracker's; pure Rust, so no libseccomp to
//! install or link). A program allows every system call but the refused ones, which
//! fail with EPERM ("Operation not permitted") when their conditions hold. Its first
//! check is the architecture: a system call of another ABI (i386's `int 0x80`) kills
//! the process, since its numbers are not the ones the rules name. x86-64's x32 ABI
//! shares the architecture and numbers its calls with bit 30 set: every rule is
//! compiled for that number too.

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Why a seccomp program could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SeccompError {
    /// A rule uses what this compiler does not translate.
    #[error("seccomp rule {rule}: {reason}")]
    Rule {
        /// The rule, as JSON.
        rule: String,
        /// What is not supported.
        reason: String,
    },
    /// A rule names a system call this compiler has no number for.
    #[error("seccomp rule for {0}: no system call of that name is known here")]
    UnknownSyscall(String),
    /// seccompiler builds no program for this machine.
    #[error(
        "seccomp programs are not built for the {0} architecture (x86_64, aarch64 and riscv64 are)"
    )]
    Architecture(&'static str),
    /// seccompiler refused the rules.
    #[error("compiling the seccomp program: {0}")]
    Compile(#[from] seccompiler::BackendError),
}

/// One refused system call: it fails with EPERM when every condition holds (always,
/// with none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// Its name, as in the kernel's tables (`fchmodat`).
    pub syscall: String,
    /// All must hold.
    pub when: Vec<Masked>,
}

/// `(argument & mask) == value` on an argument's low 32 bits: the refusals look at
/// modes and flags, C `int`s and `mode_t`s whose register's high half the kernel
/// ignores (and a caller may fill with anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Masked {
    /// Which argument (0–5).
    pub index: u8,
    pub mask: u32,
    pub value: u32,
}

/// What the refusals answer.
const EPERM: u32 = 1;

impl Refusal {
    /// A refusal of `syscall` when each `(index, mask, value)` holds.
    pub(crate) fn new(syscall: &str, when: &[(u8, u32, u32)]) -> Self {
        Self {
            syscall: syscall.to_owned(),
            when: when
                .iter()
                .map(|&(index, mask, value)| Masked { index, mask, value })
                .collect(),
        }
    }

    /// The refusals OCI seccomp `rules` state: each must be an `SCMP_ACT_ERRNO` rule
    /// answering EPERM, whose conditions are `SCMP_CMP_MASKED_EQ` on 32-bit values, at
    /// most one per argument (several on one argument are alternatives to gVisor and
    /// old runc but all required by libseccomp: such a rule is refused as ambiguous).
    ///
    /// # Errors
    /// [`SeccompError::Rule`] for a rule outside that subset.
    pub(crate) fn from_oci(rules: &[Value]) -> Result<Vec<Self>, SeccompError> {
        let mut refusals = Vec::new();
        for rule in rules {
            let bad = |reason: &str| SeccompError::Rule {
                rule: rule.to_string(),
                reason: reason.to_owned(),
            };
            if rule["action"] != "SCMP_ACT_ERRNO" || rule["errnoRet"] != EPERM {
                return Err(bad(
                    "only SCMP_ACT_ERRNO rules answering EPERM (1) are compiled",
                ));
            }
            let mut when = Vec::new();
            for arg in rule["args"].as_array().map_or(&[][..], Vec::as_slice) {
                let field = |name: &str| {
                    arg[name]
                        .as_u64()
                        .ok_or_else(|| bad(&format!("an argument without a numeric {name}")))
                };
                if arg["op"] != "SCMP_CMP_MASKED_EQ" {
                    return Err(bad("only SCMP_CMP_MASKED_EQ conditions are compiled"));
                }
                let index = u8::try_from(field("index")?)
                    .map_err(|_| bad("an argument index out of range"))?;
                let word = |v: u64| u32::try_from(v).map_err(|_| bad("a mask over 32 bits"));
                if when.iter().any(|m: &Masked| m.index == index) {
                    return Err(bad("two conditions on one argument"));
                }
                when.push(Masked {
                    index,
                    mask: word(field("value")?)?,
                    value: word(field("valueTwo")?)?,
                });
            }
            let names = rule["names"]
                .as_array()
                .filter(|n| !n.is_empty())
                .ok_or_else(|| bad("no names"))?;
            for name in names {
                let name = name
                    .as_str()
                    .ok_or_else(|| bad("a name that is no string"))?;
                refusals.push(Self {
                    syscall: name.to_owned(),
                    when: when.clone(),
                });
            }
        }
        Ok(refusals)
    }
}

/// The BPF program (the bytes of its `struct sock_filter` array, in this machine's
/// byte order) that refuses `refusals` with EPERM and allows everything else.
/// Refusals of calls this architecture lacks (aarch64 has no `open` or `chmod`) are
/// left out.
///
/// # Errors
/// [`SeccompError`] for an unknown system call, an architecture seccompiler does not
/// target, or rules it refuses.
pub(crate) fn compile(refusals: &[Refusal]) -> Result<Vec<u8>, SeccompError> {
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| SeccompError::Architecture(std::env::consts::ARCH))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut always = BTreeSet::new();
    for refusal in refusals {
        let Some(number) = number(&refusal.syscall)? else {
            continue;
        };
        let conditions = refusal
            .when
            .iter()
            .map(|m| {
                SeccompCondition::new(
                    m.index,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(u64::from(m.mask)),
                    u64::from(m.value),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        for number in abi_numbers(number) {
            if conditions.is_empty() {
                always.insert(number);
            } else {
                rules
                    .entry(number)
                    .or_default()
                    .push(SeccompRule::new(conditions.clone())?);
            }
        }
    }
    // An empty chain matches every call of that number (and a call refused always
    // needs no conditions).
    for number in always {
        rules.insert(number, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(EPERM),
        arch,
    )?;
    let program: seccompiler::BpfProgram = filter.try_into()?;
    Ok(program
        .iter()
        .flat_map(|i| {
            let mut bytes = [0u8; 8];
            bytes[..2].copy_from_slice(&i.code.to_ne_bytes());
            bytes[2] = i.jt;
            bytes[3] = i.jf;
            bytes[4..].copy_from_slice(&i.k.to_ne_bytes());
            bytes
        })
        .collect())
}

/// `fchmodat2` (Linux 6.6): the same number on every architecture (new calls share
/// one table), which libc does not name for all of them yet.
const FCHMODAT2: i64 = 452;

/// The number of system call `name` on this architecture; `None` when it has no
/// such call (aarch64 and riscv64 have only the `*at` forms of open, creat, chmod
/// and mknod).
fn number(name: &str) -> Result<Option<i64>, SeccompError> {
    Ok(Some(match name {
        "fchmod" => libc::SYS_fchmod,
        "fchmodat" => libc::SYS_fchmodat,
        "fchmodat2" => FCHMODAT2,
        "mknodat" => libc::SYS_mknodat,
        "openat" => libc::SYS_openat,
        "openat2" => libc::SYS_openat2,
        "io_uring_setup" => libc::SYS_io_uring_setup,
        "io_uring_enter" => libc::SYS_io_uring_enter,
        "io_uring_register" => libc::SYS_io_uring_register,
        "chmod" | "creat" | "mknod" | "open" => return Ok(legacy(name)),
        other => return Err(SeccompError::UnknownSyscall(other.to_owned())),
    }))
}

#[cfg(target_arch = "x86_64")]
fn legacy(name: &str) -> Option<i64> {
    match name {
        "chmod" => Some(libc::SYS_chmod),
        "creat" => Some(libc::SYS_creat),
        "mknod" => Some(libc::SYS_mknod),
        "open" => Some(libc::SYS_open),
        _ => None,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn legacy(_name: &str) -> Option<i64> {
    None
}

/// The numbers a call has on this architecture's ABIs: on x86-64 the x32 ABI's too
/// (bit 30 set; the calls refused here have the same number in both tables), which
/// passes the architecture check (kernels built without x32 answer ENOSYS anyway).
fn abi_numbers(number: i64) -> impl Iterator<Item = i64> {
    #[cfg(target_arch = "x86_64")]
    let x32 = Some(number | 0x4000_0000);
    #[cfg(not(target_arch = "x86_64"))]
    let x32 = None;
    std::iter::once(number).chain(x32)
}

/// `bytes` as a `printf` format that prints them back: every byte an octal escape
/// (bash's builtin prints NUL bytes from `\0`; no `%` can appear).
pub(crate) fn printf_format(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:03o}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn oci_rules_become_refusals_and_what_is_not_understood_is_an_error() {
        let rules = [
            json!({"names": ["chmod", "fchmod"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
            "args": [{"index": 1, "value": 0o4000, "valueTwo": 0o4000, "op": "SCMP_CMP_MASKED_EQ"}]}),
        ];
        let refusals = Refusal::from_oci(&rules).unwrap();
        assert_eq!(
            refusals,
            vec![
                Refusal::new("chmod", &[(1, 0o4000, 0o4000)]),
                Refusal::new("fchmod", &[(1, 0o4000, 0o4000)]),
            ]
        );
        for (why, rule) in [
            (
                "an allow",
                json!({"names": ["chmod"], "action": "SCMP_ACT_ALLOW"}),
            ),
            (
                "another errno",
                json!({"names": ["chmod"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}),
            ),
            (
                "another comparison",
                json!({"names": ["chmod"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                "args": [{"index": 1, "value": 5, "op": "SCMP_CMP_EQ"}]}),
            ),
            (
                "two conditions on one argument",
                json!({"names": ["chmod"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "args": [
                {"index": 1, "value": 1, "valueTwo": 1, "op": "SCMP_CMP_MASKED_EQ"},
                {"index": 1, "value": 2, "valueTwo": 2, "op": "SCMP_CMP_MASKED_EQ"}]}),
            ),
            (
                "a 64-bit mask",
                json!({"names": ["chmod"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                "args": [{"index": 1, "value": 1u64 << 40, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]}),
            ),
            (
                "no names",
                json!({"names": [], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}),
            ),
        ] {
            assert!(Refusal::from_oci(&[rule]).is_err(), "{why}");
        }
    }

    #[test]
    fn an_unknown_system_call_is_an_error_not_a_hole() {
        let err = compile(&[Refusal::new("chmood", &[])]).unwrap_err();
        assert!(matches!(err, SeccompError::UnknownSyscall(ref n) if n == "chmood"));
    }

    #[test]
    fn a_program_is_whole_instructions_that_check_the_architecture_first() {
        let program = compile(&[
            Refusal::new("fchmodat", &[(2, 0o4000, 0o4000)]),
            Refusal::new("openat2", &[]),
        ])
        .unwrap();
        assert_eq!(program.len() % 8, 0);
        // BPF_LD|BPF_W|BPF_ABS of seccomp_data.arch (offset 4).
        assert_eq!(&program[..2], &0x20u16.to_ne_bytes());
        assert_eq!(&program[4..8], &4u32.to_ne_bytes());
        // Every byte survives the printf format.
        let format = printf_format(&program);
        assert_eq!(format.len(), program.len() * 4);
        assert!(!format.contains('%'));
    }
}
