//! A grant's `limits` table (`[defaults.limits]`, `[tools.NAME.limits]`, a hook's):
//! deadlines, memory, core instances, result size, fuel, concurrency and outbound HTTP
//! bounds. (A tenant's narrower `[tenants.ID.limits]` is read with the tenant.)

use crate::error::PolicyFileError;
use hermetic_policy::{HttpLimitOverride, LimitOverride};
use serde::Deserialize;

/// A `limits` table as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsToml {
    timeout_ms: Option<u64>,
    max_timeout_ms: Option<u64>,
    memory_mb: Option<u64>,
    max_memory_mb: Option<u64>,
    core_instances: Option<u32>,
    max_core_instances: Option<u32>,
    result_chars: Option<usize>,
    max_result_chars: Option<usize>,
    fuel: Option<u64>,
    max_concurrent: Option<usize>,
    queue_timeout_ms: Option<u64>,
    output_bytes: Option<usize>,
    #[serde(default)]
    http: HttpLimitsToml,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct HttpLimitsToml {
    connect_timeout_ms: Option<u64>,
    first_byte_timeout_ms: Option<u64>,
    between_bytes_timeout_ms: Option<u64>,
    max_response_bytes: Option<u64>,
}

/// The limits `l` sets; a count that would refuse every call (`0`) is refused.
pub(crate) fn limit_override(
    l: LimitsToml,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<LimitOverride, PolicyFileError> {
    if l.core_instances == Some(0) || l.max_core_instances == Some(0) {
        return Err(invalid(
            "limits.core_instances and max_core_instances must be at least 1 (a Rust tool needs 3)"
                .into(),
        ));
    }
    if l.max_concurrent == Some(0) {
        return Err(invalid("limits.max_concurrent must be at least 1".into()));
    }
    Ok(LimitOverride {
        default_timeout_ms: l.timeout_ms,
        max_timeout_ms: l.max_timeout_ms,
        default_memory_mb: l.memory_mb,
        max_memory_mb: l.max_memory_mb,
        default_core_instances: l.core_instances,
        max_core_instances: l.max_core_instances,
        default_result_chars: l.result_chars,
        max_result_chars: l.max_result_chars,
        fuel: l.fuel,
        max_concurrent: l.max_concurrent,
        queue_timeout_ms: l.queue_timeout_ms,
        output_bytes: l.output_bytes,
        http: HttpLimitOverride {
            connect_timeout_ms: l.http.connect_timeout_ms,
            first_byte_timeout_ms: l.http.first_byte_timeout_ms,
            between_bytes_timeout_ms: l.http.between_bytes_timeout_ms,
            max_response_bytes: l.http.max_response_bytes,
        },
    })
}
