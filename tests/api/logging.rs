//! What the logs say about a failing request. The subscriber is installed for this test's
//! thread only, so the test runs on a current-thread runtime where every task shares it.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;

use crate::helpers::spawn_app;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_panic_and_an_internal_error_are_logged_with_the_trace_id_only() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_current_span(true)
        .with_writer(capture.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let app = spawn_app().await;
    let panicked = app.send(app.client.get(app.url("/v1/test/panic"))).await;
    panicked.expect_error(500, "internal_error");
    let failed = app.send(app.client.post(app.url("/v1/test/fail"))).await;
    failed.expect_error(500, "internal_error");

    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let with_trace = |id: &str| -> Vec<&serde_json::Value> {
        lines
            .iter()
            .filter(|l| l.to_string().contains(id))
            .collect()
    };

    let id = panicked.header("x-trace-id").unwrap();
    let panic_lines = with_trace(id);
    assert!(
        panic_lines
            .iter()
            .any(|l| l["fields"]["message"] == "handler panicked"
                && l["fields"]["panic"]
                    .as_str()
                    .is_some_and(|p| p.contains("secret panic detail"))),
        "the panic is logged with its trace id: {panic_lines:#?}"
    );

    let id = failed.header("x-trace-id").unwrap();
    let fail_lines = with_trace(id);
    assert!(
        fail_lines.iter().any(|l| l["level"] == "ERROR"
            && l["fields"]["error"]
                .as_str()
                .is_some_and(|e| e.contains("secret database detail"))),
        "the cause of a 500 is logged with its trace id: {fail_lines:#?}"
    );
}
