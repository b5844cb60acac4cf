//! Secrets Manager, Lambda and EventBridge cases.

use super::{ensure, fail, is_simulator, Outcome, ECHO};
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_secretsmanager::types::Tag;

pub(super) async fn secrets(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let sm = aws_sdk_secretsmanager::Client::new(sdk);
    let name = format!("{prefix}secret");
    let tag = |k: &str, v: &str| Tag::builder().key(k).value(v).build();
    let created = sm
        .create_secret()
        .name(&name)
        .secret_string("s3cr3t")
        .tags(tag("sundial:tenant", "t1"))
        .send()
        .await
        .map_err(fail("CreateSecret"))?;
    let arn = created.arn().ok_or("CreateSecret returned no ARN")?.to_string();
    let out = async {
        let v = sm.get_secret_value().secret_id(&arn).send().await.map_err(fail("GetSecretValue by ARN"))?;
        ensure!(v.secret_string() == Some("s3cr3t"), "GetSecretValue: {:?}", v.secret_string());
        let v =
            sm.get_secret_value().secret_id(&name).send().await.map_err(fail("GetSecretValue by name"))?;
        ensure!(v.arn() == Some(arn.as_str()), "by name, ARN {:?} vs {arn}", v.arn());
        sm.tag_resource().secret_id(&arn).tags(tag("team", "x")).send().await.map_err(fail("TagResource"))?;
        let d = sm.describe_secret().secret_id(&arn).send().await.map_err(fail("DescribeSecret"))?;
        let mut tags: Vec<(String, String)> = d
            .tags()
            .iter()
            .map(|t| (t.key().unwrap_or("").to_string(), t.value().unwrap_or("").to_string()))
            .collect();
        tags.sort();
        let want = [("sundial:tenant".to_string(), "t1".to_string()), ("team".to_string(), "x".to_string())];
        ensure!(tags == want, "DescribeSecret tags {tags:?}");
        let e = sm
            .get_secret_value()
            .secret_id(format!("{prefix}none"))
            .send()
            .await
            .err()
            .ok_or("a missing secret was found")?;
        ensure!(
            e.as_service_error().is_some_and(|s| s.is_resource_not_found_exception()),
            "missing secret: {e:?}"
        );
        Ok(())
    }
    .await;
    let _ = sm.delete_secret().secret_id(&arn).force_delete_without_recovery(true).send().await;
    out
}

/// Needs a function that runs: on the simulator the test's echo handler; on an emulator
/// creating one needs a runtime (Docker), so the case reports the skip and passes.
pub(super) async fn lambda_invoke(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    if !is_simulator(sdk) {
        eprintln!(
            "contract lambda_invoke: skipped on an emulator (invoking needs a function the emulator can run)"
        );
        return Ok(());
    }
    let lambda = aws_sdk_lambda::Client::new(sdk);
    let f = format!("{prefix}{ECHO}");
    let out = lambda
        .invoke()
        .function_name(&f)
        .payload(Blob::new(b"{\"n\":1}".to_vec()))
        .send()
        .await
        .map_err(fail("Invoke"))?;
    ensure!(
        out.status_code() == 200 && out.function_error().is_none(),
        "Invoke: {} {:?}",
        out.status_code(),
        out.function_error()
    );
    ensure!(
        out.payload().map(|p| p.as_ref()) == Some(b"{\"n\":1}".as_slice()),
        "Invoke echoed {:?}",
        out.payload()
    );
    let out = lambda
        .invoke()
        .function_name(&f)
        .payload(Blob::new(b"\"fail\"".to_vec()))
        .send()
        .await
        .map_err(fail("Invoke"))?;
    ensure!(
        out.function_error() == Some("Unhandled"),
        "a failing handler: FunctionError {:?}",
        out.function_error()
    );
    let out = lambda
        .invoke()
        .function_name(format!("arn:aws:lambda:us-east-1:000000000000:function:{f}"))
        .invocation_type(aws_sdk_lambda::types::InvocationType::Event)
        .payload(Blob::new(b"{}".to_vec()))
        .send()
        .await
        .map_err(fail("Invoke Event"))?;
    ensure!(out.status_code() == 202, "an Event invoke answered {}", out.status_code());
    let e = lambda
        .get_function()
        .function_name(format!("{prefix}none"))
        .send()
        .await
        .err()
        .ok_or("GetFunction found a missing function")?;
    ensure!(
        e.as_service_error().is_some_and(|s| s.is_resource_not_found_exception()),
        "GetFunction of a missing function: {e:?}"
    );
    Ok(())
}

pub(super) async fn put_events(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let eb = aws_sdk_eventbridge::Client::new(sdk);
    let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
        .source(format!("{prefix}sundial"))
        .detail_type("FireMissed")
        .detail("{\"job\":\"j1\"}")
        .event_bus_name("default")
        .build();
    let out = eb.put_events().entries(entry).send().await.map_err(fail("PutEvents"))?;
    ensure!(out.failed_entry_count() == 0, "PutEvents: {} failed entries", out.failed_entry_count());
    ensure!(
        out.entries().len() == 1 && out.entries()[0].event_id().is_some(),
        "PutEvents entries {:?}",
        out.entries()
    );
    Ok(())
}
