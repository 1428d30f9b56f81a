//! A result over the cap is refused without the host ever holding a copy of it (issue
//! 10, item 12): the largest single host allocation while a tool returns 8 MB stays far
//! below 8 MB. Its own test binary, because it counts through the global allocator.
#![allow(unsafe_code, reason = "a counting global allocator is an unsafe impl")]

use hermetic::{CallOptions, CallOutcome, LimitKind};
use hermetic_test_support::registry::fixture;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, remembering the largest allocation since the last reset.
struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Largest = Largest;

#[test]
fn a_result_over_the_cap_is_refused_without_being_copied_out_of_the_guest() {
    let f = fixture(false, &["fail"]);
    let args = r#"{"mode": "huge", "size": 8000000}"#;
    // Warm: compile caches, first-instance set-up.
    let _ = f.registry.invoke("fail", args, &CallOptions::default());
    LARGEST.store(0, Ordering::Relaxed);
    let outcome = f.registry.invoke("fail", args, &CallOptions::default());
    let largest = LARGEST.load(Ordering::Relaxed);
    match &outcome {
        CallOutcome::Limit {
            kind: LimitKind::ResultSize,
            message,
        } => assert!(message.contains("8000011 characters"), "{message}"),
        other => panic!("not the result cap: {other:?}"),
    }
    assert!(
        largest < 2 << 20,
        "the host allocated {largest} bytes at once while refusing an 8 MB result"
    );
}
