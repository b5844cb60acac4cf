//! Issue 19: the web console, tested in a real browser (headless Chromium driven through
//! WebDriver by `chromedriver`) against the local run (`sundial dev --fast` as a child process
//! on a free port, on the test's emulator, with its own table prefix).
//!
//! One scenario, in the order a newcomer uses the console: create a job in the form (an API
//! validation message appears beside its field first), see its upcoming fires with a
//! daylight-saving transition marked, run it now and watch the execution reach SUCCEEDED,
//! open its timeline, pause the job, replay a dead letter with a reason, switch tenants and
//! see nothing of the other. Every page is saved as a screenshot (1280×800 light, and phone
//! width dark) under `$CARGO_TARGET_DIR/console-screenshots/` (the ones in `docs/console/` were
//! copied from there).
//!
//! Chromium and chromedriver come from Debian's `chromium` and `chromium-driver` packages
//! (`scripts/test.sh` installs them). Without them this test fails, saying so; set
//! `CONSOLE_BROWSER_TESTS=skip` to skip it explicitly.
//!
//! Nothing waits on the real minute: the job fires through the console's "Run now" button, and
//! every wait polls the page for an expected state with a deadline.
//!
//! One test needs no browser: every field path of the console's job form is looked up in the
//! API's OpenAPI document (`every_field_of_the_console_job_form_is_in_the_openapi_schema`).

use base64::Engine;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// A child process killed when the test ends, however it ends.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request over a fresh connection (`Connection: close`, so the body ends with
/// the stream): enough for chromedriver and the local API, with no client crate.
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&Value>) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).expect("timeout");
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).and_then(|_| s.write_all(body.as_bytes())).expect("write");
    // Read the head, then exactly the body its Content-Length (or chunks) announce: a server may
    // keep the connection open whatever we asked.
    let mut r = BufReader::new(s);
    let mut status = 0;
    let mut length = None;
    let mut chunked = false;
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).expect("read head");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if status == 0 {
            status = l.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
        }
        let lower = l.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut data = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line).expect("chunk size");
            let n = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).expect("chunk");
            data.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length {
        data.resize(n, 0);
        r.read_exact(&mut data).expect("body");
    } else {
        r.read_to_end(&mut data).expect("body");
    }
    let json = String::from_utf8_lossy(&data);
    (status, serde_json::from_str(&json).unwrap_or(Value::Null))
}

/// A WebDriver session.
struct Browser {
    port: u16,
    session: String,
    shots: PathBuf,
    /// axe-core's script, injected into each page audited.
    axe: String,
    /// Each audited page's violations by impact (`critical`, `serious`, `moderate`, `minor`),
    /// with the rules and elements of the serious and critical ones.
    audits: std::cell::RefCell<Vec<(String, Value)>>,
    _driver: Proc,
}

impl Browser {
    fn start(chromium: &Path, chromedriver: &Path, shots: PathBuf) -> Browser {
        let port = free_port();
        let driver = Proc(
            Command::new(chromedriver)
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start chromedriver"),
        );
        let end = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < end, "chromedriver did not listen on {port} within 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,800", "--force-device-scale-factor=1", "--lang=en-US"],
            },
        }}});
        let (st, v) = http(port, "POST", "/session", &[], Some(&caps));
        assert_eq!(st, 200, "new WebDriver session: {v}");
        let session = v["value"]["sessionId"].as_str().expect("sessionId").to_string();
        std::fs::create_dir_all(&shots).expect("screenshot directory");
        let _ = std::fs::remove_file(shots.join("failure.png"));
        Browser { port, session, shots, axe: axe_source(), audits: Default::default(), _driver: driver }
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let p = format!("/session/{}{path}", self.session);
        let body = body.or_else(|| (method == "POST").then(|| json!({})));
        let (st, v) = http(self.port, method, &p, &[], body.as_ref());
        assert_eq!(st, 200, "{method} {path}: {v}");
        v["value"].clone()
    }

    fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({"url": url})));
    }

    fn js(&self, script: &str, args: Value) -> Value {
        self.cmd("POST", "/execute/sync", Some(json!({"script": script, "args": args})))
    }

    /// Waits for `pred` (a JS expression over the document) to be true.
    fn wait_for(&self, what: &str, expr: &str, within: Duration) {
        let end = Instant::now() + within;
        loop {
            if self.js(&format!("return !!({expr});"), json!([])) == json!(true) {
                return;
            }
            if Instant::now() > end {
                let text = self.js("return document.body.innerText;", json!([]));
                if let Ok(png) = self.png() {
                    let _ = std::fs::write(self.shots.join("failure.png"), png);
                }
                panic!(
                    "{what}: not seen within {within:?}; the page says:\n{}",
                    text.as_str().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn wait_text(&self, css: &str, needle: &str, within: Duration) {
        let expr = format!(
            "[...document.querySelectorAll({})].some(e => e.innerText.includes({}))",
            json!(css),
            json!(needle)
        );
        self.wait_for(&format!("{needle:?} in {css}"), &expr, within);
    }

    fn find(&self, css: &str) -> String {
        self.wait_for(&format!("element {css}"), &format!("document.querySelector({})", json!(css)), WAIT);
        let v = self.cmd("POST", "/element", Some(json!({"using": "css selector", "value": css})));
        v[ELEMENT].as_str().unwrap_or_else(|| panic!("element id of {css}: {v}")).to_string()
    }

    fn click(&self, css: &str) {
        let id = self.find(css);
        self.cmd("POST", &format!("/element/{id}/click"), None);
    }

    /// Types into an input as a user does (clears it first).
    fn fill(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.cmd("POST", &format!("/element/{id}/clear"), None);
        self.cmd("POST", &format!("/element/{id}/value"), Some(json!({"text": text})));
    }

    /// Picks an option of a select (keyboard-free, with the events a user's pick fires).
    fn select(&self, css: &str, value: &str) {
        self.find(css);
        self.js(
            "const e = document.querySelector(arguments[0]); e.value = arguments[1];
             e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true}));",
            json!([css, value]),
        );
    }

    /// Confirms the open confirmation dialog, with a reason when it asks for one.
    fn confirm(&self, reason: Option<&str>) {
        self.wait_for("the confirmation dialog", "document.getElementById('confirm').open", WAIT);
        if let Some(r) = reason {
            self.fill("#confirm-reason", r);
        }
        self.click("#confirm-ok");
        self.wait_for("the dialog to close", "!document.getElementById('confirm').open", WAIT);
    }

    /// Sizes the window so the page's viewport is `w`×`h` (the window adds its own frame).
    fn size(&self, w: i64, h: i64) {
        self.cmd("POST", "/window/rect", Some(json!({"width": w, "height": h})));
        let inner = self.js("return [window.innerWidth, window.innerHeight];", json!([]));
        let (iw, ih) = (inner[0].as_i64().unwrap_or(w), inner[1].as_i64().unwrap_or(h));
        self.cmd("POST", "/window/rect", Some(json!({"width": w + (w - iw), "height": h + (h - ih)})));
    }

    fn theme(&self, dark: bool) {
        self.js(
            "document.documentElement.dataset.theme = arguments[0];",
            json!([if dark { "dark" } else { "light" }]),
        );
    }

    fn shot(&self, name: &str) {
        // Let pending renders settle: the page is idle when no "Loading…" is left.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.wait_for("the page to finish loading", "!document.body.innerText.includes('Loading…')", WAIT)
        }));
        self.js("document.getElementById('toast').replaceChildren();", json!([]));
        // No absent value is rendered as text: every page screenshotted is checked (issue 34).
        let text = self.js("return document.body.innerText;", json!([]));
        let text = text.as_str().unwrap_or_default();
        let absent = ["null", "undefined", "NaN", "[object Object]"]
            .into_iter()
            .filter(|w| text.contains(w))
            .collect::<Vec<_>>();
        assert!(absent.is_empty(), "page {name} renders {absent:?}:\n{text}");
        self.audit(name);
        let png = self.png().expect("a PNG screenshot");
        std::fs::write(self.shots.join(format!("{name}.png")), png).expect("write screenshot");
    }

    /// Runs axe-core's WCAG 2.1 A and AA rules on the page as it is and records the violations
    /// by impact ([`Browser::audits`]); [`Browser::a11y_report`] judges them all at the end.
    fn audit(&self, name: &str) {
        let found = self.axe_run(name);
        // `review`: what axe-core could not decide (its "incomplete"), counted, not judged.
        let mut by_impact = json!({"critical": 0, "serious": 0, "moderate": 0, "minor": 0, "review": 0});
        let (mut grave, mut review) = (Vec::new(), Vec::new());
        for v in found.as_array().into_iter().flatten() {
            let impact = v["impact"].as_str().unwrap_or("minor");
            let n = v["nodes"].as_u64().unwrap_or(1);
            by_impact[impact] = json!(by_impact[impact].as_u64().unwrap_or(0) + n);
            if matches!(impact, "critical" | "serious") {
                grave.push(v.clone());
            } else if impact == "review" {
                review.push(v.clone());
            }
        }
        by_impact["violations"] = json!(grave);
        by_impact["toReview"] = json!(review);
        self.audits.borrow_mut().push((name.to_string(), by_impact));
    }

    /// axe-core's violations on the page as it is (an array of `{id, impact, help, nodes,
    /// targets}`).
    fn axe_run(&self, name: &str) -> Value {
        self.js("if (!window.axe) { (0, eval)(arguments[0]); } return !!window.axe;", json!([self.axe]));
        let found = self.cmd(
            "POST",
            "/execute/async",
            Some(json!({"script": "const done = arguments[arguments.length - 1];
                axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})
                  .then((r) => done(r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.length, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}))
                    .concat(r.incomplete.map((v) => ({id: v.id, impact: 'review', help: v.help,
                    nodes: v.nodes.length, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' '))})))),
                    (e) => done({error: String(e)}));",
                "args": []})),
        );
        assert!(found.is_array(), "axe-core on page {name}: {found}");
        found
    }

    /// The audit itself is checked: on the page as it is, an image without a text alternative,
    /// a nameless button and grey-on-grey text must each be reported (then they are removed).
    fn audit_self_check(&self) {
        self.js(
            "const p = document.createElement('div'); p.id = 'axe-probe';
             p.innerHTML = '<img src=\"data:,\"><button></button><p>faint</p>';
             // CSSOM, not a style attribute: the console's CSP refuses inline styles.
             Object.assign(p.querySelector('p').style, {color: '#bbb', background: '#ccc'});
             document.querySelector('main, body').prepend(p); window.scrollTo(0, 0);",
            json!([]),
        );
        let found = self.axe_run("self-check");
        self.js("document.getElementById('axe-probe').remove();", json!([]));
        let ids: Vec<&str> = found
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["impact"] != "review")
            .filter_map(|v| v["id"].as_str())
            .collect();
        for rule in ["image-alt", "button-name", "color-contrast"] {
            assert!(
                ids.contains(&rule),
                "the accessibility audit missed a planted {rule} violation: {ids:?}"
            );
        }
    }

    /// Writes every audited page's counts to `a11y.json` beside the screenshots, prints them,
    /// and fails on any serious or critical violation.
    fn a11y_report(&self) {
        let audits = self.audits.borrow();
        let report: serde_json::Map<String, Value> = audits.iter().cloned().collect();
        let path = self.shots.join("a11y.json");
        std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap_or_default())
            .expect("a11y report");
        let mut grave = Vec::new();
        for (page, r) in audits.iter() {
            eprintln!(
                "FIGURE a11y {page}: critical {} serious {} moderate {} minor {} (to review by hand {})",
                r["critical"], r["serious"], r["moderate"], r["minor"], r["review"]
            );
            for v in r["violations"].as_array().into_iter().flatten() {
                grave
                    .push(format!("{page}: {} ({}) {} at {}", v["id"], v["impact"], v["help"], v["targets"]));
            }
        }
        assert!(!audits.is_empty(), "no page was audited");
        assert!(
            grave.is_empty(),
            "serious or critical accessibility violations ({}):\n{}",
            path.display(),
            grave.join("\n")
        );
    }

    /// Presses `keys` one after another through the WebDriver Actions API, as a keyboard does
    /// (`TAB`, `ENTER` or plain characters).
    fn keys(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|c| {
                [
                    json!({"type": "keyDown", "value": c.to_string()}),
                    json!({"type": "keyUp", "value": c.to_string()}),
                ]
            })
            .collect();
        self.cmd(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "kb", "actions": actions}]})),
        );
    }

    /// Tabs to `css` and presses Enter on it, as a keyboard user activates a control.
    fn tab_enter(&self, css: &str) {
        self.tab_to(css);
        self.keys(ENTER);
    }

    /// Presses Tab until the focused element matches `css` (at most 60 times), as a keyboard
    /// user looks for a control; fails naming where the focus went.
    fn tab_to(&self, css: &str) {
        let mut visited = Vec::new();
        for _ in 0..60 {
            self.keys(TAB);
            let at = self.js(
                "const a = document.activeElement;
                 return [!!a && a.matches(arguments[0]), a ? a.outerHTML.slice(0, 60) : ''];",
                json!([css]),
            );
            if at[0] == json!(true) {
                return;
            }
            visited.push(at[1].as_str().unwrap_or_default().to_string());
        }
        panic!("{css} is not reachable with Tab; the focus went through:\n{}", visited.join("\n"));
    }

    fn png(&self) -> Result<Vec<u8>, base64::DecodeError> {
        let b64 = self.cmd("GET", "/screenshot", None);
        base64::engine::general_purpose::STANDARD.decode(b64.as_str().unwrap_or_default())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = http(self.port, "DELETE", &format!("/session/{}", self.session), &[], None);
    }
}

const WAIT: Duration = Duration::from_secs(20);
/// WebDriver's key codes.
const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";

/// axe-core's script, from `functions/cli/tests/a11y` (`npm ci` there; `scripts/test.sh` does).
fn axe_source() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a11y/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "the console's accessibility audit needs axe-core at {}: run `npm ci --prefix functions/cli/tests/a11y` \
             (scripts/test.sh does): {e}",
            p.display()
        )
    })
}

/// Chromium and chromedriver, or a clear failure (or `None` when skipping was asked for).
fn browser_binaries() -> Option<(PathBuf, PathBuf)> {
    let skip = std::env::var("CONSOLE_BROWSER_TESTS").is_ok_and(|v| v == "skip");
    let which = |names: &[&str]| {
        names.iter().find_map(|n| {
            let out = Command::new("sh").arg("-c").arg(format!("command -v {n}")).output().ok()?;
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (out.status.success() && !p.is_empty()).then(|| PathBuf::from(p))
        })
    };
    match (which(&["chromium", "chromium-browser"]), which(&["chromedriver"])) {
        (Some(c), Some(d)) => Some((c, d)),
        _ if skip => {
            eprintln!("console browser test skipped (CONSOLE_BROWSER_TESTS=skip)");
            None
        }
        _ => panic!(
            "the console's browser test needs Chromium and chromedriver: install Debian's `chromium` and \
             `chromium-driver` (scripts/test.sh does: apt-get install -y chromium chromium-driver), or set \
             CONSOLE_BROWSER_TESTS=skip to skip this test explicitly"
        ),
    }
}

/// The local run's allowlist: every kind open to every tenant (`*`), and an ECS network: an
/// `ecs` target's subnets and groups are always the deployment's to give (docs/tenancy.md).
const CONSOLE_TARGETS: &str = r#"{"*": {"lambda": ["*"], "sqs": ["*"], "http": ["*"], "sns": ["*"],
    "stepFunctions": ["*"], "ecsTaskDefinitions": ["*"], "ecsClusters": ["*"], "eventBridge": ["*"],
    "secrets": ["*"], "inProcess": ["*"], "pools": ["*"], "ecsSubnets": ["subnet-*"],
    "ecsSecurityGroups": ["sg-*"], "ecsPublicIp": true}}"#;

/// `sundial dev --fast` on a free port with this test's table prefix; returns it and its API port.
fn local_run() -> (Proc, u16) {
    let prefix = format!("console-{}-", std::process::id());
    let mut child = Command::new(env!("CARGO_BIN_EXE_sundial"))
        .args(["dev", "--fast", "--no-demo", "--port", "0", "--shards", "2", "--prefix", &prefix])
        // (every target open to the console's tenant, and the ECS network its form names)
        .args(["--tenant-targets", CONSOLE_TARGETS])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start sundial dev");
    let stdout = child.stdout.take().expect("stdout");
    let proc = Proc(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        let line = rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
            .expect("sundial dev printed its API URL within 120 s");
        if let Some(url) = line.trim().strip_prefix("API") {
            let port =
                url.split_whitespace().next().and_then(|u| u.rsplit(':').next()).and_then(|p| p.parse().ok());
            // Keep draining its output so it never blocks on a full pipe.
            std::thread::spawn(move || while rx.recv().is_ok() {});
            return (proc, port.expect("a port in the API line"));
        }
    }
}

fn api(port: u16, tenant: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let (st, v) = http(port, method, path, &[("X-Sundial-Tenant", tenant)], body.as_ref());
    assert!((200..300).contains(&st), "{method} {path}: {st} {v}");
    v
}

#[test]
fn the_console_in_a_real_browser() {
    let Some((chromium, chromedriver)) = browser_binaries() else { return };
    let shots = PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target").to_string_lossy().into_owned()
    }))
    .join("console-screenshots");
    let (_dev, port) = local_run();
    let base = format!("http://127.0.0.1:{port}/console");

    // GIVEN a dead letter in tenant "local" (a webhook nobody listens to, one attempt) and a job
    // of another tenant
    api(
        port,
        "local",
        "POST",
        "/v1/jobs",
        Some(json!({
            "jobId": "unreachable",
            "schedule": {"expression": "0 0 4 * * *", "timezone": "UTC"},
            "target": {"type": "http", "url": format!("http://127.0.0.1:{}/hook", free_port())},
            "retry": {"maxAttempts": 1},
        })),
    );
    api(port, "local", "POST", "/v1/jobs/unreachable/trigger", Some(json!({})));
    api(
        port,
        "other",
        "POST",
        "/v1/jobs",
        Some(json!({
            "jobId": "other-tenants-job",
            "schedule": {"expression": "0 0 5 * * *", "timezone": "UTC"},
            "target": {"type": "inProcess", "handler": "sleep"},
        })),
    );

    let b = Browser::start(&chromium, &chromedriver, shots.clone());
    b.size(1280, 800);
    b.goto(&format!("{base}#/jobs"));
    b.wait_text("h1", "Jobs", WAIT);
    b.wait_text("#jobs-list", "unreachable", WAIT);

    // WHEN a job is created in the form, first with a schedule the API refuses
    b.click("#new-job");
    b.fill("#f-jobId", "nightly-report");
    b.fill("#f-schedule-expression", "0 30 2 * * * * *");
    b.fill("#f-schedule-timezone", "America/New_York");
    b.fill("#f-schedule-start", "2027-03-10T00:00:00Z");
    b.select("#f-target-type", "inProcess");
    b.fill("#f-target-handler", "sleep");
    b.fill("#f-params", r#"{"ms": 300}"#);
    b.click("#save-job");
    // THEN the API's message is shown beside the schedule field
    b.wait_for(
        "the schedule field marked invalid",
        "document.querySelector('[data-field=\"schedule.expression\"]').classList.contains('invalid')",
        WAIT,
    );
    b.shot("job-form-validation");
    // WHEN the schedule is corrected (02:30 New York time, every day)
    b.fill("#f-schedule-expression", "0 30 2 * * *");
    b.wait_text("#schedule-words", "every day at 02:30 America/New_York", WAIT);
    b.click("#save-job");
    // THEN the job's page lists its upcoming fires with the spring-forward gap of 2027-03-14
    b.wait_text("h1", "nightly-report", WAIT);
    b.wait_text("#upcoming", "02:30 does not exist on 2027-03-14; shifted to 03:00 (onGap shift)", WAIT);
    b.wait_for("the shifted fire marked in the list", "document.querySelector('[data-dst=\"fire\"]')", WAIT);
    // (the versions box diffs versions read with one GET /v1/jobs/{id}/versions)
    b.wait_text("#diff", "0 30 2 * * *", WAIT);
    b.shot("job-detail");
    // (the CLI reads the same route: `sundial jobs upcoming`)
    let cli = Command::new(env!("CARGO_BIN_EXE_sundial"))
        .args([
            "jobs",
            "upcoming",
            "nightly-report",
            "--days",
            "7",
            "--api-url",
            &format!("http://127.0.0.1:{port}"),
        ])
        .env_remove("SUNDIAL_TENANT")
        .env_remove("SUNDIAL_TOKEN")
        .output()
        .expect("run sundial");
    let text = String::from_utf8_lossy(&cli.stdout);
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    assert!(
        text.contains("2027-03-14 03:00:00") && text.contains("shifted to 03:00 (onGap shift)"),
        "{text}"
    );

    // WHEN it is run now from the console
    b.click("button[data-action=\"trigger\"]");
    b.confirm(None);
    // THEN its execution appears and reaches SUCCEEDED (the page is reloaded until it does).
    // The bound is for a loaded 2-core machine: alone this takes seconds, but CI's fresh-clone
    // run of f7995f7 saw it pass 60 s while the MiniStack pass ran beside it.
    let end = Instant::now() + Duration::from_secs(180);
    for i in 0.. {
        // A new URL each time (the query differs), so the page loads afresh.
        b.goto(&format!("{base}?poll={i}#/jobs/nightly-report"));
        b.wait_for(
            "the executions table",
            "document.querySelector('#executions table, #executions p')",
            WAIT,
        );
        if b.js("return document.querySelector('#executions').innerText.includes('SUCCEEDED');", json!([]))
            == json!(true)
        {
            break;
        }
        assert!(Instant::now() < end, "the execution did not reach SUCCEEDED within 180 s");
        std::thread::sleep(Duration::from_millis(500));
    }
    // AND its run history strip has one cell per fire due, in order, each its execution's status
    // and a link to it, then the upcoming fires
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
    let listed =
        api(port, "local", "GET", &format!("/v1/jobs/nightly-report/executions?limit=50&until={now}"), None);
    let want: Vec<Value> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .map(|e| {
            json!([
                e["status"],
                format!("#/executions/{}", e["executionId"].as_str().unwrap_or_default().replace('@', "%40"))
            ])
        })
        .collect();
    let cells = b.js(
        "return [...document.querySelectorAll('#run-strip a.cell')].map((c) => [c.dataset.status, c.getAttribute('href')]);",
        json!([]),
    );
    assert_eq!(cells, json!(want), "the strip against GET executions?until=now");
    assert!(!want.is_empty());
    let upcoming =
        b.js("return document.querySelectorAll('#run-strip [data-cell=\"upcoming\"]').length;", json!([]));
    assert_eq!(upcoming, json!(5), "the next five fires");
    // (a daylight-saving change between two cells is marked: the strip over New York's
    // 2027-03-14 spring-forward, in this browser)
    let marks = b.cmd(
        "POST",
        "/execute/async",
        Some(json!({"script": "const done = arguments[arguments.length - 1];
            import('/console/strip.js').then((m) => {
              const e = (at, st) => ({executionId: `j@${Date.parse(at)}`, scheduledAt: at, status: st, attempt: 1});
              const s = m.runStrip([e('2027-03-14T07:30:00Z', 'FAILED'), e('2027-03-13T07:30:00Z', 'SUCCEEDED')],
                ['2027-03-15T06:30:00Z'], {def: {}, tz: 'America/New_York', execHref: (x) => `#/executions/${x}`, id: 'j'});
              done([...s.children].map((c) => c.dataset.cell || (c.hasAttribute('data-dst-mark') ? 'dst' : 'now')));
            }, (err) => done(String(err)));",
            "args": []})),
    );
    assert_eq!(
        marks,
        json!(["ok", "dst", "failed", "now", "upcoming"]),
        "the 13th is at -05:00, the 14th (07:30 UTC, after 02:00 local) at -04:00"
    );
    b.shot("job-detail-executions");
    // AND its timeline shows every transition with actor, attempt and fencing token
    b.click("#executions a[href^=\"#/executions/\"]");
    b.wait_text("#exec-status", "SUCCEEDED", WAIT);
    b.wait_text("main table", "RUNNING", WAIT);
    b.wait_text("main", "Fencing token", WAIT);
    b.find("#checkpoint");
    // AND the worker's log lines of this execution are inline (kept per execution by the local run)
    b.wait_text("#log-lines", "attempt ended: SUCCEEDED", WAIT);
    b.wait_text("#log-lines", "attempt 1 running", WAIT);
    b.shot("execution-timeline");
    b.js("document.querySelector('#logs').scrollIntoView();", json!([]));
    b.shot("execution-logs");
    let exec_id = b.js("return decodeURIComponent(location.hash.slice('#/executions/'.length));", json!([]));
    let exec_id = exec_id.as_str().unwrap_or_default().to_string();
    assert!(exec_id.starts_with("nightly-report@"), "{exec_id}");
    let logs = api(port, "local", "GET", &format!("/v1/executions/{exec_id}/logs"), None);
    assert_eq!(logs["captured"], json!(true), "{logs}");
    assert!(logs["lines"].as_array().is_some_and(|l| !l.is_empty()), "{logs}");

    // AND a job's dependency graph shows its upstream and downstream, each a link to its job, and
    // a fire waiting for its upstream names the run it waits for and since when
    let job = |id: &str, extra: Value| {
        let mut body = json!({
            "jobId": id,
            "schedule": {"expression": "0 0 3 * * *", "timezone": "UTC"},
            "target": {"type": "inProcess", "handler": "sleep"},
        });
        if let (Some(o), Some(x)) = (body.as_object_mut(), extra.as_object()) {
            o.extend(x.clone());
        }
        api(port, "local", "POST", "/v1/jobs", Some(body))
    };
    job("close-books", json!({}));
    job("settle-books", json!({"after": [{"job": "close-books"}], "events": {}}));
    b.goto(&format!("{base}#/jobs/settle-books"));
    b.wait_text("#deps-graph", "close-books", WAIT);
    let ups = b.js(
        "return [...document.querySelectorAll('#deps-graph .dep-up a')].map((a) => a.getAttribute('href'));",
        json!([]),
    );
    assert_eq!(ups, json!(["#/jobs/close-books"]));
    b.audit("job-dependencies");
    b.goto(&format!("{base}#/jobs/close-books"));
    b.wait_text("#deps-graph .dep-down", "settle-books", WAIT);
    let fired = api(port, "local", "POST", "/v1/jobs/settle-books/events", Some(json!({"key": "books-1"})));
    let waiting = fired["execution"]["executionId"].as_str().unwrap_or_default().to_string();
    assert!(waiting.starts_with("settle-books@"), "{fired}");
    b.goto(&format!("{base}#/executions/{}", waiting.replace('@', "%40")));
    b.wait_text("#waiting-for", "close-books@", WAIT);
    b.wait_text("#waiting-for", "not created yet", WAIT);
    let detail = api(port, "local", "GET", &format!("/v1/executions/{waiting}"), None);
    assert_eq!(detail["waitingFor"][0]["job"], "close-books", "{detail}");
    b.audit("execution-waiting");

    // AND a job with a business calendar marks, on its run history strip, the fire the calendar
    // rolled and the instant it removed, as the API says: holidays on day D and D+2 (every
    // weekday a working day), a job at 12:00 UTC on D, D+2 and D+3 rolling 'following', its
    // fires of the last days made by a backfill (the schedule's fires): D's rolls to D+1, D+2's
    // onto D+3, which fires anyway (merged)
    let day = |n: i64| (chrono::Utc::now() - chrono::Duration::days(n)).date_naive();
    let (d0, d1, d2, d3) = (day(5), day(4), day(3), day(2));
    let dom = |d: chrono::NaiveDate| chrono::Datelike::day(&d);
    api(
        port,
        "local",
        "PUT",
        "/v1/calendars/close-holidays",
        Some(json!({"holidays": [d0.to_string(), d2.to_string()], "restDays": []})),
    );
    api(
        port,
        "local",
        "POST",
        "/v1/jobs",
        Some(json!({
            "jobId": "month-end-close",
            "schedule": {
                "expression": format!("0 0 12 {},{},{} * *", dom(d0), dom(d2), dom(d3)),
                "timezone": "UTC",
                "businessCalendar": {"calendar": "close-holidays", "roll": "following"},
            },
            "target": {"type": "inProcess", "handler": "sleep"},
            "retry": {"maxAgeSecs": 7 * 86_400},
        })),
    );
    api(
        port,
        "local",
        "POST",
        "/v1/jobs/month-end-close/backfill",
        Some(
            json!({"from": format!("{d0}T00:00:00Z"), "to": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}),
        ),
    );
    let listed = api(port, "local", "GET", "/v1/jobs/month-end-close/executions?limit=50", None);
    let items: Vec<Value> = listed["items"].as_array().cloned().unwrap_or_default();
    let noon = |d: chrono::NaiveDate| format!("{d}T12:00:00");
    let at = |e: &Value| e["scheduledAt"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        items.iter().rev().map(|e| at(e)[..19].to_string()).collect::<Vec<_>>(),
        [noon(d1), noon(d3)],
        "{listed}"
    );
    // (the API: D+1's fire rolled from D's, with the reason; D+2's instant removed before D+3's)
    let rolled = &items[1]["businessCalendar"];
    assert!(rolled["rolledFrom"].as_str().is_some_and(|f| f.starts_with(&noon(d0))), "{rolled}");
    assert!(
        rolled["reason"].as_str().is_some_and(|r| r.contains(&format!("holiday {d0} in close-holidays"))),
        "{rolled}"
    );
    let merged = &items[0]["businessCalendar"];
    assert_eq!(merged["skippedBeforeCount"], json!(1), "{merged}");
    assert!(merged["skippedBefore"][0]["at"].as_str().is_some_and(|f| f.starts_with(&noon(d2))), "{merged}");
    assert!(merged.get("rolledFrom").is_none(), "{merged}");
    // (what the strip must show, from the API's answer: a roll mark before each rolled fire's
    // cell, a removed-instants mark before each fire the calendar removed instants before)
    let (mut want_rolls, mut want_skips) = (Vec::new(), Vec::new());
    for e in items.iter().rev() {
        let href =
            format!("#/executions/{}", e["executionId"].as_str().unwrap_or_default().replace('@', "%40"));
        if let Some(from) = e["businessCalendar"]["rolledFrom"].as_str() {
            want_rolls.push(json!([at(e), from, href]));
        }
        if let Some(n) = e["businessCalendar"]["skippedBeforeCount"].as_u64().filter(|n| *n > 0) {
            want_skips.push(json!([at(e), n.to_string()]));
        }
    }
    let marks_of = |strip: &str| {
        b.js(
            "const s = document.querySelector(arguments[0]);
             const next = (m) => { let c = m.nextElementSibling; while (c && !c.classList.contains('cell')) c = c.nextElementSibling; return c; };
             return [
               [...s.querySelectorAll('[data-roll-mark]')].map((m) => [m.dataset.rollAt, m.dataset.rollFrom, next(m).getAttribute('href'),
                 m.getAttribute('role'), m.getAttribute('aria-label') === m.getAttribute('title') && /rolled forward by the business calendar from/.test(m.getAttribute('aria-label'))]),
               [...s.querySelectorAll('[data-skip-mark]')].map((m) => [m.dataset.skipBefore, m.dataset.skipCount, m.getAttribute('role'),
                 /removed by the business calendar/.test(m.getAttribute('aria-label'))]),
             ];",
            json!([strip]),
        )
    };
    let with = |v: &[Value], extra: &[Value]| {
        v.iter()
            .map(|x| {
                let mut a = x.as_array().cloned().unwrap_or_default();
                a.extend_from_slice(extra);
                Value::Array(a)
            })
            .collect::<Vec<_>>()
    };
    let want = json!([
        with(&want_rolls, &[json!("img"), json!(true)]),
        with(&want_skips, &[json!("img"), json!(true)])
    ]);
    // WHEN its page and the jobs list are opened
    b.goto(&format!("{base}#/jobs/month-end-close"));
    b.wait_for("the roll mark on the strip", "document.querySelector('#run-strip [data-roll-mark]')", WAIT);
    // THEN the strip marks exactly what the API says
    assert_eq!(marks_of("#run-strip"), want, "the job page's strip against GET executions");
    b.js("document.querySelector('#run-strip').scrollIntoView();", json!([]));
    b.shot("job-business-calendar");
    b.goto(&format!("{base}#/jobs"));
    b.wait_for(
        "the roll mark on the list's strip",
        "document.querySelector('[data-history=\"month-end-close\"] [data-roll-mark]')",
        WAIT,
    );
    assert_eq!(
        marks_of("[data-history=\"month-end-close\"]"),
        want,
        "the jobs list's strip against GET executions"
    );
    // AND the legend names both marks
    b.wait_text(".strip-legend", "rolled by the business calendar", WAIT);
    b.wait_text(".strip-legend", "instants the business calendar removed", WAIT);

    // WHEN a sharded job (3 shards) is created in the form and run now
    b.goto(&format!("{base}#/jobs/new"));
    b.fill("#f-jobId", "sharded-report");
    // (daily, twelve hours from now: no scheduled fire comes while the test waits for the run
    // it starts; the list's "Last run" leaves fires planned ahead out, see `until`)
    let hour = (chrono::Timelike::hour(&chrono::Utc::now()) + 12) % 24;
    b.fill("#f-schedule-expression", &format!("0 0 {hour} * * *"));
    b.select("#f-target-type", "inProcess");
    b.fill("#f-target-handler", "sleep");
    b.fill("#f-params", r#"{"ms": 50}"#);
    b.select("#f-priority", "high");
    b.fill("#f-shards", "3");
    // (and it takes events once per period, set in the form)
    b.select("#f-events", "oncePerPeriod");
    // (and its deadlines and outcomes: docs/outcomes.md)
    b.fill("#f-finishDeadlineSecs", "3600");
    b.fill("#f-autoPauseAfterDeadFires", "3");
    b.select("#f-outcomeEvents", "every");
    b.fill("#f-maxRuns", "500");
    b.fill("#f-outcomeNotify-url", "http://127.0.0.1:9/outcomes");
    b.click("#save-job");
    b.wait_text("h1", "sharded-report", WAIT);
    // THEN its page shows the fan-out, priority and events, as the API stored them
    b.wait_text("main", "3 shards", WAIT);
    b.wait_text("main", "high", WAIT);
    b.wait_text("main", "once per period", WAIT);
    b.wait_text("main", "pauses after 3 dead fires in a row", WAIT);
    b.wait_text("main", "ends after 500 fires", WAIT);
    b.wait_text("main", "0 of 500 scheduled fires", WAIT);
    b.wait_text("main", "also notifies http://127.0.0.1:9/outcomes", WAIT);
    let stored = api(port, "local", "GET", "/v1/jobs/sharded-report", None);
    assert_eq!(stored["definition"]["events"], json!({"oncePerPeriod": true}), "{stored}");
    assert_eq!(stored["definition"]["finishDeadlineSecs"], 3600, "{stored}");
    assert_eq!(stored["definition"]["autoPauseAfterDeadFires"], 3, "{stored}");
    assert_eq!((&stored["definition"]["maxRuns"], &stored["runs"]), (&json!(500), &json!(0)), "{stored}");
    assert_eq!(
        stored["definition"]["outcomeNotify"],
        json!({"url": "http://127.0.0.1:9/outcomes"}),
        "{stored}"
    );
    assert_eq!(stored["definition"]["outcomeEvents"], json!({"succeeded": true}), "{stored}");
    b.click("button[data-action=\"trigger\"]");
    b.confirm(None);
    // AND the parent reaches SUCCEEDED once its 3 children have
    let end = Instant::now() + Duration::from_secs(60);
    let parent = loop {
        let page = api(port, "local", "GET", "/v1/jobs/sharded-report/executions?limit=20", None);
        let done = page["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e.get("parentExecutionId").is_none() && e["status"] == "SUCCEEDED");
        if let Some(e) = done {
            break e["executionId"].as_str().unwrap_or_default().to_string();
        }
        assert!(Instant::now() < end, "the sharded fire did not succeed within 60 s: {page}");
        std::thread::sleep(Duration::from_millis(500));
    };
    b.goto(&format!("{base}#/executions/{parent}"));
    b.wait_text("#exec-status", "SUCCEEDED", WAIT);
    b.wait_text("main", "3 of 3 finished, 3 succeeded", WAIT);
    for i in 0..3 {
        b.wait_text("#children", &format!("{parent}.s{i}"), WAIT);
        b.wait_text("#children", &format!("shard {i} of 3"), WAIT);
    }
    let kids = b.js("return document.querySelectorAll('#children tbody tr').length;", json!([]));
    assert_eq!(kids, json!(3));
    b.shot("execution-children");
    // WHEN a child is opened THEN it names its shard and links back to its parent
    b.click(&format!("#children a[href=\"#/executions/{}\"]", format!("{parent}.s1").replace('@', "%40")));
    b.wait_text("main", "shard 1 of 3", WAIT);
    b.wait_text("#exec-status", "SUCCEEDED", WAIT);
    b.click("#parent-link");
    b.wait_text("#children", &format!("{parent}.s2"), WAIT);
    b.goto(&format!("{base}#/jobs"));
    b.wait_text("#jobs-list", "3 shards", WAIT);
    // (its last run is the fire, though the newest items of its partition are children)
    b.wait_text("[data-last=\"sharded-report\"]", "SUCCEEDED", WAIT);
    // (and its history strip shows the fire, not its children: one cell, succeeded)
    b.wait_for(
        "the history strip",
        "document.querySelector('[data-history=\"sharded-report\"] .strip')",
        WAIT,
    );
    let cells = b.js(
        "return [...document.querySelectorAll('[data-history=\"sharded-report\"] a.cell')].map((c) => c.dataset.cell);",
        json!([]),
    );
    assert_eq!(cells, json!(["ok"]), "one fire, succeeded");

    // WHEN an ECS job is created in the form, first without subnets (a FARGATE task needs them)
    let cluster = "arn:aws:ecs:us-east-1:123456789012:cluster/batch";
    let task = "arn:aws:ecs:us-east-1:123456789012:task-definition/settle:3";
    b.goto(&format!("{base}#/jobs/new"));
    b.fill("#f-jobId", "ecs-settle");
    b.fill("#f-schedule-expression", &format!("0 0 {hour} * * *"));
    b.select("#f-target-type", "ecs");
    b.fill("#f-target-clusterArn", cluster);
    b.fill("#f-target-taskDefinitionArn", task);
    b.fill("#f-target-containerName", "main");
    b.click("#save-job");
    // THEN the API's 400 on target.subnets is shown beside the subnets field
    b.wait_text("[data-field=\"target.subnets\"].invalid .msg", "at least one subnet", WAIT);
    // AND one on a list item (target.subnets[1]) lands on the same field
    b.fill("#f-target-subnets", "subnet-0a1b2c3d, subnet-XYZ");
    b.click("#save-job");
    b.wait_text("[data-field=\"target.subnets\"].invalid .msg", "lowercase hex", WAIT);
    // WHEN the subnets are corrected, with a security group and a public IP
    b.fill("#f-target-subnets", "subnet-0a1b2c3d, subnet-0123456789abcdef0");
    b.fill("#f-target-securityGroups", "sg-0a1b2c3d");
    b.select("#f-target-assignPublicIp", "yes");
    b.click("#save-job");
    // THEN its page names the container, the task definition and the cluster, as stored
    b.wait_text("h1", "ecs-settle", WAIT);
    b.wait_text("main", &format!("container main of {task} on {cluster}"), WAIT);
    let stored = api(port, "local", "GET", "/v1/jobs/ecs-settle", None);
    assert_eq!(
        stored["definition"]["target"],
        json!({"type": "ecs", "clusterArn": cluster, "taskDefinitionArn": task, "containerName": "main",
               "subnets": ["subnet-0a1b2c3d", "subnet-0123456789abcdef0"], "securityGroups": ["sg-0a1b2c3d"],
               "assignPublicIp": true}),
        "{stored}"
    );

    // WHEN the job is paused from its page
    b.goto(&format!("{base}#/jobs/nightly-report"));
    b.click("button[data-action=\"pause\"]");
    b.confirm(None);
    // THEN it says PAUSED, and the operations log records it
    b.wait_text("h1", "PAUSED", WAIT);
    b.goto(&format!("{base}#/ops?jobId=nightly-report"));
    b.wait_text("main table", "pause", WAIT);
    // AND an entry that made no version from another (create, trigger) names one version, never
    // an absent "v–"; a change names both (pause: v1 → v2)
    let versions = b.js(
        "return [...document.querySelectorAll('main table td[data-label=\"Versions\"]')].map((c) => c.textContent);",
        json!([]),
    );
    let texts: Vec<&str> = versions.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(texts.contains(&"v1 → v2") && !texts.iter().any(|t| t.contains('–')), "{versions}");
    b.shot("operations-log");

    // WHEN the dead letter is replayed with a reason
    b.goto(&format!("{base}#/dlq"));
    b.wait_text("main table", "unreachable@", Duration::from_secs(60));
    b.shot("dead-letters");
    b.click("button[data-replay^=\"unreachable@\"]");
    b.confirm(Some("receiver fixed"));
    // THEN the replay is audited with the reason
    b.goto(&format!("{base}#/ops?jobId=unreachable"));
    b.wait_text("main table", "replay", WAIT);
    b.wait_text("main table", "receiver fixed", WAIT);
    // AND the CLI takes a reason too: once the replayed execution is dead again, `sundial dlq
    // replay --reason` replays it and the operations log records the CLI's reason
    let end = Instant::now() + Duration::from_secs(60);
    let dead = loop {
        let page = api(port, "local", "GET", "/v1/dlq", None);
        let found = page["items"].as_array().into_iter().flatten().find_map(|e| {
            let id = e["executionId"].as_str().unwrap_or_default();
            id.starts_with("unreachable@").then(|| id.to_string())
        });
        if let Some(id) = found {
            break id;
        }
        assert!(Instant::now() < end, "the replayed execution did not die again within 60 s: {page}");
        std::thread::sleep(Duration::from_millis(500));
    };
    let cli = Command::new(env!("CARGO_BIN_EXE_sundial"))
        .args(["dlq", "replay", &dead, "--reason", "replayed from the CLI", "--api-url"])
        .arg(format!("http://127.0.0.1:{port}"))
        .env_remove("SUNDIAL_TENANT")
        .env_remove("SUNDIAL_TOKEN")
        .output()
        .expect("run sundial");
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    let ops = api(port, "local", "GET", "/v1/operations?jobId=unreachable", None);
    assert!(ops.to_string().contains("replayed from the CLI"), "{ops}");

    // WHEN a keyboard user (no pointer) finds a job, pauses it and replays a dead letter
    b.goto(&format!("{base}#/jobs"));
    b.wait_text("#jobs-list", "sharded-report", WAIT);
    b.tab_to("#filter-q");
    b.keys("sharded");
    b.keys(ENTER);
    b.wait_for("the search applied", "location.hash.includes('q=sharded')", WAIT);
    // (the filtered list is fetched after the hash changes: wait until it holds the job, or
    // the Tab walk can run through a list still loading, as it once did on a loaded machine)
    b.wait_for(
        "the filtered list",
        "!!document.querySelector('#jobs-list a[href=\"#/jobs/sharded-report\"]')",
        WAIT,
    );
    b.tab_enter("#jobs-list a[href=\"#/jobs/sharded-report\"]");
    b.wait_text("h1", "sharded-report", WAIT);
    b.tab_enter("button[data-action=\"pause\"]");
    b.wait_for("the confirmation dialog", "document.getElementById('confirm').open", WAIT);
    b.tab_enter("#confirm-ok");
    // THEN each step worked: the job is paused
    b.wait_text("h1", "PAUSED", WAIT);
    let end = Instant::now() + Duration::from_secs(60);
    while !api(port, "local", "GET", "/v1/dlq", None).to_string().contains("unreachable@") {
        assert!(Instant::now() < end, "the CLI's replay did not die again within 60 s");
        std::thread::sleep(Duration::from_millis(500));
    }
    b.goto(&format!("{base}#/jobs"));
    b.wait_text("h1", "Jobs", WAIT);
    b.tab_enter("a[data-nav=\"dlq\"]");
    b.wait_text("main table", "unreachable@", WAIT);
    b.tab_enter("button[data-replay^=\"unreachable@\"]");
    b.wait_for("the reason asked for", "document.activeElement.id === 'confirm-reason'", WAIT);
    b.keys("replayed by keyboard");
    b.tab_enter("#confirm-ok");
    // AND the replay is audited with the typed reason
    b.wait_for("the dialog to close", "!document.getElementById('confirm').open", WAIT);
    let end = Instant::now() + Duration::from_secs(20);
    while !api(port, "local", "GET", "/v1/operations?jobId=unreachable", None)
        .to_string()
        .contains("replayed by keyboard")
    {
        assert!(Instant::now() < end, "the keyboard replay is not in the operations log");
        std::thread::sleep(Duration::from_millis(200));
    }

    // WHEN the overview (the console's first page) is opened
    // THEN its figures are the API's: the fires of the last hour and day of every job (read with
    // `until` = the page's instant), their start lag p50 and p99 (nearest rank, so each is one
    // of the recorded lags) and outcome counts that add up to the fires. A page read while a
    // fire changed (the replays above) is read again, a few times at most.
    let mut mismatch = String::new();
    for attempt in 0..5 {
        b.goto(&format!("{base}?overview={attempt}#/overview"));
        b.wait_for("the overview", "document.querySelector('#overview-updated')", WAIT);
        let page = b.js(
            "const f = (id) => document.querySelector(`[data-figure=\"${id}\"]`);
             const out = {now: Number(document.querySelector('#overview-updated').dataset.now)};
             for (const w of ['hour', 'day']) {
               out[w] = {count: Number(f(`${w}-count`).textContent),
                 p50: f(`${w}-p50`).dataset.ms === undefined ? null : Number(f(`${w}-p50`).dataset.ms),
                 p99: f(`${w}-p99`).dataset.ms === undefined ? null : Number(f(`${w}-p99`).dataset.ms),
                 outcomes: [...document.querySelectorAll(`[data-window=\"${w}\"] .outcomes [data-figure]`)]
                   .reduce((n, x) => n + Number(x.textContent), 0)};
             }
             return out;",
            json!([]),
        );
        let now = page["now"].as_i64().unwrap_or_default();
        let until =
            chrono::DateTime::from_timestamp_millis(now).unwrap_or_default().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        let jobs = api(port, "local", "GET", "/v1/jobs", None);
        let mut fires = Vec::new();
        for j in jobs["items"].as_array().into_iter().flatten() {
            let id = j["jobId"].as_str().unwrap_or_default();
            let list =
                api(port, "local", "GET", &format!("/v1/jobs/{id}/executions?limit=100&until={until}"), None);
            fires.extend(list["items"].as_array().cloned().unwrap_or_default());
        }
        let want = |window_ms: i64| {
            let inside: Vec<&Value> = fires
                .iter()
                .filter(|e| {
                    let at =
                        chrono::DateTime::parse_from_rfc3339(e["scheduledAt"].as_str().unwrap_or_default());
                    at.is_ok_and(|at| at.timestamp_millis() > now - window_ms)
                })
                .collect();
            let mut lags: Vec<i64> = inside.iter().filter_map(|e| e["startLagMs"].as_i64()).collect();
            lags.sort_unstable();
            let rank = |p: f64| {
                (!lags.is_empty())
                    .then(|| lags[((p / 100.0 * lags.len() as f64).ceil() as usize).clamp(1, lags.len()) - 1])
            };
            json!({"count": inside.len(), "p50": rank(50.0), "p99": rank(99.0), "outcomes": inside.len()})
        };
        let expected = json!({"hour": want(3_600_000), "day": want(86_400_000)});
        if page["hour"] == expected["hour"] && page["day"] == expected["day"] {
            mismatch.clear();
            break;
        }
        mismatch = format!("page {page}\nAPI {expected}");
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(mismatch.is_empty(), "the overview's figures are not the API's:\n{mismatch}");
    let count =
        b.js("return Number(document.querySelector('[data-figure=\"day-count\"]').textContent);", json!([]));
    assert!(count.as_i64().unwrap_or(0) >= 3, "the test's own fires are counted: {count}");
    // AND a figure opens the list of what it counts, each a link to its execution
    b.click("details:has([data-figure=\"day-count\"]) summary");
    let links = b.js(
        "return document.querySelectorAll('details[open] a[href^=\"#/executions/\"]').length;",
        json!([]),
    );
    assert_eq!(links, count, "one link per fire counted");
    // AND the operator (the local user) sees every pool's queues the API counts, in its order,
    // with the capacity saturation is measured against
    let pools = api(port, "local", "GET", "/v1/pools", None);
    let names: Vec<Value> =
        pools["pools"].as_array().into_iter().flatten().map(|p| p["pool"].clone()).collect();
    assert!(!names.is_empty(), "{pools}");
    let shown = b.js(
        "return [...document.querySelectorAll('[data-pool-main]')].map((x) => x.dataset.poolMain);",
        json!([]),
    );
    assert_eq!(shown, json!(names), "the pool queues panel");
    let first = &pools["pools"][0];
    let sat = b.js("return document.querySelector('[data-pool-saturation]').textContent;", json!([]));
    let capacity = first["capacity"].as_u64().unwrap_or(0);
    assert!(
        capacity > 0 && sat.as_str().is_some_and(|t| t.contains(&format!("of {capacity}"))),
        "{sat} vs {first}"
    );
    b.shot("overview");

    // WHEN the tenant is switched to "other"
    b.goto(&format!("{base}#/jobs"));
    b.fill("#tenant", "other");
    b.click("#switch-tenant");
    // THEN only the other tenant's job is listed, and this tenant's job is not found there
    b.wait_text("#jobs-list", "other-tenants-job", WAIT);
    let listed = b.js("return document.querySelector('#jobs-list').innerText;", json!([]));
    assert!(!listed.as_str().unwrap_or_default().contains("nightly-report"), "{listed}");
    b.goto(&format!("{base}#/jobs/nightly-report"));
    b.wait_text("main", "not found", WAIT);
    // AND neither this tenant's execution nor its log lines can be read there
    b.goto(&format!("{base}#/executions/{exec_id}"));
    b.wait_text("main", "not found", WAIT);
    let path = format!("/v1/executions/{exec_id}/logs");
    let (st, body) = http(port, "GET", &path, &[("X-Sundial-Tenant", "other")], None);
    assert_eq!(st, 404, "another tenant reads the log lines: {body}");

    // AND the pages read at phone width in the dark theme
    b.fill("#tenant", "local");
    b.click("#switch-tenant");
    b.goto(&format!("{base}#/jobs"));
    b.wait_text("#jobs-list", "nightly-report", WAIT);
    b.shot("jobs");
    b.size(390, 844);
    b.theme(true);
    b.shot("jobs-phone-dark");
    // (resumed from its page first: a paused job has no upcoming fires)
    b.goto(&format!("{base}#/jobs/nightly-report"));
    b.click("button[data-action=\"resume\"]");
    // (the resume dialog asks what to do with the fires the pause skipped: the latest one)
    b.wait_for("the catch-up choice", "!document.getElementById('confirm-choice-row').hidden", WAIT);
    b.js("document.getElementById('confirm-choice').value = 'last';", json!([]));
    b.confirm(None);
    b.wait_text("#toast", "caught up", WAIT);
    b.wait_text("h1", "ENABLED", WAIT);
    b.wait_text("#upcoming", "does not exist", WAIT);
    b.shot("job-detail-phone-dark");
    // The overview (the first page, with the run history's figures and the pool queues) too,
    // and no page at phone width is wider than the screen: tables scroll inside their box.
    b.goto(&format!("{base}#/overview"));
    b.wait_for("the overview", "document.querySelector('#overview-updated')", WAIT);
    b.wait_for("the pool queues", "document.querySelector('[data-pool-main]')", WAIT);
    b.shot("overview-phone-dark");
    for page in ["#/overview", "#/jobs", "#/jobs/nightly-report", "#/jobs/month-end-close"] {
        b.goto(&format!("{base}{page}"));
        b.wait_for("the page", "!document.body.innerText.includes('Loading…')", WAIT);
        let wide = b.js("return document.documentElement.scrollWidth - window.innerWidth;", json!([]));
        assert!(wide.as_i64().unwrap_or(1) <= 0, "{page} is {wide} px wider than a 390 px screen");
    }
    // (the business calendar's marks are drawn there, in the dark theme's colours, and pass the audit)
    let drawn = b.js(
        "return ['#run-strip [data-roll-mark]', '#run-strip [data-skip-mark]'].map((q) => {
           const m = document.querySelector(q); const r = m.getBoundingClientRect(); const st = getComputedStyle(m);
           return r.width > 0 && r.height > 0 && r.right <= window.innerWidth
             && (st.borderLeftColor !== st.backgroundColor || st.borderTopStyle === 'dashed');
         });",
        json!([]),
    );
    assert_eq!(drawn, json!([true, true]), "the calendar marks at phone width in the dark theme");
    b.js("document.querySelector('#run-strip').scrollIntoView();", json!([]));
    b.shot("job-business-calendar-phone-dark");
    b.size(1280, 800);
    b.shot("job-detail-dark");
    // The sign-in code of the deployed console derives PKCE challenges as RFC 7636 says (its
    // appendix B example), in this browser's WebCrypto.
    let challenge = b.cmd(
        "POST",
        "/execute/async",
        Some(json!({"script": "const done = arguments[arguments.length - 1];
            import('/console/auth.js').then((m) => m.challengeOf('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).then(done, (e) => done(String(e)));",
            "args": []})),
    );
    assert_eq!(challenge, json!("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
    let verifier = b.js("return import('/console/auth.js').then((m) => m.newVerifier());", json!([]));
    assert!(verifier.as_str().is_some_and(|v| v.len() == 43), "{verifier}");
    // Keyboard: the skip link is the first tab stop and moves focus to the content.
    let first = b.js(
        "document.activeElement.blur(); const a = document.querySelector('.skip'); return a.getAttribute('href');",
        json!([]),
    );
    assert_eq!(first, json!("#main"));
    b.audit_self_check();
    b.a11y_report();
    eprintln!("screenshots in {}", shots.display());
}

/// One entry of the job form's `FIELDS` (`functions/api/console/jobform.js`).
struct FormField {
    /// Its JSON path in a definition (`target.url`).
    path: String,
    /// Written on create only, never read back (`jobId`).
    create_only: bool,
    /// The target type the field shows for (`show: (v) => v['target.type'] === 'ecs'`), if any.
    target_type: Option<String>,
}

/// Reads `FIELDS` out of the form's source: every entry starts with `{ path: '…'`.
fn form_fields(js: &str) -> Vec<FormField> {
    let start = js.find("export const FIELDS = [").expect("jobform.js declares `export const FIELDS = [`");
    let block = &js[start..start + js[start..].find("\n];").expect("FIELDS ends with `];` on its own line")];
    let quoted = |s: &str, after: &str| {
        s.find(after).map(|i| s[i + after.len()..].split('\'').next().unwrap_or("").to_string())
    };
    let fields: Vec<FormField> = block
        .split("{ path: '")
        .skip(1)
        .map(|entry| FormField {
            path: entry.split('\'').next().unwrap_or("").to_string(),
            create_only: entry.contains("createOnly: true"),
            target_type: quoted(entry, "v['target.type'] === '"),
        })
        .collect();
    // A field written another way would be skipped silently: this reader must see them all.
    assert_eq!(
        fields.len(),
        block.matches("path:").count(),
        "every FIELDS entry of jobform.js starts with `{{ path: '…'` (this test reads them that way)"
    );
    fields
}

/// `schema` with its `$ref` followed (and the referenced schema's name, for messages).
fn deref<'a>(doc: &'a Value, schema: &'a Value, name: &str) -> (&'a Value, String) {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let target = r.strip_prefix("#/components/schemas/").unwrap_or(r);
            let s = doc["components"]["schemas"]
                .get(target)
                .unwrap_or_else(|| panic!("openapi.json: no schema {r}"));
            deref(doc, s, target)
        }
        None => (schema, name.to_string()),
    }
}

/// Whether `path` names a property inside `schema`: `$ref`s followed, an array's path going on
/// into its items, a union's into one of its members (for a union with a discriminator and a
/// known `target_type`, into that type's member only). `Err` says where the path stops.
fn walk(
    doc: &Value,
    schema: &Value,
    name: &str,
    path: &[&str],
    target_type: Option<&str>,
) -> Result<(), String> {
    let (schema, name) = deref(doc, schema, name);
    let Some((first, rest)) = path.split_first() else { return Ok(()) };
    if let Some(items) = schema.get("items") {
        return walk(doc, items, &format!("{name}[]"), path, target_type);
    }
    let mapping = schema.pointer("/discriminator/mapping").and_then(Value::as_object);
    if let (Some(mapping), Some(t)) = (mapping, target_type) {
        let member = mapping.get(t).ok_or_else(|| format!("{name} has no member for type `{t}`"))?;
        return walk(doc, &json!({ "$ref": member }), &name, path, target_type);
    }
    let members =
        ["oneOf", "anyOf", "allOf"].iter().filter_map(|k| schema.get(*k)).filter_map(Value::as_array);
    let members: Vec<&Value> = members.flatten().collect();
    let mut errors = Vec::new();
    for m in &members {
        match walk(doc, m, &name, path, target_type) {
            Ok(()) => return Ok(()),
            Err(e) => errors.push(e),
        }
    }
    if let Some(p) = schema.pointer(&format!("/properties/{first}")) {
        return walk(doc, p, &format!("{name}.{first}"), rest, target_type);
    }
    match schema.get("additionalProperties") {
        Some(extra) if extra.is_object() => walk(doc, extra, &format!("{name}.*"), rest, target_type),
        _ if !members.is_empty() => Err(errors.join("; ")),
        _ => Err(format!("{name} has no property `{first}`")),
    }
}

/// GIVEN the console's job form and the API's OpenAPI document
/// WHEN every field path of the form is looked up in the schemas the form reads (a job's stored
/// `definition`, on edit) and writes (`CreateJob`, `UpdateJob`), a target field in its target
/// type's member of the `Target` union
/// THEN each one exists: a path misspelled in the form, or renamed in the API, fails here by name
/// instead of silently dropping the field (no browser needed).
#[test]
fn every_field_of_the_console_job_form_is_in_the_openapi_schema() {
    let api = Path::new(env!("CARGO_MANIFEST_DIR")).join("../api");
    let read = |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let js = read(api.join("console/jobform.js"));
    let doc: Value = serde_json::from_str(&read(api.join("openapi.json"))).expect("openapi.json is JSON");
    let fields = form_fields(&js);
    assert!(fields.iter().any(|f| f.path == "target.clusterArn"), "FIELDS read from jobform.js");
    let job_definition = json!({ "$ref": "#/components/schemas/Job" });
    let mut wrong = Vec::new();
    for f in &fields {
        let segments: Vec<&str> = f.path.split('.').collect();
        let create = json!({ "$ref": "#/components/schemas/CreateJob" });
        let update = json!({ "$ref": "#/components/schemas/UpdateJob" });
        let mut uses = vec![("written by a create", create, segments.clone())];
        if !f.create_only {
            let read_path = [&["definition"][..], &segments].concat();
            uses.push(("read on edit", job_definition.clone(), read_path));
            uses.push(("written by an edit", update, segments.clone()));
        }
        for (how, schema, path) in uses {
            if let Err(e) = walk(&doc, &schema, "", &path, f.target_type.as_deref()) {
                let of_type =
                    f.target_type.as_ref().map(|t| format!(" (target type {t})")).unwrap_or_default();
                wrong.push(format!("`{}`{of_type}, {how}: {e}", f.path));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "fields of the console's job form (functions/api/console/jobform.js) missing from \
         functions/api/openapi.json:\n{}",
        wrong.join("\n")
    );
}
