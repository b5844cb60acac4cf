//! The retry loop and the pager against a scripted server.

use super::{idempotency_key, Client, TENANT_HEADER};
use crate::auth::Auth;
use crate::page::ListJobs;
use crate::retry::Clock;
use crate::types::BackfillRequest;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A clock that records the waits asked for and returns at once.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<Duration>>);

impl Clock for Recorder {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_119_200)
    }
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(d);
        Box::pin(async {})
    }
}

/// A server that answers the given raw responses in turn (`""` drops the connection) and
/// records each request's head.
async fn scripted(answers: Vec<&'static str>, heads: Arc<Mutex<Vec<String>>>) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let url = format!("http://{}", l.local_addr().unwrap_or_else(|e| panic!("{e}")));
    tokio::spawn(async move {
        for answer in answers {
            let Ok((mut s, _)) = l.accept().await else { return };
            let mut buf = vec![0u8; 16384];
            let n = s.read(&mut buf).await.unwrap_or(0);
            heads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase());
            let _ = s.write_all(answer.as_bytes()).await;
        }
    });
    url
}

fn json_answer(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| l.strip_prefix(&format!("{name}: "))).map(str::trim)
}

const UNAVAILABLE: &str = r#"{"error":{"code":"unavailable","message":"x","field":null}}"#;

#[tokio::test]
async fn creating_requests_retry_429_and_503_with_one_idempotency_key_and_wait_as_told() {
    // GIVEN an API that answers 503 (Retry-After: 1), drops a connection, answers 429 with an
    // HTTP-date 5 s ahead, then 202
    let heads = Arc::new(Mutex::new(Vec::new()));
    let url = scripted(
        vec![
            leak(json_answer("503 Service Unavailable", "retry-after: 1\r\n", UNAVAILABLE)),
            "",
            leak(json_answer(
                "429 Too Many Requests",
                "retry-after: Tue, 01 Dec 2026 10:00:05 GMT\r\n",
                r#"{"error":{"code":"rate_limited","message":"x","field":null}}"#,
            )),
            leak(json_answer(
                "202 Accepted",
                "",
                r#"{"fires":1,"created":1,"existing":0,"lastStartAt":null}"#,
            )),
        ],
        heads.clone(),
    )
    .await;
    let clock = Arc::new(Recorder::default());
    let notices = Arc::new(Mutex::new(Vec::new()));
    let n2 = notices.clone();
    let c = Client::builder(url)
        .clock(clock.clone())
        .on_retry(move |n| n2.lock().unwrap_or_else(|e| e.into_inner()).push(n.attempts))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // WHEN a backfill is sent
    let req = BackfillRequest {
        from: chrono::DateTime::UNIX_EPOCH,
        to: chrono::DateTime::UNIX_EPOCH,
        pace_secs: None,
        params: None,
    };
    let report = c.backfill_job("j", &req).await.unwrap_or_else(|e| panic!("{e}"));
    // THEN the fourth attempt succeeds, every attempt carrying the same key
    assert_eq!(report.created, 1);
    let heads = heads.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let keys: Vec<_> =
        heads.iter().map(|h| header(h, "idempotency-key").unwrap_or_default().to_string()).collect();
    assert_eq!(keys.len(), 4, "{heads:?}");
    assert!(!keys[0].is_empty() && keys.iter().all(|k| k == &keys[0]), "{keys:?}");
    // AND it waited what each answer asked for: 1 s, backoff after the drop, the date's 5 s
    let waits = clock.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(waits, [Duration::from_secs(1), Duration::from_secs(1), Duration::from_secs(5)]);
    assert_eq!(*notices.lock().unwrap_or_else(|e| e.into_inner()), [1, 2, 3]);
    // AND another call gets another key
    assert_ne!(idempotency_key(), idempotency_key());
}

#[tokio::test]
async fn a_pause_is_not_repeated_after_a_503_and_the_error_is_typed() {
    // GIVEN an API that answers 503 to a pause
    let heads = Arc::new(Mutex::new(Vec::new()));
    let url = scripted(
        vec![leak(json_answer("503 Service Unavailable", "retry-after: 1\r\n", UNAVAILABLE))],
        heads.clone(),
    )
    .await;
    let c =
        Client::builder(url).clock(Arc::new(Recorder::default())).build().unwrap_or_else(|e| panic!("{e}"));
    // WHEN paused
    let err = c.pause_job("j", None).await.err().unwrap_or_else(|| panic!("a 503 is an error"));
    // THEN one attempt, and the error says what the API said
    assert_eq!(heads.lock().unwrap_or_else(|e| e.into_inner()).len(), 1);
    let api = err.api().unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        (api.status, api.code.as_str(), api.retry_after),
        (503, "unavailable", Some(Duration::from_secs(1)))
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_pager_follows_next_cursor_to_the_end() {
    // GIVEN a list of three pages
    let heads = Arc::new(Mutex::new(Vec::new()));
    let page = |items: &str, next: &str| {
        leak(json_answer("200 OK", "", &format!(r#"{{"items":{items},"nextCursor":{next}}}"#)))
    };
    let url =
        scripted(vec![page("[]", r#""0a""#), page("[]", r#""0b""#), page("[]", "null")], heads.clone()).await;
    let c = Client::builder(url)
        .tenant(Some("acme".into()))
        .auth(Auth::Jwt("tok".into()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // WHEN read to the end
    let all = c
        .all(ListJobs { include_deleted: true, limit: Some(2), cursor: None })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // THEN three requests, each with the previous page's cursor and the same parameters
    assert!(all.is_empty());
    let lines: Vec<String> = heads
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|h| h.lines().next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "get /v1/jobs?includedeleted=true&limit=2 http/1.1",
            "get /v1/jobs?includedeleted=true&limit=2&cursor=0a http/1.1",
            "get /v1/jobs?includedeleted=true&limit=2&cursor=0b http/1.1",
        ]
    );
    let first = heads.lock().unwrap_or_else(|e| e.into_inner())[0].clone();
    assert_eq!(header(&first, TENANT_HEADER), Some("acme"));
    // AND the JWT mode sends the token as a bearer
    assert_eq!(header(&first, "authorization"), Some("bearer tok"));
}
