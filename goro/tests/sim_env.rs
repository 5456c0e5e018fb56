//! `GORO_SIM_SEED`: a bubble without a fixed seed takes it from the
//! environment, and a malformed value is refused naming the accepted form.
//! One test in this binary, because it sets the process's environment.

use goro::sim::Builder;

#[test]
fn goro_sim_seed_replays_a_run_and_refuses_a_bad_value() {
    std::env::set_var("GORO_SIM_SEED", "1234");
    let racy = || async {
        let (tx, rx) = goro::chan::bounded::<u32>(8);
        for i in 0..4 {
            let tx = tx.clone();
            goro::spawn(async move { tx.send(i).await.unwrap() });
        }
        drop(tx);
        let mut got = Vec::new();
        while let Ok(v) = rx.recv().await {
            got.push(v);
        }
        got
    };
    let (a, ra) = Builder::new().procs(4).run_report(racy());
    let (b, rb) = Builder::new().seed(1234).procs(4).run_report(racy());
    assert_eq!(ra.seed(), 1234, "the seed comes from GORO_SIM_SEED");
    assert_eq!(
        (a.unwrap(), ra.schedule_hash()),
        (b.unwrap(), rb.schedule_hash())
    );
    let (_, rc) = Builder::new().seed(99).run_report(async {});
    assert_eq!(rc.seed(), 99, "an explicit seed wins over the environment");

    std::env::set_var("GORO_SIM_SEED", "12x");
    let e = std::panic::catch_unwind(|| Builder::new().run(async {})).unwrap_err();
    let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("GORO_SIM_SEED='12x'") && msg.contains("accepted a decimal u64"),
        "{msg}"
    );
    std::env::remove_var("GORO_SIM_SEED");
}
