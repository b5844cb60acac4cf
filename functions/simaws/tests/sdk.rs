//! The SDK plumbing: real clients over the simulated AWS, under a paused tokio clock.

use aws_sdk_dynamodb::types::AttributeValue as Av;
use sundial_simaws::Aws;

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn sdk_clients_talk_to_the_simulator() {
    let aws = Aws::new(7, 1_700_000_000_000);
    let sdk = aws.sdk_config();
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let r = ddb.list_tables().send().await.unwrap();
    assert_eq!(r.table_names(), &[] as &[String]);
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let q = sqs.create_queue().queue_name("q1").send().await.unwrap();
    let url = q.queue_url.unwrap();
    sqs.send_message().queue_url(&url).message_body("hi").send().await.unwrap();
    let t0 = aws.now_ms();
    let r = sqs.receive_message().queue_url(&url).wait_time_seconds(20).send().await.unwrap();
    assert_eq!(r.messages().len(), 1);
    // Every request takes at least 1 simulated ms (a round trip is never instantaneous).
    assert!(aws.now_ms() - t0 < 10, "a visible message returns at once: {}", aws.now_ms() - t0);
    let r = sqs.receive_message().queue_url(&url).wait_time_seconds(20).send().await.unwrap();
    assert!(r.messages().is_empty());
    let waited = aws.now_ms() - t0;
    assert!(
        (20_000..20_010).contains(&waited),
        "an empty long poll waits its 20 s of simulated time: {waited}"
    );
    let e = ddb.get_item().table_name("nope").key("pk", Av::S("x".into())).send().await.unwrap_err();
    assert!(e.into_service_error().is_resource_not_found_exception());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn lambda_invoke_reaches_the_handler() {
    use std::sync::Arc;
    use sundial_simaws::{InvocationType, InvokeOutcome};
    let aws = Aws::new(1, 0);
    aws.on_invoke(Arc::new(|inv| {
        Box::pin(async move {
            match (inv.function.as_str(), inv.invocation_type) {
                ("echo", InvocationType::RequestResponse) => InvokeOutcome::Ok(inv.payload),
                ("fail", _) => InvokeOutcome::FunctionError(b"{\"errorMessage\":\"boom\"}".to_vec()),
                _ => InvokeOutcome::Ok(Vec::new()),
            }
        })
    }));
    let lambda = aws_sdk_lambda::Client::new(&aws.sdk_config());
    let blob = aws_sdk_lambda::primitives::Blob::new(b"{\"a\":1}".to_vec());
    let out = lambda.invoke().function_name("echo").payload(blob.clone()).send().await.unwrap();
    assert_eq!(out.payload.map(|p| p.into_inner()), Some(b"{\"a\":1}".to_vec()));
    assert_eq!(out.status_code, 200);
    let out = lambda.invoke().function_name("fail").payload(blob.clone()).send().await.unwrap();
    assert_eq!(out.function_error.as_deref(), Some("Unhandled"));
    let arn = "arn:aws:lambda:us-east-1:000000000000:function:echo";
    let out = lambda
        .invoke()
        .function_name(arn)
        .invocation_type(aws_sdk_lambda::types::InvocationType::Event)
        .payload(blob)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status_code, 202);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_operation_not_modelled_is_named_in_its_error() {
    use aws_sdk_dynamodb::error::ProvideErrorMetadata;
    let aws = Aws::new(1, 0);
    let ddb = aws_sdk_dynamodb::Client::new(&aws.sdk_config());
    let e = ddb.describe_endpoints().send().await.unwrap_err();
    assert_eq!(e.code(), Some("UnknownOperationException"));
    assert!(e.message().unwrap_or_default().contains("DescribeEndpoints"), "{e:?}");
    let iam = aws_sdk_iam::Client::new(&aws.sdk_config());
    let e = iam.get_role().role_name("r").send().await.unwrap_err();
    assert_eq!(e.code(), Some("UnknownOperationException"), "{e:?}");
    assert!(e.message().unwrap_or_default().contains("GetRole"), "{e:?}");
}
