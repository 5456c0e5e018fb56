//! Latency and load metrics (`Runtime::metrics`, `runtime/metrics.rs`),
//! and with the `metrics` feature, their export through the facade.

use std::time::{Duration, Instant};

#[test]
fn long_polls_wakes_and_queue_depths_show_up() {
    let rt = goro::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(async {
        // 640 polls of ~1 ms: about 10 are timed (one in 64 per P).
        let hs: Vec<_> = (0..640)
            .map(|_| {
                goro::spawn(async {
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(1) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
        // Many short wakes: a ping-pong over a channel.
        let (tx, rx) = goro::chan::bounded::<u32>(0);
        let echo = goro::spawn(async move {
            while let Ok(v) = rx.recv().await {
                let _ = v;
            }
        });
        for i in 0..10_000 {
            tx.send(i).await.unwrap();
        }
        drop(tx);
        echo.await.unwrap();
    });
    let m = rt.metrics();
    assert_eq!(m.procs, 2);
    assert_eq!(m.queue_depth.len(), 2);
    assert!(m.poll_duration.count() >= 5, "{m:?}");
    assert!(
        m.poll_duration.quantile(1.0) >= 1 << 20,
        "the 1 ms polls are in the histogram: {:?}",
        m.poll_duration
    );
    assert!(m.wake_to_run.count() >= 10, "{:?}", m.wake_to_run);
    assert!(
        m.queue_depth_all().count() > 0,
        "the monitor sampled queue depths while Ps were busy"
    );
    assert!(m.stats.tasks_spawned >= 641);
    let mut names = Vec::new();
    m.stats.for_each(|n, _| names.push(n));
    assert!(names.contains(&"tasks_polled"));
}

#[cfg(feature = "metrics")]
mod facade {
    use metrics::{
        Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    /// Keeps the last value of every counter and gauge by rendered key.
    #[derive(Default, Clone)]
    struct Keep(Arc<Mutex<BTreeMap<String, Arc<AtomicU64>>>>);

    impl Keep {
        fn cell(&self, key: &Key) -> Arc<AtomicU64> {
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            let name = format!("{}{{{}}}", key.name(), labels.join(","));
            self.0.lock().unwrap().entry(name).or_default().clone()
        }
        fn get(&self, prefix: &str) -> Vec<(String, u64)> {
            let m = self.0.lock().unwrap();
            m.iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.load(Ordering::Relaxed)))
                .collect()
        }
    }

    impl Recorder for Keep {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(self.cell(key))
        }
        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::from_arc(self.cell(key))
        }
        fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    #[test]
    fn the_monitor_publishes_through_the_facade() {
        let keep = Keep::default();
        metrics::set_global_recorder(keep.clone()).unwrap();
        let rt = goro::Runtime::builder()
            .procs(2)
            .thread_name("exported")
            .build()
            .unwrap();
        // Busy for a little over a second: the monitor publishes once a
        // second while a P is busy.
        let deadline = Instant::now() + Duration::from_secs(20);
        rt.block_on(async {
            while keep
                .get("goro_tasks_spawned_total{runtime=exported}")
                .is_empty()
            {
                assert!(Instant::now() < deadline, "nothing published within 20 s");
                goro::spawn(async {
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(5) {}
                })
                .await
                .unwrap();
            }
        });
        // Other tests' runtimes publish too: this one is labelled.
        let spawned = keep.get("goro_tasks_spawned_total{runtime=exported}");
        assert_eq!(spawned.len(), 1, "{spawned:?}");
        assert!(spawned[0].0.contains("runtime=exported"), "{spawned:?}");
        assert!(spawned[0].1 > 0);
        let buckets = keep.get("goro_poll_duration_seconds_bucket");
        assert!(
            buckets.iter().any(|(k, _)| k.contains("le=+Inf")),
            "{buckets:?}"
        );
        assert!(!keep.get("goro_procs").is_empty());
    }
}
