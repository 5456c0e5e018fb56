//! A channel gives its buffer's memory back when the backlog falls: after a
//! burst of 100,000 values is drained, the bytes it holds are back near
//! those of an empty channel. Measured in allocated bytes (a counting global
//! allocator), not RSS. One test in this binary: the counter is global.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

#[test]
fn a_drained_burst_gives_its_memory_back() {
    const BURST: u64 = 100_000;
    let base = live();
    let (tx, rx) = goro::chan::bounded::<u64>(1 << 30);
    let empty = live() - base;
    for i in 0..BURST {
        tx.try_send(i).unwrap();
    }
    let full = live() - base;
    assert!(
        full >= (BURST * 8) as isize,
        "the burst is buffered: {full} bytes for {BURST} u64s"
    );
    for i in 0..BURST {
        assert_eq!(rx.try_recv(), Ok(i), "values come out in order");
    }
    let drained = live() - base;
    println!("channel bytes: empty {empty}, after the burst {full}, drained {drained}");
    // The floor a channel keeps (16 KiB of buffer) plus the empty channel.
    assert!(
        drained <= empty + 16 * 1024 + 1024,
        "a drained channel still holds {drained} bytes (empty: {empty}, full: {full})"
    );

    // A steady backlog does not reallocate: hold 50,000 values and cycle.
    for i in 0..50_000 {
        tx.try_send(i).unwrap();
    }
    let steady = live();
    for i in 0..200_000 {
        rx.try_recv().unwrap();
        tx.try_send(i).unwrap();
    }
    assert_eq!(live(), steady, "a steady backlog keeps its buffer as it is");
}
