// The futures of goro::sync and the guards they return are #[must_use]:
// an unused guard unlocks at once.
#![deny(unused_must_use)]

use goro::sync::{Mutex, RwLock, Semaphore, WaitGroup};

async fn forgets(m: &Mutex<u32>, rw: &RwLock<u32>, s: &Semaphore, wg: &WaitGroup) {
    m.lock();
    m.lock().await;
    rw.read();
    rw.write();
    rw.read().await;
    rw.write().await;
    s.acquire();
    s.acquire().await;
    wg.wait();
}

fn main() {
    let (m, rw, s, wg) = (Mutex::new(0), RwLock::new(0), Semaphore::new(1), WaitGroup::new());
    let _ = forgets(&m, &rw, &s, &wg);
}
