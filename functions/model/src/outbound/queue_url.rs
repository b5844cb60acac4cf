//! SQS queue URLs, parsed strictly into region, account and name: the queue judged is the queue
//! SQS uses, whatever parser reads the URL next.

use super::address::unwrap_v4;
use super::{invalid, AddressPolicy, Home, Refusal};
use crate::arn::{is_region, partition_of};
use std::net::IpAddr;

/// An SQS queue named by a URL that [`parse_queue_url`] accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRef {
    /// `aws`, `aws-cn` or `aws-us-gov`.
    pub partition: &'static str,
    /// The region; empty for an emulator URL that names none in a deployment whose region is
    /// unknown.
    pub region: String,
    /// The 12-digit account id.
    pub account: String,
    /// The queue name (with `.fifo`, if any).
    pub name: String,
}

impl QueueRef {
    /// `arn:<partition>:sqs:<region>:<account>:<name>`, what the `sqs` globs are matched with.
    pub fn arn(&self) -> String {
        format!("arn:{}:sqs:{}:{}:{}", self.partition, self.region, self.account, self.name)
    }
}

const QUEUE_URL_SHAPE: &str =
    "must be an SQS queue URL https://sqs.<region>.amazonaws.com/<account>/<name>, without query, fragment, credentials or escapes";

/// Parses a queue URL strictly into (region, account, name), so that the allowlist judges the
/// queue SQS will use and not text a second parser may read differently: `https://` only, no
/// query, fragment, userinfo, percent escapes or dot segments, exactly `/<account>/<name>`,
/// on `sqs.<region>.amazonaws.com[.cn]` or `<region>.queue.amazonaws.com`. Under the dev
/// setting (`SUNDIAL_DEV_LOOPBACK_TARGETS`) a loopback host (`127.0.0.1`, `localhost`,
/// `*.localhost.localstack.cloud`) with the same path is an emulator's queue, over plain
/// `http://` too, and any port.
pub fn parse_queue_url(url: &str, addresses: &AddressPolicy, home: &Home) -> Result<QueueRef, Refusal> {
    let bad = || invalid("target.queueUrl", QUEUE_URL_SHAPE);
    // Refused as text first: the URI parser would drop or keep them, SQS might read them.
    if url.len() > 2048
        || url.bytes().any(|b| !b.is_ascii_graphic() || matches!(b, b'?' | b'#' | b'%' | b'@' | b'\\'))
    {
        return Err(bad());
    }
    let uri: http::Uri = url.parse().map_err(|_| bad())?;
    let host = uri.host().ok_or_else(bad)?.to_ascii_lowercase();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let emulator = addresses.dev_loopback && is_loopback_host(host);
    match (uri.scheme_str(), uri.port_u16()) {
        (Some("https"), None | Some(443)) => {}
        (Some("http" | "https"), _) if emulator => {}
        _ => return Err(bad()),
    }
    let (account, name) = uri.path().strip_prefix('/').and_then(|p| p.split_once('/')).ok_or_else(bad)?;
    let name_ok = !name.is_empty()
        && name.len() <= 80
        && name
            .strip_suffix(".fifo")
            .unwrap_or(name)
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) || !name_ok {
        return Err(bad());
    }
    let (partition, region) = if emulator {
        let named = host.strip_prefix("sqs.").and_then(|h| h.strip_suffix(".localhost.localstack.cloud"));
        match named.filter(|r| is_region(r)) {
            Some(r) => (partition_of(r), r.to_string()),
            None => (home.partition(), home.region.clone().unwrap_or_default()),
        }
    } else {
        aws_queue_host_region(host).ok_or_else(bad)?
    };
    Ok(QueueRef { partition, region, account: account.to_string(), name: name.to_string() })
}

/// The partition and region of an SQS endpoint host, if it is one.
fn aws_queue_host_region(host: &str) -> Option<(&'static str, String)> {
    let region = if let Some(cn) = host.strip_prefix("sqs.").and_then(|h| h.strip_suffix(".amazonaws.com.cn"))
    {
        Some(cn).filter(|r| r.starts_with("cn-"))
    } else {
        host.strip_prefix("sqs.")
            .and_then(|h| h.strip_suffix(".amazonaws.com"))
            .or_else(|| host.strip_suffix(".queue.amazonaws.com"))
            .filter(|r| !r.starts_with("cn-"))
    }?;
    is_region(region).then(|| (partition_of(region), region.to_string()))
}

/// A host that can only be this machine: a loopback address, `localhost`, or LocalStack's
/// public names for 127.0.0.1.
fn is_loopback_host(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok_and(|ip| unwrap_v4(ip).is_loopback())
        || host == "localhost"
        || host.ends_with(".localhost")
        || host == "localhost.localstack.cloud"
        || host.ends_with(".localhost.localstack.cloud")
}
