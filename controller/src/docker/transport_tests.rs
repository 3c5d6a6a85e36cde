//! The engine's answers are bounded: against a fake engine on a unix socket started here, an endless container
//! list is cut at the cap (the fake counts the bytes it managed to send) and a body that never comes ends at
//! the time cap, each an error naming the engine call. The fake refuses, as the engine does, a request without
//! a Host header or not in origin form.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;

use super::Engine;

/// What the fake engine does when asked for containers.
#[derive(Debug, Clone, Copy)]
enum Containers {
    /// A chunked body that never ends, written as fast as the client reads.
    Endless,
    /// Headers promising two bytes, then nothing.
    Silent,
}

/// The fake engine's count of body bytes it sent, and a notice when its endless writer was stopped.
struct Fake {
    served: Arc<AtomicU64>,
    stopped: Arc<Notify>,
    dir: PathBuf,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Fake {
    fn socket(&self) -> String {
        self.dir.join("engine.sock").to_str().unwrap().to_owned()
    }
}

async fn fake_engine(name: &str, containers: Containers) -> Fake {
    let dir = std::env::temp_dir().join(format!("tolerant-engine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let listener = UnixListener::bind(dir.join("engine.sock")).unwrap();
    let fake = Fake {
        served: Arc::default(),
        stopped: Arc::default(),
        dir,
    };
    let (served, stopped) = (fake.served.clone(), fake.stopped.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (served, stopped) = (served.clone(), stopped.clone());
            tokio::spawn(answer(stream, containers, served, stopped));
        }
    });
    fake
}

async fn answer(
    mut stream: UnixStream,
    containers: Containers,
    served: Arc<AtomicU64>,
    stopped: Arc<Notify>,
) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
    let small_bad = |body: &str| {
        format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let small = |body: &str| {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    // Like the real engine: HTTP/1.1 without a Host header, or a request line not in origin form, is refused.
    let has_host = head
        .lines()
        .any(|line| line.to_ascii_lowercase().starts_with("host:"));
    if !has_host || !path.starts_with('/') {
        let _ = stream
            .write_all(small_bad("missing required Host header or origin-form path").as_bytes())
            .await;
        return;
    }
    if path.ends_with("/version") {
        let _ = stream
            .write_all(small(r#"{"ApiVersion":"1.41","Version":"20.10.0"}"#).as_bytes())
            .await;
    } else if path.ends_with("/_ping") {
        let _ = stream.write_all(small("OK").as_bytes()).await;
    } else if path.contains("/containers/json") {
        match containers {
            Containers::Endless => {
                let headers = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                               transfer-encoding: chunked\r\n\r\n4\r\n[ { \r\n";
                let _ = stream.write_all(headers.as_bytes()).await;
                let chunk = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
                while stream.write_all(chunk.as_bytes()).await.is_ok() {
                    served.fetch_add(0x10000, Ordering::SeqCst);
                }
                stopped.notify_one();
            }
            Containers::Silent => {
                let headers = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                               content-length: 2\r\n\r\n";
                let _ = stream.write_all(headers.as_bytes()).await;
                // Holds the connection open without a byte more.
                let _ = stream.read(&mut buffer).await;
            }
        }
    }
}

#[tokio::test]
async fn an_endless_engine_answer_is_cut_at_the_cap_naming_the_call() {
    let fake = fake_engine("endless", Containers::Endless).await;
    let cap = 1 << 20;
    let engine = Engine::connect_capped(&fake.socket(), cap, Duration::from_secs(60))
        .await
        .unwrap();
    let error = engine.stack("shop").await.unwrap_err().to_string();
    assert!(error.contains("list containers of project shop"), "{error}");
    assert!(error.contains("passed 1048576 bytes (the cap)"), "{error}");
    // The client's connection is gone, so the fake's writer fails: it sent what the cap let through plus what
    // the socket's buffers hold, and nothing near an endless body.
    tokio::time::timeout(Duration::from_secs(60), fake.stopped.notified())
        .await
        .expect("the fake engine's writer stopped");
    let served = fake.served.load(Ordering::SeqCst);
    assert!(served >= cap - 0x10000, "{served}");
    assert!(
        served < cap + (8 << 20),
        "reading went on past the cap: {served} bytes"
    );
}

#[tokio::test(start_paused = true)]
async fn an_engine_answer_that_never_ends_fails_at_the_time_cap_naming_the_call() {
    let fake = fake_engine("silent", Containers::Silent).await;
    let engine = Engine::connect_capped(&fake.socket(), 1 << 20, Duration::from_secs(5))
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    let error = engine.stack("shop").await.unwrap_err().to_string();
    assert!(error.contains("list containers of project shop"), "{error}");
    assert!(
        error.contains("the engine's answer took over 5s"),
        "{error}"
    );
    assert!(
        started.elapsed() <= Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}
