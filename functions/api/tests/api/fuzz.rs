//! Issue 15: property-based fuzzing of the API, driven by `openapi.json`, against the local
//! run's real loopback server and the real emulator.
//!
//! [Schemathesis](https://schemathesis.readthedocs.io) (PyPI, MIT; installed by
//! `scripts/tools.sh` into a cached venv) reads the document, generates schema-valid and
//! schema-invalid requests for every operation (examples, coverage, fuzzing and stateful
//! phases: it follows the document's links to create a job and then act on it), and checks
//! every answer: no 5xx, no dropped connection, the status is one the operation documents, the
//! body and headers match the documented schema, schema-valid requests are not refused for
//! their shape, schema-invalid ones are. `tests/fuzz/sundial_fuzz_hooks.py` adds one check of
//! ours: a refused request (4xx) changes nothing stored (a digest of both tables' items and the
//! pool queues' message counts, served by this test on a side port, is the same before and
//! after).
//!
//! The server is `sundial_api::local::serve`, the same loopback server `sundial dev` runs,
//! without the tick and workers, so that nothing but the fuzzer's own requests changes the
//! store and the digest check is exact. The seed is fixed and the budget bounded
//! (`SUNDIAL_FUZZ_EXAMPLES` examples per operation and phase, default 25).
//!
//! Not fuzzed: `ignored_auth` (the local server has no authorizer; the tenant is the
//! `X-Sundial-Tenant` header, and API Gateway enforces the document's security schemes in a
//! deployment; `tenancy.rs` tests the authorizer path).

use crate::common::{at, Harness};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SEED: &str = "15";

fn canon(v: &AttributeValue) -> String {
    match v {
        AttributeValue::S(s) => format!("S{s:?}"),
        AttributeValue::N(n) => format!("N{n}"),
        AttributeValue::Bool(b) => format!("B{b}"),
        AttributeValue::Null(_) => "NULL".into(),
        AttributeValue::B(b) => format!("Y{:?}", b.as_ref()),
        AttributeValue::L(l) => format!("L[{}]", l.iter().map(canon).collect::<Vec<_>>().join(",")),
        AttributeValue::M(m) => format!("M{{{}}}", canon_map(m)),
        AttributeValue::Ss(s) => format!("SS{:?}", s.iter().collect::<std::collections::BTreeSet<_>>()),
        AttributeValue::Ns(s) => format!("NS{:?}", s.iter().collect::<std::collections::BTreeSet<_>>()),
        other => format!("{other:?}"),
    }
}

fn canon_map(m: &HashMap<String, AttributeValue>) -> String {
    let sorted: BTreeMap<_, _> = m.iter().map(|(k, v)| (k.clone(), canon(v))).collect();
    sorted.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// A digest of everything stored: every item of both tables, and each pool queue's counts.
async fn digest(h: &Harness) -> String {
    let mut items = Vec::new();
    for table in [&h.env.cfg.jobs_table, &h.env.cfg.executions_table] {
        let mut start = None;
        loop {
            let out = h
                .env
                .clients
                .ddb
                .scan()
                .table_name(table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan");
            items.extend(out.items().iter().map(|i| format!("{table}:{}", canon_map(i))));
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
    }
    items.sort();
    let mut queues = Vec::new();
    let listed = h
        .env
        .clients
        .sqs
        .list_queues()
        .queue_name_prefix(&h.env.cfg.queue_prefix)
        .send()
        .await
        .expect("list queues");
    let mut urls = listed.queue_urls().to_vec();
    urls.sort();
    {
        for url in urls {
            let a = h
                .env
                .clients
                .sqs
                .get_queue_attributes()
                .queue_url(url)
                .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
                .send()
                .await
                .expect("queue attributes");
            let attrs = a.attributes().cloned().unwrap_or_default();
            let n = |k: &str| {
                attrs.get(&aws_sdk_sqs::types::QueueAttributeName::from(k)).cloned().unwrap_or_default()
            };
            queues.push(format!(
                "{}+{}+{}",
                n("ApproximateNumberOfMessages"),
                n("ApproximateNumberOfMessagesNotVisible"),
                n("ApproximateNumberOfMessagesDelayed")
            ));
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    items.hash(&mut hasher);
    format!("items={} hash={:016x} queues={}", items.len(), hasher.finish(), queues.join("/"))
}

/// Serves [`digest`] on a loopback port, one request per connection.
async fn digest_server(h: Arc<Harness>, listener: TcpListener) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else { return };
        let mut buf = vec![0u8; 4096];
        let _ = s.read(&mut buf).await;
        let d = digest(&h).await;
        let resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{d}",
            d.len()
        );
        let _ = s.write_all(resp.as_bytes()).await;
    }
}

/// The Schemathesis CLI: `SUNDIAL_SCHEMATHESIS`, else the venv `scripts/tools.sh` installs.
fn schemathesis() -> PathBuf {
    if let Ok(p) = std::env::var("SUNDIAL_SCHEMATHESIS") {
        return PathBuf::from(p);
    }
    let home = std::env::var("HOME").unwrap_or_default();
    let cache = std::env::var("SUNDIAL_CACHE").unwrap_or_else(|_| format!("{home}/.cache/sundial"));
    PathBuf::from(format!("{cache}/venv-schemathesis-{}/bin/st", sundial_tests::SCHEMATHESIS_VERSION))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_holds_against_schemathesis() {
    let st = schemathesis();
    assert!(
        st.exists(),
        "{} is missing: source scripts/tools.sh (scripts/test.sh does) to install Schemathesis",
        st.display()
    );
    // GIVEN the local run's loopback server over a private environment, and the digest side port
    // The fuzzer's tenant is an operator, so resource limits are set and deleted, not only refused.
    let settings = sundial_core::control::ControlSettings {
        operator_tenants: vec!["fuzz".into()],
        ..sundial_core::control::ControlSettings::default()
    };
    // The API's clock runs a month ahead of the emulator's: the emulator deletes items whose TTL
    // (`expiresAt`, in real time) has passed, in the background, and an item the API writes with a
    // TTL from a clock in the past (a rate-limit counter, an Idempotency-Key record) could vanish
    // between the digests around a refused request, which would then look as if it had written.
    // A month ahead, nothing the run writes expires during it.
    let ahead = chrono::Utc::now() + chrono::Duration::days(30);
    let now = at(&ahead.format("%Y-%m-%dT%H:%M:%SZ").to_string());
    let h = Arc::new(Harness::with_settings("fuzz", &["default"], now, settings).await);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server =
        tokio::spawn(sundial_api::local::serve(Arc::new(h.api.clone()), listener, std::future::pending()));
    let side = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let side_port = side.local_addr().expect("addr").port();
    let digests = tokio::spawn(digest_server(h.clone(), side));

    // WHEN Schemathesis runs every phase over every operation with a fixed seed and budget
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let examples = std::env::var("SUNDIAL_FUZZ_EXAMPLES").unwrap_or_else(|_| "25".into());
    let report = std::env::temp_dir().join(format!("sundial-fuzz-{}", std::process::id()));
    let out = tokio::process::Command::new(&st)
        .arg("--config-file")
        .arg(crate_dir.join("tests/fuzz/schemathesis.toml"))
        .arg("run")
        .arg(crate_dir.join("openapi.json"))
        .args(["--url", &format!("http://127.0.0.1:{port}")])
        .args(["--checks", "all", "--exclude-checks", "ignored_auth"])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--max-examples", &examples, "--seed", SEED, "--workers", "1"])
        .args(["--header", "X-Sundial-Tenant: fuzz", "--request-timeout", "30"])
        .args(["--suppress-health-check", "all", "--output-truncate", "false"])
        .args(["--report", "ndjson", "--report-dir"])
        .arg(&report)
        .env("SCHEMATHESIS_HOOKS", "sundial_fuzz_hooks")
        .env("PYTHONPATH", crate_dir.join("tests/fuzz"))
        .env("SUNDIAL_DIGEST_URL", format!("http://127.0.0.1:{side_port}/digest"))
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output()
        .await
        .expect("run schemathesis");
    server.abort();
    digests.abort();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // THEN it finds nothing
    assert!(out.status.success(), "Schemathesis found failures (report in {}):\n{stdout}", report.display());
}
