//! Issue 16: "the CLI cannot talk to the default deployment" (IAM auth). The `sundial` binary
//! with `--auth iam` against a loopback server that records what arrives: each request carries
//! a SigV4 `Authorization` for `execute-api` made with the credentials of the environment, and
//! the signature verifies against the bytes received (method, path, query string, the signed
//! headers, the body), the way API Gateway checks it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};
use sundial_client::auth::{sign, EXECUTE_API};

const KEY_ID: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/// One request as received.
#[derive(Debug)]
struct Received {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Serves one request with `answer` (status line and JSON body), sends what it received.
fn capture(answer: (&'static str, &'static str)) -> (String, mpsc::Receiver<Received>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = l.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = l.accept() else { return };
        let mut r = BufReader::new(stream.try_clone().unwrap_or_else(|e| panic!("{e}")));
        let mut line = String::new();
        let _ = r.read_line(&mut line);
        let mut parts = line.split_whitespace();
        let (method, target) =
            (parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or_default().to_string());
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let len = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        let _ = r.read_exact(&mut body);
        let (status, json) = answer;
        let mut s = stream;
        let _ = write!(
            s,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}",
            json.len()
        );
        let _ = tx.send(Received { method, target, headers, body });
    });
    (format!("http://{addr}"), rx)
}

/// Runs `sundial` with IAM credentials in the environment and nothing else that could sign.
fn sundial(url: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sundial"));
    for k in [
        "SUNDIAL_TOKEN",
        "SUNDIAL_AUTH",
        "SUNDIAL_TENANT",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
    ] {
        cmd.env_remove(k);
    }
    cmd.args(args)
        .args(["--api-url", url, "--auth", "iam", "--region", "eu-west-1"])
        .env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        // The --region flag must win over the configured region.
        .env("AWS_REGION", "us-east-1")
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap_or_else(|e| panic!("running sundial: {e}"))
}

/// Verifies `r`'s signature as the server would: rebuild the request from the signed headers
/// named in its `Authorization`, sign it again at its `x-amz-date`, compare.
fn verify(r: &Received) {
    let auth = r.header("authorization").unwrap_or_else(|| panic!("no Authorization: {r:?}"));
    let amz_date = r.header("x-amz-date").unwrap_or_else(|| panic!("no x-amz-date: {r:?}"));
    let date = &amz_date[..8];
    assert!(
        auth.starts_with(&format!(
            "AWS4-HMAC-SHA256 Credential={KEY_ID}/{date}/eu-west-1/{EXECUTE_API}/aws4_request, "
        )),
        "{auth}"
    );
    let signed: Vec<&str> = auth
        .split("SignedHeaders=")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or_default()
        .split(';')
        .collect();
    assert!(signed.contains(&"host") && signed.contains(&"x-amz-date"), "{auth}");
    let host = r.header("host").unwrap_or_default();
    let mut req =
        hyper::Request::builder().method(r.method.as_str()).uri(format!("http://{host}{}", r.target));
    for (k, v) in &r.headers {
        if signed.contains(&k.as_str()) && k != "x-amz-date" {
            req = req.header(k, v);
        }
    }
    let mut req = req.body(()).unwrap_or_else(|e| panic!("{e}"));
    let at =
        chrono::NaiveDateTime::parse_from_str(amz_date, "%Y%m%dT%H%M%SZ").unwrap_or_else(|e| panic!("{e}"));
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(at.and_utc().timestamp().unsigned_abs());
    let creds = aws_credential_types::Credentials::new(KEY_ID, SECRET, None, None, "test");
    sign(&mut req, &r.body, &creds, "eu-west-1", EXECUTE_API, at).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        req.headers()["authorization"].to_str().ok(),
        Some(auth),
        "the signature does not match the bytes received"
    );
}

#[test]
fn auth_iam_signs_a_list_with_its_query_string() {
    // GIVEN a server answering an empty page
    let (url, rx) = capture(("200 OK", r#"{"items":[],"nextCursor":null}"#));
    // WHEN the CLI lists jobs with --auth iam
    let out = sundial(&url, &["jobs", "list", "--limit", "5", "--include-deleted", "--output", "json"]);
    assert!(out.status.success(), "{out:?}");
    // THEN the request arrived signed, and the signature covers its query string
    let r = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|e| panic!("no request: {e}"));
    assert_eq!((r.method.as_str(), r.target.as_str()), ("GET", "/v1/jobs?includeDeleted=true&limit=5"));
    verify(&r);
}

#[test]
fn auth_iam_signs_a_create_with_its_body_and_idempotency_key() {
    // GIVEN a server that refuses the create (the answer does not matter here)
    let (url, rx) = capture((
        "400 Bad Request",
        r#"{"error":{"code":"validation_failed","message":"no","field":"schedule.expression"}}"#,
    ));
    // WHEN the CLI creates a job with --auth iam
    let out = sundial(
        &url,
        &["jobs", "create", "j1", "--schedule", "0 30 2 * * *", "--url", "https://h.example/run"],
    );
    // THEN the API's error is shown
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("schedule.expression"),
        "{out:?}"
    );
    // AND the request was signed over its JSON body, content type and Idempotency-Key
    let r = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|e| panic!("no request: {e}"));
    assert_eq!((r.method.as_str(), r.target.as_str()), ("POST", "/v1/jobs"));
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(body["jobId"], "j1");
    let auth = r.header("authorization").unwrap_or_default();
    assert!(auth.contains("content-type") && auth.contains("idempotency-key"), "{auth}");
    verify(&r);
}
