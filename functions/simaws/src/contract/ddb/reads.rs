//! DynamoDB read cases: sparse index membership, Query ordering, paging (with index sort-key
//! ties), filters and counts, Scan paging, BatchGetItem.

use super::{item, key, n, s, with_table};
use crate::contract::{ensure, fail, Outcome};
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeValue as Av, KeysAndAttributes, Select};
use aws_sdk_dynamodb::Client;
use std::collections::HashMap;

fn sks_of(items: &[HashMap<String, Av>]) -> Vec<String> {
    items.iter().filter_map(|i| i.get("sk")?.as_s().ok().cloned()).collect()
}

pub(super) async fn put_range(ddb: &Client, t: &str, pk: &str, sks: &[&str]) -> Outcome {
    for (i, sk) in sks.iter().enumerate() {
        let i = item(pk, sk, &[("x", n(i as i64))]);
        ddb.put_item().table_name(t).set_item(Some(i)).send().await.map_err(fail("PutItem"))?;
    }
    Ok(())
}

pub(in crate::contract) async fn sparse_index(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        for (sk, g) in [("1", Some(30)), ("2", None), ("3", Some(10))] {
            let mut i = item("a", sk, &[]);
            if let Some(g) = g {
                i.extend([("gpk".to_string(), s("due")), ("gsk".to_string(), n(g))]);
            }
            ddb.put_item().table_name(&t).set_item(Some(i)).send().await.map_err(fail("PutItem"))?;
        }
        let q = || {
            ddb.query()
                .table_name(&t)
                .index_name("byG")
                .key_condition_expression("#g = :g AND #s <= :hi")
                .expression_attribute_names("#g", "gpk")
                .expression_attribute_names("#s", "gsk")
                .expression_attribute_values(":g", s("due"))
                .expression_attribute_values(":hi", n(100))
        };
        let sks = |items: &[HashMap<String, Av>]| -> Vec<String> {
            items.iter().filter_map(|i| i.get("sk")?.as_s().ok().cloned()).collect()
        };
        let out = q().send().await.map_err(fail("Query on the index"))?;
        ensure!(
            sks(out.items()) == ["3", "1"],
            "index holds {:?}, want [3, 1] (sparse, by gsk)",
            sks(out.items())
        );
        ddb.update_item()
            .table_name(&t)
            .set_key(Some(key("a", "3")))
            .update_expression("REMOVE #g")
            .expression_attribute_names("#g", "gpk")
            .send()
            .await
            .map_err(fail("UpdateItem REMOVE gpk"))?;
        let out = q().send().await.map_err(fail("Query on the index"))?;
        ensure!(
            sks(out.items()) == ["1"],
            "after REMOVE of its key the index still holds {:?}",
            sks(out.items())
        );
        let e = q().consistent_read(true).send().await.err().ok_or("a consistent read on a GSI succeeded")?;
        ensure!(e.code() == Some("ValidationException"), "consistent read on a GSI: {:?}", e.code());
        Ok(())
    })
    .await
}

pub(in crate::contract) async fn query_order_and_paging(
    sdk: &aws_config::SdkConfig,
    prefix: &str,
) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        put_range(&ddb, &t, "p", &["a#3", "a#1", "b#1", "a#2", "a#5", "a#4"]).await?;
        put_range(&ddb, &t, "other", &["a#0"]).await?;
        let q = |forward: bool| {
            ddb.query()
                .table_name(&t)
                .key_condition_expression("#pk = :p AND begins_with(#sk, :a)")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#sk", "sk")
                .expression_attribute_values(":p", s("p"))
                .expression_attribute_values(":a", s("a#"))
                .scan_index_forward(forward)
                .consistent_read(true)
        };
        let out = q(true).send().await.map_err(fail("Query begins_with"))?;
        ensure!(
            sks_of(out.items()) == ["a#1", "a#2", "a#3", "a#4", "a#5"],
            "begins_with ascending: {:?}",
            sks_of(out.items())
        );
        let out = q(false).send().await.map_err(fail("Query descending"))?;
        ensure!(
            sks_of(out.items()) == ["a#5", "a#4", "a#3", "a#2", "a#1"],
            "descending: {:?}",
            sks_of(out.items())
        );
        for forward in [true, false] {
            let (mut seen, mut start, mut pages) = (Vec::new(), None, 0);
            loop {
                let out = q(forward)
                    .limit(2)
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(fail("Query page"))?;
                ensure!(out.items().len() <= 2, "Limit 2 returned {} items", out.items().len());
                seen.extend(sks_of(out.items()));
                pages += 1;
                start = out.last_evaluated_key().cloned();
                if start.is_none() || pages > 5 {
                    break;
                }
            }
            let mut want = vec!["a#1", "a#2", "a#3", "a#4", "a#5"];
            if !forward {
                want.reverse();
            }
            ensure!(seen == want, "pages of 2 (forward {forward}) gave {seen:?}");
            ensure!(pages >= 3, "5 items in pages of 2 took {pages} pages");
        }
        Ok(())
    })
    .await
}

pub(in crate::contract) async fn query_filters_and_count(
    sdk: &aws_config::SdkConfig,
    prefix: &str,
) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        put_range(&ddb, &t, "p", &["1", "2", "3", "4"]).await?;
        let q = || {
            ddb.query()
                .table_name(&t)
                .key_condition_expression("#pk = :p")
                .filter_expression("#x IN (:a, :b) AND attribute_not_exists(#nope)")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#x", "x")
                .expression_attribute_names("#nope", "nope")
                .expression_attribute_values(":p", s("p"))
                .expression_attribute_values(":a", n(1))
                .expression_attribute_values(":b", n(3))
        };
        let out = q().send().await.map_err(fail("Query with a filter"))?;
        ensure!(sks_of(out.items()) == ["2", "4"], "filter IN: {:?}", sks_of(out.items()));
        ensure!(
            out.count() == 2 && out.scanned_count() == 4,
            "Count {} ScannedCount {}",
            out.count(),
            out.scanned_count()
        );
        let out = q().limit(2).send().await.map_err(fail("Query with a filter and Limit"))?;
        ensure!(
            out.scanned_count() == 2 && sks_of(out.items()) == ["2"],
            "Limit counts items read before the filter: {:?}",
            sks_of(out.items())
        );
        ensure!(out.last_evaluated_key().is_some(), "a page cut by Limit has no LastEvaluatedKey");
        let out = q().select(Select::Count).send().await.map_err(fail("Query Select COUNT"))?;
        ensure!(
            out.count() == 2 && out.items().is_empty(),
            "Select COUNT: count {} items {}",
            out.count(),
            out.items().len()
        );
        let out = ddb
            .query()
            .table_name(&t)
            .key_condition_expression("#pk = :p")
            .projection_expression("#sk, #x")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#sk", "sk")
            .expression_attribute_names("#x", "x")
            .expression_attribute_values(":p", s("p"))
            .send()
            .await
            .map_err(fail("Query with a projection"))?;
        ensure!(
            out.items().iter().all(|i| i.len() == 2 && !i.contains_key("pk")),
            "projection: {:?}",
            out.items().first()
        );
        Ok(())
    })
    .await
}

pub(in crate::contract) async fn batch_get(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        put_range(&ddb, &t, "p", &["1", "2", "3"]).await?;
        let keys = KeysAndAttributes::builder()
            .set_keys(Some(vec![key("p", "1"), key("p", "3"), key("p", "9")]))
            .projection_expression("#sk")
            .expression_attribute_names("#sk", "sk")
            .consistent_read(true)
            .build()
            .map_err(fail("KeysAndAttributes"))?;
        let out = ddb.batch_get_item().request_items(&t, keys).send().await.map_err(fail("BatchGetItem"))?;
        let mut got = out.responses().and_then(|r| r.get(&t)).map(|v| sks_of(v)).unwrap_or_default();
        got.sort();
        ensure!(got == ["1", "3"], "BatchGetItem found {got:?}, want [1, 3]");
        let unprocessed = out.unprocessed_keys().map_or(0, |u| u.len());
        ensure!(unprocessed == 0, "{unprocessed} tables of unprocessed keys for 3 keys");
        Ok(())
    })
    .await
}

/// Pages of one item through an index whose sort key ties: every item once, in a stable order.
pub(in crate::contract) async fn index_paging_with_ties(
    sdk: &aws_config::SdkConfig,
    prefix: &str,
) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        for sk in ["3", "1", "2", "4"] {
            let gsk = if sk == "4" { 20 } else { 10 };
            let i = item("a", sk, &[("gpk", s("due")), ("gsk", n(gsk))]);
            ddb.put_item().table_name(&t).set_item(Some(i)).send().await.map_err(fail("PutItem"))?;
        }
        let (mut seen, mut start, mut pages) = (Vec::new(), None, 0);
        loop {
            let out = ddb
                .query()
                .table_name(&t)
                .index_name("byG")
                .key_condition_expression("#g = :g AND #s >= :lo")
                .expression_attribute_names("#g", "gpk")
                .expression_attribute_names("#s", "gsk")
                .expression_attribute_values(":g", s("due"))
                .expression_attribute_values(":lo", n(10))
                .limit(1)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(fail("Query page on the index"))?;
            seen.extend(sks_of(out.items()));
            start = out.last_evaluated_key().cloned();
            if let Some(k) = &start {
                ensure!(
                    ["pk", "sk", "gpk", "gsk"].iter().all(|a| k.contains_key(*a)),
                    "an index page's LastEvaluatedKey {k:?}"
                );
            }
            pages += 1;
            if start.is_none() || pages > 8 {
                break;
            }
        }
        let mut tied = seen[..3.min(seen.len())].to_vec();
        tied.sort();
        ensure!(
            seen.len() == 4 && tied == ["1", "2", "3"] && seen[3] == "4",
            "index pages of 1 gave {seen:?}"
        );
        Ok(())
    })
    .await
}

/// A Scan in pages of 2 visits every item of every partition once.
pub(in crate::contract) async fn scan_paging(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        put_range(&ddb, &t, "p", &["1", "2", "3"]).await?;
        put_range(&ddb, &t, "q", &["1", "2"]).await?;
        let (mut seen, mut start, mut pages) = (Vec::new(), None, 0);
        loop {
            let out = ddb
                .scan()
                .table_name(&t)
                .limit(2)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(fail("Scan page"))?;
            ensure!(out.items().len() <= 2, "Scan Limit 2 returned {}", out.items().len());
            for i in out.items() {
                let pk = i.get("pk").and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
                seen.push(format!(
                    "{pk}/{}",
                    i.get("sk").and_then(|v| v.as_s().ok()).cloned().unwrap_or_default()
                ));
            }
            start = out.last_evaluated_key().cloned();
            pages += 1;
            if start.is_none() || pages > 8 {
                break;
            }
        }
        seen.sort();
        ensure!(seen == ["p/1", "p/2", "p/3", "q/1", "q/2"], "Scan pages visited {seen:?}");
        Ok(())
    })
    .await
}

/// `BETWEEN` and `<` on the sort key.
pub(in crate::contract) async fn query_key_ranges(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_table(sdk, prefix, |ddb, t| async move {
        put_range(&ddb, &t, "p", &["a#3", "a#1", "b#1", "a#2", "a#5", "a#4"]).await?;
        let out = ddb
            .query()
            .table_name(&t)
            .key_condition_expression("#pk = :p AND #sk BETWEEN :lo AND :hi")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#sk", "sk")
            .expression_attribute_values(":p", s("p"))
            .expression_attribute_values(":lo", s("a#2"))
            .expression_attribute_values(":hi", s("a#4"))
            .send()
            .await
            .map_err(fail("Query BETWEEN"))?;
        ensure!(sks_of(out.items()) == ["a#2", "a#3", "a#4"], "BETWEEN: {:?}", sks_of(out.items()));
        let out = ddb
            .query()
            .table_name(&t)
            .key_condition_expression("#pk = :p AND #sk < :hi")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#sk", "sk")
            .expression_attribute_values(":p", s("p"))
            .expression_attribute_values(":hi", s("a#2"))
            .send()
            .await
            .map_err(fail("Query <"))?;
        ensure!(sks_of(out.items()) == ["a#1"], "<: {:?}", sks_of(out.items()));
        Ok(())
    })
    .await
}
