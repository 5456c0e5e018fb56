//! `GORO_TRACE`: one test in its own binary, since the variable is
//! process-wide and every runtime built while it is set is traced.

#[test]
fn goro_trace_writes_each_runtime_and_its_stats_and_names_a_bad_path() {
    let dir = std::env::temp_dir().join(format!("goro-trace-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("no-such-dir").join("t.pftrace");
    std::env::set_var("GORO_TRACE", &bad);
    let e = goro::Runtime::builder().procs(1).build().unwrap_err();
    assert!(
        e.to_string().contains("GORO_TRACE=") && e.to_string().contains("no-such-dir"),
        "the error names the variable and the path: {e}"
    );

    let path = dir.join("t.pftrace");
    std::env::set_var("GORO_TRACE", &path);
    for _ in 0..2 {
        let rt = goro::Runtime::builder().procs(2).build().unwrap();
        rt.block_on(async {
            let hs: Vec<_> = (0..100).map(|i| goro::spawn(async move { i })).collect();
            for h in hs {
                h.await.unwrap();
            }
        });
    }
    std::env::remove_var("GORO_TRACE");
    for p in [path.clone(), dir.join("t.pftrace.1")] {
        let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        assert!(len > 1000, "{} holds {len} bytes", p.display());
        let mut stats = p.into_os_string();
        stats.push(".stats.json");
        let json = std::fs::read_to_string(&stats).unwrap();
        assert!(
            json.contains("\"tasks_spawned\": 100"),
            "stats beside the trace: {json}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
