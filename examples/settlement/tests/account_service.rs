//! The fake account service keeps its own idempotency promise over real HTTP, and its fault
//! switches produce the "did it happen?" cases the toolkit has to handle.

use settlement_example::account_service::{AccountClient, AccountService, CreditRequest};
use std::time::Duration;
use sundial_idempotency::outbound::{CallError, FarSide, IdempotencyKey, Lookup};

fn credit(m: &str, amount: i64) -> CreditRequest {
    CreditRequest { merchant_id: m.into(), settle_date: "2026-11-30".into(), amount }
}

fn key(m: &str) -> IdempotencyKey {
    IdempotencyKey::for_item("settle", &[m, "2026-11-30"]).unwrap()
}

#[tokio::test]
async fn the_same_key_credits_once_and_returns_the_first_receipt() -> anyhow::Result<()> {
    // GIVEN a running service and a client
    let svc = AccountService::start().await?;
    let client = AccountClient::new(svc.url(), Duration::from_secs(5));

    // WHEN the same credit is sent three times under one key
    let r1 = client.submit(&key("m1"), &credit("m1", 500)).await?;
    let r2 = client.submit(&key("m1"), &credit("m1", 500)).await?;
    let r3 = client.submit(&key("m1"), &credit("m1", 500)).await?;

    // THEN one credit is booked and every answer is its receipt
    assert_eq!(svc.ledger().len(), 1);
    assert_eq!((&r1, &r1), (&r2, &r3));
    assert_eq!(client.ledger().await?, vec![r1.clone()]);
    // AND a lookup by key finds it; an unknown key is not found
    assert_eq!(client.lookup(&key("m1")).await?, Lookup::Found(r1));
    assert_eq!(client.lookup(&key("m2")).await?, Lookup::NotFound);
    Ok(())
}

#[tokio::test]
async fn a_key_reused_for_another_credit_is_rejected() -> anyhow::Result<()> {
    // GIVEN a credit applied under a key
    let svc = AccountService::start().await?;
    let client = AccountClient::new(svc.url(), Duration::from_secs(5));
    client.submit(&key("m1"), &credit("m1", 500)).await?;
    // WHEN the key comes back with another amount, or an invalid amount is sent
    let reused = client.submit(&key("m1"), &credit("m1", 999)).await;
    let invalid = client.submit(&key("m2"), &credit("m2", 0)).await;
    // THEN both are permanent rejections and nothing more is booked
    assert!(
        matches!(reused, Err(CallError::Rejected { ref code, .. }) if code == "KEY_REUSED"),
        "{reused:?}"
    );
    assert!(
        matches!(invalid, Err(CallError::Rejected { ref code, .. }) if code == "INVALID_AMOUNT"),
        "{invalid:?}"
    );
    assert_eq!(svc.ledger().len(), 1);
    Ok(())
}

#[tokio::test]
async fn a_dropped_response_is_no_answer_but_the_credit_happened() -> anyhow::Result<()> {
    // GIVEN a service that drops every response after applying the credit
    let svc = AccountService::start().await?;
    svc.faults().drop_every(1);
    let client = AccountClient::new(svc.url(), Duration::from_secs(5));

    // WHEN a credit is sent
    let res = client.submit(&key("m1"), &credit("m1", 500)).await;

    // THEN the client cannot tell what happened...
    assert!(matches!(res, Err(CallError::NoAnswer(_))), "{res:?}");
    assert_eq!(svc.faults().dropped(), 1);
    // ...but the credit was applied, and a lookup says so
    assert_eq!(svc.ledger().len(), 1);
    assert!(matches!(client.lookup(&key("m1")).await?, Lookup::Found(c) if c.amount == 500));

    // AND with lookups down as well, the lookup cannot say either
    svc.faults().lookups_down(true);
    assert!(matches!(client.lookup(&key("m1")).await, Err(CallError::NoAnswer(_))));
    Ok(())
}

#[tokio::test]
async fn a_service_that_is_not_listening_is_not_sent() -> anyhow::Result<()> {
    // GIVEN the address of a service that has stopped
    let url = AccountService::start().await?.url();
    let client = AccountClient::new(url, Duration::from_secs(5));
    // WHEN a credit is sent
    let res = client.submit(&key("m1"), &credit("m1", 500)).await;
    // THEN the client knows it never reached the far side (safe to retry)
    assert!(matches!(res, Err(CallError::NotSent(_))), "{res:?}");
    Ok(())
}
