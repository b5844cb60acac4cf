//! The `tick` binary through `cargo lambda watch`: an EventBridge scheduled event goes in
//! through aws-sdk-lambda `Invoke`, the real `lambda_runtime` loop runs the handler, and the
//! executions land in the emulator's tables and queues.

use aws_sdk_lambda::primitives::Blob;
use std::sync::Arc;
use sundial_schedule::MisfirePolicy;
use sundial_tests::fixtures::function_env;
use sundial_tests::lambda_watch::LambdaWatch;
use sundial_tests::trigger::{create_job, definition, executions, queued};
use sundial_tests::TestEnv;
use tokio::sync::Mutex;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tick_lambda_creates_and_enqueues_executions() -> anyhow::Result<()> {
    // GIVEN a job firing every 15 seconds and the tick function running under cargo lambda watch
    let env = TestEnv::new("tick-lambda").await?;
    let now = chrono::Utc::now();
    create_job(&env, "acme", "q15", definition("*/15 * * * * *", "UTC", MisfirePolicy::FireOnce), now)
        .await?;
    let fn_env = function_env(&env, &[]);
    let watch = LambdaWatch::start("sundial-tick", &fn_env).await?;

    // WHEN EventBridge's scheduled event is invoked
    let event = serde_json::json!({
        "version": "0", "id": "tick-1", "detail-type": "Scheduled Event", "source": "aws.events",
        "account": "123456789012", "time": now.to_rfc3339(), "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/sundial-tick"], "detail": {}
    });
    let out = watch
        .client()
        .invoke()
        .function_name("tick")
        .payload(Blob::new(serde_json::to_vec(&event)?))
        .send()
        .await?;
    assert!(
        out.function_error().is_none(),
        "tick failed: {:?}",
        out.payload().map(|p| String::from_utf8_lossy(p.as_ref()))
    );
    let body: serde_json::Value = serde_json::from_slice(out.payload().map(|p| p.as_ref()).unwrap_or(b"{}"))?;

    // THEN it reports and stores the fires up to the end of the next minute, and enqueues them
    let created = body["tick"]["created"].as_u64().unwrap_or(0);
    let ex = executions(&env, "acme", "q15").await?;
    assert!(created >= 4, "at least a full minute of 15-second fires: {body}");
    assert_eq!(ex.len() as u64, created);
    assert_eq!(queued(&env, "default").await?, created);
    assert!(
        ex.iter().all(|e| e.timeline[0].actor.starts_with("tick:")),
        "audit actor is the tick invocation"
    );
    env.cleanup().await;
    Ok(())
}

/// Records Lambda `Invoke` calls (path, invocation type, payload) and answers 202 like
/// Lambda's asynchronous invoke.
async fn invoke_recorder() -> anyhow::Result<(String, Arc<Mutex<Vec<(String, String, Vec<u8>)>>>)> {
    use http_body_util::BodyExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rec = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let rec = rec.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let rec = rec.clone();
                    async move {
                        let path = req.uri().path().to_string();
                        let kind = req
                            .headers()
                            .get("x-amz-invocation-type")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("RequestResponse")
                            .to_string();
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes().to_vec())
                            .unwrap_or_default();
                        rec.lock().await.push((path, kind, body));
                        let resp = hyper::Response::builder()
                            .status(202)
                            .body(http_body_util::Full::new(bytes::Bytes::new()))
                            .map_err(|e| std::io::Error::other(e.to_string()))?;
                        Ok::<_, std::io::Error>(resp)
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, svc).await;
            });
        }
    });
    Ok((url, seen))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tick_fans_shard_ranges_out_to_async_scan_invocations() -> anyhow::Result<()> {
    // GIVEN 32 shards, at most 8 scanned in-process, 8 per scan: the tick must fan out four
    // asynchronous invocations of the scan function (recorded by a stand-in Lambda endpoint)
    let env = TestEnv::with("tick-fanout", &["default"], 32).await?;
    let now = chrono::Utc::now();
    for i in 0..12 {
        let def = definition("*/30 * * * * *", "UTC", MisfirePolicy::FireOnce);
        create_job(&env, "acme", &format!("job-{i}"), def, now).await?;
    }
    let (lambda_url, invokes) = invoke_recorder().await?;
    let fn_env = function_env(
        &env,
        &[
            ("AWS_ENDPOINT_URL_LAMBDA", &lambda_url),
            ("SUNDIAL_SCAN_FUNCTION", "sundial-scan"),
            ("SUNDIAL_TICK_IN_PROCESS_MAX_SHARDS", "8"),
            ("SUNDIAL_SHARDS_PER_SCAN", "8"),
        ],
    );
    let watch = LambdaWatch::start("sundial-tick", &fn_env).await?;
    // WHEN the scheduled event arrives
    let event = serde_json::json!({"detail-type": "Scheduled Event", "source": "aws.events",
        "time": now.to_rfc3339(), "detail": {}});
    let out = watch
        .client()
        .invoke()
        .function_name("tick")
        .payload(Blob::new(serde_json::to_vec(&event)?))
        .send()
        .await?;
    let body: serde_json::Value = serde_json::from_slice(out.payload().map(|p| p.as_ref()).unwrap_or(b"{}"))?;
    // THEN it fans out instead of scanning: four Event invocations of the scan function whose
    // ranges cover every shard once
    assert_eq!(body["tick"]["fannedOut"], 4, "{body}");
    let seen = invokes.lock().await.clone();
    assert_eq!(seen.len(), 4);
    let mut covered = Vec::new();
    for (path, kind, payload) in &seen {
        assert_eq!(path, "/2015-03-31/functions/sundial-scan/invocations");
        assert_eq!(kind, "Event", "asynchronous invoke");
        let p: serde_json::Value = serde_json::from_slice(payload)?;
        covered.extend(p["scan"]["from"].as_u64().unwrap_or(0)..p["scan"]["to"].as_u64().unwrap_or(0));
    }
    covered.sort_unstable();
    assert_eq!(covered, (0..32).collect::<Vec<u64>>());
    assert!(executions(&env, "acme", "job-0").await?.is_empty(), "the tick itself scanned nothing");
    // AND each recorded scan request, delivered to the same binary, creates the fires of its range
    for (_, _, payload) in &seen {
        let out =
            watch.client().invoke().function_name("tick").payload(Blob::new(payload.clone())).send().await?;
        assert!(out.function_error().is_none());
    }
    for i in 0..12 {
        assert!(
            !executions(&env, "acme", &format!("job-{i}")).await?.is_empty(),
            "job-{i} got no executions"
        );
    }
    env.cleanup().await;
    Ok(())
}
