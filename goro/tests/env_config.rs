//! GORO_PROCS / GORO_POLICY / GORO_SCHEDTRACE / GORO_UPDATE_PROCS at start-up. One test, in its
//! own binary, because the environment is process-wide.

mod support;

#[test]
fn environment_settings_are_applied_and_bad_values_rejected_with_the_accepted_form() {
    // This binary runs this single test, so nothing reads the environment
    // while it changes.
    std::env::set_var("GORO_PROCS", "3");
    std::env::set_var("GORO_POLICY", "runnext=false,steal_passes=4");
    let rt = goro::Runtime::new().expect("valid environment");
    assert_eq!(rt.procs(), 3, "GORO_PROCS sets procs");
    assert!(
        !rt.policy().runnext && rt.policy().steal_passes == 4,
        "GORO_POLICY overrides fields"
    );
    drop(rt);

    // An explicit builder value wins over GORO_PROCS; GORO_POLICY still applies.
    let rt = goro::Runtime::builder().procs(1).build().unwrap();
    assert_eq!(rt.procs(), 1);
    assert!(!rt.policy().runnext);
    drop(rt);

    for bad in ["0", "-1", "four", "", "99999"] {
        std::env::set_var("GORO_PROCS", bad);
        let e = goro::Runtime::new().unwrap_err().to_string();
        assert!(
            e.contains("GORO_PROCS") && e.contains("accepted an integer in 1..="),
            "GORO_PROCS={bad:?}: {e}"
        );
    }
    std::env::remove_var("GORO_PROCS");

    for bad in ["runnext=perhaps", "steal_passes=0", "speed=11", "spin"] {
        std::env::set_var("GORO_POLICY", bad);
        let e = goro::Runtime::builder()
            .procs(1)
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("GORO_POLICY") && e.contains("accepted"),
            "GORO_POLICY={bad:?}: {e}"
        );
    }
    std::env::remove_var("GORO_POLICY");

    std::env::set_var("GORO_SCHEDTRACE", "often");
    let e = goro::Runtime::builder()
        .procs(1)
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("GORO_SCHEDTRACE") && e.contains("milliseconds"),
        "{e}"
    );
    std::env::set_var("GORO_SCHEDTRACE", "5");
    let rt = goro::Runtime::builder()
        .procs(1)
        .build()
        .expect("numeric schedtrace is accepted");
    rt.block_on(async {});
    drop(rt);

    // An interval too large for `Instant` means "never"; it used to
    // overflow `Instant + Duration` and kill the monitor thread at start.
    std::env::set_var("GORO_SCHEDTRACE", u64::MAX.to_string());
    let rt = goro::Runtime::builder()
        .procs(1)
        .thread_name("envtr")
        .build()
        .expect("a huge schedtrace interval is accepted");
    rt.block_on(async { goro::spawn(async {}).await.unwrap() });
    support::wait_until(
        std::time::Duration::from_secs(30),
        "the monitor thread is alive and asleep (GORO_SCHEDTRACE=u64::MAX)",
        || {
            support::threads_named("envtr-monitor")
                .first()
                .and_then(|&t| support::thread_state(t))
                .is_some_and(|(s, _)| s == 'S')
        },
    );
    drop(rt);
    std::env::remove_var("GORO_SCHEDTRACE");

    // GORO_UPDATE_PROCS: 0 turns following off; anything but 0/1 fails.
    std::env::set_var("GORO_UPDATE_PROCS", "0");
    let rt = goro::Runtime::new().expect("GORO_UPDATE_PROCS=0 is accepted");
    assert!(
        !rt.follows_procs(),
        "GORO_UPDATE_PROCS=0 turns following off"
    );
    drop(rt);
    std::env::set_var("GORO_UPDATE_PROCS", "yes");
    let e = goro::Runtime::new().unwrap_err().to_string();
    assert!(
        e.contains("GORO_UPDATE_PROCS='yes'") && e.contains("accepted 0"),
        "{e}"
    );
    std::env::remove_var("GORO_UPDATE_PROCS");
}
