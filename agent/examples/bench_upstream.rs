//! A tiny HTTP/1.1 upstream for benchmarks: answers every request with `200 ok` (2 bytes), keep-alive,
//! one single-threaded runtime per thread. Usage: `bench_upstream [ADDR] [THREADS]` (default 127.0.0.1:18080, 1).

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let address: SocketAddr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:18080".into())
        .parse()
        .map_err(std::io::Error::other)?;
    let threads: usize = args
        .next()
        .map_or(Ok(1), |text| text.parse())
        .map_err(std::io::Error::other)?;
    let listener = std::net::TcpListener::bind(address)?;
    listener.set_nonblocking(true)?;
    println!("bench upstream on http://{address} ({threads} thread(s))");
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let listener = listener.try_clone().expect("clone listener");
            std::thread::spawn(move || serve(listener))
        })
        .collect();
    for handle in handles {
        handle
            .join()
            .map_err(|_| std::io::Error::other("server thread panicked"))??;
    }
    Ok(())
}

fn serve(listener: std::net::TcpListener) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::from_std(listener)?;
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_request| async {
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}
