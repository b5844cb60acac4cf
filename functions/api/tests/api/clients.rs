//! Issue 16, part 6: the TypeScript and Python clients generated from `openapi.json` work
//! against the local run.
//!
//! Each test serves the local run's loopback server (`sundial_api::local::serve`, as in
//! `fuzz.rs`) over a private environment, generates its client from the document as a user
//! would (`functions/api/clients/README.md`), type-checks a small program against it (`tsc`,
//! `mypy`, both strict) and runs it. The program uses only the typed client: it creates a cron job with a webhook target, reads it back, finds it in the list and
//! checks two typed errors (a bad cron expression is 400 on `schedule.expression`, an unknown job
//! is 404 `not_found`). The test then reads the job from the store, so a client that only
//! *seems* to work (a request the server never stored, a field it dropped) fails here.
//!
//! The generated code is not committed: it is generated in every run, so a change to
//! `openapi.json` that a generator cannot handle fails this test at once (the README says why).
//! Installing is cached: `npm ci` runs only when `package-lock.json` changed since the last
//! install; openapi-python-client and mypy are pinned venvs from `scripts/tools.sh`.

use crate::common::{at, Harness};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use sundial_model::{HttpTarget, JobState, Target};
use tokio::net::TcpListener;
use tokio::process::Command;
use tokio::task::JoinHandle;

const TENANT: &str = "clients";
/// The openapi-python-client and mypy releases `scripts/tools.sh` installs.
const OPENAPI_PYTHON_CLIENT_VERSION: &str = "0.29.1";
const MYPY_VERSION: &str = "2.4.1";
/// Long enough for a cold `npm ci` on a slow network; a run that hangs fails instead of
/// holding the suite.
const STEP_TIMEOUT: Duration = Duration::from_secs(600);

fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients")
}

/// The local server over a private environment; the base URL the programs call.
async fn serve(label: &str) -> (Harness, String, JoinHandle<std::io::Result<()>>) {
    let h = Harness::new(label, at("2026-12-01T10:00:00Z")).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server =
        tokio::spawn(sundial_api::local::serve(Arc::new(h.api.clone()), listener, std::future::pending()));
    (h, format!("http://127.0.0.1:{port}"), server)
}

/// Runs `cmd` to completion and returns its stdout; panics with both outputs and `hint` when it
/// cannot start, fails or times out.
async fn run(cmd: &mut Command, what: &str, hint: &str) -> String {
    let started = std::time::Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start ({e}); {hint}"));
    let out = tokio::time::timeout(STEP_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer in {STEP_TIMEOUT:?}; {hint}"))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{what} ({:.1} s):\n{stdout}{stderr}", started.elapsed().as_secs_f64());
    assert!(out.status.success(), "{what} failed ({}); {hint}\n{stdout}\n{stderr}", out.status);
    stdout
}

/// `npm ci` in `dir` unless `node_modules` was installed from this very `package-lock.json`
/// (npm ci always deletes and reinstalls; the copy of the lock file it was run with is the stamp).
async fn npm_ci(dir: &Path) {
    let lock = std::fs::read(dir.join("package-lock.json")).expect("package-lock.json");
    let stamp = dir.join("node_modules/.sundial-installed-lock.json");
    if std::fs::read(&stamp).ok().as_deref() == Some(lock.as_slice()) {
        return;
    }
    run(
        Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]).current_dir(dir),
        "npm ci",
        "needs Node.js 20+ with npm on PATH and the npm registry (registry.npmjs.org or the one in \
         ~/.npmrc) reachable",
    )
    .await;
    std::fs::write(&stamp, &lock).expect("write the install stamp");
}

/// A PyPI tool `scripts/tools.sh` installs: `$var`, else its cached venv (`venv` under
/// `SUNDIAL_CACHE`); panics naming the installer when it is missing.
fn pip_tool(var: &str, venv: &str, exe: &str) -> PathBuf {
    let path = std::env::var(var).map(PathBuf::from).unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        let cache = std::env::var("SUNDIAL_CACHE").unwrap_or_else(|_| format!("{home}/.cache/sundial"));
        PathBuf::from(format!("{cache}/{venv}/bin/{exe}"))
    });
    assert!(
        path.exists(),
        "{} is missing: source scripts/tools.sh (scripts/test.sh does) to install {exe}",
        path.display()
    );
    path
}

/// The job the program created, as stored: enabled, the cron and webhook it sent, and nothing
/// stored for the refused create.
async fn assert_stored(h: &Harness, job_id: &str, client: &str) {
    let job = sundial_store::jobs::get_job(&h.env.clients.ddb, &h.env.cfg, TENANT, job_id)
        .await
        .expect("read the job")
        .unwrap_or_else(|| panic!("the {client} client's job {job_id} is not in the store"));
    assert_eq!(job.state, JobState::Enabled);
    assert_eq!(job.definition.schedule.expression, "0 30 2 * * *");
    assert_eq!(job.definition.schedule.timezone, "Europe/London");
    match &job.definition.target {
        Target::Http(HttpTarget { url, .. }) => assert_eq!(url, "https://hooks.example.com/run"),
        other => panic!("the {client} client sent target {other:?}"),
    }
    assert_eq!(job.definition.params, serde_json::json!({"client": client}));
    let refused = format!("{job_id}-bad-cron");
    let stored = sundial_store::jobs::get_job(&h.env.clients.ddb, &h.env.cfg, TENANT, &refused)
        .await
        .expect("read the refused job");
    assert!(stored.is_none(), "the refused create stored {refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_typescript_client_creates_gets_and_lists_a_job() {
    // GIVEN the local server, and the TypeScript client generated from openapi.json and
    // compiled with the smoke program under `tsc --strict`
    let (h, url, server) = serve("client-ts").await;
    let dir = clients_dir().join("typescript");
    npm_ci(&dir).await;
    let npm = |script: &str| {
        let mut c = Command::new("npm");
        c.args(["run", "--silent", script]).current_dir(&dir);
        c
    };
    run(&mut npm("generate"), "openapi-typescript", "the document must stay generatable").await;
    run(&mut npm("build"), "tsc --strict", "the generated types and smoke.ts must type-check").await;

    // WHEN the program creates, gets and lists a job and provokes two errors
    let job_id = "from-typescript";
    run(
        Command::new("node")
            .arg("dist/smoke.js")
            .current_dir(&dir)
            .env("SUNDIAL_API_URL", &url)
            .env("SUNDIAL_TENANT", TENANT)
            .env("SUNDIAL_SMOKE_JOB_ID", job_id),
        "the TypeScript smoke program",
        "see its output above",
    )
    .await;
    server.abort();

    // THEN the job is stored as the client sent it, and the refused one is not
    assert_stored(&h, job_id, "typescript").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_python_client_creates_gets_and_lists_a_job() {
    let generator = pip_tool(
        "SUNDIAL_OPENAPI_PYTHON_CLIENT",
        &format!("venv-openapi-python-client-{OPENAPI_PYTHON_CLIENT_VERSION}"),
        "openapi-python-client",
    );
    let mypy = pip_tool("SUNDIAL_MYPY", &format!("venv-mypy-{MYPY_VERSION}"), "mypy");
    // GIVEN the local server, and the Python client generated from openapi.json, with the smoke
    // program type-checked against it
    let (h, url, server) = serve("client-py").await;
    let dir = clients_dir().join("python");
    let venv_bin = generator.parent().expect("the venv's bin").to_path_buf();
    // The generator formats its output with ruff, which its venv holds.
    let path = format!("{}:{}", venv_bin.display(), std::env::var("PATH").unwrap_or_default());
    run(
        Command::new(&generator)
            .args(["generate", "--meta", "none", "--overwrite", "--fail-on-warning"])
            .arg("--path")
            .arg(clients_dir().join("../openapi.json"))
            .arg("--output-path")
            .arg(dir.join("sundial_client"))
            .env("PATH", &path),
        "openapi-python-client",
        "the document must stay generatable without warnings",
    )
    .await;
    // Only smoke.py is held to --strict: the generated code itself is not mypy-strict clean
    // (openapi-python-client 0.29.1), which is the generator's business, not the contract's.
    run(
        Command::new(&mypy)
            .args(["--strict", "--follow-imports=silent", "--python-executable"])
            .arg(venv_bin.join("python"))
            .arg("smoke.py")
            .current_dir(&dir),
        "mypy --strict",
        "smoke.py must type-check against the generated client",
    )
    .await;

    // WHEN the program creates, gets and lists a job and provokes two errors (the generated
    // client needs httpx and attrs, which the generator's venv holds)
    let job_id = "from-python";
    run(
        Command::new(venv_bin.join("python"))
            .arg(dir.join("smoke.py"))
            .env("SUNDIAL_API_URL", &url)
            .env("SUNDIAL_TENANT", TENANT)
            .env("SUNDIAL_SMOKE_JOB_ID", job_id),
        "the Python smoke program",
        "see its output above",
    )
    .await;
    server.abort();

    // THEN the job is stored as the client sent it, and the refused one is not
    assert_stored(&h, job_id, "python").await;
}
