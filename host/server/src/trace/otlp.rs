//! OTLP/HTTP export of call spans (feature `otlp`), through the OpenTelemetry SDK: a
//! batch processor on its own thread, so a call only hands its span over.

use super::CallSpan;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::time::SystemTime;

/// The SDK's tracer and its provider (which owns the batch processor).
pub(super) struct Exporter {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    /// Set by the first shutdown (transports may each ask for one).
    shut: std::sync::atomic::AtomicBool,
}

impl Exporter {
    /// An OTLP/HTTP (protobuf) exporter to `endpoint`, else configured by the SDK's
    /// environment variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_HEADERS`,
    /// `…_TIMEOUT`, …).
    pub(super) fn new(endpoint: Option<&str>) -> Result<Self, String> {
        use opentelemetry_otlp::WithExportConfig as _;
        let mut builder = opentelemetry_otlp::SpanExporter::builder().with_http();
        if let Some(endpoint) = endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let exporter = builder.build().map_err(|e| e.to_string())?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name("hermetic")
                    .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
                    .build(),
            )
            .build();
        let tracer = provider.tracer("hermetic-server");
        Ok(Self {
            provider,
            tracer,
            shut: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Records `span` (started then, ending now) and returns its trace id.
    pub(super) fn record(&self, span: &CallSpan<'_>) -> [u8; 16] {
        let parent = match span.parent {
            Some(p) => Context::new().with_remote_span_context(SpanContext::new(
                TraceId::from_bytes(p.trace_id),
                SpanId::from_bytes(p.parent_id),
                TraceFlags::new(p.flags),
                true,
                TraceState::default(),
            )),
            None => Context::new(),
        };
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", "tools/call"),
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("jsonrpc.request.id", span.request_id.to_string()),
            KeyValue::new("hermetic.tenant", span.tenant.to_owned()),
        ];
        if let Some(tool) = span.tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
        }
        if !span.session.is_empty() {
            attributes.push(KeyValue::new("mcp.session.id", span.session.to_owned()));
        }
        if let Some(error) = span.error {
            attributes.push(KeyValue::new("error.type", error.to_owned()));
        }
        let mut recorded = self
            .tracer
            .span_builder(match span.tool {
                Some(tool) => format!("tools/call {tool}"),
                None => "tools/call".to_owned(),
            })
            .with_kind(SpanKind::Server)
            .with_start_time(span.started)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        if let Some(error) = span.error {
            recorded.set_status(Status::error(error.to_owned()));
        }
        let trace_id = recorded.span_context().trace_id().to_bytes();
        recorded.end_with_timestamp(SystemTime::now());
        trace_id
    }

    /// Flushes and stops the batch processor.
    pub(super) fn shutdown(&self) {
        if self.shut.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!("exporting the last spans failed: {e}");
        }
    }
}
