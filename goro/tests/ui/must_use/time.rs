// Every future and handle of goro::time that does nothing when dropped
// unused is #[must_use]; denied here so that the lint is an error.
#![deny(unused_must_use)]

use std::time::Duration;

async fn forgets() {
    let d = Duration::from_millis(1);
    goro::time::sleep(d);
    goro::time::sleep_until(std::time::Instant::now());
    goro::time::timeout(d, async {});
    goro::time::Timer::new(d);
    goro::time::Ticker::new(d);
    goro::time::after(d);
}

fn main() {
    let _ = forgets();
}
