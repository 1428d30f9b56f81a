//! A `hermetic serve --http` child process: started, its log collected, its address
//! read from the line that says where it serves; killed on drop.
use crate::lines::Lines;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The line a server writes when it listens, before its URL.
const SERVING: &str = "serving MCP at ";

/// A `hermetic serve --http` process, killed on drop.
pub struct ServeProcess {
    /// The process.
    pub child: Child,
    /// Its MCP endpoint, as it said: `http://HOST:PORT/mcp`.
    pub url: String,
    /// `HOST:PORT` of its listener.
    pub addr: String,
    /// What it writes on stderr (its log).
    pub log: Lines,
}

impl ServeProcess {
    /// Starts `serve` (a `hermetic … serve --http ADDR` command; stdin and stdout closed,
    /// stderr collected) and waits for the line saying where it serves; every wait on
    /// it gives up after `hang_guard`.
    pub fn spawn(mut serve: Command, hang_guard: Duration) -> Self {
        let mut child = serve
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Lines::collect(child.stderr.take().unwrap(), hang_guard);
        let line = log
            .wait_for(|l| l.contains(SERVING))
            .unwrap_or_else(|| panic!("the server did not start:\n{}", log.text()));
        let url = line.split(SERVING).nth(1).unwrap().trim().to_owned();
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        Self {
            child,
            url,
            addr,
            log,
        }
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < self.log.hang_guard(),
                "the server did not exit:\n{}",
                self.log.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
