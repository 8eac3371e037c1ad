//! What the logs say about a failing request.
//!
//! tracing caches per call site whether anyone listens, process-wide, so a subscriber scoped
//! to one test thread can miss events while other tests run. The scenario therefore runs in
//! a child process of this test binary, with a global JSON subscriber on its stdout.

use std::process::Command;

use serde_json::Value;

use crate::support::spawn_app;

const CHILD_ENV: &str = "MERCHANT_ADMIN_LOGGING_CHILD";
const TEST_NAME: &str = "logging::a_panic_and_an_internal_error_are_logged_with_the_trace_id";

#[tokio::test]
async fn a_panic_and_an_internal_error_are_logged_with_the_trace_id() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return child_scenario().await;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let marker = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} missing from:\n{stdout}"))
            .to_string()
    };
    let (panic_id, fail_id) = (marker("PANIC_TRACE_ID"), marker("FAIL_TRACE_ID"));
    let lines: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let with_trace = |id: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|l| l.to_string().contains(id))
            .collect()
    };

    let panic_lines = with_trace(&panic_id);
    assert!(
        panic_lines
            .iter()
            .any(|l| l["fields"]["message"] == "handler panicked"
                && l["fields"]["panic"]
                    .as_str()
                    .is_some_and(|p| p.contains("secret panic detail"))),
        "the panic is logged with its trace id: {panic_lines:#?}"
    );
    let fail_lines = with_trace(&fail_id);
    assert!(
        fail_lines.iter().any(|l| l["level"] == "ERROR"
            && l["fields"]["error"]
                .as_str()
                .is_some_and(|e| e.contains("secret database detail"))),
        "the cause of a 500 is logged with its trace id: {fail_lines:#?}"
    );
}

/// Runs in the child process: the only test there, so a global subscriber is safe.
async fn child_scenario() {
    tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_writer(std::io::stdout)
        .init();
    let app = spawn_app().await;
    let panicked = app.send(app.client.get(app.url("/v1/test/panic"))).await;
    panicked.expect_error(500, "internal_error");
    assert!(!panicked.text.contains("secret"));
    let failed = app.send(app.client.post(app.url("/v1/test/fail"))).await;
    failed.expect_error(500, "internal_error");
    println!("PANIC_TRACE_ID={}", panicked.header("x-trace-id").unwrap());
    println!("FAIL_TRACE_ID={}", failed.header("x-trace-id").unwrap());
}
