//! `#[goro::main]`/`#[goro::test]` run their body as a task on a P (Go's
//! main goroutine), not beside the scheduler on the calling thread:
//! `Runtime::run` is what they expand to, `local` keeps the old path.

mod support;

use goro::{Runtime, TaskState};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use support::within;

/// How long a test that runs a runtime by hand may take before it fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// At procs 1 the only P runs both: a child the body spawns and awaits runs
/// on the body's own thread, handed over through the P's `runnext`. Under
/// `block_on` the body ran on the test's thread and the child on a worker.
#[goro::test(procs = 1)]
async fn the_body_and_its_child_share_one_p() {
    let main_thread = thread::current().id();
    let child_thread = goro::spawn(async { thread::current().id() }).await.unwrap();
    assert_eq!(
        child_thread, main_thread,
        "the child ran on another thread than the main task at procs 1"
    );
}

/// `local` polls the body on the calling thread, outside every P, as
/// `Runtime::block_on` does: the child runs on a worker thread.
#[goro::test(procs = 1, local)]
async fn a_local_body_runs_beside_the_scheduler() {
    let main_thread = thread::current().id();
    let child_thread = goro::spawn(async { thread::current().id() }).await.unwrap();
    assert_ne!(child_thread, main_thread);
}

/// The dump lists the body as a task named `main`, running on a P, and the
/// tasks it spawns as its children.
#[test]
fn the_main_task_shows_in_the_dump() {
    within(DEADLINE, "the main task shows in the dump", || {
        let rt = Arc::new(Runtime::builder().procs(1).build().unwrap());
        let handle = rt.clone();
        let (main_id, child_parent, child_p, main_p) = rt.run(async move {
            let dump = handle.dump();
            let main = dump
                .tasks()
                .iter()
                .find(|t| t.name.as_deref() == Some("main"))
                .unwrap_or_else(|| panic!("no task named main in the dump:\n{dump}"));
            let TaskState::Running(Some(main_p)) = main.state else {
                panic!(
                    "the main task is not running on a P: {:?}\n{dump}",
                    main.state
                );
            };
            let main_id = main.id;
            let inner = handle.clone();
            let child = goro::spawn(async move {
                let dump = inner.dump();
                let me = dump
                    .tasks()
                    .iter()
                    .find(|t| t.parent.is_some())
                    .unwrap_or_else(|| panic!("no child task in the dump:\n{dump}"))
                    .clone();
                (me.parent, me.state)
            });
            let (parent, state) = child.await.unwrap();
            let TaskState::Running(Some(child_p)) = state else {
                panic!("the child is not running on a P: {state:?}");
            };
            (main_id, parent, child_p, main_p)
        });
        assert_eq!(
            child_parent,
            Some(main_id),
            "the child's parent is not main"
        );
        assert_eq!(child_p, main_p, "at procs 1 the child runs on main's P");
    });
}

/// `run` gives back the body's output and resumes its panic on the caller,
/// so `#[should_panic(expected = ..)]` tests keep their message.
#[test]
fn run_returns_the_output_and_resumes_a_panic() {
    within(
        DEADLINE,
        "run returns the output and resumes a panic",
        || {
            let rt = Runtime::builder().procs(2).build().unwrap();
            assert_eq!(rt.run(async { 6 * 7 }), 42);
            let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rt.run(async { panic!("boom in main") })
            }))
            .expect_err("the main task's panic did not reach the caller");
            assert_eq!(err.downcast_ref::<&str>(), Some(&"boom in main"));
        },
    );
}

#[goro::test]
#[should_panic(expected = "expected by the test")]
async fn a_panicking_body_fails_its_test() {
    goro::yield_now().await;
    panic!("expected by the test");
}
