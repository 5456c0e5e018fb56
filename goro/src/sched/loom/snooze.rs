//! loom model of the look-again token (`sched/machine/snooze.rs`): two Ms
//! that ran dry at the same time never look again together, and the token
//! is free once both are done, whichever way each search ended.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p goro --lib --release loom_snooze`

use crate::loom::{thread, Arc, AtomicUsize, Ordering};
use crate::sched::machine::snooze::SnoozeToken;
use crate::Snoozers;

#[test]
fn loom_snooze_one_m_looks_again_and_the_token_comes_back() {
    loom::model(|| {
        let token = Arc::new(SnoozeToken::new());
        let looking = Arc::new(AtomicUsize::new(0));
        let ms: Vec<_> = (0..2)
            .map(|i| {
                let (token, looking) = (token.clone(), looking.clone());
                thread::spawn(move || {
                    let mut s = token.holder(Snoozers::One);
                    // Two looks, as a search that spins and then yields.
                    for _ in 0..2 {
                        if !s.may_look_again() {
                            return;
                        }
                        let n = looking.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(n, 0, "two Ms looked again at once");
                        looking.fetch_sub(1, Ordering::SeqCst);
                    }
                    // One search gives up (releases), the other finds work
                    // (its holder is dropped): both must give the token back.
                    if i == 0 {
                        s.release();
                    }
                })
            })
            .collect();
        for m in ms {
            m.join().unwrap();
        }
        let mut after = token.holder(Snoozers::One);
        assert!(after.may_look_again(), "the token was not given back");
    });
}
