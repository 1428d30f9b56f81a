//! Traces of tool calls, per the OpenTelemetry conventions for MCP: a call's parent is
//! the W3C trace context its client sends in the request's `_meta.traceparent`, its
//! span is named `tools/call TOOL` (kind server) with the conventions' attributes, and
//! its trace id is written in the call's audit record, so an operator can go from a
//! trace to the audit line and back.
//!
//! Export is behind the `otlp` cargo feature: a build with it sends each call's span
//! over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) is set
//! ([`Spans::new`]). Without export, a call still carries its client's trace id
//! into the audit record; nothing else is done per call.

#[cfg(feature = "otlp")]
mod otlp;

use std::time::SystemTime;

/// A W3C Trace Context `traceparent` (level 1): whose trace a call belongs to, and the
/// client span it is a child of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace (16 bytes, never all zero).
    pub trace_id: [u8; 16],
    /// The caller's span (8 bytes, never all zero).
    pub parent_id: [u8; 8],
    /// Trace flags (bit 0: sampled).
    pub flags: u8,
}

/// Longest `traceparent` read: version 00 is 55 characters; later versions may append
/// fields, and nothing sensible is longer than this.
const MAX_TRACEPARENT: usize = 256;

impl TraceParent {
    /// Parses `version-traceid-parentid-flags`, lower-case hex, as the W3C
    /// recommendation says a receiver must: version `ff` and all-zero ids are invalid;
    /// version 00 is exactly 55 characters; a later version may carry more after a
    /// `-`. `None` for anything else (the call then starts its own trace).
    pub fn parse(text: &str) -> Option<Self> {
        if text.len() < 55 || text.len() > MAX_TRACEPARENT {
            return None;
        }
        let bytes = text.as_bytes();
        let version = hex_bytes::<1>(&bytes[0..2])?[0];
        if version == 0xff || (version == 0 && text.len() != 55) {
            return None;
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        if text.len() > 55 && bytes[55] != b'-' {
            return None;
        }
        let trace_id = hex_bytes::<16>(&bytes[3..35])?;
        let parent_id = hex_bytes::<8>(&bytes[36..52])?;
        let flags = hex_bytes::<1>(&bytes[53..55])?[0];
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// The `traceparent` of a request's `_meta`, if it has a valid one.
    pub fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        meta.get("traceparent")
            .and_then(serde_json::Value::as_str)
            .and_then(Self::parse)
    }
}

/// `N` bytes from `2N` lower-case hex digits (W3C: upper case is invalid).
fn hex_bytes<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    if digits.len() != 2 * N {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// One finished tools/call, as its span records it.
#[cfg_attr(
    not(feature = "otlp"),
    allow(dead_code, reason = "the OTLP exporter reads it")
)]
pub(crate) struct CallSpan<'a> {
    /// The tool's name; `None` for a name no tool has (it stays out of span names:
    /// the caller chose it).
    pub(crate) tool: Option<&'a str>,
    /// The client's trace context, if it sent one.
    pub(crate) parent: Option<TraceParent>,
    pub(crate) tenant: &'a str,
    /// The MCP session ("" for none).
    pub(crate) session: &'a str,
    /// The JSON-RPC request id.
    pub(crate) request_id: &'a rmcp::model::RequestId,
    pub(crate) started: SystemTime,
    /// `None` for a call that succeeded; else the error type (`tool_error`, the
    /// outcome's name).
    pub(crate) error: Option<&'a str>,
}

/// Where the server's call spans go.
pub(crate) struct Spans {
    #[cfg(feature = "otlp")]
    exporter: Option<otlp::Exporter>,
}

impl std::fmt::Debug for Spans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spans")
            .field("exporting", &self.exporting())
            .finish()
    }
}

/// The environment variables that name where spans go (the OpenTelemetry SDK's own).
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

impl Spans {
    /// Spans exported to `endpoint` (an OTLP/HTTP traces URL), else where the
    /// environment says (`OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), in a build with the `otlp` feature;
    /// otherwise none. A build without the feature says so when asked to export, and
    /// an endpoint the exporter refuses is logged, not fatal.
    pub(crate) fn new(endpoint: Option<&str>) -> Self {
        let wanted = endpoint.is_some()
            || ENDPOINT_VARS
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|e| !e.is_empty()));
        #[cfg(feature = "otlp")]
        {
            let exporter = wanted
                .then(|| {
                    otlp::Exporter::new(endpoint).map_err(|e| {
                        tracing::error!("tool-call spans are not exported: {e}");
                    })
                })
                .and_then(Result::ok);
            Self { exporter }
        }
        #[cfg(not(feature = "otlp"))]
        {
            if wanted {
                tracing::warn!(
                    "OTEL_EXPORTER_OTLP_ENDPOINT is set, but this build does not export spans (build with --features otlp)"
                );
            }
            Self {}
        }
    }

    /// No export.
    #[cfg(test)]
    pub(crate) fn none() -> Self {
        Self {
            #[cfg(feature = "otlp")]
            exporter: None,
        }
    }

    /// Whether spans leave the process.
    pub(crate) fn exporting(&self) -> bool {
        #[cfg(feature = "otlp")]
        {
            self.exporter.is_some()
        }
        #[cfg(not(feature = "otlp"))]
        {
            false
        }
    }

    /// Records a finished call's span; the call's trace id (hex) for its audit
    /// record: its client's, or (when spans are exported) the new trace's.
    pub(crate) fn record(&self, span: &CallSpan<'_>) -> Option<String> {
        #[cfg(feature = "otlp")]
        if let Some(exporter) = &self.exporter {
            return Some(crate::formats::hex(&exporter.record(span)));
        }
        span.parent.map(|p| crate::formats::hex(&p.trace_id))
    }

    /// Sends what is buffered and stops exporting (at shutdown).
    pub(crate) fn shutdown(&self) {
        #[cfg(feature = "otlp")]
        if let Some(exporter) = &self.exporter {
            exporter.shutdown();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_w3c_example_parses() {
        let p = TraceParent::parse(VALID).unwrap();
        assert_eq!(
            crate::formats::hex(&p.trace_id),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(crate::formats::hex(&p.parent_id), "00f067aa0ba902b7");
        assert_eq!(p.flags, 1);
        // A later version may append fields after a dash.
        let future = format!("cc{}-extra", &VALID[2..]);
        assert!(TraceParent::parse(&future).is_some());
    }

    #[test]
    fn every_malformed_traceparent_is_refused() {
        let upper = VALID.to_ascii_uppercase();
        let refused = [
            "",
            "00",
            &upper,
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
        ];
        for text in refused {
            assert_eq!(TraceParent::parse(text), None, "{text:?}");
        }
        assert_eq!(TraceParent::parse(&"0".repeat(100_000)), None);
    }

    /// Any string: a parse never panics (multi-byte characters at the fixed offsets
    /// included), and what parses prints back as it was read.
    #[test]
    fn arbitrary_text_never_panics() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet: Vec<char> = "0123456789abcdefABCDEF-_é€ \u{0}".chars().collect();
        for _ in 0..50_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = 50 + usize::try_from(seed % 12).unwrap();
            let mut text = String::new();
            let mut s = seed;
            for _ in 0..len {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let i = usize::try_from((s >> 33) % alphabet.len() as u64).unwrap();
                text.push(alphabet[i]);
            }
            if let Some(p) = TraceParent::parse(&text) {
                assert!(text.contains(&crate::formats::hex(&p.trace_id)));
            }
        }
        // Mutations of a valid one, at every position.
        for i in 0..VALID.len() {
            for c in ['g', 'A', '-', '0', 'é'] {
                let mut text: Vec<char> = VALID.chars().collect();
                text[i] = c;
                let text: String = text.into_iter().collect();
                let _ = TraceParent::parse(&text);
            }
        }
    }

    #[test]
    fn without_export_the_audit_gets_the_client_s_trace_id_only() {
        let spans = Spans::none();
        let id = rmcp::model::RequestId::Number(1);
        let mut span = CallSpan {
            tool: Some("echo"),
            parent: TraceParent::parse(VALID),
            tenant: "acme",
            session: "",
            request_id: &id,
            started: SystemTime::now(),
            error: None,
        };
        assert_eq!(
            spans.record(&span).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        span.parent = None;
        assert_eq!(spans.record(&span), None);
    }
}
