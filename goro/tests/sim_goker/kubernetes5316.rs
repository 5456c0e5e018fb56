//! Kubernetes, the API server's `finishRequest`: a request that outlives
//! its timeout leaks the goroutine running it
//! (https://github.com/kubernetes/kubernetes/pull/5316).
//!
//! `finishRequest` runs `fn` in a goroutine (G2) that reports on the
//! unbuffered `ch` or `errCh`, and selects on both and on
//! `time.After(timeout)`. When the timeout wins, nobody receives any
//! more, and G2 blocks forever on its send.
//!
//! Fix (upstream): `ch` and `errCh` get a buffer of one, so G2's one send
//! completes whether or not anybody still waits.

use crate::go::Chan;
use std::future::Future;
use std::time::Duration;

async fn finish_request<F, Fut>(timeout: Duration, f: F, fixed: bool)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let cap = usize::from(fixed);
    let ch: Chan<bool> = Chan::new(cap);
    let err_ch: Chan<String> = Chan::new(cap);
    let (ch2, err_ch2) = (ch.clone(), err_ch.clone());
    goro::spawn(async move {
        // G2
        match f().await {
            Err(err) => err_ch2.send(err).await,
            Ok(()) => ch2.send(true).await,
        }
    });
    goro::select! {
        recv(ch.rx) -> _ => {}
        recv(err_ch.rx) -> _ => {}
        recv(goro::time::after(timeout)) -> _ => {}
    }
}

async fn scenario(fixed: bool) {
    let f = || async {
        goro::time::sleep(Duration::from_millis(2)).await;
        // The Go file fails at random (`rand.Intn(10) > 5`); both outcomes
        // leak the same way, and the port takes the error path, so that
        // every choice in a run comes from the scheduler.
        Err("Error".to_string())
    };
    goro::spawn(finish_request(Duration::from_micros(1), f, fixed)); // G1
}

/// The Go program's scenario, once.
pub async fn buggy() {
    scenario(false).await
}

/// The same scenario with the upstream fix.
pub async fn fixed() {
    scenario(true).await
}
