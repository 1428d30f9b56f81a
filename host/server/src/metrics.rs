//! `/metrics` in the Prometheus text format (off unless `[server] metrics = true` or
//! `serve --metrics`; behind the admin token): calls by tenant, tool and outcome, their
//! latency, refusals at the front door by kind, approvals asked and decided, shared
//! store errors, calls in flight, and the sandbox pool: its use now and how long calls
//! queued for a sandbox (or for their tenant's `max_concurrent`), read from the
//! dispatcher at each scrape.
//!
//! Label values are bounded: a tenant is one of the policy's (else `other`), a tool one
//! the registry knows (else `unknown`: an agent cannot grow the series by calling names
//! that do not exist), an outcome one of the host's own words.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tenant: String,
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    event: String,
}

/// A queue: `sandboxes` (the host's), or `tenant` (one tenant's `max_concurrent`, the
/// tenant named; only the policy's tenants with a cap have one).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: &'static str,
    tenant: String,
}

/// The sandbox pool and the queues in front of it, read at each scrape.
#[derive(Debug)]
struct PoolCollector(Arc<hermetic::Dispatcher>);

impl Collector for PoolCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (sandboxes, tenants) = self.0.slot_stats();
        let gauge = |value: usize| ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
        for (name, help, value) in [
            (
                "sandbox_pool_capacity",
                "Tool calls the host runs at once (each in its own sandbox)",
                sandboxes.capacity,
            ),
            (
                "sandbox_pool_in_use",
                "Sandboxes running a tool call now",
                sandboxes.in_use,
            ),
        ] {
            let value = gauge(value);
            value.encode(encoder.encode_descriptor(name, help, None, value.metric_type())?)?;
        }
        let queues: Vec<(QueueLabels, hermetic::SlotStats)> = std::iter::once((
            QueueLabels {
                queue: "sandboxes",
                tenant: String::new(),
            },
            sandboxes,
        ))
        .chain(tenants.into_iter().map(|(tenant, stats)| {
            (
                QueueLabels {
                    queue: "tenant",
                    tenant: tenant.to_owned(),
                },
                stats,
            )
        }))
        .collect();
        let mut family = |name: &str,
                          help: &str,
                          value: &dyn Fn(&hermetic::SlotStats) -> Box<dyn EncodeMetric>|
         -> Result<(), std::fmt::Error> {
            let first = value(&sandboxes);
            let mut metric = encoder.encode_descriptor(name, help, None, first.metric_type())?;
            for (labels, stats) in &queues {
                value(stats).encode(metric.encode_family(labels)?)?;
            }
            Ok(())
        };
        family("queue_waiting", "Calls waiting in a queue now", &|s| {
            Box::new(gauge(s.waiting))
        })?;
        family(
            "queue_waits",
            "Calls that had to wait in a queue (counted when the wait ended)",
            &|s| Box::new(ConstCounter::new(s.queued)),
        )?;
        family(
            "queue_wait_seconds",
            "Time calls spent waiting in a queue, summed",
            &|s| Box::new(ConstCounter::new(s.queued_seconds)),
        )?;
        family(
            "queue_gave_up",
            "Calls that waited and got no place in time (refused as busy)",
            &|s| Box::new(ConstCounter::new(s.gave_up)),
        )
    }
}

/// Latency buckets, seconds: from a warm call (tens of µs) to a long terminal command.
const BUCKETS: [f64; 12] = [
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 300.0,
];

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// One server's metrics.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Family<ToolLabels, Histogram, fn() -> Histogram>,
    refusals: Family<KindLabels, Counter>,
    approvals: Family<EventLabels, Counter>,
    store_errors: Counter,
    in_flight: Gauge<i64, std::sync::atomic::AtomicI64>,
    sessions: Gauge<i64, std::sync::atomic::AtomicI64>,
    denials: Family<RuleLabels, Counter>,
    tenants: BTreeSet<String>,
}

/// A detector rule (a bounded set: the detector's own ids).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    rule: String,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Metrics whose tenant label takes the values in `tenants` (`""`, the operator,
    /// is always one of them).
    pub fn new(
        tenants: impl IntoIterator<Item = String>,
        dispatcher: Option<Arc<hermetic::Dispatcher>>,
    ) -> Self {
        let mut registry = Registry::with_prefix("hermetic");
        if let Some(dispatcher) = dispatcher {
            registry.register_collector(Box::new(PoolCollector(dispatcher)));
        }
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "calls",
            "Tool calls by tenant, tool and outcome",
            calls.clone(),
        );
        let latency =
            Family::<ToolLabels, Histogram, fn() -> Histogram>::new_with_constructor(histogram);
        registry.register(
            "call_duration_seconds",
            "Tool call duration, from the request to the result",
            latency.clone(),
        );
        let refusals = Family::<KindLabels, Counter>::default();
        registry.register(
            "refusals",
            "Requests refused before a call: rate_limited, busy, store_unavailable",
            refusals.clone(),
        );
        let approvals = Family::<EventLabels, Counter>::default();
        registry.register(
            "approvals",
            "Approval questions asked, and how the gate decided them",
            approvals.clone(),
        );
        let store_errors = Counter::<u64, AtomicU64>::default();
        registry.register(
            "store_errors",
            "Operations the shared store (the cluster's Redis) did not answer",
            store_errors.clone(),
        );
        let in_flight = Gauge::<i64, std::sync::atomic::AtomicI64>::default();
        registry.register(
            "calls_in_flight",
            "Tool calls running now",
            in_flight.clone(),
        );
        let sessions = Gauge::<i64, std::sync::atomic::AtomicI64>::default();
        registry.register(
            "sessions",
            "Live legacy (pre-2026-07-28) MCP sessions on this node",
            sessions.clone(),
        );
        let denials = Family::<RuleLabels, Counter>::default();
        registry.register(
            "denials",
            "Commands the approval gate did not run, by the rule they hit",
            denials.clone(),
        );
        let mut tenants: BTreeSet<String> = tenants.into_iter().collect();
        tenants.insert(String::new());
        Self {
            registry,
            calls,
            latency,
            refusals,
            approvals,
            store_errors,
            in_flight,
            sessions,
            denials,
            tenants,
        }
    }

    fn tenant(&self, tenant: &str) -> String {
        if self.tenants.contains(tenant) {
            tenant.to_owned()
        } else {
            "other".to_owned()
        }
    }

    /// One finished call. `known` says whether `tool` is a registered tool.
    pub fn call(&self, tenant: &str, tool: &str, known: bool, outcome: &str, seconds: f64) {
        let tool = if known { tool } else { "unknown" }.to_owned();
        self.calls
            .get_or_create(&CallLabels {
                tenant: self.tenant(tenant),
                tool: tool.clone(),
                outcome: outcome.to_owned(),
            })
            .inc();
        self.latency
            .get_or_create(&ToolLabels { tool })
            .observe(seconds);
    }

    /// A request refused at the front door (`rate_limited`, `busy`, …).
    pub fn refused(&self, kind: &str) {
        self.refusals
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .inc();
        if kind == "store_unavailable" {
            self.store_errors.inc();
        }
    }

    /// An approval event: `asked`, or the gate's outcome (`approved_once`, `denied`,
    /// `timeout`, …).
    pub fn approval(&self, event: &str) {
        self.approvals
            .get_or_create(&EventLabels {
                event: event.to_owned(),
            })
            .inc();
    }

    /// A command the gate did not run, with the rules it hit.
    pub fn denied(&self, rules: &[hermetic::approval::RuleId]) {
        for rule in rules {
            self.denials
                .get_or_create(&RuleLabels {
                    rule: rule.as_str().to_owned(),
                })
                .inc();
        }
    }

    /// The text exposition, with `in_flight` calls running now and `sessions` live.
    pub fn encode(&self, in_flight: usize, sessions: usize) -> String {
        self.in_flight
            .set(i64::try_from(in_flight).unwrap_or(i64::MAX));
        self.sessions
            .set(i64::try_from(sessions).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Counts the terminal's approval questions and decisions.
#[derive(Debug)]
pub struct ApprovalMetrics(pub std::sync::Arc<Metrics>);

impl hermetic::approval::ApprovalObserver for ApprovalMetrics {
    fn before_request(&self, _request: &hermetic::approval::ApprovalRequest, _approver: &str) {
        self.0.approval("asked");
    }

    fn after_answer(
        &self,
        _request: &hermetic::approval::ApprovalRequest,
        verdict: &hermetic::approval::Verdict,
    ) {
        self.0.approval(verdict.outcome.as_str());
        if !verdict.approved {
            self.0.denied(&verdict.rules);
        }
    }

    fn decided(
        &self,
        _key: &hermetic::approval::SessionKey,
        _command: &str,
        verdict: &hermetic::approval::Verdict,
    ) {
        if !verdict.approved {
            self.0.denied(&verdict.rules);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_stay_bounded_and_the_text_format_is_prometheus() {
        let m = Metrics::new(["acme".to_owned()], None);
        m.call("acme", "echo", true, "ok", 0.002);
        m.call("intruder", "made-up-name-1", false, "unknown_tool", 0.0001);
        m.call("intruder", "made-up-name-2", false, "unknown_tool", 0.0001);
        m.refused("rate_limited");
        m.approval("asked");
        let rule = hermetic::approval::RuleId::from_name("fs.rm_root").unwrap();
        m.denied(&[rule]);
        let text = m.encode(3, 2);
        assert!(
            text.contains("hermetic_calls_total{tenant=\"acme\",tool=\"echo\",outcome=\"ok\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "hermetic_calls_total{tenant=\"other\",tool=\"unknown\",outcome=\"unknown_tool\"} 2"
            ),
            "{text}"
        );
        assert!(!text.contains("made-up-name"));
        assert!(
            text.contains("hermetic_refusals_total{kind=\"rate_limited\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("hermetic_call_duration_seconds_bucket"),
            "{text}"
        );
        assert!(text.contains("hermetic_calls_in_flight 3"), "{text}");
        assert!(text.contains("hermetic_sessions 2"), "{text}");
        assert!(
            text.contains("hermetic_denials_total{rule=\"fs.rm_root\"} 1"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
