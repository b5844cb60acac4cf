//! The local run end to end, as a newcomer runs it: `sundial dev --fast` as a child process on
//! free ports with its own emulator and table prefix, a job created with the `sundial` CLI,
//! executions seen SUCCEEDED through the API, then Ctrl-C (SIGINT) stops everything it started —
//! the emulator included.
//!
//! The emulator is private to this test (its own port, started by `sundial dev` through
//! `localstack/start.sh`): the shared one serialises every request of every parallel test, and
//! this test is about the local run, not about contention.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `sundial dev` child; killed, and its emulator stopped, if the test ends early.
struct Dev {
    child: Child,
    emulator_port: u16,
}

impl Drop for Dev {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // Stops exactly the emulator started for this port (by its pid file), if still running.
        let _ = Command::new(root().join("localstack/stop.sh"))
            .env("SUNDIAL_EMULATOR_PORT", self.emulator_port.to_string())
            .stdout(Stdio::null())
            .status();
    }
}

fn cli(api_url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sundial"))
        .args(args)
        .args(["--api-url", api_url])
        .env_remove("SUNDIAL_TENANT")
        .env_remove("SUNDIAL_TOKEN")
        .output()
        .expect("run sundial")
}

fn json_of(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("--output json prints JSON")
}

/// Waits for a line of the child's stdout matching `pred`, collecting every line into `seen`.
fn wait_line(
    rx: &mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    within: Duration,
    pred: impl Fn(&str) -> bool,
) -> String {
    let end = Instant::now() + within;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                seen.push(l.clone());
                if pred(&l) {
                    return l;
                }
            }
            Err(_) => panic!("no matching line within {within:?}; output so far:\n{}", seen.join("\n")),
        }
    }
}

#[test]
fn the_local_run_creates_runs_and_stops() {
    let started = Instant::now();
    // GIVEN `sundial dev --fast` on free ports, with a private emulator and table prefix
    let (api_port, emulator_port) = (free_port(), free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_sundial"))
        .args(["dev", "--fast", "--shards", "1", "--port", &api_port.to_string()])
        .args(["--prefix", &format!("e2e{}-", std::process::id())])
        .env("SUNDIAL_EMULATOR_PORT", emulator_port.to_string())
        .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{emulator_port}"))
        .env("SUNDIAL_ROOT", root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start sundial dev");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut dev = Dev { child, emulator_port };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut out = Vec::new();
    let api_line = wait_line(&rx, &mut out, Duration::from_secs(90), |l| l.trim_start().starts_with("API "));
    let api_url = api_line.split_whitespace().nth(1).expect("the API URL").to_string();
    assert_eq!(api_url, format!("http://127.0.0.1:{api_port}"));
    let demo = wait_line(&rx, &mut out, Duration::from_secs(10), |l| l.contains("demo job"));
    let target = demo.split_whitespace().last().expect("the demo target URL").to_string();
    wait_line(&rx, &mut out, Duration::from_secs(10), |l| l.starts_with("Ctrl-C"));

    // WHEN a job is created through the CLI, against the local run's API
    let created = json_of(&cli(
        &api_url,
        &["jobs", "create", "e2e", "--schedule", "*/5 * * * * *", "--url", &target, "--output", "json"],
    ));
    // THEN the API answers with version 1 and its next five fires
    assert_eq!(created["job"]["version"], 1, "{created}");
    assert_eq!(created["nextFires"].as_array().map(Vec::len), Some(5), "{created}");

    // AND executions of it succeed, as seen through the API
    let deadline = Instant::now() + Duration::from_secs(60);
    let succeeded = loop {
        let page = json_of(&cli(&api_url, &["executions", "list", "--job", "e2e", "--output", "json"]));
        let ok: Vec<Value> = page["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["status"] == "SUCCEEDED")
            .cloned()
            .collect();
        if ok.len() >= 2 {
            break ok;
        }
        assert!(Instant::now() < deadline, "no two SUCCEEDED executions within 60 s: {page}");
        std::thread::sleep(Duration::from_millis(500));
    };
    for e in &succeeded {
        assert_eq!((e["attempt"].as_u64(), e["definitionVersion"].as_u64()), (Some(1), Some(1)), "{e}");
        assert!(e["startedAt"].is_string(), "{e}");
    }
    // AND the timeline is rendered as a table by the CLI
    let id = succeeded[0]["executionId"].as_str().unwrap_or_default();
    let shown = cli(&api_url, &["executions", "get", id]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("READY → RUNNING") && text.contains("RUNNING → SUCCEEDED"), "{text}");
    // AND the live output printed a line per finished execution (the demo job's and ours)
    wait_line(&rx, &mut out, Duration::from_secs(30), |l| l.starts_with("e2e@") && l.contains("SUCCEEDED"));
    if !out.iter().any(|l| l.starts_with("demo@") && l.contains("SUCCEEDED")) {
        wait_line(&rx, &mut out, Duration::from_secs(30), |l| {
            l.starts_with("demo@") && l.contains("SUCCEEDED")
        });
    }

    // AND the other CLI commands work against it: edit, pause, cancel, dead letters, resume, delete
    let edited =
        json_of(&cli(&api_url, &["jobs", "update", "e2e", "--params", r#"{"v":2}"#, "--output", "json"]));
    assert_eq!(
        (edited["job"]["version"].as_u64(), &edited["job"]["definition"]["params"]),
        (Some(2), &serde_json::json!({"v": 2}))
    );
    // AND both versions are listed, newest first, and each can be read
    let versions = json_of(&cli(&api_url, &["jobs", "versions", "e2e", "--output", "json"]));
    let listed: Vec<(Option<u64>, Value)> = versions["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|j| (j["version"].as_u64(), j["definition"]["params"].clone()))
        .collect();
    assert_eq!(listed, [(Some(2), serde_json::json!({"v": 2})), (Some(1), Value::Null)], "{versions}");
    let v1 = json_of(&cli(&api_url, &["jobs", "version", "e2e", "1", "--output", "json"]));
    assert_eq!(v1["version"], 1, "{v1}");
    // AND every list pages: one item a page with a cursor, or every page with --all
    let first = json_of(&cli(&api_url, &["jobs", "list", "--limit", "1", "--output", "json"]));
    let cursor = first["nextCursor"].as_str().unwrap_or_else(|| panic!("a cursor: {first}")).to_string();
    let second =
        json_of(&cli(&api_url, &["jobs", "list", "--limit", "1", "--cursor", &cursor, "--output", "json"]));
    assert_eq!((&first["items"][0]["jobId"], &second["items"][0]["jobId"]), (&"demo".into(), &"e2e".into()));
    let ops = json_of(&cli(
        &api_url,
        &["ops", "list", "--job", "e2e", "--limit", "1", "--all", "--output", "json"],
    ));
    let actions: Vec<&str> =
        ops["items"].as_array().into_iter().flatten().filter_map(|o| o["action"].as_str()).collect();
    assert_eq!((actions, &ops["nextCursor"]), (vec!["update", "create"], &Value::Null), "{ops}");

    // AND a job that takes events runs one per event key, fed through the CLI (a repeat of the
    // key is the same execution), with the event's parameters merged over the job's
    let feed = json_of(&cli(
        &api_url,
        &["jobs", "create", "feed", "--schedule", "0 0 0 1 1 *", "--url", &target, "--events", "each"]
            .into_iter()
            .chain(["--params", r#"{"src":"drop"}"#, "--output", "json"])
            .collect::<Vec<_>>(),
    ));
    assert_eq!(feed["job"]["definition"]["events"], serde_json::json!({"oncePerPeriod": false}), "{feed}");
    let event = |key: &str| {
        json_of(&cli(
            &api_url,
            &["jobs", "event", "feed", "--key", key, "--params", r#"{"file":"a.csv"}"#, "--output", "json"],
        ))
    };
    let first = event("a.csv");
    let again = event("a.csv");
    assert_eq!((&first["created"], &again["created"]), (&Value::Bool(true), &Value::Bool(false)), "{again}");
    let event_id = first["execution"]["executionId"].as_str().unwrap_or_default().to_string();
    assert_eq!(again["execution"]["executionId"], event_id.as_str());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let e = json_of(&cli(&api_url, &["executions", "get", &event_id, "--output", "json"]));
        if e["status"] == "SUCCEEDED" {
            assert_eq!(e["timeline"][0]["code"], "event", "{e}");
            break;
        }
        assert!(Instant::now() < deadline, "the event's execution did not succeed within 60 s: {e}");
        std::thread::sleep(Duration::from_millis(500));
    }
    // AND an event put on the local tenant's event queue (`sundial events send`, the URL the
    // local run printed) fires the job through the ingest handler, deduplicated by its key
    let events_line =
        out.iter().find(|l| l.trim_start().starts_with("events ")).cloned().expect("the events line");
    let queue_url = events_line.split_whitespace().nth(2).expect("the event queue URL").to_string();
    let send = |key: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_sundial"))
            .args([
                "events",
                "send",
                "--queue-url",
                &queue_url,
                "feed",
                "--key",
                key,
                "--params",
                r#"{"file":"q.csv"}"#,
            ])
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", dev.emulator_port))
            .output()
            .expect("run sundial events send");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    send("q.csv");
    send("q.csv");
    let deadline = Instant::now() + Duration::from_secs(60);
    let from_queue = loop {
        let page = json_of(&cli(&api_url, &["executions", "list", "--job", "feed", "--output", "json"]));
        let queued: Vec<Value> = page["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["executionId"] != event_id.as_str() && e["status"] == "SUCCEEDED")
            .cloned()
            .collect();
        if !queued.is_empty() {
            break queued;
        }
        assert!(Instant::now() < deadline, "the queued event did not run within 60 s: {page}");
        std::thread::sleep(Duration::from_millis(500));
    };
    std::thread::sleep(Duration::from_secs(2));
    let page = json_of(&cli(&api_url, &["executions", "list", "--job", "feed", "--output", "json"]));
    assert_eq!(page["items"].as_array().map(Vec::len), Some(2), "one execution per key: {page}");
    let e = json_of(&cli(
        &api_url,
        &["executions", "get", from_queue[0]["executionId"].as_str().unwrap_or_default(), "--output", "json"],
    ));
    assert!(e["timeline"][0]["actor"].as_str().unwrap_or_default().starts_with("source:sqs:"), "{e}");

    // AND a job waiting for it shows in its dependency graph, as the CLI prints it
    let down = cli(
        &api_url,
        &[
            "jobs",
            "create",
            "feed-report",
            "--schedule",
            "0 0 0 1 1 *",
            "--url",
            &target,
            "--after",
            "feed:previous",
        ],
    );
    assert!(down.status.success(), "{down:?}");
    let deps = cli(&api_url, &["jobs", "deps", "feed"]);
    let text = String::from_utf8_lossy(&deps.stdout);
    assert!(text.contains("feed → feed-report (previous, succeeded; ENABLED)"), "{text}");
    json_of(&cli(&api_url, &["jobs", "delete", "feed-report", "--output", "json"]));
    json_of(&cli(&api_url, &["jobs", "delete", "feed", "--output", "json"]));

    let paused = json_of(&cli(&api_url, &["jobs", "pause", "e2e", "--output", "json"]));
    assert_eq!(paused["job"]["state"], "PAUSED", "{paused}");
    let jobs = json_of(&cli(&api_url, &["jobs", "list", "--output", "json"]));
    let states: Vec<(String, String)> = jobs["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|j| {
            (j["jobId"].as_str().unwrap_or_default().into(), j["state"].as_str().unwrap_or_default().into())
        })
        .collect();
    assert_eq!(states, vec![("demo".into(), "ENABLED".into()), ("e2e".into(), "PAUSED".into())]);
    let ready = json_of(&cli(
        &api_url,
        &["executions", "list", "--job", "demo", "--status", "READY", "--output", "json"],
    ));
    let queued =
        ready["items"][0]["executionId"].as_str().expect("the demo job has queued executions").to_string();
    let cancelled = json_of(&cli(&api_url, &["executions", "cancel", &queued, "--output", "json"]));
    assert_eq!(cancelled["status"], "CANCELED", "{cancelled}");
    let dead = json_of(&cli(&api_url, &["dlq", "list", "--output", "json"]));
    assert_eq!(dead["items"].as_array().map(Vec::len), Some(0), "{dead}");
    let replay = cli(&api_url, &["dlq", "replay", id]);
    assert!(String::from_utf8_lossy(&replay.stdout).contains("not_dead"), "{replay:?}");
    // (a resume that replays the latest fire the pause skipped, if any: at most one)
    let resumed =
        json_of(&cli(&api_url, &["jobs", "resume", "e2e", "--catch-up", "last", "--output", "json"]));
    assert_eq!(resumed["job"]["state"], "ENABLED", "{resumed}");
    assert!(resumed["catchUp"]["fires"].as_u64().is_some_and(|n| n <= 1), "{resumed}");
    assert_eq!(
        json_of(&cli(&api_url, &["jobs", "delete", "e2e", "--output", "json"]))["job"]["state"],
        "DELETED"
    );
    let shown = cli(&api_url, &["jobs", "get", "e2e"]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("DELETED"), "{shown:?}");
    // AND a bad request fails with the API's error, naming the field, and a non-zero exit
    let bad = cli(&api_url, &["jobs", "create", "bad", "--schedule", "61 * * * *", "--url", &target]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("schedule.expression"), "{bad:?}");

    // AND business calendars go through the same CLI: create, edit with the version read, a
    // stale edit refused, get, one version, list, delete, then gone
    let dir = std::env::temp_dir().join(format!("sundial-cli-cal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (f1, f2) = (dir.join("v1.json"), dir.join("v2.json"));
    std::fs::write(&f1, r#"{"holidays": ["2026-10-01"]}"#).expect("write");
    std::fs::write(&f2, r#"{"holidays": ["2026-10-01", "2026-10-02"], "restDays": ["sun"]}"#).expect("write");
    let (f1, f2) = (f1.to_str().expect("utf-8 path"), f2.to_str().expect("utf-8 path"));
    let put = json_of(&cli(&api_url, &["calendars", "put", "cn", "--file", f1, "--output", "json"]));
    assert_eq!(put["calendar"]["version"], 1, "{put}");
    let put = json_of(&cli(
        &api_url,
        &["calendars", "put", "cn", "--file", f2, "--version", "1", "--output", "json"],
    ));
    assert_eq!(put["calendar"]["version"], 2, "{put}");
    let stale = cli(&api_url, &["calendars", "put", "cn", "--file", f1, "--version", "1"]);
    assert!(!stale.status.success(), "{stale:?}");
    assert!(String::from_utf8_lossy(&stale.stderr).contains("412"), "{stale:?}");
    let got = json_of(&cli(&api_url, &["calendars", "get", "cn", "--output", "json"]));
    assert_eq!(got["definition"]["holidays"], serde_json::json!(["2026-10-01", "2026-10-02"]), "{got}");
    let v1 = cli(&api_url, &["calendars", "versions", "cn", "--version", "1", "--output", "json"]);
    let v1 = String::from_utf8_lossy(&v1.stdout).to_string();
    assert!(v1.contains("2026-10-01") && !v1.contains("2026-10-02"), "{v1}");
    let listed = cli(&api_url, &["calendars", "list", "--output", "json"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("\"cn\""), "{listed:?}");
    assert!(cli(&api_url, &["calendars", "delete", "cn", "--output", "json"]).status.success());
    let gone = cli(&api_url, &["calendars", "get", "cn"]);
    assert!(!gone.status.success() && String::from_utf8_lossy(&gone.stderr).contains("404"), "{gone:?}");
    let _ = std::fs::remove_dir_all(&dir);

    // AND resource limits: the local user is the operator; a job uses one; a job naming an
    // undefined one is refused on its entry
    let put = json_of(&cli(&api_url, &["resources", "put", "legacy-db", "--limit", "2", "--output", "json"]));
    assert_eq!((&put["limit"], &put["version"]), (&serde_json::json!(2), &serde_json::json!(1)), "{put}");
    let uses = cli(
        &api_url,
        &[
            "jobs",
            "create",
            "uses-db",
            "--schedule",
            "0 0 3 1 1 *",
            "--url",
            "https://example.com/x",
            "--resource",
            "legacy-db",
        ],
    );
    assert!(uses.status.success(), "{uses:?}");
    let unknown = cli(
        &api_url,
        &[
            "jobs",
            "create",
            "typo",
            "--schedule",
            "0 0 3 1 1 *",
            "--url",
            "https://example.com/x",
            "--resource",
            "legacy-bd",
        ],
    );
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("resources[0]"), "{unknown:?}");
    let got = json_of(&cli(&api_url, &["resources", "get", "legacy-db", "--output", "json"]));
    assert_eq!((&got["limit"], &got["holding"]), (&serde_json::json!(2), &serde_json::json!(0)), "{got}");
    let listed = cli(&api_url, &["resources", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("legacy-db"), "{listed:?}");
    assert!(cli(&api_url, &["resources", "delete", "legacy-db"]).status.success());

    // WHEN it gets Ctrl-C
    let pid = dev.child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().map(|s| s.success()).unwrap_or(false));
    // THEN it stops cleanly, and so does the emulator it started
    let end = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = dev.child.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < end, "sundial dev did not stop within 30 s of SIGINT");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(status.success(), "exit status {status}");
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(2)) {
        out.push(l);
    }
    assert!(out.iter().any(|l| l == "stopped"), "{}", out.join("\n"));
    assert!(TcpStream::connect(("127.0.0.1", api_port)).is_err(), "the API port is closed");
    assert!(TcpStream::connect(("127.0.0.1", emulator_port)).is_err(), "the emulator it started is stopped");
    let _ = std::fs::remove_file(root().join(format!("localstack/.run/emulator-{emulator_port}.log")));
    eprintln!("local run end to end: {:.1} s", started.elapsed().as_secs_f64());
}
