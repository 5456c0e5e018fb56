//! [`SingleFlight`]: Go's `golang.org/x/sync/singleflight.Group`, duplicate
//! call suppression: among concurrent callers asking for the same key, one
//! execution runs and every caller gets (a clone of) its value, told whether
//! the value was shared.
//!
//! # Shape
//!
//! A map from key to the *call* in flight for it, under one lock. The first
//! caller for a key (the leader) inserts a call and starts its future in a
//! **task of its own**; later callers for the key join the call and drop
//! their own future unrun. Every caller, leader or not, then waits the same
//! way: on a one-slot channel of its own, whose sender sits in the call.
//! When the execution ends, its task removes the call from the map (unless
//! [`SingleFlight::forget`] already did, or a newer call took the key) and
//! sends each caller its result, all under the map lock, so a caller either
//! joined before the end (and is sent the result) or finds no call and
//! starts a new one. Go's `doCall` has the same shape, with `DoChan`'s
//! channels for every caller.
//!
//! # Why the execution is a task of its own
//!
//! Callers are independent requests that happen to want the same thing: a
//! caller that goes away (its future dropped by a timeout or a client that
//! hung up) must not fail the others. If the leader ran the future inline,
//! dropping the leader would drop the work for everyone; so the work runs
//! in a task, as Go's `DoChan` runs it in a goroutine, and the leader is an
//! ordinary waiter. The cost: the future must be `Send + 'static`, and
//! `run` must be called inside a goro runtime (the leader spawns).
//!
//! The work runs while someone wants it. Each caller holds an *interest*
//! in its call until it has its result; the one that drops the last
//! interest before the end aborts the task (its future is dropped) and
//! removes the call from the map, so nothing runs for nobody and the next
//! caller starts afresh. (Go cannot stop a goroutine, so its `DoChan` runs
//! to the end regardless.)
//!
//! # Nobody hangs
//!
//! - A panic in the execution is caught in its task (the panic hook has
//!   reported it) and every caller gets [`SingleFlightError::Panicked`] with
//!   the message (Go re-panics in every caller of `Do`; a payload cannot be
//!   cloned, and a caller handles an error better than a panic it did not
//!   cause).
//! - If the task is dropped unfinished (the runtime shut down), a guard in it
//!   removes the call and drops the senders, closing every caller's channel:
//!   every caller gets [`SingleFlightError::Cancelled`].
//! - If the leader's `spawn` itself panics (called outside a runtime), the
//!   leader's interest guard is dropped during the unwind and removes the
//!   call, so later callers do not join a call that will never run.
//!
//! # Rejected
//!
//! - Running the future inline in the leader, and on the leader's drop
//!   handing over to a waiter that runs *its own* future (what
//!   [`OnceCell`](super::OnceCell) does): no `'static` bound, but the work
//!   done so far is thrown away and started again, and a caller's result
//!   would depend on whose future happened to run.
//! - Running inline and failing every waiter when the leader is dropped: a
//!   cancelled caller would fail unrelated requests.
//! - `V` and an error type `E` as Go's `(v, err)`: `V` is any `Clone` value,
//!   so an execution that can fail returns `Result<T, E>` as its `V` (with
//!   `E: Clone`, often an `Arc<...>`), and [`SingleFlightError`] stays about
//!   the flight itself.
//!
//! Locks: `std::sync::Mutex`, never held across an `.await` or user code
//! (a joiner's future, values, and senders are dropped after the lock is
//! released). Lock order: the map, then a call.

use crate::chan::{self, Receiver, Sender};
use crate::loom::Unpoison;
use crate::JoinHandle;
use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use super::errgroup::catch_unwind_future;

/// Why [`SingleFlight::run`] has no value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SingleFlightError {
    /// The execution panicked; the panic's message (or `"Box<dyn Any>"` if
    /// the payload was not a string, as the panic hook says).
    Panicked(String),
    /// The execution was dropped before it finished: its task was cancelled
    /// (the runtime shut down).
    Cancelled,
}

impl fmt::Display for SingleFlightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SingleFlightError::Panicked(m) => {
                write!(f, "singleflight: the execution panicked: {m}")
            }
            SingleFlightError::Cancelled => f.write_str(
                "singleflight: the execution was dropped before it finished (its task was \
                 cancelled, e.g. by a runtime shutdown)",
            ),
        }
    }
}

impl std::error::Error for SingleFlightError {}

/// Runs one execution per key among concurrent callers (Go's
/// `singleflight.Group`). Cloning gives another handle to the same group.
///
/// ```
/// use goro::sync::SingleFlight;
/// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
/// use std::sync::Arc;
/// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
/// let sf = SingleFlight::<String, u64>::new();
/// let loads = Arc::new(AtomicUsize::new(0));
/// let (release, gate) = goro::chan::bounded::<()>(0);
/// let mut callers = Vec::new();
/// for _ in 0..5 {
///     let (sf, loads, gate) = (sf.clone(), loads.clone(), gate.clone());
///     callers.push(goro::spawn(async move {
///         sf.run("user:42".to_string(), async move {
///             loads.fetch_add(1, SeqCst);
///             let _ = gate.recv().await; // held until every caller is in
///             42
///         })
///         .await
///     }));
/// }
/// # while sf.callers(&"user:42".to_string()) < 5 { goro::yield_now().await; }
/// release.close();
/// for c in callers {
///     assert_eq!(c.await.unwrap(), Ok((42, true)), "one value, shared");
/// }
/// assert_eq!(loads.load(SeqCst), 1, "one execution for five callers");
/// # });
/// ```
pub struct SingleFlight<K, V> {
    inner: Arc<Mutex<HashMap<K, Arc<Call<V>>>>>,
}

/// One execution and the callers waiting for it.
struct Call<V> {
    state: Mutex<CallState<V>>,
}

type Outcome<V> = Result<(V, bool), SingleFlightError>;

struct CallState<V> {
    /// One per caller that has not been sent its result.
    senders: Vec<Sender<Outcome<V>>>,
    /// Callers that ever joined, the leader included (Go's `dups + 1`).
    callers: usize,
    /// Callers still waiting (the rest were dropped).
    interested: usize,
    /// The execution's task, once spawned.
    task: Option<JoinHandle<()>>,
    /// The execution ended (or was abandoned): nothing more to abort.
    finished: bool,
}

/// What a caller of [`SingleFlight::run`] found.
enum Role<V> {
    /// It inserted the call: it starts the execution.
    Leader(Arc<Call<V>>),
    /// It joined a call in flight.
    Joiner(Arc<Call<V>>),
}

impl<V> Call<V> {
    fn lock(&self) -> MutexGuard<'_, CallState<V>> {
        self.state.lock().unpoison()
    }
}

impl<K, V> SingleFlight<K, V> {
    /// An empty group.
    ///
    /// ```
    /// let sf = goro::sync::SingleFlight::<&str, i32>::new();
    /// # let _ = sf;
    /// ```
    pub fn new() -> SingleFlight<K, V> {
        SingleFlight {
            inner: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<K, Arc<Call<V>>>> {
        // Never held across user code: a poisoned lock holds a consistent map.
        self.inner.lock().unpoison()
    }
}

impl<K, V> SingleFlight<K, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    /// Runs `fut` for `key` unless an execution for `key` is already in
    /// flight, in which case `fut` is dropped unrun and this caller waits for
    /// that execution's value (Go's `Do`). Returns the value and whether it
    /// was given to more than one caller (`shared`: always `true` for a
    /// caller that joined, and for the one that started the execution if
    /// anyone joined it).
    ///
    /// The execution runs in a task of its own, not in the caller: dropping
    /// this future does not stop it while other callers wait for it (a
    /// caller that gives up does not fail the others); dropping the last
    /// caller's future aborts it, so nothing runs for nobody.
    ///
    /// # Errors
    ///
    /// [`SingleFlightError::Panicked`] if the execution panicked,
    /// [`SingleFlightError::Cancelled`] if its task was dropped unfinished;
    /// every caller of that execution gets the same error.
    ///
    /// # Panics
    ///
    /// Outside a goro runtime, when this call would start the execution.
    ///
    /// A fallible execution returns a `Result` as its value:
    ///
    /// ```
    /// use goro::sync::SingleFlight;
    /// # goro::Runtime::builder().procs(1).build().unwrap().block_on(async {
    /// let sf = SingleFlight::<u32, Result<String, String>>::new();
    /// let (v, shared) = sf.run(7, async { Err("row 7: not found".to_string()) }).await.unwrap();
    /// assert_eq!(v, Err("row 7: not found".to_string()));
    /// assert!(!shared, "nobody else asked");
    /// # });
    /// ```
    pub async fn run<F>(&self, key: K, fut: F) -> Result<(V, bool), SingleFlightError>
    where
        F: Future<Output = V> + Send + 'static,
    {
        let (tx, rx) = chan::bounded(1);
        let call = match self.join_or_insert(&key, tx) {
            Role::Joiner(call) => {
                drop(fut); // a joiner's future never runs; dropped outside the lock
                let interest = Interest {
                    group: self,
                    key,
                    call,
                    done: false,
                };
                return interest.wait(rx).await;
            }
            Role::Leader(call) => call,
        };
        // Made before `spawn`: if it panics, this guard removes the call.
        let interest = Interest {
            group: self,
            key: key.clone(),
            call: call.clone(),
            done: false,
        };
        let end = End {
            group: self.clone(),
            key,
            call: call.clone(),
        };
        let task = crate::spawn(async move {
            let out = catch_unwind_future(fut).await;
            end.finish(out.map_err(|p| SingleFlightError::Panicked(panic_message(&*p))));
        });
        {
            let mut st = call.lock();
            if st.finished {
                drop(st);
                drop(task); // already done: detach
            } else {
                st.task = Some(task);
            }
        }
        interest.wait(rx).await
    }

    /// Joins the call in flight for `key`, or inserts a new one; `tx` is
    /// this caller's channel either way.
    fn join_or_insert(&self, key: &K, tx: Sender<Outcome<V>>) -> Role<V> {
        let mut map = self.map();
        if let Some(call) = map.get(key) {
            let mut st = call.lock();
            st.senders.push(tx);
            st.callers += 1;
            st.interested += 1;
            drop(st);
            return Role::Joiner(call.clone());
        }
        let call = Arc::new(Call {
            state: Mutex::new(CallState {
                senders: vec![tx],
                callers: 1,
                interested: 1,
                task: None,
                finished: false,
            }),
        });
        map.insert(key.clone(), call.clone());
        Role::Leader(call)
    }

    /// Forgets the execution in flight for `key`, if any (Go's `Forget`):
    /// the next `run` for `key` starts a new execution instead of joining
    /// it. Callers already waiting still get its value, and it ends as it
    /// would have.
    ///
    /// ```
    /// use goro::sync::SingleFlight;
    /// # goro::Runtime::builder().procs(2).build().unwrap().block_on(async {
    /// let sf = SingleFlight::<&str, u32>::new();
    /// let (tx, rx) = goro::chan::bounded::<()>(0);
    /// let s = sf.clone();
    /// let old = goro::spawn(async move { s.run("k", async move { let _ = rx.recv().await; 1 }).await });
    /// # while sf.callers(&"k") < 1 { goro::yield_now().await; }
    /// sf.forget(&"k");
    /// assert_eq!(sf.run("k", async { 2 }).await, Ok((2, false)), "a new execution");
    /// tx.close();
    /// assert_eq!(old.await.unwrap(), Ok((1, false)), "the old one still ends");
    /// # });
    /// ```
    pub fn forget<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let call = self.map().remove(key);
        drop(call); // outside the lock
    }

    /// How many callers have joined the execution in flight for `key` (0 if
    /// none is): a snapshot, for tests and diagnostics.
    ///
    /// ```
    /// let sf = goro::sync::SingleFlight::<&str, u32>::new();
    /// assert_eq!(sf.callers(&"k"), 0);
    /// ```
    pub fn callers<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let call = self.map().get(key).cloned();
        call.map_or(0, |c| c.lock().callers)
    }

    /// Removes `call` from the map if it is still the one for `key`.
    fn remove_if_current(map: &mut HashMap<K, Arc<Call<V>>>, key: &K, call: &Arc<Call<V>>) {
        if map.get(key).is_some_and(|c| Arc::ptr_eq(c, call)) {
            map.remove(key);
        }
    }
}

impl<K, V> Clone for SingleFlight<K, V> {
    fn clone(&self) -> Self {
        SingleFlight {
            inner: self.inner.clone(),
        }
    }
}

impl<K, V> Default for SingleFlight<K, V> {
    fn default() -> Self {
        SingleFlight::new()
    }
}

impl<K, V> fmt::Debug for SingleFlight<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleFlight")
            .field("in_flight", &self.map().len())
            .finish_non_exhaustive()
    }
}

/// A caller's interest in a call, until it has its result. Dropping the last
/// interest of an unfinished call abandons it.
struct Interest<'a, K, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    group: &'a SingleFlight<K, V>,
    key: K,
    call: Arc<Call<V>>,
    /// The result was received: nothing to give up.
    done: bool,
}

impl<K, V> Interest<'_, K, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    async fn wait(mut self, rx: Receiver<Outcome<V>>) -> Outcome<V> {
        // Closed without a value: the execution's task was dropped and its
        // `End` dropped every sender.
        let out = rx.recv().await.unwrap_or(Err(SingleFlightError::Cancelled));
        self.done = true;
        out
    }
}

impl<K, V> Drop for Interest<'_, K, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (task, senders) = {
            let mut map = self.group.map();
            let mut st = self.call.lock();
            st.interested -= 1;
            if st.interested != 0 || st.finished {
                return;
            }
            // The last caller left an unfinished execution: abandon it.
            st.finished = true;
            SingleFlight::remove_if_current(&mut map, &self.key, &self.call);
            (st.task.take(), std::mem::take(&mut st.senders))
        };
        if let Some(t) = task {
            t.abort();
        }
        drop(senders);
    }
}

/// The execution's end, held by its task: sends the result, or, dropped
/// unfinished with the task, closes every caller's channel.
struct End<K, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    group: SingleFlight<K, V>,
    key: K,
    call: Arc<Call<V>>,
}

impl<K, V> End<K, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    /// Ends the call with `out`: sends it to every caller still waiting.
    fn finish(self, out: Result<V, SingleFlightError>) {
        let (senders, shared) = self.end();
        // Each caller gets a clone; the last one the value itself.
        let mut out = Some(out);
        let n = senders.len();
        for (i, tx) in senders.into_iter().enumerate() {
            let o = if i + 1 == n {
                out.take()
                    .expect("the value is moved once, to the last caller")
            } else {
                out.clone().expect("cloned before the last caller")
            };
            // A one-slot channel with one send: never full. A receiver that
            // is gone (its caller dropped after we took its sender) is fine.
            let _ = tx.try_send(o.map(|v| (v, shared)));
        }
    }

    /// Marks the call finished and removes it from the map (if it is still
    /// the one for its key); returns the senders and whether it was shared.
    fn end(&self) -> (Vec<Sender<Outcome<V>>>, bool) {
        let (task, senders, shared) = {
            let mut map = self.group.map();
            let mut st = self.call.lock();
            if st.finished {
                return (Vec::new(), st.callers > 1);
            }
            st.finished = true;
            SingleFlight::remove_if_current(&mut map, &self.key, &self.call);
            (
                st.task.take(),
                std::mem::take(&mut st.senders),
                st.callers > 1,
            )
        };
        // The task is ending: its handle has nothing left to abort (dropping
        // it detaches), dropped outside the locks.
        drop(task);
        (senders, shared)
    }
}

impl<K, V> Drop for End<K, V>
where
    K: Hash + Eq + Clone + Send + 'static,
    V: Clone + Send + 'static,
{
    fn drop(&mut self) {
        // After `finish` this finds the call finished and does nothing;
        // dropped unfinished (the task was cancelled) it closes every
        // caller's channel by dropping the senders.
        let (senders, _) = self.end();
        drop(senders);
    }
}

/// The message of a panic payload, as the panic hook prints it.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    crate::sched::task::panic_message(p)
        .unwrap_or("Box<dyn Any>")
        .to_owned()
}
