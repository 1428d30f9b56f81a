//! Captured guest stdout/stderr with a hard cap that the guest cannot ignore.
//!
//! wasmtime-wasi's `MemoryOutputPipe` reports a full buffer as a closed stream, which a
//! guest may swallow (an `EPIPE` it ignores) while we would never learn the cap was hit.
//! This wrapper traps the guest instead and remembers it, so the call ends with an
//! "output limit exceeded" error naming the figure.

use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// A capped in-memory output stream shared between the guest's stream and the host.
#[derive(Clone)]
pub struct CappedOutput {
    pipe: MemoryOutputPipe,
    capacity: usize,
    written: Arc<AtomicUsize>,
    overflowed: Arc<AtomicBool>,
}

impl CappedOutput {
    /// A stream that keeps at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            pipe: MemoryOutputPipe::new(capacity),
            capacity,
            written: Arc::new(AtomicUsize::new(0)),
            overflowed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// What the guest wrote (at most the capacity).
    pub fn contents(&self) -> Bytes {
        if self.written.load(Ordering::Relaxed) == 0 {
            return Bytes::new();
        }
        self.pipe.contents()
    }

    fn room(&self) -> usize {
        self.capacity
            .saturating_sub(self.written.load(Ordering::Relaxed))
    }

    /// Whether the guest tried to write past the cap.
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    fn refuse(&self) -> StreamError {
        self.overflowed.store(true, Ordering::Relaxed);
        StreamError::trap(&format!("output limit of {} bytes exceeded", self.capacity))
    }
}

impl IsTerminal for CappedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        // Only WASIp3 guests use this path, and we link WASIp2 only.
        Box::new(self.pipe.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        if bytes.len() > self.room() {
            return Err(self.refuse());
        }
        self.written.fetch_add(bytes.len(), Ordering::Relaxed);
        self.pipe.write(bytes)
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        match self.room() {
            0 => Err(self.refuse()),
            room => Ok(room),
        }
    }
}
