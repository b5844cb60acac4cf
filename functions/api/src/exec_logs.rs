//! The local run's worker log lines, kept per execution for `GET /v1/executions/{id}/logs`
//! (`docs/console.md`, "Logs").
//!
//! The worker handles each message inside a span named
//! [`EXECUTION_SPAN`](sundial_core::execution::worker::EXECUTION_SPAN) whose `global_id` field is
//! the execution's id *with its tenant* (`{tenant}:{job}@{ms}`). [`CaptureLayer`] files every
//! event logged inside such a span under that id, so two tenants with the same job id and
//! instant never share a buffer; the route reads only `{caller's tenant}:{id}`.
//!
//! Bounded: the last [`ExecLogs::per_execution`] lines of each execution, and the
//! [`ExecLogs::max_executions`] executions most recently logged (the oldest is dropped whole).
//! In memory only: the deployed Lambda has no buffer (its route answers a Logs Insights link).

use chrono::{DateTime, Utc};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One captured line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// When it was logged.
    pub at: DateTime<Utc>,
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: String,
    /// The message, then the event's other fields as `name=value`.
    pub message: String,
}

#[derive(Debug, Default)]
struct Inner {
    lines: HashMap<String, VecDeque<LogLine>>,
    /// Global ids, least recently logged first (an id moves to the back when logged again).
    order: VecDeque<String>,
}

/// The per-execution buffer.
#[derive(Debug)]
pub struct ExecLogs {
    per_execution: usize,
    max_executions: usize,
    inner: Mutex<Inner>,
}

impl Default for ExecLogs {
    fn default() -> Self {
        ExecLogs::new(200, 10_000)
    }
}

impl ExecLogs {
    /// A buffer of the last `per_execution` lines of the last `max_executions` executions.
    pub fn new(per_execution: usize, max_executions: usize) -> Self {
        ExecLogs {
            per_execution: per_execution.max(1),
            max_executions: max_executions.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Lines kept per execution.
    pub fn per_execution(&self) -> usize {
        self.per_execution
    }

    /// Executions kept.
    pub fn max_executions(&self) -> usize {
        self.max_executions
    }

    /// Files `line` under the execution `global_id` (`{tenant}:{job}@{ms}`).
    pub fn push(&self, global_id: &str, line: LogLine) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *g;
        if let Some(q) = inner.lines.get_mut(global_id) {
            if q.len() == self.per_execution {
                q.pop_front();
            }
            q.push_back(line);
            if inner.order.back().map(String::as_str) != Some(global_id) {
                inner.order.retain(|x| x != global_id);
                inner.order.push_back(global_id.to_string());
            }
            return;
        }
        while inner.order.len() >= self.max_executions {
            match inner.order.pop_front() {
                Some(old) => {
                    inner.lines.remove(&old);
                }
                None => break,
            }
        }
        inner.lines.insert(global_id.to_string(), VecDeque::from([line]));
        inner.order.push_back(global_id.to_string());
    }

    /// The lines of the execution `id` (relative, `{job}@{ms}`) of `tenant`, oldest first.
    pub fn lines(&self, tenant: &str, id: &str) -> Vec<LogLine> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.lines.get(&format!("{tenant}:{id}")).map(|q| q.iter().cloned().collect()).unwrap_or_default()
    }

    /// The layer that fills this buffer (give it an INFO filter).
    pub fn layer(self: &Arc<Self>) -> CaptureLayer {
        CaptureLayer { logs: self.clone() }
    }
}

/// The `global_id` of an execution span, kept in the span's extensions.
struct SpanExec(String);

/// A `tracing_subscriber` layer filing events logged inside an execution span.
#[derive(Debug, Clone)]
pub struct CaptureLayer {
    logs: Arc<ExecLogs>,
}

#[derive(Default)]
struct Fields {
    global_id: Option<String>,
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "global_id" => self.global_id = Some(value.to_string()),
            "message" => self.message = value.to_string(),
            n => {
                let _ = write!(self.rest, " {n}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "global_id" => self.global_id = Some(format!("{value:?}")),
            "message" => self.message = format!("{value:?}"),
            n => {
                let _ = write!(self.rest, " {n}={value:?}");
            }
        }
    }
}

impl<S> Layer<S> for CaptureLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != sundial_core::execution::worker::EXECUTION_SPAN {
            return;
        }
        let mut f = Fields::default();
        attrs.record(&mut f);
        if let (Some(gid), Some(span)) = (f.global_id, ctx.span(id)) {
            span.extensions_mut().insert(SpanExec(gid));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(scope) = ctx.event_scope(event) else { return };
        let Some(gid) = scope.from_root().find_map(|s| s.extensions().get::<SpanExec>().map(|x| x.0.clone()))
        else {
            return;
        };
        let mut f = Fields::default();
        event.record(&mut f);
        let message = format!("{}{}", f.message, f.rest);
        let level = event.metadata().level().as_str().to_string();
        self.logs.push(&gid, LogLine { at: Utc::now(), level, message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    fn line(m: &str) -> LogLine {
        LogLine { at: Utc::now(), level: "INFO".into(), message: m.into() }
    }

    #[test]
    fn lines_are_per_tenant_and_bounded() {
        let logs = ExecLogs::new(2, 2);
        logs.push("a:nightly@1", line("a1"));
        logs.push("b:nightly@1", line("b1"));
        assert_eq!(logs.lines("a", "nightly@1").len(), 1);
        assert_eq!(logs.lines("b", "nightly@1")[0].message, "b1", "the same id in another tenant is apart");
        assert!(logs.lines("c", "nightly@1").is_empty());
        for m in ["a2", "a3"] {
            logs.push("a:nightly@1", line(m));
        }
        let a: Vec<_> = logs.lines("a", "nightly@1").into_iter().map(|l| l.message).collect();
        assert_eq!(a, ["a2", "a3"], "the last lines of an execution");
        // A third execution drops the least recently logged one (b's).
        logs.push("a:nightly@2", line("x"));
        assert!(logs.lines("b", "nightly@1").is_empty());
        assert_eq!(logs.lines("a", "nightly@1").len(), 2);
    }

    #[test]
    fn the_layer_files_events_inside_an_execution_span_under_its_global_id() {
        let logs = Arc::new(ExecLogs::default());
        let sub = tracing_subscriber::registry().with(logs.layer());
        tracing::subscriber::with_default(sub, || {
            tracing::info!("outside any execution");
            let span = tracing::info_span!(
                sundial_core::execution::worker::EXECUTION_SPAN,
                global_id = %"acme:nightly@1764469800000"
            );
            let _g = span.enter();
            tracing::warn!(execution = "nightly@1764469800000", code = 503, "target answered 503");
        });
        let got = logs.lines("acme", "nightly@1764469800000");
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].level, "WARN");
        assert_eq!(got[0].message, "target answered 503 execution=nightly@1764469800000 code=503");
        assert!(logs.lines("other", "nightly@1764469800000").is_empty());
    }
}
