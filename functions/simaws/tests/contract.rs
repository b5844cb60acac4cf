//! The contract suite against the simulator, on a current-thread runtime with a paused clock:
//! every case passes, and the cases' waits (delays, visibility timeouts, long polls) pass in
//! simulated time.

use std::sync::Arc;
use sundial_simaws::contract::{self, ECHO};
use sundial_simaws::{Aws, InvokeOutcome};

fn echo(aws: &Aws) {
    aws.on_invoke(Arc::new(|inv| {
        Box::pin(async move {
            if !inv.function.ends_with(ECHO) {
                return InvokeOutcome::NotFound;
            }
            if inv.payload == b"\"fail\"" {
                return InvokeOutcome::FunctionError(b"{\"errorMessage\":\"failed\"}".to_vec());
            }
            InvokeOutcome::Ok(inv.payload)
        })
    }));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn every_case_passes_on_the_simulator() {
    let aws = Aws::new(29, 1_767_225_600_000);
    echo(&aws);
    let wall = std::time::Instant::now();
    let results = contract::run_all(&aws.sdk_config(), "c-").await;
    let failed: Vec<String> =
        results.iter().filter_map(|(n, r)| r.as_ref().err().map(|e| format!("{n}: {e}"))).collect();
    assert!(failed.is_empty(), "contract cases failed on the simulator:\n{}", failed.join("\n"));
    assert_eq!(results.len(), contract::names().len());
    assert!(aws.now_ms() > 1_767_225_600_000 + 4_000, "the waits ran in simulated time");
    assert!(
        wall.elapsed() < std::time::Duration::from_secs(20),
        "simulated waits took real time: {:?}",
        wall.elapsed()
    );
    assert!(aws.queues().is_empty(), "cases left queues behind: {:?}", aws.queues());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_same_seed_replays_the_same_trace() {
    let mut hashes = Vec::new();
    for _ in 0..2 {
        let aws = Aws::new(5, 0);
        echo(&aws);
        aws.set_faults(sundial_simaws::Faults {
            throttle: 0.1,
            server_error: 0.05,
            lost_response: 0.05,
            sqs_duplicate: 0.1,
            latency_ms: 20,
            ..Default::default()
        });
        let _ = contract::run_all(&aws.sdk_config(), "r-").await;
        hashes.push((aws.trace_hash(), aws.now_ms(), aws.stats()));
    }
    assert_eq!(hashes[0], hashes[1]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn list_tags_reads_a_functions_tags_by_its_unqualified_arn() {
    // GIVEN a function tagged for acme (the ownership check reads it so: issue 49, F1)
    let aws = Aws::new(7, 1_767_225_600_000);
    aws.create_function("acme-run", &[("sundial-tenant", "acme")]);
    let lambda = aws_sdk_lambda::Client::new(&aws.sdk_config());
    // WHEN its ARN is resolved from a qualified name and its tags listed
    let got = lambda.get_function().function_name("acme-run:prod").send().await.expect("GetFunction");
    let arn = got.configuration().and_then(|c| c.function_arn()).expect("FunctionArn").to_string();
    let tags = lambda.list_tags().resource(&arn).send().await.expect("ListTags");
    // THEN the tag is there; a qualified or unknown ARN is not found, as on AWS
    assert_eq!(tags.tags().and_then(|t| t.get("sundial-tenant")).map(String::as_str), Some("acme"));
    assert!(lambda.list_tags().resource(format!("{arn}:prod")).send().await.is_err());
    assert!(lambda.list_tags().resource(arn.replace("acme-run", "nobody")).send().await.is_err());
}
