//! The demo of `sundial dev`: a local target that answers every request, and a job that calls
//! it every 10 s.

use bytes::Bytes;
use chrono::Utc;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use sundial_core::control::{self, Caller, Control, ControlError};
use sundial_model::{JobDefinition, JobState, Target};
use sundial_schedule::ScheduleSpec;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The demo job's id.
pub(super) const DEMO_JOB: &str = "demo";

/// The demo target: answers 200 to every request and counts them.
pub(super) async fn demo_target(listener: TcpListener, calls: Arc<AtomicU64>, stop: CancellationToken) {
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r { Ok((s, _)) => s, Err(_) => continue },
            _ = stop.cancelled() => return,
        };
        let calls = calls.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |_req: Request<hyper::body::Incoming>| {
                calls.fetch_add(1, Ordering::Relaxed);
                async { Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"{\"ok\":true}")))) }
            });
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

pub(super) fn demo_definition(pool: &str, target_url: &str) -> JobDefinition {
    JobDefinition::new(ScheduleSpec::new("*/10 * * * * *", "UTC"), Target::http(target_url.to_string()))
        .with_pool(pool)
        .with_params(json!({"hello": "sundial"}))
        .with_timeout_secs(10)
}

/// Creates the demo job, or points an existing one at this run's target and resumes it.
pub(super) async fn ensure_demo(ctl: &Control, caller: &Caller, def: JobDefinition) -> anyhow::Result<()> {
    let now = Utc::now();
    match control::jobs::create(ctl, caller, DEMO_JOB, def.clone(), now).await {
        Ok(_) => Ok(()),
        Err(ControlError::Exists) => {
            let cur = control::jobs::get(ctl, caller, DEMO_JOB).await?;
            if cur.state == JobState::Deleted {
                println!("the demo job was deleted in this stack; not recreating it (use another --prefix)");
                return Ok(());
            }
            let v = control::jobs::update(ctl, caller, DEMO_JOB, cur.version, def, now).await?;
            if v.job.state == JobState::Paused {
                control::jobs::set_state(ctl, caller, DEMO_JOB, JobState::Enabled, None, Utc::now()).await?;
            }
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}
