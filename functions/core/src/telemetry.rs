//! Logging for every binary (tick, worker, worker-ecs, api, the `sundial` CLI): one call,
//! [`init`], over the Lambda runtime's own subscriber helper, so no binary builds its own.
//!
//! `lambda_runtime::tracing::init_default_subscriber_with_writer` follows Lambda's advanced
//! logging controls: `AWS_LAMBDA_LOG_FORMAT=JSON` makes every line a JSON object (otherwise
//! plain text). `RUST_LOG`, when set, decides what is logged (a level, or per-target directives
//! such as `sundial_core=debug,info`); otherwise the level is `AWS_LAMBDA_LOG_LEVEL`, else INFO.
//! On AWS the CDK construct turns on the JSON format and sets the level, on the Lambdas through
//! their logging config and on the ECS worker through the same two variables, and leaves
//! `RUST_LOG` unset so the level applies (`infra/lib/sundial-scheduler.ts`).
//!
//! Lines go to stderr: stdout carries the EMF metric lines (`crate::metrics`) and the CLI's
//! own output.

use std::sync::Once;

/// Installs the global subscriber. A second call does nothing, and so does a call after the
/// embedding program (a test harness, a binary of your own) installed one: the helper panics
/// on a second global subscriber, and the first one set wins either way.
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if !tracing::dispatcher::has_been_set() {
            lambda_runtime::tracing::init_default_subscriber_with_writer(std::io::stderr);
        }
    });
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use std::process::Command;

    /// Set only in the child process the tests below start.
    const CHILD: &str = "TELEMETRY_TEST_CHILD";
    const CHILD_TEST: &str = "telemetry::tests::child_logs_one_line_per_level";

    /// Does its work only in a child process: initialises twice, logs one line per level.
    #[test]
    fn child_logs_one_line_per_level() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        super::init();
        super::init();
        tracing::debug!("debug line");
        tracing::info!("info line");
        tracing::warn!("warn line");
    }

    /// The child's stderr with exactly `vars` among the logging variables.
    fn child_stderr(vars: &[(&str, &str)]) -> String {
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        let mut cmd = Command::new(exe);
        cmd.args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"]).env(CHILD, "1");
        for k in ["AWS_LAMBDA_LOG_FORMAT", "AWS_LAMBDA_LOG_LEVEL", "RUST_LOG", "NO_COLOR"] {
            cmd.env_remove(k);
        }
        cmd.envs(vars.iter().copied());
        let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// The messages of the JSON lines in `stderr` (other lines are the test harness's).
    fn json_messages(stderr: &str) -> Vec<String> {
        stderr
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| v["fields"]["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn lambda_json_format_gives_json_lines_from_info_up() {
        let err = child_stderr(&[("AWS_LAMBDA_LOG_FORMAT", "JSON")]);
        assert_eq!(json_messages(&err), ["info line", "warn line"], "{err}");
    }

    #[test]
    fn lambda_log_level_sets_the_level() {
        let err = child_stderr(&[("AWS_LAMBDA_LOG_FORMAT", "JSON"), ("AWS_LAMBDA_LOG_LEVEL", "DEBUG")]);
        assert_eq!(json_messages(&err), ["debug line", "info line", "warn line"], "{err}");
    }

    #[test]
    fn rust_log_when_set_wins_over_the_lambda_level() {
        let err = child_stderr(&[
            ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
            ("AWS_LAMBDA_LOG_LEVEL", "DEBUG"),
            ("RUST_LOG", "warn"),
        ]);
        assert_eq!(json_messages(&err), ["warn line"], "{err}");
    }

    #[test]
    fn rust_log_filters_and_text_is_the_default_format() {
        let err = child_stderr(&[("RUST_LOG", "warn")]);
        assert!(json_messages(&err).is_empty(), "{err}");
        assert!(err.contains("warn line") && !err.contains("info line"), "{err}");
    }
}
