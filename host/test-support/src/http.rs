//! HTTP/1.1 as a raw client writes it: one request on a fresh connection, the reply
//! read to its end, nothing hidden (a test may send any header, a `Host` of its own
//! included, and see every header of the answer).
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One HTTP response.
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The status line and the headers.
    pub head: String,
    /// Everything after the head.
    pub body: String,
}

impl Reply {
    fn parse(response: &str) -> Self {
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((response, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
        Self {
            status,
            head: head.to_owned(),
            body: body.to_owned(),
        }
    }

    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.body.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.head, self.body))
    }
}

/// One request to `addr` on a fresh connection: `headers` as given (a `Host` among them
/// replaces `Host: ADDR`), then `Content-Length` and `Connection: close`. The body is
/// sent after the head; a server that answers (and closes) without reading it is fine.
/// Each read waits at most `hang_guard`.
pub fn request<N: AsRef<str>, V: AsRef<str>>(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(N, V)],
    body: &[u8],
    hang_guard: Duration,
) -> Reply {
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers
        .iter()
        .any(|(n, _)| n.as_ref().eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{}: {}\r\n", name.as_ref(), value.as_ref()));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(hang_guard)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    Reply::parse(&String::from_utf8_lossy(&response))
}
