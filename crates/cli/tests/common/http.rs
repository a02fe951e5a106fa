//! A tiny HTTP/1.1 client over `std::net::TcpStream` for the `serve`
//! tests and the load example: enough to send any request (including a
//! body sent slowly or never finished) and read the answer, with nothing
//! between the test and the bytes on the wire.
#![allow(dead_code)] // each user takes its own subset

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{} answer is not JSON ({e}): {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `"error"` message of an error answer.
    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// A kept-alive connection: requests one after another.
pub struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    pub fn open(addr: &str) -> std::io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            reader: BufReader::new(s),
        })
    }

    pub fn stream(&mut self) -> &mut TcpStream {
        self.reader.get_mut()
    }

    /// Sends the request head (with Content-Length for `body`) and the body.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        ctype: Option<&str>,
        body: &[u8],
    ) -> std::io::Result<()> {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
        if let Some(t) = ctype {
            head += &format!("Content-Type: {t}\r\n");
        }
        if method != "GET" || !body.is_empty() {
            head += &format!("Content-Length: {}\r\n", body.len());
        }
        head += "\r\n";
        let s = self.stream();
        s.write_all(head.as_bytes())?;
        s.write_all(body)?;
        s.flush()
    }

    /// Reads one answer (framed by its Content-Length, else to EOF).
    pub fn read_reply(&mut self) -> std::io::Result<Reply> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut headers = vec![];
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let len = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse::<usize>().ok());
        let mut body = vec![];
        match len {
            Some(n) => {
                body.resize(n, 0);
                self.reader.read_exact(&mut body)?;
            }
            None => {
                self.reader.read_to_end(&mut body)?;
            }
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        ctype: Option<&str>,
        body: &[u8],
    ) -> std::io::Result<Reply> {
        self.send(method, path, ctype, body)?;
        self.read_reply()
    }
}

/// One request on a connection of its own.
pub fn request(addr: &str, method: &str, path: &str, ctype: Option<&str>, body: &[u8]) -> Reply {
    Conn::open(addr)
        .and_then(|mut c| c.request(method, path, ctype, body))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

pub fn get(addr: &str, path: &str) -> Reply {
    request(addr, "GET", path, None, b"")
}

pub fn post_json(addr: &str, path: &str, doc: &serde_json::Value) -> Reply {
    request(
        addr,
        "POST",
        path,
        Some("application/json"),
        &serde_json::to_vec(doc).unwrap(),
    )
}

/// Queries as the little-endian float32 rows of a binary body.
pub fn f32_rows(queries: &[f32]) -> Vec<u8> {
    queries.iter().flat_map(|x| x.to_le_bytes()).collect()
}
