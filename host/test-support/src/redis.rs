//! A real `redis-server` (Debian's package) on a free loopback port with its own
//! directory (append-only file on), for the tests of a cluster's shared store.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A running redis-server; stopped on drop.
pub struct Redis {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: TempDir,
}

fn answers(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 16];
    s.write_all(b"PING\r\n").is_ok()
        && s.read(&mut buf)
            .is_ok_and(|n| buf[..n].starts_with(b"+PONG"))
}

impl Redis {
    /// Starts one on a free port.
    pub fn start() -> Self {
        assert!(
            Path::new("/usr/bin/redis-server").is_file(),
            "redis-server is not installed: apt-get install -y redis-server (.ci/run does)"
        );
        let port = crate::net::free_port();
        let mut redis = Self {
            child: None,
            port,
            dir: TempDir::new().unwrap(),
        };
        redis.restart();
        redis
    }

    /// The URL nodes use.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills it (SIGKILL: what a crash does).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and directory (its append-only file kept).
    pub fn restart(&mut self) {
        self.kill();
        let child = Command::new("/usr/bin/redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "yes"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        while !answers(self.port) {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}
