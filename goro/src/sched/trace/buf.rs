//! Where events go while tracing is on: per-P chunks written by the P's
//! owner without a lock, one chunk under a mutex for events without a P,
//! and the list of chunks a consumer has not read yet.
//!
//! # Per-P chunks
//!
//! An event is a few words (`u64`) appended to the current chunk of the
//! P the writing thread holds. Only the thread holding P n writes P n's
//! chunk (the P-held rule that the run queue's single producer also rests
//! on: a P changes hands only through the idle lock or a parker, which
//! order the old owner's writes before the new owner's), so the append is
//! plain stores followed by one Release store of the chunk's length, which
//! on x86 is an ordinary `mov`. A reader (the streaming writer, a flight
//! recorder snapshot) loads the length with Acquire and reads only the
//! words below it, which the owner never touches again: no word is read
//! while it is written.
//!
//! A full chunk is handed to [`Chunks::full`] and replaced by a new one,
//! both under [`Chunks`]'s lock, so a reader that takes the lock sees each
//! chunk exactly once, either as some P's current chunk or in the full
//! list, never neither. That switch happens once per [`CHUNK_WORDS`] / 4
//! events, so the lock is off the per-event path.
//!
//! # Generations
//!
//! A session (a `trace_start`, a flight recorder) has a generation
//! number. A P's owner remembers which generation its current chunk
//! belongs to and takes a fresh chunk when the runtime's generation
//! moved on: after a stop and a new start, nothing of the old session
//! leaks into the new one, and no P has to be visited at start or stop
//! (an idle P has no owner to visit). Go's tracer (`trace2buf.go`,
//! `trace2runtime.go`) switches generations the same way.

use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Words per chunk: 64 KiB.
pub(crate) const CHUNK_WORDS: usize = 8192;
/// Bytes per chunk, for the flight recorder's bound.
pub(crate) const CHUNK_BYTES: usize = CHUNK_WORDS * 8;

/// A block of events from one source (a P, or the no-P buffer).
pub(crate) struct Chunk {
    /// The P whose events these are, or the runtime's `procs` for the
    /// no-P buffer.
    pub(crate) src: usize,
    words: Box<[UnsafeCell<u64>]>,
    /// Words written and published (module docs).
    len: AtomicUsize,
    /// Words a streaming consumer has read (that consumer only).
    pub(crate) read: AtomicUsize,
    /// The timestamp of the last event, for the flight recorder's window.
    pub(crate) last_ts: AtomicU64,
}

// SAFETY: the words below `len` are only read, and the words at or above
// it are written only by the chunk's one writer (module docs); `len` is
// published with Release and read with Acquire.
unsafe impl Sync for Chunk {}
// SAFETY: as above; the cells hold plain integers.
unsafe impl Send for Chunk {}

impl Chunk {
    pub(crate) fn new(src: usize) -> Arc<Chunk> {
        Arc::new(Chunk {
            src,
            words: (0..CHUNK_WORDS).map(|_| UnsafeCell::new(0)).collect(),
            len: AtomicUsize::new(0),
            read: AtomicUsize::new(0),
            last_ts: AtomicU64::new(0),
        })
    }

    /// Appends `words` if they fit; the caller is the chunk's one writer.
    #[inline]
    fn push(&self, ts: u64, words: &[u64]) -> bool {
        // Relaxed: we are the only writer of `len`.
        let n = self.len.load(Ordering::Relaxed);
        if n + words.len() > CHUNK_WORDS {
            return false;
        }
        for (i, &w) in words.iter().enumerate() {
            // SAFETY: index `n + i` is at or above the published length,
            // which only this writer touches (module docs); in bounds by
            // the check above.
            unsafe { *self.words[n + i].get() = w };
        }
        self.last_ts.store(ts, Ordering::Relaxed);
        // Release: the words above are visible to whoever Acquires `len`.
        self.len.store(n + words.len(), Ordering::Release);
        true
    }

    /// The published words from `from` on.
    pub(crate) fn published(&self, from: usize) -> Vec<u64> {
        // Acquire: pairs with the Release store in `push`.
        let n = self.len.load(Ordering::Acquire);
        (from.min(n)..n)
            // SAFETY: below the published length: never written again.
            .map(|i| unsafe { *self.words[i].get() })
            .collect()
    }
}

/// The writer's side of one P's buffer: touched only by the P's owner.
pub(crate) struct PWriter {
    state: UnsafeCell<(u64, Option<Arc<Chunk>>)>,
}

// SAFETY: `state` is only reached through `PWriter::with`, whose contract
// is that the caller holds the P (one thread at a time, module docs).
unsafe impl Sync for PWriter {}

impl PWriter {
    fn new() -> PWriter {
        PWriter {
            state: UnsafeCell::new((0, None)),
        }
    }

    /// # Safety
    /// The caller holds the P this writer belongs to.
    unsafe fn with<R>(&self, f: impl FnOnce(&mut (u64, Option<Arc<Chunk>>)) -> R) -> R {
        // SAFETY: the contract makes us the only thread in here.
        f(unsafe { &mut *self.state.get() })
    }
}

/// Every chunk of the current session that a consumer may still want.
#[derive(Default)]
pub(crate) struct ChunkLists {
    /// The current chunk of each P (and of the no-P buffer, last).
    pub(crate) current: Vec<Option<Arc<Chunk>>>,
    /// Full chunks in the order they filled.
    pub(crate) full: std::collections::VecDeque<Arc<Chunk>>,
    /// Bytes in `full`.
    pub(crate) full_bytes: usize,
    /// The session these lists belong to.
    pub(crate) gen: u64,
    /// Chunks a streaming round has read and nobody else holds, for the
    /// next switch: a fresh 64 KiB chunk costs sixteen page faults as it
    /// fills. (Not used by the flight recorder: with it, snapshots lost
    /// their last few chunks, for a reason not yet found; see the
    /// flight snapshot check in `bench/results/`.)
    spare: Vec<Arc<Chunk>>,
}

/// Spare chunks kept at most.
const SPARES: usize = 32;

impl ChunkLists {
    /// Keeps `c` for reuse if nobody else holds it.
    pub(crate) fn recycle(&mut self, c: Arc<Chunk>) {
        if self.spare.len() < SPARES && Arc::strong_count(&c) == 1 {
            self.spare.push(c);
        }
    }
}

/// A runtime's event buffers.
pub(crate) struct Chunks {
    procs: usize,
    writers: Box<[CachePadded<PWriter>]>,
    /// The no-P buffer: its writer state, under a lock.
    shared: Mutex<(u64, Option<Arc<Chunk>>)>,
    pub(crate) lists: Mutex<ChunkLists>,
}

/// What to do with a full chunk: keep it for a streaming consumer, or
/// trim the list to a flight recorder's bound.
pub(crate) trait OnFull: Sync {
    fn full(&self, lists: &mut ChunkLists);
}

impl Chunks {
    /// Ps with a buffer (the no-P buffer's index).
    pub(crate) fn procs(&self) -> usize {
        self.procs
    }

    pub(crate) fn new(procs: usize) -> Chunks {
        Chunks {
            procs,
            writers: (0..procs)
                .map(|_| CachePadded::new(PWriter::new()))
                .collect(),
            shared: Mutex::new((0, None)),
            lists: Mutex::new(ChunkLists::default()),
        }
    }

    /// Forgets every chunk (a new session starts; writers notice the new
    /// generation on their next event).
    pub(crate) fn reset(&self, gen: u64) {
        let mut l = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        *l = ChunkLists {
            current: vec![None; self.procs + 1],
            gen,
            ..ChunkLists::default()
        };
    }

    /// Appends an event to P `p`'s chunk.
    ///
    /// # Safety
    /// The calling thread holds P `p`.
    #[inline]
    pub(crate) unsafe fn push_p(&self, p: usize, gen: u64, words: &[u64], on_full: &dyn OnFull) {
        // SAFETY: the caller holds P `p` (contract).
        unsafe {
            self.writers[p].with(|st| self.push(p, st, gen, words, on_full));
        }
    }

    /// Appends an event to the no-P buffer; its timestamp (`words[0]`)
    /// is read here, under the lock, so this buffer's events are in time
    /// order like a P's.
    pub(crate) fn push_shared(&self, gen: u64, words: &mut [u64], on_full: &dyn OnFull) {
        let mut st = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        words[0] = super::clock::ticks();
        self.push(self.procs, &mut st, gen, words, on_full);
    }

    #[inline]
    fn push(
        &self,
        src: usize,
        st: &mut (u64, Option<Arc<Chunk>>),
        gen: u64,
        words: &[u64],
        on_full: &dyn OnFull,
    ) {
        if st.0 == gen {
            if let Some(c) = &st.1 {
                if c.push(words[0], words) {
                    return;
                }
            }
        }
        self.switch(src, st, gen, on_full);
        if let Some(c) = &st.1 {
            let _ = c.push(words[0], words);
        }
    }

    /// Gives the writer of `src` a fresh chunk, filing the old one.
    #[cold]
    fn switch(
        &self,
        src: usize,
        st: &mut (u64, Option<Arc<Chunk>>),
        gen: u64,
        on_full: &dyn OnFull,
    ) {
        let mut l = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        if l.gen != gen || l.current.len() <= src {
            // A writer that read the flag of a session now over: drop
            // the event rather than file it into the next session.
            st.0 = gen;
            st.1 = None;
            return;
        }
        let fresh = match l.spare.pop() {
            Some(mut c) => match Arc::get_mut(&mut c) {
                // Ours alone (`recycle` keeps only unshared chunks, and
                // nothing clones a spare): start it over for `src`.
                Some(m) => {
                    m.src = src;
                    *m.len.get_mut() = 0;
                    *m.read.get_mut() = 0;
                    *m.last_ts.get_mut() = 0;
                    c
                }
                None => Chunk::new(src),
            },
            None => Chunk::new(src),
        };
        let old = st.1.replace(fresh.clone());
        if st.0 == gen {
            if let Some(old) = old {
                l.full_bytes += CHUNK_BYTES;
                l.full.push_back(old);
                on_full.full(&mut l);
            }
        }
        st.0 = gen;
        l.current[src] = Some(fresh);
    }
}
