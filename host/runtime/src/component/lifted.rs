//! `handle`'s string results, taken out of guest memory while they are still there.
//!
//! wasmtime 48's typed `call` runs the guest's post-return (which frees the returned
//! string) before it returns, so a lazily read `WasmStr` would be read after the free:
//! Rust guests' bytes happened to survive, Python's and JavaScript's allocators reuse
//! them at once. An owned `String` lift reads in time but copies whatever the guest
//! returned, up to its whole memory cap, only for the host to refuse it. [`Lifted`]
//! does both: it is lifted during the call (before post-return) and copies only what
//! fits — the call's result cap, which [`with_cap`] sets for the lifts on this thread,
//! for a result ([`Lifted<false>`]); [`HEAD_CHARS`], all the host reads, for an error
//! ([`Lifted<true>`]). Whatever its string encoding, a string over the cap is measured
//! where it lies and never copied whole.
//!
//! The implementation leans on wasmtime's `ComponentType`/`Lift` traits (their
//! hidden items are what `#[derive(Lift)]` uses) because no public lift measures a
//! string before copying it; wasmtime is pinned to one version. The thread-local cap
//! holds because typed calls lift on the calling thread, inside the poll that ends the
//! call (wasmtime's `component-model-async` feature, whose concurrent calls would lift
//! elsewhere, is off).
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
    /// Characters a result lifted on this thread may have and still be copied.
    static CAP: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Most characters of an error kept: what the sanitizer reads of it.
pub(crate) const HEAD_CHARS: usize = crate::sanitize::MAX_INPUT_CHARS + 1;

/// A string the guest returned: its text when within the cap, else its length and its
/// first [`HEAD_CHARS`] characters. `ERROR`: a tool's error, capped at
/// [`HEAD_CHARS`]; else a result, capped by [`with_cap`].
#[derive(Debug)]
pub(crate) enum Lifted<const ERROR: bool> {
    /// Within the cap: copied out.
    Text(String),
    /// Over it: measured where it lies, not copied.
    Over {
        /// Its length in characters.
        chars: usize,
        /// Its first characters.
        head: String,
    },
}

/// Restores the thread's cap when dropped, on unwinding too.
struct Restore(usize);

impl Drop for Restore {
    fn drop(&mut self) {
        CAP.set(self.0);
    }
}

/// Runs `f` with results lifted as [`Lifted`] capped at `cap` characters on this
/// thread.
pub(crate) fn with_cap<R>(cap: usize, f: impl FnOnce() -> R) -> R {
    let _restore = Restore(CAP.replace(cap));
    f()
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
unsafe impl<const ERROR: bool> ComponentType for Lifted<ERROR> {
    type Lower = <WasmStr as ComponentType>::Lower;

    const ABI: CanonicalAbiInfo = <WasmStr as ComponentType>::ABI;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <WasmStr as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: every read goes through wasmtime's own lifts (bounds, alignment, encoding,
// fuel) except the in-place measuring, which reads a range of `cx.memory()` that
// `WasmStr`'s lift has just bounds-checked, with checked indexing all the same.
unsafe impl<const ERROR: bool> Lift for Lifted<ERROR> {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        // Validates the pointer pair (bounds, alignment) before anything reads it.
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

/// Bit of a compact-UTF-16 string's length saying it is UTF-16 (else Latin-1).
const UTF16_TAG: usize = 1 << 31;

/// The string at `ptr` of `len` (its canonical-ABI length): copied by `copy` when it
/// fits the cap, else measured in place and only its head copied.
fn lift<const ERROR: bool>(
    cx: &mut LiftContext<'_>,
    ptr: usize,
    len: usize,
    copy: impl FnOnce(&mut LiftContext<'_>) -> wasmtime::Result<String>,
) -> wasmtime::Result<Lifted<ERROR>> {
    let cap = if ERROR { HEAD_CHARS } else { CAP.get() };
    let encoding = cx.options().string_encoding;
    // Code units (bytes of UTF-8 or Latin-1, UTF-16 units): never fewer than its
    // characters, so a string of at most `cap` units has at most `cap` characters.
    let units = match encoding {
        StringEncoding::CompactUtf16 => len & !UTF16_TAG,
        _ => len,
    };
    if units <= cap {
        return copy(cx).map(Lifted::Text);
    }
    let memory = cx.memory();
    let bytes = |n: Option<usize>| {
        n.and_then(|n| memory.get(ptr..)?.get(..n))
            .ok_or_else(|| wasmtime::format_err!("string pointer/length out of bounds of memory"))
    };
    let (chars, head) = match encoding {
        StringEncoding::Utf8 => {
            let text = std::str::from_utf8(bytes(Some(len))?)?;
            (
                text.chars().count(),
                text.chars().take(HEAD_CHARS).collect(),
            )
        }
        StringEncoding::CompactUtf16 if len & UTF16_TAG == 0 => {
            // Latin-1: one character a byte.
            let latin1 = bytes(Some(len))?;
            let head = latin1.iter().take(HEAD_CHARS).map(|&b| char::from(b));
            (len, head.collect())
        }
        StringEncoding::Utf16 | StringEncoding::CompactUtf16 => {
            let raw = bytes(units.checked_mul(2))?;
            let units = raw
                .chunks_exact(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]]));
            let mut chars = 0;
            let mut head = String::new();
            for c in char::decode_utf16(units) {
                let c = c?;
                if chars < HEAD_CHARS {
                    head.push(c);
                }
                chars += 1;
            }
            (chars, head)
        }
    };
    if chars <= cap {
        // Over in code units, within in characters: at most `cap` characters copied.
        return copy(cx).map(Lifted::Text);
    }
    Ok(Lifted::Over { chars, head })
}
