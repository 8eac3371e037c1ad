//! A real headless Chromium for the widget tests, driven over WebDriver (fantoccini) through a
//! `chromedriver` on an ephemeral loopback port. Chromium is walled in: no proxy it can use, no
//! name it can resolve but localhost, no background or component traffic, a fresh profile;
//! it reaches the test server on 127.0.0.1 and nothing else.
//!
//! Missing Chromium or chromedriver fails the test with what to install: CI installs them
//! (`.ci/run`), so a silent skip would hide the widget tests.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Map, Value, json};
use tempfile::TempDir;
use tokio::sync::{Semaphore, SemaphorePermit};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The flags every session gets, besides its own `--user-data-dir`.
const FLAGS: [&str; 7] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
];
/// The proxy every request but localhost's goes to: a closed port, so nothing leaves.
const NO_PROXY: &str = "127.0.0.1:9";
/// The address of `path` on the test server as the browser must spell it: the resolver rules
/// map every name, IP literals included, to nothing except `localhost`.
pub fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://localhost:{}{path}", addr.port())
}

const WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);

/// One browser at a time: two cores cannot run several Chromiums and the suite alongside.
static SLOT: Semaphore = Semaphore::const_new(1);

pub struct Browser {
    client: Client,
    session_id: String,
    driver: Child,
    driver_port: u16,
    _slot: SemaphorePermit<'static>,
    // Last: removed once the driver and the browser are gone.
    _profile: TempDir,
}

fn require(path: &str, package: &str) {
    assert!(
        Path::new(path).exists(),
        "browser tests need {path} (Debian package {package}): \
         run `apt-get install -y chromium chromium-driver`; .ci/run installs them"
    );
}

impl Browser {
    /// Starts chromedriver and opens a session; panics with what is missing.
    pub async fn start() -> Browser {
        Self::start_behind(NO_PROXY, &[]).await
    }

    /// A browser whose pages see `prefers-color-scheme: dark`, for the dark theme's checks.
    pub async fn start_dark() -> Browser {
        Self::start_behind(
            NO_PROXY,
            &[
                "--force-dark-mode",
                "--blink-settings=preferredColorScheme=0",
            ],
        )
        .await
    }

    /// A browser whose every request that is not to localhost goes to a local listener that
    /// records it and answers nothing: the test asserts the page asked for nothing outside.
    pub async fn start_watching_egress() -> (Browser, Egress) {
        let egress = Egress::start().await;
        let browser = Self::start_behind(&egress.addr.to_string(), &[]).await;
        (browser, egress)
    }

    async fn start_behind(proxy: &str, extra: &[&str]) -> Browser {
        require(CHROMIUM, "chromium");
        require(CHROMEDRIVER, "chromium-driver");
        let slot = SLOT
            .acquire()
            .await
            .expect("the browser slot is never closed");
        let profile = tempfile::tempdir().expect("temp dir");
        let log_path = profile.path().join("chromedriver.log");
        let log = File::create(&log_path).expect("chromedriver log");
        let mut driver = Command::new(CHROMEDRIVER)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            // Its own process group, so Drop can take Chromium down with it.
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        let driver_port = match driver_port(&log_path, &mut driver).await {
            Ok(port) => port,
            Err(e) => {
                let _ = driver.kill();
                let _ = driver.wait();
                panic!("{e}");
            }
        };

        let user_data = format!(
            "--user-data-dir={}",
            profile.path().join("chrome").display()
        );
        let proxy = format!("--proxy-server={proxy}");
        let mut args: Vec<&str> = FLAGS.to_vec();
        args.push(&proxy);
        args.push(&user_data);
        args.extend_from_slice(extra);
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
        });
        let Value::Object(caps) = caps else {
            unreachable!()
        };
        let connect = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{driver_port}"))
            .await;
        let client = match connect {
            Ok(c) => c,
            Err(e) => {
                let _ = driver.kill();
                let _ = driver.wait();
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                panic!("could not open a Chromium session: {e}\nchromedriver said:\n{log}");
            }
        };
        let session_id = client
            .session_id()
            .await
            .expect("session id")
            .expect("a session is open");
        let browser = Browser {
            client,
            session_id,
            driver,
            driver_port,
            _slot: slot,
            _profile: profile,
        };
        // A fixed size makes screenshots comparable from run to run.
        browser
            .client
            .set_window_size(1280, 800)
            .await
            .expect("set the window size");
        browser
    }

    pub async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("navigate");
    }

    pub async fn reload(&self) {
        self.client.refresh().await.expect("reload");
    }

    /// The first element matching `css`, failing the test when there is none.
    pub async fn find(&self, css: &str) -> Element {
        match self.client.find(Locator::Css(css)).await {
            Ok(el) => el,
            Err(e) => panic!("no element matches {css}: {e}"),
        }
    }

    pub async fn count(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .expect("find_all")
            .len()
    }

    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.expect("click");
    }

    /// Types into the element as a user would (key events, so input handlers run).
    pub async fn type_into(&self, css: &str, text: &str) {
        self.find(css)
            .await
            .send_keys(text)
            .await
            .expect("send keys");
    }

    /// The `value` property of an input or textarea.
    pub async fn value(&self, css: &str) -> String {
        self.find(css)
            .await
            .prop("value")
            .await
            .expect("read value")
            .unwrap_or_default()
    }

    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.expect("read text")
    }

    pub async fn is_displayed(&self, css: &str) -> bool {
        match self.client.find(Locator::Css(css)).await {
            Ok(el) => el.is_displayed().await.unwrap_or(false),
            Err(_) => false,
        }
    }

    /// Runs `js` (a function body: `return ...`) in the page.
    pub async fn eval(&self, js: &str) -> Value {
        match self.client.execute(js, vec![]).await {
            Ok(v) => v,
            Err(e) => panic!("script failed: {e}\n{js}"),
        }
    }

    /// Polls the JavaScript expression `cond` until it is true, up to a deadline; on timeout
    /// saves a screenshot named after `what` and fails the test.
    pub async fn wait_for(&self, what: &str, cond: &str) {
        self.wait_for_within(what, cond, WAIT).await;
    }

    /// [`Browser::wait_for`] with its own deadline, for pages that take longer to draw
    /// (the API reference renders a 180-operation document on a busy machine).
    pub async fn wait_for_within(&self, what: &str, cond: &str, limit: Duration) {
        let js = format!("return Boolean({cond});");
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Value::Bool(true)) = self.client.execute(&js, vec![]).await {
                return;
            }
            if Instant::now() > deadline {
                let shot = self.screenshot(&format!("timeout-{}", slug(what))).await;
                panic!(
                    "gave up after {limit:?} waiting for {what} ({cond}); screenshot: {}",
                    shot.display()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until an element matching `css` is displayed.
    pub async fn wait_visible(&self, css: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.is_displayed(css).await {
            if Instant::now() > deadline {
                let shot = self.screenshot(&format!("timeout-{}", slug(css))).await;
                panic!(
                    "gave up after {WAIT:?} waiting for {css} to show; screenshot: {}",
                    shot.display()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Saves a PNG of the viewport as `target/browser-shots/<name>.png` and returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = shots_dir();
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write screenshot");
        path
    }

    /// The browser's windows (tabs), in the order WebDriver lists them.
    pub async fn windows(&self) -> Vec<fantoccini::wd::WindowHandle> {
        self.client.windows().await.expect("list windows")
    }

    pub async fn switch_to(&self, window: fantoccini::wd::WindowHandle) {
        self.client
            .switch_to_window(window)
            .await
            .expect("switch window");
    }

    pub async fn set_size(&self, width: u32, height: u32) {
        self.client
            .set_window_size(width, height)
            .await
            .expect("set the window size");
    }

    /// Screenshots of the page as a desktop (1280×800) and a phone (390×844) show it, as
    /// `<name>-desktop.png` and `<name>-phone.png`; the window is left at desktop size.
    pub async fn screenshots(&self, name: &str) {
        self.screenshot(&format!("{name}-desktop")).await;
        self.set_size(390, 844).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.screenshot(&format!("{name}-phone")).await;
        self.set_size(1280, 800).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    /// Runs axe-core (vendored in `tests/vendor/`) on the page for WCAG 2.1 A and AA and
    /// returns the serious and critical violations, one line each (rule, impact, targets).
    pub async fn accessibility_violations(&self) -> Vec<String> {
        static AXE: &str = include_str!("../../vendor/axe.min.js");
        let present = self.eval("return typeof window.axe === 'object';").await;
        if present != Value::Bool(true) {
            self.eval(&format!("{AXE}\nreturn true;")).await;
        }
        let js = "const done = arguments[arguments.length - 1];
            axe.run(document, {
              runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
              resultTypes: ['violations'],
            }).then(r => done(r.violations
                .filter(v => v.impact === 'serious' || v.impact === 'critical')
                .map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at '
                  + v.nodes.slice(0, 5).map(n => n.target.join(' ')).join(', '))),
              e => done(['axe failed: ' + e]));";
        match self.client.execute_async(js, vec![]).await {
            Ok(Value::Array(v)) => v
                .into_iter()
                .map(|x| x.as_str().unwrap_or_default().to_owned())
                .collect(),
            Ok(other) => panic!("axe answered {other}"),
            Err(e) => panic!("axe did not run: {e}"),
        }
    }

    /// Everything in the page origin's `localStorage`.
    pub async fn local_storage(&self) -> Map<String, Value> {
        let v = self
            .eval(
                "const o = {};
                 for (let i = 0; i < localStorage.length; i++) {
                   const k = localStorage.key(i);
                   o[k] = localStorage.getItem(k);
                 }
                 return o;",
            )
            .await;
        match v {
            Value::Object(m) => m,
            other => panic!("localStorage read as {other}"),
        }
    }
}

impl Drop for Browser {
    /// Ends the session (Chromium quits), then chromedriver's process group. Synchronous, so
    /// it also runs when a failing test unwinds, whatever state the runtime is in.
    fn drop(&mut self) {
        let _ = delete_session(self.driver_port, &self.session_id);
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Reads the port chromedriver picked from its log (`--port=0`: no port race).
async fn driver_port(log: &Path, driver: &mut Child) -> Result<u16, String> {
    const MARK: &str = "started successfully on port ";
    let deadline = Instant::now() + WAIT;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(port) = text
            .split_once(MARK)
            .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|p| p.parse().ok())
        {
            return Ok(port);
        }
        if let Ok(Some(status)) = driver.try_wait() {
            return Err(format!("chromedriver exited ({status}):\n{text}"));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "chromedriver did not start within {WAIT:?}:\n{text}"
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `DELETE /session/{id}` over a plain socket: Drop cannot await the WebDriver client.
fn delete_session(port: u16, id: &str) -> std::io::Result<()> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(WAIT))?;
    s.set_write_timeout(Some(WAIT))?;
    write!(
        s,
        "DELETE /session/{id} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    // Its answer comes once Chromium has quit.
    let mut sink = Vec::new();
    s.read_to_end(&mut sink)?;
    Ok(())
}

fn shots_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    target.join("browser-shots")
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A stand-in proxy that records the first line of each request sent to it (for HTTPS, the
/// `CONNECT host:443` line) and closes the connection.
pub struct Egress {
    pub addr: SocketAddr,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Egress {
    async fn start() -> Egress {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the egress watcher");
        let addr = listener.local_addr().expect("its address");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    use tokio::io::AsyncReadExt;
                    let mut buf = vec![0u8; 1024];
                    let n = tokio::time::timeout(Duration::from_secs(2), conn.read(&mut buf))
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .unwrap_or(0);
                    let text = String::from_utf8_lossy(&buf[..n]);
                    let line = text.lines().next().unwrap_or("(nothing sent)").to_owned();
                    log.lock().unwrap().push(line);
                });
            }
        });
        Egress { addr, seen, task }
    }

    /// Every request line that reached the watcher so far.
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        self.task.abort();
    }
}
