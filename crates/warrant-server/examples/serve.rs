//! The service on a real socket: a server for the retail example over a fresh SQLite folder,
//! listening on a port the system picks on 127.0.0.1, asked `GET /health` once over TCP; the
//! answer is printed, and the server stops when dropped.
//!
//! `cargo run -p warrant-server --example serve`

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;

use warrant_engine::ModelSource;
use warrant_server::{Running, ServeConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let contract = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/retail/contract.toml");
    let dir = tempfile::tempdir()?;
    let store = format!("sqlite:{}", dir.path().display());
    let mut config = ServeConfig::new(contract, store, "127.0.0.1:0".into());
    config.model = ModelSource::None;
    let server = Running::start(&config)?;
    let mut stream = TcpStream::connect(server.addr)?;
    write!(stream, "GET /health HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n", server.addr)?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let status = answer.lines().next().unwrap_or_default();
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    println!("GET /health on {}: {status}\n{body}", server.addr);
    Ok(())
}
