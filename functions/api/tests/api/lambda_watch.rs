//! The `api` binary through `cargo lambda watch`: API Gateway HTTP API (payload v2) events go in
//! through aws-sdk-lambda `Invoke`, the real `lambda_http` runtime parses them, the authorizer
//! context decides the tenant, and the answers come back as API Gateway v2 responses.

use crate::common::{event, job_body};
use aws_sdk_lambda::primitives::Blob;
use serde_json::{json, Value};
use sundial_tests::lambda_watch::LambdaWatch;
use sundial_tests::TestEnv;

/// One invoke, bounded: the first one compiles the function, and a function that does not
/// compile leaves cargo-lambda waiting for it forever (seen: a 10-minute hang instead of a
/// failure), so give up after five minutes and point at cargo-lambda's log.
async fn invoke(watch: &LambdaWatch, ev: &Value) -> Value {
    let call = watch
        .client()
        .invoke()
        .function_name("api")
        .payload(Blob::new(serde_json::to_vec(ev).expect("event JSON")))
        .send();
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), call)
        .await
        .expect("the api function did not answer within 300 s: does it compile? see the cargo-lambda log in the temp dir")
        .expect("invoke the api function");
    assert!(out.function_error().is_none(), "function error: {:?}", out.payload());
    serde_json::from_slice(out.payload().map(|p| p.as_ref()).unwrap_or(b"{}")).expect("a JSON response")
}

fn claims(tenant: &str) -> Option<Value> {
    Some(json!({"jwt": {"claims": {"sub": format!("{tenant}-user"), "tenant": tenant}, "scopes": null}}))
}

fn body_of(resp: &Value) -> Value {
    serde_json::from_str(resp["body"].as_str().unwrap_or("null")).expect("a JSON body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_lambda_serves_api_gateway_v2_events() {
    // GIVEN the api function running under cargo lambda watch against a private environment
    let env = TestEnv::new("api-lambda").await.expect("emulator environment");
    let fn_env = sundial_tests::fixtures::function_env(&env, &[]);
    let watch = LambdaWatch::start("sundial-api", &fn_env).await.expect("cargo lambda watch");

    // WHEN tenant acme creates a job through an API Gateway v2 event with JWT claims
    let body = job_body("nightly", "0 30 2 * * *").to_string();
    let created = invoke(
        &watch,
        &event("POST", "/v1/jobs", Some(&body), &[("content-type", "application/json")], claims("acme")),
    )
    .await;
    // THEN the response is a 201 API Gateway v2 response with the job, its ETag and next fires
    assert_eq!(created["statusCode"], 201, "{created}");
    let b = body_of(&created);
    assert_eq!((&b["job"]["jobId"], &b["job"]["version"]), (&json!("nightly"), &json!(1)), "{b}");
    assert_eq!(b["nextFires"].as_array().map(Vec::len), Some(5));
    assert_eq!(created["headers"]["etag"], "\"1\"", "{created}");
    // AND the job is stored under acme's key
    let stored = sundial_store::jobs::get_job(&env.clients.ddb, &env.cfg, "acme", "nightly").await.unwrap();
    assert_eq!(stored.map(|j| j.version), Some(1));

    // WHEN tenant globex asks for it, and a request comes without an authorizer
    let other = invoke(&watch, &event("GET", "/v1/jobs/nightly", None, &[], claims("globex"))).await;
    let anon =
        invoke(&watch, &event("GET", "/v1/jobs/nightly", None, &[("x-sundial-tenant", "acme")], None)).await;
    // THEN globex gets 404 and the anonymous request 401, both as JSON errors
    assert_eq!(
        (other["statusCode"].as_u64(), &body_of(&other)["error"]["code"]),
        (Some(404), &json!("not_found"))
    );
    assert_eq!(
        (anon["statusCode"].as_u64(), &body_of(&anon)["error"]["code"]),
        (Some(401), &json!("unauthorized"))
    );
    // AND a bad request names its field
    let mut bad = job_body("bad", "0 30 2 * * *");
    bad["retry"] = json!({"maxAttempts": -1});
    let r = invoke(
        &watch,
        &event(
            "POST",
            "/v1/jobs",
            Some(&bad.to_string()),
            &[("content-type", "application/json")],
            claims("acme"),
        ),
    )
    .await;
    assert_eq!(
        (r["statusCode"].as_u64(), &body_of(&r)["error"]["field"]),
        (Some(400), &json!("retry.maxAttempts"))
    );
    drop(watch);
    env.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ingest_lambda_fires_a_job_from_its_tenants_queue_batch() {
    // GIVEN acme's event queue (tagged acme) declared as acme's source, and the api and ingest
    // functions of the package running under cargo lambda watch
    let env = TestEnv::new("ingest-lambda").await.expect("emulator environment");
    let url = sundial_tests::fixtures::tenant_queue(&env, "files", "acme").await.expect("queue");
    let arn = sundial_tests::fixtures::queue_arn(&env, &url).await.expect("the queue's ARN");
    let sources = sundial_core::config::EventSourceSettings {
        sources: vec![sundial_core::config::EventSource {
            tenant: "acme".into(),
            queue_arn: Some(arn.clone()),
            bus: None,
        }],
    };
    let name = sundial_model::resources::Resources::get().env.event_sources.clone();
    let value = sources.to_env_value();
    let fn_env = sundial_tests::fixtures::function_env(&env, &[(name.as_str(), value.as_str())]);
    let watch = LambdaWatch::start("sundial-api", &fn_env).await.expect("cargo lambda watch");
    let mut body = job_body("load", "0 0 6 * * *");
    body["events"] = json!({});
    let created = invoke(
        &watch,
        &event(
            "POST",
            "/v1/jobs",
            Some(&body.to_string()),
            &[("content-type", "application/json")],
            claims("acme"),
        ),
    )
    .await;
    assert_eq!(created["statusCode"], 201, "{created}");

    // WHEN the event source mapping hands the ingest function a batch of acme's queue
    let batch = json!({"Records": [{
        "messageId": "5f6e0c1a-1111-2222-3333-444455556666", "receiptHandle": "rh", "md5OfBody": "",
        "body": json!({"jobId": "load", "key": "file-7.csv", "params": {"file": "file-7.csv"}}).to_string(),
        "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
        "eventSource": "aws:sqs", "eventSourceARN": arn, "awsRegion": "us-east-1"
    }]});
    let call = watch
        .client()
        .invoke()
        .function_name("ingest")
        .payload(Blob::new(serde_json::to_vec(&batch).expect("JSON")))
        .send();
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), call)
        .await
        .expect("the ingest function did not answer within 300 s: see the cargo-lambda log")
        .expect("invoke the ingest function");
    assert!(out.function_error().is_none(), "function error: {:?}", out.payload());
    let answer: Value =
        serde_json::from_slice(out.payload().map(|p| p.as_ref()).unwrap_or(b"{}")).expect("JSON");

    // THEN no record is left for redelivery, and the job has one execution made by the event,
    // with its parameters, sent to its pool
    assert_eq!(answer["batchItemFailures"], json!([]), "{answer}");
    let es = sundial_tests::trigger::executions(&env, "acme", "load").await.expect("executions");
    assert_eq!(es.len(), 1, "{es:?}");
    assert_eq!(es[0].timeline[0].code.as_deref(), Some("event"));
    assert_eq!(es[0].definition.params["file"], "file-7.csv");
    let sent = sundial_tests::fixtures::receive(&env, env.queue_url("default"), 60).await.expect("receive");
    assert_eq!(sent.len(), 1);
    env.cleanup().await;
}
