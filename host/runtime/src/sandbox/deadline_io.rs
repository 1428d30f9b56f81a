//! `wasi:io/poll` and `wasi:io/streams` whose blocking functions end at the call's
//! deadline and on cancel.
//!
//! The epoch interrupt (the call's time limit) and the cancel token are only seen
//! while guest code runs. A guest that sleeps (`std::thread::sleep` is a blocking
//! `poll` on a monotonic-clock pollable) or blocks on a stream read is inside the host,
//! out of their reach: wasmtime-wasi's sync bindings block the thread until the wait
//! ends, an hour later if the guest asked for an hour. Here every blocking wait runs
//! the async implementation under a race with the call's deadline and its cancel
//! token; whichever comes first ends the wait, and a lost race traps the guest with the
//! same `Interrupt` the epoch deadline uses, so the call ends as `time` (or
//! `cancelled`) exactly as if the guest had been computing.
//!
//! Everything that does not block is passed straight to wasmtime-wasi's own
//! implementation for the resource table.

use crate::call::CancelToken;
use std::future::Future;
use std::time::{Duration, Instant};
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::sync::io::{poll, streams};
use wasmtime_wasi::p2::{
    DynInputStream as InputStream, DynOutputStream as OutputStream, DynPollable, StreamError,
    StreamResult,
};
use wasmtime_wasi::runtime::in_tokio;
use wasmtime_wasi_io::bindings::wasi::io::poll as async_poll;
use wasmtime_wasi_io::bindings::wasi::io::streams::{
    HostInputStream as AsyncInput, HostOutputStream as AsyncOutput,
};

/// How often a blocked wait looks at the cancel token (the token is a plain flag).
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// When a call must stop: its deadline and its cancel token.
#[derive(Debug, Clone)]
pub(crate) struct CallStop {
    pub(crate) deadline: Instant,
    pub(crate) cancel: Option<CancelToken>,
}

impl CallStop {
    /// [`CallStop::reached`] measured in epoch ticks (`ticks` is woken at each):
    /// needs no timer of the runtime it is polled on, and looks at the token and the
    /// clock once a tick, as the epoch callback does.
    pub(crate) async fn reached_at_tick(&self, ticks: &tokio::sync::Notify) -> bool {
        loop {
            let tick = ticks.notified();
            tokio::pin!(tick);
            // Registered before looking, so a tick in between is not missed.
            tick.as_mut().enable();
            if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
                return true;
            }
            if Instant::now() >= self.deadline {
                return false;
            }
            tick.await;
        }
    }

    /// Resolves when the deadline passes or the token is cancelled; `true` for cancel.
    async fn reached(self) -> bool {
        let deadline = tokio::time::Instant::from_std(self.deadline);
        match self.cancel {
            None => {
                tokio::time::sleep_until(deadline).await;
                false
            }
            Some(token) => loop {
                if token.is_cancelled() {
                    return true;
                }
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    return false;
                }
                tokio::time::sleep_until(deadline.min(now + CANCEL_POLL)).await;
            },
        }
    }
}

/// The io view of one call: its resource table and when it must stop.
pub(crate) struct DeadlineIo<'a> {
    pub(crate) table: &'a mut ResourceTable,
    pub(crate) stop: &'a CallStop,
    /// Set when a wait ended because the call was cancelled (the error then says
    /// `cancelled`, not `time`).
    pub(crate) cancelled: &'a mut bool,
}

/// `HasData` projection for [`DeadlineIo`].
pub(crate) struct HasDeadlineIo;

impl HasData for HasDeadlineIo {
    type Data<'a> = DeadlineIo<'a>;
}

/// The error a lost race becomes: the epoch deadline's own trap.
fn interrupted() -> wasmtime::Error {
    wasmtime::Trap::Interrupt.into()
}

/// Runs `wait` (which may borrow the table) until it finishes or the call must stop.
/// `Err` means the call must end now.
pub(crate) fn bounded<T>(
    stop: &CallStop,
    cancelled: &mut bool,
    wait: impl Future<Output = T>,
) -> Result<T, wasmtime::Error> {
    let reached = stop.clone().reached();
    in_tokio(async {
        tokio::select! {
            biased;
            value = wait => Ok(value),
            by_cancel = reached => {
                *cancelled |= by_cancel;
                Err(interrupted())
            }
        }
    })
}

impl DeadlineIo<'_> {
    /// [`bounded`] for stream results: a lost race traps.
    fn bounded_stream<T>(
        stop: &CallStop,
        cancelled: &mut bool,
        wait: impl Future<Output = StreamResult<T>>,
    ) -> StreamResult<T> {
        bounded(stop, cancelled, wait).unwrap_or_else(|e| Err(StreamError::Trap(e)))
    }
}

impl poll::Host for DeadlineIo<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        let table = &mut *self.table;
        bounded(
            self.stop,
            self.cancelled,
            async_poll::Host::poll(table, pollables),
        )?
    }
}

impl poll::HostPollable for DeadlineIo<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        let table = &mut *self.table;
        bounded(
            self.stop,
            self.cancelled,
            async_poll::HostPollable::ready(table, pollable),
        )?
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        let table = &mut *self.table;
        bounded(
            self.stop,
            self.cancelled,
            async_poll::HostPollable::block(table, pollable),
        )?
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        poll::HostPollable::drop(&mut *self.table, pollable)
    }
}

impl streams::Host for DeadlineIo<'_> {
    fn convert_stream_error(&mut self, err: StreamError) -> wasmtime::Result<streams::StreamError> {
        streams::Host::convert_stream_error(&mut *self.table, err)
    }
}

impl streams::HostInputStream for DeadlineIo<'_> {
    fn drop(&mut self, stream: Resource<InputStream>) -> wasmtime::Result<()> {
        streams::HostInputStream::drop(&mut *self.table, stream)
    }

    fn read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        streams::HostInputStream::read(&mut *self.table, stream, len)
    }

    fn blocking_read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        let table = &mut *self.table;
        Self::bounded_stream(
            self.stop,
            self.cancelled,
            AsyncInput::blocking_read(table, stream, len),
        )
    }

    fn skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        streams::HostInputStream::skip(&mut *self.table, stream, len)
    }

    fn blocking_skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        let table = &mut *self.table;
        Self::bounded_stream(
            self.stop,
            self.cancelled,
            AsyncInput::blocking_skip(table, stream, len),
        )
    }

    fn subscribe(
        &mut self,
        stream: Resource<InputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        streams::HostInputStream::subscribe(&mut *self.table, stream)
    }
}

impl streams::HostOutputStream for DeadlineIo<'_> {
    fn drop(&mut self, stream: Resource<OutputStream>) -> wasmtime::Result<()> {
        streams::HostOutputStream::drop(&mut *self.table, stream)
    }

    fn check_write(&mut self, stream: Resource<OutputStream>) -> StreamResult<u64> {
        streams::HostOutputStream::check_write(&mut *self.table, stream)
    }

    fn write(&mut self, stream: Resource<OutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        streams::HostOutputStream::write(&mut *self.table, stream, bytes)
    }

    fn blocking_write_and_flush(
        &mut self,
        stream: Resource<OutputStream>,
        bytes: Vec<u8>,
    ) -> StreamResult<()> {
        let table = &mut *self.table;
        Self::bounded_stream(
            self.stop,
            self.cancelled,
            AsyncOutput::blocking_write_and_flush(table, stream, bytes),
        )
    }

    fn blocking_write_zeroes_and_flush(
        &mut self,
        stream: Resource<OutputStream>,
        len: u64,
    ) -> StreamResult<()> {
        let table = &mut *self.table;
        Self::bounded_stream(
            self.stop,
            self.cancelled,
            AsyncOutput::blocking_write_zeroes_and_flush(table, stream, len),
        )
    }

    fn subscribe(
        &mut self,
        stream: Resource<OutputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        streams::HostOutputStream::subscribe(&mut *self.table, stream)
    }

    fn write_zeroes(&mut self, stream: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        streams::HostOutputStream::write_zeroes(&mut *self.table, stream, len)
    }

    fn flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        streams::HostOutputStream::flush(&mut *self.table, stream)
    }

    fn blocking_flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        let table = &mut *self.table;
        Self::bounded_stream(
            self.stop,
            self.cancelled,
            AsyncOutput::blocking_flush(table, Resource::new_borrow(stream.rep())),
        )
    }

    fn splice(
        &mut self,
        dst: Resource<OutputStream>,
        src: Resource<InputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        streams::HostOutputStream::splice(&mut *self.table, dst, src, len)
    }

    fn blocking_splice(
        &mut self,
        dst: Resource<OutputStream>,
        src: Resource<InputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        let table = &mut *self.table;
        Self::bounded_stream(
            self.stop,
            self.cancelled,
            AsyncOutput::blocking_splice(table, dst, src, len),
        )
    }
}
