//! A real distribution registry (Debian's `docker-registry`, 2.8) on a free loopback
//! port with its own storage, for the tests that push and pull tools.

use crate::net::free_port;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The first line of an HTTP/1.0 answer from `addr` to `GET path`, if any.
fn http_status(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).ok()?;
    Some(line)
}

/// A real distribution registry on loopback.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    dir: TempDir,
}

/// Precomputed bcrypt (cost 4) lines: user `tester`, password `s3cret`; user `deployer`,
/// password `pa:ss=w0rd` (`:` and `=` in a password, for `HERMETIC_REGISTRY_AUTH`).
pub const HTPASSWD: &str = "tester:$2b$04$00sCD6VtvAbjq2VSZYU0/eRk0aKPEP7e8sCQ3jaixDGh9T3bggsVS\ndeployer:$2b$04$WCR157MphBi8ArNSHzo96eNDWmiFvQCBz/4QXpH7Yl/mOm3mq5Fvy\n";

impl Registry {
    /// Starts one; `auth` turns on htpasswd (user `tester`, password `s3cret`).
    pub fn start(auth: bool) -> Self {
        assert!(
            Path::new("/usr/bin/docker-registry").is_file(),
            "docker-registry is not installed: apt-get install -y docker-registry (.ci/run does)"
        );
        for _ in 0..5 {
            let dir = TempDir::new().unwrap();
            let addr = format!("127.0.0.1:{}", free_port());
            let mut config = format!(
                "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n  secret: test-only\n",
                dir.path().join("data").display()
            );
            if auth {
                std::fs::write(dir.path().join("htpasswd"), HTPASSWD).unwrap();
                config.push_str(&format!(
                    "auth:\n  htpasswd:\n    realm: hermetic-test\n    path: {}\n",
                    dir.path().join("htpasswd").display()
                ));
            }
            std::fs::write(dir.path().join("config.yml"), config).unwrap();
            let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
            let mut child = Command::new("/usr/bin/docker-registry")
                .arg("serve")
                .arg(dir.path().join("config.yml"))
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken in between: another one
                }
                if http_status(&addr, "/v2/")
                    .is_some_and(|l| l.contains(" 200") || l.contains(" 401"))
                {
                    return Self { child, addr, dir };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("docker-registry did not start");
    }

    /// `ADDR/path`.
    pub fn reference(&self, path: &str) -> String {
        format!("{}/{path}", self.addr)
    }

    /// The registry's own file for the blob `digest` (to tamper with).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Stops it (also on drop).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}
