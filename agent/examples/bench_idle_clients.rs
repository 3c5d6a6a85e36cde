//! Opens many keep-alive connections to a proxy, sends one small request on each and reads its answer, then holds
//! them idle until stdin closes, so the benchmark script can read the proxy's memory with that many idle clients.
//! Usage: `bench_idle_clients ADDRESS CONNECTIONS` (prints `ready N` once every answer is in).

use std::io::Read;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bench_idle_clients ADDRESS CONNECTIONS";
    let address: std::net::SocketAddr = args.next().ok_or(usage)?.parse()?;
    let connections: usize = args.next().ok_or(usage)?.parse()?;
    let mut held = Vec::with_capacity(connections);
    for _ in 0..connections {
        let mut stream = TcpStream::connect(address).await?;
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
            .await?;
        // The answer is small; read until its (short) body has arrived: nginx's `ok` ends the message.
        let mut answer = Vec::new();
        let mut buffer = [0u8; 1024];
        while !answer.ends_with(b"ok") {
            let read = stream.read(&mut buffer).await?;
            if read == 0 {
                return Err("the proxy closed a connection before answering".into());
            }
            answer.extend_from_slice(&buffer[..read]);
        }
        held.push(stream);
    }
    println!("ready {}", held.len());
    // Hold every connection until the script is done measuring.
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    })
    .await?;
    drop(held);
    Ok(())
}
