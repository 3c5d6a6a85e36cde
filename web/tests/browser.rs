//! Browser test: the whole embedded tool (ten services, agent, controller, dashboard) driven through headless
//! Chromium (Debian `chromium`, installed by `scripts/test`) over the DevTools protocol. A short experiment with
//! Payment failing at 100 % and breakers enforcing turns a checkout breaker open on the live timeline within
//! seconds; the results page then shows the table. Screenshots are saved under the target dir. An action
//! without the token is refused. The simulator page redraws as a slider moves and makes a spec that parses.
//!
//! The DevTools client is the few calls needed, over the workspace's tokio-tungstenite: lighter than
//! chromiumoxide (a very large generated protocol crate) or fantoccini + chromedriver.

use controller::test_support;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_tungstenite::tungstenite::Message;
use web::{DashboardConfig, RunningDashboard};

const SPEC: &str = r#"name = "browser-outage"
rounds = 1
duration = "8s"
warmup = "1s"
time_scale = 1.0
order = "fixed"
seed = 3

[load]
users = 30
think_time = ["20ms", "100ms"]
mix = "online-boutique"
timeout = "3s"

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]

[breaker]
modes = ["enforce"]

[breaker.trip]
# Two, not five: on a loaded machine 30 users make only a few checkouts in the 8 s run (seen: 2 payment calls).
consecutive_failures = 2

[breaker.open]
base = "20s"
"#;

fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    for candidate in [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ] {
        if Path::new(candidate).exists() {
            return Some(PathBuf::from(candidate));
        }
    }
    None
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The DevTools calls this test needs, on one page session.
struct Page {
    socket: Socket,
    session: String,
    next_id: u64,
}

impl Page {
    #[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
    async fn call_raw(
        socket: &mut Socket,
        id: u64,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, Value> {
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        socket
            .send(Message::Text(message.to_string().into()))
            .await
            .expect("send to chromium");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let next = tokio::time::timeout(remaining, socket.next())
                .await
                .unwrap_or_else(|_| panic!("{method}: no answer from chromium within 30 s"));
            let Some(Ok(Message::Text(text))) = next else {
                continue;
            };
            let value: Value = serde_json::from_str(text.as_str()).expect("devtools JSON");
            if value["id"] == json!(id) {
                if let Some(error) = value.get("error") {
                    return Err(error.clone());
                }
                return Ok(value["result"].clone());
            }
        }
    }

    async fn open(browser_ws: &str) -> Page {
        let (mut socket, _) = tokio_tungstenite::connect_async(browser_ws)
            .await
            .expect("connect to chromium");
        let target = Page::call_raw(
            &mut socket,
            1,
            None,
            "Target.createTarget",
            json!({"url": "about:blank"}),
        )
        .await
        .expect("a target");
        let attached = Page::call_raw(
            &mut socket,
            2,
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        )
        .await
        .expect("attached");
        let session = attached["sessionId"]
            .as_str()
            .expect("session id")
            .to_owned();
        let mut page = Page {
            socket,
            session,
            next_id: 10,
        };
        page.call("Page.enable", json!({})).await;
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1400, "height": 1300, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
        page
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.try_call(method, params)
            .await
            .unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    async fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let session = self.session.clone();
        Page::call_raw(
            &mut self.socket,
            self.next_id,
            Some(&session),
            method,
            params,
        )
        .await
    }

    async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression}: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Navigates to `url` and waits for its page (not the one before it) to have loaded.
    async fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url })).await;
        let path = url
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|at| rest[at..].to_owned()))
            .unwrap_or_else(|| "/".to_owned());
        let path = path.split('?').next().unwrap_or("/").to_owned();
        self.wait_for(
            &format!(
                "location.pathname === {} && document.readyState === 'complete'",
                serde_json::to_string(&path).expect("json string")
            ),
            Duration::from_secs(15),
        )
        .await;
    }

    /// Polls `expression` until it is truthy; panics with `what` after `timeout`.
    #[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
    async fn wait_for(&mut self, expression: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            // A page navigating away in between answers with an error: not yet, ask again.
            let value = match self
                .try_call(
                    "Runtime.evaluate",
                    json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
                )
                .await
            {
                Ok(result) if result.get("exceptionDetails").is_none() => {
                    result["result"]["value"].clone()
                }
                Ok(result) if result["exceptionDetails"].to_string().contains("destroyed") => {
                    Value::Null
                }
                Ok(result) => panic!("{expression}: {}", result["exceptionDetails"]),
                Err(error) if error.to_string().contains("navigated") => Value::Null,
                Err(error) => panic!("{expression}: {error}"),
            };
            if !(value.is_null() || value == json!(false) || value == json!("")) {
                return value;
            }
            if Instant::now() >= deadline {
                panic!("waited {timeout:?} for `{expression}`");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Wide (1600 px) and narrow (800 px) screenshots of the current page, `NAME-1600.png` and `NAME-800.png`.
    async fn screenshots(&mut self, dir: &Path, name: &str) {
        for width in [1600, 800] {
            self.call(
                "Emulation.setDeviceMetricsOverride",
                json!({"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": false}),
            )
            .await;
            tokio::time::sleep(Duration::from_millis(1300)).await;
            // Nothing is wider than the window at either width.
            let overflow = self
                .eval("document.documentElement.scrollWidth - document.documentElement.clientWidth")
                .await;
            assert_eq!(overflow, json!(0), "{name} at {width} px scrolls sideways");
            assert_eq!(
                self.eval("document.documentElement.scrollWidth <= window.innerWidth")
                    .await,
                json!(true),
                "{name} at {width} px scrolls sideways"
            );
            // No card's content is clipped or scrolls inside it: tables, selects, inputs and canvases end
            // within their card.
            let clipped_content = self
                .eval(
                    "[].concat.apply([], Array.from(document.querySelectorAll('.card')).map(function (card) { \
                       var edge = card.getBoundingClientRect().right + 1, what = card.id || card.className; \
                       var out = card.scrollWidth > card.clientWidth + 1 ? [what + ' scrolls: ' + card.scrollWidth + ' > ' + card.clientWidth] : []; \
                       card.querySelectorAll('table, select, input, textarea, canvas, pre').forEach(function (e) { \
                         var box = e.getBoundingClientRect(); \
                         if (box.width && box.right > edge) { out.push(what + ' ' + e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' ends at ' + Math.round(box.right) + ' > ' + Math.round(edge)); } }); \
                       return out; }))",
                )
                .await;
            assert_eq!(
                clipped_content,
                json!([]),
                "{name} at {width} px: content runs past its card"
            );
            // The experiments table and the results summary fit their cards too (no scrolling inside them).
            let clipped = self
                .eval(
                    "['experiments', 'summary-table', 'endpoints'].map(id => document.getElementById(id)).filter(t => t \
                       && t.getBoundingClientRect().right > t.closest('.card').getBoundingClientRect().right + 1).map(t => t.id)",
                )
                .await;
            assert_eq!(
                clipped,
                json!([]),
                "{name} at {width} px: a table runs past its card"
            );
            self.screenshot(&dir.join(format!("{name}-{width}.png")))
                .await;
        }
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1400, "height": 1300, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
    }

    async fn screenshot(&mut self, path: &Path) {
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true}),
            )
            .await;
        let bytes = base64_decode(shot["data"].as_str().expect("screenshot data"));
        std::fs::write(path, bytes).expect("write screenshot");
        eprintln!("browser test: screenshot {}", path.display());
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |byte: u8| -> u32 {
        match byte {
            b'A'..=b'Z' => u32::from(byte - b'A'),
            b'a'..=b'z' => u32::from(byte - b'a') + 26,
            b'0'..=b'9' => u32::from(byte - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        }
    };
    let clean: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for chunk in clean.chunks(4) {
        let pad = chunk.iter().filter(|b| **b == b'=').count();
        let word = chunk
            .iter()
            .fold(0u32, |acc, byte| (acc << 6) | value(*byte))
            << (6 * (4 - chunk.len() as u32));
        let bytes = [(word >> 16) as u8, (word >> 8) as u8, word as u8];
        out.extend_from_slice(&bytes[..3 - pad.min(2)]);
    }
    out
}

/// What the live page's window holds of the run whose fault id starts with `fault_prefix`: its fault span as
/// drawn, the first tripped open after the span began, and how many seconds the window holds.
async fn window_holds(page: &mut Page, fault_prefix: &str) -> Value {
    page.wait_for(
        &format!(
            "(function () {{ var w = window.__tolerant.window; if (!w) {{ return null; }} \
               var fault = w.faults.find(s => (s.text || '').indexOf('{fault_prefix}') === 0) || null; \
               var open = fault && w.transitions.find(t => t.to === 'open' && !t.shadow && t.reason !== 'forced' && t.at_ms >= fault.from) || null; \
               return fault && {{ fault: fault, open: open, samples: w.samples }}; }})()"
        ),
        Duration::from_secs(10),
    )
    .await
}

fn assert_window_holds_the_run(holds: &Value, put: &Value, when: &str) {
    let from = holds["fault"]["from"].as_f64().unwrap_or(f64::NAN);
    let put = put.as_f64().unwrap_or(f64::NAN);
    assert!(
        (from - put).abs() < 1_000.0,
        "{when}: the fault span starts at its put ({put}): {holds}"
    );
    assert!(
        holds["open"]["at_ms"]
            .as_f64()
            .is_some_and(|opened| opened >= from),
        "{when}: the run's tripped open is in the window, after the fault: {holds}"
    );
    assert!(
        holds["samples"].as_u64().is_some_and(|n| n >= 8),
        "{when}: the run's seconds are in the window: {holds}"
    );
}

/// Starts Chromium with a fresh profile; returns it and its DevTools browser URL.
async fn launch(chromium: &Path, profile: &Path) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            "--window-size=1400,1300",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start chromium");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.split("DevTools listening on ").nth(1) {
                return Some(url.trim().to_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("chromium printed its DevTools URL within 30 s");
    // Keep draining stderr so chromium never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, found)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_shows_a_breaker_opening_and_the_results() {
    let Some(chromium) = find_chromium() else {
        eprintln!(
            "\n\n!!!!!!!! SKIPPING the browser test: no chromium found (install the Debian package \
             `chromium`, or set CHROMIUM=/path/to/chrome). scripts/test installs it. !!!!!!!!\n\n"
        );
        return;
    };
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-browser-test");
    let _ = std::fs::remove_dir_all(&artifacts);
    std::fs::create_dir_all(&artifacts).expect("artifact dir");
    let profile = artifacts.join("chromium-profile");

    let dashboard = RunningDashboard::start(DashboardConfig {
        bind: "127.0.0.1:0".parse().expect("addr"),
        database: artifacts.join("tolerant.db").display().to_string(),
        token: Some("browser-test-token".into()),
        ..DashboardConfig::default()
    })
    .await
    .expect("dashboard starts");
    let base = dashboard.url();
    let (mut chromium_process, browser_ws) = launch(&chromium, &profile).await;
    let mut page = Page::open(&browser_ws).await;

    // Without the token: viewing works, acting does not.
    page.goto(&format!("{base}gameday")).await;
    assert_eq!(
        page.eval("document.querySelector('#login-link') !== null")
            .await,
        json!(true)
    );
    let status = page
        .eval("fetch('/api/halt', {method: 'POST'}).then(r => r.status)")
        .await;
    assert_eq!(status, json!(401), "an API action without the token");
    page.eval("document.getElementById('halt-form').submit()")
        .await;
    page.wait_for(
        "document.body && document.body.innerText.includes('needs the token')",
        Duration::from_secs(10),
    )
    .await;

    // The simulator page needs no login: a slider moved redraws the totals, and the spec button gives a spec
    // the controller accepts.
    page.goto(&format!("{base}simulate")).await;
    page.wait_for("document.body.dataset.simulated", Duration::from_secs(15))
        .await;
    let totals = "document.querySelector('#sim-totals tbody').innerText";
    let before = page.eval(totals).await;
    let simulated = page.eval("document.body.dataset.simulated").await;
    page.eval(
        "const s = document.querySelector('input[name=open_window]'); s.value = '40'; \
         s.dispatchEvent(new Event('input', {bubbles: true})); true",
    )
    .await;
    page.wait_for(
        &format!("document.body.dataset.simulated !== {simulated}"),
        Duration::from_secs(15),
    )
    .await;
    let after = page.eval(totals).await;
    assert_ne!(before, after, "the totals follow the open-window slider");
    page.eval("document.getElementById('sim-spec').click(); true")
        .await;
    let spec = page
        .wait_for(
            "!document.getElementById('sim-spec-text').hidden && document.getElementById('sim-spec-text').value",
            Duration::from_secs(15),
        )
        .await;
    let spec = test_support::spec(spec.as_str().expect("spec text"));
    assert_eq!(spec.breaker.config.open().base(), Duration::from_secs(40));
    page.screenshots(&artifacts, "simulate").await;

    // Log in through the form.
    page.goto(&format!("{base}login?next=/experiments")).await;
    page.eval(
        "document.getElementById('token').value = 'browser-test-token'; \
         document.getElementById('login-form').submit(); true",
    )
    .await;
    page.wait_for(
        "location.pathname === '/experiments' && document.readyState === 'complete' \
         && document.body.innerText.includes('log out')",
        Duration::from_secs(10),
    )
    .await;

    // Every breaker of the stack has a lane and a tile before any transition, grouped by caller.
    page.goto(&format!("{base}live")).await;
    let lanes = page
        .wait_for(
            "window.__tolerant && window.__tolerant.lanes.length >= 14 && window.__tolerant.lanes",
            Duration::from_secs(15),
        )
        .await;
    for name in [
        "checkout->payment",
        "frontend->checkout",
        "frontend->ad",
        "recommendation->productcatalog",
    ] {
        assert!(
            lanes.as_array().is_some_and(|l| l.contains(&json!(name))),
            "{name} in {lanes}"
        );
    }
    assert_eq!(
        page.eval("document.querySelectorAll('#tiles .tile').length >= 14 && document.querySelectorAll('#events li').length === 0")
            .await,
        json!(true),
        "tiles for every breaker, and no transition happened yet"
    );
    page.screenshots(&artifacts, "live-idle").await;

    // A foreign breaker pushed to the dashboard gets a lane and a tile badged with its source.
    let pushed = page
        .eval(
            "fetch('/api/breaker-events', {method: 'POST', headers: {'Authorization': 'Bearer browser-test-token', \
             'Content-Type': 'application/json'}, body: JSON.stringify({service: 'shop', breaker: 'inventory', \
             to: 'half_open', source: 'pybreaker'})}).then(r => r.status)",
        )
        .await;
    assert!(pushed.as_u64().is_some_and(|s| s < 300), "push: {pushed}");
    page.wait_for(
        "window.__tolerant.sources && window.__tolerant.sources.inventory === 'pybreaker' \
         && document.querySelector('#tiles .tile[data-source=pybreaker]') !== null",
        Duration::from_secs(10),
    )
    .await;
    page.screenshots(&artifacts, "live-foreign").await;

    // Create the experiment from pasted TOML, then start it now.
    page.goto(&format!("{base}experiments")).await;
    let set_spec = format!(
        "document.getElementById('spec').value = {}; document.getElementById('create-form').submit(); true",
        serde_json::to_string(SPEC).expect("json string")
    );
    page.eval(&set_spec).await;
    page.wait_for(
        "document.readyState === 'complete' && document.querySelector('#experiments tr[data-id] .start-now') !== null",
        Duration::from_secs(10),
    )
    .await;
    page.eval("document.querySelector('#experiments tr[data-id] .start-now').click(); true")
        .await;
    page.wait_for(
        "location.pathname === '/live' && window.__tolerant && window.__tolerant.connected",
        Duration::from_secs(15),
    )
    .await;

    // The checkout path's breaker opens within seconds.
    let opened = page
        .wait_for(
            "(function () { var b = window.__tolerant.breakers; \
              return ['frontend->checkout', 'checkout->payment'].find(n => b[n] === 'open') || null; })()",
            Duration::from_secs(20),
        )
        .await;
    eprintln!("browser test: {opened} is open on the live page");
    assert_eq!(
        page.eval("document.querySelectorAll('#breaker-list li.open').length > 0")
            .await,
        json!(true)
    );
    assert_eq!(
        page.eval(&format!(
            "window.__tolerant.laneKinds['{}']",
            opened.as_str().unwrap_or_default()
        ))
        .await,
        json!("tripped"),
        "a breaker the failures opened is drawn as tripped"
    );
    assert!(
        page.eval("window.__tolerant.headline")
            .await
            .as_str()
            .is_some_and(|h| h.starts_with("Experiment run: browser-outage")),
        "the header says an experiment runs"
    );
    // Opens are counted as the results count them (after the warmup), the warmup's apart: together at least
    // the one that just opened.
    assert_eq!(
        page.eval("window.__tolerant.opens + window.__tolerant.warmupOpens >= 1")
            .await,
        json!(true)
    );
    // The histogram is per endpoint with its p95 bucket named in units people read (≤1 s, not ≤1kms).
    let p95 = page
        .wait_for(
            "document.getElementById('histogram-endpoint').options.length > 0 && window.__tolerant.histogramP95",
            Duration::from_secs(15),
        )
        .await;
    assert!(
        p95.as_str().is_some_and(|label| {
            let unit = label.rsplit(' ').next().unwrap_or_default();
            (label.starts_with('≤') || label.starts_with('>')) && (unit == "ms" || unit == "s")
        }),
        "{p95}"
    );
    page.eval("document.getElementById('p95-log').click(); true")
        .await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    page.screenshots(&artifacts, "live").await;
    // Drag-to-zoom on the live page too: the dragged range holds (live data keeps coming) until the reset.
    let zoomed = page
        .eval(
            "(function () { var c = document.getElementById('outcomes'), z = c.__zoom, box = c.getBoundingClientRect(); \
               var x = function (share) { return box.left + z.left + share * (z.right - z.left); }, y = box.top + 20; \
               c.dispatchEvent(new MouseEvent('mousedown', {clientX: x(0.1), clientY: y, button: 0, bubbles: true})); \
               window.dispatchEvent(new MouseEvent('mouseup', {clientX: x(0.6), clientY: y, bubbles: true})); \
               var r = window.__tolerant.zoom; \
               return !!r && document.getElementById('timeline').__zoom.t1 === r[1] && !document.getElementById('zoom-reset').hidden; })()",
        )
        .await;
    assert_eq!(
        zoomed,
        json!(true),
        "a drag on the live outcomes zooms every chart"
    );
    assert_eq!(
        page.eval("document.getElementById('zoom-reset').click(); window.__tolerant.zoom")
            .await,
        Value::Null
    );

    // The experiment finishes; the results page shows the table.
    page.wait_for(
        "fetch('/api/experiments').then(r => r.json()).then(l => l.length > 0 && l[0].status === 'finished')",
        Duration::from_secs(60),
    )
    .await;
    // After it ended, the live window still holds what happened in it: the run's transitions and its fault
    // span, which starts when the fault was put (the stored `applied`), before the breaker it opened.
    let put = page
        .eval(
            "fetch('/api/experiments/1/runs/1/timeline').then(r => r.json()).then(t => \
               Math.min.apply(null, t.faults.filter(f => f.event === 'applied').map(f => f.at_ms)))",
        )
        .await;
    let ended = window_holds(&mut page, "experiment-1-run-").await;
    assert_window_holds_the_run(&ended, &put, "after the experiment ended");
    // The per-endpoint table counts what the outcomes chart counts, and checkout's failures are plain in it.
    let table = page
        .eval(
            "(function () { var t = window.__tolerant.endpointTable, o = window.__tolerant.outcomeTotals; \
               var sum = function (k) { return Object.keys(t).reduce(function (a, n) { return a + t[n][k]; }, 0); }; \
               var row = document.querySelector('#endpoints tr[data-endpoint=\"POST /cart/checkout\"]'); \
               return { checkout: t['POST /cart/checkout'] || null, failures: sum('failures'), rejections: sum('rejections'), \
                 timeouts: sum('timeouts'), totals: o, shown: row ? row.children[2].innerText : null }; })()",
        )
        .await;
    assert_eq!(table["failures"], table["totals"]["failures"], "{table}");
    assert_eq!(
        table["rejections"], table["totals"]["rejections"],
        "{table}"
    );
    assert_eq!(table["timeouts"], table["totals"]["timeouts"], "{table}");
    let checkout = &table["checkout"];
    let not_ok = ["failures", "rejections", "timeouts"]
        .iter()
        .filter_map(|k| checkout[k].as_u64())
        .sum::<u64>();
    assert!(
        not_ok > 0 && checkout["requests"].as_u64().is_some_and(|n| n >= not_ok),
        "checkout fails with Payment failing: {table}"
    );
    assert_eq!(
        table["shown"].as_str().map(str::to_owned),
        checkout["failures"].as_u64().map(|n| n.to_string()),
        "the table shows checkout's failures: {table}"
    );
    // p50 / p95 of ok and of failed requests, the last second's and since the start: checkout's failed ones.
    let since = page
        .eval("window.__tolerant.endpointSince['POST /cart/checkout']")
        .await;
    assert!(
        since["failed"]
            .as_str()
            .is_some_and(|text| text.contains(" ms / ") && text.ends_with(" ms")),
        "checkout's failed p50 / p95 since start: {since}"
    );
    page.goto(&format!("{base}experiments/1/results")).await;
    let rows = page
        .wait_for(
            "document.querySelectorAll('#results-table thead th.condition').length",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(
        rows,
        json!(1),
        "one condition: error at 100 % with breakers enforcing"
    );
    let table = page
        .eval("document.getElementById('results-table').innerText")
        .await;
    assert!(
        table.as_str().is_some_and(|text| text.contains("enforce")),
        "{table}"
    );
    // The curated summary comes first, with units: availability in %, checkout p95 in ms.
    let summary = page
        .eval("Array.from(document.querySelectorAll('#summary-table tbody td')).map(td => td.innerText)")
        .await;
    let cells: Vec<&str> = summary
        .as_array()
        .map(|cells| cells.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(cells.len() >= 8, "{summary}");
    assert!(cells[1].ends_with(" %"), "availability in %: {summary}");
    // Checkout p95 of the successful checkouts (none may have succeeded at 100 %: then no figure, not 0 ms),
    // and beside it the failed or rejected ones' (the breaker rejected checkouts in this run).
    assert!(
        cells[3] == "–" || cells[3].ends_with(" ms"),
        "successful checkout p95 in ms: {summary}"
    );
    assert!(
        cells[4].ends_with(" ms"),
        "failed or rejected checkout p95 in ms: {summary}"
    );
    // The run replays from the store, drawn by the live page's code: lanes for the breakers that changed
    // state (the one that opened among them), the stored seconds, the fault that was applied.
    let replay = page
        .wait_for(
            "window.__replay && window.__replay.loaded > 0 && window.__replay",
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(replay["error"], Value::Null, "{replay}");
    assert!(
        replay["samples"].as_u64().is_some_and(|n| n >= 8),
        "a stored sample per second of the 9 s run: {replay}"
    );
    assert!(
        replay["lanes"]
            .as_array()
            .is_some_and(|lanes| lanes.iter().any(|lane| lane == &opened)),
        "the breaker that opened live has a lane in the replay: {replay}"
    );
    assert!(replay["faults"].as_u64().is_some_and(|n| n > 0), "{replay}");
    assert_eq!(
        page.eval("document.getElementById('replay-note').innerText.includes('stored seconds')")
            .await,
        json!(true)
    );
    // Drag across the replayed timeline: every chart shows the dragged range until the reset.
    let zoomed = page
        .eval(
            "(function () { var c = document.getElementById('replay-timeline'), z = c.__zoom, box = c.getBoundingClientRect(); \
               var x = function (share) { return box.left + z.left + share * (z.right - z.left); }, y = box.top + 10; \
               c.dispatchEvent(new MouseEvent('mousedown', {clientX: x(0.25), clientY: y, button: 0, bubbles: true})); \
               window.dispatchEvent(new MouseEvent('mousemove', {clientX: x(0.75), clientY: y, bubbles: true})); \
               window.dispatchEvent(new MouseEvent('mouseup', {clientX: x(0.75), clientY: y, bubbles: true})); \
               var r = window.__replay.zoom; \
               return r && { share: (r[1] - r[0]) / (z.t1 - z.t0), reset: !document.getElementById('zoom-reset').hidden, \
                 outcomes: document.getElementById('replay-outcomes').__zoom.t0 === r[0] }; })()",
        )
        .await;
    assert!(
        zoomed["share"]
            .as_f64()
            .is_some_and(|share| (share - 0.5).abs() < 0.02),
        "half the run picked: {zoomed}"
    );
    assert_eq!(zoomed["reset"], json!(true), "{zoomed}");
    assert_eq!(
        zoomed["outcomes"],
        json!(true),
        "the other charts follow: {zoomed}"
    );
    page.screenshots(&artifacts, "results-zoomed").await;
    assert_eq!(
        page.eval("document.getElementById('zoom-reset').click(); window.__replay.zoom")
            .await,
        Value::Null
    );
    page.screenshots(&artifacts, "results").await;

    // A later page load after the experiment finished does not say it runs, and its window holds the same.
    page.goto(&format!("{base}live")).await;
    page.wait_for(
        "window.__tolerant && window.__tolerant.snapshots > 0 && window.__tolerant.phase === 'finished'",
        Duration::from_secs(10),
    )
    .await;
    let reloaded = window_holds(&mut page, "experiment-1-run-").await;
    assert_window_holds_the_run(&reloaded, &put, "after a reload");
    assert_eq!(
        reloaded["fault"]["from"], ended["fault"]["from"],
        "a reload draws the fault span where the page drew it"
    );

    // Abort: a second, long experiment is started and aborted; a fresh page load shows it aborted.
    let create = format!(
        "fetch('/api/experiments', {{method: 'POST', headers: {{'x-csrf-token': document.querySelector('meta[name=csrf-token]').content}}, body: {}}}).then(r => r.json()).then(j => j.id)",
        serde_json::to_string(
            &SPEC
                .replace("browser-outage", "browser-abort")
                .replace("duration = \"8s\"", "duration = \"120s\"")
        )
        .expect("json")
    );
    let second = page.eval(&create).await;
    assert_eq!(second, json!(2), "the second experiment is created");
    page.eval("fetch('/api/experiments/2/start', {method: 'POST', headers: {'x-csrf-token': document.querySelector('meta[name=csrf-token]').content}}).then(r => r.status)")
        .await;
    page.wait_for(
        "window.__tolerant.phase === 'running' && window.__tolerant.headline.includes('browser-abort')",
        Duration::from_secs(20),
    )
    .await;
    let aborted = page
        .eval("fetch('/api/experiments/2/abort', {method: 'POST', headers: {'x-csrf-token': document.querySelector('meta[name=csrf-token]').content}}).then(r => r.status)")
        .await;
    assert_eq!(aborted, json!(200));
    page.wait_for(
        "window.__tolerant.phase === 'aborted'",
        Duration::from_secs(10),
    )
    .await;
    page.goto(&format!("{base}live")).await;
    page.wait_for(
        "window.__tolerant && window.__tolerant.snapshots > 0 && window.__tolerant.phase === 'aborted' \
         && !window.__tolerant.headline.startsWith('Experiment run') \
         && document.querySelectorAll('#events li').length > 0",
        Duration::from_secs(10),
    )
    .await;
    // A later experiment does not wipe the earlier one from the window.
    let after_second = window_holds(&mut page, "experiment-1-run-").await;
    assert_window_holds_the_run(&after_second, &put, "after a second experiment");
    page.screenshots(&artifacts, "live-after").await;
    // Every page fits 800 px without scrolling sideways (the screenshots assert it): the experiments table
    // with both experiments, the advisor, the login page.
    for (path, name) in [
        ("experiments", "experiments"),
        ("advisor", "advisor"),
        ("login", "login"),
    ] {
        page.goto(&format!("{base}{path}")).await;
        page.screenshots(&artifacts, name).await;
    }

    // Game day: a manual fault shows on the fault bar, halt clears it, an annotation lands on the timeline.
    page.goto(&format!("{base}gameday")).await;
    page.wait_for(
        "window.__tolerant && window.__tolerant.connected",
        Duration::from_secs(10),
    )
    .await;
    page.eval(
        "document.getElementById('rate').value = '100'; \
         document.getElementById('fault-form').requestSubmit(); true",
    )
    .await;
    page.wait_for(
        "location.pathname === '/gameday' && window.__tolerant && window.__tolerant.activeFaults === 1",
        Duration::from_secs(15),
    )
    .await;
    assert_eq!(
        page.eval(
            "[document.getElementById('rate').value, document.getElementById('rate-value').textContent]"
        )
        .await,
        json!(["100", "100 %"]),
        "the fault form keeps the rate it applied (slider and readout) after the redirect"
    );
    page.eval("document.querySelector('#annotate-form input[name=text]').value = 'paged the payment team'; \
               document.getElementById('annotate-form').submit(); true")
        .await;
    page.wait_for(
        "window.__tolerant && window.__tolerant.connected && window.__tolerant.notes === 1 \
         && window.__tolerant.activeFaults === 1",
        Duration::from_secs(15),
    )
    .await;
    assert!(
        page.eval("document.getElementById('active-faults').innerText")
            .await
            .as_str()
            .is_some_and(
                |text| text.contains("gameday: error status 500 at 100 % on payment")
                    && text.contains("lease")
            ),
        "the active fault shows its kind, rate and lease"
    );

    // Forced open by its mode looks different from tripped, reads "forced open" on its chip and is not an open.
    let opens_before = page.eval("window.__tolerant.opens").await;
    page.eval(
        "var f = document.getElementById('breaker-form'); f.elements['service'].value = 'checkout'; \
         f.querySelector('button[value=forced-open]').click(); true",
    )
    .await;
    page.wait_for(
        "location.pathname === '/gameday' && document.getElementById('notice') \
         && window.__tolerant && window.__tolerant.laneKinds['checkout->payment'] === 'forced' \
         && document.querySelector('.tile[data-breaker=\"checkout->payment\"][data-state=forced]') !== null",
        Duration::from_secs(15),
    )
    .await;
    assert!(
        page.eval("document.getElementById('notice').innerText")
            .await
            .as_str()
            .is_some_and(|text| text.contains("Every breaker of checkout is now forced-open")),
        "the mode switch confirms what it did"
    );
    assert_eq!(
        page.eval("[window.__tolerant.chips['checkout->payment'], window.__tolerant.opens]")
            .await,
        json!(["forced open", opens_before]),
        "forced open on its chip, and not counted among the opens"
    );
    assert_eq!(
        page.eval("document.getElementById('breaker-form').elements['service'].value")
            .await,
        json!("checkout"),
        "the form keeps its values after the action"
    );
    page.screenshots(&artifacts, "gameday").await;

    // Halt clears the fault, says so, and puts the breakers back to enforce on request.
    page.eval("document.getElementById('halt-enforce').checked = true; document.getElementById('halt').click(); true")
        .await;
    page.wait_for(
        "window.__tolerant && window.__tolerant.connected && window.__tolerant.activeFaults === 0 \
         && document.getElementById('notice') && window.__tolerant.modes['checkout->payment'] === 'enforce'",
        Duration::from_secs(15),
    )
    .await;
    let notice = page
        .eval("document.getElementById('notice').innerText")
        .await;
    assert!(
        notice
            .as_str()
            .is_some_and(|text| text.contains("cleared 1 fault: gameday")
                && text.contains("back to enforce")),
        "{notice}"
    );

    // A tile switches its own breaker alone (leased like the service-wide switch); the others keep their mode.
    page.eval(
        "document.querySelector('.tile[data-breaker=\"checkout->shipping\"] .tile-switch button[data-mode=disabled]').click(); true",
    )
    .await;
    page.wait_for(
        "location.pathname === '/gameday' && document.getElementById('notice') && window.__tolerant \
         && window.__tolerant.connected && window.__tolerant.modes['checkout->shipping'] === 'disabled'",
        Duration::from_secs(15),
    )
    .await;
    assert_eq!(
        page.eval("[window.__tolerant.modes['checkout->payment'], window.__tolerant.chips['checkout->shipping'], \
                   document.getElementById('notice').innerText.includes('Breaker checkout->shipping of checkout is now disabled')]")
            .await,
        json!(["enforce", "disabled", true]),
        "one breaker switched from its tile, its chip disabled, the notice naming it"
    );

    // The game day's own load: the toggle drives traffic without an experiment, and stops.
    page.eval(
        "var f = document.getElementById('load-form'); f.elements['users'].value = '8'; \
         f.elements['think_min_ms'].value = '50'; f.elements['think_max_ms'].value = '200'; \
         document.getElementById('load-start').click(); true",
    )
    .await;
    page.wait_for(
        "location.pathname === '/gameday' && window.__tolerant && window.__tolerant.loadUsers === 8 \
         && window.__tolerant.lastOk > 0 && window.__tolerant.headline.includes('load 8 users')",
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(
        page.eval("document.getElementById('load-form').elements['users'].value")
            .await,
        json!("8"),
        "the load form keeps its values"
    );
    // Under load with Payment failing: a shadow breaker that would open reads "would open", a disabled one
    // reads disabled (not a healthy closed breaker).
    // The modes first, then the fault: the shadow breaker sees the failures itself (an enforcing one would
    // have tripped for real before the switch).
    for (service, mode) in [("checkout", "shadow"), ("recommendation", "disabled")] {
        page.eval(&format!(
            "var f = document.getElementById('breaker-form'); f.elements['service'].value = '{service}'; \
             f.querySelector('button[value={mode}]').click(); true"
        ))
        .await;
        page.wait_for(
            &format!(
                "location.pathname === '/gameday' && window.__tolerant && window.__tolerant.connected \
                 && window.__tolerant.modes['{service}->' + ({{checkout: 'payment', recommendation: 'productcatalog'}})['{service}']] === '{mode}'"
            ),
            Duration::from_secs(15),
        )
        .await;
    }
    page.eval(
        "document.getElementById('rate').value = '100'; \
         document.getElementById('fault-form').requestSubmit(); true",
    )
    .await;
    page.wait_for(
        "location.pathname === '/gameday' && window.__tolerant && window.__tolerant.activeFaults === 1",
        Duration::from_secs(15),
    )
    .await;
    let chips = page
        .wait_for(
            "window.__tolerant.chips['checkout->payment'] === 'would open' \
             && document.querySelector('.tile[data-breaker=\"checkout->payment\"][data-state=shadow]') !== null \
             && window.__tolerant.chips",
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(
        chips["recommendation->productcatalog"],
        json!("disabled"),
        "{chips}"
    );
    assert_eq!(
        page.eval("window.__tolerant.laneKinds['recommendation->productcatalog']")
            .await,
        json!("disabled")
    );
    page.screenshots(&artifacts, "gameday-load").await;
    page.eval("document.getElementById('halt-enforce').checked = true; document.getElementById('halt').click(); true")
        .await;
    page.wait_for(
        "location.pathname === '/gameday' && window.__tolerant && window.__tolerant.connected \
         && window.__tolerant.activeFaults === 0 && window.__tolerant.modes['checkout->payment'] === 'enforce'",
        Duration::from_secs(15),
    )
    .await;
    // Back to enforce, the span it was disabled in stays drawn as disabled (grey), not as a closed breaker.
    assert_eq!(
        page.eval(
            "[window.__tolerant.laneKinds['recommendation->productcatalog'], \
                   window.__tolerant.disabledSpans['recommendation->productcatalog'] >= 1]"
        )
        .await,
        json!(["closed", true]),
        "the earlier disabled span of a re-enabled breaker"
    );
    page.eval("document.getElementById('load-stop').click(); true")
        .await;
    page.wait_for(
        "location.pathname === '/gameday' && window.__tolerant && window.__tolerant.connected \
         && window.__tolerant.snapshots > 0 && window.__tolerant.loadUsers === 0",
        Duration::from_secs(15),
    )
    .await;

    drop(page);
    let _ = chromium_process.kill().await;
    dashboard.shutdown().await;
    let _ = std::fs::remove_dir_all(&profile);
}
