//! `GORO_TRACE_RAW` and the `goro-trace` converter: one test in its own
//! binary, since the variable is process-wide and every runtime built
//! while it is set is traced.

use std::process::Command;

fn goro_trace(args: &[&std::path::Path]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_goro-trace"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn goro_trace_raw_writes_the_raw_form_that_goro_trace_converts() {
    let dir = std::env::temp_dir().join(format!("goro-trace-raw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let bad = dir.join("no-such-dir").join("t.raw");
    std::env::set_var("GORO_TRACE_RAW", &bad);
    let e = goro::Runtime::builder().procs(1).build().unwrap_err();
    assert!(
        e.to_string().contains("GORO_TRACE_RAW=") && e.to_string().contains("no-such-dir"),
        "the error names the variable and the path: {e}"
    );
    std::env::set_var("GORO_TRACE", dir.join("t.pftrace"));
    let e = goro::Runtime::builder().procs(1).build().unwrap_err();
    assert!(
        e.to_string()
            .contains("GORO_TRACE and GORO_TRACE_RAW are both set"),
        "both set is refused, naming the accepted form: {e}"
    );
    std::env::remove_var("GORO_TRACE");

    let raw = dir.join("t.raw");
    std::env::set_var("GORO_TRACE_RAW", &raw);
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        let hs: Vec<_> = (0..100)
            .map(|i| goro::spawn_named("worker", async move { i }))
            .collect();
        for h in hs {
            h.await.unwrap();
        }
    });
    drop(rt);
    std::env::remove_var("GORO_TRACE_RAW");

    let bytes = std::fs::read(&raw).unwrap();
    assert!(bytes.starts_with(b"GOROTRC\x01"), "the magic and version");
    let mut stats = raw.clone().into_os_string();
    stats.push(".stats.json");
    assert!(std::fs::read_to_string(&stats)
        .unwrap()
        .contains("\"tasks_spawned\": 100"));

    // The library converts it ...
    let mut pf = Vec::new();
    let done = goro::trace::to_perfetto(&bytes[..], &mut pf).unwrap();
    assert!(done.events > 300 && !done.cut_off, "{done:?}");
    let text = String::from_utf8_lossy(&pf);
    assert!(text.contains("\"worker\""), "the task name survives");
    assert!(text.contains("trace_env_raw.rs:"), "so does the spawn site");

    // ... and so does the binary, to the same bytes.
    let out = dir.join("t.pftrace");
    let o = goro_trace(&[&raw, &out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&out).unwrap(), pf);

    // A file cut in the middle (a program that died) converts what is whole.
    let cut = dir.join("cut.raw");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    let o = goro_trace(&[&cut, &out]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("cut off"), "{err}");
    assert!(std::fs::metadata(&out).unwrap().len() > 1000);

    // Not a raw trace: the error names the input and the accepted form.
    let stats = std::path::PathBuf::from(stats);
    let o = goro_trace(&[&stats, &out]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("t.raw.stats.json")
            && err.contains("GORO_TRACE_RAW")
            && err.contains("GOROTRC"),
        "{err}"
    );
    let o = goro_trace(&[&raw]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("usage: goro-trace <raw-file> <out.pftrace>")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
