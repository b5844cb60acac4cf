//! Verifying a Sundial webhook before trusting anything in it.
//!
//! Sundial signs every webhook per the Standard Webhooks convention
//! (<https://www.standardwebhooks.com>): `webhook-id` (the execution id, the same on every retry),
//! `webhook-timestamp` (unix seconds) and `webhook-signature`, one or more space-separated
//! `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`. The job's signing secret is
//! `whsec_<base64 key>`; during a rotation Sundial signs with two keys and a receiver may know
//! one or both.
//!
//! **Verify first.** `X-Sundial-Fencing-Token`, `Idempotency-Key`, and the body's `executionId`
//! and `fencingToken` are only as trustworthy as the request: anyone who can reach the endpoint
//! can send a fencing token of `u64::MAX` and, if it were believed, fence out every real worker
//! from a [`crate::fence`]d resource. Call [`verify`] on the raw body bytes (before any JSON
//! parsing or re-encoding), and take the execution id and fencing token from the *verified*
//! body, never from headers alone.
//!
//! ```
//! use sundial_idempotency::webhook::{verify, Headers, DEFAULT_TOLERANCE_SECS};
//! # let (secret, body, id, ts, sig) = sundial_idempotency::webhook::example();
//! let headers = Headers { id: &id, timestamp: &ts, signature: &sig };
//! let now = ts.parse::<i64>().unwrap_or_default(); // your clock's unix seconds
//! let verified = verify(&[&secret], &headers, body.as_bytes(), now, DEFAULT_TOLERANCE_SECS);
//! assert!(verified.is_ok());
//! ```

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// How far `webhook-timestamp` may be from the receiver's clock (seconds): five minutes, as the
/// convention recommends. Bounds how long a captured request can be replayed.
pub const DEFAULT_TOLERANCE_SECS: i64 = 5 * 60;

/// The three signature headers, as received (header names are case-insensitive: look them up
/// however your framework does).
#[derive(Debug, Clone, Copy)]
pub struct Headers<'a> {
    /// `webhook-id`.
    pub id: &'a str,
    /// `webhook-timestamp`.
    pub timestamp: &'a str,
    /// `webhook-signature`.
    pub signature: &'a str,
}

/// A verified request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The message id (Sundial's execution id): deduplicate by it.
    pub id: String,
    /// The signed timestamp (unix seconds).
    pub timestamp: i64,
    /// Which of the given secrets verified (its index), e.g. to tell when the old one of a
    /// rotation is no longer used.
    pub secret_index: usize,
}

/// Why a request was refused. Answer every one with 401 (and do not act on the body).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A secret is not `whsec_<base64>` (a configuration error of the receiver).
    #[error("a configured secret is not whsec_<base64 key>")]
    BadSecret,
    /// `webhook-id` is empty.
    #[error("webhook-id is missing")]
    MissingId,
    /// `webhook-timestamp` is not an integer.
    #[error("webhook-timestamp is not unix seconds")]
    BadTimestamp,
    /// The timestamp is outside the tolerance (a replay, or a clock far off).
    #[error("webhook-timestamp is {skew_secs} s from now (tolerance {tolerance_secs} s)")]
    Stale {
        /// Signed timestamp minus now.
        skew_secs: i64,
        /// The tolerance.
        tolerance_secs: i64,
    },
    /// No `v1` signature matched any secret.
    #[error("no webhook-signature matches")]
    NoMatch,
}

fn key_of(secret: &str) -> Result<Vec<u8>, VerifyError> {
    // The convention's libraries accept the key with or without its prefix.
    let b64 = secret.strip_prefix("whsec_").unwrap_or(secret);
    let key = B64.decode(b64).map_err(|_| VerifyError::BadSecret)?;
    if key.is_empty() {
        return Err(VerifyError::BadSecret);
    }
    Ok(key)
}

/// Verifies a webhook: the timestamp is within `tolerance_secs` of `now` (unix seconds), and
/// one of its `v1` signatures is the HMAC of `"{id}.{timestamp}.{body}"` under one of `secrets`.
/// Comparisons are constant-time. `body` is the raw request body.
pub fn verify(
    secrets: &[&str],
    headers: &Headers<'_>,
    body: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<Verified, VerifyError> {
    let keys = secrets.iter().map(|s| key_of(s)).collect::<Result<Vec<_>, _>>()?;
    if headers.id.is_empty() {
        return Err(VerifyError::MissingId);
    }
    let ts: i64 = headers.timestamp.trim().parse().map_err(|_| VerifyError::BadTimestamp)?;
    let skew = ts.saturating_sub(now);
    if skew.abs() > tolerance_secs {
        return Err(VerifyError::Stale { skew_secs: skew, tolerance_secs });
    }
    let signed = [headers.id.as_bytes(), b".", ts.to_string().as_bytes(), b".", body].concat();
    // Every candidate is decoded up front; a malformed one is skipped, not an error, since a
    // sender may add versions this receiver does not know.
    let candidates: Vec<Vec<u8>> = headers
        .signature
        .split_whitespace()
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|b64| B64.decode(b64).ok())
        .collect();
    for (i, key) in keys.iter().enumerate() {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).map_err(|_| VerifyError::BadSecret)?;
        mac.update(&signed);
        for c in &candidates {
            // `verify_slice` compares in constant time.
            if mac.clone().verify_slice(c).is_ok() {
                return Ok(Verified { id: headers.id.to_string(), timestamp: ts, secret_index: i });
            }
        }
    }
    Err(VerifyError::NoMatch)
}

/// A signed example request for documentation: (secret, body, id, timestamp, signature).
#[doc(hidden)]
pub fn example() -> (String, String, String, String, String) {
    (
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
        r#"{"test": 2432232314}"#.into(),
        "msg_p5jXN8AQM9LWM0D4loKWxJek".into(),
        "1614265330".into(),
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The Standard Webhooks reference library's test vector
    // (standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts).
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: &str = "1614265330";
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    const NOW: i64 = 1_614_265_330;
    const OTHER: &str = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

    fn h(sig: &str) -> Headers<'_> {
        Headers { id: ID, timestamp: TS, signature: sig }
    }

    #[test]
    fn the_published_test_vector_verifies() {
        let v = verify(&[SECRET], &h(SIG), BODY, NOW, DEFAULT_TOLERANCE_SECS);
        assert_eq!(v, Ok(Verified { id: ID.into(), timestamp: NOW, secret_index: 0 }));
        // also with the bare key, as the convention's libraries accept
        assert!(verify(&["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], &h(SIG), BODY, NOW, 300).is_ok());
    }

    #[test]
    fn any_change_to_body_id_or_timestamp_is_refused() {
        assert_eq!(
            verify(&[SECRET], &h(SIG), br#"{"test": 2432232315}"#, NOW, 300),
            Err(VerifyError::NoMatch)
        );
        let other_id = Headers { id: "msg_other", ..h(SIG) };
        assert_eq!(verify(&[SECRET], &other_id, BODY, NOW, 300), Err(VerifyError::NoMatch));
        let other_ts = Headers { timestamp: "1614265331", ..h(SIG) };
        assert_eq!(verify(&[SECRET], &other_ts, BODY, NOW, 300), Err(VerifyError::NoMatch));
        assert_eq!(verify(&[OTHER], &h(SIG), BODY, NOW, 300), Err(VerifyError::NoMatch));
        assert_eq!(verify(&[SECRET], &h("v1,"), BODY, NOW, 300), Err(VerifyError::NoMatch));
        assert_eq!(verify(&[SECRET], &h(&SIG[..8]), BODY, NOW, 300), Err(VerifyError::NoMatch));
        assert_eq!(verify(&[SECRET], &h(""), BODY, NOW, 300), Err(VerifyError::NoMatch));
    }

    #[test]
    fn timestamps_outside_the_tolerance_are_refused_both_ways() {
        let tol = DEFAULT_TOLERANCE_SECS;
        assert!(verify(&[SECRET], &h(SIG), BODY, NOW + tol, tol).is_ok());
        assert!(matches!(
            verify(&[SECRET], &h(SIG), BODY, NOW + tol + 1, tol),
            Err(VerifyError::Stale { .. })
        ));
        assert!(matches!(
            verify(&[SECRET], &h(SIG), BODY, NOW - tol - 1, tol),
            Err(VerifyError::Stale { .. })
        ));
        let bad = Headers { timestamp: "hello", ..h(SIG) };
        assert_eq!(verify(&[SECRET], &bad, BODY, NOW, tol), Err(VerifyError::BadTimestamp));
        let no_id = Headers { id: "", ..h(SIG) };
        assert_eq!(verify(&[SECRET], &no_id, BODY, NOW, tol), Err(VerifyError::MissingId));
    }

    #[test]
    fn one_matching_signature_among_several_is_enough_and_unknown_versions_are_skipped() {
        let sigs = format!("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,abc v1,!!! {SIG}");
        assert!(verify(&[SECRET], &h(&sigs), BODY, NOW, 300).is_ok());
    }

    #[test]
    fn during_a_rotation_either_secret_verifies_and_the_index_says_which() {
        let v = verify(&[OTHER, SECRET], &h(SIG), BODY, NOW, 300);
        assert_eq!(v.map(|v| v.secret_index), Ok(1));
        assert_eq!(verify(&["not base64!"], &h(SIG), BODY, NOW, 300), Err(VerifyError::BadSecret));
    }

    #[test]
    fn signatures_of_the_sundial_worker_verify_round_trip() {
        // The worker's signer (sundial_core) and this verifier are separate implementations.
        use sundial_core::execution::target::signing::{sign, SigningKey};
        let keys = SigningKey::parse_all(&format!("{SECRET}\n{OTHER}")).unwrap_or_else(|e| panic!("{e}"));
        let body = br#"{"executionId":"acme:nightly@1764469800000","fencingToken":7}"#;
        let id = "acme:nightly@1764469800000";
        let sig = sign(&keys, id, NOW, body);
        let h = Headers { id, timestamp: &NOW.to_string(), signature: &sig };
        for secret in [SECRET, OTHER] {
            assert!(verify(&[secret], &h, body, NOW, DEFAULT_TOLERANCE_SECS).is_ok(), "{secret}");
        }
        // the published vector, through the worker's signer
        let one = SigningKey::parse_all(SECRET).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sign(&one, ID, NOW, BODY), SIG);
    }
}
