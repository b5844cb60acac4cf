//! Issue 15, "local API": the loopback server must not be usable by a web page open in the
//! developer's browser. Before the fix each of these requests created a job.

use crate::common::{at, job_body, Harness};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Sends one raw HTTP/1.1 request; returns the status and the body.
async fn raw(port: u16, head: &str, body: &str) -> (u16, serde_json::Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let req = format!("{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    let status = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let json = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    (status, serde_json::from_str(json).unwrap_or(serde_json::Value::Null))
}

#[tokio::test]
async fn the_local_server_refuses_cross_site_and_rebinding_requests() {
    // GIVEN the local server on a loopback port
    let h = Harness::new("local-server", at("2026-12-01T10:00:00Z")).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let api = Arc::new(h.api.clone());
    let server = tokio::spawn(sundial_api::local::serve(api, listener, std::future::pending()));
    let body = job_body("from-a-page", "0 30 2 * * *").to_string();
    let host = format!("Host: 127.0.0.1:{port}");
    // WHEN a page posts a job as a "simple" request (text/plain or no type: no CORS preflight),
    // from another origin, or through a rebound DNS name
    let refused = [
        (format!("POST /v1/jobs HTTP/1.1\r\n{host}"), 415, "Content-Type"),
        (format!("POST /v1/jobs HTTP/1.1\r\n{host}\r\nContent-Type: text/plain"), 415, "Content-Type"),
        (
            format!("POST /v1/jobs HTTP/1.1\r\n{host}\r\nContent-Type: application/json\r\nOrigin: https://evil.example"),
            403,
            "Origin",
        ),
        (
            format!("POST /v1/jobs HTTP/1.1\r\n{host}\r\nContent-Type: application/json\r\nOrigin: null"),
            403,
            "Origin",
        ),
        (
            "POST /v1/jobs HTTP/1.1\r\nHost: evil.example:8080\r\nContent-Type: application/json".to_string(),
            403,
            "Host",
        ),
        (
            "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1.evil.example\r\nContent-Type: application/json".to_string(),
            403,
            "Host",
        ),
    ];
    for (head, status, field) in &refused {
        let (st, b) = raw(port, head, &body).await;
        // THEN each is refused, naming the header
        assert_eq!((st, b["error"]["field"].as_str()), (*status, Some(*field)), "{head}: {b}");
    }
    // AND nothing was created
    let (st, _) = raw(port, &format!("GET /v1/jobs/from-a-page HTTP/1.1\r\n{host}"), "").await;
    assert_eq!(st, 404);
    // AND the CLI's own requests (JSON, loopback Host, same-origin or no Origin) still work
    for (i, extra) in
        ["", "\r\nOrigin: http://localhost:8080", "\r\nOrigin: http://[::1]:9"].iter().enumerate()
    {
        let body = job_body(&format!("ok-{i}"), "0 30 2 * * *").to_string();
        let head = format!(
            "POST /v1/jobs HTTP/1.1\r\n{host}\r\nContent-Type: application/json; charset=utf-8{extra}"
        );
        let (st, b) = raw(port, &head, &body).await;
        assert_eq!(st, 201, "{extra}: {b}");
    }
    let (st, _) = raw(port, "GET /v1/jobs HTTP/1.1\r\nHost: localhost", "").await;
    assert_eq!(st, 200);
    server.abort();
}
