//! The `select!` and `select_blocking!` macros: parsing and expansion.
//!
//! The macros only parse and bind; the work is done by [`Select`] (a select
//! that may wait, `select.rs`) and `try_select` (a select with `default`,
//! `try_select.rs`). In a task, a select with `default` first awaits
//! [`consume_budget`](crate::coop::consume_budget), before its channel
//! expressions are evaluated: it is a safe point, as every goro operation.
//!
//! Parsing collects the cases into
//! `(recv (rx) (pat) (body))` / `(send (tx) (value) (pat) (body))` /
//! `(await (future) (pat) (body))` groups and at most one default,
//! `(now (body))` or `(after (timeout) (body))`. The mode carries a third
//! word, `chan`, which the first `await` case turns into `fut`: a select of
//! channels only expands exactly as it did before future cases existed,
//! and one with futures picks the future-aware calls (`Select::with_futures`,
//! `try_select_with_futures`; `select_future.rs`). Binding then evaluates
//! each channel expression (and send value, and future) in source order,
//! each as the scrutinee of a `match`, which keeps the temporaries of its
//! scrutinee alive to its end (so `recv(make_rx())` works). A future is
//! bound by value and pinned among the case objects, so a losing one is
//! dropped with them, before any body runs (as `tokio::select!` does). The channel
//! goes through `recv_chan`/`send_chan`, so that one of the wrong type gets
//! an error that names its type, with the hints of
//! [`SelectRecv`](crate::chan::select::SelectRecv). The case objects are
//! made last, in a block that ends before any body runs.
//!
//! [`Select`]: crate::chan::select::Select

/// Waits on several channel operations (and futures) and completes exactly
/// one, with Go's semantics and crossbeam-channel's syntax. See the
/// [module docs](crate::chan::select).
///
/// Cases: `recv(rx) -> pat => body` and `send(tx, value) -> pat => body`;
/// `rx`/`tx` are expressions giving a `Receiver`/`Sender` or anything that
/// derefs to one (`&rx`, an `Arc<Receiver<T>>`, a `Box<Sender<T>>`, a
/// wrapper with `Deref`, as crossbeam's; a temporary is fine), and `pat`
/// binds a `Result<T, RecvError>` or a `Result<(), SendError<T>>`.
///
/// `await(future) -> pat => body` waits for any future (anything
/// `IntoFuture`: a `JoinHandle`, `goro::time::sleep(d)`, an `async`
/// block), and `pat` binds its output. The macro pins it in place (it need
/// not be `Unpin`); it must be `Send`, with a `Send` output, as a channel
/// case's values are. Futures and channels are mixed freely: when several
/// cases are ready at the same poll, one is chosen at random among all of
/// them (with `biased;`, the first in source order), and a channel
/// operation that is not chosen does not happen (no value is taken or
/// sent). **Cancel safety**: a future that does not win is dropped, before
/// any body runs, as with `tokio::select!`; whatever it had done is undone
/// only by its own `Drop` (goro's `recv()`/`send()` futures lose nothing;
/// a future that buffered data loses it). How a future and the channels
/// are raced without losing either: `goro/src/chan/select_future.rs`.
///
/// At most one of:
///
/// - `default => body`: no case is ready now, at one moment across every
///   channel (Go's `default`); the select then never waits for a channel.
///   Each future case is polled once (with a no-op waker) and dropped: it
///   counts only if it is ready at that poll.
///   It is still a safe point, as in Go: it spends one unit of the task's
///   budget, and once the budget is spent it yields before it looks at the
///   channels ([`consume_budget`](crate::coop::consume_budget)), so a loop
///   that spins on it (Go's `for { select { case <-stop: return; default: } }`)
///   does not starve the tasks sharing its P. So it awaits too, and needs
///   async code; in a plain function use
///   [`select_blocking!`](crate::select_blocking!), whose `default` is a
///   plain expression.
/// - `default(timeout) => body`: no case became ready within `timeout` (a
///   `Duration`; crossbeam's `default(timeout)`, Go's
///   `case <-time.After(d):`). Uses goro's timers: in a task.
///
/// `biased;` before the cases picks the first ready case in source order
/// instead of at random (tokio's `biased;`, crossbeam's `select_biased!`).
/// `select! {}` waits forever, as Go's `select {}`. Bodies are expressions
/// (`,` between cases, a trailing one allowed) or blocks; they may `break`,
/// `continue`, `return`, use `?` and `.await`.
///
/// The macro awaits (with `default` too), so it must be inside async code;
/// on a plain thread use [`select_blocking!`](crate::select_blocking!).
///
/// ```
/// # futures::executor::block_on(async {
/// let (tx, rx) = goro::chan::bounded::<i32>(0);
/// let (done_tx, done_rx) = goro::chan::bounded::<()>(0);
/// done_tx.close();
/// let r = goro::select! {
///     send(tx, 1) -> res => { res.unwrap(); "sent" }
///     recv(done_rx) -> _ => "done",
/// };
/// assert_eq!(r, "done"); // nobody receives on `rx`; `done_rx` is closed
/// # drop(rx);
///
/// let got = goro::select! {
///     recv(done_rx) -> msg => msg.is_ok(),
///     default => true,
/// };
/// assert!(!got);
/// # });
/// ```
///
/// Priority and a timeout:
///
/// ```
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(async {
///     let (urgent_tx, urgent) = goro::chan::bounded::<&str>(1);
///     let (normal_tx, normal) = goro::chan::bounded::<&str>(1);
///     urgent_tx.send("urgent").await.unwrap();
///     normal_tx.send("normal").await.unwrap();
///     let first = goro::select! {
///         biased;
///         recv(urgent) -> m => m.unwrap(),
///         recv(normal) -> m => m.unwrap(),
///     };
///     assert_eq!(first, "urgent"); // both ready: source order decides
///
///     let got = goro::select! {
///         recv(urgent) -> m => m.ok(),
///         default(Duration::from_millis(5)) => None, // nothing within 5 ms
///     };
///     assert_eq!(got, None);
/// });
/// ```
///
/// A receive racing a timer, and a task's `JoinHandle` racing a channel,
/// with `await` cases:
///
/// ```
/// use std::time::Duration;
/// let rt = goro::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(async {
///     let (_tx, rx) = goro::chan::bounded::<u32>(0);
///     let got = goro::select! {
///         recv(rx) -> v => v.ok(),
///         await(goro::time::sleep(Duration::from_millis(5))) -> () => None, // nobody sends
///     };
///     assert_eq!(got, None);
///
///     let (cancel_tx, cancel) = goro::chan::bounded::<()>(0);
///     let work = goro::spawn(async { (1..=10u32).sum::<u32>() });
///     let sum = goro::select! {
///         await(work) -> res => res.unwrap(), // the task's output
///         recv(cancel) -> _ => 0,             // or a cancel, whichever comes first
///     };
///     assert_eq!(sum, 55);
///     # drop(cancel_tx);
/// });
/// ```
#[macro_export]
macro_rules! select {
    (biased; $($tokens:tt)*) => {
        $crate::__goro_select_parse!(@mode [task biased chan] @cases [] @default [] @rest [$($tokens)*])
    };
    ($($tokens:tt)*) => {
        $crate::__goro_select_parse!(@mode [task fair chan] @cases [] @default [] @rest [$($tokens)*])
    };
}

/// [`select!`](crate::select!) for plain threads: the same cases, but a
/// select that must wait parks the calling OS thread instead of awaiting.
/// Needs no runtime, and `default(timeout)` needs no timers. Go code ported
/// to threads, and crossbeam's `select!`, wait this way. With `default` it
/// never waits: a plain expression, usable in any function (it spends a
/// unit of budget but cannot yield).
///
/// Inside a goro task it would block the worker thread (goro hands the P to
/// another thread while it waits, as for every `*_blocking` call); use
/// `select!` there. `await(future)` cases work here too (the future is
/// polled on the calling thread), for futures that need no task context.
///
/// ```
/// use std::time::Duration;
/// let (tx, rx) = goro::chan::bounded::<u32>(0);
/// let (quit_tx, quit) = goro::chan::bounded::<()>(0);
/// let worker = std::thread::spawn(move || {
///     let mut got = Vec::new();
///     loop {
///         goro::select_blocking! {
///             recv(rx) -> v => got.push(v.unwrap()),
///             recv(quit) -> _ => return got,
///         }
///     }
/// });
/// tx.send_blocking(1).unwrap();
/// tx.send_blocking(2).unwrap();
/// quit_tx.close();
/// assert_eq!(worker.join().unwrap(), vec![1, 2]);
///
/// let (_tx, idle) = goro::chan::bounded::<u32>(0);
/// let timed_out = goro::select_blocking! {
///     recv(idle) -> _ => false,
///     default(Duration::from_millis(2)) => true,
/// };
/// assert!(timed_out);
/// ```
#[macro_export]
macro_rules! select_blocking {
    (biased; $($tokens:tt)*) => {
        $crate::__goro_select_parse!(@mode [thread biased chan] @cases [] @default [] @rest [$($tokens)*])
    };
    ($($tokens:tt)*) => {
        $crate::__goro_select_parse!(@mode [thread fair chan] @cases [] @default [] @rest [$($tokens)*])
    };
}

/// Parses cases into groups (see the module docs of `select_macro.rs`).
#[doc(hidden)]
#[macro_export]
macro_rules! __goro_select_parse {
    // Done: dispatch on what was found. A task's select with `default` (no
    // timeout) is a safe point first, before anything is evaluated: once
    // the budget is spent it yields, and the select runs when the task is
    // polled again, whole (`sched/task/coop.rs`).
    (@mode [task $o:ident $f:ident] @cases [$($c:tt)*] @default [(now $d:tt)] @rest []) => {{
        $crate::coop::consume_budget().await;
        $crate::__goro_select_bind!(@mode [task $o $f] @todo [$($c)*] @bound [] @default [(now $d)])
    }};
    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [$($d:tt)*] @rest []) => {
        $crate::__goro_select_bind!(@mode [$($m)*] @todo [$($c)*] @bound [] @default [$($d)*])
    };
    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [$($d:tt)*] @rest [, $($rest:tt)*]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)*] @default [$($d)*] @rest [$($rest)*])
    };

    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [$($d:tt)*]
     @rest [recv($r:expr $(,)?) -> $p:pat => $body:block $($rest:tt)*]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)* (recv ($r) ($p) ($body))]
            @default [$($d)*] @rest [$($rest)*])
    };
    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [$($d:tt)*]
     @rest [recv($r:expr $(,)?) -> $p:pat => $body:expr $(, $($rest:tt)*)?]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)* (recv ($r) ($p) ($body))]
            @default [$($d)*] @rest [$($($rest)*)?])
    };

    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [$($d:tt)*]
     @rest [send($s:expr, $v:expr $(,)?) -> $p:pat => $body:block $($rest:tt)*]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)* (send ($s) ($v) ($p) ($body))]
            @default [$($d)*] @rest [$($rest)*])
    };
    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [$($d:tt)*]
     @rest [send($s:expr, $v:expr $(,)?) -> $p:pat => $body:expr $(, $($rest:tt)*)?]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)* (send ($s) ($v) ($p) ($body))]
            @default [$($d)*] @rest [$($($rest)*)?])
    };

    // A future case marks the mode: the expansion polls futures.
    (@mode [$w:ident $o:ident $f:ident] @cases [$($c:tt)*] @default [$($d:tt)*]
     @rest [await($fut:expr $(,)?) -> $p:pat => $body:block $($rest:tt)*]) => {
        $crate::__goro_select_parse!(@mode [$w $o fut] @cases [$($c)* (await ($fut) ($p) ($body))]
            @default [$($d)*] @rest [$($rest)*])
    };
    (@mode [$w:ident $o:ident $f:ident] @cases [$($c:tt)*] @default [$($d:tt)*]
     @rest [await($fut:expr $(,)?) -> $p:pat => $body:expr $(, $($rest:tt)*)?]) => {
        $crate::__goro_select_parse!(@mode [$w $o fut] @cases [$($c)* (await ($fut) ($p) ($body))]
            @default [$($d)*] @rest [$($($rest)*)?])
    };

    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [] @rest [default => $body:block $($rest:tt)*]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)*] @default [(now ($body))]
            @rest [$($rest)*])
    };
    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default []
     @rest [default => $body:expr $(, $($rest:tt)*)?]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)*] @default [(now ($body))]
            @rest [$($($rest)*)?])
    };
    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default []
     @rest [default($t:expr $(,)?) => $body:block $($rest:tt)*]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)*] @default [(after ($t) ($body))]
            @rest [$($rest)*])
    };
    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default []
     @rest [default($t:expr $(,)?) => $body:expr $(, $($rest:tt)*)?]) => {
        $crate::__goro_select_parse!(@mode [$($m)*] @cases [$($c)*] @default [(after ($t) ($body))]
            @rest [$($($rest)*)?])
    };
    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [$($d:tt)+] @rest [default $($rest:tt)*]) => {
        ::core::compile_error!("goro::select!: more than one `default` case")
    };

    (@mode [$($m:tt)*] @cases [$($c:tt)*] @default [$($d:tt)*] @rest [$($rest:tt)*]) => {
        ::core::compile_error!(
            "goro::select!: expected `recv(rx) -> pattern => body`, \
             `send(tx, value) -> pattern => body`, \
             `await(future) -> pattern => body`, `default => body` or \
             `default(timeout) => body` (cases separated by `,` unless a \
             body is a block); to wait for a timeout use \
             `recv(goro::time::after(d)) -> _ => ...` or \
             `await(goro::time::sleep(d)) -> _ => ...`"
        )
    };
}

/// Evaluates each case's channel (and send value) in source order, then
/// makes the case objects, runs the select, and runs the body of the case
/// that completed (or of the default).
///
/// The case objects live in an inner block that ends before any body runs:
/// a non-blocking case holds a channel lock type (`!Send`), and a body
/// that awaits must not find one in scope, or the task's future would not
/// be `Send`.
#[doc(hidden)]
#[macro_export]
macro_rules! __goro_select_bind {
    (@mode [$($m:tt)*] @todo [(recv ($r:expr) ($p:pat) ($body:expr)) $($todo:tt)*]
     @bound [$($bound:tt)*] @default [$($d:tt)*]) => {
        match $crate::chan::select::recv_chan(&$r) {
            chan => $crate::__goro_select_bind!(@mode [$($m)*] @todo [$($todo)*]
                @bound [$($bound)* (recv chan () ($p) ($body))] @default [$($d)*]),
        }
    };
    (@mode [$($m:tt)*] @todo [(send ($s:expr) ($v:expr) ($p:pat) ($body:expr)) $($todo:tt)*]
     @bound [$($bound:tt)*] @default [$($d:tt)*]) => {
        match ($crate::chan::select::send_chan(&$s), $v) {
            (chan, value) => $crate::__goro_select_bind!(@mode [$($m)*] @todo [$($todo)*]
                @bound [$($bound)* (send chan (value) ($p) ($body))] @default [$($d)*]),
        }
    };
    (@mode [$($m:tt)*] @todo [(await ($f:expr) ($p:pat) ($body:expr)) $($todo:tt)*]
     @bound [$($bound:tt)*] @default [$($d:tt)*]) => {
        // By value: the case pins it in the select's scope, which ends (and
        // drops a losing future) before any body runs.
        match ::core::future::IntoFuture::into_future($f) {
            chan => $crate::__goro_select_bind!(@mode [$($m)*] @todo [$($todo)*]
                @bound [$($bound)* (await chan () ($p) ($body))] @default [$($d)*]),
        }
    };

    // No case.
    (@mode [task $o:ident $f:ident] @todo [] @bound [] @default []) => {
        // Go's `select {}`: wait forever.
        match ::core::future::pending::<::core::convert::Infallible>().await {}
    };
    (@mode [thread $o:ident $f:ident] @todo [] @bound [] @default []) => {
        loop {
            ::std::thread::park();
        }
    };
    (@mode [$w:ident $o:ident $f:ident] @todo [] @bound [] @default [(now ($d:expr))]) => {
        $d
    };
    (@mode [task $o:ident $f:ident] @todo [] @bound [] @default [(after ($t:expr) ($d:expr))]) => {{
        $crate::chan::__sleep($t).await;
        $d
    }};
    (@mode [thread $o:ident $f:ident] @todo [] @bound [] @default [(after ($t:expr) ($d:expr))]) => {{
        ::std::thread::sleep($t);
        $d
    }};

    // With `default` (and no timeout) a select never waits: `try_select`,
    // over cases that lock their channels together.
    (@mode [$w:ident $o:ident $f:ident] @todo []
     @bound [$(($op:tt $chan:ident ($($v:ident)?) ($p:pat) ($body:expr)))+]
     @default [(now ($d:expr))]) => {{
        let ($($chan,)+) = {
            $($crate::__goro_select_bind!(@let_try_case $op $chan ($($v)?));)+
            $crate::__goro_select_bind!(@try $w $o $f [$($chan)+]);
            ($($chan.into_result(),)+)
        };
        $crate::__goro_select_bind!(@run [$(($chan ($p) ($body)))+] [$d])
    }};
    // Any other select may wait: `Select`.
    (@mode [task $o:ident $f:ident] @todo []
     @bound [$(($op:tt $chan:ident ($($v:ident)?) ($p:pat) ($body:expr)))+]
     @default []) => {{
        let ($($chan,)+) = {
            $($crate::__goro_select_bind!(@let_case $op $chan ($($v)?));)+
            $crate::__goro_select_bind!(@new $o $f [$($chan)+]).await;
            ($($chan.into_result(),)+)
        };
        $crate::__goro_select_bind!(@run [$(($chan ($p) ($body)))+]
            [::core::unreachable!("goro::select!: no case completed")])
    }};
    (@mode [thread $o:ident $f:ident] @todo []
     @bound [$(($op:tt $chan:ident ($($v:ident)?) ($p:pat) ($body:expr)))+]
     @default []) => {{
        let ($($chan,)+) = {
            $($crate::__goro_select_bind!(@let_case $op $chan ($($v)?));)+
            $crate::chan::select::block_on($crate::__goro_select_bind!(@new $o $f [$($chan)+]));
            ($($chan.into_result(),)+)
        };
        $crate::__goro_select_bind!(@run [$(($chan ($p) ($body)))+]
            [::core::unreachable!("goro::select_blocking!: no case completed")])
    }};
    (@mode [task $o:ident $f:ident] @todo []
     @bound [$(($op:tt $chan:ident ($($v:ident)?) ($p:pat) ($body:expr)))+]
     @default [(after ($t:expr) ($d:expr))]) => {{
        let ($($chan,)+) = {
            $($crate::__goro_select_bind!(@let_case $op $chan ($($v)?));)+
            let mut select = $crate::__goro_select_bind!(@new $o $f [$($chan)+]);
            let _ = $crate::chan::__timeout($t, &mut select).await;
            // Timed out: withdraw, keeping a case that completed meanwhile.
            select.cancel();
            ::core::mem::drop(select);
            ($($chan.into_result(),)+)
        };
        $crate::__goro_select_bind!(@run [$(($chan ($p) ($body)))+] [$d])
    }};
    (@mode [thread $o:ident $f:ident] @todo []
     @bound [$(($op:tt $chan:ident ($($v:ident)?) ($p:pat) ($body:expr)))+]
     @default [(after ($t:expr) ($d:expr))]) => {{
        let ($($chan,)+) = {
            $($crate::__goro_select_bind!(@let_case $op $chan ($($v)?));)+
            let mut select = $crate::__goro_select_bind!(@new $o $f [$($chan)+]);
            let _ = $crate::chan::select::block_on_timeout(&mut select, $t);
            select.cancel();
            ::core::mem::drop(select);
            ($($chan.into_result(),)+)
        };
        $crate::__goro_select_bind!(@run [$(($chan ($p) ($body)))+] [$d])
    }};

    // Each case object, made in the select's scope. A future is pinned
    // there, so it is dropped with the case objects, before any body runs.
    (@let_try_case recv $chan:ident ()) => {
        let mut $chan = $crate::chan::try_select::TryRecvCase::new($chan);
    };
    (@let_try_case send $chan:ident ($v:ident)) => {
        let mut $chan = $crate::chan::try_select::TrySendCase::new($chan, $v);
    };
    (@let_try_case await $chan:ident ()) => {
        let $chan = ::core::pin::pin!($chan);
        let mut $chan = $crate::chan::select::FutureCase::new($chan);
    };
    (@let_case recv $chan:ident ()) => {
        let mut $chan = $crate::chan::select::RecvCase::new($chan);
    };
    (@let_case send $chan:ident ($v:ident)) => {
        let mut $chan = $crate::chan::select::SendCase::new($chan, $v);
    };
    (@let_case await $chan:ident ()) => {
        let $chan = ::core::pin::pin!($chan);
        let mut $chan = $crate::chan::select::FutureCase::new($chan);
    };
    // A task's select spent its budget at its safe point; a thread's
    // spends it here.
    (@try $w:ident $o:ident chan [$($case:ident)+]) => {
        $crate::chan::try_select::try_select_in(
            [$(&mut $case as &mut dyn $crate::chan::try_select::TryCase),+],
            $crate::__goro_select_bind!(@is_biased $o),
            $crate::__goro_select_bind!(@spends $w),
        )
    };
    // With futures: polled once each, beside the channels' one look.
    (@try $w:ident $o:ident fut [$($case:ident)+]) => {
        $crate::chan::try_select::try_select_with_futures(
            [$(&mut $case as &mut dyn $crate::chan::try_select::TryCase),+],
            $crate::__goro_select_bind!(@is_biased $o),
            $crate::__goro_select_bind!(@spends $w),
        )
    };
    (@is_biased fair) => { false };
    (@is_biased biased) => { true };
    (@spends task) => { false };
    (@spends thread) => { true };
    (@new $o:ident fut [$($case:ident)+]) => {
        $crate::__goro_select_bind!(@new $o chan [$($case)+]).with_futures()
    };
    (@new fair chan [$($case:ident)+]) => {
        $crate::chan::select::Select::new([$(&mut $case as &mut dyn $crate::chan::select::Case),+])
    };
    (@new biased chan [$($case:ident)+]) => {
        $crate::chan::select::Select::biased([$(&mut $case as &mut dyn $crate::chan::select::Case),+])
    };

    // Run the body of the case with a result, else the fallback.
    (@run [($res:ident ($p:pat) ($body:expr)) $($rest:tt)*] [$fallback:expr]) => {
        match $res {
            ::core::option::Option::Some($p) => $body,
            ::core::option::Option::None => $crate::__goro_select_bind!(@run [$($rest)*] [$fallback]),
        }
    };
    (@run [] [$fallback:expr]) => {
        $fallback
    };
}
