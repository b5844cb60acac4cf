//! DynamoDB cases: conditional writes, update expressions, return values, sparse indexes,
//! transactions; the reads (indexes, Query, Scan, BatchGetItem) are in [`reads`].

mod reads;

pub(super) use reads::{
    batch_get, index_paging_with_ties, query_filters_and_count, query_key_ranges, query_order_and_paging,
    scan_paging, sparse_index,
};

use super::{ensure, fail, Outcome};
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue as Av, BillingMode, ConditionCheck, GlobalSecondaryIndex,
    KeySchemaElement, KeyType, Projection, ProjectionType, Put, ReturnValue,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;
use std::future::Future;

pub(super) fn s(v: &str) -> Av {
    Av::S(v.to_string())
}

pub(super) fn n(v: i64) -> Av {
    Av::N(v.to_string())
}

pub(super) fn key(pk: &str, sk: &str) -> HashMap<String, Av> {
    HashMap::from([("pk".to_string(), s(pk)), ("sk".to_string(), s(sk))])
}

pub(super) fn item(pk: &str, sk: &str, more: &[(&str, Av)]) -> HashMap<String, Av> {
    let mut i = key(pk, sk);
    i.extend(more.iter().map(|(k, v)| (k.to_string(), v.clone())));
    i
}

pub(super) fn num(i: Option<&HashMap<String, Av>>, a: &str) -> Option<i64> {
    i?.get(a)?.as_n().ok()?.parse().ok()
}

fn ks(name: &str, t: KeyType) -> Result<KeySchemaElement, String> {
    KeySchemaElement::builder().attribute_name(name).key_type(t).build().map_err(fail("KeySchemaElement"))
}

fn ad(name: &str, t: ScalarAttributeType) -> Result<AttributeDefinition, String> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(t)
        .build()
        .map_err(fail("AttributeDefinition"))
}

/// A table `pk` (S) + `sk` (S) with a sparse index `byG` on `gpk` (S) + `gsk` (N), projecting all.
async fn create_table(ddb: &Client, name: &str) -> Outcome {
    let gsi = GlobalSecondaryIndex::builder()
        .index_name("byG")
        .key_schema(ks("gpk", KeyType::Hash)?)
        .key_schema(ks("gsk", KeyType::Range)?)
        .projection(Projection::builder().projection_type(ProjectionType::All).build())
        .build()
        .map_err(fail("GlobalSecondaryIndex"))?;
    ddb.create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(ad("pk", ScalarAttributeType::S)?)
        .attribute_definitions(ad("sk", ScalarAttributeType::S)?)
        .attribute_definitions(ad("gpk", ScalarAttributeType::S)?)
        .attribute_definitions(ad("gsk", ScalarAttributeType::N)?)
        .key_schema(ks("pk", KeyType::Hash)?)
        .key_schema(ks("sk", KeyType::Range)?)
        .global_secondary_indexes(gsi)
        .send()
        .await
        .map_err(fail("CreateTable"))?;
    for _ in 0..100 {
        let d = ddb.describe_table().table_name(name).send().await.map_err(fail("DescribeTable"))?;
        if d.table().and_then(|t| t.table_status()).is_some_and(|s| s.as_str() == "ACTIVE") {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(format!("table {name} never became ACTIVE"))
}

/// Runs `body` on a fresh table, then deletes the table whatever happened.
pub(super) async fn with_table<'a, F, Fut>(sdk: &'a aws_config::SdkConfig, prefix: &str, body: F) -> Outcome
where
    F: FnOnce(Client, String) -> Fut,
    Fut: Future<Output = Outcome> + 'a,
{
    let ddb = Client::new(sdk);
    let name = format!("{prefix}t");
    create_table(&ddb, &name).await?;
    let out = body(ddb.clone(), name.clone()).await;
    let _ = ddb.delete_table().table_name(&name).send().await;
    out
}

pub(super) async fn conditional_put(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        let put = |v: i64| {
            ddb.put_item()
                .table_name(&t)
                .set_item(Some(item("a", "1", &[("v", n(v))])))
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", "pk")
        };
        put(1).send().await.map_err(fail("first conditional PutItem"))?;
        let e = put(2)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await
            .err()
            .ok_or("a second PutItem with attribute_not_exists(pk) succeeded")?;
        ensure!(
            e.code() == Some("ConditionalCheckFailedException"),
            "second put failed with {:?}, not ConditionalCheckFailed",
            e.code()
        );
        let old = match e.as_service_error() {
            Some(aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c)) => {
                c.item()
            }
            _ => None,
        };
        ensure!(
            num(old, "v") == Some(1),
            "ALL_OLD on condition failure returned {old:?}, not the item with v = 1"
        );
        let got = ddb
            .get_item()
            .table_name(&t)
            .set_key(Some(key("a", "1")))
            .consistent_read(true)
            .send()
            .await
            .map_err(fail("GetItem"))?;
        ensure!(
            num(got.item(), "v") == Some(1),
            "a failed conditional put changed the item: {:?}",
            got.item()
        );
        ddb.put_item()
            .table_name(&t)
            .set_item(Some(item("a", "1", &[("v", n(3))])))
            .condition_expression("attribute_not_exists(#tok) OR #v < :t")
            .expression_attribute_names("#tok", "tok")
            .expression_attribute_names("#v", "v")
            .expression_attribute_values(":t", n(2))
            .send()
            .await
            .map_err(fail("PutItem with attribute_not_exists(tok) OR v < 2"))?;
        Ok(())
    })
    .await
}

pub(super) async fn conditional_update_and_delete(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        ddb.put_item()
            .table_name(&t)
            .set_item(Some(item("a", "1", &[("st", s("open"))])))
            .send()
            .await
            .map_err(fail("PutItem"))?;
        let upd = |from: &str, to: &str| {
            ddb.update_item()
                .table_name(&t)
                .set_key(Some(key("a", "1")))
                .update_expression("SET #st = :to")
                .condition_expression("#st = :from")
                .expression_attribute_names("#st", "st")
                .expression_attribute_values(":from", s(from))
                .expression_attribute_values(":to", s(to))
        };
        upd("open", "done").send().await.map_err(fail("UpdateItem whose condition holds"))?;
        let e =
            upd("open", "again").send().await.err().ok_or("UpdateItem whose condition fails succeeded")?;
        ensure!(e.code() == Some("ConditionalCheckFailedException"), "failed update: {:?}", e.code());
        let e = ddb
            .update_item()
            .table_name(&t)
            .set_key(Some(key("a", "2")))
            .update_expression("SET #st = :v")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#st", "st")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_values(":v", s("x"))
            .send()
            .await
            .err()
            .ok_or("UpdateItem with attribute_exists(pk) created a missing item")?;
        ensure!(
            e.code() == Some("ConditionalCheckFailedException"),
            "update of a missing item: {:?}",
            e.code()
        );
        let del = |st: &str| {
            ddb.delete_item()
                .table_name(&t)
                .set_key(Some(key("a", "1")))
                .condition_expression("#st = :st")
                .expression_attribute_names("#st", "st")
                .expression_attribute_values(":st", s(st))
        };
        let e = del("open").send().await.err().ok_or("DeleteItem whose condition fails succeeded")?;
        ensure!(e.code() == Some("ConditionalCheckFailedException"), "failed delete: {:?}", e.code());
        del("done").send().await.map_err(fail("DeleteItem whose condition holds"))?;
        let got = ddb
            .get_item()
            .table_name(&t)
            .set_key(Some(key("a", "1")))
            .consistent_read(true)
            .send()
            .await
            .map_err(fail("GetItem"))?;
        ensure!(got.item().is_none(), "the item survived its delete");
        Ok(())
    })
    .await
}

pub(super) async fn update_expressions(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        let update = |expr: &str| ddb.update_item().table_name(&t).set_key(Some(key("a", "1"))).update_expression(expr);
        for _ in 0..2 {
            update("SET #c = if_not_exists(#c, :zero) + :one, #l = list_append(if_not_exists(#l, :empty), :item)")
                .expression_attribute_names("#c", "c")
                .expression_attribute_names("#l", "l")
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":empty", Av::L(vec![]))
                .expression_attribute_values(":item", Av::L(vec![s("x")]))
                .send()
                .await
                .map_err(fail("counter and list_append UpdateItem"))?;
        }
        update("SET #m = :m, #c = #c - :one ADD #n :five, #tags :tags REMOVE #gone")
            .expression_attribute_names("#m", "m")
            .expression_attribute_names("#c", "c")
            .expression_attribute_names("#n", "n")
            .expression_attribute_names("#tags", "tags")
            .expression_attribute_names("#gone", "gone")
            .expression_attribute_values(":m", Av::M(HashMap::from([("k0".to_string(), s("v0"))])))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":five", n(5))
            .expression_attribute_values(":tags", Av::Ss(vec!["p".into(), "q".into()]))
            .send()
            .await
            .map_err(fail("SET map, subtraction, ADD, REMOVE"))?;
        update("SET #m.#k = :v REMOVE #m.#k0 DELETE #tags :p")
            .expression_attribute_names("#m", "m")
            .expression_attribute_names("#k", "job@1700000000000")
            .expression_attribute_names("#k0", "k0")
            .expression_attribute_names("#tags", "tags")
            .expression_attribute_values(":v", n(7))
            .expression_attribute_values(":p", Av::Ss(vec!["p".into()]))
            .send()
            .await
            .map_err(fail("nested map SET / REMOVE and set DELETE"))?;
        let got = ddb.get_item().table_name(&t).set_key(Some(key("a", "1"))).consistent_read(true).send().await.map_err(fail("GetItem"))?;
        let i = got.item().ok_or("the updated item is missing")?;
        ensure!(num(Some(i), "c") == Some(1), "counter: {:?}, want 2 - 1 = 1", i.get("c"));
        ensure!(num(Some(i), "n") == Some(5), "ADD to a missing number: {:?}", i.get("n"));
        ensure!(i.get("l").and_then(|l| l.as_l().ok()).map(Vec::len) == Some(2), "list_append twice: {:?}", i.get("l"));
        let m = i.get("m").and_then(|m| m.as_m().ok()).ok_or("map m missing")?;
        ensure!(m.len() == 1 && num(Some(m), "job@1700000000000") == Some(7), "nested map after SET/REMOVE: {m:?}");
        ensure!(i.get("tags").and_then(|x| x.as_ss().ok()) == Some(&vec!["q".to_string()]), "set after ADD/DELETE: {:?}", i.get("tags"));
        let e = update("SET #c = #missing + :one")
            .expression_attribute_names("#c", "c")
            .expression_attribute_names("#missing", "missing")
            .expression_attribute_values(":one", n(1))
            .send()
            .await
            .err()
            .ok_or("arithmetic on a missing attribute succeeded")?;
        ensure!(e.code() == Some("ValidationException"), "arithmetic on a missing attribute: {:?}", e.code());
        Ok(())
    })
    .await
}

pub(super) async fn return_values(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        let put = ddb.put_item().table_name(&t).set_item(Some(item("a", "1", &[("v", n(1)), ("w", n(9))])));
        let out = put.return_values(ReturnValue::AllOld).send().await.map_err(fail("PutItem ALL_OLD"))?;
        ensure!(out.attributes().is_none(), "ALL_OLD of a new item: {:?}", out.attributes());
        let upd = |rv: ReturnValue| {
            ddb.update_item()
                .table_name(&t)
                .set_key(Some(key("a", "1")))
                .update_expression("SET #v = #v + :one")
                .expression_attribute_names("#v", "v")
                .expression_attribute_values(":one", n(1))
                .return_values(rv)
        };
        let o = upd(ReturnValue::AllNew).send().await.map_err(fail("UpdateItem ALL_NEW"))?;
        ensure!(
            num(o.attributes(), "v") == Some(2) && num(o.attributes(), "w") == Some(9),
            "ALL_NEW: {:?}",
            o.attributes()
        );
        let o = upd(ReturnValue::UpdatedNew).send().await.map_err(fail("UpdateItem UPDATED_NEW"))?;
        ensure!(
            num(o.attributes(), "v") == Some(3) && o.attributes().is_some_and(|a| a.len() == 1),
            "UPDATED_NEW: {:?}",
            o.attributes()
        );
        let o = upd(ReturnValue::UpdatedOld).send().await.map_err(fail("UpdateItem UPDATED_OLD"))?;
        ensure!(
            num(o.attributes(), "v") == Some(3) && o.attributes().is_some_and(|a| a.len() == 1),
            "UPDATED_OLD: {:?}",
            o.attributes()
        );
        let o = upd(ReturnValue::AllOld).send().await.map_err(fail("UpdateItem ALL_OLD"))?;
        ensure!(num(o.attributes(), "v") == Some(4), "ALL_OLD: {:?}", o.attributes());
        let o = ddb
            .delete_item()
            .table_name(&t)
            .set_key(Some(key("a", "1")))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(fail("DeleteItem ALL_OLD"))?;
        ensure!(num(o.attributes(), "v") == Some(5), "DeleteItem ALL_OLD: {:?}", o.attributes());
        Ok(())
    })
    .await
}

/// A Put, an Update of a counter and a check that `gate.v = want`, as one transaction.
fn gate_actions(t: &str, want: i64) -> Result<Vec<TransactWriteItem>, String> {
    let put =
        Put::builder().table_name(t).set_item(Some(item("a", "new", &[]))).build().map_err(fail("Put"))?;
    let upd = Update::builder()
        .table_name(t)
        .set_key(Some(key("a", "counter")))
        .update_expression("SET #c = if_not_exists(#c, :z) + :one")
        .expression_attribute_names("#c", "c")
        .expression_attribute_values(":z", n(0))
        .expression_attribute_values(":one", n(1))
        .build()
        .map_err(fail("Update"))?;
    let check = ConditionCheck::builder()
        .table_name(t)
        .set_key(Some(key("a", "gate")))
        .condition_expression("#v = :want")
        .expression_attribute_names("#v", "v")
        .expression_attribute_values(":want", n(want))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(fail("ConditionCheck"))?;
    Ok(vec![
        TransactWriteItem::builder().put(put).build(),
        TransactWriteItem::builder().update(upd).build(),
        TransactWriteItem::builder().condition_check(check).build(),
    ])
}

pub(super) async fn transactions(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        ddb.put_item()
            .table_name(&t)
            .set_item(Some(item("a", "gate", &[("v", n(1))])))
            .send()
            .await
            .map_err(fail("PutItem"))?;
        let actions = |want: i64| gate_actions(&t, want);
        let e = ddb
            .transact_write_items()
            .set_transact_items(Some(actions(2)?))
            .send()
            .await
            .err()
            .ok_or("a transaction whose check fails committed")?;
        ensure!(e.code() == Some("TransactionCanceledException"), "cancelled transaction: {:?}", e.code());
        let reasons = match e.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                c.cancellation_reasons().to_vec()
            }
            _ => Vec::new(),
        };
        let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("")).collect();
        ensure!(codes == ["None", "None", "ConditionalCheckFailed"], "cancellation reasons {codes:?}");
        let old = reasons.get(2).and_then(|r| r.item());
        ensure!(num(old, "v") == Some(1), "ALL_OLD of the failed check: {old:?}");
        let got = ddb
            .get_item()
            .table_name(&t)
            .set_key(Some(key("a", "new")))
            .consistent_read(true)
            .send()
            .await
            .map_err(fail("GetItem"))?;
        ensure!(got.item().is_none(), "a cancelled transaction applied its Put");
        ddb.transact_write_items()
            .set_transact_items(Some(actions(1)?))
            .send()
            .await
            .map_err(fail("TransactWriteItems"))?;
        let got = ddb
            .get_item()
            .table_name(&t)
            .set_key(Some(key("a", "counter")))
            .consistent_read(true)
            .send()
            .await
            .map_err(fail("GetItem"))?;
        ensure!(num(got.item(), "c") == Some(1), "the committed transaction's Update: {:?}", got.item());
        Ok(())
    })
    .await
}

/// A retried transaction (same client request token, same request: what the SDK sends after a
/// lost response) succeeds without applying twice; the token with another request is refused.
pub(super) async fn transaction_tokens(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        let bump = |by: i64| -> Result<Vec<TransactWriteItem>, String> {
            let upd = Update::builder()
                .table_name(&t)
                .set_key(Some(key("a", "c")))
                .update_expression("ADD #c :by")
                .expression_attribute_names("#c", "c")
                .expression_attribute_values(":by", n(by))
                .build()
                .map_err(fail("Update"))?;
            Ok(vec![TransactWriteItem::builder().update(upd).build()])
        };
        let token = format!("{prefix}token");
        for attempt in 0..2 {
            ddb.transact_write_items()
                .set_transact_items(Some(bump(1)?))
                .client_request_token(&token)
                .send()
                .await
                .map_err(|e| format!("attempt {attempt}: {}", fail("TransactWriteItems")(e)))?;
        }
        let got = ddb
            .get_item()
            .table_name(&t)
            .set_key(Some(key("a", "c")))
            .consistent_read(true)
            .send()
            .await
            .map_err(fail("GetItem"))?;
        ensure!(
            num(got.item(), "c") == Some(1),
            "a transaction retried with its token applied twice: {:?}",
            got.item()
        );
        let e = ddb
            .transact_write_items()
            .set_transact_items(Some(bump(5)?))
            .client_request_token(&token)
            .send()
            .await
            .err()
            .ok_or("a token reused for another request was accepted")?;
        ensure!(e.code() == Some("IdempotentParameterMismatchException"), "token reuse: {:?}", e.code());
        Ok(())
    })
    .await
}

/// An item over 400 KB is refused, an item just under is stored.
pub(super) async fn item_size_limit(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        let big = item("a", "1", &[("blob", s(&"x".repeat(410 * 1024)))]);
        let e = ddb
            .put_item()
            .table_name(&t)
            .set_item(Some(big))
            .send()
            .await
            .err()
            .ok_or("a 410 KB item was stored")?;
        ensure!(e.code() == Some("ValidationException"), "a 410 KB item: {:?}", e.code());
        let fits = item("a", "2", &[("blob", s(&"x".repeat(390 * 1024)))]);
        ddb.put_item().table_name(&t).set_item(Some(fits)).send().await.map_err(fail("PutItem of 390 KB"))?;
        Ok(())
    })
    .await
}

/// Two actions on one item in one transaction are refused.
pub(super) async fn transaction_refuses_two_actions_on_one_item(
    sdk: &aws_config::SdkConfig,
    prefix: &str,
) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        let twice = vec![
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&t)
                        .set_item(Some(item("a", "x", &[])))
                        .build()
                        .map_err(fail("Put"))?,
                )
                .build(),
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&t)
                        .set_item(Some(item("a", "x", &[])))
                        .build()
                        .map_err(fail("Put"))?,
                )
                .build(),
        ];
        let e = ddb
            .transact_write_items()
            .set_transact_items(Some(twice))
            .send()
            .await
            .err()
            .ok_or("two actions on one item committed")?;
        ensure!(e.code() == Some("ValidationException"), "two actions on one item: {:?}", e.code());
        Ok(())
    })
    .await
}
