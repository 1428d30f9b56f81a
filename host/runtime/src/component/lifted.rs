//! `handle`'s string results, taken out of guest memory while they are still there.
//!
//! wasmtime 48's typed `call` runs the guest's post-return (which frees the returned
//! string) before it returns, so a lazily read `WasmStr` would be read after the free:
//! Rust guests' bytes happened to survive, Python's and JavaScript's allocators reuse
//! them at once. An owned `String` lift reads in time but copies whatever the guest
//! returned, up to its whole memory cap, only for the host to refuse it. [`Lifted`]
//! does both: it is lifted during the call (before post-return) and copies only what
//! fits the call's cap, which [`with_cap`] sets for the lifts on this thread.
//!
//! The implementation leans on wasmtime's `ComponentType`/`Lift` traits (their
//! hidden items are what `#[derive(Lift)]` uses) because no public lift measures a
//! string before copying it; wasmtime is pinned to one version.
#![allow(
    unsafe_code,
    reason = "implementing wasmtime's ComponentType and Lift is unsafe: the impls delegate to WasmStr's"
)]

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift, WasmStr};
use wasmtime_environ::component::StringEncoding;

thread_local! {
    /// Characters a string lifted on this thread may have and still be copied.
    static CAP: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Most characters of an over-cap string kept (as the start of a tool's error).
const HEAD_CHARS: usize = crate::sanitize::MAX_INPUT_CHARS + 1;

/// A string the guest returned: its text when within the cap, else its length and its
/// first [`HEAD_CHARS`] characters (all the host reads of an error).
#[derive(Debug)]
pub(crate) enum Lifted {
    /// Within the cap: copied out.
    Text(String),
    /// Over it: measured where it lies, not copied.
    Over {
        /// Its length in characters (code units for a component using a UTF-16
        /// string encoding).
        chars: usize,
        /// Its first characters.
        head: String,
    },
}

/// Runs `f` with [`Lifted`] strings capped at `cap` characters on this thread.
pub(crate) fn with_cap<R>(cap: usize, f: impl FnOnce() -> R) -> R {
    let before = CAP.replace(cap);
    let result = f();
    CAP.set(before);
    result
}

/// A future whose every poll runs under [`with_cap`]: a call on a fiber lifts its
/// result in whichever poll it ends, on whichever thread.
pub(crate) struct Capped<F> {
    cap: usize,
    inner: Pin<Box<F>>,
}

impl<F> Capped<F> {
    /// `inner`, capped at `cap` characters.
    pub(crate) fn new(cap: usize, inner: F) -> Self {
        Self {
            cap,
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for Capped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let cap = self.cap;
        with_cap(cap, || self.inner.as_mut().poll(cx))
    }
}

// SAFETY: the representation is exactly `WasmStr`'s (a string's pointer pair), and the
// type check is its own, so a `Lifted` is lifted from the same values as a string.
unsafe impl ComponentType for Lifted {
    type Lower = <WasmStr as ComponentType>::Lower;

    const ABI: CanonicalAbiInfo = <WasmStr as ComponentType>::ABI;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <WasmStr as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: every read goes through wasmtime's own lifts (bounds, alignment, encoding,
// fuel) except the in-place measuring, which reads a range of `cx.memory()` with
// checked indexing only.
unsafe impl Lift for Lifted {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        // Validates the pointer pair before anything reads through it.
        WasmStr::linear_lift_from_flat(cx, ty, src)?;
        let [ptr, len] = *src;
        let (ptr, len) = (ptr.get_u32() as usize, len.get_u32() as usize);
        lift(cx, ptr, len, |cx| {
            String::linear_lift_from_flat(cx, ty, src)
        })
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        WasmStr::linear_lift_from_memory(cx, ty, bytes)?;
        let word = |at: usize| {
            bytes
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map_or(0, |b| u32::from_le_bytes(b) as usize)
        };
        let (ptr, len) = (word(0), word(4));
        lift(cx, ptr, len, |cx| {
            String::linear_lift_from_memory(cx, ty, bytes)
        })
    }
}

/// The string at `ptr` of `len` code units: copied by `copy` when it fits the cap,
/// else measured in place.
fn lift(
    cx: &mut LiftContext<'_>,
    ptr: usize,
    len: usize,
    copy: impl FnOnce(&mut LiftContext<'_>) -> wasmtime::Result<String>,
) -> wasmtime::Result<Lifted> {
    let cap = CAP.get();
    // A string's characters are never more than its code units.
    if len <= cap {
        return copy(cx).map(Lifted::Text);
    }
    let utf8 = cx.options().string_encoding == StringEncoding::Utf8;
    let text = match cx.memory().get(ptr..).and_then(|m| m.get(..len)) {
        Some(bytes) if utf8 => std::str::from_utf8(bytes).ok(),
        _ => None,
    };
    match text {
        Some(text) => {
            let chars = text.chars().count();
            if chars <= cap {
                // Multi-byte characters: over in bytes, within in characters.
                return Ok(Lifted::Text(text.to_owned()));
            }
            Ok(Lifted::Over {
                chars,
                head: text.chars().take(HEAD_CHARS).collect(),
            })
        }
        // A component with another string encoding (every toolchain we know emits
        // UTF-8), or bad bytes, which wasmtime's lift then refuses: copied (at most
        // the guest's memory) and judged afterwards.
        None => copy(cx).map(Lifted::Text),
    }
}
